#!/usr/bin/env python3
"""bench/searches.py - the two searches side by side: the best-first
backtracking search (--search backtrack) and equality saturation (--search
egraph), on every real export at hand, at the same time limit.

    python3 bench/searches.py [--engine out/bin/engine] [--time-limit 10]
                              [--cost analytic-cpu|analytic]
                              [--only NAME]... [--out bench/results/searches.md]

Models: bench/cache/*.onnx (bench/export_torch.py's bench set),
bench/cache/unseen/*.onnx (bench/unseen.py's exports) and the training
forms of bench/cache/multibranch/ (bench/multibranch.py's timm exports),
whichever are present. For each model and search: `ENGINE optimize MODEL -o
OUT --deterministic --cost C --search S --time-limit T` (analytic costs,
analytic-cpu by default or the GPU-like analytic roofline, so the answer
does not depend on the machine's load; the e-graph's own limits are
its defaults), its exit status and wall time, the cost before and after,
the search's own seconds (saturation and extraction for the e-graph),
the engine's peak memory (its own report, Linux's VmHWM), the stop reason, the expansions or rounds, the
e-graph's size; and
onnxruntime (ORT_DISABLE_ALL, seeded random inputs) on the input and OUT:
their max relative error, which must stay small (<= 1e-3), the proof the
result is still the model. The summary counts where each search ends
cheaper and the geometric mean of the e-graph's final cost over the
backtracking search's.

Writes --out (markdown) and the same name with .jsonl.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from ort_compare import max_rel_err, random_inputs  # noqa: E402
from ort_compare import session as ort_session  # noqa: E402
from same_bytes import models_of  # noqa: E402

COST = re.compile(r"cost (before|after): ([0-9.]+) us")
BACK = re.compile(r"search time: ([0-9.]+) s \(stopped: ([a-z -]+); expanded (\d+)")
SAT = re.compile(r"saturation: ([0-9.]+) s \(stopped: ([a-z -]+); (\d+) rounds, (\d+) e-nodes added, "
                 r"(\d+) e-nodes in (\d+) classes")
MEM = re.compile(r"memory: peak ([0-9.]+) MB")
PASSES = re.compile(r"(\d+) pass(?:es)?; rounds")
SEARCHES = ("backtrack", "egraph")


def models():
    return models_of(["bench/cache/*.onnx", "bench/cache/unseen/*.onnx", "bench/cache/multibranch/*_train.onnx"])


def named_models(only=()):
    """(name, path) of each of models() whose name (the file name without
    .onnx) is in only, or of every one when only is empty."""
    for path in models():
        name = os.path.basename(path)[:-5]
        if not only or name in only:
            yield name, path


def session(path):
    return ort_session(path, 1, rewrite=False)


def check(a, b):
    """Max relative error of b's outputs against a's; None when a does not run."""
    try:
        sa = session(a)
        x = random_inputs(sa, 0)
        ya = sa.run(None, x)
    except Exception:  # noqa: BLE001 - a model onnxruntime cannot run is reported, not checked
        return None
    return max_rel_err(ya, session(b).run(None, x))


def run(engine, model, search, limit, cost, tmp, extra=()):
    """One engine run (extra: more options, e.g. --ruledb). @return its row."""
    out = os.path.join(tmp, f"{search}.onnx")
    t = time.monotonic()
    p = subprocess.run([engine, "optimize", model, "-o", out, "--deterministic", "--cost", cost, "--search", search,
                        "--time-limit", str(limit)] + list(extra), capture_output=True, text=True)
    rc, stdout, stderr = p.returncode, p.stdout, p.stderr
    m = MEM.search(stdout)
    row = {"search": search, "rc": rc, "wall": time.monotonic() - t, "peak_mb": float(m.group(1)) if m else 0.0}
    for k, v in COST.findall(stdout):
        row[k] = float(v)
    m = BACK.search(stdout)
    if m:
        row.update(seconds=float(m.group(1)), stop=m.group(2), steps=int(m.group(3)))
    m = SAT.search(stdout)
    if m:
        row.update(seconds=float(m.group(1)), stop=m.group(2), steps=int(m.group(3)), e_nodes=int(m.group(5)),
                   e_classes=int(m.group(6)))
        m = PASSES.search(stdout)
        row["passes"] = int(m.group(1)) if m else None
    if rc == 0:
        row["err"] = check(model, out)
    else:
        row["stderr"] = stderr.strip().splitlines()[-1:] if stderr else []
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", default=os.path.join(ROOT, "out", "bin", "engine"))
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--cost", choices=("analytic-cpu", "analytic"), default="analytic-cpu")
    ap.add_argument("--only", action="append", default=[], help="model name (file name without .onnx)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "searches.md"))
    a = ap.parse_args()
    rows = []
    for path in models():
        name = os.path.basename(path)[:-5]
        if a.only and name not in a.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            r = {"model": name}
            for s in SEARCHES:
                r[s] = run(a.engine, path, s, a.time_limit, a.cost, tmp)
                x = r[s]
                print(f"searches.py: {name} {s}: rc {x['rc']}, {x['wall']:.1f} s, "
                      f"{x.get('before', 0):.1f} -> {x.get('after', 0):.1f} us, {x.get('stop')}, "
                      f"err {x.get('err')}", flush=True)
        rows.append(r)
    write(a, rows)


def fmt_err(e):
    return "-" if e is None else f"{e:.1e}"


def write(a, rows):
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    lines = ["# The two searches side by side", "",
             f"`python3 bench/searches.py --time-limit {a.time_limit:g} --cost {a.cost}` at {commit}, "
             f"{time.strftime('%Y-%m-%d')}, 2 cores. Each: `engine optimize MODEL --deterministic "
             f"--cost {a.cost} --search S --time-limit {a.time_limit:g}` ({a.cost} costs; the e-graph's "
             "own limits at their defaults). err: onnxruntime, output against input, max relative error.", "",
             "| model | cost before (us) | backtrack after | egraph after | egraph / backtrack | "
             "search s b / e | peak MB b / e | backtrack stop | egraph stop (rounds, e-nodes, classes) | err b / e |",
             "|---|--:|--:|--:|--:|--:|--:|---|---|---|"]
    logs, better, worse, same, failed = [], 0, 0, 0, 0
    for r in rows:
        b, e = r["backtrack"], r["egraph"]
        if b["rc"] or e["rc"] or "after" not in b or "after" not in e:
            failed += 1
            lines.append(f"| {r['model']} | - | rc {b['rc']} | rc {e['rc']} | - | - | - | - | - | - |")
            continue
        ratio = e["after"] / b["after"] if b["after"] > 0 else 1.0
        logs.append(math.log(ratio))
        if ratio < 1 - 1e-6:
            better += 1
        elif ratio > 1 + 1e-6:
            worse += 1
        else:
            same += 1
        lines.append(f"| {r['model']} | {b['before']:.1f} | {b['after']:.1f} | {e['after']:.1f} | {ratio:.3f} | "
                     f"{b.get('seconds', 0):.1f} / {e.get('seconds', 0):.1f} | "
                     f"{b['peak_mb']:.0f} / {e['peak_mb']:.0f} | {b.get('stop')} ({b.get('steps')}) | "
                     f"{e.get('stop')} ({e.get('steps')}, {e.get('e_nodes')}, {e.get('e_classes')}) | "
                     f"{fmt_err(b.get('err'))} / {fmt_err(e.get('err'))} |")
    gm = math.exp(sum(logs) / len(logs)) if logs else float("nan")
    es = [r["egraph"] for r in rows if "seconds" in r["egraph"]]
    slow = max(es, key=lambda x: x["seconds"], default=None)
    big = max(es, key=lambda x: x["peak_mb"], default=None)
    lines += ["", f"{len(rows)} models: the e-graph ends cheaper on {better}, dearer on {worse}, the same on "
              f"{same}; {failed} failed. Geometric mean of egraph / backtrack final cost: {gm:.3f}."]
    if slow and big:
        lines += ["", f"The e-graph search (saturation and extraction) took at most {slow['seconds']:.1f} s and the "
                  f"engine's peak memory was at most {big['peak_mb']:.0f} MB (the whole process: the model, its "
                  "weights and the search)."]
    save(a.out, lines, rows)
    print("\n".join(lines[-1:]))


def save(out, lines, rows):
    """The report's lines to out (markdown), its rows to the same name with .jsonl."""
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.splitext(out)[0] + ".jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
