#!/usr/bin/env python3
"""engine_opt_test.py - `engine optimize` end to end on models built here:
TASO's README two-branch conv block, a BERT-style attention block whose
three projections share one input, multi-head attention at batch 1 (its
head transposes written so onnxruntime folds them into its MatMuls), an Inception-style block of parallel
convs, a conv+batchnorm+relu stack, and a model with an op the engine does
not know. For each: the output passes onnx.checker (full check), gives the
same outputs as the input in onnxruntime on random inputs (max relative
error < 1e-4), and its cost (the GPU-like analytic model, --cost analytic,
deterministic: the one whose merges these models show) is not above the
input's; where a known rewrite applies the cost goes down and the rewrite
shows (the attention MatMuls merge into one). A SqueezeNet fire module
shows the default cost (analytic-cpu) at work: the GPU-like model enlarges
its 1x1 expand conv to 3x3 to merge it with its neighbour, which runs
slower in onnxruntime on a CPU, and the default leaves the kernels as they
are. Unknown ops survive untouched.

    python3 test/engine_opt_test.py ENGINE_BINARY [--start N] [--report FILE]

Prints TAP lines numbered from N (no plan line: test/cli_optimize.sh
prints it). --report appends a Markdown table of the figures (search time,
cost before/after) to FILE; bench/engine.sh uses it.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

IR, OPSET = 8, 17
TOL = 1e-4
rng = np.random.default_rng(11)


def weight(name, *shape, scale=None):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
    s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
    return numpy_helper.from_array((rng.standard_normal(shape) * s).astype(np.float32), name)


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def model(nodes, name, inputs, outputs, inits, extra_opsets=()):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    opsets = [helper.make_opsetid("", OPSET)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(g, opset_imports=opsets, producer_name="engine_opt_test")
    m.ir_version = IR
    return m


def conv(name, x, w, y, k, pad=None, stride=1, b=None):
    p = (k - 1) // 2 if pad is None else pad
    ins = [x, w] + ([b] if b else [])
    return helper.make_node("Conv", ins, [y], name=name, kernel_shape=[k, k], pads=[p] * 4,
                            strides=[stride, stride])


# ---- the models ----

def taso_block():
    """TASO's README block: conv3x3+relu then conv3x3 on one branch,
    conv1x1+relu on the other, add, relu (64 channels, 28x28)."""
    c = 64
    n = [conv("c1", "x", "w1", "a1", 3), helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
         conv("c2", "r1", "w2", "a2", 3),
         conv("c3", "x", "w3", "a3", 1), helper.make_node("Relu", ["a3"], ["r3"], name="relu3"),
         helper.make_node("Add", ["a2", "r3"], ["s"], name="add"),
         helper.make_node("Relu", ["s"], ["y"], name="relu_out")]
    return model(n, "taso_block", [vi("x", [1, c, 28, 28])], [vi("y", [1, c, 28, 28])],
                 [weight("w1", c, c, 3, 3), weight("w2", c, c, 3, 3), weight("w3", c, c, 1, 1)])


def attention():
    """One attention head over a [64, 256] sequence: Q, K, V projections of
    the same input (three MatMuls sharing x), softmax(Q K^T / 16) V."""
    s, h = 64, 256
    scale = numpy_helper.from_array(np.array(1.0 / 16, dtype=np.float32), "scale")
    n = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q"),
         helper.make_node("MatMul", ["x", "wk"], ["k"], name="k"),
         helper.make_node("MatMul", ["x", "wv"], ["v"], name="v"),
         helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[1, 0]),
         helper.make_node("MatMul", ["q", "kt"], ["qk"], name="qk"),
         helper.make_node("Mul", ["qk", "scale"], ["qks"], name="scaled"),
         helper.make_node("Softmax", ["qks"], ["p"], name="softmax", axis=-1),
         helper.make_node("MatMul", ["p", "v"], ["y"], name="pv")]
    return model(n, "attention", [vi("x", [s, h])], [vi("y", [s, h])],
                 [weight("wq", h, h), weight("wk", h, h), weight("wv", h, h), scale])


def heads():
    """Multi-head attention at batch 1 as transformers exports it: each
    projection reshaped to [1, 16, 4, 8] heads and transposed to [1, 4, 16, 8]
    (the keys to [1, 4, 8, 16]), the context transposed back and merged."""
    s, h, nh = 16, 32, 4
    shp = numpy_helper.from_array(np.array([1, s, nh, h // nh], dtype=np.int64), "hshape")
    back = numpy_helper.from_array(np.array([1, s, h], dtype=np.int64), "back")
    scale = numpy_helper.from_array(np.array(1.0 / np.sqrt(h // nh), dtype=np.float32), "scale")
    n = []
    for p, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        n += [helper.make_node("MatMul", ["x", "w" + p], [p + "0"], name=p),
              helper.make_node("Add", [p + "0", "b" + p], [p + "1"], name=p + "_bias"),
              helper.make_node("Reshape", [p + "1", "hshape"], [p + "2"], name=p + "_heads"),
              helper.make_node("Transpose", [p + "2"], [p + "3"], name=p + "_t", perm=perm)]
    n += [helper.make_node("MatMul", ["q3", "k3"], ["qk"], name="qk"),
          helper.make_node("Mul", ["qk", "scale"], ["qks"], name="scaled"),
          helper.make_node("Softmax", ["qks"], ["p"], name="softmax", axis=-1),
          helper.make_node("MatMul", ["p", "v3"], ["c"], name="pv"),
          helper.make_node("Transpose", ["c"], ["ct"], name="c_t", perm=[0, 2, 1, 3]),
          helper.make_node("Reshape", ["ct", "back"], ["y"], name="merge")]
    inits = [shp, back, scale] + [weight("w" + p, h, h) for p in "qkv"] + [weight("b" + p, h) for p in "qkv"]
    return model(n, "heads", [vi("x", [1, s, h])], [vi("y", [1, s, h])], inits)


def ort_transposes(path, tmp):
    """Transposes left once onnxruntime (ORT_ENABLE_ALL) has optimised the model."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = os.path.join(tmp, "ort_opt.onnx")
    so.log_severity_level = 3
    ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return op_count(onnx.load(so.optimized_model_filepath), "Transpose")


def inception():
    """Inception-style block: 1x1, 3x3 and 5x5 convs and a pool branch on
    one input, each with relu, concatenated on channels."""
    n = [conv("b1", "x", "w1", "a1", 1), helper.make_node("Relu", ["a1"], ["r1"], name="r1"),
         conv("b2", "x", "w2", "a2", 3), helper.make_node("Relu", ["a2"], ["r2"], name="r2"),
         conv("b3", "x", "w3", "a3", 5), helper.make_node("Relu", ["a3"], ["r3"], name="r3"),
         helper.make_node("MaxPool", ["x"], ["p4"], name="pool", kernel_shape=[3, 3],
                          pads=[1, 1, 1, 1], strides=[1, 1]),
         conv("b4", "p4", "w4", "a4", 1), helper.make_node("Relu", ["a4"], ["r4"], name="r4"),
         helper.make_node("Concat", ["r1", "r2", "r3", "r4"], ["y"], name="cat", axis=1)]
    return model(n, "inception", [vi("x", [1, 32, 17, 17])], [vi("y", [1, 64, 17, 17])],
                 [weight("w1", 16, 32, 1, 1), weight("w2", 16, 32, 3, 3),
                  weight("w3", 16, 32, 5, 5), weight("w4", 16, 32, 1, 1)])


def twin_convs():
    """Two 3x3 convs (with relu) reading the same input, added: TASO's
    merge of convolutions sharing an input applies."""
    c = 32
    n = [conv("ca", "x", "wa", "a", 3), helper.make_node("Relu", ["a"], ["ra"], name="relu_a"),
         conv("cb", "x", "wb", "b", 3), helper.make_node("Relu", ["b"], ["rb"], name="relu_b"),
         helper.make_node("Add", ["ra", "rb"], ["y"], name="add")]
    return model(n, "twin_convs", [vi("x", [1, c, 14, 14])], [vi("y", [1, c, 14, 14])],
                 [weight("wa", c, c, 3, 3), weight("wb", c, c, 3, 3)])


def fire():
    """SqueezeNet's fire module: a 1x1 squeeze conv, then a 1x1 and a 3x3
    expand conv (each with relu) reading it, concatenated."""
    n = [conv("squeeze", "x", "ws", "s", 1), helper.make_node("Relu", ["s"], ["rs"], name="relu_s"),
         conv("e1", "rs", "w1", "a", 1), helper.make_node("Relu", ["a"], ["ra"], name="relu_a"),
         conv("e3", "rs", "w3", "b", 3), helper.make_node("Relu", ["b"], ["rb"], name="relu_b"),
         helper.make_node("Concat", ["ra", "rb"], ["y"], name="cat", axis=1)]
    return model(n, "fire", [vi("x", [1, 64, 28, 28])], [vi("y", [1, 128, 28, 28])],
                 [weight("ws", 16, 64, 1, 1), weight("w1", 64, 16, 1, 1), weight("w3", 64, 16, 3, 3)])


def kernel_shapes(m):
    inits = {i.name: tuple(i.dims) for i in m.graph.initializer}
    return sorted(inits[n.input[1]] for n in m.graph.node if n.op_type == "Conv")


def encoder():
    """Two projections sharing x (they merge), a residual add and a
    LayerNormalization with BERT's eps 1e-12: lowered to layernorm + scale +
    bias for the rules, written back as one LayerNormalization with its eps."""
    d = 32
    n = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="q"),
         helper.make_node("MatMul", ["x", "wk"], ["k"], name="k"),
         helper.make_node("Add", ["q", "k"], ["s"], name="qk"),
         helper.make_node("Add", ["s", "x"], ["r"], name="residual"),
         helper.make_node("LayerNormalization", ["r", "g", "b"], ["y"], name="ln", axis=-1,
                          epsilon=1e-12)]
    return model(n, "encoder", [vi("x", [16, d])], [vi("y", [16, d])],
                 [weight("wq", d, d), weight("wk", d, d), weight("g", d), weight("b", d)])


def permutes():
    """Attention's head swap done and undone around a Relu, and NCHW -> NHWC
    -> NCHW: the rules move the Relu and cancel both pairs of Transposes."""
    n = [helper.make_node("Transpose", ["x"], ["t1"], name="swap", perm=[0, 2, 1, 3]),
         helper.make_node("Relu", ["t1"], ["r"], name="relu"),
         helper.make_node("Transpose", ["r"], ["y"], name="unswap", perm=[0, 2, 1, 3]),
         helper.make_node("Transpose", ["x"], ["t3"], name="nhwc", perm=[0, 2, 3, 1]),
         helper.make_node("Transpose", ["t3"], ["z"], name="nchw", perm=[0, 3, 1, 2])]
    return model(n, "permutes", [vi("x", [1, 8, 4, 6])], [vi("y", [1, 8, 4, 6]), vi("z", [1, 8, 4, 6])], [])


def channel_norms():
    """ConvNeXt's channels-first layer norm as torch exports it: NCHW ->
    NHWC, LayerNormalization over C, back to NCHW; once on a pooled
    [1, 8, 1, 1] (the head) and once on [1, 8, 3, 5] (a stage). The rules
    move the norm onto the channel axis and cancel the Transposes; ONNX's
    LayerNormalization normalises every dim from its axis on, so the export
    must give the scale and bias the trailing 1s in the first case and
    move the axis last in the second (or compute something else)."""
    n = []
    for tag, x in (("head", "p"), ("stage", "x")):
        n += [helper.make_node("Transpose", [x], [tag + "_t"], name=tag + "_nhwc", perm=[0, 2, 3, 1]),
              helper.make_node("LayerNormalization", [tag + "_t", tag + "_g", tag + "_b"], [tag + "_n"],
                               name=tag + "_ln", axis=-1, epsilon=1e-5),
              helper.make_node("Transpose", [tag + "_n"], [tag + "_y"], name=tag + "_nchw", perm=[0, 3, 1, 2])]
    n.insert(0, helper.make_node("GlobalAveragePool", ["x"], ["p"], name="pool"))
    n += [helper.make_node("Relu", ["head_y"], ["y"], name="relu"), helper.make_node("Relu", ["stage_y"], ["z"],
                                                                                     name="relu2")]
    inits = [weight(f"{t}_{k}", 8, scale=0.5) for t in ("head", "stage") for k in "gb"]
    return model(n, "channel_norms", [vi("x", [1, 8, 3, 5])], [vi("y", [1, 8, 1, 1]), vi("z", [1, 8, 3, 5])], inits)


def softmax_op11():
    """Opset 11, where Softmax(axis) normalises every dim from its axis on:
    NCHW -> NHWC, Softmax over C (the last axis), back. The rules move the
    softmax onto the channel axis and cancel the Transposes, which the
    export must write back (Softmax-11 over axis 1 would normalise C*H*W
    values at once)."""
    n = [helper.make_node("Transpose", ["x"], ["t"], name="nhwc", perm=[0, 2, 3, 1]),
         helper.make_node("Softmax", ["t"], ["s"], name="softmax", axis=3),
         helper.make_node("Transpose", ["s"], ["u"], name="nchw", perm=[0, 3, 1, 2]),
         helper.make_node("Relu", ["u"], ["z"], name="relu")]
    m = model(n, "softmax_op11", [vi("x", [1, 8, 3, 5])], [vi("z", [1, 8, 3, 5])], [])
    m.opset_import[0].version = 11
    return m


def conv_bn():
    """conv (no bias) + batchnorm + relu, twice: the batchnorms fold."""
    c = 16
    inits = [weight("w1", c, 8, 3, 3), weight("w2", c, c, 3, 3)]
    for i in (1, 2):
        inits += [weight(f"g{i}", c, scale=0.5), weight(f"be{i}", c, scale=0.5),
                  weight(f"m{i}", c, scale=0.5),
                  numpy_helper.from_array(rng.uniform(0.5, 2.0, c).astype(np.float32), f"v{i}")]
    n = [conv("c1", "x", "w1", "a1", 3),
         helper.make_node("BatchNormalization", ["a1", "g1", "be1", "m1", "v1"], ["n1"], name="bn1"),
         helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
         conv("c2", "r1", "w2", "a2", 3),
         helper.make_node("BatchNormalization", ["a2", "g2", "be2", "m2", "v2"], ["n2"], name="bn2"),
         helper.make_node("Relu", ["n2"], ["y"], name="relu2")]
    return model(n, "conv_bn", [vi("x", [1, 8, 16, 16])], [vi("y", [1, c, 16, 16])], inits)


def unknown_op():
    """A model with an op from another domain the engine cannot know: it
    must come out untouched (ORT cannot run it, so compare the protos)."""
    n = [helper.make_node("MatMul", ["x", "w"], ["a"], name="mm"),
         helper.make_node("Frobnicate", ["a"], ["b"], name="custom", domain="com.example",
                          gain=2.5, mode="fast"),
         helper.make_node("Relu", ["b"], ["y"], name="relu")]
    return model(n, "unknown_op", [vi("x", [4, 8])], [vi("y", [4, 8])], [weight("w", 8, 8)],
                 extra_opsets=[("com.example", 1)])


# ---- running ----

def run_engine(engine, src, dst, extra=(), cost="analytic"):
    cmd = [engine, "optimize", src, "-o", dst, "-q", *(("--cost", cost) if cost else ("--deterministic",)),
           *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    figures = {}
    for key, pat in (("before", r"^cost before: ([0-9.]+) us"), ("after", r"^cost after: ([0-9.]+) us"),
                     ("time", r"^(?:search time|saturation): ([0-9.]+) s"), ("rules", r"^rules applied: ([0-9]+)")):
        m = re.search(pat, p.stdout, re.M)
        if m:
            figures[key] = float(m.group(1))
    return p, figures


def max_rel_err(a_path, b_path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sa = ort.InferenceSession(a_path, so, providers=["CPUExecutionProvider"])
    sb = ort.InferenceSession(b_path, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in sa.get_inputs():
        feeds[i.name] = rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
    worst = 0.0
    for x, y in zip(sa.run(None, feeds), sb.run(None, feeds)):
        if x.shape != y.shape:
            return float("inf")
        worst = max(worst, float(np.max(np.abs(x - y)) / max(np.max(np.abs(x)), 1e-6)))
    return worst


def op_count(m, op):
    return sum(1 for n in m.graph.node if n.op_type == op)


class Tap:
    def __init__(self, start):
        self.n = start - 1
        self.failed = 0

    def check(self, ok, desc, why=""):
        self.n += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} - {desc}")
        if not ok:
            self.failed += 1
            for line in str(why).splitlines()[:20]:
                print(f"# {line}")


def main():
    args = sys.argv[1:]
    engine, start, report = args[0], 1, None
    if "--start" in args:
        start = int(args[args.index("--start") + 1])
    if "--report" in args:
        report = args[args.index("--report") + 1]
    t = Tap(start)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        # "down": a rewrite the shipped rules or built-ins know applies. TASO's
        # own rewrite of its block (1x1 enlarged to 3x3, convs merged) needs
        # five operators on one side, beyond the shipped depth; relus after
        # convs are free already (fused at run time), so those stay level.
        # channel_norms is a chain of four moves of equal cost (bias, scale,
        # norm through the Transpose, then the Transposes cancel): the
        # e-graph search's case; the backtracking search's budget is spent
        # on the plateau the identity-kernel rules widen (a scale as a 1x1
        # or depthwise conv, nearly free on a [1, 8, 1, 1] value).
        cases = [("taso_block", taso_block(), "level"), ("attention", attention(), "down"),
                 ("inception", inception(), "level"), ("conv_bn", conv_bn(), "down"),
                 ("twin_convs", twin_convs(), "down"), ("encoder", encoder(), "down"),
                 ("permutes", permutes(), "down"), ("heads", heads(), "level"), ("channel_norms", channel_norms(), "down", ("--search", "egraph")),
                 ("softmax_op11", softmax_op11(), "level", ("--alpha", "2", "--budget", "2000"))]
        for name, m, want, *extra in cases:
            src, dst = os.path.join(d, name + ".onnx"), os.path.join(d, name + ".opt.onnx")
            onnx.save(m, src)
            p, f = run_engine(engine, src, dst, extra[0] if extra else ())
            t.check(p.returncode == 0, f"{name}: engine optimize exits 0", p.stderr)
            if p.returncode:
                continue
            t.check({"before", "after", "time", "rules"} <= f.keys(), f"{name}: prints cost, time, rules",
                    p.stdout)
            try:
                onnx.checker.check_model(onnx.load(dst), full_check=True)
                t.check(True, f"{name}: output passes onnx.checker (full check)")
            except Exception as e:  # the checker raises several kinds
                t.check(False, f"{name}: output passes onnx.checker (full check)", e)
                continue
            err = max_rel_err(src, dst)
            t.check(err < TOL, f"{name}: same outputs in onnxruntime (max rel err {err:.2e})")
            before, after = f.get("before", 0), f.get("after", 0)
            t.check(after <= before, f"{name}: cost not up ({before} -> {after} us)")
            if want == "down":
                t.check(after < before, f"{name}: cost goes down ({before} -> {after} us)", p.stdout)
            rows.append((name, len(m.graph.node), len(onnx.load(dst).graph.node), f.get("time", 0),
                         before, after, f.get("rules", 0), err))
            if name == "attention":
                mm0, mm1 = op_count(m, "MatMul"), op_count(onnx.load(dst), "MatMul")
                t.check(mm1 == mm0 - 2, f"attention: the three projections merge ({mm0} -> {mm1} MatMuls)",
                        p.stdout)
            if name == "twin_convs":  # (the sum may then be a conv of identity kernels: one launch less)
                out = onnx.load(dst)
                inits = {i.name: tuple(i.dims) for i in out.graph.initializer}
                on_x = [inits.get(n.input[1]) for n in out.graph.node if n.op_type == "Conv" and n.input[0] == "x"]
                t.check(on_x == [(64, 32, 3, 3)],
                        f"twin_convs: the two convs of x merge into one of twice the outputs (convs of x: {on_x})",
                        p.stdout)
            if name == "encoder":
                lns = [x for x in onnx.load(dst).graph.node if x.op_type == "LayerNormalization"]
                eps = [a.f for x in lns for a in x.attribute if a.name == "epsilon"]
                t.check(len(lns) == 1 and len(lns[0].input) == 3 and eps == [np.float32(1e-12)],
                        f"encoder: one LayerNormalization with its scale, bias and eps ({len(lns)}, {eps})")
                t.check(op_count(onnx.load(dst), "MatMul") == 1, "encoder: the projections merge",
                        p.stdout)
            if name == "permutes":
                t.check(op_count(onnx.load(dst), "Transpose") == 0, "permutes: every Transpose cancelled",
                        p.stdout)
            if name == "channel_norms":
                t.check(op_count(onnx.load(dst), "Transpose") == 2,
                        "channel_norms: the head's Transposes cancelled (the stage's kept: moving its norm's "
                        "axis would only move them into the export)", p.stdout)
            if name == "conv_bn":
                t.check(op_count(onnx.load(dst), "BatchNormalization") == 0, "conv_bn: batchnorms folded")
            if name == "heads":
                perms = sorted(list(a.ints) for x in onnx.load(dst).graph.node if x.op_type == "Transpose"
                               for a in x.attribute if a.name == "perm")
                t.check(perms == [[0, 2, 1, 3], [1, 2, 0, 3], [1, 2, 0, 3], [1, 2, 3, 0]],
                        f"heads: the unit batch axis moved behind the heads ({perms})", p.stdout)
                t0, t1 = ort_transposes(src, d), ort_transposes(dst, d)
                t.check(t1 == 1 and t0 == 4, f"heads: onnxruntime folds all but the context's Transpose into "
                        f"its MatMuls ({t0} -> {t1})")
        # the deterministic default cost (analytic-cpu) against the GPU-like one on a fire module
        src = os.path.join(d, "fire.onnx")
        m = fire()
        onnx.save(m, src)
        for cost, enlarged in (("analytic", True), (None, False)):
            dst = os.path.join(d, f"fire.{cost or 'default'}.onnx")
            p, f = run_engine(engine, src, dst, cost=cost)
            t.check(p.returncode == 0, f"fire, cost {cost or 'default'}: engine optimize exits 0", p.stderr)
            if p.returncode:
                continue
            out = onnx.load(dst)
            got = any(s[1:] == (16, 3, 3) and s[0] == 128 for s in kernel_shapes(out))
            t.check(got == enlarged, f"fire, cost {cost or 'default'}: the 1x1 expand conv "
                    f"{'is' if enlarged else 'is not'} enlarged to merge with the 3x3 ({kernel_shapes(out)})",
                    p.stdout)
            err = max_rel_err(src, dst)
            t.check(err < TOL, f"fire, cost {cost or 'default'}: same outputs in onnxruntime (max rel err {err:.2e})")
        # determinism: the analytic cost gives the same model twice
        src = os.path.join(d, "attention.onnx")
        a, b = os.path.join(d, "a1.onnx"), os.path.join(d, "a2.onnx")
        run_engine(engine, src, a)
        run_engine(engine, src, b)
        t.check(open(a, "rb").read() == open(b, "rb").read(), "attention: two runs give the same bytes")
        # one search thread or two: the same model, reached the same way
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "onnx", "transformer.onnx")
        runs = []
        for threads in ("1", "2"):
            dst = os.path.join(d, f"tr{threads}.onnx")
            p, _ = run_engine(engine, src, dst, ("--budget", "300", "--time-limit", "600",
                                                 "--search-threads", threads))
            line = re.search(r"stopped: .*", p.stdout)
            runs.append((p.returncode, open(dst, "rb").read() if p.returncode == 0 else b"",
                         line.group(0) if line else ""))
        t.check(runs[0][0] == 0 and runs[0][1] == runs[1][1] and runs[0][2] == runs[1][2] and runs[0][2],
                f"transformer: 1 and 2 search threads give the same bytes and counts ({runs[0][2]} | {runs[1][2]})")
        # unknown op survives untouched
        src, dst = os.path.join(d, "unknown.onnx"), os.path.join(d, "unknown.opt.onnx")
        m = unknown_op()
        onnx.save(m, src)
        p, f = run_engine(engine, src, dst)
        t.check(p.returncode == 0, "unknown op: engine optimize exits 0", p.stderr)
        if p.returncode == 0:
            out = onnx.load(dst)
            custom = [n for n in out.graph.node if n.op_type == "Frobnicate"]
            t.check(len(custom) == 1 and custom[0] == m.graph.node[1], "unknown op: node kept byte for byte")
            t.check([n.op_type for n in out.graph.node] == [n.op_type for n in m.graph.node],
                    "unknown op: the model round-trips unchanged")
            t.check(out.opset_import == m.opset_import, "unknown op: opsets kept")
    if report:
        with open(report, "a") as fh:
            fh.write("| model | nodes in | nodes out | search s | cost before us | cost after us | rules applied | max rel err |\n")
            fh.write("|---|--:|--:|--:|--:|--:|--:|--:|\n")
            for r in rows:
                fh.write(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.2f} | {r[4]:.1f} | {r[5]:.1f} | {int(r[6])} | {r[7]:.1e} |\n")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
