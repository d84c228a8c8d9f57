#!/usr/bin/env python3
"""bench/second_opinion.py - verify's second opinion, A/B: the engine's
default command with it and with --no-second-opinion, on the same models,
the two outputs timed against each other in one onnxruntime run.

    python3 bench/second_opinion.py [--engine out/bin/engine] [--runs N]
                                    [--only a,b,...] [--out NAME]

Models: the bench set in bench/cache (bench/models.py's exports), the
exports of bench/unseen.py in bench/cache/unseen, and bench/multibranch.py's
nets in bench/cache/multibranch (*_train.onnx), those present.

Per model, each with a cost cache of its own (a new TASOC_CACHE_DIR, as a
new user has, so neither run reuses the other's kernel times or verify's
choices):
  - A: `ENGINE optimize MODEL -o A.onnx --no-second-opinion`
  - B: `ENGINE optimize MODEL -o B.onnx` (the default command)
  wall time, what verify wrote (the input, the search result, ..., the
  second opinion) and its measured speedup over the input;
  - when A and B differ: bench/ort_compare.py A B (one process, ORT_ENABLE_ALL,
    1 thread, --runs alternating rounds with a second session of A as the
    A/A): B/A = A's median time / B's, and the A/A. Identical bytes: 1 by
    identity, nothing timed.

Writes bench/results/NAME.md and NAME.jsonl (NAME: --out, default
second_opinion).
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import report

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def models(only):
    paths = sorted(glob.glob(os.path.join(HERE, "cache", "*.onnx")))
    paths += sorted(glob.glob(os.path.join(HERE, "cache", "unseen", "*.onnx")))
    paths += sorted(glob.glob(os.path.join(HERE, "cache", "multibranch", "*_train.onnx")))
    out = [(os.path.basename(p)[:-5], p) for p in paths]
    return [(n, p) for n, p in out if not only or n in only]


def run_engine(engine, model, out, extra):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TASOC_CACHE_DIR=cache)
        t0 = time.monotonic()
        p = subprocess.run([engine, "optimize", model, "-o", out] + extra, capture_output=True, text=True, env=env)
        wall = time.monotonic() - t0
    r = {"exit": p.returncode, "wall_s": round(wall, 2)}
    m = report.WROTE_RE.search(p.stdout)
    kept = "(the input, unchanged)" in p.stderr or "(result not cheaper: the input is kept)" in p.stdout
    r["wrote"] = m[1] if m else ("input (not cheaper)" if kept else "no verify")
    m = re.search(r"^verify: %s +[0-9.]+ ms .*?speedup ([0-9.]+)x" % re.escape(r["wrote"]), p.stdout, re.M)
    r["verify_speedup"] = float(m[1]) if m else (1.0 if r["wrote"].startswith("input") else None)
    if p.returncode != 0:
        r["error"] = p.stderr.strip().splitlines()[-1][:200] if p.stderr.strip() else "?"
    return r


def compare(a, b, runs):
    p = subprocess.run([sys.executable, os.path.join(HERE, "ort_compare.py"), a, b, "--runs", str(runs)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:200]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", default=os.path.join(ROOT, "out", "bin", "engine"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="second_opinion")
    ap.add_argument("--from-jsonl", action="store_true", help="rewrite NAME.md from NAME.jsonl, nothing run")
    a = ap.parse_args()
    if a.from_jsonl:
        with open(os.path.join(HERE, "results", a.out + ".jsonl")) as f:
            rows = [json.loads(line) for line in f]
        write(a, rows, rows[0].get("started", "?") if rows else "?", None)
        return
    only = set(x for x in a.only.split(",") if x)
    rows = []
    t_start = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in models(only):
            pa, pb = os.path.join(tmp, name + ".a.onnx"), os.path.join(tmp, name + ".b.onnx")
            ra = run_engine(a.engine, path, pa, ["--no-second-opinion"])
            rb = run_engine(a.engine, path, pb, [])
            row = {"model": name, "without": ra, "with": rb, "started": t_start, "load_start": load0}
            if ra["exit"] == 0 and rb["exit"] == 0:
                # both kept the input: the same model, though a model with
                # external data is written anew, naming its own data file
                same = open(pa, "rb").read() == open(pb, "rb").read() or \
                    (ra["wrote"].startswith("input") and rb["wrote"].startswith("input"))
                row["same_bytes"] = same
                if not same:
                    c = compare(pa, pb, a.runs)
                    row["compare"] = c
            rows.append(row)
            c = row.get("compare", {})
            print(f"second_opinion.py: {name}: without {ra['wrote']} ({ra['wall_s']} s), with {rb['wrote']} "
                  f"({rb['wall_s']} s), B/A {c.get('speedup', 1.0 if row.get('same_bytes') else None)}",
                  file=sys.stderr, flush=True)
    write(a, rows, t_start, load0)


def fmt(x, f="{:.3f}"):
    return "-" if x is None else f.format(x)


def write(a, rows, t_start, load0):
    head = report.commit()
    res = os.path.join(HERE, "results")
    with open(os.path.join(res, a.out + ".jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    lines = [
        "# verify's second opinion, A/B",
        "",
        f"{t_start}, commit {head}, 2 cores; load average at the start "
        f"{load0 if load0 is not None else rows[0].get('load_start', float('nan')) if rows else float('nan'):.2f}, at the end "
        f"{os.getloadavg()[0]:.2f}. `python3 bench/second_opinion.py{' --only ' + a.only if a.only else ''}` "
        "(protocol in its docstring).",
        "",
        "A: the default command with --no-second-opinion; B: the default command (verify also times the search "
        "under analytic-cpu costs). Each with a cost cache of its own. verify x: the speedup over the input verify "
        "measured for what it wrote. B/A: A's time / B's in one onnxruntime run (1 thread, ORT_ENABLE_ALL, "
        f"{a.runs} alternating rounds; A/A the noise); the same model (identical bytes, or the input kept by both): 1 by identity.",
        "",
        "| model | A wrote | A verify x | A s | B wrote | B verify x | B s | B/A | A/A | max rel err |",
        "|---|---|--:|--:|---|--:|--:|--:|--:|--:|",
    ]
    ratios, slower, faster, walls_a, walls_b = [], [], [], [], []
    for r in rows:
        ra, rb, c = r["without"], r["with"], r.get("compare", {})
        same = r.get("same_bytes") or (ra["wrote"].startswith("input") and rb["wrote"].startswith("input"))
        ratio = 1.0 if same else c.get("speedup")
        aa = c.get("aa")
        if ratio is not None:
            ratios.append(ratio)
            noise = abs(1 - aa) + 0.01 if aa else 0.01
            if ratio < 1 - noise:
                slower.append(r["model"])
            elif ratio > 1 + noise:
                faster.append(r["model"])
        walls_a.append(ra["wall_s"])
        walls_b.append(rb["wall_s"])
        err = c.get("max_rel_err")
        lines.append(f"| {r['model']} | {ra['wrote']} | {fmt(ra.get('verify_speedup'))} | {ra['wall_s']} | "
                     f"{rb['wrote']} | {fmt(rb.get('verify_speedup'))} | {rb['wall_s']} | "
                     f"{fmt(ratio)}{' (the same model)' if same else ''} | {fmt(aa if not same else None)} | "
                     f"{fmt(err, '{:.1e}')} |")
    n = len(ratios)
    geo = statistics.geometric_mean(ratios) if ratios else None
    lines += [
        "",
        f"- {n} models: B faster than A beyond the A/A noise on {len(faster)} ({', '.join(faster) or 'none'}), "
        f"slower on {len(slower)} ({', '.join(slower) or 'none'}); geometric mean of B/A {fmt(geo)}.",
        f"- Wall time of the engine: A median {statistics.median(walls_a):.1f} s (max {max(walls_a):.1f}), "
        f"B median {statistics.median(walls_b):.1f} s (max {max(walls_b):.1f}).",
    ]
    with open(os.path.join(res, a.out + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[-2:]))


if __name__ == "__main__":
    main()
