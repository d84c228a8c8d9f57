"""ONNX Sub as the operator table's ewsub: imported by its name (no code
in the importer names it), rewritten by the rules prove made from its
axioms, and the rewritten model computes what the input computed."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import tasoc
from conftest import assert_same_outputs


def sub_of_matmuls() -> onnx.ModelProto:
    r = np.random.RandomState(0)
    inits = [numpy_helper.from_array(r.randn(16, 16).astype(np.float32), n) for n in ("w1", "w2")]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["a"]), helper.make_node("MatMul", ["x", "w2"], ["b"]),
             helper.make_node("Sub", ["a", "b"], ["y"])]
    g = helper.make_graph(nodes, "sub", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 16])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_sub_of_matmuls_is_one_matmul():
    m = sub_of_matmuls()
    for search in ("backtrack", "egraph"):
        out = tasoc.export_onnx(tasoc.optimize(tasoc.load_onnx(m.SerializeToString()), deterministic=True,
                                               search=search))
        assert [n.op_type for n in out.graph.node] == ["MatMul"]
        assert_same_outputs(m, out, tol=1e-4)
