#!/usr/bin/env bash
# bench/prove.sh - benchmark prove: decide a candidates file, re-prove the
# rules it wrote, and record the figures in bench/results/prove.md.
#
#   bench/prove.sh [CANDIDATES] [--depth N] [--jobs N] [--bin DIR]
#
# Without CANDIDATES, synth generates them at --depth (default 3) with
# seed 1. --jobs goes to prove (default: all cores); --bin names the
# binaries (default out/bin). Prints the table it writes.
set -euo pipefail
cd "$(dirname "$0")/.."

cands="" depth=3 jobs="" bin=out/bin
while [ $# -gt 0 ]; do
    case "$1" in
    --depth) depth=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --bin) bin=$2; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench/prove.sh: unknown option $1" >&2; exit 2 ;;
    *) cands=$1 ;;
    esac
    shift
done
for tool in prove ruledb; do
    [ -x "$bin/$tool" ] || { echo "bench/prove.sh: $bin/$tool missing (run ninja)" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
source_note="given: $cands"
if [ -z "$cands" ]; then
    [ -x "$bin/synth" ] || { echo "bench/prove.sh: $bin/synth missing" >&2; exit 2; }
    echo "bench/prove.sh: synth --max-ops $depth --seed 1 ..." >&2
    "$bin/synth" -q --max-ops "$depth" --seed 1 -o "$tmp/cands.tasodb"
    cands=$tmp/cands.tasodb
    source_note="synth --max-ops $depth --seed 1"
fi

jobs_opt=()
[ -n "$jobs" ] && jobs_opt=(--jobs "$jobs")
echo "bench/prove.sh: prove ${jobs_opt[*]} ..." >&2
"$bin/prove" "${jobs_opt[@]}" "$cands" -o "$tmp/rules.tasodb" 2>"$tmp/prove.log"
start=$(date +%s.%N)
"$bin/prove" -q "${jobs_opt[@]}" --check "$tmp/rules.tasodb" 2>"$tmp/check.log"
check_s=$(echo "$(date +%s.%N) - $start" | bc)

# The three summary lines of prove (run.c):
#   prove: N candidates in C classes (D distinct up to renaming): P proved, R refuted
#          (R1 at the class shapes, R2 at other shapes), U unknown, T timeout
#   prove: rules E emitted, A after duplicates, B after renamings, I after input-side
#          context, O after output-side context
#   prove: wall W s, cpu X s, Y candidates/s, peak RSS Z MB
sum=$(grep '^prove: [0-9]* candidates in' "$tmp/prove.log")
rules=$(grep '^prove: rules' "$tmp/prove.log")
perf=$(grep '^prove: wall' "$tmp/prove.log")
num() { echo "$1" | grep -oE "[0-9.]+ $2" | head -1 | grep -oE '^[0-9.]+'; }
n_rules=$(num "$rules" "after output-side")
rules_per_s=$(echo "scale=0; $n_rules / $check_s" | bc)

out=bench/results/prove.md
mkdir -p bench/results
{
    echo "# prove benchmark"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'),"
    echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
    echo "load average before: $load_before (other work on the machine slows every figure);"
    echo "$("$bin/prove" --version)."
    echo "Candidates: $source_note ($(du -h "$cands" | cut -f1))."
    echo
    echo "| figure | value |"
    echo "|---|---|"
    echo "| candidates (pairs) | $(num "$sum" candidates) |"
    echo "| classes | $(num "$sum" classes) |"
    echo "| distinct up to renaming (Z3 questions) | $(num "$sum" distinct) |"
    echo "| proved | $(num "$sum" proved) |"
    echo "| refuted | $(num "$sum" refuted) (at the class shapes $(num "$sum" 'at the class'), at other shapes $(num "$sum" 'at other')) |"
    echo "| unknown | $(num "$sum" unknown) |"
    echo "| timeout | $(num "$sum" timeout) |"
    echo "| rules emitted | $(num "$rules" emitted) |"
    echo "| after duplicates | $(num "$rules" 'after duplicates') |"
    echo "| after renamings | $(num "$rules" 'after renamings') |"
    echo "| after input-side context | $(num "$rules" 'after input-side') |"
    echo "| rules after pruning | $n_rules |"
    echo "| wall | $(num "$perf" s,) s |"
    echo "| cpu | $(echo "$perf" | grep -oE 'cpu [0-9.]+' | cut -d' ' -f2) s |"
    echo "| candidates/s | $(num "$perf" candidates/s) |"
    echo "| peak RSS | $(num "$perf" MB) MB |"
    echo "| --check of the rules | $(printf '%.1f' "$check_s") s, $rules_per_s rules/s, $(grep -q 'not proved' "$tmp/check.log" && echo FAILED || echo 'all re-proved') |"
} >"$out"
cat "$out"
