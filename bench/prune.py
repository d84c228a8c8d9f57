#!/usr/bin/env python3
"""bench/prune.py - the shipped ruledb pruned by derivability, and what the
searches make of the pruned set.

    python3 bench/prune.py [--ruledb ruledb/default.tasodb] [--by equation|detours|reach|meet]
                           [--rounds 4] [--nodes 2000] [--only NAME]... [--pruned FILE]
                           [--time-limit 10] [--out bench/results/prune.md]

Steps, each timed with its peak memory (/usr/bin/time -v):
  1. prune, as prove/regen.sh does: `prove --prune-derivable RULEDB -o
     PRUNED` (equations, a rule and its reverse, from the smallest up,
     each dropped when the rules kept before it derive it in the engine's
     e-graph; --by: how, prove's --derive-by) at --rounds and --nodes;
     with --pruned FILE, that file instead, made by that command before
     (its figures from FILE.log, the command's stderr under
     /usr/bin/time -v);
  2. derive: `prove --derive PRUNED RULEDB`, the proof that nothing was
     lost: every rule of RULEDB is in PRUNED or derived from it (at the
     bounds PRUNED was pruned with);
  3. per model (bench/searches.py's: the bench set, bench/unseen.py's
     exports, the multi-branch training forms), both searches with the
     full and the pruned ruledb: `engine optimize MODEL --deterministic
     --search S [--ruledb PRUNED]` (analytic-cpu costs, so the answer does
     not depend on the machine's load); final cost, search seconds, and the
     output against the input in onnxruntime.

Writes --out (markdown) and the same name with .jsonl.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import searches  # noqa: E402


def timed(cmd):
    """Run cmd under /usr/bin/time -v. @return (rc, wall s, peak MB, stderr)."""
    t = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    return p.returncode, time.monotonic() - t, int(m.group(1)) / 1024 if m else 0.0, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "out", "bin"))
    ap.add_argument("--ruledb", default=os.path.join(ROOT, "ruledb", "default.tasodb"))
    ap.add_argument("--by", choices=["equation", "detours", "reach", "meet"], default="equation")
    ap.add_argument("--pruned", help="a pruned ruledb made before (its prune log in FILE.log)")
    ap.add_argument("--derive-from", help="the derive record of an earlier run's .jsonl (same files) instead of "
                                          "running prove --derive again")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--keep", help="also copy the pruned ruledb here")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "prune.md"))
    a = ap.parse_args()
    prove = os.path.join(a.bin, "prove")
    engine = os.path.join(a.bin, "engine")
    with tempfile.TemporaryDirectory() as tmp:
        if a.pruned:
            pruned = a.pruned
            with open(a.pruned + ".log") as f:
                err = f.read()
            m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
            w = re.search(r"Elapsed \(wall clock\) time .*: (?:(\d+):)?(\d+):([\d.]+)", err)
            rc, mb = 0, int(m.group(1)) / 1024 if m else 0.0
            wall = (int(w.group(1) or 0) * 3600 + int(w.group(2)) * 60 + float(w.group(3))) if w else 0.0
        else:
            pruned = os.path.join(tmp, "pruned.tasodb")
            rc, wall, mb, err = timed([prove, "--prune-derivable", a.ruledb, "-o", pruned, "--derive-rounds",
                                       str(a.rounds), "--derive-nodes", str(a.nodes), "--derive-by", a.by])
        m = re.search(r"(\d+) rules, (\d+) not matchable \(dropped\), (\d+) equations .*: (\d+) kept(?: of those in "
                      r"\S+)?, (\d+) derived by the others(?: or left out of that file)?(?: \([^)]*\))?, [\d.]+ s \((\d+) kept again after (\d+) check",
                      err)
        if rc or not m:
            sys.exit(f"prune.py: prove --prune-derivable failed: {err.strip().splitlines()[-1:]}")
        prune = {"wall": wall, "peak_mb": mb, "rounds": a.rounds, "nodes": a.nodes, "rules": int(m.group(1)),
                 "skipped": int(m.group(2)), "equations": int(m.group(3)), "kept": int(m.group(4)),
                 "derived": int(m.group(5)), "restored": int(m.group(6)), "passes": int(m.group(7))}
        print(f"prune.py: prune: {prune}", flush=True)
        if a.keep:
            subprocess.run(["cp", pruned, a.keep], check=True)
        if a.derive_from:
            with open(a.derive_from) as f:
                derive = json.loads(f.readline())["derive"]
        else:
            rc, wall, mb, err = timed([prove, "--derive", pruned, a.ruledb, "--derive-by", a.by])
            m = re.search(r"(\d+) rules: (\d+) shipped, (\d+) the reverse of a shipped rule, \d+ checked: (\d+) derived "
                          r"from them, (\d+) neither .*\(rounds (\d+), e-nodes (\d+)\)", err)
            derive = {"rc": rc, "wall": wall, "peak_mb": mb}
            if m:
                derive.update(rules=int(m.group(1)), shipped=int(m.group(2)), reversed=int(m.group(3)),
                              derived=int(m.group(4)), neither=int(m.group(5)), rounds=int(m.group(6)),
                              nodes=int(m.group(7)))
        print(f"prune.py: derive: {derive}", flush=True)
        rows = []
        for name, path in searches.named_models(a.only):
            r = {"model": name}
            for s in searches.SEARCHES:
                for label, extra in (("full", ["--ruledb", a.ruledb]), ("pruned", ["--ruledb", pruned])):
                    r[f"{s}_{label}"] = searches.run(engine, path, s, a.time_limit, "analytic-cpu", tmp, extra)
            print(f"prune.py: {name}: " + ", ".join(f"{k} {v.get('after', 0):.1f} us {v.get('seconds', 0):.1f} s"
                                                    for k, v in r.items() if k != "model"), flush=True)
            rows.append(r)
    write(a, prune, derive, rows)


def write(a, prune, derive, rows):
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    load = os.getloadavg()
    mode = {"equation": "by equation (both sides saturated together with the rules that have a reverse meet, "
                        "else the right side reached from the left)",
            "detours": "by equation after the identity detours the two sides write are erased",
            "meet": "both sides saturated together meet", "reach": "the right side reached from the left"}[a.by]
    lines = ["# The shipped ruledb pruned by derivability", "",
             f"`python3 bench/prune.py {' '.join(sys.argv[1:])}` at {commit}, {time.strftime('%Y-%m-%d')}, "
             f"2 cores, load average at the end {load[0]:.2f}. Derivation: {mode}; the rounds and e-nodes per "
             f"instance are per step. An equation is a rule and its reverse (the engine reads every rule "
             f"both ways); the pruned file holds one rule per equation kept.", "",
             "| step | rules in | equations | kept | derived | neither | wall s | peak MB |",
             "|---|--:|--:|--:|--:|--:|--:|--:|"]
    p = prune
    lines.append(f"| prune (`prove --prune-derivable`, {p['rounds']} rounds, {p['nodes']} e-nodes) | "
                 f"{p['rules']} | {p['equations']} | {p['kept']} | {p['derived']} | {p['skipped']} not matchable; "
                 f"{p['restored']} kept again after {p['passes']} check(s) against the final set | "
                 f"{p['wall']:.1f} | {p['peak_mb']:.0f} |")
    lines += [f"| derive (`prove --derive PRUNED FULL`, {derive.get('rounds', '?')} rounds, "
             f"{derive.get('nodes', '?')} e-nodes) | {derive.get('rules', '?')} | | {derive.get('shipped', '?')} "
             f"shipped, {derive.get('reversed', '?')} their reverses | {derive.get('derived', '?')} | "
             f"{derive.get('neither', '?')} | {derive['wall']:.1f} | {derive['peak_mb']:.0f} |", "",
             "Per model: `engine optimize MODEL --deterministic --search S` (analytic-cpu costs) with `--ruledb "
             "FULL` and with `--ruledb PRUNED`: final cost (us) and the search's seconds.", "",
             "| model | before | backtrack full | backtrack pruned | egraph full | egraph pruned | "
             "search s b full / pruned | search s e full / pruned | err (pruned) b / e |",
             "|---|--:|--:|--:|--:|--:|--:|--:|---|"]
    tally = {s: [0, 0, 0] for s in searches.SEARCHES}  # cheaper, dearer, same with the pruned set
    secs = {f"{s}_{lab}": [] for s in searches.SEARCHES for lab in ("full", "pruned")}
    for r in rows:
        cells = []
        ok = all(r[k]["rc"] == 0 and "after" in r[k] for k in r if k != "model")
        if not ok:
            lines.append(f"| {r['model']} | failed: " + ", ".join(f"{k} rc {r[k]['rc']}" for k in r if k != "model")
                         + " | | | | | | | |")
            continue
        for s in searches.SEARCHES:
            full, pr = r[f"{s}_full"]["after"], r[f"{s}_pruned"]["after"]
            tally[s][0 if pr < full - 1e-6 * full else 1 if pr > full + 1e-6 * full else 2] += 1
            cells += [f"{full:.1f}", f"{pr:.1f}"]
        for k in secs:
            secs[k].append(r[k].get("seconds", 0))
        b, e = r["backtrack_pruned"], r["egraph_pruned"]
        lines.append(f"| {r['model']} | {r['backtrack_full']['before']:.1f} | {' | '.join(cells)} | "
                     f"{r['backtrack_full'].get('seconds', 0):.1f} / {b.get('seconds', 0):.1f} | "
                     f"{r['egraph_full'].get('seconds', 0):.1f} / {e.get('seconds', 0):.1f} | "
                     f"{searches.fmt_err(b.get('err'))} / {searches.fmt_err(e.get('err'))} |")
    lines.append("")
    for s in searches.SEARCHES:
        c, d, same = tally[s]
        f, p = secs[f"{s}_full"], secs[f"{s}_pruned"]
        tot = f"; search seconds in total {sum(f):.1f} full, {sum(p):.1f} pruned" if f else ""
        lines.append(f"- {s}: with the pruned set cheaper on {c}, dearer on {d}, the same on {same} of "
                     f"{len(rows)}{tot}.")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.splitext(a.out)[0] + ".jsonl", "w") as f:
        f.write(json.dumps({"prune": prune, "derive": derive}) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print("\n".join(lines[-len(searches.SEARCHES):]))


if __name__ == "__main__":
    main()
