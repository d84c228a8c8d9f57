#!/usr/bin/env bash
# bench/regen.sh - the shipped ruledb's regeneration, step by step: graphs,
# classes, candidates, proved, rules, wall and CPU time, peak RSS per step,
# then `prove --check` of the result. Writes bench/results/regen.md.
#
#   bench/regen.sh [--bin DIR] [--keep DIR]
#
# Runs prove/regen.sh (the recipe `ninja ruledb` uses) into a scratch
# file and compares it with the shipped ruledb: they must be identical.
# With --keep, the two files made and the logs are kept in DIR (to ship
# them after a change of the recipe: copy DIR's default.tasodb and
# pruned.tasodb into ruledb/).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=out/bin keep=
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) bin=$2; shift ;;
    --keep) keep=$2; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/regen.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
for p in synth prove ruledb; do
    [ -x "$bin/$p" ] || { echo "bench/regen.sh: no $bin/$p (run ninja)" >&2; exit 2; }
done
if [ -n "$keep" ]; then
    tmp=$keep
    mkdir -p "$tmp"
else
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fi
mkdir -p "$tmp/logs" bench/results
load0=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git rev-parse --short HEAD) # at the start: the recipe that runs
t0=$(date +%s.%N)
prove/regen.sh "$bin" "$tmp/work" "$tmp/default.tasodb" "$tmp/pruned.tasodb" "$tmp/logs"
t1=$(date +%s.%N)
same="identical to ruledb/default.tasodb"
"$bin/ruledb" diff "$tmp/default.tasodb" ruledb/default.tasodb >/dev/null || same="DIFFERENT from ruledb/default.tasodb"
cmp -s "$tmp/pruned.tasodb" ruledb/pruned.tasodb && same="$same (and the pruned set identical to ruledb/pruned.tasodb)" ||
    same="$same (the pruned set DIFFERENT from ruledb/pruned.tasodb)"
timer=()
[ -x /usr/bin/time ] && timer=(/usr/bin/time -v)
"${timer[@]}" "$bin/prove" --check "$tmp/default.tasodb" >"$tmp/logs/check.log" 2>&1 || true

tf() { grep -m1 "$2" "$1" 2>/dev/null | awk -F': ' '{print $2}'; }
wall() { # /usr/bin/time's h:mm:ss or m:ss.cc as seconds
    tf "$1" "Elapsed (wall clock)" | awk -F: '{ if (NF == 3) print $1*3600+$2*60+$3; else print $1*60+$2 }'
}
cpu() { echo "$(tf "$1" "User time") $(tf "$1" "System time")" | awk '{printf "%.1f", $1 + $2}'; }
rss() { tf "$1" "Maximum resident" | awk '{printf "%.0f", $1 / 1024}'; }
syn() { # graphs classes candidates
    local l=$1
    echo "$(grep -m1 'graphs enumerated' "$l" | sed -E 's/^synth: ([0-9]+) graphs.*/\1/')" \
         "$(grep -m1 'classes in this shard' "$l" | sed -E 's/.*skipped\), ([0-9]+) classes.*/\1/')" \
         "$(grep -m1 '^synth: written' "$l" | sed -E 's/^synth: written ([0-9]+) classes.*/\1/')"
}
{
    echo "# Regenerating the shipped ruledb"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%MZ), commit $commit, $(nproc) cores; load average at start: $load0 (other work on the machine slows every time)."
    echo "\`bench/regen.sh\` runs prove/regen.sh, the recipe \`ninja ruledb\` uses; the result is $same."
    echo "Operators: $("$bin/ruledb" info ruledb/default.tasodb | sed -n 's/^ops: *//p')."
    echo
    echo "| step | graphs | classes | candidates | proved | rules | wall s | CPU s | peak RSS MB |"
    echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|"
    for s in synth-d3 synth-d4mm synth-d4lin synth-d4conv synth-d3id; do
        read -r g c k <<<"$(syn "$tmp/logs/$s.log")"
        echo "| $s | $g | $c | $k | | | $(wall "$tmp/logs/$s.log") | $(cpu "$tmp/logs/$s.log") | $(rss "$tmp/logs/$s.log") |"
    done
    pl=$tmp/logs/prove.log
    cand=$(grep -m1 'candidates in' "$pl" | sed -E 's/^prove: ([0-9]+) candidates in ([0-9]+) classes.*/\1/')
    cls=$(grep -m1 'candidates in' "$pl" | sed -E 's/^prove: ([0-9]+) candidates in ([0-9]+) classes.*/\2/')
    proved=$(grep -m1 'candidates in' "$pl" | sed -E 's/.*: ([0-9]+) proved.*/\1/')
    rules=$(grep -m1 '^prove: rules' "$pl" | sed -E 's/.* ([0-9]+) after output-side context.*/\1/')
    echo "| prove (merged candidates) | | $cls | $cand | $proved | $rules | $(wall "$pl") | $(cpu "$pl") | $(rss "$pl") |"
    for s in prune prune-2 prune-3 prune-4 prune-5 prune-6 prune-7; do # equations in, rules kept (the last: ruledb/pruned.tasodb)
        ul=$tmp/logs/$s.log
        [ -f "$ul" ] || continue # the last four only with the depth-4 file
        echo "| $s by derivability ($(grep -m1 -oE 'rounds [0-9]+, e-nodes [0-9]+, by [a-z]+' "$ul")) | | | $(grep -m1 -oE '[0-9]+ equations' "$ul" | cut -d' ' -f1) | | $(grep -m1 -oE 'holds [0-9]+ rules' "$ul" | cut -d' ' -f2) | $(wall "$ul") | $(cpu "$ul") | $(rss "$ul") |"
    done
    cl=$tmp/logs/check.log
    echo "| prove --check of the made ruledb | | | | $(grep -m1 -oE 'all [0-9]+ rules re-proved' "$cl" | cut -d' ' -f2) | | $(wall "$cl") | $(cpu "$cl") | $(rss "$cl") |"
    echo
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "Whole regeneration (synth, merge, prove): %.1f s wall.\n", b - a }'
    echo
    echo "prove --check's summary: $(grep '^prove:' "$cl" | grep -v 'checking' | tail -1)"
    # the sections written by hand below the table (the depth-4 runs) stay
    [ -f bench/results/regen.md ] && sed -n '/^## /,$p' bench/results/regen.md | sed '1s/^/\n/'
} >"$tmp/regen.md"
mv "$tmp/regen.md" bench/results/regen.md
cat bench/results/regen.md
