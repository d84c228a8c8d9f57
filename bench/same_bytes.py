#!/usr/bin/env python3
"""same_bytes.py - do two engine builds write the same bytes?

Runs `engine optimize --deterministic MODEL -o OUT` with engine A and with
engine B on every model (the bench set in bench/cache, bench/unseen.py's
exports in bench/cache/unseen, and the test corpus test/corpus/onnx by
default) and compares what each wrote: the output file, its external data
file if any, and the exit status. A refactoring that must not change
behaviour shows "same" on every row; a change that should alter some
models shows which ones.

    python3 bench/same_bytes.py --a /tmp/old/out/bin/engine --b out/bin/engine
    python3 bench/same_bytes.py --a A --b B --models bench/cache/unseen/ts_t5enc.onnx

Exit status: 0 when every model is the same, 1 when one differs, 2 on a
usage error. The two engines run side by side (one process each).
"""
import argparse
import glob
import hashlib
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def models_of(pats):
    """The files matching each pattern (relative to the tree), in order."""
    out = []
    for p in pats:
        out += sorted(glob.glob(os.path.join(ROOT, p)))
    return out


def default_models():
    return models_of(["bench/cache/*.onnx", "bench/cache/unseen/*.onnx", "test/corpus/onnx/*.onnx"])


def digest(path):
    if not os.path.exists(path):
        return "-"
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def describe(engine):
    """The engine binary and, when it sits in a checkout's out/bin, that checkout's commit."""
    tree = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(engine))))
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=tree,
                           capture_output=True, text=True)
    if head.returncode:
        return engine
    return f"{engine} (commit {head.stdout.strip()}{' + changes' if dirty.stdout.strip() else ''})"


def run(engine, model, outdir, extra):
    out = os.path.join(outdir, os.path.basename(model))
    p = subprocess.run([engine, "optimize", "--deterministic", *extra, model, "-o", out],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # the first line of an error says what went wrong; progress lines vary
    first_err = p.stderr.strip().splitlines()[-1] if p.returncode and p.stderr.strip() else ""
    return (p.returncode, digest(out), digest(out + ".data"), first_err)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="engine binary A (e.g. a build of the base commit)")
    ap.add_argument("--b", required=True, help="engine binary B (e.g. out/bin/engine)")
    ap.add_argument("--models", nargs="*", help="ONNX files (default: bench set, unseen, corpus)")
    ap.add_argument("--extra", default="", help="more engine options, space-separated")
    ap.add_argument("--report", help="also write the table here (markdown)")
    a = ap.parse_args()
    for e in (a.a, a.b):
        if not os.access(e, os.X_OK):
            print(f"same_bytes: {e}: not an executable", file=sys.stderr)
            return 2
    models = a.models if a.models else default_models()
    extra = a.extra.split()
    rows, n_diff = [], 0
    with tempfile.TemporaryDirectory() as da, tempfile.TemporaryDirectory() as db, \
            ThreadPoolExecutor(2) as pool:
        for m in models:
            fa = pool.submit(run, a.a, m, da, extra)
            fb = pool.submit(run, a.b, m, db, extra)
            ra, rb = fa.result(), fb.result()
            same = ra == rb
            n_diff += not same
            name = os.path.relpath(m, ROOT)
            rows.append(f"| {name} | {ra[0]} | {rb[0]} | {ra[1]} | {rb[1]} | {'same' if same else 'DIFFERS'} |")
            print(rows[-1], flush=True)
    head = ["| model | exit A | exit B | output A | output B | |", "|---|--:|--:|---|---|---|"]
    summary = f"{len(models) - n_diff} of {len(models)} models the same, {n_diff} differ"
    print(summary)
    if a.report:
        with open(a.report + ".tmp", "w") as f:
            f.write(f"# same_bytes: A {describe(a.a)} against B {describe(a.b)}\n\n"
                    f"`engine optimize --deterministic {a.extra} MODEL -o OUT` with each; "
                    "`python3 bench/same_bytes.py` wrote this.\n\n")
            f.write("\n".join(head + rows) + "\n\n" + summary + "\n")
        os.replace(a.report + ".tmp", a.report)
    return 1 if n_diff else 0


if __name__ == "__main__":
    sys.exit(main())
