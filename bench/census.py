#!/usr/bin/env python3
"""bench/census.py - what the engine sees of each bench model.

    python3 bench/census.py [MODEL.onnx ...] [--dir bench/cache] [--engine PATH]
                            [--out bench/results/census.md] [--no-onnx-shapes]

Without files: every *.onnx directly in --dir (the hand-built models of
bench/models.py and the real exports of bench/export_torch.py, whichever are
there). For each model it runs `engine info` and reads:
  - the line "nodes: N (A opspecs, B model ops, C opaque)"; where it is
    missing, the counts are summed from the per-op listing
    "  OpType   N  opspecs|model op|OPAQUE ...";
  - rule-visible = opspecs nodes (what rule matching sees) / nodes;
  - shapes known after load: from a census/shapes line of `engine info` when
    it prints one (any line naming "shape" with "K/N" or "P%"), else "-";
  - the opaque op types with their counts.
As a reference (not the engine's figure) it also gives the share of node
outputs whose shape onnx.shape_inference makes fully static (--no-onnx-shapes
skips it). Writes the markdown table and census.jsonl beside it.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import time

OP_LINE = re.compile(r"^\s+(\S+)\s+(\d+)\s+(opspecs|model op|OPAQUE\b.*)\s*$")
NODES_LINE = re.compile(r"^nodes:\s*(\d+)\s*\((\d+)\s*opspecs,\s*(\d+)\s*model ops?,\s*(\d+)\s*opaque")
HAND = {"resnet50", "resnext50", "inception_v3", "squeezenet", "nasnet_a", "bert_base"}


def parse_shapes(line):
    """Share of tensors with known shapes from one line of `engine info`, or None."""
    low = line.lower()
    if "shape" not in low:
        return None
    m = re.search(r"(\d+)\s+of\s+(\d+)\s+tensors", low)  # census: "shapes known for 858 of 858 tensors"
    if m and int(m.group(2)) > 0:
        return 100.0 * int(m.group(1)) / int(m.group(2))
    for pat in (r"shape[^,;()]*?(\d+)\s*/\s*(\d+)", r"(\d+)\s*/\s*(\d+)[^,;()]*shape"):
        m = re.search(pat, low)
        if m and int(m.group(2)) > 0:
            return 100.0 * int(m.group(1)) / int(m.group(2))
    m = re.search(r"(\d+)\s*\(\s*(\d+)[^)]*shape", low)  # "900 (880 with known shapes)"
    if m and int(m.group(1)) > 0:
        return 100.0 * int(m.group(2)) / int(m.group(1))
    for pat in (r"shape[^,;()]*?(\d+(?:\.\d+)?)\s*%", r"(\d+(?:\.\d+)?)\s*%[^,;()]*shape"):
        m = re.search(pat, low)
        if m:
            return float(m.group(1))
    return None


def parse_info(text):
    r = {"ops": {}, "opaque": {}}
    in_ops = False
    for line in text.splitlines():
        m = NODES_LINE.match(line)
        if m:
            r["nodes"], r["opspecs"], r["model_ops"], r["opaque_nodes"] = map(int, m.groups())
            continue
        if re.match(r"^\S", line):
            in_ops = line.startswith("ops:")
            if not in_ops and r.get("shapes_known_pct") is None:
                v = parse_shapes(line)
                if v is not None:
                    r["shapes_known_pct"] = v
            continue
        m = OP_LINE.match(line) if in_ops else None
        if m:
            name, n, kind = m.group(1), int(m.group(2)), m.group(3)
            kind = "opaque" if kind.startswith("OPAQUE") else kind
            r["ops"][name] = (n, kind)
            if kind == "opaque":
                r["opaque"][name] = r["opaque"].get(name, 0) + n
    if "nodes" not in r:  # sum the listing
        counts = {"opspecs": 0, "model op": 0, "opaque": 0}
        for n, kind in r["ops"].values():
            counts[kind] += n
        r["opspecs"], r["model_ops"], r["opaque_nodes"] = \
            counts["opspecs"], counts["model op"], counts["opaque"]
        r["nodes"] = sum(counts.values())
    return r


def onnx_shapes(path):
    """Percent of node outputs with a fully static shape after onnx shape inference."""
    import onnx
    from onnx import shape_inference
    try:
        m = shape_inference.infer_shapes(onnx.load(path))
    except Exception:  # noqa: BLE001
        return None
    known = {}
    for vi in list(m.graph.value_info) + list(m.graph.output):
        t = vi.type.tensor_type
        known[vi.name] = t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim)
    outs = [o for n in m.graph.node for o in n.output if o]
    return 100.0 * sum(known.get(o, False) for o in outs) / len(outs) if outs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--dir", default="bench/cache")
    ap.add_argument("--engine", default="out/bin/engine")
    ap.add_argument("--out", default="bench/results/census.md")
    ap.add_argument("--no-onnx-shapes", action="store_true")
    args = ap.parse_args()
    files = args.models or sorted(glob.glob(os.path.join(args.dir, "*.onnx")))
    if not files:
        sys.exit(f"census: no models (build them: python3 bench/models.py --all --dir {args.dir}; "
                 f"python3 bench/export_torch.py --all --dir {args.dir})")
    rows = []
    for f in files:
        name = os.path.splitext(os.path.basename(f))[0]
        t0 = time.perf_counter()
        p = subprocess.run([args.engine, "info", f], capture_output=True, text=True, errors="replace")
        secs = time.perf_counter() - t0
        if p.returncode:
            msg = (p.stderr.strip().splitlines() or ["?"])[-1]
            rows.append({"model": name, "error": msg.replace(f, name)})
            print(f"census: {name}: engine info failed: {msg}", file=sys.stderr)
            continue
        r = parse_info(p.stdout)
        r.update(model=name, info_s=round(secs, 2),
                 source="bench/models.py" if name in HAND else
                 "torchvision" if name.startswith("tv_") else
                 "transformers" if name.startswith("hf_") else "?")
        try:
            import onnx
            r["file_nodes"] = len(onnx.load(f, load_external_data=False).graph.node)
        except Exception:  # noqa: BLE001
            r["file_nodes"] = None
        if not args.no_onnx_shapes:
            r["onnx_shapes_pct"] = onnx_shapes(f)
        rows.append(r)
        print(f"census: {name}: {r['nodes']} nodes, {r['opspecs']} opspecs, "
              f"{r['opaque_nodes']} opaque", file=sys.stderr)

    def pct(v):
        return "-" if v is None else f"{v:.0f}%"

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    lines = ["# Census: what the engine sees of the bench models", "",
             f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, commit {commit}, "
             f"from `{args.engine} info` (`python3 bench/census.py`).",
             "file nodes: in the ONNX file; nodes: in the engine's graph after load; rule-visible: opspecs nodes (what rule matching sees) / all nodes; model op: "
             "understood by the engine (shape inference, export) but not rule-visible; "
             "opaque: kept as is, blocks rewrites. shapes known: the engine's own figure "
             "after load when `engine info` prints one (\"-\": it does not yet); onnx shapes: "
             "for reference, node outputs onnx.shape_inference makes fully static.", "",
             "| model | source | file nodes | nodes | rule-visible | model op | opaque | shapes known | "
             "onnx shapes | opaque op types |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | | | | | | | | | engine info failed: {r['error']} |")
            continue
        n = max(r["nodes"], 1)
        opq = ", ".join(f"{k} {v}" for k, v in sorted(r["opaque"].items(), key=lambda kv: -kv[1]))
        lines.append(f"| {r['model']} | {r['source']} | {r.get('file_nodes') or '-'} | {r['nodes']} | {pct(100 * r['opspecs'] / n)} | "
                     f"{pct(100 * r['model_ops'] / n)} | {pct(100 * r['opaque_nodes'] / n)} | "
                     f"{pct(r.get('shapes_known_pct'))} | {pct(r.get('onnx_shapes_pct'))} | {opq or '-'} |")
    lines += ["", "Model ops (understood, not rule-visible) per model:", ""]
    for r in rows:
        if "error" in r:
            continue
        mo = ", ".join(f"{k} {n}" for k, (n, kind) in sorted(r["ops"].items(), key=lambda kv: -kv[1][0])
                       if kind == "model op")
        lines.append(f"- {r['model']}: {mo or '-'}")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write(text)
    with open(os.path.splitext(args.out)[0] + ".jsonl", "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    print(text)


if __name__ == "__main__":
    main()
