#!/usr/bin/env bash
# bench/engine.sh - engine optimize on the test models (TASO's README conv
# block, an attention block, an Inception-style block, conv+batchnorm):
# search time, cost before/after (the GPU-like analytic cost model, as
# test/engine_opt_test.py runs it: deterministic), rules
# applied, max relative error in onnxruntime. Writes bench/results/engine.md
# and prints it.
#
#   bench/engine.sh [--bin DIR]
#
# The models and checks are those of test/engine_opt_test.py (one
# definition); this script only asks it for its figures table.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=out/bin
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) bin=$2; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/engine.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$bin/engine" ] || { echo "bench/engine.sh: no $bin/engine (run ninja)" >&2; exit 2; }

out=bench/results/engine.md
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
{
    echo "# engine benchmark"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'),"
    echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')),"
    echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "\`engine optimize\` with the shipped ruledb, --cost analytic and the default limits"
    echo "(--alpha 1.05, --budget 200, --time-limit 10); max rel err: onnxruntime, original"
    echo "vs optimized, on random inputs (max |a-b| / max |a|)."
    echo
} >"$tmp"
python3 test/engine_opt_test.py "$bin/engine" --report "$tmp" >/dev/null
mkdir -p bench/results
mv "$tmp" "$out"
trap - EXIT
cat "$out"
