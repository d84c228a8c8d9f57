#!/usr/bin/env python3
"""bench/verify.py - `engine optimize --verify` on the bench set: what it
writes and how much faster that is in onnxruntime, at 1 and 2 threads.

    python3 bench/verify.py [--threads 1,2] [--runs N] [--confirm-runs N]
                            [--models a,b,...] [--bin DIR]

For each real export in bench/cache (bench/export_torch.py) and each thread
count: `engine optimize MODEL -o OUT --verify --threads T --verify-runs N`
(default cost, analytic-cpu; default search limits), whose report says which
candidate it wrote (the search's result, the built-ins alone, or the input)
and the speedups it measured. Then an independent confirmation:
bench/ort_compare.py times the written file against the input in a fresh
process (alternating, A/A row, --confirm-runs rounds, same thread count),
so the figure does not come from the measurement that chose it. Reported:
the choice, verify's speedup and spread, the confirmed speedup and A/A, the
max rel err, and the time the search and the verification took. Writes
bench/results/verify.md and verify.jsonl.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["tv_resnet50", "tv_resnext50_32x4d", "tv_inception_v3", "tv_squeezenet1_1",
          "tv_densenet121", "tv_mnasnet1_0", "hf_bert_base"]
ROW_RE = re.compile(r"^verify: (" + report.VERIFY_CANDIDATES + r") +([0-9.]+) ms .*speedup ([0-9.]+)x "
                    r"\[([0-9.]+)-([0-9.]+)\]", re.M)
AA_RE = re.compile(r"^verify: A/A ([0-9.]+)x", re.M)
PICK_RE = report.WROTE_RE
SEARCH_RE = report.SEARCH_RE


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "out", "bin"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--confirm-runs", type=int, default=20)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--dir", default=os.path.join(ROOT, "bench", "cache"))
    a = ap.parse_args()
    engine = os.path.join(a.bin, "engine")
    rows = []
    out = os.path.join(a.dir, "verify-out.onnx")
    for name in a.models.split(","):
        model = os.path.join(a.dir, name + ".onnx")
        if not os.path.exists(model):
            sys.exit(f"verify.py: {model} missing (python3 bench/export_torch.py --all)")
        for t in (int(x) for x in a.threads.split(",")):
            t0 = time.monotonic()
            p = subprocess.run([engine, "optimize", model, "-o", out, "-q", "--verify", "--threads", str(t),
                                "--verify-runs", str(a.runs)], capture_output=True, text=True)
            total = time.monotonic() - t0
            if p.returncode != 0:
                sys.exit(f"verify.py: engine on {name} failed: {p.stderr.strip()}")
            s = SEARCH_RE.search(p.stdout)
            pick = PICK_RE.search(p.stdout)
            aa = AA_RE.search(p.stdout)
            cands = {m.group(1): {"ms": float(m.group(2)), "speedup": float(m.group(3)),
                                  "lo": float(m.group(4)), "hi": float(m.group(5))}
                     for m in ROW_RE.finditer(p.stdout)}
            c = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ort_compare.py"), model, out,
                                "--runs", str(a.confirm_runs), "--threads", str(t), "--name", name],
                               capture_output=True, text=True)
            if c.returncode != 0:
                sys.exit(f"verify.py: ort_compare on {name} failed: {c.stderr.strip()}")
            conf = json.loads(c.stdout.strip().splitlines()[-1])
            row = {"model": name, "threads": t, "pick": pick.group(1) if pick else "input (not verified)",
                   "candidates": cands, "verify_aa": float(aa.group(1)) if aa else None,
                   "search_s": float(s.group(1)) if s else None, "stop": s.group(2) if s else None,
                   "total_s": total, "confirm": conf}
            rows.append(row)
            print(f"{name} t{t}: {row['pick']}; confirmed {conf['speedup']:.3f}x (A/A {conf['aa']:.3f}), "
                  f"{total:.1f} s", file=sys.stderr)
    res = os.path.join(ROOT, "bench", "results")
    os.makedirs(res, exist_ok=True)
    with open(os.path.join(res, "verify.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    lines = report.header("engine optimize --verify on the bench set") + [
        f"`engine optimize MODEL -o OUT --verify --threads T --verify-runs {a.runs}` (analytic cost, "
        "default search limits). verify: the speedups the engine measured for its two candidates "
        "(median [25th-75th percentile] of per-round ratios) and what it wrote. confirmed: "
        f"bench/ort_compare.py, OUT against the input in a fresh process, {a.confirm_runs} alternating "
        "rounds, ORT_ENABLE_ALL, same thread count; A/A its noise row. When verify writes the input the "
        "confirmed speedup is the input against itself.", "",
        "| model | threads | search result (verify) | built-ins alone (verify) | verify A/A | written | "
        "confirmed speedup | confirmed A/A | max rel err | search s | total s |",
        "|---|--:|---|---|--:|---|--:|--:|--:|--:|--:|",
    ]

    def cand(r, k):
        c = r["candidates"].get(k)
        return f"{c['speedup']:.3f}x [{c['lo']:.3f}-{c['hi']:.3f}]" if c else "-"

    for r in rows:
        c = r["confirm"]
        lines.append(
            f"| {r['model']} | {r['threads']} | {cand(r, 'search result')} | {cand(r, 'built-ins alone')} | "
            f"{r['verify_aa'] if r['verify_aa'] is not None else '-'} | {r['pick']} | {c['speedup']:.3f}x | "
            f"{c['aa']:.3f}x | {c['max_rel_err']:.1e} | {r['search_s'] or 0:.1f} | {r['total_s']:.1f} |")
    with open(os.path.join(res, "verify.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
