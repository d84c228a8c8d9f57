#!/usr/bin/env python3
"""bench/conformance.py - engine optimize over the ONNX backend test data.

    python3 bench/conformance.py [--data DIR] [--subset NAME]... [--limit N]
                                 [--engine PATH] [-j N] [--timeout S]
                                 [--out bench/results/conformance.md]
                                 [--jsonl bench/results/conformance.jsonl]

Source: the Debian package libonnx-testdata (/usr/share/libonnx-testdata/data,
installed with apt-get when missing and we are root), else the onnx pip
package's onnx/backend/test/data (same layout). Subsets: node,
pytorch-converted, pytorch-operator, simple (--subset, repeatable, picks some).
Each test directory has model.onnx and test_data_set_*/{input,output}_*.pb.

For each model:
  - `engine optimize model.onnx -o OUT` (default cost model: analytic-cpu, so
    deterministic) and `engine roundtrip model.onnx -o RT`, each under
    --timeout seconds (default 60); a timeout counts as a refusal;
  - onnxruntime (CPU, 1 thread) on the original with the stored inputs;
  - exit 0: OUT must pass onnx.checker.check_model(full_check=True) (a
    failure counts only when the original passes it), and onnxruntime's
    outputs of OUT on the stored inputs must match the stored outputs:
    max|a-b| <= 1e-4 * max(1, max|ref|) per output (NaNs must sit at the
    same places; non-float outputs exactly). Where onnxruntime's outputs of
    the original already differ from the stored ones, OUT is compared with
    those instead (the engine must not change what the runtime computes).
  - exit non-zero: the engine's message is recorded; a refusal of a model
    onnxruntime runs is a failure of ours.

Outcomes: pass (optimized+match), mismatch, ort-fails-output (ORT runs the
original but not OUT), checker-fail, refused-ort-runs,
refused-ort-fails, ort-fails-original (optimized; nothing to compare with).
Writes the markdown report (counts, then every non-passing model with its
message) and one JSON line per model.
"""
import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

SUBSETS = ["node", "pytorch-converted", "pytorch-operator", "simple"]
DEBIAN_DATA = "/usr/share/libonnx-testdata/data"
RTOL = 1e-4

OUTCOMES = [
    ("pass", "optimized, outputs match"),
    ("mismatch", "optimized, outputs differ"),
    ("ort-fails-output", "optimized, onnxruntime runs the original but not the output"),
    ("checker-fail", "optimized, output fails onnx.checker (full_check) while the original passes"),
    ("refused-ort-runs", "refused while onnxruntime runs the original (our failure)"),
    ("refused-ort-fails", "refused, and onnxruntime cannot run the original either"),
    ("ort-fails-original", "optimized, onnxruntime cannot run the original (only checked with onnx.checker)"),
]


def find_data(explicit):
    if explicit:
        return explicit
    if not os.path.isdir(DEBIAN_DATA) and os.geteuid() == 0 and shutil.which("apt-get"):
        print("conformance: installing libonnx-testdata", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "libonnx-testdata"],
                       stdout=subprocess.DEVNULL, check=False)
    if os.path.isdir(os.path.join(DEBIAN_DATA, "node")):
        return DEBIAN_DATA
    pip_data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    if os.path.isdir(pip_data):
        return pip_data
    sys.exit("conformance: no ONNX test data (apt-get install libonnx-testdata)")


def read_value(path, type_proto):
    """A stored input/output as numpy (tensor) or list (sequence) or None/optional."""
    with open(path, "rb") as f:
        data = f.read()
    kind = type_proto.WhichOneof("value") if type_proto is not None else "tensor_type"
    if kind == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return numpy_helper.to_list(seq)
    if kind == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        return numpy_helper.to_optional(opt)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def load_sets(test_dir, model):
    """[(inputs dict, [ref outputs])] for each test_data_set_*."""
    graph_inputs = [i for i in model.graph.input
                    if i.name not in {x.name for x in model.graph.initializer}]
    sets = []
    for d in sorted(glob.glob(os.path.join(test_dir, "test_data_set_*"))):
        n_in = len(glob.glob(os.path.join(d, "input_*.pb")))
        n_out = len(glob.glob(os.path.join(d, "output_*.pb")))
        feeds = {}
        for k in range(n_in):
            vi = graph_inputs[k] if k < len(graph_inputs) else None
            feeds[vi.name if vi else f"input_{k}"] = read_value(
                os.path.join(d, f"input_{k}.pb"), vi.type if vi else None)
        refs = []
        for k in range(n_out):
            vo = model.graph.output[k] if k < len(model.graph.output) else None
            refs.append(read_value(os.path.join(d, f"output_{k}.pb"), vo.type if vo else None))
        sets.append((feeds, refs))
    return sets


def ort_run(path, sets):
    """Outputs of onnxruntime per data set, or raise."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    results = []
    for feeds, _ in sets:
        # Feed by the session's input names (in order) when the stored names differ.
        if set(feeds) != set(names) and len(feeds) == len(names):
            feeds = dict(zip(names, feeds.values()))
        results.append(sess.run(None, feeds))
    return results


def close(a, b):
    """(ok, why) for one output value: a from the run, b the reference."""
    if isinstance(b, list) or isinstance(a, list):
        if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
            return False, "sequence length/type differs"
        for x, y in zip(a, b):
            ok, why = close(x, y)
            if not ok:
                return ok, why
        return True, ""
    if a is None or b is None:
        return (a is None and b is None), "optional presence differs"
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False, f"shape {list(a.shape)} vs {list(b.shape)}"
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        if a.dtype.kind in "OSU" or b.dtype.kind in "OSU":
            eq = np.array_equal(a.astype(str), b.astype(str))
        else:
            eq = np.array_equal(a, b)
        return eq, "" if eq else "values differ (exact)"
    a64, b64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), \
        b.astype(np.complex128 if b.dtype.kind == "c" else np.float64)
    na, nb = np.isnan(a64), np.isnan(b64)
    if not np.array_equal(na, nb):
        return False, "NaN positions differ"
    m = ~na
    if not m.any():
        return True, ""
    fa, fb = a64[m], b64[m]
    inf = np.isinf(fb) | np.isinf(fa)
    if inf.any():
        if not np.array_equal(fa[inf], fb[inf]):
            return False, "inf values differ"
        fa, fb = fa[~inf], fb[~inf]
        if fa.size == 0:
            return True, ""
    err = float(np.max(np.abs(fa - fb)))
    scale = max(1.0, float(np.max(np.abs(fb))))
    if err <= RTOL * scale:
        return True, ""
    return False, f"max|a-b| = {err:.3g} (limit {RTOL * scale:.3g})"


def compare(outs, sets):
    """(ok, why) for all data sets: outs[s][k] against sets[s][1][k]."""
    for s, (got, (_, refs)) in enumerate(zip(outs, sets)):
        if len(got) != len(refs):
            return False, f"{len(got)} outputs, expected {len(refs)}"
        for k, (a, b) in enumerate(zip(got, refs)):
            ok, why = close(a, b)
            if not ok:
                return False, f"set {s} output {k}: {why}"
    return True, ""


def first_line(text):
    text = text.strip()
    lines = [l for l in text.splitlines() if l.strip()]
    # The engine's own message: its last line that starts with "engine:".
    msgs = [l for l in lines if l.startswith("engine:")]
    line = (msgs[-1] if msgs else lines[-1]) if lines else ""
    return line[:300]


def run_engine(engine, cmd, src, dst, timeout):
    t0 = time.perf_counter()
    try:
        p = subprocess.run([engine, cmd, src, "-o", dst] + (["-q"] if cmd == "optimize" else []),
                           capture_output=True, text=True, timeout=timeout, errors="replace")
        return p.returncode, first_line(p.stderr + "\n" + p.stdout) if p.returncode else "", \
            time.perf_counter() - t0
    except subprocess.TimeoutExpired:
        return -1, f"timeout after {timeout} s", time.perf_counter() - t0


def checker(path):
    try:
        onnx.checker.check_model(path, full_check=True)
        return ""
    except Exception as e:  # noqa: BLE001 - any checker complaint
        return (str(e).strip().splitlines() or ["?"])[0][:300]


def one(test_dir, subset, engine, timeout):
    name = os.path.basename(test_dir)
    src = os.path.join(test_dir, "model.onnx")
    r = {"subset": subset, "model": name}
    tmp = tempfile.mkdtemp(prefix="conf-")
    try:
        model = onnx.load(src)
        r["opset"] = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
        r["op_types"] = sorted({n.op_type for n in model.graph.node})
        sets = load_sets(test_dir, model)
        opt, rt = os.path.join(tmp, "opt.onnx"), os.path.join(tmp, "rt.onnx")
        rc, msg, secs = run_engine(engine, "optimize", src, opt, timeout)
        r.update(rc=rc, message=msg, seconds=round(secs, 3))
        rrc, rmsg, _ = run_engine(engine, "roundtrip", src, rt, timeout)
        r.update(roundtrip_rc=rrc, roundtrip_message=rmsg)
        try:
            orig_out = ort_run(src, sets)
            r["ort_original"] = "ok"
        except Exception as e:  # noqa: BLE001
            orig_out = None
            r["ort_original"] = (str(e).strip().splitlines() or ["?"])[0][:300]
        if orig_out is not None:
            ok, why = compare(orig_out, sets)
            r["ort_matches_ref"] = ok
            if not ok:
                r["ort_ref_note"] = why
        if rc != 0:
            r["outcome"] = "refused-ort-runs" if orig_out is not None else "refused-ort-fails"
            return r
        chk = checker(opt)
        if chk:
            chk_orig = checker(src)
            if not chk_orig:
                r.update(outcome="checker-fail", message=chk)
                return r
            r["checker_note"] = "output and original both fail the checker: " + chk
        if orig_out is None:
            r["outcome"] = "ort-fails-original"
            return r
        try:
            opt_out = ort_run(opt, sets)
        except Exception as e:  # noqa: BLE001
            r.update(outcome="ort-fails-output",
                     message=(str(e).strip().splitlines() or ["?"])[0][:300])
            return r
        ok, why = compare(opt_out, sets)
        if not ok and not r["ort_matches_ref"]:
            ok2, why2 = compare(opt_out, [(None, o) for o in orig_out])
            if ok2:
                ok, r["compare_note"] = True, "matches onnxruntime on the original (which differs from the stored outputs)"
        r["outcome"] = "pass" if ok else "mismatch"
        if not ok:
            r["message"] = why
        return r
    except Exception as e:  # noqa: BLE001 - a broken test dir must not stop the sweep
        r.update(outcome="harness-error", message=f"{type(e).__name__}: {e}"[:300])
        return r
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def md(text):
    """TEXT safe in a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def normalize(msg):
    """A refusal message without the engine's "engine: PATH: " prefix, for grouping."""
    m = re.sub(r"^engine:\s*\S+\.onnx:\s*", "", msg)
    return re.sub(r"/\S+", "FILE", m)


def report(rows, data, engine, elapsed):
    count = collections.Counter(r["outcome"] for r in rows)
    lines = ["# Conformance: engine optimize on the ONNX backend test data", ""]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    import onnxruntime
    lines += [f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, commit {commit}, engine `{engine}`,",
              f"data `{data}` (subsets: {', '.join(sorted({r['subset'] for r in rows}))}),",
              f"onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__}; "
              f"{len(rows)} models in {elapsed:.0f} s. Tolerance: max|a-b| <= {RTOL:g} * max(1, max|ref|).",
              "Produced by `python3 bench/conformance.py` (see its docstring for the rules).", "",
              "| outcome | models |", "| --- | ---: |"]
    for key, label in OUTCOMES + [("harness-error", "harness error (test data unreadable)")]:
        if count.get(key) or key != "harness-error":
            lines.append(f"| {label} | {count.get(key, 0)} |")
    lines.append(f"| total | {len(rows)} |")
    lines.append("")
    by_subset = collections.defaultdict(collections.Counter)
    for r in rows:
        by_subset[r["subset"]][r["outcome"]] += 1
    lines += ["| subset | " + " | ".join(k for k, _ in OUTCOMES) + " |",
              "| --- |" + " ---: |" * len(OUTCOMES)]
    for s in sorted(by_subset):
        lines.append(f"| {s} | " + " | ".join(str(by_subset[s].get(k, 0)) for k, _ in OUTCOMES) + " |")
    lines.append("")
    rt_fail = [r for r in rows if r.get("roundtrip_rc") not in (0, None)]
    lines.append(f"`engine roundtrip` fails on {len(rt_fail)} models "
                 f"({sum(1 for r in rt_fail if r['rc'] != 0)} of them also refused by optimize).")
    notes = sum(1 for r in rows if r.get("compare_note"))
    if notes:
        lines.append(f"{notes} passing models match onnxruntime's outputs on the original, which "
                     "itself differs from the stored outputs beyond the tolerance.")
    lines.append("")
    refused = [r for r in rows if r["outcome"].startswith("refused")]
    if refused:
        msgs = collections.Counter(normalize(r["message"]) for r in refused)
        lines += ["## Most common refusal messages", "", "| models | message |", "| ---: | --- |"]
        for m, n in msgs.most_common(25):
            lines.append(f"| {n} | {md(m)} |")
        lines.append("")
        by_opset = collections.Counter(r.get("opset") for r in refused if r["outcome"] == "refused-ort-runs")
        lines += ["Default-domain opset of the models refused while onnxruntime runs them: " +
                  ", ".join(f"opset {o}: {n}" for o, n in sorted(by_opset.items(), key=lambda kv: str(kv[0]))),
                  ""]
        ops = collections.Counter(op for r in refused if r["outcome"] == "refused-ort-runs"
                                  for op in r.get("op_types", []))
        lines += ["Op types in the models refused while onnxruntime runs them (a model counts "
                  "once per op type it contains): " +
                  ", ".join(f"{o} {n}" for o, n in ops.most_common(40)), ""]
    lines += ["## Every non-passing model", "",
              "| subset | model | outcome | roundtrip | message |", "| --- | --- | --- | --- | --- |"]
    for r in sorted(rows, key=lambda r: (r["outcome"], r["subset"], r["model"])):
        if r["outcome"] == "pass":
            continue
        msg = r.get("message", "")
        if r["outcome"] == "refused-ort-fails":
            msg += f" (ort: {r.get('ort_original', '')})"
        if r["outcome"] == "ort-fails-original":
            msg = f"ort: {r.get('ort_original', '')}"
        msg = msg.replace(data.rstrip("/") + "/", "")
        rt = "ok" if r.get("roundtrip_rc") == 0 else f"rc {r.get('roundtrip_rc')}"
        lines.append(f"| {r['subset']} | {r['model']} | {r['outcome']} | {rt} | "
                     f"{md(msg)} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data")
    ap.add_argument("--subset", action="append", choices=SUBSETS)
    ap.add_argument("--limit", type=int, help="at most N models per subset")
    ap.add_argument("--engine", default="out/bin/engine")
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--out", default="bench/results/conformance.md")
    ap.add_argument("--jsonl", default="bench/results/conformance.jsonl")
    ap.add_argument("--from-jsonl", metavar="FILE",
                    help="only rewrite the report from a previous run's JSON lines")
    args = ap.parse_args()
    if args.from_jsonl:
        with open(args.from_jsonl) as f:
            rows = [json.loads(l) for l in f if l.strip()]
        meta = rows.pop(0) if rows and "meta" in rows[0] else {"meta": {}}
        m = meta["meta"]
        text = report(rows, m.get("data", args.data or DEBIAN_DATA), m.get("engine", args.engine),
                      m.get("elapsed", sum(r.get("seconds", 0) for r in rows)))
        with open(args.out, "w") as f:
            f.write(text)
        print(text.split("\n## ")[0])
        return
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if not os.access(args.engine, os.X_OK):
        sys.exit(f"conformance: no {args.engine} (run ninja)")
    engine = os.path.abspath(args.engine)
    data = find_data(args.data)
    jobs = []
    for s in args.subset or SUBSETS:
        dirs = sorted(d for d in glob.glob(os.path.join(data, s, "*"))
                      if os.path.isfile(os.path.join(d, "model.onnx")))
        jobs += [(d, s) for d in dirs[:args.limit]]
    t0 = time.perf_counter()
    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
        futs = [ex.submit(one, d, s, engine, args.timeout) for d, s in jobs]
        for k, f in enumerate(futs):
            r = f.result()
            rows.append(r)
            if r["outcome"] != "pass":
                print(f"[{k + 1}/{len(jobs)}] {r['subset']}/{r['model']}: {r['outcome']}: "
                      f"{r.get('message') or r.get('ort_original', '')}", file=sys.stderr, flush=True)
            elif (k + 1) % 50 == 0:
                print(f"[{k + 1}/{len(jobs)}]", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - t0
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.jsonl, "w") as f:
        f.write(json.dumps({"meta": {"data": data, "engine": args.engine,
                                     "elapsed": round(elapsed, 1)}}) + "\n")
        for r in rows:
            f.write(json.dumps(r, default=str) + "\n")
    text = report(rows, data, args.engine, elapsed)
    with open(args.out, "w") as f:
        f.write(text)
    print(text.split("\n## ")[0])


if __name__ == "__main__":
    main()
