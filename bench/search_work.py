#!/usr/bin/env python3
"""bench/search_work.py - does the work, not the clock, end the e-graph
search? The same model searched on an idle machine and on a loaded one
must give the same bytes.

    python3 bench/search_work.py [--engine out/bin/engine] [--load N]
                                 [--only NAME]... [--out bench/results/search_work.md]

Models: bench/searches.py's (the bench set, bench/unseen.py's exports, the
multi-branch training forms), whichever are present. Per model, with
analytic-cpu costs (`engine optimize MODEL -o OUT --deterministic`):
  idle    the e-graph search alone on the machine, its default limits
          (with --deterministic the time limit is a 600 s safety net, so
          the rounds, e-nodes, passes and the extraction's budget end it):
          final cost, search seconds, stop reason, passes, peak memory;
  loaded  the same command beside N busy loops (--load, default: the
          number of CPUs, a machine twice as busy as it has cores): its
          seconds, and whether it wrote the idle run's bytes;
  10 s    `--time-limit 10` (the default limit of a search that is not
          deterministic) beside the same busy loops: its stop reason and
          whether it still wrote the idle run's bytes (when it did not,
          the clock decided: the work bounds are too wide for that load);
  backtrack  `--search backtrack` at the same 10 s limit, idle: its final
          cost (the e-graph's must be at most that).
Each output is checked against the input in onnxruntime (bench/searches.py's
check: max relative error of seeded random inputs).

Writes --out (markdown) and the same name with .jsonl.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import searches  # noqa: E402
from same_bytes import digest  # noqa: E402


def busy(n):
    """n processes spinning on a core each. @return them (kill when done)."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]


def stop(procs):
    for p in procs:
        p.kill()
        p.wait()


def one(engine, model, search, limit, load, extra=()):
    """A run of searches.run in its own directory, beside `load` busy
    loops. @return its row with the output's digest."""
    with tempfile.TemporaryDirectory() as tmp:
        procs = busy(load)
        try:
            row = searches.run(engine, model, search, limit, "analytic-cpu", tmp, extra)
        finally:
            stop(procs)
        row["digest"] = digest(os.path.join(tmp, f"{search}.onnx"))
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", default=os.path.join(ROOT, "out", "bin", "engine"))
    ap.add_argument("--load", type=int, default=os.cpu_count() or 2, help="busy loops beside the loaded runs")
    ap.add_argument("--only", action="append", default=[], help="model name (file name without .onnx)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "search_work.md"))
    a = ap.parse_args()
    rows = []
    load0 = os.getloadavg()
    for path in searches.models():
        name = os.path.basename(path)[:-5]
        if a.only and name not in a.only:
            continue
        r = {"model": name,
             "idle": one(a.engine, path, "egraph", 600, 0),
             "loaded": one(a.engine, path, "egraph", 600, a.load),
             "limit10": one(a.engine, path, "egraph", 10, a.load),
             "backtrack": one(a.engine, path, "backtrack", 10, 0)}
        rows.append(r)
        i, ld, t = r["idle"], r["loaded"], r["limit10"]
        print(f"search_work.py: {name}: {i.get('after', 0):.1f} us, {i.get('seconds', 0):.2f} s idle, "
              f"{ld.get('seconds', 0):.2f} s loaded ({'same' if ld['digest'] == i['digest'] else 'DIFFERENT'}), "
              f"10 s limit loaded: {t.get('stop')} ({'same' if t['digest'] == i['digest'] else 'DIFFERENT'})",
              flush=True)
    write(a, rows, load0)


def write(a, rows, load0):
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    same = lambda r, k: r[k]["digest"] == r["idle"]["digest"] and r[k]["rc"] == 0  # noqa: E731
    lines = ["# The e-graph search ends by its work, not the clock", "",
             f"`python3 bench/search_work.py` at {commit}, {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, "
             f"{os.cpu_count()} cores, {a.load} busy loops beside the loaded runs; load average at the start "
             f"{load0[0]:.2f}, at the end {os.getloadavg()[0]:.2f}. Costs analytic-cpu (us), seconds the search's "
             "own (saturation and extraction). `same`: the loaded run wrote the idle run's bytes.", "",
             "| model | e-graph cost | backtrack cost (10 s) | search s idle | stop | passes | peak MB | "
             "search s loaded | loaded bytes | 10 s limit loaded: stop | bytes | err |",
             "|---|--:|--:|--:|---|--:|--:|--:|---|---|---|---|"]
    for r in rows:
        i, ld, t, b = r["idle"], r["loaded"], r["limit10"], r["backtrack"]
        lines.append(f"| {r['model']} | {i.get('after', 0):.1f} | {b.get('after', 0):.1f} | "
                     f"{i.get('seconds', 0):.2f} | {i.get('stop')} | {i.get('passes', '-')} | "
                     f"{i.get('peak_mb', 0):.0f} | {ld.get('seconds', 0):.2f} | "
                     f"{'same' if same(r, 'loaded') else '**different**'} | {t.get('stop')} | "
                     f"{'same' if same(r, 'limit10') else '**different**'} | {searches.fmt_err(i.get('err'))} |")
    n = len(rows)
    idle = [r["idle"].get("seconds", 0) for r in rows]
    loaded = [r["loaded"].get("seconds", 0) for r in rows]
    lines += ["",
              f"- loaded runs that wrote the idle run's bytes: {sum(same(r, 'loaded') for r in rows)} of {n}; "
              f"with the 10 s limit: {sum(same(r, 'limit10') for r in rows)} of {n} "
              f"({sum(r['limit10'].get('stop') == 'time limit' for r in rows)} stopped by the clock);",
              f"- search seconds idle: max {max(idle, default=0):.2f}, total {sum(idle):.1f}; loaded: max "
              f"{max(loaded, default=0):.2f}, total {sum(loaded):.1f}; peak memory max "
              f"{max((r['idle'].get('peak_mb', 0) for r in rows), default=0):.0f} MB;",
              f"- the e-graph's final cost against the backtracking search's at 10 s: cheaper on "
              f"{sum(r['idle'].get('after', 0) < r['backtrack'].get('after', 0) - 1e-6 for r in rows)}, dearer on "
              f"{sum(r['idle'].get('after', 0) > r['backtrack'].get('after', 0) + 1e-6 for r in rows)} of {n};",
              f"- errors against the input in onnxruntime: max "
              f"{searches.fmt_err(max((r['idle'].get('err') or 0 for r in rows), default=0))}."]
    searches.save(a.out, lines, rows)
    print("\n".join(lines[-4:]))


if __name__ == "__main__":
    main()
