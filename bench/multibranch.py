#!/usr/bin/env python3
"""bench/multibranch.py - structural re-parameterization: multi-branch conv
blocks that are linear up to their Relu and collapse into one Conv, through
`engine optimize`, against the hand collapse, in onnxruntime.

    python3 bench/multibranch.py [--engine out/bin/engine] [--engine-args "..."]
                                 [--only NAME]... [--no-engine] [--rounds N]
                                 [--threads 1,2] [--cache bench/cache/multibranch]
                                 [--out bench/results/multibranch.md] [--user-cost-cache]

Pairs (TRAIN: the branches as separate nodes; REF: the same function
collapsed by hand):
  blocks  test/multibranch_blocks.py's families (16 channels, 14x14), form
          "bn" (Conv -> BatchNormalization nodes) under the family's name,
          and form "ts" (as torch's exporters write it: Conv+BN pre-folded
          into a Conv with a bias, BN-only branches kept) as NAME_ts where
          it differs; REF is the module's numpy collapse. Written anew into
          CACHE/blocks/ on every run (deterministic, milliseconds).
  nets    timm models at 1x3x224x224, random weights (pretrained=False,
          eval mode; torch.manual_seed(0), then every BatchNorm's running
          mean/var and affine weight/bias randomised so no BN is the
          identity): repvgg_a0, mobileone_s0 (depthwise multi-branch),
          repghostnet_050 (a batchnorm-only branch beside a depthwise conv
          of the same conv output), repvit_m1 (RepViT: depthwise 3x3 +
          1x1 + identity, summed) and fastvit_t8 (FastViT: MobileOne
          blocks, a layer scale by a parameter on each mixer).
          TRAIN: the model as built; REF: timm.utils.model.
          reparameterize_model(model) (which calls each block's
          reparameterize()). Both exported with the TorchScript exporter
          (torch.onnx.export(..., dynamo=False, opset_version=17), input
          "x", output "y"), once, into CACHE/NAME_{train,ref}.onnx (kept
          between runs; delete them to export again). torch and timm are
          imported only here: the blocks need neither.
--only NAME (repeatable, or a,b,...) picks pairs by name; "blocks" and
"nets" name the groups. Default: all.

For each pair:
  - Conv nodes (Conv and FusedConv) in TRAIN, REF and OUT;
  - unless --no-engine: `ENGINE optimize TRAIN -o OUT ARGS` (ARGS: the
    --engine-args, default none: the engine's default command), its exit
    status, wall time, rules applied and what its verify wrote (the input,
    the search result, ...); with a cost cache of this run's own (a new
    TASOC_CACHE_DIR, as a new user has: kernels timed in an earlier run,
    perhaps beside other work, and verify's cached choices decide nothing;
    --user-cost-cache: the caller's);
  - onnxruntime (CPU, ORT_DISABLE_ALL, one N(0,1) input, test/
    multibranch_blocks.check): max |a - b| / max |a| of REF and of OUT
    against TRAIN;
  - timing at each --threads count (default 1,2): one session per model
    (CPU provider, ORT_ENABLE_ALL: the user's setting; that many intra-op
    threads, no spin-waiting, sequential execution; bench/ort_compare.
    session), 3 warm-up runs each, then --rounds rounds (default 30 for
    blocks, 20 for nets) that run each model once in turn, the order
    reversed every other round; a model of under 5 ms runs as many times
    in a row as make 5 ms (engine/verify/ort_time.py's rule, the count set
    by TRAIN), its time the mean. TRAIN runs a second time in every round
    (the A/A: the machine's noise). Per round the ratios TRAIN/REF,
    TRAIN/OUT, REF/OUT; reported: medians [25th-75th percentiles], and the
    median ms of each model.
OUT/REF speed (REF time / OUT time per round, median) >= 0.95 is the
target: the engine's output at least 95% as fast as the hand collapse.

Writes --out (markdown) and the same name with .jsonl (one row per pair).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test"))
sys.path.insert(0, os.path.join(ROOT, "engine", "verify"))
import report  # noqa: E402 (after the path)

NETS = {"repvgg_a0": "repvgg_a0", "mobileone_s0": "mobileone_s0", "repghostnet_050": "repghostnet_050",
        "repvit_m1": "repvit_m1", "fastvit_t8": "fastvit_t8"}
CONV_OPS = ("Conv", "FusedConv")
TARGET = 0.95


def quart(v):
    from ort_time import pct  # the percentile verify reports with
    return {"median": pct(v, 0.5), "lo": pct(v, 0.25), "hi": pct(v, 0.75)}


def conv_count(path):
    import onnx
    m = onnx.load(path, load_external_data=False)
    return sum(n.op_type in CONV_OPS for n in m.graph.node)


def export_net(name, train, ref):
    """Export timm model `name` (BN randomised) to train, and its
    reparameterize_model() to ref. @return notes: which reparameterize was
    used, torch's own max rel err of the collapse."""
    import warnings
    import torch
    import timm
    warnings.filterwarnings("ignore")
    try:
        from timm.utils.model import reparameterize_model
        how = "timm.utils.model.reparameterize_model"
    except ImportError:
        try:
            from timm.models import reparameterize_model
            how = "timm.models.reparameterize_model"
        except ImportError:
            reparameterize_model, how = None, "each module's reparameterize() / switch_to_deploy()"
    torch.manual_seed(0)
    m = timm.create_model(NETS[name], pretrained=False).eval()
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
                mod.running_mean.normal_(0.0, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
                if mod.weight is not None:
                    mod.weight.uniform_(0.5, 1.5)
                    mod.bias.normal_(0.0, 0.1)
    if reparameterize_model is not None:
        r = reparameterize_model(m)
    else:
        import copy
        r = copy.deepcopy(m)
        for mod in list(r.modules()):
            for meth in ("reparameterize", "switch_to_deploy"):
                if hasattr(mod, meth):
                    getattr(mod, meth)()
                    break
    r.eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        a, b = m(x), r(x)
    err = float((a - b).abs().max() / a.abs().max())
    for model, path in ((m, train), (r, ref)):
        tmp = path + ".tmp"
        with torch.no_grad():
            torch.onnx.export(model, (x,), tmp, dynamo=False, opset_version=17, input_names=["x"],
                              output_names=["y"])
        os.replace(tmp, path)
    notes = {"reparameterize": how, "torch_err": err, "timm": timm.__version__, "torch": torch.__version__}
    with open(os.path.join(os.path.dirname(train), name + ".json"), "w") as f:
        json.dump(notes, f)
    return notes


def pairs(a):
    """[(name, group, train, ref, notes)] for the pairs --only picks."""
    import multibranch_blocks as mb
    want = set(x for o in (a.only or []) for x in o.split(",") if x)

    def picked(name, group):
        return not want or name in want or group in want
    out = []
    todo = [n for n in mb.FAMILIES if picked(n, "blocks") or picked(n + "_ts", "blocks")]
    if todo:
        for label, tp, rp in mb.write_all(os.path.join(a.cache, "blocks"), names=todo):
            if picked(label, "blocks"):
                out.append((label, "blocks", tp, rp, {}))
    for name in NETS:
        if not picked(name, "nets"):
            continue
        tp, rp = os.path.join(a.cache, name + "_train.onnx"), os.path.join(a.cache, name + "_ref.onnx")
        notes_path = os.path.join(a.cache, name + ".json")
        if not (os.path.exists(tp) and os.path.exists(rp) and os.path.exists(notes_path)):
            print(f"multibranch.py: exporting {name}", file=sys.stderr, flush=True)
            try:
                export_net(name, tp, rp)
            except Exception as e:  # a timm without the model: recorded, the rest go on
                out.append((name, "nets", None, None, {"failed": f"export: {type(e).__name__}: "
                                                                 f"{str(e).splitlines()[0][:160]}"}))
                continue
        with open(notes_path) as f:
            out.append((name, "nets", tp, rp, json.load(f)))
    return out


def run_engine(a, train, out):
    cmd = [a.engine, "optimize", train, "-o", out] + a.engine_args.split()
    t0 = time.monotonic()
    env = dict(os.environ, TASOC_CACHE_DIR=a.cost_dir) if a.cost_dir else None
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    r = {"exit": p.returncode, "wall_s": round(time.monotonic() - t0, 2)}
    m = re.search(r"^rules applied: (\d+)", p.stdout, re.M)
    r["rules"] = int(m[1]) if m else None
    m = report.WROTE_RE.search(p.stdout)
    if m:
        r["wrote"] = m[1]
    elif p.returncode == 0:
        r["wrote"] = "input (not cheaper)" if "(the input, unchanged)" in p.stderr else "search result (no verify)"
    else:
        r["wrote"] = ""
    for key, pat in (("cost_before", r"^cost before: ([0-9.]+)"), ("cost_after", r"^cost after: ([0-9.]+)")):
        m = re.search(pat, p.stdout, re.M)
        r[key] = float(m[1]) if m else None
    m = re.search(r"^built-ins: (.*)$", p.stdout, re.M)
    # only what the built-in rewrites did ("2 batchnorm folded, ..."), not the zeros
    r["builtins"] = ", ".join(x for x in (m[1].split(", ") if m else []) if not x.startswith("0 "))
    if p.returncode:
        r["error"] = (p.stderr.strip().splitlines() or ["?"])[-1][:200]
    return r


def time_models(paths, threads, rounds):
    """paths: {label: model path}, the first TRAIN. @return {label: median
    ms}, {ratio name: quartiles}, with "aa" the TRAIN/TRAIN-again ratio."""
    import numpy as np
    import ort_time
    from ort_compare import session
    labels = list(paths) + ["train_again"]
    sess = {k: session(paths[k if k != "train_again" else "train"], threads) for k in labels}
    first = sess["train"]
    rng = np.random.default_rng(0)
    feed = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
            for i in first.get_inputs()}
    for s in sess.values():
        for _ in range(3):
            s.run(None, feed)
    reps = ort_time.reps_for(lambda: first.run(None, feed))
    times = {k: [] for k in labels}
    for rnd in range(rounds):
        for k in (labels if rnd % 2 == 0 else labels[::-1]):
            s = sess[k]
            times[k].append(ort_time.sample_ms(lambda: s.run(None, feed), reps))
    ms = {k: statistics.median(v) for k, v in times.items()}
    ratio = {"aa": quart([x / y for x, y in zip(times["train"], times["train_again"])])}
    for k in labels[1:-1]:
        ratio[k] = quart([x / y for x, y in zip(times["train"], times[k])])
    if "ref" in times and "out" in times:
        ratio["out_vs_ref"] = quart([x / y for x, y in zip(times["ref"], times["out"])])
    return ms, ratio, reps


def measure(a, name, group, train, ref, notes, outdir):
    import multibranch_blocks as mb
    row = {"model": name, "group": group, **{k: v for k, v in notes.items() if k != "failed"}}
    if notes.get("failed"):
        row["status"] = notes["failed"]
        return row
    row["convs"] = {"train": conv_count(train), "ref": conv_count(ref)}
    row["ref_err"] = mb.check(train, ref)
    paths = {"train": train, "ref": ref}
    if not a.no_engine:
        out = os.path.join(outdir, name + "_out.onnx")
        if os.path.exists(out):
            os.remove(out)
        row["engine"] = eng = run_engine(a, train, out)
        print(f"multibranch.py: {name}: engine exit {eng['exit']} in {eng['wall_s']} s, wrote "
              f"{eng['wrote'] or '-'}, rules {eng['rules']}", file=sys.stderr, flush=True)
        if eng["exit"] == 0 and os.path.exists(out):
            row["convs"]["out"] = conv_count(out)
            with open(out, "rb") as f, open(train, "rb") as g:
                eng["same_bytes"] = f.read() == g.read()
            try:
                row["out_err"] = mb.check(train, out)
                paths["out"] = out
            except Exception as e:  # onnxruntime refusing the engine's output: a finding, recorded
                row["out_err"] = float("inf")
                row["status"] = f"onnxruntime on OUT: {str(e).splitlines()[0][:160]}"
    rounds = a.rounds or (30 if group == "blocks" else 20)
    row["rounds"] = rounds
    row["timing"] = {}
    for t in a.threads:
        ms, ratio, reps = time_models(paths, t, rounds)
        row["timing"][str(t)] = {"ms": ms, "ratio": ratio, "reps": reps}
        r = ratio
        print(f"multibranch.py: {name} t{t}: train {ms['train']:.3f} ms, ref {r['ref']['median']:.3f}x"
              + (f", out {r['out']['median']:.3f}x, out/ref {r['out_vs_ref']['median']:.3f}" if "out" in r else "")
              + f", A/A {r['aa']['median']:.3f}", file=sys.stderr, flush=True)
    row.setdefault("status", "ok")
    return row


def collapsed(r):
    c = r.get("convs", {})
    return "out" in c and c["out"] <= c["ref"] and r.get("out_err", 1) <= 1e-4


def cell(q):
    return f"{q['median']:.3f} [{q['lo']:.3f}-{q['hi']:.3f}]"


def write_report(a, rows, argv):
    import onnxruntime
    out = os.path.abspath(a.out)
    dirty = subprocess.run(["git", "status", "--porcelain", "-uno"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    ver = ""
    if not a.no_engine:
        p = subprocess.run([a.engine, "--version"], capture_output=True, text=True)
        ver = (p.stdout or p.stderr).strip().splitlines()[0] if (p.stdout or p.stderr).strip() else "?"
    nets = [r for r in rows if r["group"] == "nets" and "torch" in r]
    lines = report.header(
        "Structural re-parameterization: multi-branch blocks through the engine",
        f"onnxruntime {onnxruntime.__version__}"
        + (f", torch {nets[0]['torch']}, timm {nets[0]['timm']}" if nets else "")
        + f"; `{' '.join(['python3 bench/multibranch.py'] + argv)}` (protocol in its docstring). "
        + ("" if a.no_engine else f"Engine: `{os.path.relpath(a.engine, ROOT)}` ({ver}; binary of "
           + time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(os.path.getmtime(a.engine)))
           + f"), HEAD {report.commit()}"
           + (" with uncommitted changes to tracked files (the binary may include them)" if dirty else "")
           + ", args: "
           + (f"`{a.engine_args}`" if a.engine_args else "none (the default command)") + ". ")
        + f"Load average at the start: {a.load_at_start}; on a machine of few cores other work shows in the "
        "2-thread rows first (see their A/A).")
    lines += [
        "Conv nodes: Conv and FusedConv in TRAIN / REF (the hand collapse) / OUT (the engine's output). "
        "err: max |a - b| / max |a| against TRAIN in onnxruntime (ORT_DISABLE_ALL). collapsed: OUT has no "
        "more Conv nodes than REF and agrees within 1e-4.", "",
        "| model | Conv train/ref/out | engine exit | engine s | engine wrote | rules | built-ins | "
        "REF err | OUT err | collapsed | status |",
        "|---|---|--:|--:|---|--:|---|--:|--:|---|---|"]
    for r in rows:
        c, e = r.get("convs", {}), r.get("engine", {})
        convs = f"{c.get('train', '')}/{c.get('ref', '')}/{c.get('out', '-')}" if c else ""
        lines.append(
            f"| {r['model']} | {convs} | {e.get('exit', '-')} | {e.get('wall_s', '-')} | {e.get('wrote', '-')}"
            + (" (= TRAIN's bytes)" if e.get("same_bytes") else "") + " | "
            f"{e.get('rules', '-') if e.get('rules') is not None else '-'} | {e.get('builtins', '-') or '-'} | "
            + (f"{r['ref_err']:.1e}" if "ref_err" in r else "") + " | "
            + (f"{r['out_err']:.1e}" if "out_err" in r else "-") + " | "
            + ("-" if a.no_engine or "convs" not in r else ("yes" if collapsed(r) else "no"))
            + f" | {r['status']} |")
    lines += [
        "", "Speed in onnxruntime (ORT_ENABLE_ALL), per round ratios, median [25th-75th percentile]: REF x = "
        "TRAIN time / REF time (the hand collapse's speedup), OUT x = TRAIN time / OUT time, OUT/REF = REF "
        f"time / OUT time (target >= {TARGET}), A/A = TRAIN / TRAIN again (the noise). reps: runs per sample.", "",
        "| model | threads | rounds | reps | TRAIN ms | REF ms | OUT ms | REF x | OUT x | OUT/REF | A/A |",
        "|---|--:|--:|--:|--:|--:|--:|---|---|---|---|"]
    for r in rows:
        for t, tm in r.get("timing", {}).items():
            ms, q = tm["ms"], tm["ratio"]
            lines.append(
                f"| {r['model']} | {t} | {r['rounds']} | {tm['reps']} | {ms['train']:.3f} | {ms['ref']:.3f} | "
                + (f"{ms['out']:.3f}" if "out" in ms else "-") + f" | {cell(q['ref'])} | "
                + (cell(q["out"]) if "out" in q else "-") + " | "
                + (cell(q["out_vs_ref"]) + (" ok" if q["out_vs_ref"]["median"] >= TARGET else " **below**")
                   if "out_vs_ref" in q else "-") + f" | {cell(q['aa'])} |")
    nets = [r for r in rows if r["group"] == "nets" and "torch_err" in r]
    if nets:
        lines += ["", "Nets: REF is " + "; ".join(
            f"{r['model']}: {r['reparameterize']} (torch's own max rel err of the collapse {r['torch_err']:.1e})"
            for r in nets) + "."]
    if not a.no_engine:
        done = [r["model"] for r in rows if "convs" in r and collapsed(r)]
        short = [r["model"] for r in rows for t, tm in r.get("timing", {}).items()
                 if "out_vs_ref" in tm["ratio"] and tm["ratio"]["out_vs_ref"]["median"] < TARGET]
        lines += ["", f"Collapsed by the engine: {', '.join(done) or 'none'} of {len(rows)}. "
                  f"OUT below {TARGET} of REF's speed (at some thread count): "
                  f"{', '.join(sorted(set(short), key=short.index)) or 'none'}."]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.splitext(out)[0] + ".jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default=os.path.join(ROOT, "out", "bin", "engine"))
    ap.add_argument("--engine-args", default="", help="more engine optimize options (one string)")
    ap.add_argument("--only", action="append", help="pair names or groups (blocks, nets); repeatable, a,b,...")
    ap.add_argument("--no-engine", action="store_true", help="time TRAIN against REF only")
    ap.add_argument("--rounds", type=int, default=0, help="rounds per thread count (default 30 blocks, 20 nets)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--cache", default=os.path.join(HERE, "cache", "multibranch"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "multibranch.md"))
    ap.add_argument("--user-cost-cache", action="store_true",
                    help="let the engine use the caller's cost cache (default: a new one for this run, "
                         "so no kernel timed before, maybe on a busy machine, decides)")
    a = ap.parse_args()
    tmp = None if a.user_cost_cache else tempfile.TemporaryDirectory(prefix="multibranch-costs-")
    a.cost_dir = tmp.name if tmp else None
    a.threads = [int(t) for t in a.threads.split(",") if t]
    a.load_at_start = " ".join(open("/proc/loadavg").read().split()[:3])
    if not a.no_engine and not os.access(a.engine, os.X_OK):
        sys.exit(f"multibranch.py: no engine at {a.engine} (build it, or --no-engine)")
    os.makedirs(a.cache, exist_ok=True)
    outdir = os.path.join(a.cache, "out")
    os.makedirs(outdir, exist_ok=True)
    todo = pairs(a)
    if not todo:
        sys.exit("multibranch.py: --only picked nothing")
    rows = []
    for name, group, train, ref, notes in todo:
        rows.append(measure(a, name, group, train, ref, notes, outdir))
    write_report(a, rows, sys.argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
