#!/usr/bin/env python3
"""Per-stage figures of a divided rule generation (prove/divided/).

    python3 bench/divided_report.py WORKDIR [--out FILE]

Reads WORKDIR/config (the shard counts) and each step's log, where
prove/divided/step.sh records GNU time's "step.sh: used:" line per
attempt, and prints a markdown table: per stage the steps done of those
there are, their summed wall and CPU time, the median and largest step's
CPU, the largest peak memory; then the steps not done yet. A step that
ran more than once (a driver restarted, a retry) counts its last attempt;
a step done by a driver that did not measure it is done, not measured.
For bench/results/regen.md's depth-4 section.
"""
import argparse
import os
import re
import statistics
import sys

USED = re.compile(r"^step\.sh: used: wall ([\d.]+) s, cpu ([\d.]+) s user \+ ([\d.]+) s sys, "
                  r"peak RSS (\d+) KB, exit (\d+)")
STAGES = ("synth", "part", "candidates", "prove", "final")


def config(workdir):
    vals = {}
    with open(os.path.join(workdir, "config")) as f:
        for line in f:
            m = re.match(r"^(N|PARTS|NP)=(\d+)$", line.strip())
            if m:
                vals[m.group(1)] = int(m.group(2))
    return vals


def steps(cfg):
    """(stage, log tag, output path relative to WORKDIR or None) of every step."""
    for k in range(cfg["N"]):
        yield "synth", f"synth-{k}", f"synth/shard-{k}.shd"
    for p in range(cfg["PARTS"]):
        yield "part", f"part-{p}", f"synth/part-{p}.tasodb"
    yield "candidates", "candidates", "candidates.tasodb"
    for k in range(cfg["NP"]):
        yield "prove", f"prove-{k}", f"prove/shard-{k}.tasodb"
    yield "final", "final", None


def last_use(path):
    """The last successful attempt's (wall, cpu, peak MB) in a step's log, or None."""
    found = None
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = USED.match(line)
                if m and m.group(5) == "0":
                    wall, user, sys_, kb = float(m.group(1)), float(m.group(2)), float(m.group(3)), int(m.group(4))
                    found = (wall, user + sys_, kb / 1024.0)
    except FileNotFoundError:
        pass
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workdir")
    ap.add_argument("--out", help="write the table here too")
    a = ap.parse_args()
    try:
        cfg = config(a.workdir)
    except OSError as e:
        sys.exit(f"divided_report.py: {e} (run a driver first)")
    rows, missing = [], []
    by = {s: [] for s in STAGES}
    total = {s: 0 for s in STAGES}
    done = {s: 0 for s in STAGES}
    for stage, tag, out in steps(cfg):
        total[stage] += 1
        use = last_use(os.path.join(a.workdir, "logs", tag + ".log"))
        there = os.path.exists(os.path.join(a.workdir, out)) if out else use is not None
        done[stage] += there
        if there and use:
            by[stage].append(use)
        elif not there:
            missing.append(tag)
    rows.append("| stage | steps done | of them measured | wall s (sum) | CPU s (sum) | CPU s per step (median, max) "
                "| peak RSS MB (max) |")
    rows.append("|---|---|--:|--:|--:|--:|--:|")
    for s in STAGES:
        u = by[s]
        if not u:
            rows.append(f"| {s} | {done[s]} of {total[s]} | 0 | | | | |")
            continue
        cpu = [x[1] for x in u]
        rows.append(f"| {s} | {done[s]} of {total[s]} | {len(u)} | {sum(x[0] for x in u):.0f} | {sum(cpu):.0f} | "
                    f"{statistics.median(cpu):.0f}, {max(cpu):.0f} | {max(x[2] for x in u):.0f} |")
    rows.append("")
    rows.append("Not done: " + (", ".join(missing) if missing else "none") + ".")
    text = "\n".join(rows) + "\n"
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
