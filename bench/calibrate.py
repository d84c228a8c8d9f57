#!/usr/bin/env python3
"""bench/calibrate.py - fit analytic-cpu's constants to onnxruntime on this
CPU, and report how well analytic-cpu ranks the rewrites the search judges.

    python3 bench/calibrate.py trace DIR [--models a,b,...] [--bin DIR]
    python3 bench/calibrate.py fit DIR [--header engine/cost/cost_calib.h]
    python3 bench/calibrate.py report BEFORE AFTER [--out calibrate] [--note TEXT]

trace   runs `engine optimize MODEL --cost ort --no-verify --threads 1
        --cost-trace DIR/MODEL.trace` on every real export of the bench set
        (bench/cache/*.onnx, bench/export_torch.py) and of bench/unseen.py
        (bench/cache/unseen), on the per-user cost cache (kernels measured
        once). A trace holds a "kern" line per kernel group onnxruntime
        timed (its class, flops and bytes, onnxruntime's microseconds,
        analytic-cpu's with the constants built in) and a "pair" line per
        rewrite the search judged (the change in cost it makes under both).
fit     fits us = launch + flops * a[class] + bytes * b[class] (classes:
        engine/cost/cost_impl.h's eg_cost_cal; one launch for all, see fit_all)
        to onnxruntime's times, non-negative, least squares of the log of
        estimate / time (so a 5 us kernel counts as much as a 5 ms one, and
        2x too high as much as 2x too low), kernels of all traces once
        each. Groups onnxruntime times as one and analytic-cpu charges as
        two (an addition and the layer norm after it) are left out. Writes the table to the header,
        with the machine and the kernel counts; then rebuild (ninja).
report  the kernels' error and the search's judgments, from a trace run with
        the old constants (BEFORE) and one with the new (AFTER): per kernel
        class the median |log(analytic / onnxruntime)|; per model set the
        fraction of judgments onnxruntime decides (|delta| > 2% of the cost
        of the region judged, its noise) that analytic-cpu orders the same
        way (the same sign; analytic-cpu calling it a tie counts as not),
        and of random couples of judgments the fraction analytic-cpu puts in
        onnxruntime's order (which rewrite is the better one).
        Writes bench/results/OUT.md and OUT.jsonl.
"""
import argparse
import datetime
import glob
import json
import math
import os
import statistics
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# engine/cost/cost_impl.h's eg_cost_cal, in order (the header's initialisers name them)
CLASSES = ["conv1", "conv", "dwconv", "gconv", "gemm", "pool", "ew", "ewmath", "bnorm", "rows", "gap", "move",
           "trans", "transn", "view"]
ENUM = {c: "EG_CAL_" + c.upper() for c in CLASSES}
NOISE = 0.02  # eg_cost_noise of ort


def models():
    from unseen import MODELS as UNSEEN
    bench = sorted(glob.glob(os.path.join(ROOT, "bench", "cache", "*.onnx")))
    out = [("bench", os.path.basename(p)[:-5], p) for p in bench]
    udir = os.path.join(ROOT, "bench", "cache", "unseen")
    out += [("unseen", n, os.path.join(udir, n + ".onnx")) for n in UNSEEN
            if os.path.exists(os.path.join(udir, n + ".onnx"))]
    return out


def cmd_trace(a):
    os.makedirs(a.dir, exist_ok=True)
    todo = [m for m in models() if not a.models or m[1] in a.models.split(",")]
    for i, (group, name, path) in enumerate(todo):
        tr = os.path.join(a.dir, f"{group}.{name}.trace")
        t0 = datetime.datetime.now()
        r = subprocess.run([os.path.join(a.bin, "engine"), "optimize", path, "-o", os.path.join(a.dir, "out.onnx"),
                            "--cost", "ort", "--no-verify", "--threads", "1", "--cost-trace", tr, "-q"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        s = (datetime.datetime.now() - t0).total_seconds()
        meas = next((l for l in r.stdout.splitlines() if l.startswith("costs:")), "")
        print(f"[{i + 1}/{len(todo)}] {name}: exit {r.returncode}, {s:.1f} s; {meas}", flush=True)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
    for f in glob.glob(os.path.join(a.dir, "out.onnx*")):
        os.remove(f)


def read_traces(d):
    """{key: kernel dict} over all traces, and {(group, model): [pairs]}."""
    kern, pairs = {}, {}
    for tr in sorted(glob.glob(os.path.join(d, "*.trace"))):
        group, name = os.path.basename(tr)[:-6].split(".", 1)
        ps = pairs.setdefault((group, name), [])
        with open(tr) as f:
            for line in f:
                w = line.split()
                if w[0] == "kern" and len(w) == 15:
                    kern.setdefault(w[1], {"cls": w[2], "ew": int(w[3]), "nodes": int(w[4]), "lnadd": int(w[5]),
                                           "flops": float(w[6]), "bytes": float(w[7]), "kh": int(w[8]),
                                           "kw": int(w[9]), "groups": int(w[10]), "c": int(w[11]),
                                           "o": int(w[12]), "ort": float(w[13]), "an": float(w[14]),
                                           "model": name})
                elif w[0] == "pair" and len(w) in (5, 6):  # 5: traces before the rule index was added
                    ps.append(tuple(float(x) for x in w[1:5]))
    return kern, pairs


def nnls(A, b):
    """min |Ax - b|, x >= 0 (Lawson-Hanson active set, small problems)."""
    try:
        from scipy.optimize import nnls as sp
        return sp(A, b)[0]
    except ImportError:
        pass
    n = A.shape[1]
    free = list(range(n))
    while True:
        x = np.zeros(n)
        if free:
            x[free] = np.linalg.lstsq(A[:, free], b, rcond=None)[0]
        neg = [i for i in free if x[i] < 0]
        if not neg:
            return x
        free.remove(min(neg, key=lambda i: x[i]))


def fit_all(ks, classes):
    """One launch constant for every class (a call into onnxruntime costs
    the same whatever the kernel computes: with a launch of its own, a
    class of cheap calls would make a rewrite that adds work to a kernel of
    that class look cheaper, a 1x1 conv enlarged to 3x3), and per class a
    cost per flop and per byte. @return {class: [launch, per_flop, per_byte]}."""
    col = {c: i for i, c in enumerate(classes)}
    t = np.array([k["ort"] for k in ks])
    A = np.zeros((len(ks), 1 + 2 * len(classes)))
    for r, k in enumerate(ks):
        i = col[k["cls"]]
        A[r, 0], A[r, 1 + 2 * i], A[r, 2 + 2 * i] = 1.0, k["flops"], k["bytes"]
    scale = np.maximum((A / t[:, None]).max(axis=0), 1e-30)  # columns of like size for the solver
    A /= scale
    # least squares of the relative error first, then of the log error
    # (Gauss-Newton, each step a non-negative least squares): a relative
    # error punishes an estimate 5x too high far more than one 5x too low,
    # which drags a class of mixed kernels down; the log weighs both alike
    x = nnls(A / t[:, None], np.ones(len(ks)))
    for _ in range(30):
        pred = np.maximum(A @ x, 1e-9)
        J = A / pred[:, None]
        step = nnls(J, J @ x - np.log(pred / t))
        if np.allclose(step, x, rtol=1e-6, atol=1e-12):
            break
        x = 0.5 * (x + step)
    x = x / scale
    return {c: [float(x[0]), float(x[1 + 2 * i]), float(x[2 + 2 * i])] for c, i in col.items()}


def usable(k):
    return k["ort"] > 0 and not k["lnadd"]


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import onnxruntime
    return f"{cpu}, onnxruntime {onnxruntime.__version__}, 1 thread"


def cmd_fit(a):
    kern, _ = read_traces(a.dir)
    ks = [k for k in kern.values() if usable(k)]
    count = {c: sum(k["cls"] == c for k in ks) for c in CLASSES}
    fitted = fit_all([k for k in ks if count[k["cls"]] >= 3], [c for c in CLASSES if count[c] >= 3])
    rows = []
    for c in CLASSES:
        x = fitted.get(c)
        rows.append((c, count[c], x))
        print(f"{c:7s} {count[c]:5d} kernels: " + (f"launch {x[0]:.3g} us, {x[1] * 1e6:.4g} us/Mflop, "
                                                   f"{x[2] * 1e6:.4g} us/MB" if x else "too few: priced as ew"))
    lines = ["/* cost_calib.h - analytic-cpu's constants per kernel class, fitted by",
             " * bench/calibrate.py fit to kernels measured in onnxruntime (GENERATED:",
             " * rerun it to recalibrate; do not edit by hand).",
             " *",
             f" * Machine: {machine()}.",
             f" * Fitted {datetime.date.today().isoformat()} on {len(ks)} kernels from {len(glob.glob(os.path.join(a.dir, '*.trace')))} models",
             " * (the bench set and bench/unseen.py). us = launch_us + flops * us_per_flop",
             " * + bytes * us_per_byte, one launch_us for all; a class with under 3",
             " * kernels is priced as ew (the cheap element-wise ops). Kernels per class:",
             " * " + ", ".join(f"{c} {n}" for c, n, _ in rows) + ".",
             " * Included by cost.c only. */",
             "#ifndef EG_COST_CALIB_H",
             "#define EG_COST_CALIB_H",
             '#include "cost_impl.h"',
             "",
             f'#define EG_COST_CALIB_MACHINE "{machine()}"',
             "",
             "static const eg_cost_calib eg_cost_calib_table[] = {"]
    for c, n, x in rows:
        if x is None:  # too few kernels of its own: priced as the cheap element-wise ops
            x = fitted.get("ew", [1.0, 1 / 50e3, 1 / 10e3])
        lines.append(f"    [{ENUM[c]}] = {{{x[0]:.6g}, {x[1]:.6g}, {x[2]:.6g}}},")
    lines += ["};", "_Static_assert(sizeof eg_cost_calib_table / sizeof eg_cost_calib_table[0] == EG_CAL_COUNT,",
              '               "eg_cost_calib_table");', "", "#endif", ""]
    tmp = a.header + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines))
    os.replace(tmp, a.header)
    print(f"wrote {a.header}")


def err_of(ks):
    v = [abs(math.log(max(k["an"], 1e-9) / k["ort"])) for k in ks if usable(k)]
    return statistics.median(v) if v else float("nan")


def agreement(pairs):
    """(decided, agreeing) over the judgments onnxruntime decides."""
    dec = agree = 0
    for d, d_an, before, before_an in pairs:
        if abs(d) <= NOISE * before:
            continue
        dec += 1
        tie = abs(d_an) <= 1e-9 * max(before_an, 1e-9)
        agree += not tie and (d > 0) == (d_an > 0)
    return dec, agree


def ranking(pairs, n=20000, seed=1):
    """(compared, alike) over n random couples of judgments (seeded):
    couples onnxruntime orders beyond its noise (their deltas apart by more
    than 2% of the larger region's cost), ordered alike by analytic-cpu.
    The search keeps the cheapest children first, so this is how often
    analytic-cpu would pick the rewrite onnxruntime picks."""
    import random
    rng = random.Random(seed)
    if len(pairs) < 2:
        return 0, 0
    cmp = alike = 0
    for _ in range(n):
        (d1, a1, b1, _), (d2, a2, b2, _) = rng.sample(pairs, 2)
        if abs(d1 - d2) <= NOISE * max(b1, b2):
            continue
        cmp += 1
        alike += (d1 < d2) == (a1 < a2) and a1 != a2
    return cmp, alike


def cmd_report(a):
    kb, pb = read_traces(a.before)
    ka, pa = read_traces(a.after)
    out = os.path.join(ROOT, "bench", "results", a.out)
    rows = []
    import report
    md = report.header("analytic-cpu calibrated against onnxruntime",
                       f"{machine()}. `python3 bench/calibrate.py trace DIR` with the engine before and after "
                       f"`calibrate.py fit` (constants in engine/cost/cost_calib.h), then `calibrate.py report "
                       f"{os.path.relpath(a.before, ROOT)} {os.path.relpath(a.after, ROOT)}`. {a.note}".strip()) + [
          "Kernels: every kernel group the search had onnxruntime time on the bench set's and bench/unseen.py's "
          "exports (ORT_ENABLE_ALL, 1 thread), each once; error: the median |ln(analytic-cpu / onnxruntime)| "
          "(0.1 is 10% off; ln 2 = 0.69 is a factor of 2).", "",
          "| class | kernels | error before | error after |", "|---|--:|--:|--:|"]
    for c in CLASSES:  # the before run's kernels in the after run's classes (a class may be new)
        f = [k for k in ka.values() if k["cls"] == c]
        b = [kb[h] for h, k in ka.items() if k["cls"] == c and h in kb]
        md.append(f"| {c} | {len([k for k in f if usable(k)])} | {err_of(b):.3f} | {err_of(f):.3f} |")
        rows.append({"kind": "class", "class": c, "kernels": len(f), "err_before": err_of(b), "err_after": err_of(f)})
    md.append(f"| all | {len([k for k in ka.values() if usable(k)])} | {err_of(kb.values()):.3f} | "
              f"{err_of(ka.values()):.3f} |")
    md += ["", "Rankings: each rewrite the search judged (the `pair` lines: the change in cost it makes in the "
           "region it touches, under onnxruntime's measured costs and under analytic-cpu). Decided: onnxruntime's "
           f"change beyond {NOISE:.0%} of the region's cost (its noise). Ordered alike: analytic-cpu's change has "
           "the same sign (a tie in analytic-cpu counts as not). The search in both runs is onnxruntime's: both "
           "judge the same rewrites wherever the two builds time the same kernel groups.", "",
           "Couples: 20,000 random couples of judgments per model (seeded) that onnxruntime orders beyond its "
           "noise (their changes apart by more than 2% of the larger region's cost); ordered alike: analytic-cpu "
           "puts them in the same order. The search expands the cheapest children first, so this is how often "
           "analytic-cpu picks the rewrite onnxruntime would.", "",
           "| models | judgments | decided | sign alike before | sign alike after | couples | couples alike "
           "before | couples alike after |", "|---|--:|--:|--:|--:|--:|--:|--:|"]
    rank_b = {k: ranking(v) for k, v in pb.items()}
    rank_a = {k: ranking(v) for k, v in pa.items()}
    for grp in ["bench", "unseen", "all"]:
        keys = [k for k in pa if grp == "all" or k[0] == grp]
        tot = sum(len(pa[k]) for k in keys)
        db, ab = map(sum, zip(*[agreement(pb.get(k, [])) for k in keys])) if keys else (0, 0)
        da, aa = map(sum, zip(*[agreement(pa[k]) for k in keys])) if keys else (0, 0)
        cb, kb_ = map(sum, zip(*[rank_b.get(k, (0, 0)) for k in keys])) if keys else (0, 0)
        ca, ka_ = map(sum, zip(*[rank_a[k] for k in keys])) if keys else (0, 0)
        fb, fa = ab / db if db else float("nan"), aa / da if da else float("nan")
        rb, ra = kb_ / cb if cb else float("nan"), ka_ / ca if ca else float("nan")
        md.append(f"| {grp} ({len(keys)}) | {tot} | {da} | {fb:.1%} | {fa:.1%} | {ca} | {rb:.1%} | {ra:.1%} |")
        rows.append({"kind": "rank", "models": grp, "n_models": len(keys), "judgments": tot, "decided": da,
                     "agree_before": fb, "agree_after": fa, "couples": ca, "couples_before": rb,
                     "couples_after": ra})
    md += ["", "Per model (ordered alike before -> after, of the decided judgments):", ""]
    md += ["| set | model | decided | sign before | sign after | couples before | couples after |",
           "|---|---|--:|--:|--:|--:|--:|"]
    pct = lambda x, n: f"{x / n:.1%}" if n else "-"  # noqa: E731
    for k in sorted(pa):
        db, ab = agreement(pb.get(k, []))
        da, aa = agreement(pa[k])
        (cb, kb_), (ca, ka_) = rank_b.get(k, (0, 0)), rank_a[k]
        md.append(f"| {k[0]} | {k[1]} | {da} | {pct(ab, db)} | {pct(aa, da)} | {pct(kb_, cb)} | {pct(ka_, ca)} |")
        rows.append({"kind": "model", "set": k[0], "model": k[1], "decided": da,
                     "agree_before": ab / db if db else None, "agree_after": aa / da if da else None,
                     "couples_before": kb_ / cb if cb else None, "couples_after": ka_ / ca if ca else None})
    with open(out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    with open(out + ".jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print("\n".join(md))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("trace")
    t.add_argument("dir")
    t.add_argument("--models", default="")
    t.add_argument("--bin", default=os.path.join(ROOT, "out", "bin"))
    f = sub.add_parser("fit")
    f.add_argument("dir")
    f.add_argument("--header", default=os.path.join(ROOT, "engine", "cost_calib.h"))
    r = sub.add_parser("report")
    r.add_argument("before")
    r.add_argument("after")
    r.add_argument("--out", default="calibrate")
    r.add_argument("--note", default="", help="a sentence for the header (which builds made the traces)")
    a = ap.parse_args()
    {"trace": cmd_trace, "fit": cmd_fit, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    main()
