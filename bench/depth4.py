#!/usr/bin/env python3
"""bench/depth4.py - how much of the depth-4 run the shipped rules derive:
`prove --derive SHIPPED DEPTH4` on a sample, at several bounds, and what
the rules neither shipped nor derived are.

    python3 bench/depth4.py [--bin out/bin] [--shipped ruledb/pruned.tasodb]
                            [--depth4 bench/results/depth4/rules-d4.tasodb]
                            [--every 50] [--bounds 4:2000,8:20000]
                            [--out bench/results/depth4/derive.md]

Per bound (saturation rounds:e-nodes per instance), one `prove --derive
--derive-by detours --every N` (every Nth depth-4 rule the shipped file
lacks: the same sample at every bound), timed with its peak memory. The
rules it reports not derived are sorted into kinds by their text:
  - constants: both sides compute on shape constants alone somewhere
    (an operator over ones, imm, iconv, poolk, dwiconv only: a subgraph a
    model never holds, since the engine folds constant subgraphs);
  - two outputs: a rule of two outputs (without such constants);
  - a split of a concat: one side splits a concat (a detour);
  - other.
Writes --out (markdown) and prints it.
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONST = {"ones", "imm", "iconv", "dwiconv", "poolk", "dim"}


def parse(text):
    """The terms of one side of a rule's text, as nested lists."""
    toks = re.findall(r"\(|\)|[^\s(),]+", text)
    pos = 0

    def term():
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t != "(":
            return t
        out = []
        while toks[pos] != ")":
            out.append(term())
        pos += 1
        return out

    terms = []
    while pos < len(toks):
        terms.append(term())
    return terms


def is_input(t):
    return isinstance(t, str) and re.fullmatch(r"x\d+", t) is not None


def constant(t):
    """1 when t reads no input's values (only shapes, through CONST)."""
    if isinstance(t, str):
        return not is_input(t)
    return t[0] in CONST or all(constant(a) for a in t[1:])


def computes_on_constants(t):
    """1 when t holds an operator, not a constant builder, over constants alone."""
    if isinstance(t, str):
        return False
    if t[0] not in CONST and constant(t):
        return True
    return any(computes_on_constants(a) for a in t[1:])


def kind(line):
    m = re.match(r"not derived: (.*) => (.*?)(\s+\[.*)?$", line)
    if not m:
        return None
    left, right = parse(m.group(1)), parse(m.group(2))
    if any(computes_on_constants(t) for t in left) and any(computes_on_constants(t) for t in right):
        return "constants"
    if len(left) > 1:
        return "two outputs"
    if re.search(r"\(split[01] ", m.group(1) + " " + m.group(2)):
        return "a split of a concat"
    return "other"


KINDS = ["constants", "two outputs", "a split of a concat", "other"]


def run(args, rounds, nodes):
    cmd = ["/usr/bin/time", "-v", os.path.join(args.bin, "prove"), "--derive", args.shipped, args.depth4,
           "--every", str(args.every), "--derive-rounds", str(rounds), "--derive-nodes", str(nodes),
           "--derive-by", "detours"]
    t = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - t
    if p.returncode not in (0, 1):
        sys.exit(f"depth4.py: {' '.join(cmd[2:])} failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
    m = re.search(r"(\d+) rules: (\d+) shipped, (\d+) the reverse of a shipped rule, (\d+) \(a sample\) checked: "
                  r"(\d+) derived from them, (\d+) neither(?: \((\d+) not matchable\))?", p.stderr)
    if not m:
        sys.exit(f"depth4.py: no summary from prove --derive:\n{p.stderr[-2000:]}")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    kinds = {k: 0 for k in KINDS}
    for line in (p.stdout + p.stderr).splitlines():
        k = kind(line.strip())
        if k:
            kinds[k] += 1
    return {"rules": int(m.group(1)), "shipped": int(m.group(2)), "reverse": int(m.group(3)),
            "checked": int(m.group(4)), "derived": int(m.group(5)), "neither": int(m.group(6)),
            "unmatchable": int(m.group(7) or 0), "wall": wall,
            "peak": int(peak.group(1)) / 1024 if peak else 0.0, "kinds": kinds}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "out", "bin"))
    ap.add_argument("--shipped", default="ruledb/pruned.tasodb")
    ap.add_argument("--depth4", default="bench/results/depth4/rules-d4.tasodb")
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--bounds", default="4:2000,8:20000")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "depth4", "derive.md"))
    args = ap.parse_args()
    bounds = []
    for b in args.bounds.split(","):
        r, n = b.split(":")
        bounds.append((int(r), int(n)))
    rows = [(r, n, run(args, r, n)) for r, n in bounds]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    first = rows[0][2]
    lines = ["# Depth 4 against the shipped rules (bench/depth4.py)", "",
             f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, commit {commit}: "
             f"`python3 bench/depth4.py --every {args.every} --bounds {args.bounds}`.", "",
             f"`prove --derive {args.shipped} {args.depth4} --derive-by detours --every {args.every}`: "
             f"of its {first['rules']:,} rules, {first['shipped']} are in the shipped file and "
             f"{first['reverse']} are the reverse of a shipped rule; every {args.every}th of the rest is "
             "checked (the same sample at every bound). Not derived, by kind (bench/depth4.py's "
             "docstring): constants = both sides compute on shape constants alone.", "",
             "| rounds | e-nodes | checked | derived | neither | not matchable | "
             + " | ".join(KINDS) + " | wall s | peak MB |",
             "|--:|--:|--:|--:|--:|--:|" + "--:|" * len(KINDS) + "--:|--:|"]
    for r, n, x in rows:
        share = 100.0 * x["derived"] / x["checked"] if x["checked"] else 0.0
        lines.append(f"| {r} | {n} | {x['checked']} | {x['derived']} ({share:.0f}%) | {x['neither']} | "
                     f"{x['unmatchable']} | " + " | ".join(str(x["kinds"][k]) for k in KINDS)
                     + f" | {x['wall']:.1f} | {x['peak']:.0f} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    print(text, end="")


if __name__ == "__main__":
    main()
