#!/usr/bin/env python3
"""bench/search.py - how fast the engine's search goes on the bench set, and
what it finds, against an earlier commit of the engine.

    python3 bench/search.py [--base REV] [--runs N] [--time-limit S]
                            [--budget N] [--models a,b,...] [--bin DIR]

For each model (default: the real exports in bench/cache, written by
bench/export_torch.py), `engine optimize --cost analytic` runs with the
time limit (default 10 s, budget unlimited) N times (default 3) for this
checkout's engine (--bin, default out/bin) and for the engine of commit
REV (default: the engine before graphs were judged without being built,
built once into bench/cache/base-REV), alternating base, new, new again
(the A/A row: the noise of the machine). Reported: medians of expansions
(and whether they reach 10,000 in 10 s), expansions per second, graphs
generated per second, the phase times (match / apply / judge; the base
engine may not print them), the stop reason and the final cost. Then both
engines run once more with --budget N expansions (default 200, the
engine's default) and no time limit, the same work: the new engine's final
cost must be the same or lower (the search is deterministic with the
analytic cost; it may take another path to it: `same` says whether the
output files are the same bytes), and the wall times give the speedup at
equal work. Writes bench/results/search.md and search.jsonl.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BASE = "39c9663"  # the last commit that built every rewrite it judged
DEFAULT_MODELS = ["tv_resnet50", "tv_resnext50_32x4d", "tv_inception_v3", "tv_squeezenet1_1",
                  "tv_densenet121", "tv_mnasnet1_0", "hf_bert_base"]

SEARCH_RE = re.compile(r"search time: ([0-9.]+) s \(stopped: ([a-z ]+); expanded (\d+), generated (\d+)")
PHASE_RE = re.compile(r"search phases: match ([0-9.]+) s, apply ([0-9.]+) s, judge ([0-9.]+) s")
COST_RE = re.compile(r"cost after: ([0-9.]+) us")


def build_base(rev):
    """Build the engine of commit rev in a worktree under bench/cache; return its bin dir."""
    full = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()
    wt = os.path.join(ROOT, "bench", "cache", f"base-{full}")
    binary = os.path.join(wt, "out", "bin", "engine")
    if not os.path.exists(binary):
        if not os.path.isdir(wt):
            subprocess.run(["git", "worktree", "add", "--detach", wt, full], cwd=ROOT, check=True,
                           capture_output=True)
        cfg = os.path.join(ROOT, "config.ninja")
        if os.path.exists(cfg):
            with open(cfg, "rb") as src, open(os.path.join(wt, "config.ninja"), "wb") as dst:
                dst.write(src.read())
        print(f"search.py: building the engine of {full} in {wt}", file=sys.stderr)
        subprocess.run(["ninja", "out/bin/engine"], cwd=wt, check=True, capture_output=True)
    return os.path.dirname(binary), full


def run(engine, model, out, time_limit, budget):
    t0 = time.monotonic()
    p = subprocess.run([engine, "optimize", model, "-o", out, "--cost", "analytic",
                        "--time-limit", str(time_limit), "--budget", str(budget), "-q"],
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"search.py: {engine} optimize {model} failed ({p.returncode}): {p.stderr.strip()}")
    m = SEARCH_RE.search(p.stdout)
    c = COST_RE.search(p.stdout)
    if not m or not c:
        sys.exit(f"search.py: no summary from {engine} on {model}:\n{p.stdout}")
    r = {"seconds": float(m.group(1)), "stop": m.group(2), "expanded": int(m.group(3)),
         "generated": int(m.group(4)), "cost_after": float(c.group(1)), "wall": wall}
    ph = PHASE_RE.search(p.stdout)
    if ph:
        r["match"], r["apply"], r["judge"] = (float(x) for x in ph.groups())
    return r


def med(runs, key):
    vals = [r[key] for r in runs if key in r]
    return statistics.median(vals) if vals else None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default=DEFAULT_BASE)
    ap.add_argument("--bin", default=os.path.join(ROOT, "out", "bin"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--budget", type=int, default=200, help="expansions for the equal-work row")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--dir", default=os.path.join(ROOT, "bench", "cache"))
    a = ap.parse_args()
    new_bin = os.path.join(a.bin, "engine")
    if not os.access(new_bin, os.X_OK):
        sys.exit(f"search.py: no {new_bin} (run ninja)")
    base_dir, base_rev = build_base(a.base)
    base_bin = os.path.join(base_dir, "engine")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip() or "?"
    rows = []
    tmp = tempfile.mkdtemp(prefix="search-bench-")
    for name in a.models.split(","):
        model = os.path.join(a.dir, name + ".onnx")
        if not os.path.exists(model):
            sys.exit(f"search.py: {model} missing (python3 bench/export_torch.py --all)")
        base, new, new2 = [], [], []
        for _ in range(a.runs):  # alternating: base, new, new again (A/A)
            base.append(run(base_bin, model, os.path.join(tmp, "b.onnx"), a.time_limit, 10**9))
            new.append(run(new_bin, model, os.path.join(tmp, "n.onnx"), a.time_limit, 10**9))
            new2.append(run(new_bin, model, os.path.join(tmp, "n2.onnx"), a.time_limit, 10**9))
        eb = run(base_bin, model, os.path.join(tmp, "eb.onnx"), 10**6, a.budget)
        en = run(new_bin, model, os.path.join(tmp, "en.onnx"), 10**6, a.budget)
        with open(os.path.join(tmp, "eb.onnx"), "rb") as f1, open(os.path.join(tmp, "en.onnx"), "rb") as f2:
            same = f1.read() == f2.read()
        row = {"model": name, "base": base_rev, "runs": a.runs, "time_limit": a.time_limit}
        for tag, rs in (("base", base), ("new", new), ("aa", new2)):
            row[tag] = {k: med(rs, k) for k in ("expanded", "generated", "seconds", "cost_after",
                                                 "match", "apply", "judge")}
            row[tag]["stop"] = statistics.mode(r["stop"] for r in rs)
            row[tag]["exp_per_s"] = statistics.median(r["expanded"] / r["seconds"] for r in rs)
            row[tag]["gen_per_s"] = statistics.median(r["generated"] / r["seconds"] for r in rs)
        row["equal_work"] = {"budget": a.budget, "base_s": eb["seconds"], "new_s": en["seconds"],
                             "base_cost": eb["cost_after"], "new_cost": en["cost_after"],
                             "same_output": same, "expanded": en["expanded"]}
        rows.append(row)
        print(f"{name}: {row['base']['exp_per_s']:.1f} -> {row['new']['exp_per_s']:.1f} expansions/s "
              f"(A/A {row['aa']['exp_per_s']:.1f}); equal work {eb['seconds']:.2f} -> "
              f"{en['seconds']:.2f} s, cost {eb['cost_after']:.1f} -> {en['cost_after']:.1f}", file=sys.stderr)

    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "search.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = open("/proc/loadavg").read().split()[:3]
    lines = [
        "# Search speed: this engine against an earlier one", "",
        f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, commit {head} against {base_rev}, "
        f"{os.cpu_count()} cores ({cpu}); load average at the end: {' '.join(load)}.", "",
        f"`engine optimize MODEL --cost analytic --time-limit {a.time_limit:g}` (budget unlimited), "
        f"{a.runs} runs each, alternating base / new / new again (A/A: the noise); medians. "
        "expanded: graphs expanded (popped and matched) in the time limit (issue 13 asks for "
        "10,000 in 10 s); exp/s: per second of search; gen/s: rewrites judged "
        "(refusals excluded) per second; phases: seconds matching, building graphs "
        "(apply) and judging matches (judge) in the new engine's run, summed over its search "
        "threads (the engine's default of two since a5b36ff: a second thread builds, matches and "
        "judges the graphs expected next; the base has one). Equal work: both "
        f"engines with --budget {a.budget} and no time limit: final cost base -> new (the new "
        "one must be the same or lower), wall seconds, and `same`: the output files are the same "
        "bytes.", "",
        "| model | expanded base -> new | 10,000? | base exp/s | new exp/s | A/A exp/s | speedup | "
        "base gen/s | new gen/s | new phases match/apply/judge s | stop (new) | cost in the time "
        "limit base -> new | equal work: cost base -> new | s base -> new | same |",
        "|---|--:|---|--:|--:|--:|--:|--:|--:|---|---|--:|--:|--:|---|",
    ]
    for r in rows:
        b, n, aa, e = r["base"], r["new"], r["aa"], r["equal_work"]
        sp = n["exp_per_s"] / b["exp_per_s"] if b["exp_per_s"] else float("nan")
        phases = "/".join(fmt(n[k], ".2f") for k in ("match", "apply", "judge"))
        better = "same" if e["new_cost"] == e["base_cost"] else (
            "lower" if e["new_cost"] < e["base_cost"] else "HIGHER")
        target = "yes" if n["expanded"] >= 10000 else ("saturated" if n["stop"] == "saturated" else "no")
        lines.append(
            f"| {r['model']} | {b['expanded']:.0f} -> {n['expanded']:.0f} | {target} | "
            f"{b['exp_per_s']:.1f} | {n['exp_per_s']:.1f} | {aa['exp_per_s']:.1f} | "
            f"{sp:.1f}x | {b['gen_per_s']:.0f} | {n['gen_per_s']:.0f} | {phases} | {n['stop']} | "
            f"{b['cost_after']:.1f} -> {n['cost_after']:.1f} | "
            f"{e['base_cost']:.1f} -> {e['new_cost']:.1f} ({better}) | {e['base_s']:.2f} -> {e['new_s']:.2f} "
            f"({e['base_s'] / e['new_s']:.1f}x) | {'yes' if e['same_output'] else 'no'} |")
    with open(os.path.join(ROOT, "bench", "results", "search.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
