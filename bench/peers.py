#!/usr/bin/env python3
"""bench/peers.py - the engine against what users would otherwise run, in
onnxruntime on this CPU, at 1 and 2 threads.

    python3 bench/peers.py [--threads 1,2] [--runs N] [--models a,b,...]
                           [--unseen] [--only a,b,...] [--merge]
                           [--tools engine,...] [--out NAME]
                           [--bin DIR] [--dir DIR] [--engine-args "..."]

For each real export in bench/cache (bench/export_torch.py; with --unseen
also bench/unseen.py's exports in bench/cache/unseen) the contenders:

  engine          the default command, out/bin/engine optimize MODEL -o OUT
                  --threads T (onnxruntime's costs and --verify): run twice
                  on a cost cache of its own, cold then warm (the second
                  run's output is the one measured; both times reported,
                  with the search's, the measuring's and verify's shares)
  engine-det      out/bin/engine optimize MODEL -o OUT --deterministic (the
                  analytic-cpu cost, nothing measured)
  engine-egraph   the default command with --search egraph (equality
                  saturation), cold then warm as engine, at 1 thread
  onnxslim        onnxslim.slim(MODEL), its defaults
  onnxoptimizer   onnxoptimizer.optimize(MODEL) with its fuse-and-eliminate
                  passes
  ort-offline     onnxruntime's own optimizer run offline (SessionOptions.
                  optimized_model_filepath, ORT_ENABLE_EXTENDED: the portable
                  level; ENABLE_ALL adds layout changes onnxruntime redoes
                  online anyway)

Protocol (as bench/ort_compare.py, all models in one process): one session
per model (CPU provider, ORT_ENABLE_ALL for all, T intra-op threads that do
not spin-wait after a run, sequential), the same random inputs, 3 warm-up runs each, then --runs rounds
that run every model once in turn (a model of under 5 ms as many times in a row as
make 5 ms, its time the mean), the input a second time at the end (the
A/A row: two identical models, the machine's noise). Per round, the ratio
input time / model time; reported: its median and 25th-75th percentiles.
Outputs are compared with the input's (max |a - b| / max |a|).

Headroom: onnxruntime's profiler on the input (10 runs): the share of kernel
time spent outside Conv/Gemm/MatMul (and their fused forms), i.e. what graph
rewrites can reach at all on a CPU.

Writes bench/results/OUT.md, OUT.jsonl and OUT.png (OUT: --out, default
peers; the plot needs matplotlib).
onnxslim and onnxoptimizer are pip-installed on first use.
"""
import argparse
import json
import math
import statistics
import os
import re
import subprocess
import sys
import tempfile
import time

import report
from ort_compare import session

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "engine", "verify"))
import ort_time  # noqa: E402  (the engine's verify helper: one rule for a sample)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["tv_resnet50", "tv_resnext50_32x4d", "tv_inception_v3", "tv_squeezenet1_1",
          "tv_densenet121", "tv_mnasnet1_0", "hf_bert_base"]
TOOLS = ["engine", "engine-det", "engine-egraph", "onnxslim", "onnxoptimizer", "ort-offline"]
GEMM_OPS = {"Conv", "FusedConv", "NchwcConv", "ConvTranspose", "Gemm", "FusedGemm", "MatMul", "FusedMatMul",
            "MatMulInteger", "QLinearConv", "QLinearMatMul", "MatMulNBits"}
SEARCH_RE = report.SEARCH_RE
COSTS_RE = re.compile(r"^costs: ([0-9]+) measured(?: in ([0-9.]+) s)?", re.M)
VERIFY_RE = re.compile(r"^verify: writing the (" + report.VERIFY_PICK + r").*"
                       r"\(timing took ([0-9.]+) s( when these models were timed before[^)]*)?\)$", re.M)
VROW_RE = re.compile(r"^verify: search result .*speedup ([0-9.]+)x", re.M)
RULES_RE = re.compile(r"^rules applied: ([0-9]+)", re.M)


def need(mod, pip_name):
    try:
        return __import__(mod)
    except ImportError:
        print(f"peers.py: installing {pip_name}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", pip_name], check=True)
        return __import__(mod)


def quartiles(v):
    """25th, 50th and 75th percentiles, linearly interpolated."""
    return statistics.quantiles(v, n=4, method="inclusive")


def feed_of(np, s):
    types = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
             "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_}
    rng = np.random.default_rng(0)
    feed = {}
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in i.shape]
        t = types[i.type]
        feed[i.name] = (rng.standard_normal(shape).astype(t) if np.issubdtype(t, np.floating)
                        else np.zeros(shape, dtype=t) if t == np.bool_ else rng.integers(0, 2, shape).astype(t))
    return feed


def headroom(np, ort, model, threads, tmp):
    s = session(model, threads, os.path.join(tmp, "prof"))
    feed = feed_of(np, s)
    for _ in range(10):
        s.run(None, feed)
    path = s.end_profiling()
    total = outside = 0.0
    for e in json.load(open(path)):
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        d = float(e.get("dur", 0))
        total += d
        if e.get("args", {}).get("op_name") not in GEMM_OPS:
            outside += d
    os.remove(path)
    return outside / total if total else 0.0


def run_engine(cmd, env=None):
    """One engine run: its facts parsed from what it printed, and its wall time."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"engine failed: {p.stderr.strip()[-300:]}")
    s, c, v, r = (SEARCH_RE.search(p.stdout), COSTS_RE.search(p.stdout), VERIFY_RE.search(p.stdout),
                  RULES_RE.search(p.stdout))
    vr = VROW_RE.search(p.stdout)
    return {"search_s": float(s.group(1)) if s else None, "stop": s.group(2) if s else None,
            "measured": int(c.group(1)) if c else 0, "measure_s": float(c.group(2) or 0) if c else 0.0,
            "written": v.group(1) if v else "input (search not cheaper)",
            "verify_s": float(v.group(2)) if v and not v.group(3) else 0.0, "verify_cached": bool(v and v.group(3)),
            "rules": int(r.group(1)) if r else 0,
            "verify_speedup": float(vr.group(1)) if vr else None, "wall_s": wall}


def prepare(tool, model, out, threads, a, tmp):
    """Write tool's version of model to out. @return facts about the run."""
    t0 = time.monotonic()
    info = {}
    if tool in ("engine", "engine-egraph"):
        # the default command, cold (a cost cache of its own, empty) then warm
        env = dict(os.environ, TASOC_CACHE_DIR=os.path.join(tmp, f"costs-{os.path.basename(out)}"))
        cmd = [os.path.join(a.bin, "engine"), "optimize", model, "-o", out, "-q", "--threads", str(threads)] \
            + a.engine_args.split() + (["--search", "egraph"] if tool == "engine-egraph" else [])
        cold = run_engine(cmd, env)
        info = run_engine(cmd, env)
        info.update(cold_s=cold["wall_s"], cold_measured=cold["measured"], cold_measure_s=cold["measure_s"],
                    cold_search_s=cold["search_s"], cold_verify_s=cold["verify_s"], warm_s=info["wall_s"])
    elif tool == "engine-det":
        info = run_engine([os.path.join(a.bin, "engine"), "optimize", model, "-o", out, "-q", "--deterministic"])
    elif tool == "onnxslim":
        import onnx
        slim = need("onnxslim", "onnxslim")
        onnx.save(slim.slim(model), out)
    elif tool == "onnxoptimizer":
        import onnx
        opt = need("onnxoptimizer", "onnxoptimizer")
        m = onnx.load(model)
        onnx.save(opt.optimize(m, opt.get_fuse_and_elimination_passes()), out)
    elif tool == "ort-offline":
        import onnxruntime as ort
        # the optimized model names the input's external data file (as a
        # path relative to itself, which onnxruntime keeps inside the
        # model's directory): a copy goes beside the output
        data, near = model + ".data", os.path.join(os.path.dirname(out), os.path.basename(model) + ".data")
        if os.path.exists(data) and not os.path.exists(near):
            import shutil
            shutil.copyfile(data, near)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        so.optimized_model_filepath = out
        so.log_severity_level = 3
        ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    info["prepare_s"] = time.monotonic() - t0
    return info


def measure(np, ort, paths, threads, runs):
    sessions = [session(p, threads) for p in paths] + [session(paths[0], threads)]
    feed = feed_of(np, sessions[0])
    ref = sessions[0].run(None, feed)
    errs = []
    for s in sessions:
        e = 0.0
        for x, y in zip(ref, s.run(None, feed)):
            x = np.asarray(x, dtype=np.float64)
            y = np.asarray(y, dtype=np.float64)
            scale = float(np.max(np.abs(x))) if x.size else 0.0
            e = max(e, float(np.max(np.abs(x - y))) / scale if scale > 0 else 0.0)
        errs.append(e)
    for s in sessions:
        for _ in range(3):
            s.run(None, feed)
    # a sample: the mean of enough consecutive runs to last 5 ms (the
    # input's time decides the count), as verify times them
    reps = ort_time.reps_for(lambda: sessions[0].run(None, feed))
    times = [[] for _ in sessions]
    for _ in range(runs):
        for k, s in enumerate(sessions):
            times[k].append(ort_time.sample_ms(lambda: s.run(None, feed), reps))
    rows = []
    for k in range(len(sessions)):
        lo, mid, hi = quartiles([x / y for x, y in zip(times[0], times[k])])
        rows.append({"ms": statistics.median(times[k]), "speedup": mid, "lo": lo, "hi": hi, "max_rel_err": errs[k]})
    return rows


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "out", "bin"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--dir", default=os.path.join(ROOT, "bench", "cache"))
    ap.add_argument("--engine-args", default="", help="more engine optimize options")
    ap.add_argument("--unseen", action="store_true", help="also bench/unseen.py's exports")
    ap.add_argument("--tools", default=",".join(TOOLS), help="contenders, engine first (default all)")
    ap.add_argument("--out", default="peers", help="results as bench/results/OUT.md, .jsonl, .png")
    ap.add_argument("--from-jsonl", action="store_true",
                    help="measure nothing: write OUT.md and OUT.png again from OUT.jsonl")
    ap.add_argument("--only", default="", help="of the models chosen, only these (a,b,...)")
    ap.add_argument("--merge", action="store_true",
                    help="keep OUT.jsonl's rows of the models not measured now (a run finished in parts)")
    a = ap.parse_args()
    tools = a.tools.split(",")
    if tools[0] != "engine" or not set(tools) <= set(TOOLS):
        sys.exit(f"peers.py: --tools is engine first, then any of {', '.join(TOOLS[1:])}")
    import numpy as np
    import onnxruntime as ort
    need("onnxslim", "onnxslim")
    need("onnxoptimizer", "onnxoptimizer")
    models = [(n, os.path.join(a.dir, n + ".onnx")) for n in a.models.split(",") if n]
    if a.unseen:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from unseen import MODELS as UNSEEN
        udir = os.path.join(a.dir, "unseen")
        models += [(n, os.path.join(udir, n + ".onnx")) for n in UNSEEN
                   if os.path.exists(os.path.join(udir, n + ".onnx"))]
    if a.only:
        models = [m for m in models if m[0] in a.only.split(",")]
    rows = []
    res = os.path.join(ROOT, "bench", "results")
    this_run = (f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, commit {report.commit()}: "
                f"`python3 bench/peers.py {' '.join(sys.argv[1:])}`")
    if a.merge and not a.from_jsonl:
        now = {m[0] for m in models}
        with open(os.path.join(res, a.out + ".jsonl")) as f:
            rows = [r for r in (json.loads(line) for line in f) if r["model"] not in now]
    if a.from_jsonl:
        with open(os.path.join(res, a.out + ".jsonl")) as f:
            rows = [json.loads(line) for line in f]
        models = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model in models:
            if not os.path.exists(model):
                sys.exit(f"peers.py: {model} missing (python3 bench/export_torch.py --all)")
            peers = {}
            for tool in tools[1:]:
                out = os.path.join(tmp, f"{name}.{tool}.onnx")
                try:
                    peers[tool] = (out, prepare(tool, model, out, 1, a, tmp))
                except Exception as e:  # a peer that fails leaves the user the input
                    print(f"peers.py: {tool} on {name}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
                    peers[tool] = (model, {"failed": True})
            for t in (int(x) for x in a.threads.split(",")):
                out = os.path.join(tmp, f"{name}.engine.t{t}.onnx")
                try:
                    eng = prepare("engine", model, out, t, a, tmp)
                    m = measure(np, ort, [model, out] + [peers[tool][0] for tool in tools[1:]], t, a.runs)
                except Exception as e:  # onnxruntime refusing a model: recorded, the rest go on
                    print(f"peers.py: {name} t{t}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
                    continue
                row = {"model": name, "threads": t, "input_ms": m[0]["ms"], "aa": m[-1],
                       "tools": {tool: m[k + 1] for k, tool in enumerate(tools)}, "engine": eng,
                       "failed": [tool for tool in tools[1:] if peers[tool][1].get("failed")],
                       "headroom": headroom(np, ort, model, t, tmp), "run": this_run}
                rows.append(row)
                print(f"{name} t{t}: " + ", ".join(f"{tool} {row['tools'][tool]['speedup']:.3f}x" for tool in tools)
                      + f", A/A {row['aa']['speedup']:.3f}x, headroom {row['headroom']:.1%}; engine wrote the "
                      f"{eng['written']} (cold {eng['cold_s']:.1f} s, warm {eng['warm_s']:.1f} s: "
                      f"{eng['search_s']} s search, {eng['cold_measure_s']:.1f} s measuring cold, "
                      f"{eng['verify_s']:.1f} s verify)", file=sys.stderr)
                for f in os.listdir(tmp):  # the engine's outputs of this model: big, done with
                    if f.startswith(f"{name}.engine.t{t}"):
                        os.remove(os.path.join(tmp, f))
            for tool in tools[1:]:
                if peers[tool][0] != model:
                    for f in (peers[tool][0], peers[tool][0] + ".data"):
                        if os.path.exists(f):
                            os.remove(f)
    os.makedirs(res, exist_ok=True)
    if not a.from_jsonl:
        with open(os.path.join(res, a.out + ".jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    lines = report.header("The engine against its peers in onnxruntime",
                          f"onnxruntime {ort.__version__}; `python3 bench/peers.py {' '.join(sys.argv[1:])}` "
                          "(protocol in its docstring).") + [
        "Speedup: input time / model time per alternating round, median [25th-75th percentile], "
        "ORT_ENABLE_ALL for every model. A/A: the input against a second session of itself (the noise). "
        "Headroom: share of onnxruntime kernel time outside Conv/Gemm/MatMul in the input. engine: the "
        f"default command `engine optimize MODEL -o OUT --threads T` {a.engine_args} (onnxruntime's costs, "
        "--verify), on a cost cache of its own: cold s, the first run's wall time (measured: kernels and "
        "seconds measuring; verify s cold: its timing of the candidates); warm s, the second's, whose output is "
        "measured here (search s is its share; its verify comes from the verify cache when the candidates are "
        "the cold run's, else its timing is verify s warm). engine-det: `--deterministic`. A peer that fails "
        "counts as the input (1x, marked *).", "",
        "| model | threads | input ms | " + " | ".join(tools) + " | A/A | "
        "headroom | engine wrote | cold s | measured (s) | verify s cold | warm s | search s | verify s warm | "
        "max rel err |",
        "|---|--:|--:|" + "---|" * (len(tools) + 1) + "--:|---|--:|--:|--:|--:|--:|--:|--:|",
    ]

    def cell(x, failed=False):
        return "1x *" if failed else f"{x['speedup']:.3f}x [{x['lo']:.3f}-{x['hi']:.3f}]"

    def speedup(r, tool):
        return 1.0 if tool in r["failed"] else r["tools"][tool]["speedup"]

    for r in rows:
        e = r["engine"]
        err = max(r["tools"][t]["max_rel_err"] for t in tools if t not in r["failed"])
        lines.append(f"| {r['model']} | {r['threads']} | {r['input_ms']:.2f} | "
                     + " | ".join(cell(r["tools"][t], t in r["failed"]) for t in tools)
                     + f" | {cell(r['aa'])} | {r['headroom']:.1%} | {e['written']} (search: {e['rules']} rules) | "
                     f"{e['cold_s']:.1f} | {e['cold_measured']} ({e['cold_measure_s']:.1f}) | "
                     f"{e.get('cold_verify_s', 0):.1f} | {e['warm_s']:.1f} | "
                     f"{e['search_s'] or 0:.1f} | {'cached' if e.get('verify_cached') else format(e['verify_s'], '.1f')} | "
                     f"{err:.1e} |")
    # a row where the engine wrote the input compares the input with itself:
    # its ratio is noise like the A/A's, and it is named as such
    slower = [f"{r['model']} ({r['threads']}t: {r['tools']['engine']['speedup']:.3f}x, A/A "
              f"{r['aa']['speedup']:.3f}x" + ("; the engine wrote the input, so this is the noise of two "
                                             "sessions of one model" if r["engine"]["written"].startswith("input")
                                             else "") + ")" for r in rows
              if r["tools"]["engine"]["speedup"] < min(r["aa"]["speedup"], 1 / r["aa"]["speedup"]) - 0.01]
    det_low = [f"{r['model']} ({r['tools']['engine-det']['speedup']:.3f}x)" for r in rows
               if "engine-det" in tools and r["threads"] == 1 and r["tools"]["engine-det"]["speedup"] < 0.98]
    lines += ["", "The default slower than the input beyond this run's A/A noise (speedup below min(A/A, 1/A/A) "
              f"- 0.01): {', '.join(slower) or 'none'}. --deterministic below 0.98x at 1 thread: "
              f"{', '.join(det_low) or 'none'}.",
              "", "Geometric mean speedup over the models:", "",
              "| threads | " + " | ".join(tools) + " | A/A |", "|--:|" + "--:|" * (len(tools) + 1)]
    threads = sorted({r["threads"] for r in rows})
    for t in threads:
        rs = [r for r in rows if r["threads"] == t]
        lines.append(f"| {t} | " + " | ".join(f"{geomean([speedup(r, x) for r in rs]):.3f}x" for x in tools)
                     + f" | {geomean([r['aa']['speedup'] for r in rs]):.3f}x |")
    runs = {}
    for r in rows:  # a table finished in parts (--merge) names each part's run
        runs.setdefault(r.get("run", "an earlier run"), []).append(r["model"])
    lines += ["", "Rows measured by:", ""] + [
        f"- {run}: {', '.join(sorted(set(ms)))}" for run, ms in sorted(runs.items())]
    with open(os.path.join(res, a.out + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(threads), figsize=(7 * len(threads), 4.5), squeeze=False)
        for ax, t in zip(axes[0], threads):
            rs = [r for r in rows if r["threads"] == t]
            w = 0.8 / (len(tools) + 1)
            for k, tool in enumerate(tools + ["A/A"]):
                v = [r["aa"]["speedup"] if tool == "A/A" else speedup(r, tool) for r in rs]
                ax.bar([i + k * w for i in range(len(rs))], v, w, label=tool)
            ax.axhline(1.0, color="black", linewidth=0.8)
            ax.set_xticks([i + 0.4 - w / 2 for i in range(len(rs))])
            ax.set_xticklabels([r["model"].replace("tv_", "").replace("hf_", "") for r in rs], rotation=30,
                               ha="right")
            ax.set_ylim(0.85, 1.15)
            ax.set_title(f"speedup in onnxruntime, {t} thread{'s' if t > 1 else ''}")
            ax.legend(fontsize=7, ncol=3)
        fig.tight_layout()
        fig.savefig(os.path.join(res, a.out + ".png"), dpi=110)
    except ImportError:
        print("peers.py: no matplotlib, no plot", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
