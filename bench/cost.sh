#!/usr/bin/env bash
# bench/cost.sh - the cpu cost backend on pairs of kernels whose order in
# time the unit tests do not assert (wall-clock time is not a unit test's
# business): a small and a big conv, each a one-node model measured by
# `engine optimize --cost cpu` (its "cost before" line; every run is a
# fresh process, so nothing is cached) --runs times. Writes
# bench/results/cost.md (medians, min, max, and whether the dearer case was
# dearer in every run) and prints it.
#
#   bench/cost.sh [--runs N] [--bin DIR]
#
# --runs defaults to 15; --bin names the binaries (default out/bin).
set -euo pipefail
cd "$(dirname "$0")/.."

runs=15 bin=out/bin
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=$2; shift ;;
    --bin) bin=$2; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/cost.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$bin/engine" ] || { echo "bench/cost.sh: no $bin/engine (run ninja)" >&2; exit 2; }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# One Conv model per case, NAME:X-SHAPE:W-SHAPE (SAME padding, stride 1);
# the claim checked is that the last case is dearer than the first.
cases=("small:1,4,8,8:4,4,1,1" "big:1,32,32,32:64,32,3,3")
python3 - "$tmp" "${cases[@]}" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

for case in sys.argv[2:]:
    name, x, w = case.split(":")
    x, w = [int(d) for d in x.split(",")], [int(d) for d in w.split(",")]
    pad = (w[2] - 1) // 2
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[pad] * 4)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.ones(w, np.float32), "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(onnx.shape_inference.infer_shapes(m), "%s/%s.onnx" % (sys.argv[1], name))
EOF

# measure NAME: one "cost before" figure (us) per run into $tmp/NAME.us.
measure() {
    for _ in $(seq "$runs"); do
        "$bin/engine" optimize "$tmp/$1.onnx" -o "$tmp/out.onnx" --cost cpu --budget 1 -q 2>/dev/null |
            sed -n 's/^cost before: \([0-9.]*\) us$/\1/p'
    done >"$tmp/$1.us"
    [ "$(wc -l <"$tmp/$1.us")" -eq "$runs" ] || { echo "bench/cost.sh: $1: no cost line" >&2; exit 1; }
}
# stats NAME: "median min max" of its figures.
stats() {
    sort -g "$tmp/$1.us" | awk '{v[NR] = $1} END {
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.2f %.2f %.2f\n", m, v[1], v[NR] }'
}

first=${cases[0]%%:*} last=${cases[-1]%%:*}
rows=""
for c in "${cases[@]}"; do
    IFS=: read -r name x w <<<"$c"
    measure "$name"
    read -r med lo hi <<<"$(stats "$name")"
    rows+="| $name | [$x] x [$w] | $med | $lo | $hi |"$'\n'
    [ "$name" = "$first" ] && first_med=$med
    [ "$name" = "$last" ] && last_med=$med
done
always=$(paste "$tmp/$first.us" "$tmp/$last.us" |
    awk '$2 <= $1 {n++} END {print n ? "no (" n " runs not)" : "yes"}')

out=bench/results/cost.md
mkdir -p bench/results
{
    echo "# cpu cost backend benchmark"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'),"
    echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')),"
    echo "load average before: $load_before (other work on the machine slows every figure)."
    echo "Each figure: \`engine optimize --cost cpu\` on a one-conv model, its \"cost before\""
    echo "(the backend's median of repeated timings, one thread); $runs runs, each a fresh process."
    echo
    echo "| case | conv2d (x, w), SAME | median us | min us | max us |"
    echo "|---|---|---|---|---|"
    printf "%s" "$rows"
    echo
    echo "$last / $first (medians): $(awk -v b="$last_med" -v s="$first_med" 'BEGIN {printf "%.1f", b / s}');"
    echo "$last dearer than $first in every run: $always."
} >"$out"
cat "$out"
