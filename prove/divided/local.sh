#!/usr/bin/env bash
# prove/divided/local.sh - rule generation divided into N shards, run as
# parallel processes on this machine: the steps of the Slurm driver
# (step.sh), stage by stage, each stage's shards -j at a time.
#
#   prove/divided/local.sh -d WORKDIR -o OUT [-n N] [-j J] [options]
#
# -j J: processes at once (default N). Other options: common.sh. Exit 0
# with OUT written; 1 when a step failed (named on stderr with its log);
# 2 bad usage. Rerunning skips every step whose output is valid.
set -uo pipefail
prog=local.sh
. "$(dirname "$0")/common.sh"
parse_common "$@"
J=$N
set -- "${REST[@]+"${REST[@]}"}"
while [ $# -gt 0 ]; do
    case "$1" in
    -j) J=$2; shift ;;
    *) die "unknown option '$1'" ;;
    esac
    shift
done
[[ "$J" =~ ^[0-9]+$ ]] && [ "$J" -ge 1 ] || die "-j $J: not a positive number"
write_config
rm -f "$W"/status/*

# stage NAME COUNT: step NAME for indices 0..COUNT-1 (COUNT 0: no index)
stage() {
    local name=$1 count=$2 rc=0
    if [ "$count" = 0 ]; then
        "$here/step.sh" "$W" "$name" || rc=1
    else
        seq 0 $((count - 1)) | xargs -P "$J" -I{} "$here/step.sh" "$W" "$name" {} || rc=1
    fi
    if [ $rc -ne 0 ]; then
        echo "$prog: stage '$name' failed; steps that failed:" >&2
        failed_steps >&2
        echo "$prog: rerun the same command to redo only what is missing" >&2
        exit 1
    fi
}

t0=$(date +%s)
stage synth "$N"
stage part "$PARTS"
stage candidates 0
stage prove "$NP"
stage final 0
echo "$prog: wrote $OUT ($N synth shards, $PARTS parts, $NP prove shards; $(( $(date +%s) - t0 )) s)"
