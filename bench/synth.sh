#!/usr/bin/env bash
# bench/synth.sh - synth's figures per depth: graphs, classes, candidates,
# wall and CPU time, peak RSS. Writes bench/results/synth.md and prints it.
#
#   bench/synth.sh [--depth4] [--threads N] [--bin DIR] [--ops LIST]
#
# Depths 1..3 always, 4 with --depth4 (minutes, a few GB). Figures come
# from synth's own summary (graphs, classes, candidates) and from
# /usr/bin/time -v (wall, CPU, peak RSS) when it exists. The reference:
# TASO's generator, depth 3 on 2 cores: 16.4 M graphs, 734 candidates,
# 124 s, 7.1 GB; depth 4: out of memory at 128 GB.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=out/bin depth=3 threads="" ops=""
while [ $# -gt 0 ]; do
    case "$1" in
    --depth4) depth=4 ;;
    --threads) threads=$2; shift ;;
    --bin) bin=$2; shift ;;
    --ops) ops=$2; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/synth.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
[ -x "$bin/synth" ] || { echo "bench/synth.sh: no $bin/synth (run ninja)" >&2; exit 2; }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
out=bench/results/synth.md
mkdir -p bench/results
timer=""
[ -x /usr/bin/time ] && timer="/usr/bin/time -v"

# time_field LOG NAME: a /usr/bin/time -v figure
time_field() { grep -m1 "$2" "$1" | awk -F': ' '{print $2}'; }

{
    echo "# synth benchmark"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
    echo "threads ${threads:-all}, operators ${ops:-all}, seed 1. Candidates: classes left after"
    echo "pruning (members: graphs in them). Load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "| depth | graphs | classes | candidates found | candidates | members | wall s | CPU s | peak RSS MB |"
    echo "|------:|-------:|--------:|-----------------:|-----------:|--------:|-------:|------:|------------:|"
} >"$tmp/table"

for d in $(seq 1 "$depth"); do
    log=$tmp/d$d.log
    args=(--max-ops "$d" --no-timings -o "$tmp/d$d.tasodb")
    [ -n "$threads" ] && args+=(--threads "$threads")
    [ -n "$ops" ] && args+=(--ops "$ops")
    echo "bench/synth.sh: depth $d ..." >&2
    $timer "$bin/synth" "${args[@]}" >"$log" 2>&1
    graphs=$(grep -m1 "graphs enumerated" "$log" | sed -E 's/^synth: ([0-9]+) graphs.*/\1/')
    classes=$(grep -m1 "classes in this shard" "$log" | sed -E 's/.*skipped\), ([0-9]+) classes.*/\1/')
    found=$(grep -m1 "candidates after found" "$log" | sed -E 's/.*found +([0-9]+) classes.*/\1/')
    cand=$(grep -m1 "^synth: written" "$log" | sed -E 's/^synth: written ([0-9]+) classes, ([0-9]+) members.*/\1/')
    members=$(grep -m1 "^synth: written" "$log" | sed -E 's/^synth: written ([0-9]+) classes, ([0-9]+) members.*/\2/')
    wall=$(grep -m1 "^synth: written" "$log" | sed -E 's/.*wall ([0-9.]+) s.*/\1/')
    cpu=$(grep -m1 "^synth: written" "$log" | sed -E 's/.*cpu ([0-9.]+) s.*/\1/')
    rss=$(grep -m1 "^synth: written" "$log" | sed -E 's/.*peak RSS ([0-9.]+) MB.*/\1/')
    if [ -n "$timer" ]; then # the OS's view of the same run
        kb=$(time_field "$log" "Maximum resident set size")
        rss=$(awk -v k="$kb" 'BEGIN{printf "%.1f", k/1024}')
    fi
    echo "| $d | $graphs | $classes | $found | $cand | $members | $wall | $cpu | $rss |" >>"$tmp/table"
done
# Without --depth4, keep the depth-4 row of the last run that had one (it
# takes minutes), and say where it came from.
if [ "$depth" -lt 4 ] && [ -f "$out" ] && grep -q '^| 4 |' "$out"; then
    grep -m1 '^| 4 |' "$out" >>"$tmp/table"
    when=$(grep -m1 -oE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]+Z' "$out" || true)
    prev=$(grep -m1 '^(depth 4 from' "$out" || true)
    if [ -n "$prev" ]; then echo >>"$tmp/table"; echo "$prev" >>"$tmp/table"
    else echo >>"$tmp/table"; echo "(depth 4 from the run of ${when:-an earlier date}: bench/synth.sh --depth4)" >>"$tmp/table"; fi
fi
{
    echo
    echo "TASO's generator for comparison (DESIGN.md): depth 3, 2 cores: 16.4 M graphs,"
    echo "734 candidates, 124 s, 7.1 GB peak; depth 4: out of memory at 128 GB."
} >>"$tmp/table"
cp "$tmp/table" "$out"
cat "$out"
