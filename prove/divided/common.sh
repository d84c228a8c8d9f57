# prove/divided/common.sh - the drivers' shared options and WORKDIR/config
# (sourced by local.sh and slurm.sh, not run).
#
# Options: -d WORKDIR (shared by every machine) -o OUT (the ruledb)
#   -n N               synth shards (default 4)
#   --parts M          synth merge parts (default N)
#   --prove-shards P   prove shards, at most 16 (default min(N, 16))
#   --retries R        retries of a failing step (default 1)
#   --bin DIR          the binaries (default: this checkout's out/bin)
#   --axioms FILE      prove's axioms (default: this checkout's opspecs/axioms.ax)
#   --synth-args "..." options for synth (--max-ops, --ops, --threads ...)
#   --prove-args "..." options for prove (--jobs, --max-instances ...)
#   --no-timings       0 for every time in the files: reruns give equal bytes
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W="" OUT="" N=4 PARTS="" NP="" RETRIES=1 BIN=$here/../../out/bin AXIOMS=$here/../../opspecs/axioms.ax
synth_args="" prove_args="" no_timings=""

die() { echo "$prog: $*" >&2; exit 2; }

# The driver's header comment (its lines 2.. up to the first line that is
# not a comment), then the options above.
usage() {
    awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//'
    awk 'NR > 3 && !/^#/ {exit} NR > 3' "$here/common.sh" | sed 's/^# \{0,1\}//'
}

# parse_common ARGS...: --help, or the variables above; unknown options
# go to the array REST for the driver.
parse_common() {
    case "${1:-}" in -h|--help) usage; exit 0 ;; esac
    REST=()
    while [ $# -gt 0 ]; do
        case "$1" in
        -d) W=$2; shift ;;
        -o) OUT=$2; shift ;;
        -n) N=$2; shift ;;
        --parts) PARTS=$2; shift ;;
        --prove-shards) NP=$2; shift ;;
        --retries) RETRIES=$2; shift ;;
        --bin) BIN=$2; shift ;;
        --axioms) AXIOMS=$2; shift ;;
        --synth-args) synth_args=$2; shift ;;
        --prove-args) prove_args=$2; shift ;;
        --no-timings) no_timings=--no-timings ;;
        *) REST+=("$1") ;;
        esac
        shift
    done
    [ -n "$W" ] && [ -n "$OUT" ] || die "need -d WORKDIR and -o OUT ($prog --help)"
    [[ "$N" =~ ^[0-9]+$ ]] && [ "$N" -ge 2 ] && [ "$N" -le 64 ] || die "-n $N: need 2..64 shards"
    PARTS=${PARTS:-$N}
    NP=${NP:-$((N < 16 ? N : 16))}
    [[ "$NP" =~ ^[0-9]+$ ]] && [ "$NP" -ge 2 ] && [ "$NP" -le 16 ] || die "--prove-shards $NP: need 2..16"
    [[ "$RETRIES" =~ ^[0-9]+$ ]] || die "--retries $RETRIES: not a number"
    [ -x "$BIN/synth" ] && [ -x "$BIN/prove" ] && [ -x "$BIN/ruledb" ] || die "no binaries in $BIN (run ninja)"
    [ -r "$AXIOMS" ] || die "--axioms $AXIOMS: cannot read"
    mkdir -p "$W" || die "cannot create $W"
    W=$(cd "$W" && pwd) BIN=$(cd "$BIN" && pwd)
    AXIOMS=$(cd "$(dirname "$AXIOMS")" && pwd)/$(basename "$AXIOMS")
    case "$OUT" in /*) ;; *) OUT=$PWD/$OUT ;; esac
}

# replace_if_changed TMP FILE: FILE keeps its date when TMP has its bytes.
replace_if_changed() { if cmp -s "$1" "$2"; then rm -f "$1"; else mv "$1" "$2"; fi; }

# Write WORKDIR/config, and the stamps synth/args and prove/args (what the
# shards' outputs depend on, an input of their steps), each replaced only
# when it changes: a rerun with the same options redoes nothing that is
# done, even with other binaries' paths or retries.
write_config() {
    local tmp=$W/config.tmp.$$
    mkdir -p "$W/synth" "$W/prove"
    echo "$N $PARTS $no_timings $synth_args" >"$W/synth/args.tmp.$$"
    replace_if_changed "$W/synth/args.tmp.$$" "$W/synth/args"
    echo "$NP $AXIOMS $no_timings $prove_args" >"$W/prove/args.tmp.$$"
    replace_if_changed "$W/prove/args.tmp.$$" "$W/prove/args"
    {
        echo "# written by $prog; read by step.sh"
        printf 'BIN=%q\nOUT=%q\nN=%q\nPARTS=%q\nNP=%q\nRETRIES=%q\n' "$BIN" "$OUT" "$N" "$PARTS" "$NP" "$RETRIES"
        # shellcheck disable=SC2086
        printf 'SYNTH_ARGS=(-q %s %s)\n' "$no_timings" "$synth_args"
        printf 'MERGE_ARGS=(-q %s)\n' "$no_timings"
        printf 'PROVE_ARGS=(-q --axioms %q %s %s)\n' "$AXIOMS" "$no_timings" "$prove_args"
    } >"$tmp"
    replace_if_changed "$tmp" "$W/config"
}

# failed_steps: the steps whose last attempt failed, one per line.
failed_steps() {
    local f
    for f in "$W"/status/*; do
        [ -e "$f" ] && [ "$(cat "$f")" = failed ] && echo "  $(basename "$f") (log: $W/logs/$(basename "$f").log)"
    done
    return 0
}
