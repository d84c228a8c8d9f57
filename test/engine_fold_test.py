#!/usr/bin/env python3
"""engine_fold_test.py - the built-in rewrites (engine/fold.h) end to end:
fold_driver (eg_builtin_pre then eg_builtin_post, no search) on the corpus
models; every output passes onnx.checker.check_model(full_check=True), has
the same graph output names, and onnxruntime gives the same outputs as for
the original (max relative error < 1e-4); the fold_* models lose their
BatchNormalization, Identity and weight-only Concat/Transpose nodes.

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

CORPUS = "test/corpus/onnx"
MODELS = ["fold_conv_bn", "fold_conv_bias", "fold_matmul3", "conv_bn_relu", "convs",
          "attention", "inception", "mixed", "old_opset", "opaque", "reg_ir3"]
TOL = 1e-4
# op types that must be gone after the rewrites
GONE = {"fold_conv_bn": {"BatchNormalization", "Identity"},
        "fold_conv_bias": {"Concat"},
        "fold_matmul3": {"Transpose"},
        "conv_bn_relu": {"BatchNormalization"}}

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


def check_model(driver, name, tmp):
    src = os.path.join(CORPUS, name + ".onnx")
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
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
