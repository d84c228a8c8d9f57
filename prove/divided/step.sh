#!/usr/bin/env bash
# prove/divided/step.sh - one step of rule generation divided over N
# machines; both drivers run the same steps (local.sh as processes,
# slurm.sh as Slurm job arrays, with this file as the batch script).
#
#   step.sh WORKDIR STEP [INDEX]     (INDEX defaults to $SLURM_ARRAY_TASK_ID)
#
# WORKDIR/config (written by the driver) names the binaries, the shard
# counts and the synth/prove options. Steps, their outputs and inputs:
#   synth K      synth/shard-K.shd      synth --shard K/N (its share of the work)
#   part P       synth/part-P.tasodb    synth --merge-part P of every shard
#   candidates   candidates.tasodb      ruledb merge of the parts
#   prove K      prove/shard-K.tasodb   prove --shard K/NP of the candidates
#   final        OUT                    prove --merge: final pruning, the ruledb
# A step whose output exists, is valid (synth --verify-shard, or a ruledb
# that reads) and is newer than its inputs is skipped, so rerunning a
# driver redoes only what is missing or stale. A failing command is retried
# RETRIES times; then the step reports itself by name with its log and
# exits 1. status/STEP-INDEX records ok or failed for the drivers.
#SBATCH --job-name=tasoc-step
#SBATCH --ntasks=1
set -uo pipefail
[ $# -ge 2 ] || { sed -n '5p' "$0" | sed 's/^# *//' >&2; exit 2; }
W=$1 step=$2 idx=${3:-${SLURM_ARRAY_TASK_ID:-}}
# shellcheck source=/dev/null
. "$W/config" || { echo "step.sh: $W/config: cannot read (run a driver first)" >&2; exit 2; }

# fresh OUT INPUT...: OUT exists and is newer than every input
fresh() {
    local out=$1 f; shift
    [ -e "$out" ] || return 1
    for f in "$@"; do [ "$out" -nt "$f" ] || return 1; done
}

valid_rdb() { "$BIN/ruledb" info "$1" >/dev/null 2>&1; }

# Each step's program runs under GNU time where the machine has it: its
# wall time, CPU and peak memory go to the step's log ("step.sh: used:"
# lines, which bench/divided_report.py sums per stage).
timer=()
[ -x /usr/bin/time ] && timer=(/usr/bin/time -a -o "$W/logs/${step}${idx:+-$idx}.log"
    -f "step.sh: used: wall %e s, cpu %U s user + %S s sys, peak RSS %M KB, exit %x")

case "$step" in
synth)
    name="synth shard $idx of $N"
    out=$W/synth/shard-$idx.shd inputs=("$W/synth/args")
    is_valid() { "$BIN/synth" -q --verify-shard "$out" >/dev/null 2>&1; }
    run() { "${timer[@]}" "$BIN/synth" "${SYNTH_ARGS[@]}" --shard "$idx/$N" --parts "$PARTS" -o "$out"; } ;;
part)
    name="synth merge of part $idx of $PARTS"
    out=$W/synth/part-$idx.tasodb inputs=()
    for k in $(seq 0 $((N - 1))); do inputs+=("$W/synth/shard-$k.shd"); done
    is_valid() { valid_rdb "$out"; }
    run() { "${timer[@]}" "$BIN/synth" "${MERGE_ARGS[@]}" --merge-part "$idx" -o "$out" "${inputs[@]}"; } ;;
candidates)
    name="candidates (ruledb merge of $PARTS parts)"
    out=$W/candidates.tasodb inputs=()
    for p in $(seq 0 $((PARTS - 1))); do inputs+=("$W/synth/part-$p.tasodb"); done
    is_valid() { valid_rdb "$out"; }
    run() { "${timer[@]}" "$BIN/ruledb" merge -o "$out" "${inputs[@]}"; } ;;
prove)
    name="prove shard $idx of $NP"
    out=$W/prove/shard-$idx.tasodb inputs=("$W/candidates.tasodb" "$W/prove/args")
    is_valid() { valid_rdb "$out"; }
    run() { "${timer[@]}" "$BIN/prove" "${PROVE_ARGS[@]}" --shard "$idx/$NP" "$W/candidates.tasodb" -o "$out"; } ;;
final)
    name="final merge and pruning"
    out=$OUT inputs=("$W/candidates.tasodb")
    for k in $(seq 0 $((NP - 1))); do inputs+=("$W/prove/shard-$k.tasodb"); done
    is_valid() { valid_rdb "$out"; }
    run() { "${timer[@]}" "$BIN/prove" "${PROVE_ARGS[@]}" --merge "${inputs[@]}" -o "$out"; } ;;
*)
    echo "step.sh: unknown step '$step' (synth, part, candidates, prove, final)" >&2
    exit 2 ;;
esac
case "$step" in synth|part|prove)
    [[ "$idx" =~ ^[0-9]+$ ]] || { echo "step.sh: $step needs an index" >&2; exit 2; } ;;
esac

tag=$step${idx:+-$idx}
log=$W/logs/$tag.log
mkdir -p "$W/synth" "$W/prove" "$W/logs" "$W/status"
if fresh "$out" "${inputs[@]}" && is_valid; then
    echo "step.sh: $name: done already ($out)"
    echo ok >"$W/status/$tag"
    exit 0
fi
for attempt in $(seq 1 $((RETRIES + 1))); do
    echo "step.sh: $name: attempt $attempt on $(hostname -s)" >>"$log"
    if run >>"$log" 2>&1 && is_valid; then
        echo ok >"$W/status/$tag"
        echo "step.sh: $name: done ($out)"
        exit 0
    fi
done
echo failed >"$W/status/$tag"
echo "step.sh: $name FAILED after $((RETRIES + 1)) attempts (log: $log)" >&2
tail -n 3 "$log" | sed 's/^/    /' >&2
exit 1
