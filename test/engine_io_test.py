#!/usr/bin/env python3
"""engine_io_test.py - `engine roundtrip` on small models built here with
onnx.helper: the output passes onnx.checker.check_model(full_check=True),
onnxruntime gives the same outputs for the original and the round-tripped
model (max relative error < 1e-5), unknown ops survive with their attributes,
model-level fields survive, and `engine info` marks the opaque ops. A model
with control flow (If, Loop reading outer tensors) goes through roundtrip
and optimize with its If and Loop nodes byte for byte. Models that break
ONNX's structural rules (test/mk_onnx_models.py's builders: onnx.checker
rejects each) are refused by info, roundtrip and optimize: exit 2, no
output, a message naming the node and the tensor.

    python3 test/engine_io_test.py ENGINE_BINARY [--start N]

Prints TAP result lines numbered from N (default 1) and no plan line: the
driver, test/cli_engine.sh, prints the plan. Exit status 0 unless a test
failed.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import mk_onnx_models as mk

IR, OPSET = 8, 17
TOL = 1e-5
rng = np.random.default_rng(5)


def weight(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def model(nodes, name, inputs, outputs, inits, extra_opsets=()):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    opsets = [helper.make_opsetid("", OPSET)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(g, opset_imports=opsets, producer_name="engine_io_test",
                          producer_version="1")
    m.ir_version = IR
    return m


# ---- the models ----

def conv_bn_relu():
    """A conv + batchnorm + relu block (conv with bias)."""
    var = numpy_helper.from_array(rng.uniform(0.5, 2.0, 16).astype(np.float32), "var")
    n = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"],
                          name="bn", epsilon=1e-5),
         helper.make_node("Relu", ["n"], ["y"], name="relu")]
    return model(n, "conv_bn_relu", [vi("x", [1, 8, 16, 16])], [vi("y", [1, 16, 16, 16])],
                 [weight("w", 16, 8, 3, 3), weight("b", 16), weight("gamma", 16),
                  weight("beta", 16), weight("mean", 16), var])


def inception():
    """TASO's two-branch block: conv3x3+relu and conv1x1+relu, concatenated,
    then a strided pool branch, a grouped conv and an n-ary concat."""
    n = [helper.make_node("Conv", ["x", "w3"], ["a"], name="b3x3", pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["a"], ["ra"]),
         helper.make_node("Conv", ["x", "w1"], ["b"], name="b1x1"),
         helper.make_node("Relu", ["b"], ["rb"]),
         helper.make_node("Concat", ["ra", "rb"], ["ab"], axis=1),
         helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[1, 1],
                          pads=[1, 1, 1, 1]),
         helper.make_node("Conv", ["p", "wg"], ["g"], name="grouped", group=4, pads=[0, 1, 0, 1],
                          kernel_shape=[1, 3]),
         helper.make_node("AveragePool", ["x"], ["q"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                          count_include_pad=1),
         helper.make_node("Concat", ["ab", "g", "q"], ["y"], axis=1)]
    return model(n, "inception", [vi("x", [1, 8, 12, 12])], [vi("y", [1, 40, 12, 12])],
                 [weight("w3", 8, 8, 3, 3), weight("w1", 8, 8, 1, 1), weight("wg", 16, 2, 1, 3)])


def attention():
    """Three MatMuls sharing an input, scaled scores, Softmax, and a
    batched variant through Reshape/Transpose."""
    n = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q"),
         helper.make_node("MatMul", ["x", "wk"], ["k"], name="k"),
         helper.make_node("MatMul", ["x", "wv"], ["v"], name="v"),
         helper.make_node("Transpose", ["k"], ["kt"]),
         helper.make_node("MatMul", ["q", "kt"], ["s"]),
         helper.make_node("Mul", ["s", "scale"], ["ss"]),
         helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
         helper.make_node("MatMul", ["p", "v"], ["o"]),
         helper.make_node("Add", ["o", "x"], ["y"]),
         helper.make_node("Reshape", ["y", "shape3"], ["y3"]),
         helper.make_node("MatMul", ["y3", "wo"], ["z"]),
         helper.make_node("Gemm", ["y", "wg", "bg"], ["h"], transB=1, alpha=0.5, beta=2.0),
         helper.make_node("Tanh", ["h"], ["ht"]),
         helper.make_node("Sigmoid", ["ht"], ["hs"]),
         helper.make_node("Split", ["hs", "sizes"], ["h0", "h1"], axis=1),
         helper.make_node("Mul", ["h0", "h1"], ["hh"]),
         helper.make_node("Flatten", ["z"], ["zf"], axis=1),
         helper.make_node("Identity", ["zf"], ["out"])]
    return model(n, "attention", [vi("x", [8, 32])], [vi("out", [2, 16]), vi("hh", [8, 8])],
                 [weight("wq", 32, 32), weight("wk", 32, 32), weight("wv", 32, 32),
                  numpy_helper.from_array(np.array(32 ** -0.5, dtype=np.float32), "scale"),
                  numpy_helper.from_array(np.array([2, 4, 32], dtype=np.int64), "shape3"),
                  weight("wo", 32, 4), weight("wg", 16, 32), weight("bg", 16),
                  numpy_helper.from_array(np.array([8, 8], dtype=np.int64), "sizes")])


def unknown_op():
    """Hardmax (not in the engine's list) between known ops; ORT runs it."""
    n = [helper.make_node("GlobalAveragePool", ["x"], ["g"]),
         helper.make_node("Flatten", ["g"], ["f"]),
         helper.make_node("Hardmax", ["f"], ["h"], name="hardmax", axis=-1),
         helper.make_node("Gemm", ["h", "w"], ["y"], name="fc")]
    return model(n, "unknown_op", [vi("x", [2, 6, 4, 4])], [vi("y", [2, 3])], [weight("w", 6, 3)])


def custom_domain():
    """A custom-domain op with every kind of attribute (ORT cannot run it;
    the checker and the byte comparison still apply)."""
    body = helper.make_graph([helper.make_node("Neg", ["r"], ["body_out"])], "body", [],
                             [vi("body_out", [2, 3])])
    n = [helper.make_node("Relu", ["x"], ["r"]),
         helper.make_node("FancyOp", ["r", "w"], ["f"], name="fancy", domain="com.example.ops",
                          alpha=0.75, mode=b"fast", sizes=[3, 1, 4], scales=[1.5, 2.5],
                          names=[b"a", b"b"], table=numpy_helper.from_array(
                              np.arange(6, dtype=np.int32).reshape(2, 3), "table"),
                          body=body),
         helper.make_node("Add", ["f", "x"], ["y"])]
    m = model(n, "custom_domain", [vi("x", [2, 3])], [vi("y", [2, 3])], [weight("w", 2, 3)],
              extra_opsets=[("com.example.ops", 3)])
    m.graph.value_info.append(vi("f", [2, 3]))
    m.doc_string = "a model with a custom op"
    helper.set_model_props(m, {"author": "engine_io_test", "purpose": "round trip"})
    return m


def input_default():
    """IR 8: an initializer that is also a graph input gives it a default
    (allowed from IR 4 on; the input stays an input)."""
    n = [helper.make_node("Mul", ["x", "scale"], ["y"], name="mul")]
    return model(n, "input_default", [vi("x", [2, 3]), vi("scale", [3])], [vi("y", [2, 3])],
                 [weight("scale", 3)])


def control_flow_reversed():
    """mk.control_flow with its nodes in reverse order (onnxruntime sorts
    them; onnx.checker would not): the import sorts them too, the If and
    the Loop after the tensors their subgraphs read."""
    m = mk.control_flow()
    nodes = list(m.graph.node)[::-1]
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m


def ir3():
    """IR version 3 and opset 8: initializers are graph inputs, so the values
    the writer adds (the Constant, the Split sizes) must be listed too."""
    n = [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(
             np.full((4, 6), 0.5, dtype=np.float32))),
         helper.make_node("Mul", ["x", "k"], ["xk"]),
         helper.make_node("Split", ["xk"], ["a", "b"], axis=1, split=[2, 4]),
         helper.make_node("Gemm", ["b", "w", "c"], ["y"])]
    g = helper.make_graph(n, "ir3", [vi("x", [4, 6]), vi("w", [4, 3]), vi("c", [3])],
                          [vi("a", [4, 2]), vi("y", [4, 3])], [weight("w", 4, 3), weight("c", 3)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 8)], producer_name="engine_io_test")
    m.ir_version = 3
    return m


MODELS = [("conv+bn+relu block", conv_bn_relu, True),
          ("inception-style two-branch block", inception, True),
          ("attention block, 3 MatMuls sharing an input", attention, True),
          ("unknown op Hardmax", unknown_op, True),
          ("custom-domain op with attributes", custom_domain, False),
          ("IR 3, opset 8 model", ir3, True),
          ("IR 3: an initializer that is no graph input (the export lists it)",
           mk.reg_ir3_init, True),
          ("IR 8: an initializer is also a graph input (its default)", input_default, True),
          ("If and Loop reading outer tensors", mk.control_flow, True),
          ("If and Loop, nodes in reverse order", control_flow_reversed, True),
          ("a node per shape rule, constants folded (opset 17)", mk.shapes_op17, True),
          ("attribute forms of Slice/Squeeze/Pad/Split (opset 9)", mk.shapes_op9, True),
          ("input forms of ReduceMean/Split/Pad (opset 18)", mk.shapes_op18, True),
          ("Einsum, DepthToSpace, Quantize/DequantizeLinear, GroupNormalization, ... (opset 21)",
           mk.shapes_op21, True)]

# One model per structural rule onnx.checker enforces on the top-level
# graph (and one inside an If's subgraph), with what the engine's message
# must name: the node (index in graph.node, name, op) and the tensor.
STRUCTURE_CASES = [
    ("a graph output no node writes", mk.bad_output_undefined,
     ["graph output 'ghost' is not defined"]),
    ("two nodes write one tensor", mk.bad_dup_output,
     ["node 1 'second_writer' (Neg)", "output 'y' is already an output of node 0 'first_writer' (Relu)"]),
    ("an unnamed node writes a graph input", mk.bad_output_is_input,
     ["node 1 (Relu)", "output 'x' is already a graph input"]),
    ("two initializers of one name", mk.bad_dup_initializer, ["initializer 'w' is defined twice"]),
    ("a graph input listed twice", mk.bad_dup_input, ["graph input 'x' is listed twice"]),
    ("a node writes an initializer", mk.bad_output_is_init,
     ["node 0 'clobber' (Relu)", "output 'w' is already an initializer"]),
    ("a node reads an undefined tensor", mk.bad_undefined_input,
     ["node 1 'add' (Add)", "input 'nowhere' is not defined"]),
    ("an opaque node reads an undefined tensor", mk.bad_opaque_undefined_input,
     ["node 0 'hm' (Hardmax)", "input 'nowhere' is not defined"]),
    ("a cycle", mk.bad_cycle,
     ["node 1 'second' (Relu)", "input 'a' depends on the node's own output"]),
    ("a cycle an If's subgraph closes", mk.bad_subgraph_cycle,
     ["node 3 'if' (If)", "'late', which its subgraph reads, depends on the node's own output"]),
    ("an If's subgraph reads a name no scope defines", mk.bad_subgraph_undefined,
     ["node 2 'if' (If)", "subgraph 'then' reads 'ghost'"]),
]


# ---- checks ----

class Tap:
    def __init__(self, start):
        self.n = start - 1
        self.failed = 0

    def check(self, ok, desc, detail=""):
        self.n += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} - {desc}")
        if not ok:
            self.failed += 1
            for line in str(detail).splitlines()[:20]:
                print(f"# {line}")
        return ok


def run_ort(m, feeds):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)


def rel_error(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)  # bool masks too
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-12)) if a.size else 0.0


def random_feeds(m):
    feeds = {}
    values = {t.name for t in m.graph.initializer}
    for i in m.graph.input:
        if i.name in values:
            continue
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def check_model(tap, engine, tmp, title, make, runnable, command=("roundtrip",)):
    m = make()
    src, dst = os.path.join(tmp, "in.onnx"), os.path.join(tmp, "out.onnx")
    onnx.save(m, src)
    p = subprocess.run([engine, command[0], src, "-o", dst, *command[1:]], capture_output=True,
                       text=True)
    if not tap.check(p.returncode == 0, f"{title}: {command[0]} exits 0", p.stderr):
        return
    out = onnx.load(dst)
    try:
        onnx.checker.check_model(out, full_check=True)
        tap.check(True, f"{title}: output passes check_model(full_check=True)")
    except Exception as e:  # the checker raises several exception types
        tap.check(False, f"{title}: output passes check_model(full_check=True)", e)
    tap.check(out.opset_import == m.opset_import and out.ir_version == m.ir_version and
              out.producer_name == m.producer_name and out.graph.name == m.graph.name and
              out.metadata_props == m.metadata_props and out.doc_string == m.doc_string,
              f"{title}: opset, IR version, producer, graph name, metadata kept")
    names = lambda g: [(v.name, v.type.SerializeToString()) for v in g]
    # below IR 4 the initializers the writer adds are listed as inputs too
    kept_in = names(out.graph.input)[:len(m.graph.input)] if m.ir_version < 4 else names(out.graph.input)
    tap.check(kept_in == names(m.graph.input) and names(out.graph.output) == names(m.graph.output),
              f"{title}: graph inputs and outputs unchanged")
    if runnable:
        feeds = random_feeds(m)
        a, b = run_ort(m, feeds), run_ort(out, feeds)
        err = max(rel_error(x, y) for x, y in zip(a, b))
        tap.check(len(a) == len(b) and err < TOL,
                  f"{title}: onnxruntime outputs agree (max rel error {err:.2e})")


def find_node(m, name):
    return next(n for n in m.graph.node if n.name == name)


def check_opaque(tap, engine, tmp):
    """The unknown ops come back byte-identical (from roundtrip, and for the
    control flow from optimize too), and info marks them."""
    for make, node, op, commands in (
            (unknown_op, "hardmax", "Hardmax", [("roundtrip",)]),
            (custom_domain, "fancy", "com.example.ops:FancyOp", [("roundtrip",)]),
            (mk.control_flow, "if", "If", [("roundtrip",), ("optimize", "-q", "--deterministic")]),
            (mk.control_flow, "loop", "Loop", [("roundtrip",), ("optimize", "-q", "--deterministic")])):
        m = make()
        src, dst = os.path.join(tmp, "in.onnx"), os.path.join(tmp, "out.onnx")
        onnx.save(m, src)
        for command in commands:
            subprocess.run([engine, command[0], src, "-o", dst, *command[1:]], check=True,
                           capture_output=True)
            a, b = find_node(m, node), find_node(onnx.load(dst), node)
            tap.check(a.SerializeToString() == b.SerializeToString(),
                      f"{op} node survives {command[0]} byte for byte (attributes, subgraphs, "
                      "name, domain)")
        p = subprocess.run([engine, "info", src], capture_output=True, text=True)
        line = next((l for l in p.stdout.splitlines() if l.strip().startswith(op + " ")), "")
        tap.check(p.returncode == 0 and "OPAQUE" in line, f"engine info marks {op} as opaque",
                  p.stdout + p.stderr)


def conv_bn_relu6():
    """Opset 6, IR 3: Conv, BatchNormalization-6 (is_test), Relu: optimize
    folds the batchnorm, so the export writes new nodes in opset 6."""
    var = numpy_helper.from_array(rng.uniform(0.5, 2.0, 4).astype(np.float32), "v")
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], name="bn",
                          is_test=1),
         helper.make_node("Relu", ["n"], ["y"], name="relu")]
    return mk.legacy(n, "cbr6", [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])],
                     [weight("w", 4, 3, 3, 3), weight("s", 4), weight("bb", 4), weight("m", 4), var], 6)


# (id, title, model, onnxruntime runs it): onnxruntime 1.32 implements no
# opset < 7 operator version (Relu-1, Add-6...), so those are checked with
# onnx.checker, the kept opset and IR version and the opaque bytes only.
OPSET_CASES = [
    ("V01", "opset 3 (Reshape-1, Concat-1, consumed_inputs)", mk.opset3, False),
    ("V02", "opset 6 (legacy broadcast, BatchNormalization-6)", mk.opset6, False),
    ("V03", "opset 6 conv+bn+relu", conv_bn_relu6, False),
    ("V04", "opset 28, IR 14 (onnx 1.23's default)", mk.opset28, True),
]


def check_opsets(tap, engine, tmp):
    """Old and new opsets: roundtrip and optimize keep the opset and IR
    version and write a valid model; the opaque legacy Add keeps its bytes;
    the opset-6 batchnorm is folded (the export wrote new nodes)."""
    for vid, title, make, runnable in OPSET_CASES:
        for command in (("roundtrip",), ("optimize", "-q", "--deterministic", "--budget", "20")):
            check_model(tap, engine, tmp, f"{vid} {title}, {command[0]}", make, runnable, command)
            out = onnx.load(os.path.join(tmp, "out.onnx"))
            if make is mk.opset6:
                tap.check(legacy_bias(out, "bias", "b"),
                          f"{vid} {command[0]}: the broadcast=1 axis=1 Add is written back as "
                          "Add(c, b [4]) broadcast=1 axis=1")
            if make is conv_bn_relu6 and command[0] == "optimize":
                ops = [n.op_type for n in out.graph.node]
                tap.check(ops == ["Conv", "Relu"], f"{vid} optimize: batchnorm folded into the "
                          "Conv, written in opset 6", ops)


def legacy_bias(m, node, value):
    """Node `node` is an opset < 7 Add/Mul of the [C] value `value` with
    broadcast=1, axis=1 (the form an opset-6 runtime reads)."""
    n = find_node(m, node)
    attrs = {a.name: a.i for a in n.attribute}
    inits = {t.name: list(t.dims) for t in m.graph.initializer}
    return n.input[1] == value and attrs == {"broadcast": 1, "axis": 1} and len(inits[value]) == 1


def node_attr(m, node, name):
    return next((a.i for a in find_node(m, node).attribute if a.name == name), 0)


# (id, title, model, onnxruntime runs it, what the roundtrip export must
# show): issue 11's legalizations. onnxruntime runs no opset < 7 model, so
# those are checked with onnx.checker (test_engine_io.c's L39 compares the
# engine's own evaluator before and after).
LEGAL_CASES = [
    ("G01", "Dropout-13 (training_mode false, mask unread) -> Identity", mk.legal_dropout, True,
     lambda m: [n.op_type for n in m.graph.node].count("Dropout") == 1),
    ("G02", "Dropout-7 (ratio attribute) -> Identity", mk.legal_dropout7, True,
     lambda m: "Dropout" not in [n.op_type for n in m.graph.node]),
    ("G03", "Dropout-6 is_test=1 -> Identity, is_test=0 kept", mk.legal_dropout6, False,
     lambda m: [n.op_type for n in m.graph.node].count("Dropout") == 1),
    ("G04", "Sum (3 inputs, broadcasting, 1 input) -> Adds", mk.legal_sum, True,
     lambda m: "Sum" not in [n.op_type for n in m.graph.node]),
    ("G05", "Sum-6 of 4 equal shapes -> Adds", mk.legal_sum6, False,
     lambda m: [n.op_type for n in m.graph.node].count("Add") == 3),
    ("G06", "pools ceil_mode=1: lowered where ceil = floor, a larger MaxPool written with an end "
     "pad, a larger AveragePool kept", mk.legal_ceil, True,
     lambda m: node_attr(m, "pool1", "ceil_mode") == 0 and node_attr(m, "pool_big", "ceil_mode") == 0
     and [list(a.ints) for a in find_node(m, "pool_big").attribute if a.name == "pads"] == [[0, 0, 1, 1]]
     and node_attr(m, "apool_big", "ceil_mode") == 1),
    ("G07", "opset 6 Add/Mul broadcast=1 axis=1 of [C] -> numpy, written back", mk.legal_legacy6,
     False, lambda m: legacy_bias(m, "bias", "b") and legacy_bias(m, "scale", "k")),
    ("G08", "Clip 0..6, HardSwish, torch's HardSigmoid -> maps, written back with their constants",
     mk.legal_acts, True,
     lambda m: [n.op_type for n in m.graph.node] == ["Conv", "Clip", "HardSwish", "HardSigmoid",
                                                      "HardSigmoid", "Clip", "HardSigmoid"] and
     all(len(n.input) == 1 for n in m.graph.node if n.op_type == "HardSigmoid") and
     list(find_node(m, "clip6").input) == ["c", "zero", "six"] and
     abs(next(a.f for a in find_node(m, "hsig").attribute if a.name == "alpha") - 1 / 6) < 1e-7),
    ("G09", "n-input Concat -> concat chain, BatchNormalization after a Concat -> scale + bias; "
     "written back as one Concat and one BatchNormalization", mk.legal_dense, True,
     lambda m: [n.op_type for n in m.graph.node] == ["Concat", "Relu", "Concat",
                                                      "BatchNormalization", "Conv",
                                                      "BatchNormalization", "Concat"] and
     len(find_node(m, "cat4").input) == 4),
    ("G10", "Gemm transB + bias -> transpose, matmul, bias; MatMul + Add -> matmul, bias; "
     "both written back as Gemm", mk.legal_gemm, True,
     lambda m: [n.op_type for n in m.graph.node] == ["Gemm", "Relu", "Gemm"] and
     node_attr(m, "fc", "transB") == 1 and list(find_node(m, "fc").input) == ["x", "w", "b"]),
    ("G11", "Where(IsNaN(s), 0, s) -> nanzero, written back as IsNaN + Where; a guard to 1 kept",
     mk.legal_nanzero, True,
     lambda m: [n.op_type for n in m.graph.node] == ["Softmax", "IsNaN", "Where", "IsNaN", "Where"] and
     list(find_node(m, "guard_one").input) == ["nan1", "one", "g"]),
    ("G12", "a Reshape to its input's own shape dropped at load, a real Reshape kept",
     mk.legal_noop_reshape, True,
     lambda m: [n.op_type for n in m.graph.node] == ["Relu", "Relu", "Reshape"]),
    ("G13", "two Reshapes into heads sharing a shape with an opaque node: one shape written for both",
     mk.legal_heads_shared, True,
     lambda m: sorted(n.op_type for n in m.graph.node) == ["Expand", "Reshape", "Reshape"] and
     find_node(m, "rs_a").input[1] == find_node(m, "rs_b").input[1] == "hs" and len(m.graph.initializer) == 2),
]


def check_legal(tap, engine, tmp):
    """Roundtrip and optimize of each legalization model: a valid model
    with the inputs, outputs and opset kept, onnxruntime agreeing where it
    runs the opset; the roundtrip writes the legalized form."""
    for gid, title, make, runnable, shows in LEGAL_CASES:
        for command in (("roundtrip",), ("optimize", "-q", "--deterministic", "--budget", "20")):
            check_model(tap, engine, tmp, f"{gid} {title}, {command[0]}", make, runnable, command)
            if command[0] == "roundtrip":
                out = onnx.load(os.path.join(tmp, "out.onnx"))
                tap.check(shows(out), f"{gid} roundtrip: written in the legalized form",
                          [(n.name, n.op_type) for n in out.graph.node])


def check_info(tap, engine, tmp):
    m = inception()
    src = os.path.join(tmp, "in.onnx")
    onnx.save(m, src)
    p = subprocess.run([engine, "info", src], capture_output=True, text=True)
    out = p.stdout
    params = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
    tap.check(p.returncode == 0 and f"parameters:  {params} " in out and "[1,8,12,12]" in out and
              "[1,40,12,12]" in out and "conv2d" in out,
              "engine info: parameter count, input/output shapes, lowered ops", out + p.stderr)


def check_shapes_known(tap, engine, tmp):
    """A transformer layer with the exporter's shape arithmetic (Shape,
    Gather, Unsqueeze, Concat in front of each Reshape, a ConstantOfShape
    mask): engine info knows 100% of its shapes; roundtrip and optimize
    give models that pass check_model(full_check=True) and agree with the
    original in onnxruntime (max rel error <= 1e-4)."""
    m = mk.transformer()
    src = os.path.join(tmp, "tf.onnx")
    onnx.save(m, src)
    p = subprocess.run([engine, "info", src], capture_output=True, text=True)
    tap.check(p.returncode == 0 and "tensors (100%)" in p.stdout,
              "transformer layer: engine info knows every tensor's shape", p.stdout + p.stderr)
    feeds = random_feeds(m)
    want = run_ort(m, feeds)
    for command in (("roundtrip",), ("optimize", "-q", "--deterministic")):
        dst = os.path.join(tmp, "tf_out.onnx")
        p = subprocess.run([engine, command[0], src, "-o", dst, *command[1:]], capture_output=True,
                           text=True)
        if not tap.check(p.returncode == 0, f"transformer layer: {command[0]} exits 0", p.stderr):
            continue
        out = onnx.load(dst)
        try:
            onnx.checker.check_model(out, full_check=True)
            ok, why = True, ""
        except Exception as e:  # the checker raises several exception types
            ok, why = False, e
        tap.check(ok, f"transformer layer, {command[0]}: passes check_model(full_check=True)", why)
        got = run_ort(out, feeds)
        err = max(rel_error(x, y) for x, y in zip(want, got))
        tap.check(len(want) == len(got) and err <= 1e-4,
                  f"transformer layer, {command[0]}: onnxruntime agrees (max rel error {err:.2e})")
        ops = [n.op_type for n in out.graph.node]
        if command[0] == "roundtrip":  # optimize may return the input when nothing is faster
            tap.check(not {"Shape", "Gather", "ConstantOfShape"} & set(ops),
                      "transformer layer, roundtrip: the shape arithmetic is folded", ops)


def check_refused(tap, engine, tmp, title, make, frags):
    """A structurally broken model: onnx.checker rejects it (the case is a
    real violation); info, roundtrip and optimize exit 2, write nothing and
    name the file, node and tensor."""
    m = make()
    try:
        onnx.checker.check_model(m, full_check=False)
        why = "onnx.checker accepts it"
    except onnx.checker.ValidationError as e:
        why = None
        tap.check(True, f"{title}: onnx.checker rejects it ({str(e).splitlines()[0][:60]})")
    if why:
        tap.check(False, f"{title}: onnx.checker rejects it", why)
    src, dst = os.path.join(tmp, "bad.onnx"), os.path.join(tmp, "bad_out.onnx")
    onnx.save(m, src)
    runs = []
    for cmd in (["info", src], ["roundtrip", src, "-o", dst], ["optimize", src, "-o", dst, "-q", "--deterministic"]):
        if os.path.exists(dst):
            os.remove(dst)
        p = subprocess.run([engine, *cmd], capture_output=True, text=True)
        runs.append((cmd[0], p.returncode, os.path.exists(dst), p.stderr.strip()))
    tap.check(all(rc == 2 and not wrote for _, rc, wrote, _ in runs),
              f"{title}: info, roundtrip, optimize exit 2 and write nothing",
              "\n".join(f"{c}: exit {rc}, output written: {w}" for c, rc, w, _ in runs))
    tap.check(all(src + ": " in err and all(f in err for f in frags) for _, _, _, err in runs),
              f"{title}: each message names " + ", ".join(frags),
              "\n".join(f"{c}: {err}" for c, _, _, err in runs))


def ext_model():
    """A conv + matmul model whose weights and biases lie in an external data
    file, as torch.onnx.export writes by default (and a Reshape target
    kept inline, which onnxruntime needs to read from the model itself)."""
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Add", ["c", "b"], ["cb"], name="bias"),
         helper.make_node("Relu", ["cb"], ["r"], name="relu"),
         helper.make_node("Reshape", ["r", "shape"], ["f"], name="flat"),
         helper.make_node("MatMul", ["f", "fc"], ["y"], name="fc")]
    inits = [weight("w", 8, 3, 3, 3), weight("b", 1, 8, 1, 1), weight("fc", 8 * 6 * 6, 10),
             numpy_helper.from_array(np.array([1, -1], dtype=np.int64), "shape")]
    g = helper.make_graph(n, "ext", [vi("x", [1, 3, 6, 6])], [vi("y", [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="engine_io_test")
    m.ir_version = IR
    return m


def save_external(m, path, location):
    """m saved with its float initializers in `location` (beside path); m
    itself is left as it was (onnx.save would rewrite it)."""
    m = onnx.ModelProto.FromString(m.SerializeToString())
    onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location=location,
              size_threshold=0)
    # a Reshape's target must stay inline for onnxruntime: put it back
    out = onnx.load(path, load_external_data=False)
    for t in out.graph.initializer:
        if t.data_type == TensorProto.INT64:
            t.CopyFrom(numpy_helper.from_array(np.array([1, -1], dtype=np.int64), t.name))
    onnx.save(out, path)


def reduce_means(opset):
    """ReduceMean in the forms exports write, at opset 17 (axes an
    attribute) or 18 (axes an input): over H and W with the dims kept (as
    torch's dynamo exporter writes adaptive average pooling to 1 x 1), by
    positive and by negative axes, then over H and W without the dims, and
    over C and H."""
    cases = [("hw", [2, 3], None), ("neg", [-1, -2], 1), ("flat", [2, 3], 0), ("ch", [1, 2], 1)]
    n, inits = [], []
    for tag, axes, keep in cases:
        kw = {} if keep is None else {"keepdims": keep}
        if opset >= 18:
            inits.append(numpy_helper.from_array(np.array(axes, dtype=np.int64), "ax_" + tag))
            n.append(helper.make_node("ReduceMean", ["x", "ax_" + tag], ["m_" + tag], name="rm_" + tag, **kw))
        else:
            n.append(helper.make_node("ReduceMean", ["x"], ["m_" + tag], name="rm_" + tag, axes=axes, **kw))
        n.append(helper.make_node("Relu", ["m_" + tag], [tag], name="relu_" + tag))
    outs = [vi("hw", [1, 6, 1, 1]), vi("neg", [1, 6, 1, 1]), vi("flat", [1, 6]), vi("ch", [1, 1, 1, 5])]
    g = helper.make_graph(n, f"reduce_means{opset}", [vi("x", [1, 6, 4, 5])], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="engine_io_test")
    m.ir_version = IR
    return m


def check_reduce_means(tap, engine, tmp):
    """The ReduceMeans over H and W that keep the dims are read as the
    global average pool they are (rule-visible), the others stay opaque;
    both forms round-trip and optimize to models onnxruntime agrees with."""
    for opset in (17, 18):
        m = reduce_means(opset)
        src = os.path.join(tmp, f"rm{opset}.onnx")
        onnx.save(m, src)
        p = subprocess.run([engine, "info", src], capture_output=True, text=True)
        line = next((l for l in p.stdout.splitlines() if l.strip().startswith("ReduceMean ")), "")
        tap.check(p.returncode == 0 and "OPAQUE" in line and line.split()[1] == "2" and
                  "avgpool                       2" in p.stdout,
                  f"ReduceMean, opset {opset}: the two over H and W with dims kept are avgpools, two stay opaque",
                  p.stdout + p.stderr)
        feeds = random_feeds(m)
        want = run_ort(m, feeds)
        for command in (("roundtrip",), ("optimize", "-q", "--deterministic")):
            dst = os.path.join(tmp, f"rm{opset}_out.onnx")
            p = subprocess.run([engine, command[0], src, "-o", dst, *command[1:]], capture_output=True, text=True)
            if not tap.check(p.returncode == 0, f"ReduceMean, opset {opset}: {command[0]} exits 0", p.stderr):
                continue
            got = run_ort(onnx.load(dst), feeds)
            err = max(rel_error(x, y) for x, y in zip(want, got))
            tap.check(err <= 1e-5, f"ReduceMean, opset {opset}, {command[0]}: onnxruntime agrees (max rel error "
                      f"{err:.2e})")


def check_large(tap, engine, tmp):
    """A model of 80 MB (one [5000, 4000] weight) reads with info,
    roundtrip and optimize: the decoder's memory cap follows the file's
    size (2 x + 64 MiB), whichever way the file is read."""
    w = numpy_helper.from_array(np.ones((5000, 4000), dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "large",
                          [vi("x", [1, 5000])], [vi("y", [1, 4000])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="engine_io_test")
    m.ir_version = IR
    src = os.path.join(tmp, "large.onnx")
    onnx.save(m, src)
    for command in (("info", src), ("roundtrip", src, "-o", os.path.join(tmp, "large_rt.onnx")),
                    ("optimize", src, "-o", os.path.join(tmp, "large_opt.onnx"), "-q", "--deterministic")):
        p = subprocess.run([engine, *command], capture_output=True, text=True)
        tap.check(p.returncode == 0, f"an 80 MB model: {command[0]} exits 0", p.stderr)


def check_external(tap, engine, tmp):
    """Initializers in an external data file are read (relative to the
    model's directory), and the output keeps its own data file beside it,
    so it runs after the input's data is gone; a location outside the
    model's directory, an absolute one, a range past the file's end, a
    missing file, a wrong length and a model read from memory are refused
    with the initializer and the file named."""
    d = os.path.join(tmp, "ext")
    os.makedirs(os.path.join(d, "out"), exist_ok=True)
    m = ext_model()
    src = os.path.join(d, "model.onnx")
    save_external(m, src, "model.onnx.data")
    feeds = random_feeds(m)
    want = run_ort(m, feeds)
    for command in (("roundtrip",), ("optimize", "-q", "--deterministic")):
        dst = os.path.join(d, "out", command[0] + ".onnx")
        p = subprocess.run([engine, command[0], src, "-o", dst, *command[1:]], capture_output=True, text=True)
        if not tap.check(p.returncode == 0, f"external data: {command[0]} exits 0", p.stderr):
            continue
        out = onnx.load(dst, load_external_data=False)
        locs = {e.value for t in out.graph.initializer for e in t.external_data if e.key == "location"}
        tap.check(locs == {command[0] + ".onnx.data"} and os.path.exists(dst + ".data"),
                  f"external data: {command[0]} writes its floats to {command[0]}.onnx.data beside it", locs)
        so = ort.SessionOptions()
        so.log_severity_level = 3
        got = ort.InferenceSession(dst, so, providers=["CPUExecutionProvider"]).run(None, feeds)
        err = max(rel_error(x, y) for x, y in zip(want, got))
        tap.check(err < TOL, f"external data: {command[0]}'s output gives the input's outputs in onnxruntime "
                  f"(max rel error {err:.2e})")
    p = subprocess.run([engine, "info", src], capture_output=True, text=True)
    tap.check(p.returncode == 0 and "parameters:" in p.stdout, "external data: info reads the model", p.stderr)
    data = open(os.path.join(d, "model.onnx.data"), "rb").read()

    def refused(title, edit, frags, data_name="model.onnx.data"):
        bad = onnx.load(src, load_external_data=False)
        t = next(t for t in bad.graph.initializer if t.name == "fc")
        kv = {e.key: e for e in t.external_data}
        edit(kv)
        path = os.path.join(d, "bad.onnx")
        onnx.save(bad, path)
        p = subprocess.run([engine, "optimize", path, "-o", os.path.join(d, "bad.out.onnx"), "--deterministic"], capture_output=True,
                           text=True)
        tap.check(p.returncode == 2 and all(f in p.stderr for f in frags) and
                  not os.path.exists(os.path.join(d, "bad.out.onnx")),
                  f"external data: {title}: exit 2, no output, the message names {frags}", p.stderr)

    def setv(key, value):
        return lambda kv: setattr(kv[key], "value", value)
    refused("a location above the model's directory", setv("location", "../model.onnx.data"),
            ["initializer 'fc'", "not a relative path inside"])
    refused("an absolute location", setv("location", os.path.abspath(os.path.join(d, "model.onnx.data"))),
            ["initializer 'fc'", "not a relative path inside"])
    refused("a range past the file's end", setv("offset", str(len(data) - 8)),
            ["initializer 'fc'", "model.onnx.data", "asked for"])
    refused("a missing file", setv("location", "nowhere.data"), ["initializer 'fc'", "nowhere.data: cannot open"])
    refused("a length that does not fit the shape", setv("length", "16"), ["initializer 'fc'", "16 bytes"])
    refused("an offset that is no number", setv("offset", "12abc"), ["initializer 'fc'", "no byte count"])


def main():
    engine = sys.argv[1]
    start = int(sys.argv[sys.argv.index("--start") + 1]) if "--start" in sys.argv else 1
    tap = Tap(start)
    with tempfile.TemporaryDirectory() as tmp:
        for title, make, runnable in MODELS:
            check_model(tap, engine, tmp, title, make, runnable)
        check_model(tap, engine, tmp, "If and Loop reading outer tensors, optimized", mk.control_flow,
                    True, ("optimize", "-q", "--deterministic"))
        ops = [n.op_type for n in onnx.load(os.path.join(tmp, "out.onnx")).graph.node]
        tap.check(ops.count("Sigmoid") == 1 and "If" in ops and "Loop" in ops,
                  "If and Loop reading outer tensors, optimized: rewritten around them "
                  "(the twin Sigmoids merged), not the input copied", ops)
        check_model(tap, engine, tmp, "IR 3 initializer no graph input, optimized (the input "
                    "kept, mended, not copied)", mk.reg_ir3_init, True, ("optimize", "-q", "--deterministic"))
        check_opaque(tap, engine, tmp)
        check_info(tap, engine, tmp)
        check_opsets(tap, engine, tmp)
        check_legal(tap, engine, tmp)
        check_shapes_known(tap, engine, tmp)
        check_external(tap, engine, tmp)
        check_large(tap, engine, tmp)
        check_reduce_means(tap, engine, tmp)
        for title, make, frags in STRUCTURE_CASES:
            check_refused(tap, engine, tmp, title, make, frags)
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
