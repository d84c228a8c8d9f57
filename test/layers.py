#!/usr/bin/env python3
"""test/layers.py - the dependency rules of the source tree, checked.

    python3 test/layers.py [--build out] [--graph]

Four checks, each listing what breaks it:
  1. no circle of #include lines between files, anywhere in the repo
     (a file's "x.h" resolved beside it first, then by the build's -I
     folders, as the compiler does);
  2. no circle of calls between source files: an object file that leaves
     symbol s undefined (nm -u) calls the file whose object defines it
     (nm --defined-only), over every object of the release build;
  3. engine/'s folders in layers: a file of one folder includes or calls
     only files of its own folder or of a folder below it in LAYERS (the
     other programs' libraries, opspecs/ and ruledb/, lie below them all);
  4. no file in engine/ over 1,000 lines.
--graph prints the folder-level arrows (with how many file arrows each
stands for) instead of only the verdict. Exit status 0 when all hold, 1
when one does not, 2 when the build is missing (run ninja first).
"""
import argparse
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# engine/'s folders, bottom first: each may use only those before it.
LAYERS = ["sys", "ir", "proto", "shapes", "fold", "onnx", "cost", "rewrite", "search", "egraph", "verify",
          "pipeline", "api"]
PROGRAMS = ["opspecs", "ruledb", "synth", "prove", "engine", "test"]
MAX_LINES = 1000
SOURCE_EXT = (".c", ".h", ".cu")


def sources():
    out = []
    for prog in PROGRAMS:
        for d, _, files in os.walk(os.path.join(ROOT, prog)):
            if "/corpus" in d:
                continue
            out += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if f.endswith(SOURCE_EXT)]
    return sorted(out)


def include_dirs(files):
    """The build's -I folders (configure's base_cflags: each program's
    folder), then any other folder holding headers, searched after the
    including file's own folder."""
    first = ["opspecs", "ruledb", "synth", "prove", "engine"]
    return first + sorted({os.path.dirname(f) for f in files if f.endswith(".h")} - set(first))


def include_graph(files):
    dirs = include_dirs(files)
    known = set(files)
    edges = collections.defaultdict(set)
    pat = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for f in files:
        with open(os.path.join(ROOT, f), errors="replace") as fh:
            text = fh.read()
        for name in pat.findall(text):
            for d in [os.path.dirname(f)] + dirs:
                cand = os.path.normpath(os.path.join(d, name))
                if cand in known:
                    if cand != f:
                        edges[f].add(cand)
                    break
    return edges


def objects(build):
    """Object file -> its source: the first dependency ninja recorded for
    it (ninja -t deps; the .d files are folded into ninja's log)."""
    out = subprocess.run(["ninja", "-t", "deps"], cwd=ROOT, capture_output=True, text=True).stdout
    objs, cur = {}, None
    prefix = os.path.join(build, "obj") + "/"
    for line in out.splitlines():
        if line and not line[0].isspace():
            o = line.split(":")[0]
            cur = o if o.startswith(prefix) and o.endswith(".o") else None
        elif cur and line.strip():
            src = line.strip()
            if (src.split("/")[0] in PROGRAMS and src.endswith((".c", ".cu")) and
                    os.path.exists(os.path.join(ROOT, cur)) and os.path.exists(os.path.join(ROOT, src))):
                objs[os.path.join(ROOT, cur)] = src
            cur = None
    return objs


def nm(obj, undefined):
    args = ["nm", "-u", obj] if undefined else ["nm", "--defined-only", "-g", obj]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def call_graph(build):
    objs = objects(build)
    defined = {}
    for o, src in objs.items():
        for s in nm(o, False):
            defined.setdefault(s, set()).add(src)
    edges = collections.defaultdict(set)
    for o, src in objs.items():
        for s in nm(o, True):
            for dst in defined.get(s, ()):
                if dst != src:
                    edges[src].add(dst)
    return edges, len(objs)


def circles(edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    nodes = set(edges) | {d for ds in edges.values() for d in ds}

    def visit(v):
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def folder(path):
    """A file's unit for the folder checks: engine/<layer>, else its program."""
    parts = path.split("/")
    if parts[0] == "engine" and len(parts) > 2:
        return "engine/" + parts[1]
    return parts[0]


def rank(unit):
    if unit in ("opspecs", "ruledb"):
        return -1
    if unit.startswith("engine/") and unit[7:] in LAYERS:
        return LAYERS.index(unit[7:])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="out", help="the release build folder (default out)")
    ap.add_argument("--graph", action="store_true", help="print the folder-level arrows")
    ap.add_argument("--tap", action="store_true", help="one TAP line per check (test/run)")
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(ROOT, a.build, "obj")):
        print(f"layers.py: {a.build}/obj missing: run ninja first", file=sys.stderr)
        return 2
    files = sources()
    inc = include_graph(files)
    calls, n_objs = call_graph(a.build)
    bad = []
    checks = {"no circle of includes": [], "no circle of calls": [], "engine folders in layers": [],
              f"no engine file over {MAX_LINES} lines": []}
    names = list(checks)
    for c in circles(inc):
        checks[names[0]].append("include circle: " + " -> ".join(c))
    for c in circles(calls):
        checks[names[1]].append("call circle: " + " <-> ".join(c))
    arrows = collections.Counter()
    for kind, edges in (("includes", inc), ("calls", calls)):
        for src, dsts in sorted(edges.items()):
            for dst in sorted(dsts):
                fs, fd = folder(src), folder(dst)
                if fs == fd:
                    continue
                arrows[(fs, fd)] += 1
                rs, rd = rank(fs), rank(fd)
                if fs.startswith("engine/") and (rs is None or rd is None or rd >= rs):
                    checks[names[2]].append(f"upward or unknown layer: {src} {kind} {dst} ({fs} -> {fd})")
    for f in files:
        if f.startswith("engine/"):
            with open(os.path.join(ROOT, f), errors="replace") as fh:
                n = sum(1 for _ in fh)
            if n > MAX_LINES:
                checks[names[3]].append(f"too long: {f} has {n} lines (at most {MAX_LINES})")
    bad = [line for name in names for line in checks[name]]
    if a.tap:
        print(f"1..{len(names)}")
        for k, name in enumerate(names, 1):
            print(("not ok" if checks[name] else "ok") + f" {k} - {name}")
            for line in checks[name]:
                print("# " + line)
        return 1 if bad else 0
    if a.graph:
        for (fs, fd), n in sorted(arrows.items()):
            print(f"{fs} -> {fd} ({n})")
    for line in bad:
        print(line)
    n_inc = sum(len(v) for v in inc.values())
    n_call = sum(len(v) for v in calls.values())
    print(f"layers.py: {len(files)} sources, {n_inc} include arrows, {n_objs} objects, {n_call} call arrows, "
          f"{len({k for k in arrows})} folder arrows: " + (f"{len(bad)} problems" if bad else "all hold"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
