#!/usr/bin/env python3
"""bench/spellings.py - which of two exact ONNX spellings of one computation
onnxruntime runs faster, on this CPU: the evidence a spelling choice in the
export (engine/pipeline/spell.c) needs before it is worth writing.

    python3 bench/spellings.py [--threads 1,2] [--runs N]

Cases (batch 1, random weights):
  linear+bias  a rank-3 MatMul [1,m,k] x [k,n] then Add of a bias [n],
               against Reshape [m,k] -> Gemm (with the bias) -> Reshape
               [1,m,n] (the spelling onnxslim writes), at transformer sizes.

For each case and thread count: one session per spelling (CPU provider,
ORT_ENABLE_ALL, no spin-waiting), --runs alternating rounds after warm-up
with the first spelling run a second time (the A/A); the median per-round
ratio first / second, and what onnxruntime's own optimizer makes of the
first spelling (its optimized graph's operators). Writes
bench/results/spellings.md and prints it.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

SIZES = [(128, 768, 768), (128, 768, 3072), (128, 3072, 768), (256, 64, 256), (1024, 32, 128), (50, 512, 512)]


def linear_bias(m, k, n, tmp):
    """The two spellings of [1,m,k] x [k,n] + b. @return their paths."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal((n,)).astype(np.float32), "B")
    s1 = numpy_helper.from_array(np.array([m, k], np.int64), "s1")
    s2 = numpy_helper.from_array(np.array([1, m, n], np.int64), "s2")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, n])

    def save(nodes, inits, name):
        model = helper.make_model(helper.make_graph(nodes, name, [x], [y], inits),
                                  opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        path = os.path.join(tmp, f"{name}_{m}_{k}_{n}.onnx")
        onnx.save(model, path)
        return path
    return (save([helper.make_node("MatMul", ["x", "W"], ["t"]), helper.make_node("Add", ["t", "B"], ["y"])],
                 [w, b], "matmul_add"),
            save([helper.make_node("Reshape", ["x", "s1"], ["r"]), helper.make_node("Gemm", ["r", "W", "B"], ["g"]),
                  helper.make_node("Reshape", ["g", "s2"], ["y"])], [w, b, s1, s2], "reshape_gemm"))


def session(path, threads, optimized=None):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.log_severity_level = 3
    if optimized:
        so.optimized_model_filepath = optimized
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def compare(a, b, threads, runs, tmp):
    """Median per-round ratio time(a) / time(b), the A/A, a's median ms and
    the operators onnxruntime's optimizer leaves of a."""
    opt = os.path.join(tmp, "opt.onnx")
    session(a, threads, opt)
    ops = [nd.op_type for nd in onnx.load(opt).graph.node]
    sessions = [session(a, threads), session(b, threads), session(a, threads)]
    feed = {"x": np.random.default_rng(1).standard_normal(sessions[0].get_inputs()[0].shape).astype(np.float32)}
    for s in sessions:
        for _ in range(3):
            s.run(None, feed)
    t = [[], [], []]
    for _ in range(runs):
        for i, s in enumerate(sessions):
            t0 = time.perf_counter()
            s.run(None, feed)
            t[i].append(time.perf_counter() - t0)
    ratio = [statistics.median(x / y for x, y in zip(t[0], t[i])) for i in (1, 2)]
    return ratio[0], ratio[1], statistics.median(t[0]) * 1e3, ops


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=100)
    a = ap.parse_args()
    lines = report.header("Spellings onnxruntime runs alike, or not",
                          f"onnxruntime {ort.__version__}; `python3 bench/spellings.py --runs {a.runs}`.") + [
        "Speedup of the second spelling over the first: median per-round ratio over alternating rounds; "
        "A/A: the first against a second session of itself. onnxruntime makes of the first: the operators "
        "of its ORT_ENABLE_ALL graph.", "",
        "| case | threads | first ms | speedup | A/A | onnxruntime makes of the first |",
        "|---|--:|--:|--:|--:|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for m, k, n in SIZES:
            first, second = linear_bias(m, k, n, tmp)
            for threads in (int(x) for x in a.threads.split(",")):
                r, aa, ms, ops = compare(first, second, threads, a.runs, tmp)
                lines.append(f"| linear+bias [1,{m},{k}]x[{k},{n}]: MatMul+Add vs Reshape-Gemm-Reshape | {threads} | "
                             f"{ms:.3f} | {r:.3f}x | {aa:.3f}x | {' '.join(ops)} |")
                print(lines[-1], file=sys.stderr)
    res = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "spellings.md")
    with open(res, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
