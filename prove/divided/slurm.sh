#!/usr/bin/env bash
# prove/divided/slurm.sh - rule generation divided into N shards as Slurm
# jobs: a synth job array -> a synth merge array (one task per part) -> the
# candidates job -> a prove job array -> the final merge and pruning job,
# each after the one before succeeded (--dependency=afterok, and
# --kill-on-invalid-dep so a failure cancels what depends on it). Every
# task runs prove/divided/step.sh, which skips valid outputs: resubmitting
# after a failure redoes only what is missing. A synth array is submitted
# only for the shards whose files are not complete yet.
#
#   prove/divided/slurm.sh -d WORKDIR -o OUT [-n N] [options] [--sbatch "ARGS"] [--wait]
#
# WORKDIR must be on a file system every node sees. --sbatch: options for
# every sbatch (--partition, --account, --time, --cpus-per-task, --mem ...).
# --wait: wait for the last job, then report (exit 1 and the failed steps
# by name when one failed). Other options: common.sh. Prints the job ids.
set -uo pipefail
prog=slurm.sh
. "$(dirname "$0")/common.sh"
parse_common "$@"
sbatch_args="" wait=""
set -- "${REST[@]+"${REST[@]}"}"
while [ $# -gt 0 ]; do
    case "$1" in
    --sbatch) sbatch_args=$2; shift ;;
    --wait) wait=1 ;;
    *) die "unknown option '$1'" ;;
    esac
    shift
done
command -v sbatch >/dev/null || die "sbatch not found (is Slurm installed and SLURM_CONF set?)"
write_config
mkdir -p "$W/logs" "$W/status"
rm -f "$W"/status/*

# submit NAME ARRAY DEPENDENCY STEP: the job id (ARRAY "" for one task)
submit() {
    local name=$1 array=$2 dep=$3 step=$4 args=()
    # shellcheck disable=SC2206
    args=(--parsable --job-name="tasoc-$name" --output="$W/logs/slurm-$name-%A_%a.out"
          --kill-on-invalid-dep=yes $sbatch_args)
    [ -n "$array" ] && args+=(--array="$array")
    [ -n "$dep" ] && args+=(--dependency="afterok:$dep")
    sbatch "${args[@]}" "$here/step.sh" "$W" "$step" | cut -d';' -f1
}

# The synth shards not complete yet, as an array list ("" when none).
todo=""
for k in $(seq 0 $((N - 1))); do
    "$BIN/synth" -q --verify-shard "$W/synth/shard-$k.shd" >/dev/null 2>&1 &&
        [ "$W/synth/shard-$k.shd" -nt "$W/synth/args" ] || todo="$todo${todo:+,}$k"
done
jobs=()
dep=""
if [ -n "$todo" ]; then
    dep=$(submit synth "$todo" "" synth) || die "sbatch failed (synth array)"
    jobs+=("synth[$todo]=$dep")
fi
dep=$(submit part "0-$((PARTS - 1))" "$dep" part) || die "sbatch failed (part array)"; jobs+=("part=$dep")
dep=$(submit cands "" "$dep" candidates) || die "sbatch failed (candidates)"; jobs+=("candidates=$dep")
dep=$(submit prove "0-$((NP - 1))" "$dep" prove) || die "sbatch failed (prove array)"; jobs+=("prove=$dep")
final=$(submit final "" "$dep" final) || die "sbatch failed (final)"; jobs+=("final=$final")
echo "$prog: submitted ${jobs[*]}; logs in $W/logs"
[ -n "$wait" ] || exit 0

# Wait until the final job has left the queue (done, failed or cancelled).
while squeue -h -j "$final" 2>/dev/null | grep -q .; do sleep 2; done
if "$BIN/ruledb" info "$OUT" >/dev/null 2>&1 && [ -e "$W/status/final" ] && [ "$(cat "$W/status/final")" = ok ]; then
    echo "$prog: wrote $OUT"
    exit 0
fi
echo "$prog: the pipeline did not finish; steps that failed:" >&2
failed_steps >&2
echo "$prog: jobs after a failed one were cancelled; rerun the same command to redo only what is missing" >&2
exit 1
