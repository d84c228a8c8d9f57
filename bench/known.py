#!/usr/bin/env python3
"""bench/known.py - prove --known on a depth-4 sample: what the pairs the
shipped rules already derive cost, and that leaving them out loses nothing.

    python3 bench/known.py [--bin out/bin] [--ops LIST | --candidates FILE] [--shards K,K,...]
                           [--known ruledb/pruned.tasodb] [--budget "PROVE OPTIONS"]
                           [--work DIR] [--out bench/results/known.md]

Steps, each timed with its peak memory (/usr/bin/time -v):
  1. synth at depth 4 over --ops (default eleven operators: element-wise,
     scale and bias, concat and split, transpose, matmul), one thread,
     seed 1 (kept in --work and reused when there); or --candidates, a
     candidates file made before (a part of the divided depth-4 run over
     every operator, synth --merge-part: a sample of its classes);
  2. per prove shard K of 16 in --shards (a sample of the candidates: the
     Z3 lanes of prove --shard): `prove --shard K/16` without --known, then
     with it; the counts (derived, proved by Z3, refuted, unknown) and the
     rules each writes; with --budget, a third run with --known and those
     options (smaller Z3 budgets), and whether it writes the same rules
     (ruledb diff);
  3. the proof that nothing was lost: `prove --derive` of every rule the
     run without --known wrote, from the known rules and those the run
     with --known wrote together (ruledb merge): each is in them or
     derived, so neither must be 0.

Writes --out (markdown).
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OPS = "ewadd,ewmul,relu,sigmoid,concat,split0,transpose,scale,bias,smul,matmul"


def timed(cmd):
    """Run cmd under /usr/bin/time -v. @return (rc, wall s, cpu s, peak MB, stderr)."""
    t = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    wall = time.monotonic() - t
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    user = re.search(r"User time \(seconds\): ([\d.]+)", p.stderr)
    sys_ = re.search(r"System time \(seconds\): ([\d.]+)", p.stderr)
    cpu = (float(user.group(1)) if user else 0.0) + (float(sys_.group(1)) if sys_ else 0.0)
    return p.returncode, wall, cpu, int(peak.group(1)) / 1024 if peak else 0.0, p.stderr


def must(rc, what, err):
    if rc != 0:
        sys.exit(f"known.py: {what} failed (exit {rc}):\n{err[-2000:]}")


def counts(stderr):
    """prove's summary counts."""
    c = {}
    m = re.search(r"prove: (\d+) candidates in \d+ classes \((\d+) distinct up to renaming\): (\d+) proved, "
                  r"(\d+) refuted .*?, (\d+) unknown, (\d+) timeout", stderr)
    if m:
        c.update(zip(("pairs", "distinct", "proved", "refuted", "unknown", "timeout"), map(int, m.groups())))
    m = re.search(r"prove: (\d+) more pairs proved and derived from the rules of", stderr)
    c["derived"] = int(m.group(1)) if m else 0
    m = re.search(r"rules (\d+) emitted", stderr)
    c["rules"] = int(m.group(1)) if m else 0
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "out", "bin"))
    ap.add_argument("--ops", default=OPS)
    ap.add_argument("--candidates", help="a candidates file to prove instead of synth's over --ops")
    ap.add_argument("--shards", default="3,11", help="prove shards of 16 to run (default 3,11)")
    ap.add_argument("--known", default=os.path.join(ROOT, "ruledb", "pruned.tasodb"))
    ap.add_argument("--budget", default="", help="prove options of a third run with --known, e.g. "
                                                 "\"--max-instances 4000 --rlimit 10000000\"")
    ap.add_argument("--work", default=os.path.join(ROOT, "bench", "cache", "known"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "known.md"))
    a = ap.parse_args()
    b = lambda p: os.path.join(a.bin, p)  # noqa: E731
    axioms = os.path.join(ROOT, "opspecs", "axioms.ax")
    os.makedirs(a.work, exist_ok=True)
    cands = a.candidates or os.path.join(a.work, "candidates.tasodb")
    what = f"Candidates: {a.candidates}." if a.candidates else f"Operators: {a.ops}."
    args = " ".join(sys.argv[1:])
    lines = [f"# prove --known on a depth-4 sample\n",
             f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, `python3 bench/known.py {args}`, "
             f"{os.cpu_count()} cores; load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}.\n",
             f"{what} Known rules: {os.path.relpath(a.known, ROOT)}.\n"]
    tag = "part" if a.candidates else "shard"
    if not os.path.exists(cands):
        rc, wall, cpu, peak, err = timed([b("synth"), "--no-timings", "--max-ops", "4", "--ops", a.ops, "--seed", "1",
                                          "--threads", "1", "-o", cands])
        must(rc, "synth", err)
        lines.append(f"synth: {wall:.0f} s, {peak:.0f} MB peak.\n")
    lines.append("| shard | --known | pairs | proved, derived | proved, not derived | refuted | unknown | rules written | wall s "
                 "| CPU s | peak MB | same rules as with --known |")
    lines.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    checks = []
    for k in [int(x) for x in a.shards.split(",")]:
        out = {}
        # (run, the table's --known cell, prove's extra options): without
        # --known, with it, and with it under --budget
        runs = [("plain", "no", []), ("known", "yes", ["--known", a.known])]
        if a.budget:
            runs.append(("budget", f"yes, {a.budget}", ["--known", a.known] + a.budget.split()))
        for run, label, extra in runs:
            f = os.path.join(a.work, f"{tag}-{k}{'' if run == 'plain' else '-' + run}.tasodb")
            cmd = [b("prove"), cands, "-o", f, "--shard", f"{k}/16", "--jobs", "1", "--no-timings", "--seed", "1",
                   "--axioms", axioms] + extra
            rc, wall, cpu, peak, err = timed(cmd)
            must(rc, " ".join(cmd[1:]), err)
            c = counts(err)
            out[run] = f
            same = ""
            if run == "budget":
                same = "yes" if subprocess.run([b("ruledb"), "diff", f, out["known"]], capture_output=True).returncode == 0 \
                    else "**no**"
            lines.append(f"| {k} | {label} | {c.get('pairs', 0)} | {c['derived']} | "
                         f"{c.get('proved', 0)} | {c.get('refuted', 0)} | {c.get('unknown', 0)} | {c['rules']} | "
                         f"{wall:.1f} | {cpu:.1f} | {peak:.0f} | {same} |")
        both = os.path.join(a.work, f"{tag}-{k}-known+shipped.tasodb")
        rc, _, _, _, err = timed([b("ruledb"), "merge", "-o", both, a.known, out["known"]])
        must(rc, "ruledb merge", err)
        rc, wall, cpu, peak, err = timed([b("prove"), "--derive", both, out["plain"], "--jobs", "1"])
        m = re.search(r"(\d+) rules: (\d+) shipped, (\d+) the reverse of a shipped rule, (\d+) checked: (\d+) derived "
                      r"from them, (\d+) neither", err)
        if rc not in (0, 1) or not m:
            sys.exit(f"known.py: prove --derive failed:\n{err[-2000:]}")
        checks.append(f"- shard {k}: the {m.group(1)} rules written without --known: {m.group(2)} in the known rules "
                      f"or written with --known, {m.group(3)} their reverses, {m.group(5)} derived from them, "
                      f"**{m.group(6)} neither** ({wall:.0f} s).")
    lines.append("\nNothing lost (`prove --derive` of the rules written without --known, from the known rules "
                 "and those written with it, `ruledb merge`d):\n")
    lines += checks
    text = "\n".join(lines) + "\n"
    with open(a.out, "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
