#!/usr/bin/env python3
"""bench/ort_compare.py - original vs optimized ONNX model in onnxruntime.

    python3 bench/ort_compare.py ORIG.onnx OPT.onnx [--runs N] [--warmup N]
                                 [--threads N] [--seed N] [--name NAME]

Prints one JSON line:
    {"model", "orig_ms", "opt_ms", "speedup", "aa", "max_rel_err", "checker", ...}

How it measures:
- Both sessions run on the CPU execution provider with
  graph_optimization_level = ORT_ENABLE_ALL (onnxruntime's own optimizer is
  on for both: that is what a user would otherwise get) and
  intra_op_num_threads = inter_op_num_threads = 1 (--threads changes the
  intra-op count), so the figures do not depend on how busy the other
  cores are. The intra-op pools do not spin-wait after a run
  (session.intra_op.allow_spinning 0): with --threads 2 the pool of the
  session that just ran would otherwise hold the cores the next one needs.
- Inputs: random normal (float) / random small integers, fixed --seed,
  shapes from the original model (symbolic dimensions set to 1); the
  same arrays feed both models. Outputs are matched by name when both
  models have the same output names, else by position.
- max_rel_err = max over outputs of  max|a - b| / max(max|a|, 1e-30)
  with a from the original model: the largest absolute difference
  relative to the largest magnitude of the original output (a norm-wise
  relative error; elementwise ratios blow up near zeros).
- Latency: --warmup runs of each model, then --runs alternating pairs
  (orig, opt, orig, opt, ...) in this one process, so drift of the machine
  hits both alike; orig_ms and opt_ms are the medians of the wall times
  (time.perf_counter) of session.run; speedup = orig_ms / opt_ms. The
  minima are printed too (orig_min_ms, opt_min_ms): on a loaded machine
  they show the undisturbed time better than the medians.
- Noise: a second session of the original takes part in the same
  alternation (orig, opt, orig again); aa = orig_ms / its median, the A/A
  ratio, which is what "no difference" looks like in this run. A speedup
  inside [min(aa, 1/aa) - 0.01, ...] is no change within noise.
- checker: onnx.checker.check_model(OPT, full_check=True), "ok" or the
  first line of its complaint.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

NP_TYPES = {
    "tensor(float)": np.float32, "tensor(double)": np.float64,
    "tensor(float16)": np.float16, "tensor(int64)": np.int64,
    "tensor(int32)": np.int32, "tensor(bool)": np.bool_,
}


def session(path, threads, profile=None, rewrite=True):
    """A session as every bench script times models: see the docstring;
    profile, a file prefix, turns onnxruntime's profiler on; rewrite=False
    runs the model as written (ORT_DISABLE_ALL), to compare values."""
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if rewrite
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.intra_op_num_threads = threads
    # Several sessions take turns in one process: a pool that spins after
    # its run would take the cores from the next session's run.
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    if profile:
        so.enable_profiling = True
        so.profile_file_prefix = profile
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def random_inputs(sess, seed):
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        dtype = NP_TYPES.get(i.type)
        if dtype is None:
            raise SystemExit(f"ort_compare: input {i.name}: unsupported type {i.type}")
        if np.issubdtype(dtype, np.floating):
            feeds[i.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[i.name] = rng.integers(0, 2, shape).astype(dtype)
        else:
            feeds[i.name] = rng.integers(0, 100, shape).astype(dtype)
    return feeds


def max_rel_err(outs_a, outs_b):
    if len(outs_a) != len(outs_b):
        raise SystemExit(f"ort_compare: {len(outs_a)} outputs vs {len(outs_b)}")
    worst = 0.0
    for a, b in zip(outs_a, outs_b):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            raise SystemExit(f"ort_compare: output shapes differ: {a.shape} vs {b.shape}")
        if a.size == 0:
            continue
        diff = np.max(np.abs(a - b))
        if not np.isfinite(diff):
            return float("inf")
        worst = max(worst, float(diff / max(np.max(np.abs(a)), 1e-30)))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("orig")
    ap.add_argument("opt")
    ap.add_argument("--runs", type=int, default=30, help="alternating pairs (default 30)")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up runs of each (default 3)")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", help="model name in the JSON (default: ORIG's file name)")
    a = ap.parse_args()

    s_orig = session(a.orig, a.threads)
    s_opt = session(a.opt, a.threads)
    s_aa = session(a.orig, a.threads)
    feeds = random_inputs(s_orig, a.seed)
    opt_names = [i.name for i in s_opt.get_inputs()]
    if sorted(opt_names) != sorted(feeds):
        raise SystemExit(f"ort_compare: inputs differ: {sorted(feeds)} vs {sorted(opt_names)}")

    # Outputs by name when both models name them alike, else by position.
    names_orig = [o.name for o in s_orig.get_outputs()]
    names_opt = [o.name for o in s_opt.get_outputs()]
    order = names_orig if sorted(names_orig) == sorted(names_opt) else None
    err = max_rel_err(s_orig.run(order, feeds), s_opt.run(order, feeds))
    try:
        onnx.checker.check_model(onnx.load(a.opt), full_check=True)
        checker = "ok"
    except Exception as e:  # the checker's own exception types vary by version
        checker = (str(e).strip().splitlines() or ["failed"])[0][:200]
    for _ in range(a.warmup):
        s_orig.run(None, feeds)
        s_opt.run(None, feeds)
        s_aa.run(None, feeds)
    times = {"orig": [], "opt": [], "aa": []}
    for _ in range(a.runs):
        for key, s in (("orig", s_orig), ("opt", s_opt), ("aa", s_aa)):
            t0 = time.perf_counter()
            s.run(None, feeds)
            times[key].append((time.perf_counter() - t0) * 1e3)
    orig_ms = statistics.median(times["orig"])
    opt_ms = statistics.median(times["opt"])
    name = a.name or os.path.splitext(os.path.basename(a.orig))[0]
    print(json.dumps({
        "model": name,
        "orig_ms": round(orig_ms, 3),
        "opt_ms": round(opt_ms, 3),
        "speedup": round(orig_ms / opt_ms, 4),
        "aa": round(orig_ms / statistics.median(times["aa"]), 4),
        "max_rel_err": float(f"{err:.3e}"),
        "checker": checker,
        "orig_min_ms": round(min(times["orig"]), 3),
        "opt_min_ms": round(min(times["opt"]), 3),
        "runs": a.runs,
        "threads": a.threads,
        "ort": ort.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
