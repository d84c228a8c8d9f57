#!/usr/bin/env python3
"""bench/schedule.py - the e-graph search under several engines and rule
sets, side by side: what a change to its scheduler, or a larger rule set,
does to the final cost and the search's time on every model at hand.

    python3 bench/schedule.py --run LABEL=ENGINE:RULEDB[:OPTIONS] [--run ...]
                              [--only NAME]... [--out bench/results/schedule.md]
                              [--measured CACHE]

Each --run is an engine binary (a build of another commit copied aside,
or out/bin/engine), a ruledb and, after a second colon, more engine
options (as one word: "--egraph-nodes 100000"). For each model (bench/searches.py's: the
bench set, bench/unseen.py's exports, the multi-branch training forms) and
each run, in turn: `ENGINE optimize MODEL --deterministic --search egraph
--ruledb RULEDB OPTIONS` (analytic-cpu costs: the answer does not depend
on the machine's load); its final cost, the search's seconds, why it stopped and
the rounds. The first run is the reference: the summary counts, for every
other run, the models it ends cheaper, dearer and the same on, and the
search's seconds in total.

--measured CACHE: onnxruntime's measured costs instead (`--cost ort
--no-verify --time-limit 600 --cost-cache COPY`), for a change to how a
measuring backend prices what it has not timed. COPY is a copy of CACHE (a
cost cache file; missing: an empty one) that every run shares, so every
engine is charged the same time for a kernel; each model's runs go twice
and the second round is reported, when every kernel the first round timed
is read from COPY. Measured costs depend on the machine, so compare runs of
one invocation only.

Writes --out (markdown) and the same name with .jsonl.
"""
import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import searches  # noqa: E402

AFTER = re.compile(r"cost after: ([0-9.]+) us")
SAT = re.compile(r"saturation: ([0-9.]+) s \(stopped: ([a-z -]+); (\d+) rounds")


def run_one(engine, ruledb, options, model, tmp, cache=None):
    out = os.path.join(tmp, "out.onnx")
    cost = ["--cost", "ort", "--no-verify", "--time-limit", "600", "--cost-cache", cache] if cache else ["--deterministic"]
    cmd = [engine, "optimize", model, "-o", out] + cost + ["--search", "egraph", "--ruledb", ruledb, "-q"]
    cmd += shlex.split(options)
    p = subprocess.run(cmd, capture_output=True, text=True)
    row = {"rc": p.returncode}
    if p.returncode == 0 and os.path.exists(out):
        with open(out, "rb") as f:
            row["sha256"] = hashlib.sha256(f.read()).hexdigest()
    a, s = AFTER.search(p.stdout + p.stderr), SAT.search(p.stdout + p.stderr)
    if a:
        row["after"] = float(a.group(1))
    if s:
        row["seconds"], row["stop"], row["rounds"] = float(s.group(1)), s.group(2), int(s.group(3))
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", action="append", required=True, help="LABEL=ENGINE:RULEDB[:OPTIONS]")
    ap.add_argument("--only", action="append", default=[], help="model name (file name without .onnx)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "schedule.md"))
    ap.add_argument("--measured", metavar="CACHE", help="onnxruntime's measured costs from a copy of CACHE")
    a = ap.parse_args()
    runs = []
    for spec in a.run:
        label, _, rest = spec.partition("=")
        engine, _, rest = rest.partition(":")
        ruledb, _, options = rest.partition(":")
        if not label or not engine or not ruledb:
            ap.error(f"--run {spec}: LABEL=ENGINE:RULEDB[:OPTIONS]")
        runs.append((label, engine, ruledb, options))
    rows = []
    with tempfile.TemporaryDirectory() as shared:
        cache = None
        if a.measured:
            cache = os.path.join(shared, "costs.txt")
            if os.path.exists(a.measured):
                shutil.copyfile(a.measured, cache)
        for name, path in searches.named_models(a.only):
            rows.append(run_model(name, path, runs, cache))
    write(a, runs, rows)


def run_model(name, path, runs, cache):
    r = {"model": name}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(2 if cache else 1):
            for label, engine, ruledb, options in runs:
                r[label] = run_one(engine, ruledb, options, path, tmp, cache)
        print("schedule.py: " + name + ": " + ", ".join(
            f"{lb} {r[lb].get('after', float('nan')):.1f} us {r[lb].get('seconds', 0):.1f} s" for lb, *_ in runs),
            flush=True)
    return r


def write(a, runs, rows):
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    labels = [lb for lb, *_ in runs]
    lines = ["# The e-graph search under several engines and rule sets", "",
             f"`python3 bench/schedule.py {' '.join('--run ' + shlex.quote(s) for s in a.run)}"
             f"{' --measured ' + shlex.quote(a.measured) if a.measured else ''}` at {commit}, "
             f"{time.strftime('%Y-%m-%d')}, 2 cores, load average at the end {os.getloadavg()[0]:.2f}. Each: " + (
                 "`ENGINE optimize MODEL --cost ort --no-verify --time-limit 600 --cost-cache COPY --search egraph "
                 "--ruledb RULEDB OPTIONS` (onnxruntime's measured costs, a copy of " + os.path.basename(a.measured) +
                 " shared by every run; the second of two rounds). " if a.measured else
                 "`ENGINE optimize MODEL --deterministic --search egraph --ruledb RULEDB OPTIONS` (analytic-cpu costs). ") +
             "Final cost in us; s: the search's seconds (saturation and extraction); stop and rounds.", "",
             "| model | " + " | ".join(f"{lb} us | {lb} s, stop" for lb in labels) + " |",
             "|---|" + "--:|---|" * len(labels)]
    for r in rows:
        cells = []
        for lb in labels:
            x = r[lb]
            cells.append(f"{x['after']:.1f}" if "after" in x else f"rc {x['rc']}")
            cells.append(f"{x.get('seconds', 0):.1f}, {x.get('stop', '-')} ({x.get('rounds', 0)})")
        lines.append(f"| {r['model']} | " + " | ".join(cells) + " |")
    lines.append("")
    ref = labels[0]
    for lb in labels:
        total = sum(r[lb].get("seconds", 0) for r in rows)
        if lb == ref:
            lines.append(f"- {lb} (the reference): search seconds in total {total:.1f}.")
            continue
        both = [r for r in rows if "after" in r[ref] and "after" in r[lb]]
        cheaper = sum(r[lb]["after"] < r[ref]["after"] * (1 - 1e-6) for r in both)
        dearer = sum(r[lb]["after"] > r[ref]["after"] * (1 + 1e-6) for r in both)
        failed = len(rows) - len(both)
        same_bytes = sum("sha256" in r[ref] and r[lb].get("sha256") == r[ref]["sha256"] for r in rows)
        lines.append(f"- {lb} against {ref}: cheaper on {cheaper}, dearer on {dearer}, the same on "
                     f"{len(both) - cheaper - dearer} of {len(rows)}" + (f" ({failed} failed)" if failed else "") +
                     f" (the same output bytes on {same_bytes}); search seconds in total {total:.1f}.")
    with open(a.out + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(a.out + ".tmp", a.out)
    with open(a.out[:-3] + ".jsonl" + ".tmp", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    os.replace(a.out[:-3] + ".jsonl" + ".tmp", a.out[:-3] + ".jsonl")
    print(f"schedule.py: wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
