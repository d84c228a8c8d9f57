#!/usr/bin/env python3
"""engine_fold_test.py - the built-in rewrites (engine/fold/fold.h) end to end:
fold_driver (eg_builtin_pre then eg_builtin_post, no search) on the corpus
models; every output passes onnx.checker.check_model(full_check=True), has
the same graph output names, and onnxruntime gives the same outputs as for
the original (max relative error < 1e-4); the fold_* models lose their
BatchNormalization, Identity and weight-only Concat/Transpose nodes. The
NaN guard after an attention softmax goes exactly when the scores are
finite for every input, and the value ranges that decide it (range.h) hold
every value onnxruntime computes.

Then the engine's own evaluator (eg_eval_graph, engine/fold/geval.h, through
fold_driver --eval), which the C tests use to check every rewrite, is held
to onnxruntime: on the corpus models it can run and on models built here
that vary every model operator's attributes (Conv bias, asymmetric pads,
strides and groups; pools with and without count_include_pad; Gemm
transposes, alpha, beta and C broadcast; batched (bmm among them) and rank-1 MatMul;
Softmax, Split, Concat, Transpose, Flatten on other axes; LayerNormalization
lowered and over two axes), the outputs
agree within the same tolerance.

    python3 test/engine_fold_test.py FOLD_DRIVER [--start N]

Prints TAP result lines numbered from N (default 1) and no plan line: the
driver, test/cli_fold.sh, prints the plan. Exit status 0 unless a test
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

CORPUS = "test/corpus/onnx"
MODELS = ["fold_conv_bn", "fold_conv_bias", "fold_matmul3", "fold_cse_opaque", "fold_window", "fold_noops", "fold_neutral", "conv_bn_relu", "convs",
          "attention", "inception", "mixed", "old_opset", "opaque", "reg_ir3"]
TOL = 1e-4
# op types that must be gone after the rewrites (fold_conv_bn: no Add
# either, the folded biases are written back into the Convs)
GONE = {"fold_conv_bn": {"BatchNormalization", "Identity", "Add"},
        "fold_conv_bias": {"Concat"},
        "fold_matmul3": {"Transpose"},
        "conv_bn_relu": {"BatchNormalization"}}
# op types and how many of each must be left (common subexpressions of
# opaque nodes merged, random and differing ones kept)
LEFT = {"fold_cse_opaque": {"Greater": 3, "Where": 1, "Hardmax": 2, "RandomUniformLike": 2},
        "fold_noops": {"Pad": 2, "Slice": 1, "Cast": 1, "Expand": 0},
        "fold_neutral": {"Add": 3, "Mul": 0, "Div": 0, "Sub": 0},
        "fold_shared_weight": {"Transpose": 1, "Mul": 2}}
# models whose file must not grow by a folded copy of a weight (bytes of slack)
NO_GROWTH = {"fold_shared_weight": 65536}

n = 0
failed = False


def tap(ok, desc, detail=""):
    global n, failed
    n += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, desc))
    if not ok:
        failed = True
        for line in str(detail).splitlines():
            print("# " + line)


def feeds(m):
    rng = np.random.default_rng(7)
    inits = {i.name for i in m.graph.initializer}
    out = {}
    for i in m.graph.input:
        if i.name in inits:
            continue
        shape = [d.dim_value if d.dim_value > 0 else 2 for d in i.type.tensor_type.shape.dim]
        out[i.name] = rng.standard_normal(shape).astype(np.float32)
    return out


def run(path, f):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, f)))


def check_model(driver, name, tmp, src=None):
    src = src or os.path.join(CORPUS, name + ".onnx")
    dst = os.path.join(tmp, name + ".out.onnx")
    r = subprocess.run([driver, src, dst], capture_output=True, text=True)
    tap(r.returncode == 0, "%s: fold_driver exits 0 (%s)" % (name, r.stdout.strip()), r.stderr)
    if r.returncode:
        return
    m0, m1 = onnx.load(src), onnx.load(dst)
    try:
        onnx.checker.check_model(m1, full_check=True)
        tap(True, "%s: passes onnx.checker (full_check)" % name)
    except Exception as e:  # noqa: BLE001 - report any checker failure
        tap(False, "%s: passes onnx.checker (full_check)" % name, e)
    tap([o.name for o in m0.graph.output] == [o.name for o in m1.graph.output],
        "%s: graph output names kept" % name)
    if name == "opaque":  # custom-domain ops onnxruntime cannot run
        return
    f = feeds(m0)
    try:
        a, b = run(src, f), run(dst, f)
        worst = max(float(np.max(np.abs(a[k] - b[k]) / (np.abs(a[k]) + 1e-3))) for k in a)
        tap(worst < TOL, "%s: onnxruntime outputs agree (max rel err %.2g)" % (name, worst))
    except Exception as e:  # noqa: BLE001
        tap(False, "%s: onnxruntime runs both models" % name, e)
    ops = {nd.op_type for nd in m1.graph.node}
    if name in GONE:
        left = GONE[name] & ops
        tap(not left, "%s: no %s left" % (name, "/".join(sorted(GONE[name]))), left)
    if name in LEFT:
        got = {op: sum(nd.op_type == op for nd in m1.graph.node) for op in LEFT[name]}
        tap(got == LEFT[name], "%s: left %s" % (name, LEFT[name]), got)
    if name in NO_GROWTH:
        a, b = os.path.getsize(src), os.path.getsize(dst)
        tap(b < a + NO_GROWTH[name], "%s: the file grows by less than %d bytes (%d -> %d)" % (name, NO_GROWTH[name], a, b))


def shared_weight():
    """A tied embedding as a language model's export writes it: E [1024, 512]
    (2 MiB) is read as it is by one MatMul and through a Transpose by
    another (the LM head); F (1 MiB) only through a Transpose; G (1 MiB)
    only through two scalings (ALBERT's shared layer, scaled per layer).
    F's Transpose folds (F^T replaces F); E's Transpose and G's Muls stay:
    folding them would store E twice and G twice, and onnxruntime folds
    them at load anyway."""
    nodes = [helper.make_node("MatMul", ["x", "E"], ["emb"]),
             helper.make_node("Transpose", ["E"], ["Et"], perm=[1, 0]),
             helper.make_node("MatMul", ["emb", "Et"], ["logits"]),
             helper.make_node("Transpose", ["F"], ["Ft"], perm=[1, 0]),
             helper.make_node("MatMul", ["y", "Ft"], ["z"]),
             helper.make_node("Mul", ["G", "two"], ["G2"]),
             helper.make_node("Mul", ["G", "half"], ["Gh"]),
             helper.make_node("MatMul", ["u", "G2"], ["u2"]),
             helper.make_node("MatMul", ["u", "Gh"], ["uh"])]
    scalars = [numpy_helper.from_array(np.array(v, dtype=np.float32), k) for k, v in (("two", 2.0), ("half", 0.5))]
    return build("fold_shared_weight", nodes, [("x", [2, 1024]), ("y", [2, 128]), ("u", [2, 1024])],
                 ["logits", "z", "u2", "uh"], [small("E", 1024, 512), small("F", 2048, 128), small("G", 1024, 256)] + scalars)


def small(name, *shape):
    """Weights of a trained model's size (about 0.01): sums over 1024 terms stay
    near 1, where the kernels' rounding is far under the tolerance."""
    return numpy_helper.from_array((wrng.standard_normal(shape) * 0.01).astype(np.float32), name)


# corpus models eg_eval_graph runs (opaque.onnx and old_opset.onnx have ops
# the engine keeps opaque); inception's symbolic batch dim is made concrete
EVAL_MODELS = ["fold_conv_bn", "fold_conv_bias", "fold_matmul3", "conv_bn_relu", "convs",
               "attention", "inception", "mixed", "reg_ir3", "reg_unsorted"]
wrng = np.random.default_rng(5)


def w(name, *shape):
    return numpy_helper.from_array(wrng.standard_normal(shape).astype(np.float32), name)


def build(name, nodes, inputs, outputs, inits):
    vi = [helper.make_tensor_value_info(k, TensorProto.FLOAT, s) for k, s in inputs]
    vo = [helper.make_tensor_value_info(k, TensorProto.FLOAT, None) for k in outputs]
    m = helper.make_model(helper.make_graph(nodes, name, vi, vo, inits),
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)  # fills the output shapes
    onnx.checker.check_model(m, full_check=True)
    return m


def ev_windows():
    N = helper.make_node
    nodes = [N("Conv", ["x", "wc", "bc"], ["c1"], pads=[0, 1, 2, 1], strides=[2, 1]),
             N("Conv", ["x", "wg", "bg"], ["c2"], group=2, pads=[1, 0, 0, 1], strides=[1, 2]),
             N("AveragePool", ["x"], ["p1"], kernel_shape=[3, 2], pads=[1, 0, 2, 1],
               count_include_pad=0),
             N("AveragePool", ["x"], ["p2"], kernel_shape=[2, 3], pads=[0, 1, 1, 1], strides=[2, 2],
               count_include_pad=1),
             N("MaxPool", ["x"], ["p3"], kernel_shape=[3, 3], pads=[1, 1, 1, 0], strides=[1, 2]),
             N("GlobalAveragePool", ["c1"], ["gap"]),
             N("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"], epsilon=1e-2),
             N("Sigmoid", ["bn"], ["sg"]), N("Tanh", ["sg"], ["th"]), N("Relu", ["th"], ["y"])]
    var = numpy_helper.from_array(wrng.uniform(0.5, 1.5, 4).astype(np.float32), "v")
    return build("ev_windows", nodes, [("x", [2, 4, 7, 6])], ["c1", "c2", "p1", "p2", "p3", "gap", "y"],
                 [w("wc", 5, 4, 3, 2), w("bc", 5), w("wg", 6, 2, 2, 3), w("bg", 6), w("s", 4),
                  w("b", 4), w("m", 4), var])


def ev_matmul():
    N = helper.make_node
    shape = numpy_helper.from_array(np.array([3, -1], dtype=np.int64), "shape")
    split = numpy_helper.from_array(np.array([1, 3, 2], dtype=np.int64), "split")
    nodes = [N("Gemm", ["a", "b", "c"], ["g1"], transA=1, alpha=0.5, beta=2.0),
             N("Gemm", ["a2", "bt", "crow"], ["g2"], transB=1),
             N("Gemm", ["a2", "b"], ["g3"]),
             N("MatMul", ["x3", "y3"], ["mm1"]), N("MatMul", ["x3", "v4"], ["mm2"]),
             N("MatMul", ["v3", "y3"], ["mm3"]), N("MatMul", ["x3", "q4"], ["mm4"]),
             N("Softmax", ["x3"], ["sm0"], axis=0), N("Softmax", ["x3"], ["sm1"], axis=-2),
             N("Split", ["x6", "split"], ["s0", "s1", "s2"], axis=1),
             N("Concat", ["s2", "s0", "s1"], ["cat"], axis=-1),
             N("Transpose", ["x3"], ["tr"], perm=[3, 1, 0, 2]),
             N("Flatten", ["x3"], ["fl"], axis=2), N("Reshape", ["fl", "shape"], ["rs"]),
             N("Add", ["x3", "col"], ["ad"]), N("Mul", ["ad", "row"], ["mu"]),
             N("LayerNormalization", ["x3", "g4", "b4"], ["ln1"], epsilon=1e-12),
             N("LayerNormalization", ["x3", "g4"], ["ln2"], axis=3, epsilon=0.5),
             N("LayerNormalization", ["x3", "g34", "b34"], ["ln3"], axis=-2)]
    ins = [("a", [4, 3]), ("a2", [3, 4]), ("x3", [2, 1, 3, 4]), ("v3", [4]), ("x6", [2, 6])]
    return build("ev_matmul", nodes, ins,
                 ["g1", "g2", "g3", "mm1", "mm2", "mm3", "mm4", "sm0", "sm1", "cat", "tr", "rs", "mu",
                  "ln1", "ln2", "ln3"],
                 [w("b", 4, 5), w("c", 5), w("bt", 5, 4), w("crow", 3, 1), w("y3", 3, 4, 5),
                  w("v4", 4), w("col", 3, 1), w("row", 4), w("g4", 4), w("b4", 4), w("g34", 3, 4), w("q4", 2, 1, 4, 3),
                  w("b34", 3, 4), shape, split])


def concrete(m):
    """The model with every symbolic input dim set to 2 and value_info cleared."""
    m = onnx.ModelProto.FromString(m.SerializeToString())
    for vi in list(m.graph.input) + list(m.graph.output):
        for d in vi.type.tensor_type.shape.dim:
            if not d.dim_value:
                d.dim_value = 2
    del m.graph.value_info[:]
    return m


def check_eval(driver, name, m, tmp):
    path = os.path.join(tmp, name + ".eval.onnx")
    onnx.save(concrete(m), path)
    f = feeds(onnx.load(path))
    fin, fout = os.path.join(tmp, name + ".in"), os.path.join(tmp, name + ".out")
    order = [i.name for i in onnx.load(path).graph.input if i.name in f]
    with open(fin, "wb") as fh:
        for k in order:
            fh.write(f[k].astype("<f4").tobytes())
    r = subprocess.run([driver, "--eval", path, fin, fout], capture_output=True, text=True)
    if r.returncode:
        tap(False, "%s: fold_driver --eval exits 0" % name, r.stderr)
        return
    want = run(path, f)
    got = np.fromfile(fout, dtype="<f4")
    worst, at = 0.0, 0
    for o in onnx.load(path).graph.output:
        a = want[o.name].astype(np.float32).ravel()
        b, at = got[at:at + a.size], at + a.size
        worst = max(worst, float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-6)))
    tap(at == got.size and worst < TOL,
        "%s: eg_eval_graph agrees with onnxruntime (max rel err %.2g)" % (name, worst),
        "%d floats written, %d read" % (got.size, at))


# models rewritten by fold_driver --walk: each rule's result must export to
# a model onnxruntime computes the same with (opset 7 and up: onnxruntime
# has no Add or Mul of opset 6 for a rewrite to write)
WALK_MODELS = ["attention", "transformer", "convs", "inception", "mixed", "conv_bn_relu", "fold_window",
               "legal_dense", "legal_acts", "legal_gemm", "legal_ceil", "post_ln", "kmul_inputs", "shapes_op17",
               "legal_layer_scale"]
WALK_SEEDS, WALK_STEPS = 3, 10


def check_walk(driver, name, tmp):
    src = os.path.join(CORPUS, name + ".onnx")
    m0 = onnx.load(src)
    f = feeds(concrete(m0))
    want = run(src, f)
    for seed in range(1, WALK_SEEDS + 1):
        dst = os.path.join(tmp, "%s.walk%d.onnx" % (name, seed))
        r = subprocess.run([driver, "--walk", str(WALK_STEPS), str(seed), src, dst], capture_output=True, text=True)
        rules = " ".join(l.split()[-1] for l in r.stdout.splitlines() if l.startswith("step"))
        if r.returncode:
            tap(False, "%s: walk %d (rules %s) exits 0" % (name, seed, rules), r.stderr)
            continue
        try:
            got = run(dst, f)
            worst = max(float(np.max(np.abs(want[k] - got[k])) / max(float(np.max(np.abs(want[k]))), 1e-6))
                        for k in want)
            tap(worst < TOL, "%s: walk %d (rules %s): onnxruntime agrees (max rel err %.2g)" % (name, seed, rules,
                                                                                                  worst))
        except Exception as e:  # noqa: BLE001 - onnxruntime refusing the export is a failure
            tap(False, "%s: walk %d (rules %s): onnxruntime runs the rewritten model" % (name, seed, rules), e)


# How guarded_attention masks its scores, and whether the NaN guard after
# its softmax can go: it can when the softmax reads finite values for
# every input (a finite mask); not when a mask cell is -inf (a fully
# masked row is NaN, which the guard turns into zeros) or a float graph
# input reaches the scores.
GUARD_CASES = {"none": True, "const_min": True, "ids_min": True,
               "const_inf": False, "ids_inf": False, "float_in": False}


def guarded_attention(mask):
    """One attention head over embeddings of token ids, as exporters write
    scaled dot-product attention: Where(IsNaN(p), 0, p) after the softmax."""
    N = helper.make_node
    lo = np.float32(-np.inf) if mask.endswith("inf") else np.finfo(np.float32).min
    nodes = [N("Gather", ["E", "ids"], ["x"]),
             N("LayerNormalization", ["x", "s", "b"], ["h"], axis=-1, epsilon=1e-12),
             N("MatMul", ["h", "Wq"], ["q"]), N("MatMul", ["h", "Wk"], ["k"]), N("MatMul", ["h", "Wv"], ["v"]),
             N("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             N("MatMul", ["q", "kt"], ["sc"]), N("Mul", ["sc", "scale"], ["sc2"])]
    inputs = [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 8])]
    inits = [w("E", 50, 16), w("s", 16), w("b", 16), small("Wq", 16, 16), small("Wk", 16, 16), small("Wv", 16, 16),
             numpy_helper.from_array(np.array(0.25, np.float32), "scale"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    scores = "sc2"
    if mask.startswith("const"):
        m = np.zeros((1, 8, 8), np.float32)
        m[0, :, 5:] = lo
        inits.append(numpy_helper.from_array(m, "m"))
    elif mask.startswith("ids"):
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.INT64, [1, 8]))
        inits.append(numpy_helper.from_array(np.array(lo, np.float32), "lo"))
        nodes += [N("Cast", ["mask"], ["mb"], to=TensorProto.BOOL), N("Where", ["mb", "zero", "lo"], ["m"])]
    elif mask == "float_in":
        inputs.append(helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, 8, 8]))
    if mask != "none":
        nodes.append(N("Add", ["sc2", "m"], ["sc3"]))
        scores = "sc3"
    nodes += [N("Softmax", [scores], ["p"], axis=-1), N("IsNaN", ["p"], ["isn"]),
              N("Where", ["isn", "zero", "p"], ["g"]), N("MatMul", ["g", "v"], ["y"])]
    m = helper.make_model(helper.make_graph(nodes, "guard_" + mask, inputs,
                                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits),
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.checker.check_model(m, full_check=True)
    return m


def guard_feeds(m, all_masked=False):
    rng = np.random.default_rng(3)
    f = {"ids": rng.integers(0, 50, (1, 8)).astype(np.int64)}
    names = {i.name for i in m.graph.input}
    if "mask" in names:
        f["mask"] = np.zeros((1, 8), np.int64) if all_masked else rng.integers(0, 2, (1, 8)).astype(np.int64)
    if "m" in names:
        f["m"] = rng.standard_normal((1, 8, 8)).astype(np.float32)
    return f


def every_value(m, tmp):
    """m with every node output a graph output, run on its guard_feeds."""
    m = onnx.shape_inference.infer_shapes(m)
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    known = {o.name for o in m2.graph.output}
    m2.graph.output.extend(v for v in m.graph.value_info if v.name not in known)
    path = os.path.join(tmp, m.graph.name + ".all.onnx")
    onnx.save(m2, path)
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, guard_feeds(m))))


def check_guard(driver, mask, tmp):
    """The guard after a softmax is dropped exactly when GUARD_CASES says;
    either way the outputs agree in onnxruntime (also with every token
    masked), and every value onnxruntime computes lies in the range the
    engine gave it (range.h)."""
    m = guarded_attention(mask)
    name = m.graph.name
    src, dst = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + ".out.onnx")
    onnx.save(m, src)
    r = subprocess.run([driver, src, dst], capture_output=True, text=True)
    tap(r.returncode == 0, "%s: fold_driver exits 0" % name, r.stderr)
    if r.returncode:
        return
    drop = GUARD_CASES[mask]
    left = sum(nd.op_type == "IsNaN" for nd in onnx.load(dst).graph.node)
    tap(left == (0 if drop else 1) and ("nan_guards_dropped %d" % drop) in r.stdout,
        "%s: the NaN guard is %s" % (name, "dropped" if drop else "kept"), r.stdout)
    for all_masked in (False, True):
        f = guard_feeds(m, all_masked)
        a, b = run(src, f)["y"], run(dst, f)["y"]
        worst = float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(a))), 1e-30)
        tap(np.array_equal(np.isnan(a), np.isnan(b)) and worst < TOL,
            "%s: outputs agree%s (max rel err %.2g)" % (name, ", every token masked" if all_masked else "", worst))
    r = subprocess.run([driver, "--ranges", src], capture_output=True, text=True)
    ranges = {ln.split()[0]: (float(ln.split()[1]), float(ln.split()[2])) for ln in r.stdout.splitlines()}
    values = every_value(m, tmp)
    bad = [(k, lo, hi, float(values[k].min()), float(values[k].max())) for k, (lo, hi) in ranges.items()
           if k in values and not (lo <= values[k].min() and values[k].max() <= hi)]
    tap(r.returncode == 0 and ranges and not bad,
        "%s: %d value ranges, each holds onnxruntime's values" % (name, len(ranges)), bad or r.stderr)


def main():
    global n
    args = sys.argv[1:]
    if len(args) not in (1, 3):
        print(__doc__, file=sys.stderr)
        return 2
    if len(args) == 3:
        n = int(args[2]) - 1
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODELS:
            check_model(args[0], name, tmp)
        m = shared_weight()
        onnx.save(m, os.path.join(tmp, "fold_shared_weight.onnx"))
        check_model(args[0], "fold_shared_weight", tmp, os.path.join(tmp, "fold_shared_weight.onnx"))
        for name in EVAL_MODELS:
            check_eval(args[0], name, onnx.load(os.path.join(CORPUS, name + ".onnx")), tmp)
        for name in WALK_MODELS:
            check_walk(args[0], name, tmp)
        for make in (ev_windows, ev_matmul):
            m = make()
            check_eval(args[0], m.graph.name, m, tmp)
        for mask in GUARD_CASES:
            check_guard(args[0], mask, tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
