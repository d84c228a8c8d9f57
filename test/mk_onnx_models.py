#!/usr/bin/env python3
"""mk_onnx_models.py - writes the tiny ONNX models of test/corpus/onnx/: the
seeds of the fuzz_onnx target and the inputs of test/test_engine_io.c.

    python3 test/mk_onnx_models.py [OUT_DIR]     (default test/corpus/onnx)

Deterministic (fixed seed, fixed IR version and opsets), every file under
20 KB. Good models cover each operator the importer knows, in both the
opspecs-lowered and the model-operator forms, plus opaque nodes (an unknown
op, a custom-domain op, an If whose branches read outer tensors, an If and a
Loop that run in onnxruntime). The reg_* models reproduce inputs the fuzzer
once broke the reader or writer with; the bad_* models are the error cases
the C tests expect to be refused (test/engine_io_test.py imports the
builders of the structural ones and control_flow).
"""
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IR = 8
rng = np.random.default_rng(0)  # reseeded per model in main()


def weight(name, *shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.5, name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def model(nodes, name, inputs, outputs, inits, opset=17, extra_opsets=(), value_info=()):
    g = helper.make_graph(nodes, name, inputs, outputs, inits, value_info=list(value_info))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(g, opset_imports=opsets, producer_name="mk_onnx_models")
    m.ir_version = IR
    return m


def conv_bn_relu():
    n = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"], name="bn",
                          epsilon=1e-3),
         helper.make_node("Relu", ["n"], ["y"], name="relu")]
    var = numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "v")
    return model(n, "conv_bn_relu", [vi("x", [1, 3, 8, 8])], [vi("y", [1, 8, 8, 8])],
                 [weight("w", 8, 3, 3, 3), weight("b", 8), weight("s", 8), weight("bb", 8),
                  weight("m", 8), var])


def inception():
    n = [helper.make_node("Conv", ["x", "w1"], ["a"], name="b1x1"),
         helper.make_node("Conv", ["x", "w3"], ["b"], name="b3x3", pads=[1, 1, 1, 1]),
         helper.make_node("Conv", ["x", "w5"], ["c"], name="b1x3", pads=[0, 1, 0, 1],
                          strides=[2, 2]),
         helper.make_node("MaxPool", ["x"], ["d"], name="pool", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["a"], ["ra"]),
         helper.make_node("Concat", ["ra", "b"], ["ab"], axis=1),
         helper.make_node("Concat", ["ab", "d", "x"], ["y"], axis=-3),
         helper.make_node("AveragePool", ["c"], ["z"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                          count_include_pad=1)]
    return model(n, "inception", [vi("x", ["N", 4, 6, 6])],
                 [vi("y", ["N", 16, 6, 6]), vi("z", ["N", 4, 3, 3])],
                 [weight("w1", 4, 4, 1, 1), weight("w3", 4, 4, 3, 3), weight("w5", 4, 4, 1, 3)])


def attention():
    n = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q"),
         helper.make_node("MatMul", ["x", "wk"], ["k"], name="k"),
         helper.make_node("MatMul", ["x", "wv"], ["v"], name="v"),
         helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
         helper.make_node("MatMul", ["q", "kt"], ["s"]),
         helper.make_node("Constant", [], ["scale"], value_float=0.25),
         helper.make_node("Mul", ["s", "scale"], ["ss"]),
         helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
         helper.make_node("MatMul", ["p", "v"], ["y"])]
    return model(n, "attention", [vi("x", [4, 16])], [vi("y", [4, 16])],
                 [weight("wq", 16, 16), weight("wk", 16, 16), weight("wv", 16, 16)])


def convs():
    """Fixed shapes, so the importer can lower what matches opspecs exactly."""
    n = [helper.make_node("Conv", ["x", "w3"], ["same"], name="same", pads=[1, 1, 1, 1]),
         helper.make_node("Conv", ["same", "w1"], ["valid"], name="valid", strides=[2, 2]),
         helper.make_node("Conv", ["x", "wg"], ["grouped"], name="grouped", pads=[1, 1, 1, 1],
                          group=2),
         helper.make_node("Conv", ["x", "w3"], ["asym"], name="asym", pads=[0, 0, 1, 1]),
         helper.make_node("Conv", ["x", "w3"], ["upper"], name="upper", auto_pad="SAME_UPPER",
                          strides=[2, 2]),
         helper.make_node("AveragePool", ["x"], ["avg"], name="avg", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("AveragePool", ["x"], ["avgc"], name="avgc", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1], count_include_pad=1),
         helper.make_node("MaxPool", ["x"], ["mp"], name="mp", kernel_shape=[3, 1],
                          strides=[2, 2]),
         helper.make_node("Concat", ["same", "grouped"], ["cat"], name="cat", axis=1)]
    return model(n, "convs", [vi("x", [1, 4, 8, 8])],
                 [vi("valid", [1, 4, 4, 4]), vi("cat", [1, 8, 8, 8]), vi("asym", [1, 4, 7, 7]),
                  vi("upper", [1, 4, 4, 4]), vi("avg", [1, 4, 8, 8]), vi("avgc", [1, 4, 8, 8]),
                  vi("mp", [1, 4, 3, 4])],
                 [weight("w3", 4, 4, 3, 3), weight("w1", 4, 4, 1, 1), weight("wg", 4, 2, 3, 3)])


def mixed():
    n = [helper.make_node("GlobalAveragePool", ["x"], ["g"]),
         helper.make_node("Flatten", ["g"], ["f"], axis=1),
         helper.make_node("Gemm", ["f", "w", "b"], ["h"], transB=1, alpha=0.5),
         helper.make_node("Sigmoid", ["h"], ["s"]),
         helper.make_node("Tanh", ["h"], ["t"]),
         helper.make_node("Add", ["s", "row"], ["a"]),
         helper.make_node("Split", ["a", "sizes"], ["p", "q", "r"], axis=1),
         helper.make_node("Constant", [], ["shape"], value_ints=[2, -1]),
         helper.make_node("Reshape", ["t", "shape"], ["rs"]),
         helper.make_node("Identity", ["rs"], ["id"]),
         helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 3, 1]),
         helper.make_node("Split", ["q", "two"], ["q0", "q1"], axis=-1),
         helper.make_node("Mul", ["q0", "q1"], ["qq"])]
    return model(n, "mixed", [vi("x", [2, 6, 3, 3])],
                 [vi("p", [2, 1]), vi("r", [2, 2]), vi("id", [2, 6]), vi("xt", [2, 3, 3, 6]),
                  vi("qq", [2, 2])],
                 [weight("w", 6, 6), weight("b", 6), weight("row", 1, 6), ints("sizes", [1, 3, 2]),
                  ints("two", [2, 1])])


def old_opset():
    n = [helper.make_node("Split", ["x"], ["a", "b"], axis=1, split=[2, 2]),
         helper.make_node("Softmax", ["a"], ["sa"], axis=1),
         helper.make_node("Sub", ["sa", "b"], ["y"])]
    return model(n, "old_opset", [vi("x", [3, 4])], [vi("y", [3, 2])], [], opset=11)


def opaque():
    then_g = helper.make_graph([helper.make_node("Relu", ["h"], ["t_out"])], "then", [],
                               [vi("t_out", [2, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["h"], ["e_out"])], "else", [],
                               [vi("e_out", [2, 3])])
    n = [helper.make_node("Hardmax", ["x"], ["h"], name="hm", axis=0),
         helper.make_node("Foo", ["h"], ["foo"], name="custom", domain="com.example", alpha=0.5,
                          mode="fast", sizes=[1, 2, 3]),
         helper.make_node("ReduceSum", ["x"], ["cond_f"], keepdims=0),
         helper.make_node("Greater", ["cond_f", "zero"], ["cond"]),
         helper.make_node("If", ["cond"], ["branch"], name="if", then_branch=then_g,
                          else_branch=else_g),
         helper.make_node("Add", ["branch", "foo"], ["y"])]
    return model(n, "opaque", [vi("x", [2, 3])], [vi("y", [2, 3])],
                 [numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero")],
                 extra_opsets=[("com.example", 1)], value_info=[vi("foo", [2, 3])])


# ---- regressions: shapes of inputs the fuzzer found (kept as seeds) ----

def reg_unsorted():
    """Nodes out of topological order: the importer sorts them, and the
    writer's value_info order must not depend on tensor ids."""
    n = [helper.make_node("Add", ["r", "s"], ["y"], name="add"),
         helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
         helper.make_node("Relu", ["x"], ["r"], name="relu")]
    return model(n, "unsorted", [vi("x", [2, 3])], [vi("y", [2, 3])], [],
                 value_info=[vi("s", [2, 3]), vi("r", [2, 3])])


def reg_lower_order():
    """Nodes the importer lowers into pieces (a 3-input Concat, a
    BatchNormalization not after a conv) before opaque ones (fuzz_onnx
    found it): the pieces must stay where their node was, or the export,
    read again, is written in another order."""
    N = helper.make_node
    n = [N("Concat", ["x"], ["c1"], name="cat1", axis=1),
         N("Relu", ["c1"], ["r"], name="relu"),
         N("Concat", ["x", "r", "x"], ["c3"], name="cat3", axis=1),
         N("BatchNormalization", ["c3", "n1_s", "n1_b", "n1_m", "n1_v"], ["b1"], name="bn_alone",
           epsilon=0.001),
         N("Hardmax", ["x"], ["h"], name="opaque_a"),
         N("Hardmax", ["h"], ["h2"], name="opaque_b"),
         N("Concat", ["h2", "r", "b1", "x"], ["y"], name="cat4", axis=1)]
    inits = [weight("n1_s", 6), weight("n1_b", 6), weight("n1_m", 6),
             numpy_helper.from_array(np.full(6, 0.5, dtype=np.float32), "n1_v")]
    return model(n, "lower_order", [vi("x", [1, 2, 3, 3])], [vi("y", [1, 12, 3, 3])], inits)


def reg_ir3():
    """IR version 3: every initializer is also a graph input, and values the
    writer adds (a Constant, Split sizes) must be listed as inputs too."""
    n = [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(
             np.full((2, 4), 0.5, dtype=np.float32))),
         helper.make_node("Mul", ["x", "k"], ["xk"]),
         helper.make_node("Split", ["xk"], ["a", "b"], axis=1, split=[1, 3]),
         helper.make_node("Gemm", ["b", "w", "c"], ["y"], transA=0)]
    m = model(n, "ir3", [vi("x", [2, 4]), vi("w", [3, 2]), vi("c", [2])],
              [vi("a", [2, 1]), vi("y", [2, 2])], [weight("w", 3, 2), weight("c", 2)], opset=8)
    m.ir_version = 3
    return m


def reg_odd_values():
    """A value of a data type the engine does not know used as Split sizes
    (the Split stays opaque), a Gemm whose required input is omitted, and
    an Equal of a constant and an omitted input (not folded: fuzz_onnx
    found the folding reading the missing value)."""
    odd = TensorProto(name="odd", data_type=39, dims=[3], raw_data=bytes(24))
    n = [helper.make_node("Split", ["x", "odd"], ["p", "q", "r"], axis=1),
         helper.make_node("Gemm", ["x", "", ""], ["g"], name="gemm"),
         helper.make_node("Identity", ["p"], ["y"]),
         helper.make_node("Equal", ["k3", ""], ["e"], name="eq"),
         helper.make_node("Not", ["e"], ["ne"], name="not")]
    return model(n, "odd_values", [vi("x", [2, 6])],
                 [vi("y", [2, 1]), vi("g", [2, 2]), vi("ne", [3], TensorProto.BOOL)], [odd, ints("k3", [1, 2, 3])])


def reg_empty():
    """No nodes: the output is the input."""
    return model([], "empty", [vi("x", [3])], [vi("x", [3])], [])


def bad_output_decl():
    """An initializer listed as a graph output, declared with another shape."""
    n = [helper.make_node("Relu", ["x"], ["y"])]
    return model(n, "decl", [vi("x", [2])], [vi("y", [2]), vi("w", [2, 2])], [weight("w", 6, 6)])


def bad_input_default():
    """A graph input whose initializer (its default) has another type."""
    n = [helper.make_node("Add", ["x", "w"], ["y"])]
    w = numpy_helper.from_array(np.arange(4, dtype=np.int64), "w")
    return model(n, "default", [vi("x", [4]), vi("w", [4])], [vi("y", [4])], [w])


def bad_cycle():
    n = [helper.make_node("Relu", ["b"], ["a"], name="first"),
         helper.make_node("Relu", ["a"], ["b"], name="second"),
         helper.make_node("Add", ["x", "a"], ["y"], name="out")]
    return model(n, "cycle", [vi("x", [2])], [vi("y", [2])], [])


def bad_missing_init():
    n = [helper.make_node("Conv", ["x", "w_missing"], ["y"], name="conv0")]
    return model(n, "missing", [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 4, 4])], [])


def legacy(nodes, name, inputs, outputs, inits, opset, value_info=()):
    """An IR 3 model of an old opset: every initializer is a graph input."""
    m = model(nodes, name, inputs + [vi(t.name, list(t.dims)) for t in inits], outputs, inits,
              opset=opset, value_info=value_info)
    m.ir_version = 3
    return m


def opset6():
    """Opset 6 (legacy broadcasting, BatchNormalization-6): the conv bias Add
    with broadcast=1 axis=1 differs from numpy's broadcast (opaque), the Gemm
    bias [5] and the one-element Mul scale agree with it (model ops), is_test
    BatchNormalization and the equal-shape Add are read (value_info gives
    the opaque Add's output shape)."""
    var = numpy_helper.from_array(rng.uniform(0.5, 1.5, 4).astype(np.float32), "v")
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("Add", ["c", "b"], ["cb"], name="bias", broadcast=1, axis=1),
         helper.make_node("BatchNormalization", ["cb", "s", "bb", "m", "v"], ["n"], name="bn",
                          is_test=1, epsilon=1e-3),
         helper.make_node("Relu", ["n"], ["r"], name="relu"),
         helper.make_node("Add", ["r", "c"], ["sum"], name="add"),
         helper.make_node("GlobalAveragePool", ["sum"], ["p"], name="gap"),
         helper.make_node("Flatten", ["p"], ["f"], name="flat"),
         helper.make_node("Gemm", ["f", "gw", "gc"], ["g"], name="gemm", broadcast=1),
         helper.make_node("Mul", ["g", "k"], ["gk"], name="scale", broadcast=1),
         helper.make_node("Softmax", ["gk"], ["y"], name="softmax")]
    return legacy(n, "opset6", [vi("x", [1, 3, 8, 8])], [vi("y", [1, 5])],
                  [weight("w", 4, 3, 3, 3), weight("b", 4), weight("s", 4), weight("bb", 4),
                   weight("m", 4), var, weight("gw", 4, 5), weight("gc", 5), weight("k", 1)], 6,
                  value_info=[vi("cb", [1, 4, 8, 8])])


def opset3():
    """Opset 3: Relu-1 and Sigmoid-1 with consumed_inputs, Reshape-1 (the
    target an attribute), Concat-1 without axis (1), Split-2 sizes, MatMul,
    an equal-shape Add-1."""
    n = [helper.make_node("Relu", ["x"], ["r"], name="relu", consumed_inputs=[0]),
         helper.make_node("Reshape", ["r"], ["rs"], name="reshape", shape=[6, 4]),
         helper.make_node("Concat", ["rs", "rs"], ["cc"], name="concat"),
         helper.make_node("Split", ["cc"], ["s1", "s2"], name="split", axis=1, split=[3, 5]),
         helper.make_node("Transpose", ["s1"], ["t"], name="tr", perm=[1, 0]),
         helper.make_node("MatMul", ["t", "s1"], ["mm"], name="mm"),
         helper.make_node("Add", ["mm", "w"], ["y"], name="add"),
         helper.make_node("Sigmoid", ["s2"], ["y2"], name="sig", consumed_inputs=[0])]
    return legacy(n, "opset3", [vi("x", [2, 3, 4])], [vi("y", [3, 3]), vi("y2", [6, 5])],
                  [weight("w", 3, 3)], 3)


def opset28():
    """What onnx 1.23 writes by default (make_model without opset_imports:
    the newest opset and IR version)."""
    n = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("MaxPool", ["r"], ["mp"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Split", ["mp"], ["s1", "s2"], name="split", axis=1, num_outputs=2),
         helper.make_node("Concat", ["s2", "s1"], ["cc"], name="concat", axis=1),
         helper.make_node("Reshape", ["cc", "shp"], ["rs"], name="reshape"),
         helper.make_node("Gemm", ["rs", "gw"], ["g"], name="gemm", transB=1),
         helper.make_node("Softmax", ["g"], ["y"], name="softmax")]
    g = helper.make_graph(n, "opset28", [vi("x", [1, 3, 8, 8])], [vi("y", [1, 5])],
                          [weight("w", 4, 3, 3, 3), weight("b", 4), ints("shp", [1, 64]),
                           weight("gw", 5, 64)])
    return helper.make_model(g, producer_name="mk_onnx_models")


def reg_opset30():
    """An opset newer than the engine knows (valid for some future onnx):
    read, every node opaque."""
    n = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Add", ["r", "x"], ["y"], name="add")]
    return model(n, "future", [vi("x", [2])], [vi("y", [2])], [], opset=30)


def bad_ir_new():
    """An IR version newer than onnx 1.23's (14)."""
    n = [helper.make_node("Relu", ["x"], ["y"])]
    m = model(n, "new", [vi("x", [2])], [vi("y", [2])], [])
    m.ir_version = 99
    return m


def bad_external():
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "weights.bin"), ("offset", "0"), ("length", "16")):
        e = w.external_data.add()
        e.key, e.value = k, v
    n = [helper.make_node("Add", ["x", "w"], ["y"])]
    return model(n, "external", [vi("x", [4])], [vi("y", [4])], [w])


# ---- structural violations onnx.checker rejects (one each); the engine
# must refuse them naming the node and the tensor (test/engine_io_test.py
# holds the message fragments it expects). ----

def bad_output_undefined():
    """A graph output no node writes (nor an input or initializer)."""
    n = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(n, "output_undefined", [vi("x", [2])], [vi("y", [2]), vi("ghost", [2])], [])


def bad_dup_output():
    """Two nodes write the same tensor."""
    n = [helper.make_node("Relu", ["x"], ["y"], name="first_writer"),
         helper.make_node("Neg", ["x"], ["y"], name="second_writer")]
    return model(n, "dup_output", [vi("x", [2])], [vi("y", [2])], [])


def bad_output_is_input():
    """A node (unnamed, so only its index names it) writes a graph input."""
    n = [helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
         helper.make_node("Relu", ["s"], ["x"]),
         helper.make_node("Neg", ["s"], ["y"], name="neg")]
    return model(n, "output_is_input", [vi("x", [2])], [vi("y", [2])], [])


def bad_output_is_init():
    """A node writes an initializer's name."""
    n = [helper.make_node("Relu", ["x"], ["w"], name="clobber"),
         helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    return model(n, "output_is_init", [vi("x", [2])], [vi("y", [2])], [weight("w", 2)])


def bad_undefined_input():
    """A node reads a name nothing defines (an empty name would be fine: an
    omitted optional input)."""
    n = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Add", ["r", "nowhere"], ["y"], name="add")]
    return model(n, "undefined_input", [vi("x", [2])], [vi("y", [2])], [])


def bad_opaque_undefined_input():
    """An opaque node (Hardmax) reads a name nothing defines."""
    n = [helper.make_node("Hardmax", ["x", "nowhere"], ["y"], name="hm")]
    return model(n, "opaque_undefined_input", [vi("x", [2, 3])], [vi("y", [2, 3])], [])


def reg_ir3_init():
    """IR version 3: an initializer that is not also a graph input. The spec
    (and onnx.checker) want it listed; onnxruntime runs it, so the engine
    reads it and its export lists it."""
    n = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    m = model(n, "ir3_init", [vi("x", [2])], [vi("y", [2])], [weight("w", 2)], opset=8)
    m.ir_version = 3
    return m


def bad_dup_initializer():
    """Two initializers of one name."""
    n = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    return model(n, "dup_initializer", [vi("x", [2])], [vi("y", [2])], [weight("w", 2), weight("w", 2)])


def bad_dup_input():
    """A graph input listed twice."""
    n = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    return model(n, "dup_input", [vi("x", [2]), vi("x", [2])], [vi("y", [2])], [])


def if_x(then_reads, out):
    """Nodes computing `out` = x + then_reads if sum(x) > zero else -x, the
    If's then-branch reading x and then_reads from the outer graph (the
    model needs the initializer zero())."""
    then_g = helper.make_graph([helper.make_node("Add", ["x", then_reads], ["t_out"])], "then", [],
                               [vi("t_out", [2])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e_out"])], "else", [],
                               [vi("e_out", [2])])
    return [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
            helper.make_node("Greater", ["s", "zero"], ["cond"]),
            helper.make_node("If", ["cond"], [out], name="if", then_branch=then_g,
                             else_branch=else_g)]


def zero():
    return numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero")


def bad_subgraph_undefined():
    """An If whose branch reads a name no enclosing graph defines."""
    return model(if_x("ghost", "y"), "subgraph_undefined", [vi("x", [2])], [vi("y", [2])], [zero()])


def bad_subgraph_cycle():
    """An If whose branch reads a tensor computed from the If's own output:
    a cycle only the subgraph closes (the If is the node found on it)."""
    n = if_x("late", "branch")
    n = n[:2] + [helper.make_node("Relu", ["branch"], ["late"], name="relu")] + n[2:] + \
        [helper.make_node("Neg", ["late"], ["y"], name="neg")]
    return model(n, "subgraph_cycle", [vi("x", [2])], [vi("y", [2])], [zero()])


def control_flow():
    """Valid control flow, kept opaque: an If whose branches read outer
    tensors (a node output and an initializer) and a Loop (its optional
    condition omitted: "") whose body reads an outer tensor; known ops
    around them, and a Sigmoid computed twice that the built-in rewrites
    merge."""
    then_g = helper.make_graph([helper.make_node("Add", ["r", "w"], ["t_out"])], "then", [],
                               [vi("t_out", [2, 3])])
    else_g = helper.make_graph([helper.make_node("Mul", ["r", "w"], ["e_out"])], "else", [],
                               [vi("e_out", [2, 3])])
    body = helper.make_graph(
        [helper.make_node("Add", ["v_in", "r"], ["v_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
        [vi("iter", [], TensorProto.INT64), vi("cond_in", [], TensorProto.BOOL), vi("v_in", [2, 3])],
        [vi("cond_out", [], TensorProto.BOOL), vi("v_out", [2, 3])])
    n = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["cond"], name="greater"),
         helper.make_node("If", ["cond"], ["branch"], name="if", then_branch=then_g,
                          else_branch=else_g),
         helper.make_node("Loop", ["trips", "", "branch"], ["looped"], name="loop", body=body),
         helper.make_node("Sigmoid", ["looped"], ["s1"], name="sigmoid1"),
         helper.make_node("Sigmoid", ["looped"], ["s2"], name="sigmoid2"),
         helper.make_node("Add", ["s1", "s2"], ["y"], name="add")]
    return model(n, "control_flow", [vi("x", [2, 3])], [vi("y", [2, 3])],
                 [weight("w", 2, 3), numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero"),
                  ints("trips", 3)], value_info=[vi("branch", [2, 3]), vi("looped", [2, 3])])


def bad_shape():
    n = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    return model(n, "shape", [vi("x", [2, 3])], [vi("y", [2, 5])], [weight("w", 4, 5)])


def bad_broadcast():
    """An opaque Sub of [2,3] and [4]: a real mismatch, refused."""
    n = [helper.make_node("Sub", ["x", "c"], ["y"], name="sub")]
    return model(n, "broadcast", [vi("x", [2, 3])], [vi("y", [2, 3])], [weight("c", 4)])


def bn_params(prefix, c):
    var = numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), prefix + "v")
    return [weight(prefix + "s", c), weight(prefix + "b", c), weight(prefix + "m", c), var]


def fold_conv_bn():
    """Built-in rewrites: BN after a bias-less Conv (+Relu), BN after a
    grouped strided Conv with bias, and an Identity in front of an output."""
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn",
                          epsilon=1e-3),
         helper.make_node("Relu", ["n"], ["r"], name="relu"),
         helper.make_node("Conv", ["r", "wg", "bg"], ["cg"], name="gconv", pads=[1, 1, 1, 1],
                          strides=[2, 2], group=2),
         helper.make_node("BatchNormalization", ["cg", "gs", "gb", "gm", "gv"], ["ng"],
                          name="gbn"),
         helper.make_node("Identity", ["ng"], ["y"], name="id")]
    return model(n, "fold_conv_bn", [vi("x", [1, 3, 8, 8])], [vi("y", [1, 6, 4, 4])],
                 [weight("w", 4, 3, 3, 3), weight("wg", 6, 2, 3, 3), weight("bg", 6)] +
                 bn_params("", 4) + bn_params("g", 6))


def fold_conv_bias():
    """Conv with bias (centred and asymmetric pads) and a weight-only Concat
    of two initializers feeding a conv."""
    n = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
         helper.make_node("Conv", ["c", "w2", "b2"], ["d"], name="asym", pads=[0, 0, 1, 1]),
         helper.make_node("Concat", ["wa", "wb"], ["wcat"], name="wcat", axis=0),
         helper.make_node("Conv", ["x", "wcat"], ["e"], name="cat_conv"),
         helper.make_node("Relu", ["e"], ["y2"], name="relu")]
    return model(n, "fold_conv_bias", [vi("x", [1, 3, 6, 6])],
                 [vi("d", [1, 4, 6, 6]), vi("y2", [1, 5, 6, 6])],
                 [weight("w", 4, 3, 3, 3), weight("b", 4), weight("w2", 4, 4, 2, 2),
                  weight("b2", 4), weight("wa", 2, 3, 1, 1), weight("wb", 3, 3, 1, 1)])


def fold_matmul3():
    """BERT-style rank-3 MatMuls [1,s,k] x [k,n], a shared input read by two
    identical Reshapes (CSE) and a weight-only Transpose."""
    n = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
         helper.make_node("Relu", ["h"], ["hr"], name="relu"),
         helper.make_node("Transpose", ["w2t"], ["w2"], name="wt", perm=[1, 0]),
         helper.make_node("MatMul", ["hr", "w2"], ["y"], name="mm2"),
         helper.make_node("Reshape", ["x", "shp"], ["xa"], name="ra"),
         helper.make_node("Reshape", ["x", "shp2"], ["xb"], name="rb"),
         helper.make_node("Add", ["xa", "xb"], ["z"], name="add")]
    return model(n, "fold_matmul3", [vi("x", [1, 5, 8])], [vi("y", [1, 5, 4]), vi("z", [5, 8])],
                 [weight("w1", 8, 8), weight("w2t", 4, 8), ints("shp", [5, 8]),
                  ints("shp2", [5, 8])])



def fold_cse_opaque():
    """A per-layer mask, as transformer exports write it: the same opaque
    Greater and Where on equal constants, repeated (merged to one each);
    Hardmax on two axes (kept apart); two seeded RandomUniformLike nodes
    (random: never merged, read through a multiply by zero so the outputs
    are deterministic); Greater on two graph inputs whose initializers
    (defaults a feed may replace) are equal (kept apart)."""
    n = [helper.make_node("Greater", ["x", "za"], ["ga"], name="ga"),
         helper.make_node("Greater", ["x", "zb"], ["gb"], name="gb"),
         helper.make_node("Where", ["ga", "fa", "x"], ["wa"], name="wa"),
         helper.make_node("Where", ["gb", "fb", "x"], ["wb"], name="wb"),
         helper.make_node("Add", ["wa", "wb"], ["y"], name="add"),
         helper.make_node("Hardmax", ["x"], ["h0"], name="h0", axis=0),
         helper.make_node("Hardmax", ["x"], ["h1"], name="h1", axis=1),
         helper.make_node("Hardmax", ["x"], ["h1b"], name="h1b", axis=1),
         helper.make_node("Sum", ["h0", "h1", "h1b"], ["h"], name="hsum"),
         helper.make_node("RandomUniformLike", ["x"], ["ra"], name="ra", seed=1.0),
         helper.make_node("RandomUniformLike", ["x"], ["rb"], name="rb", seed=1.0),
         helper.make_node("Add", ["ra", "rb"], ["r"], name="radd"),
         helper.make_node("Mul", ["r", "zero"], ["z"], name="rzero"),
         helper.make_node("Greater", ["x", "da"], ["gda"], name="gda"),
         helper.make_node("Greater", ["x", "db"], ["gdb"], name="gdb"),
         helper.make_node("Xor", ["gda", "gdb"], ["dx"], name="dxor"),
         helper.make_node("Cast", ["dx"], ["d"], name="dcast", to=TensorProto.FLOAT)]
    return model(n, "fold_cse_opaque", [vi("x", [3, 4]), vi("da", []), vi("db", [])],
                 [vi("y", [3, 4]), vi("h", [3, 4]), vi("z", [3, 4]), vi("d", [3, 4])],
                 [f32("za", 0.25), f32("zb", 0.25), f32("fa", -3.0), f32("fb", -3.0),
                  f32("zero", np.zeros((3, 4))), f32("da", 0.5), f32("db", 0.5)])

# ---- shape rules and constant folding (cfold.c); every tensor named after
# ---- the case that checks it in test/test_engine_io.c's S table

def N(op, ins, outs, **kw):
    return helper.make_node(op, ins, outs if isinstance(outs, list) else [outs],
                            name=outs if isinstance(outs, str) else outs[0], **kw)


def f32(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def shapes_op17():
    """One node per rule at opset 17 (inputs as tensors: Slice, Squeeze,
    Unsqueeze, Pad, Split sizes, ReduceSum axes)."""
    n = [N("MaxPool", ["x"], "mp_ceil", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
         N("AveragePool", ["x"], "ap_pad", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 0],
           count_include_pad=1),
         N("MaxPool", ["x"], "mp_dil", kernel_shape=[2, 2], dilations=[2, 2]),
         N("MaxPool", ["x"], "mp_same", kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
         N("ConvTranspose", ["x", "wt"], "convt", strides=[2, 2]),
         N("GlobalMaxPool", ["x"], "gmp"),
         N("Clip", ["x", "lo", "hi"], "clip"),
         N("HardSigmoid", ["x"], "hsig"),
         N("HardSwish", ["x"], "hswish"),
         N("Erf", ["t"], "erf"),
         N("LRN", ["x"], "lrn", size=3),
         N("InstanceNormalization", ["x", "c3", "c3b"], "inorm"),
         N("Sub", ["x", "c311"], "sub"),
         N("Pow", ["t", "two"], "pow"),
         N("Sum", ["a21", "a13", "a3"], "sum3"),
         N("Max", ["a21", "a13"], "max2"),
         N("LogSoftmax", ["t"], "lsm", axis=-1),
         N("LayerNormalization", ["t", "g16", "b16"], "ln", axis=-1),
         N("ReduceMean", ["t"], "rmean", axes=[-1], keepdims=1),
         N("ReduceSum", ["t", "ax1"], "rsum", keepdims=0),
         N("ReduceMax", ["t"], "rmax", keepdims=0),
         N("Split", ["t", "sp24"], ["split_a", "split_b"], axis=1),
         N("Slice", ["t", "m4", "big", "ax2"], "slice_neg"),
         N("Slice", ["t", "m1", "m100", "ax1", "m2"], "slice_step"),
         N("Gather", ["t", "idx22"], "gather", axis=1),
         N("Transpose", ["t"], "transp", perm=[2, 0, 1]),
         N("Unsqueeze", ["t", "ax03"], "unsq"),
         N("Squeeze", ["unsq", "ax3"], "sq"),
         N("Expand", ["a61", "e264"], "expand"),
         N("Tile", ["t", "r211"], "tile"),
         N("Pad", ["x", "pads8"], "pad"),
         N("Shape", ["t"], "shape15", start=1),
         N("Size", ["t"], "size"),
         N("ConstantOfShape", ["e23"], "cofs",
           value=numpy_helper.from_array(np.array([1.5], dtype=np.float32))),
         N("Cast", ["t"], "cast", to=TensorProto.INT32),
         N("Dropout", ["t"], ["drop", "drop_mask"]),
         N("Equal", ["t", "t"], "eq"),
         N("Where", ["eq", "t", "two"], "where"),
         N("Range", ["zero_i", "ten_i", "three_i"], "range"),
         N("Resize", ["x", "", "sc1122"], "resize", mode="nearest"),
         N("Resize", ["x", "", "", "sz1377"], "resize_sz", mode="nearest"),
         N("MatMul", ["q4", "k4"], "mm4"),
         N("Softmax", ["t"], "softmax", axis=1),
         N("Concat", ["a13", "a13", "a13"], "cat3", axis=0),
         N("Flatten", ["x"], "flat", axis=2),
         N("Conv", ["x", "wc"], "conv1x", strides=[2, 2]),
         N("Gemm", ["g84", "g86"], "gemm", transA=1),
         # the exporter's shape arithmetic in front of a Reshape
         N("Shape", ["t"], "rs_shape"),
         N("Gather", ["rs_shape", "zero_s"], "rs_batch", axis=0),
         N("Unsqueeze", ["rs_batch", "ax0"], "rs_b1"),
         N("Concat", ["rs_b1", "six", "four", "four"], "rs_target", axis=0),
         N("Reshape", ["t", "rs_target"], "reshaped")]
    i64 = lambda name, v: ints(name, v)
    inits = [weight("wt", 3, 2, 3, 3), f32("lo", 0.0), f32("hi", 6.0), weight("c3", 3), weight("c3b", 3),
             weight("c311", 3, 1, 1), f32("two", 2.0), weight("a21", 2, 1), weight("a13", 1, 3),
             weight("a3", 3), weight("g16", 16), weight("b16", 16), i64("ax1", [1]),
             i64("sp24", [2, 4]), i64("m4", [-4]), i64("big", [2**63 - 1]), i64("ax2", [2]),
             i64("m1", [-1]), i64("m100", [-100]), i64("m2", [-2]),
             i64("idx22", [[0, 5], [-1, 2]]), i64("ax03", [0, 3]), i64("ax3", [3]),
             weight("a61", 6, 1), i64("e264", [2, 6, 4]), i64("r211", [2, 1, 1]),
             i64("pads8", [0, 0, 1, 2, 0, 0, 3, 4]), i64("e23", [2, 3]),
             numpy_helper.from_array(np.array(0, dtype=np.int64), "zero_i"),
             numpy_helper.from_array(np.array(10, dtype=np.int64), "ten_i"),
             numpy_helper.from_array(np.array(3, dtype=np.int64), "three_i"),
             f32("sc1122", [1, 1, 2, 2]), i64("sz1377", [1, 3, 7, 7]),
             weight("q4", 1, 2, 6, 8), weight("k4", 1, 2, 8, 6), weight("wc", 4, 3, 1, 1),
             weight("g84", 8, 4), weight("g86", 8, 6),
             numpy_helper.from_array(np.array(0, dtype=np.int64), "zero_s"), i64("ax0", [0]),
             i64("six", [6]), i64("four", [4])]
    outs = [vi("reshaped", [1, 6, 4, 4]), vi("mp_ceil", [1, 3, 5, 5]), vi("slice_step", [1, 3, 16])]
    return model(n, "shapes_op17", [vi("x", [1, 3, 10, 10]), vi("t", [1, 6, 16])], outs, inits,
                 opset=17)


def fold_window():
    """Swin-style window padding (K04 in test_engine_io.c): the pads come
    from the input's shape through Mod (fmod 0) and Sub, then torch's
    F.pad layout (Concat, Reshape to pairs, a reversing Slice, Transpose,
    Reshape), all folded at load. Mod with negative operands, fmod 0
    (the divisor's sign) and 1 (the dividend's), int64 and float, feeds the
    outputs through a Cast (not folded: float vectors fold after the
    search) and an Add."""
    n = [N("Shape", ["x"], "w_shape"),
         N("Gather", ["w_shape", "i1"], "w_h", axis=0),
         N("Gather", ["w_shape", "i2"], "w_w", axis=0),
         N("Mod", ["w_h", "seven"], "w_hm"), N("Sub", ["seven", "w_hm"], "w_hs"),
         N("Mod", ["w_hs", "seven"], "pad_b"),
         N("Mod", ["w_w", "seven"], "w_wm"), N("Sub", ["seven", "w_wm"], "w_ws"),
         N("Mod", ["w_ws", "seven"], "pad_r"),
         N("Unsqueeze", ["pad_b", "ax0"], "w_pbu"), N("Unsqueeze", ["pad_r", "ax0"], "w_pru"),
         N("Concat", ["zero1", "zero1", "zero1", "w_pru", "zero1", "w_pbu", "zero2"], "w_pairs", axis=0),
         N("Reshape", ["w_pairs", "pair_shape"], "w_pr"),
         N("Slice", ["w_pr", "rs_starts", "rs_ends", "ax0", "rs_steps"], "w_rev"),
         N("Transpose", ["w_rev"], "w_tp", perm=[1, 0]),
         N("Reshape", ["w_tp", "flat_shape"], "pads"),
         N("Pad", ["x", "pads"], "y"),
         N("Mod", ["negi", "divi"], "mod_py"),
         N("Mod", ["negi", "divi"], "mod_c", fmod=1),
         N("Mod", ["negf", "divf"], "mod_f", fmod=1),
         N("Concat", ["mod_py", "mod_c"], "mod_i", axis=0),
         N("Cast", ["mod_i"], "mod_if", to=TensorProto.FLOAT),
         N("Add", ["mod_if", "v6"], "z"),
         N("Add", ["mod_f", "v2"], "z2")]
    return model(n, "fold_window", [vi("x", [1, 5, 6, 3]), vi("v6", [6]), vi("v2", [2])],
                 [vi("y", [1, 7, 7, 3]), vi("z", [6]), vi("z2", [2])],
                 [ints("i1", 1), ints("i2", 2), ints("seven", 7), ints("ax0", [0]), ints("zero1", [0]),
                  ints("zero2", [0, 0]), ints("pair_shape", [-1, 2]), ints("rs_starts", [-1]),
                  ints("rs_ends", [-(2 ** 63 - 1)]), ints("rs_steps", [-1]), ints("flat_shape", [-1]),
                  ints("negi", [-3, 3, -10]), ints("divi", [7, -7, 3]),
                  f32("negf", -5.5), f32("divf", 2.0)])


def fold_noops():
    """Nodes that move nothing, as exports write them where a size needs no
    change (removed): a Pad by zeros, a Cast to the same type, a Slice of
    everything, an Expand to the same shape. And their look-alikes that do
    move data (kept): a Pad by ones, a reversing Slice of the same shape,
    a Cast to int32, a Pad by zeros read from a graph input (a default a
    feed may replace)."""
    n = [N("Pad", ["x", "pads0"], "p0"),
         N("Cast", ["p0"], "c0", to=TensorProto.FLOAT),
         N("Slice", ["c0", "st0", "en0", "ax1", "step1"], "s0"),
         N("Expand", ["s0", "shp"], "e0"),
         N("Relu", ["e0"], "r0"),
         N("Pad", ["r0", "pads1"], "y"),
         N("Slice", ["x", "st_rev", "en_rev", "ax1", "step_rev"], "rev"),
         N("Cast", ["rev"], "z", to=TensorProto.INT32),
         N("Pad", ["x", "pads_in"], "w")]
    return model(n, "fold_noops", [vi("x", [2, 3, 4]), vi("pads_in", [6], TensorProto.INT64)],
                 [vi("y", [4, 5, 6]), vi("z", [2, 3, 4], TensorProto.INT32), vi("w", [2, 3, 4])],
                 [ints("pads0", [0, 0, 0, 0, 0, 0]), ints("pads1", [1, 1, 1, 1, 1, 1]), ints("st0", [0]),
                  ints("en0", [3]), ints("ax1", [1]), ints("step1", [1]), ints("shp", [2, 3, 4]),
                  ints("st_rev", [-1]), ints("en_rev", [-(2 ** 63 - 1)]), ints("step_rev", [-1]),
                  ints("pads_in", [0, 0, 0, 0, 0, 0])])


def fold_neutral():
    """Arithmetic by a neutral constant (removed): x + 0 (a scalar, as
    MobileOne's exports add the literal 0 its branch sums start from),
    0 + x and x * 1 by a full tensor, x / 1, x - 0; the zero shared by two
    nodes (not viewed as a scalar). And look-alikes (kept): x + 0.5, a zero
    that broadcasts x to a larger shape, and x + a zero that is a graph
    input's default (a feed may replace it)."""
    n = [N("Add", ["x", "zero"], "a0"),
         N("Mul", ["a0", "one"], "m0"),
         N("Div", ["m0", "one_b"], "d0"),
         N("Add", ["zeros", "d0"], "e0"),
         N("Mul", ["ones", "e0"], "f0"),
         N("Sub", ["f0", "zero_s"], "s0"),
         N("Add", ["s0", "zero_s"], "t0"),
         N("Relu", ["t0"], "y"),
         N("Add", ["x", "half"], "k1"),
         N("Add", ["x", "zeros_big"], "k2"),
         N("Add", ["x", "zero_in"], "k3")]
    return model(n, "fold_neutral", [vi("x", [2, 3, 4]), vi("zero_in", [])],
                 [vi("y", [2, 3, 4]), vi("k1", [2, 3, 4]), vi("k2", [5, 2, 3, 4]), vi("k3", [2, 3, 4])],
                 [f32("zero", 0.0), f32("one", 1.0), f32("one_b", [1.0]), f32("zeros", np.zeros([2, 3, 4])),
                  f32("ones", np.ones([3, 4])), f32("zero_s", [0.0]), f32("half", 0.5),
                  f32("zeros_big", np.zeros([5, 2, 3, 4])), f32("zero_in", 0.0)])


def shapes_op9():
    """The attribute forms: Slice (before 10), Squeeze/Unsqueeze axes,
    Pad pads, Split sizes, ReduceMean axes; Upsample scales input."""
    n = [N("Slice", ["t"], "slice9", starts=[1], ends=[-1], axes=[1]),
         N("Unsqueeze", ["t"], "unsq9", axes=[0]),
         N("Squeeze", ["unsq9"], "sq9", axes=[0]),
         N("Pad", ["t"], "pad9", pads=[0, 1, 2, 0, 3, 4]),
         N("Split", ["t"], ["split9_a", "split9_b"], axis=1, split=[2, 4]),
         N("ReduceMean", ["t"], "rmean9", axes=[1, 2], keepdims=0),
         N("Upsample", ["t", "usc"], "ups", mode="nearest")]
    return model(n, "shapes_op9", [vi("t", [1, 6, 16])], [vi("slice9", [1, 4, 16])],
                 [f32("usc", [1, 2, 2])], opset=9)


def shapes_op18():
    """Opset 18: ReduceMean axes as input, Split num_outputs."""
    n = [N("ReduceMean", ["t", "ax2"], "rmean18", keepdims=0),
         N("Split", ["t"], ["s18_a", "s18_b", "s18_c"], axis=2, num_outputs=3),
         N("Pad", ["t", "p2", "", "axl"], "pad18")]
    return model(n, "shapes_op18", [vi("t", [1, 6, 16])], [vi("rmean18", [1, 6])],
                 [ints("ax2", [2]), ints("p2", [1, 2]), ints("axl", [-1])], opset=18)


def shapes_op21():
    """Opset 21: the shape rules of operators real exports use and the
    engine keeps opaque (Einsum in its forms, DepthToSpace/SpaceToDepth,
    QuantizeLinear/DequantizeLinear, GroupNormalization, GatherND,
    GridSample, OneHot, LSTM/GRU/RNN, ...): each output feeds a model operator (a Relu
    or an Add), which the rules can rewrite only when the shape is known."""
    n = [N("Einsum", ["q5", "k5"], "es_attn", equation="bhqd,bhkd->bhqk"),
         N("Einsum", ["m23", "m34"], "es_implicit", equation="ij,jk"),
         N("Einsum", ["b2134", "b546"], "es_ellipsis", equation="...ij, ...jk -> ...ik"),
         N("Einsum", ["m23"], "es_transpose", equation="Ab->bA"),
         N("Einsum", ["sq33"], "es_diag", equation="ii->i"),
         N("Einsum", ["v3", "v4"], "es_outer", equation="i,j"),
         N("Einsum", ["m23"], "es_sum", equation="ij->"),
         N("DepthToSpace", ["x8"], "d2s", blocksize=2, mode="CRD"),
         N("SpaceToDepth", ["x8"], "s2d", blocksize=2),
         N("QuantizeLinear", ["x8", "qs", "qz"], "q8"),
         N("DequantizeLinear", ["q8", "qs", "qz"], "dq8"),
         N("DynamicQuantizeLinear", ["x8"], ["dyq", "dyq_s", "dyq_z"]),
         N("GroupNormalization", ["x8", "gn_s", "gn_b"], "gn", num_groups=2),
         N("GatherND", ["m34", "gnd_i"], "gnd"),
         N("GridSample", ["x8", "grid"], "gs"),
         N("OneHot", ["oh_i", "oh_d", "oh_v"], "oh", axis=1),
         N("Det", ["sq233"], "det"),
         N("Shrink", ["m23"], "shrink"),
         N("Sinh", ["m23"], "sinh"),
         N("LpNormalization", ["m23"], "lpn", axis=1),
         N("EyeLike", ["sq33"], "eye"),
         N("BitwiseAnd", ["i23", "i3"], "band"),
         N("MatMulInteger", ["u23", "u34"], "mmi"),
         N("LSTM", ["rx", "lstm_w", "lstm_r"], ["lstm_y", "lstm_h", "lstm_c"], hidden_size=5),
         N("GRU", ["rx", "gru_w", "gru_r"], ["gru_y", "gru_h"], hidden_size=5,
           direction="bidirectional"),
         N("RNN", ["rx", "rnn_w", "rnn_r"], ["", "rnn_h"], hidden_size=5)]
    relu = ["es_attn", "es_implicit", "es_ellipsis", "es_transpose", "es_diag", "es_outer",
            "d2s", "s2d", "dq8", "gn", "gnd", "gs", "oh", "det", "shrink", "sinh", "lpn", "eye",
            "lstm_y", "lstm_h", "lstm_c", "gru_y", "gru_h", "rnn_h"]
    n += [N("Relu", [t], t + "_r") for t in relu]
    n += [N("Add", ["es_sum", "es_sum"], "es_sum_r")]
    shape = {"es_attn": [1, 2, 5, 6], "es_implicit": [2, 4], "es_ellipsis": [2, 5, 3, 6],
             "es_transpose": [3, 2], "es_diag": [3], "es_outer": [3, 4], "d2s": [1, 1, 12, 16],
             "s2d": [1, 16, 3, 4], "dq8": [1, 4, 6, 8], "gn": [1, 4, 6, 8], "gnd": [2],
             "gs": [1, 4, 3, 5], "oh": [1, 4, 3], "det": [2], "shrink": [2, 3], "sinh": [2, 3],
             "lpn": [2, 3], "eye": [3, 3], "es_sum": [], "lstm_y": [3, 1, 2, 5], "lstm_h": [1, 2, 5],
             "lstm_c": [1, 2, 5], "gru_y": [3, 2, 2, 5], "gru_h": [2, 2, 5], "rnn_h": [1, 2, 5]}
    outs = [vi(t + "_r", shape[t]) for t in relu + ["es_sum"]] + [
        vi("dyq", [1, 4, 6, 8], TensorProto.UINT8), vi("band", [2, 3], TensorProto.INT64),
        vi("mmi", [2, 4], TensorProto.INT32)]
    u8 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.uint8), name)
    inits = [weight("q5", 1, 2, 5, 4), weight("k5", 1, 2, 6, 4), weight("m23", 2, 3), weight("m34", 3, 4),
             weight("b2134", 2, 1, 3, 4), weight("b546", 1, 5, 4, 6), weight("sq33", 3, 3), weight("v3", 3),
             weight("v4", 4), f32("qs", 0.05), u8("qz", 128), weight("gn_s", 4), weight("gn_b", 4),
             ints("gnd_i", [[0, 1], [2, 3]]), weight("grid", 1, 3, 5, 2),
             ints("oh_i", [[1, 0, 2]]), f32("oh_d", 4.0), f32("oh_v", [0.0, 1.0]),
             weight("sq233", 2, 3, 3), ints("i23", [[1, 2, 3], [4, 5, 6]]), ints("i3", [3, 5, 7]),
             u8("u23", [[1, 2, 3], [4, 5, 6]]), u8("u34", np.arange(12).reshape(3, 4)),
             weight("rx", 3, 2, 4), weight("lstm_w", 1, 20, 4),
             weight("lstm_r", 1, 20, 5), weight("gru_w", 2, 15, 4), weight("gru_r", 2, 15, 5),
             weight("rnn_w", 1, 5, 4), weight("rnn_r", 1, 5, 5)]
    return model(n, "shapes_op21", [vi("x8", [1, 4, 6, 8])], outs, inits, opset=21)


def transformer():
    """A one-layer encoder as torch.onnx writes it: every Reshape target is
    Shape/Gather/Unsqueeze/Concat arithmetic, the attention mask a
    ConstantOfShape; LayerNormalization, Erf-GELU, 4-D MatMuls."""
    d, h, s = 16, 2, 8
    dh = d // h
    n = [N("LayerNormalization", ["x", "ln1_g", "ln1_b"], "ln1", axis=-1, epsilon=1e-5),
         N("MatMul", ["ln1", "w_qkv"], "qkv0"), N("Add", ["qkv0", "b_qkv"], "qkv"),
         N("Split", ["qkv", "sp3"], ["q", "k", "v"], axis=2),
         N("Shape", ["x"], "x_shape"),
         N("Gather", ["x_shape", "i0"], "bsz", axis=0),
         N("Gather", ["x_shape", "i1"], "seq", axis=0),
         N("Unsqueeze", ["bsz", "ax0"], "bsz1"), N("Unsqueeze", ["seq", "ax0"], "seq1"),
         N("Concat", ["bsz1", "seq1", "heads", "hdim"], "heads_shape", axis=0),
         N("Mul", ["bsz", "seq"], "bs"), N("Unsqueeze", ["bs", "ax0"], "bs1"),
         N("Concat", ["bsz1", "seq1", "dmodel"], "merge_shape", axis=0)]
    for t in "qkv":
        n += [N("Reshape", [t, "heads_shape"], t + "_h"),
              N("Transpose", [t + "_h"], t + "_t", perm=[0, 2, 3, 1] if t == "k" else [0, 2, 1, 3])]
    n += [N("MatMul", ["q_t", "k_t"], "scores0"), N("Div", ["scores0", "scale"], "scores1"),
          N("Concat", ["bsz1", "one", "one", "seq1"], "mask_shape", axis=0),
          N("ConstantOfShape", ["mask_shape"], "mask",
            value=numpy_helper.from_array(np.array([0.0], dtype=np.float32))),
          N("Add", ["scores1", "mask"], "scores"),
          N("Softmax", ["scores"], "probs", axis=-1),
          N("MatMul", ["probs", "v_t"], "ctx0"),
          N("Transpose", ["ctx0"], "ctx1", perm=[0, 2, 1, 3]),
          N("Reshape", ["ctx1", "merge_shape"], "ctx"),
          N("MatMul", ["ctx", "w_o"], "attn0"), N("Add", ["attn0", "b_o"], "attn"),
          N("Add", ["x", "attn"], "res1"),
          N("LayerNormalization", ["res1", "ln2_g", "ln2_b"], "ln2", axis=-1, epsilon=1e-5),
          N("MatMul", ["ln2", "w_1"], "ff0"), N("Add", ["ff0", "b_1"], "ff1"),
          N("Div", ["ff1", "sqrt2"], "ff2"), N("Erf", ["ff2"], "ff3"),
          N("Add", ["ff3", "onef"], "ff4"), N("Mul", ["ff1", "ff4"], "ff5"),
          N("Mul", ["ff5", "half"], "ff6"),
          N("MatMul", ["ff6", "w_2"], "ff7"), N("Add", ["ff7", "b_2"], "ff8"),
          N("Add", ["res1", "ff8"], "y")]
    inits = [weight("ln1_g", d), weight("ln1_b", d), weight("w_qkv", d, 3 * d), weight("b_qkv", 3 * d),
             ints("sp3", [d, d, d]), ints("i0", 0), ints("i1", 1), ints("ax0", [0]),
             ints("heads", [h]), ints("hdim", [dh]), ints("dmodel", [d]), ints("one", [1]),
             f32("scale", np.sqrt(dh)), weight("w_o", d, d), weight("b_o", d),
             weight("ln2_g", d), weight("ln2_b", d), weight("w_1", d, 2 * d), weight("b_1", 2 * d),
             f32("sqrt2", np.sqrt(2.0)), f32("onef", 1.0), f32("half", 0.5),
             weight("w_2", 2 * d, d), weight("b_2", d)]
    return model(n, "transformer", [vi("x", [1, s, d])], [vi("y", [1, s, d])], inits, opset=17)


def legal_dropout():
    """Opset 13 Dropouts as torch exports them (issue 11): ratio and
    training_mode as inputs (a constant false, an omitted one) with the mask
    unused -> identities; a Dropout whose mask is a graph output stays
    opaque."""
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("Dropout", ["c", "ratio", "train"], ["d", "dmask"], name="drop"),
         helper.make_node("Relu", ["d"], ["r"], name="relu"),
         helper.make_node("Dropout", ["r", "ratio"], ["e"], name="drop2"),
         helper.make_node("Dropout", ["e"], ["y", "mask"], name="drop_mask")]
    train = numpy_helper.from_array(np.array(False), "train")
    return model(n, "legal_dropout", [vi("x", [1, 3, 8, 8])],
                 [vi("y", [1, 4, 8, 8]), vi("mask", [1, 4, 8, 8], TensorProto.BOOL)],
                 [weight("w", 4, 3, 3, 3), f32("ratio", 0.3), train], opset=13)


def legal_dropout7():
    """Opset 7 Dropout (ratio attribute, no is_test): an identity in inference."""
    n = [helper.make_node("Dropout", ["x"], ["d"], name="drop", ratio=0.2),
         helper.make_node("Relu", ["d"], ["y"], name="relu")]
    return model(n, "legal_dropout7", [vi("x", [2, 6])], [vi("y", [2, 6])], [], opset=7)


def legal_dropout6():
    """Opset 6: Dropout with is_test=1 is an identity; is_test=0 (training,
    the default) stays opaque."""
    n = [helper.make_node("Dropout", ["x"], ["d"], name="drop", is_test=1, ratio=0.1),
         helper.make_node("Relu", ["d"], ["r"], name="relu"),
         helper.make_node("Dropout", ["r"], ["y"], name="drop_train", ratio=0.1)]
    return legacy(n, "legal_dropout6", [vi("x", [2, 6])], [vi("y", [2, 6])], [], 6)


def legal_sum():
    """Sum (opset 13): three equal shapes -> a chain of Adds (ewadd), one with
    numpy broadcasting (the second input [4,1,1]), a one-input Sum."""
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
         helper.make_node("Relu", ["c"], ["r"], name="relu"),
         helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
         helper.make_node("Sum", ["c", "r", "s"], ["t"], name="sum3"),
         helper.make_node("Sum", ["t", "bias", "r"], ["u"], name="sumb"),
         helper.make_node("Sum", ["u"], ["y"], name="sum1")]
    return model(n, "legal_sum", [vi("x", [1, 3, 6, 6])], [vi("y", [1, 4, 6, 6])],
                 [weight("w", 4, 3, 1, 1), weight("bias", 4, 1, 1)], opset=13)


def legal_affine():
    """A learnable affine after a conv (timm's HGNetV2): Mul by a [1] scale and
    Add of a [1,1,1,1] shift, each read only there -> smul and sadd (the
    constants viewed as scalars); a [1] value read twice stays a model op."""
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
         helper.make_node("Mul", ["c", "scale"], ["m"], name="affine_mul"),
         helper.make_node("Add", ["m", "shift"], ["a"], name="affine_add"),
         helper.make_node("Relu", ["a"], ["r"], name="relu"),
         helper.make_node("Mul", ["twice", "r"], ["q"], name="shared_mul"),
         helper.make_node("Add", ["q", "twice"], ["y"], name="shared_add")]
    return model(n, "legal_affine", [vi("x", [1, 3, 6, 6])], [vi("y", [1, 4, 6, 6])],
                 [weight("w", 4, 3, 1, 1), weight("scale", 1), weight("shift", 1, 1, 1, 1), weight("twice", 1)],
                 opset=17)


def legal_layer_scale():
    """A layer scale of equal values in every block, as a TorchScript export
    of a random init writes it: one [C,1,1] initializer read by two Muls,
    one of them through an Identity -> scale(1) for each, each reading a
    vector copy of its own (the shared value stays as it was)."""
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
         helper.make_node("Identity", ["gamma"], ["gamma_id"], name="share"),
         helper.make_node("Mul", ["c", "gamma_id"], ["m"], name="ls_a"),
         helper.make_node("Relu", ["m"], ["r"], name="relu"),
         helper.make_node("Mul", ["gamma", "r"], ["q"], name="ls_b"),
         helper.make_node("Add", ["q", "x"], ["y"], name="res")]
    return model(n, "legal_layer_scale", [vi("x", [1, 4, 6, 6])], [vi("y", [1, 4, 6, 6])],
                 [weight("w", 4, 4, 1, 1), weight("gamma", 4, 1, 1)], opset=17)


def legal_sum6():
    """Sum-6 of four equal shapes (opset 6, no broadcasting) -> Adds."""
    n = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("Sum", ["x", "r", "x", "r"], ["y"], name="sum4")]
    return legacy(n, "legal_sum6", [vi("x", [2, 3])], [vi("y", [2, 3])], [], 6)


def legal_ceil():
    """SqueezeNet 1.1's pools: MaxPool k3 s2 ceil_mode=1 on 111, 55, 27
    (ceil and floor agree -> maxpool), an AveragePool likewise; on 10,
    where ceil gives 5 and floor 4 (GoogLeNet's pools), a MaxPool (the
    same pool with an end pad of 1) and an AveragePool (kept opaque)."""
    n = [helper.make_node("MaxPool", ["x"], ["p1"], name="pool1", kernel_shape=[3, 3],
                          strides=[2, 2], ceil_mode=1),
         helper.make_node("MaxPool", ["p1"], ["p2"], name="pool2", kernel_shape=[3, 3],
                          strides=[2, 2], ceil_mode=1),
         helper.make_node("AveragePool", ["p2"], ["p3"], name="pool3", kernel_shape=[3, 3],
                          strides=[2, 2], ceil_mode=1),
         helper.make_node("MaxPool", ["z"], ["q"], name="pool_big", kernel_shape=[3, 3],
                          strides=[2, 2], ceil_mode=1),
         helper.make_node("AveragePool", ["z"], ["qa"], name="apool_big", kernel_shape=[3, 3],
                          strides=[2, 2], ceil_mode=1)]
    return model(n, "legal_ceil", [vi("x", [1, 2, 111, 111]), vi("z", [1, 2, 10, 10])],
                 [vi("p3", [1, 2, 13, 13]), vi("q", [1, 2, 5, 5]), vi("qa", [1, 2, 5, 5])], [], opset=13)


def legal_legacy6():
    """Opset 6 conv bias and scale in the old form: Add/Mul broadcast=1 axis=1
    of a [C] constant on NCHW -> numpy Add/Mul of a [C,1,1] value."""
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1]),
         helper.make_node("Add", ["c", "b"], ["cb"], name="bias", broadcast=1, axis=1),
         helper.make_node("Mul", ["cb", "k"], ["ck"], name="scale", broadcast=1, axis=1),
         helper.make_node("Relu", ["ck"], ["y"], name="relu")]
    return legacy(n, "legal_legacy6", [vi("x", [1, 3, 6, 6])], [vi("y", [1, 4, 6, 6])],
                  [weight("w", 4, 3, 3, 3), weight("b", 4), weight("k", 4)], 6)


def legal_acts():
    """Activations of mobile nets (opset 14): Clip 0..6 -> relu6, torch's
    HardSigmoid (alpha 1/6; beta 1/2 written, or left at its default as torch
    does) -> hardsigmoid, HardSwish -> hardswish; a Clip
    to 4 and a HardSigmoid with ONNX's default alpha stay opaque."""
    f32 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.float32), name)
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
         helper.make_node("Clip", ["c", "zero", "six"], ["r6"], name="clip6"),
         helper.make_node("HardSwish", ["r6"], ["hw"], name="hswish"),
         helper.make_node("HardSigmoid", ["hw"], ["hs"], name="hsig", alpha=1.0 / 6, beta=0.5),
         helper.make_node("HardSigmoid", ["hs"], ["ht"], name="hsig_torch", alpha=1.0 / 6),
         helper.make_node("Clip", ["ht", "zero", "four"], ["c4"], name="clip4"),
         helper.make_node("HardSigmoid", ["c4"], ["y"], name="hsig_default")]
    return model(n, "legal_acts", [vi("x", [1, 3, 6, 6])], [vi("y", [1, 4, 6, 6])],
                 [weight("w", 4, 3, 1, 1), f32("zero", 0.0), f32("six", 6.0), f32("four", 4.0)],
                 opset=14)


def legal_nanzero():
    """The guard transformers' exports put after attention's softmax (opset
    17): Where(IsNaN(s), 0, s) -> nanzero; the same guard writing 1 for a
    NaN stays opaque."""
    f32 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.float32), name)
    n = [helper.make_node("Softmax", ["x"], ["s"], name="sm", axis=-1),
         helper.make_node("IsNaN", ["s"], ["nan"], name="isnan"),
         helper.make_node("Where", ["nan", "zero", "s"], ["g"], name="guard"),
         helper.make_node("IsNaN", ["g"], ["nan1"], name="isnan_one"),
         helper.make_node("Where", ["nan1", "one", "g"], ["y"], name="guard_one")]
    return model(n, "legal_nanzero", [vi("x", [1, 2, 4, 4])], [vi("y", [1, 2, 4, 4])],
                 [f32("zero", 0.0), f32("one", 1.0)], opset=17)


def legal_noop_reshape():
    """A Reshape to its input's own shape (attention's head merge after a
    fused kernel keeps one), dropped at load; a real Reshape kept."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
    n = [helper.make_node("Relu", ["x"], ["r"], name="relu1"),
         helper.make_node("Reshape", ["r", "same"], ["s"], name="noop"),
         helper.make_node("Relu", ["s"], ["t"], name="relu2"),
         helper.make_node("Reshape", ["t", "flat"], ["y"], name="flatten")]
    return model(n, "legal_noop_reshape", [vi("x", [1, 2, 4, 4])], [vi("y", [1, 32])],
                 [i64("same", [1, 2, -1, 4]), i64("flat", [1, 32])], opset=14)


def legal_heads_shared():
    """Two Reshapes into heads sharing their shape with an opaque Expand
    (fuzzing found it): the Reshapes become heads; the export writes one
    shape for both, the same again when its output is read back."""
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
    one = numpy_helper.from_array(np.ones([1], dtype=np.float32), "one")
    n = [helper.make_node("Reshape", ["x", "hs"], ["a"], name="rs_a"),
         helper.make_node("Reshape", ["z", "hs"], ["b"], name="rs_b"),
         helper.make_node("Expand", ["one", "hs"], ["e"], name="expand")]
    return model(n, "legal_heads_shared", [vi("x", [1, 8, 16]), vi("z", [1, 8, 16])],
                 [vi("a", [1, 8, 4, 4]), vi("b", [1, 8, 4, 4]), vi("e", [1, 8, 4, 4])],
                 [i64("hs", [1, 8, 4, 4]), one], opset=14)


def kmul_inputs():
    """Two biased 1x1 convs in a row whose weights are graph inputs: what
    the rules make of them (kmul of non-constant kernels) must be written
    as ONNX, not folded."""
    n = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1"),
         helper.make_node("Conv", ["c1", "w2", "b2"], ["y"], name="conv2")]
    return model(n, "kmul_inputs", [vi("x", [1, 4, 3, 3]), vi("w1", [3, 4, 1, 1]), vi("b1", [3]),
                                     vi("w2", [5, 3, 1, 1]), vi("b2", [5])],
                 [vi("y", [1, 5, 3, 3])], [], opset=13)


def legal_dense():
    """DenseNet's spelling (opset 13): Concat of 1, 3 and 4 inputs, a
    BatchNormalization after a Concat (-> scale + bias, written back as one
    BatchNormalization) and one after a Conv (left for folding)."""
    bn = lambda p, c: [numpy_helper.from_array((rng.random(c) + 0.5).astype(np.float32), p + "_s"),
                       weight(p + "_b", c), weight(p + "_m", c),
                       numpy_helper.from_array((rng.random(c) + 0.5).astype(np.float32), p + "_v")]
    n = [helper.make_node("Concat", ["x"], ["c1"], name="cat1", axis=1),
         helper.make_node("Relu", ["c1"], ["r"], name="relu"),
         helper.make_node("Concat", ["x", "r", "x"], ["c3"], name="cat3", axis=1),
         helper.make_node("BatchNormalization", ["c3", "n1_s", "n1_b", "n1_m", "n1_v"], ["b1"],
                          name="bn_alone", epsilon=1e-3),
         helper.make_node("Conv", ["b1", "w"], ["cv"], name="conv", kernel_shape=[1, 1]),
         helper.make_node("BatchNormalization", ["cv", "n2_s", "n2_b", "n2_m", "n2_v"], ["b2"],
                          name="bn_conv"),
         helper.make_node("Concat", ["b2", "r", "b1", "x"], ["y"], name="cat4", axis=1)]
    return model(n, "legal_dense", [vi("x", [1, 4, 5, 5])], [vi("y", [1, 24, 5, 5])],
                 [weight("w", 4, 12, 1, 1)] + bn("n1", 12) + bn("n2", 4), opset=13)


def legal_bn_branch():
    """RepGhost's fusion branch: a Conv's output read by a depthwise Conv and
    by a BatchNormalization, summed (the batchnorm cannot be folded into the
    conv: another node reads its output -> scale + bias), and a Conv read by
    its BatchNormalization alone (left for folding)."""
    bn = lambda p, c: [numpy_helper.from_array((rng.random(c) + 0.5).astype(np.float32), p + "_s"),
                       weight(p + "_b", c), weight(p + "_m", c),
                       numpy_helper.from_array((rng.random(c) + 0.5).astype(np.float32), p + "_v")]
    n = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[1, 1]),
         helper.make_node("Conv", ["c", "dw"], ["d"], name="cheap", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                          group=4),
         helper.make_node("BatchNormalization", ["c", "f_s", "f_b", "f_m", "f_v"], ["f"], name="bn_branch"),
         helper.make_node("Add", ["d", "f"], ["a"], name="sum"),
         helper.make_node("Conv", ["a", "w2"], ["e"], name="conv2", kernel_shape=[1, 1]),
         helper.make_node("BatchNormalization", ["e", "g_s", "g_b", "g_m", "g_v"], ["y"], name="bn_fold")]
    return model(n, "legal_bn_branch", [vi("x", [1, 3, 6, 6])], [vi("y", [1, 4, 6, 6])],
                 [weight("w", 4, 3, 1, 1), weight("dw", 4, 1, 3, 3), weight("w2", 4, 4, 1, 1)] + bn("f", 4) +
                 bn("g", 4), opset=17)


def legal_gemm():
    """A classifier head (opset 13): Gemm with transB and a bias (-> transpose,
    matmul, bias; written back as one Gemm), then MatMul + Add of a [N] bias
    (-> matmul, bias; written as a Gemm too)."""
    n = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], name="fc", transB=1),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "w2"], ["m"], name="mm"),
         helper.make_node("Add", ["m", "b2"], ["y"], name="add")]
    return model(n, "legal_gemm", [vi("x", [2, 6])], [vi("y", [2, 3])],
                 [weight("w", 5, 6), weight("b", 5), weight("w2", 5, 3), weight("b2", 3)], opset=13)


def post_ln():
    """A post-norm residual block as BERT writes it (opset 17): the residual
    Add read only by a LayerNormalization, which onnxruntime fuses into a
    SkipLayerNormalization; the engine may write the Add as a Sum (eg_spell)."""
    n = [N("MatMul", ["x", "w"], "m"), N("Add", ["m", "b"], "a"), N("Add", ["x", "a"], "r"),
         N("LayerNormalization", ["r", "g", "beta"], "y", axis=-1, epsilon=1e-12)]
    return model(n, "post_ln", [vi("x", [1, 8, 16])], [vi("y", [1, 8, 16])],
                 [weight("w", 16, 16), weight("b", 16), weight("g", 16), weight("beta", 16)], opset=17)


MODELS = {
    "conv_bn_relu": conv_bn_relu, "inception": inception, "convs": convs, "attention": attention,
    "mixed": mixed, "old_opset": old_opset, "opaque": opaque,
    "reg_unsorted": reg_unsorted, "reg_lower_order": reg_lower_order, "reg_ir3": reg_ir3, "reg_odd_values": reg_odd_values,
    "reg_empty": reg_empty, "bad_output_decl": bad_output_decl,
    "bad_input_default": bad_input_default,
    "bad_cycle": bad_cycle, "bad_missing_init": bad_missing_init, "bad_ir_new": bad_ir_new,
    "bad_external": bad_external, "bad_shape": bad_shape,
    "bad_output_undefined": bad_output_undefined, "bad_dup_output": bad_dup_output,
    "bad_output_is_input": bad_output_is_input, "bad_output_is_init": bad_output_is_init,
    "bad_undefined_input": bad_undefined_input,
    "bad_opaque_undefined_input": bad_opaque_undefined_input, "reg_ir3_init": reg_ir3_init,
    "bad_subgraph_undefined": bad_subgraph_undefined, "bad_subgraph_cycle": bad_subgraph_cycle,
    "bad_dup_initializer": bad_dup_initializer, "bad_dup_input": bad_dup_input,
    "control_flow": control_flow, "opset6": opset6, "opset3": opset3, "opset28": opset28,
    "reg_opset30": reg_opset30,
    "fold_conv_bn": fold_conv_bn, "fold_conv_bias": fold_conv_bias, "fold_matmul3": fold_matmul3,
    "fold_cse_opaque": fold_cse_opaque,
    "shapes_op17": shapes_op17, "fold_window": fold_window, "fold_noops": fold_noops, "fold_neutral": fold_neutral, "shapes_op9": shapes_op9, "shapes_op18": shapes_op18,
    "shapes_op21": shapes_op21,
    "transformer": transformer, "bad_broadcast": bad_broadcast,
    "legal_dropout": legal_dropout, "legal_dropout7": legal_dropout7,
    "legal_dropout6": legal_dropout6, "legal_sum": legal_sum, "legal_sum6": legal_sum6,
    "legal_affine": legal_affine, "legal_bn_branch": legal_bn_branch, "legal_layer_scale": legal_layer_scale,
    "legal_ceil": legal_ceil, "legal_legacy6": legal_legacy6, "legal_acts": legal_acts,
    "legal_dense": legal_dense, "legal_gemm": legal_gemm, "legal_nanzero": legal_nanzero,
    "legal_noop_reshape": legal_noop_reshape, "legal_heads_shared": legal_heads_shared,
    "kmul_inputs": kmul_inputs, "post_ln": post_ln,
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "onnx")
    os.makedirs(out, exist_ok=True)
    global rng
    for name, make in MODELS.items():
        # a seed per model, so adding a model leaves the other files as they are
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        m = make()
        if not name.startswith(("bad_", "reg_odd", "reg_unsorted", "reg_ir3_init", "reg_opset30")):  # invalid on purpose
            onnx.checker.check_model(m, full_check=True)
        data = m.SerializeToString()
        assert len(data) < 20000, (name, len(data))
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
