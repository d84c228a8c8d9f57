#!/usr/bin/env bash
# prove/regen.sh - the shipped ruledb's recipe, one place for `ninja ruledb`
# (prove/module.ninja) and bench/regen.sh.
#
#   prove/regen.sh BIN WORKDIR OUT PRUNED [LOGDIR]
#
# synth at depth 3 over every operator, plus depth 4 over matmul, concat
# and the splits, and over conv2d, concat and the splits (1x1 and 3x3
# weights), and over linear, bias, scale, concat and the splits (token
# sequences): the two-output merges of matmuls, convs or projections sharing
# an input, and of the biases after them, need four operators on their
# right side. And depth 3 over conv2d with groups 1 and 2 (the channels of
# the activations, so 2 is depthwise), the identity kernels iconv and
# dwiconv at 3x3 and 1x1, scale, ewadd and ewsub, over activations, vectors
# and a depthwise 3x3 kernel (the opt-in pool type dw3x3): a per-channel
# scale (a batchnorm-only branch) or the bare input (RepViT's x + dwconv(x),
# FastViT's dwconv(x) - bn(x)) as a conv, dense or depthwise (prove
# generalizes the group count), that a block's other convs can merge
# with. Only there: identity kernels wrapped around every relu and add of
# the depth-3 run would give the backtracking search a plateau of
# near-free 1x1 and depthwise convs. Merged, then proved with a fixed
# seed, no timings in the file, so only the deterministic budgets decide a
# check (the same bytes on any machine and with any --jobs): OUT, every
# proved rule. Then pruned by derivability (equations, a rule and its
# reverse, each dropped when the smaller ones kept derive it in the
# engine's e-graph, bounded by rounds and e-nodes, never by time), in
# three steps over OUT: PRUNED, one rule per equation kept (the engine
# reads each rule both ways), the set built into the engine. When there,
# ruledb/depth4.tasodb (DEPTH4 names another) is pruned in with four
# more: depth 4 over every operator, the rules the divided run
# (prove/divided/, hours on two cores, so not rerun here) proved that the
# depth-3 set did not derive (prove --known; the command is in
# bench/results/regen.md). The last step derives at 6 rounds and 20,000
# e-nodes: 1,996 rules, and the engine's search runs 6 rounds a pass and
# 100,000 e-nodes to end as cheap with them (docs/rules.md). With LOGDIR,
# each step's summary goes to LOGDIR/STEP.log (bench/regen.sh reads them)
# and its counts to stdout, a line or two per step; without it the steps
# are quiet.
set -euo pipefail
[ $# -ge 4 ] || { sed -n '4p' "$0" | sed 's/^# *//' >&2; exit 2; }
bin=$1 work=$2 out=$3 pruned=$4 logs=${5:-}
depth4=${DEPTH4:-$(dirname "$0")/../ruledb/depth4.tasodb}
mkdir -p "$work"
step() { # step NAME PROGRAM ARGS...: run quietly, or logged and timed
    local name=$1; shift
    if [ -z "$logs" ]; then "$1" -q "${@:2}"; return; fi
    local timer=()
    [ -x /usr/bin/time ] && timer=(/usr/bin/time -v)
    "${timer[@]}" "$@" >"$logs/$name.log" 2>&1
    # the counts: synth's "written", prove's verdicts and rules (not its progress lines)
    grep -E '^(synth: written|prove: [0-9]+ (candidates|pairs|rules with)|prove: rules|prove: wall|prove: .*equations \(a rule)' "$logs/$name.log" |
        sed "s/^[a-z]*: /$name: /" || true
}
step synth-d3 "$bin/synth" --no-timings --max-ops 3 --seed 1 -o "$work/candidates-d3.tasodb"
step synth-d4mm "$bin/synth" --no-timings --max-ops 4 --ops matmul,concat,split0,split1 --seed 1 \
    -o "$work/candidates-d4mm.tasodb"
step synth-d4lin "$bin/synth" --no-timings --max-ops 4 --ops linear,bias,scale,concat,split0,split1 \
    --types seq,matrix,vec3 --seed 1 -o "$work/candidates-d4lin.tasodb"
step synth-d3id "$bin/synth" --no-timings --max-ops 3 --ops conv2d,iconv,dwiconv,scale,ewadd,ewsub --groups2 \
    --kernels1x1 --types act,vec2,dw3x3 --seed 1 -o "$work/candidates-d3id.tasodb"
step synth-d4conv "$bin/synth" --no-timings --max-ops 4 --ops conv2d,concat,split0,split1 \
    --types act,w1x1,w3x3 --seed 1 -o "$work/candidates-d4conv.tasodb"
"$bin/ruledb" merge -o "$work/candidates.tasodb" "$work/candidates-d3.tasodb" \
    "$work/candidates-d4mm.tasodb" "$work/candidates-d4conv.tasodb" "$work/candidates-d4lin.tasodb" \
    "$work/candidates-d3id.tasodb"
step prove "$bin/prove" --no-timings --seed 1 "$work/candidates.tasodb" -o "$out"
# The pruning: by equation from the smallest up, then twice again over
# what the previous step kept (--from) by detours (a rule that only
# writes a split of a concat or a product with ones around what the others
# derive goes), each time every rule of OUT checked against the file
# written and kept when not derived (prove/derive.c; docs/rules.md).
third=$pruned
[ -f "$depth4" ] && third=$work/pruned-3.tasodb
step prune "$bin/prove" --prune-derivable "$out" -o "$work/pruned-1.tasodb"
step prune-2 "$bin/prove" --prune-derivable "$out" --from "$work/pruned-1.tasodb" --derive-by detours \
    -o "$work/pruned-2.tasodb"
step prune-3 "$bin/prove" --prune-derivable "$out" --from "$work/pruned-2.tasodb" --derive-by detours -o "$third"
# With the depth-4 file, four times more over OUT and the depth-4 rules
# merged, from the set pruned so: the first keeps every depth-4 rule that
# set does not derive (its checks against the file), the next two prune
# those and the set together, smallest first, and the last once more at
# 6 rounds and 20,000 e-nodes. (The first step over the merged file from
# nothing took an hour here: it keeps many times more before its checks.)
# The last step's rounds are the engine's search's rounds a pass (6): a
# rule derived only in more is one the search may not find in a model
# (bench/results/regen.md: at 8 rounds two Transposes around a Relu
# stay). At 4 rounds the union keeps 2,414 rules; at 6, 1,996, and the
# search needs 100,000 e-nodes a pass to end as cheap with them as with
# the depth-3 set alone (bench/results/depth4/schedule_r6.md).
if [ -f "$depth4" ]; then
    full=$work/full.tasodb
    "$bin/ruledb" merge -o "$full" "$out" "$depth4"
    step prune-4 "$bin/prove" --prune-derivable "$full" --from "$third" --derive-by detours \
        -o "$work/pruned-4.tasodb"
    step prune-5 "$bin/prove" --prune-derivable "$full" --from "$work/pruned-4.tasodb" --derive-by detours \
        -o "$work/pruned-5.tasodb"
    step prune-6 "$bin/prove" --prune-derivable "$full" --from "$work/pruned-5.tasodb" --derive-by detours \
        -o "$work/pruned-6.tasodb"
    step prune-7 "$bin/prove" --prune-derivable "$full" --from "$work/pruned-6.tasodb" --derive-by detours \
        --derive-rounds 6 --derive-nodes 20000 -o "$pruned"
fi
