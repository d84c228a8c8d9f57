#!/usr/bin/env python3
"""bench/plot.py - the table and the plot of bench/run's model results.

    python3 bench/plot.py bench/results/models.jsonl [--md FILE] [--png FILE]
                          [--runs N]

Reads one JSON object per line as written by bench/run (the model, the
mode, node counts, the figures parsed from engine optimize's output and the
JSON line of bench/ort_compare.py under "ort"), writes a Markdown table
with the machine, date and onnxruntime version (--md) and a bar chart of
the onnxruntime speedup per model (--png).
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def fmt(v, spec="{:.2f}"):
    return "-" if v is None else spec.format(v)


def table(rows, runs, cost="cpu"):
    import onnxruntime
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    out = [
        "# Models end to end: original vs engine's output in onnxruntime",
        "",
        f"{now}, commit {git_commit()}, {os.cpu_count()} cores ({cpu_name()}), "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"onnxruntime {onnxruntime.__version__}; load average at the end: {load} "
        "(other work on the machine slows every figure).",
        "",
        "Models: bench/models.py (hand-built) and bench/export_torch.py (tv_*: torchvision, hf_*: transformers; torch.onnx.export), random weights, batch 1, fp32, opset 17. "
        f"Engine: `engine optimize MODEL -o OPT --cost {cost}` (shipped ruledb, "
        "default --alpha 1.05, --budget 200, --time-limit 10; costs in the engine's "
        f"{cost} model, microseconds). "
        "Latency: bench/ort_compare.py, CPU execution provider, "
        "graph_optimization_level ORT_ENABLE_ALL for both models, "
        f"intra_op_num_threads 1, 3 warm-up runs each, then {runs} alternating runs "
        "(orig, opt, orig again, ...) in one process; medians. Speedup = before / after; "
        "A/A = the original against its second session in the same alternation (the noise). "
        "Checker = onnx.checker full check of the output. "
        "Max rel err = max |a - b| / max |a| over the outputs, same random inputs. "
        "On this shared machine the absolute times drift between runs of the "
        "benchmark (ResNet-50 measured from 47 to 74 ms the same hour); the "
        "speedups, from alternating runs in one process, are the robust figure.",
        "",
        "| model | mode | nodes | nodes after | search s | cost before | cost after "
        "| rules | ORT before ms | ORT after ms | speedup | A/A | max rel err | checker |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for r in rows:
        o = r.get("ort") or {}
        out.append("| " + " | ".join([
            r["model"], r.get("mode", "-"),
            fmt(r.get("nodes"), "{}"), fmt(r.get("nodes_opt"), "{}"),
            fmt(r.get("search_s")), fmt(r.get("cost_before"), "{:g}"),
            fmt(r.get("cost_after"), "{:g}"), fmt(r.get("rules_applied"), "{}"),
            fmt(o.get("orig_ms")), fmt(o.get("opt_ms")),
            fmt(o.get("speedup"), "{:.3f}x"), fmt(o.get("aa"), "{:.3f}x"),
            fmt(o.get("max_rel_err"), "{:.1e}"), o.get("checker", "-"),
        ]) + " |")
    out += ["", "TASO's end-to-end figures for comparison (V100, vs the best of "
            "TF/XLA/TensorRT; DESIGN.md): Inception-v3 1.1x, SqueezeNet 1.3x, "
            "NASNet-A 1.3x, ResNeXt-50 3.1x, BERT-base 1.5x; search up to 10 min.", ""]
    return "\n".join(out)


def plot(rows, path, cost="cpu"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in rows if (r.get("ort") or {}).get("speedup") is not None]
    names = [r["model"] for r in rows]
    speed = [r["ort"]["speedup"] for r in rows]
    colors = ["tab:gray" if r.get("mode") != "optimize" else "tab:blue" for r in rows]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bars = ax.bar(names, speed, color=colors)
    ax.axhline(1.0, color="black", linewidth=0.8)
    for bar, s in zip(bars, speed):
        ax.text(bar.get_x() + bar.get_width() / 2, s, f"{s:.2f}x", ha="center",
                va="bottom", fontsize=8)
    ax.set_ylabel("onnxruntime speedup (before / after)")
    top = max(speed + [1.0])
    ax.set_ylim(0, top * 1.15)
    modes = sorted({r.get("mode") for r in rows})
    ax.set_title(f"engine (--cost {cost}) output vs original, onnxruntime CPU, 1 thread"
                 + (" (gray: optimize failed, roundtrip)" if any(m != "optimize" for m in modes) else ""),
                 fontsize=9)
    plt.setp(ax.get_xticklabels(), rotation=20, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("jsonl")
    ap.add_argument("--md")
    ap.add_argument("--png")
    ap.add_argument("--runs", type=int, default=30, help="runs per model, for the text")
    ap.add_argument("--cost", default="cpu", help="the engine's cost model, for the text")
    a = ap.parse_args()
    with open(a.jsonl) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    text = table(rows, a.runs, a.cost)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    else:
        print(text)
    if a.png:
        plot(rows, a.png, a.cost)
    return 0


if __name__ == "__main__":
    sys.exit(main())
