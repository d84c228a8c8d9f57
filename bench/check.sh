#!/usr/bin/env bash
# bench/check.sh - how long `prove --check` of the shipped (built-in) ruledb,
# ruledb/pruned.tasodb unless --ruledb, takes, in
# the release and the sanitizer build, with 1 and 2 jobs and beside two
# busy processes, and whether every run gives the same per-rule verdicts
# (it must: prove's default limits are deterministic budgets). Runs the
# configurations in turn, --runs times round (alternating, so a change in
# the machine's load hits them all), reports medians. Writes
# bench/results/check.md and prints it.
#
#   bench/check.sh [--runs N] [--ruledb FILE]
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3 ruledb=ruledb/pruned.tasodb
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=$2; shift ;;
    --ruledb) ruledb=$2; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/check.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
for b in out/bin/prove out/asan/bin/prove; do
    [ -x "$b" ] || { echo "bench/check.sh: no $b (run ninja all all-asan)" >&2; exit 2; }
done

tmp=$(mktemp -d)
hogs=""
stop_hogs() {
    if [ -n "$hogs" ]; then kill $hogs 2>/dev/null || true; wait $hogs 2>/dev/null || true; fi
    hogs=""
}
trap 'stop_hogs; rm -rf "$tmp"' EXIT

# name | binary | jobs | busy processes beside it
configs=(
    "release, 2 jobs|out/bin/prove|2|0"
    "release, 1 job|out/bin/prove|1|0"
    "release, 2 jobs, 2 busy processes|out/bin/prove|2|2"
    "asan+ubsan, 2 jobs|out/asan/bin/prove|2|0"
)

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= runs; r++)); do
    for i in "${!configs[@]}"; do
        IFS='|' read -r name bin jobs busy <<<"${configs[$i]}"
        for ((h = 0; h < busy; h++)); do (while :; do :; done) & hogs="$hogs $!"; done
        echo "bench/check.sh: run $r/$runs: $name" >&2
        start=$(date +%s.%N)
        status=0
        "$bin" --check --verdicts --jobs "$jobs" "$ruledb" >"$tmp/v.$i.$r" 2>/dev/null || status=$?
        echo "$(date +%s.%N) - $start" | bc >>"$tmp/t.$i"
        echo "$status" >>"$tmp/s.$i"
        stop_hogs
    done
done

median() { sort -n "$1" | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
n_rules=$(wc -l <"$tmp/v.0.1")
out=bench/results/check.md
mkdir -p bench/results
{
    echo "# prove --check benchmark"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'),"
    echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
    echo "load average before: $load_before; $(out/bin/prove --version)."
    echo "\`prove --check --verdicts $ruledb\` ($n_rules rules) with the default limits"
    echo "(deterministic budgets only), $runs runs of each configuration, alternating; wall s."
    echo
    echo "| configuration | median s | runs s | exit | rules proved | verdicts as the first run |"
    echo "|---|--:|---|--:|--:|---|"
    for i in "${!configs[@]}"; do
        IFS='|' read -r name _ _ _ <<<"${configs[$i]}"
        same=yes
        for ((r = 1; r <= runs; r++)); do cmp -s "$tmp/v.0.1" "$tmp/v.$i.$r" || same=NO; done
        proved=$(grep -c '^[0-9]* proved$' "$tmp/v.$i.1" || true)
        printf '| %s | %.1f | %s | %s | %s | %s |\n' "$name" "$(median "$tmp/t.$i")" \
            "$(xargs printf '%.1f ' <"$tmp/t.$i")" "$(sort -u "$tmp/s.$i" | xargs)" "$proved" "$same"
    done
} >"$out"
cat "$out"
