#!/usr/bin/env bash
# cli_prove.sh - the prove tool's exit codes and messages (TAP).
# BIN names the directory holding the binaries; the fixtures come from
# BIN/../test/test_prove --fixtures (candidates, a ruledb with one planted
# unsound rule, candidates of another opspecs digest).
set -u
: "${BIN:?BIN must name the binary directory}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.inc"
prove="$BIN/prove"

planted=$("$BIN/../test/test_prove" --fixtures "$tmp" 2>/dev/null)
check "fixtures written" test -s "$tmp/cands.tasodb" -a -s "$tmp/unsound.tasodb" -a -n "$planted"

# proving and re-proving
check "prove a candidates file: exit 0" \
    status_is 0 "$prove" -q --jobs 2 "$tmp/cands.tasodb" -o "$tmp/sound.tasodb"
check "... writes a rules file" \
    sh -c "'$BIN/ruledb' info '$tmp/sound.tasodb' | grep -q '^kind: *rules'"
check "... prints a summary unless -q" \
    status_is 0 "$prove" --jobs 1 "$tmp/cands.tasodb" -o "$tmp/sound1.tasodb"
check "... with the counts" grep -q "candidates in .* classes .*: .* proved" "$tmp/err"
check "--check on a sound ruledb: exit 0" status_is 0 "$prove" -q --check "$tmp/sound.tasodb"
check "--check on a planted unsound rule: exit 1" \
    status_is 1 "$prove" --check "$tmp/unsound.tasodb"
check "... its id on stderr" grep -q "ids: $planted\$" "$tmp/err"
check "same rules with --jobs 1 and 2 (ruledb diff)" \
    status_is 0 "$BIN/ruledb" diff "$tmp/sound.tasodb" "$tmp/sound1.tasodb"
check "--no-timings reruns are byte-identical" sh -c "
    '$prove' -q --no-timings --jobs 1 '$tmp/cands.tasodb' -o '$tmp/a.tasodb' &&
    '$prove' -q --no-timings --jobs 2 '$tmp/cands.tasodb' -o '$tmp/b.tasodb' &&
    cmp -s '$tmp/a.tasodb' '$tmp/b.tasodb'"

# A divided run: 3 shards of the Z3 lanes, merged with the final pruning,
# give the undivided ruledb byte for byte. Candidates of depth 2 with 1x1
# convs, so pairs are retried with kernel guards in several lanes.
"$BIN/synth" -q --no-timings --max-ops 2 --ops conv2d,relu,ewadd,matmul,transpose -o "$tmp/d2.tasodb"
"$prove" -q --no-timings --jobs 2 "$tmp/d2.tasodb" -o "$tmp/whole.tasodb"
for k in 0 1 2; do "$prove" -q --no-timings --jobs 2 --shard $k/3 "$tmp/d2.tasodb" -o "$tmp/part$k.tasodb"; done
check "prove shards merged: byte-identical to the undivided ruledb" sh -c "
    '$prove' -q --no-timings --merge '$tmp/d2.tasodb' -o '$tmp/merged.tasodb' \
        '$tmp/part2.tasodb' '$tmp/part0.tasodb' '$tmp/part1.tasodb' &&
    cmp -s '$tmp/merged.tasodb' '$tmp/whole.tasodb'"
check "... with rules from kernel-guarded retries" sh -c "
    '$BIN/ruledb' info '$tmp/whole.tasodb' | grep -q 'kernel1 retried=[1-9][0-9]* proved=[1-9]'"
shard_pairs() { "$BIN/ruledb" info "$tmp/part$1.tasodb" | sed -n 's/^note: *candidates=\([0-9]*\) .*/\1/p'; }
whole_pairs=$("$BIN/ruledb" info "$tmp/whole.tasodb" | sed -n 's/^note: *candidates=\([0-9]*\) .*/\1/p')
check "... each shard decided a part of the pairs, together all of them" sh -c "
    test $(shard_pairs 0) -gt 0 -a $(shard_pairs 1) -gt 0 -a $(shard_pairs 2) -gt 0 &&
    test $(( $(shard_pairs 0) + $(shard_pairs 1) + $(shard_pairs 2) )) -eq $whole_pairs"
check "merge without shard 1: exit 2" \
    status_is 2 "$prove" --merge "$tmp/d2.tasodb" -o "$tmp/m2.tasodb" "$tmp/part0.tasodb" "$tmp/part2.tasodb"
check "... naming the missing shard" grep -q "shard 1 of 3 missing" "$tmp/err"
check "... and nothing written" test ! -e "$tmp/m2.tasodb"
check "merge with another candidates file: exit 2" \
    status_is 2 "$prove" --merge "$tmp/cands.tasodb" -o "$tmp/m2.tasodb" "$tmp/part0.tasodb" "$tmp/part1.tasodb" "$tmp/part2.tasodb"
check "... naming the shard" grep -q "part0.tasodb: proved from another candidates file" "$tmp/err"
check "merge with other prover options: exit 2" \
    status_is 2 "$prove" --max-instances 7 --merge "$tmp/d2.tasodb" -o "$tmp/m2.tasodb" "$tmp/part0.tasodb" "$tmp/part1.tasodb" "$tmp/part2.tasodb"
check "merging an undivided ruledb: exit 2" \
    status_is 2 "$prove" --merge "$tmp/d2.tasodb" -o "$tmp/m2.tasodb" "$tmp/whole.tasodb" "$tmp/part1.tasodb"
check "--shard 0/17: exit 2 (at most 16 lanes)" status_is 2 "$prove" --shard 0/17 "$tmp/d2.tasodb" -o "$tmp/x.tasodb"

# verdicts depend on the rules, the axioms and the options only: the same
# per-rule verdicts (and reasons) with 1 and 2 jobs, and beside two busy
# processes. mixed.tasodb has a false rule, the planted one, and a true rule
# that needs more than 2000 instances.
verdicts() { status_is 1 "$prove" --check --verdicts --max-instances 2000 "$@" "$tmp/mixed.tasodb"; }
check "mixed rules, --jobs 1: exit 1 (rules not re-proved)" verdicts --jobs 1
cp "$tmp/out" "$tmp/v1"
nrules=$("$BIN/ruledb" info "$tmp/mixed.tasodb" | sed -n 's/^rules: *\([0-9]*\),.*/\1/p')
check "... every rule has a verdict line" test "$(wc -l <"$tmp/v1")" -eq "$nrules"
check "... the planted rule: refuted by evaluation, with the instance" \
    grep -q "^$planted refuted by evaluation: output 0 differs at x0=\[" "$tmp/v1"
check "... the hard rule: budget, naming the instance budget" \
    grep -q "^[0-9]* budget: instance budget spent (.* of 2000 kept" "$tmp/v1"
check "... the others proved" test "$(grep -c '^[0-9]* proved$' "$tmp/v1")" -eq $((nrules - 3))
check "... stderr names each failing rule and its reason" \
    grep -q "rule $planted not proved: refuted by evaluation" "$tmp/err"
check "... and counts them by reason" grep -q "(2 refuted by evaluation, 1 budget); ids:" "$tmp/err"
check "same verdicts with --jobs 2" sh -c "
    '$prove' --check --verdicts --max-instances 2000 --jobs 2 '$tmp/mixed.tasodb' \
        >'$tmp/v2' 2>/dev/null; cmp -s '$tmp/v1' '$tmp/v2'"
hogs=""
for _ in 1 2; do (while :; do :; done) & hogs="$hogs $!"; done
check "same verdicts with --jobs 2 beside two busy processes" sh -c "
    '$prove' --check --verdicts --max-instances 2000 --jobs 2 '$tmp/mixed.tasodb' \
        >'$tmp/v3' 2>/dev/null; cmp -s '$tmp/v1' '$tmp/v3'"
kill $hogs 2>/dev/null; wait $hogs 2>/dev/null
check "the opt-in clock, when it fires, is named and exits 2" sh -c "
    '$prove' --check --timeout 1 --max-instances 0 --rlimit 0 '$tmp/mixed.tasodb' \
        >/dev/null 2>'$tmp/clk'; s=\$?; grep -q ' not proved: clock: wall-clock limit of 1 ms' '$tmp/clk' &&
    test \$s -eq 2 || ! grep -q ' clock: ' '$tmp/clk'"

# bad input: exit 2 with a message naming the file
check "other opspecs digest: exit 2" \
    status_is 2 "$prove" "$tmp/other.tasodb" -o "$tmp/x.tasodb"
check "... says so" grep -q "other opspecs" "$tmp/err"
head -c 100 "$tmp/cands.tasodb" >"$tmp/trunc.tasodb"
check "truncated candidates: exit 2" status_is 2 "$prove" "$tmp/trunc.tasodb" -o "$tmp/x.tasodb"
check "... names the file" grep -q "trunc.tasodb" "$tmp/err"
head -c 4096 /dev/urandom >"$tmp/junk.tasodb"
check "random bytes: exit 2" status_is 2 "$prove" "$tmp/junk.tasodb" -o "$tmp/x.tasodb"
check "a rules file as candidates: exit 2" \
    status_is 2 "$prove" "$tmp/sound.tasodb" -o "$tmp/x.tasodb"
check "--check on a candidates file: exit 2" status_is 2 "$prove" --check "$tmp/cands.tasodb"
check "--check on a missing file: exit 2" status_is 2 "$prove" --check "$tmp/none.tasodb"
check "no output was left behind" test ! -e "$tmp/x.tasodb"
printf '(axiom a "c" ((x tensor)) (relu x)\n (bogus x))\n' >"$tmp/bad.ax"
check "axioms that do not parse: exit 2" \
    status_is 2 "$prove" --axioms "$tmp/bad.ax" "$tmp/cands.tasodb" -o "$tmp/x.tasodb"
check "... message has file:line" grep -q "bad.ax:2:" "$tmp/err"

# axiom hygiene: the shipped axioms in the release build (a minute; under
# ASan several, and the same code checks num.ax below in both builds)
case "$BIN" in
*asan*) ;;
*)
    check "--axioms-check with wrong.ax: exit 0" \
        status_is 0 "$prove" --axioms-check opspecs/axioms.ax --wrong opspecs/wrong.ax
    check "... every line as expected" grep -q " 0 not$" "$tmp/out"
    ;;
esac
check "--axioms-check on false axioms: exit 1" status_is 1 "$prove" --axioms-check opspecs/wrong.ax
check "--axioms-check on a bad file: exit 2" status_is 2 "$prove" --axioms-check "$tmp/bad.ax"

# the axioms behind a budget: four true axioms over ewsub that loop with
# ewadd-assoc (the four a researcher adding ewsub first wrote)
cp opspecs/axioms.ax "$tmp/loopy.ax"
cat >>"$tmp/loopy.ax" <<'AX'
(axiom sub-of-sum "x-(y+z) = (x-y)-z" ((x tensor) (y tensor) (z tensor))
  (ewsub x (ewadd y z)) (ewsub (ewsub x y) z))
(axiom sum-minus "(x+y)-z = x+(y-z)" ((x tensor) (y tensor) (z tensor))
  (ewsub (ewadd x y) z) (ewadd x (ewsub y z)))
(axiom sub-of-diff "x-(y-z) = (x-y)+z" ((x tensor) (y tensor) (z tensor))
  (ewsub x (ewsub y z)) (ewadd (ewsub x y) z))
(axiom add-zero-diff "y+(x-x) = y" ((x tensor) (y tensor))
  (ewadd y (ewsub x x)) y)
AX
"$BIN/synth" -q --max-ops 3 --ops ewadd,ewsub --seed 1 -o "$tmp/sub.tasodb"
check "a run with looping axioms: exit 0" status_is 0 "$prove" "$tmp/sub.tasodb" \
    -o "$tmp/sub-rules.tasodb" --axioms "$tmp/loopy.ax" --rlimit 500000 --jobs 2
check "... its summary names the looping axioms" \
    sh -c "grep 'the axioms behind the budget' '$tmp/err' | grep sub-of-diff | grep sum-minus | grep -q sub-of-sum"
check "the shipped axioms on the same: exit 0" status_is 0 "$prove" \
    "$tmp/sub.tasodb" -o "$tmp/sub-rules0.tasodb" --rlimit 500000 --jobs 2
check "... no check out of budget, no such report" \
    sh -c "grep -q ' 0 timeout' '$tmp/err' && ! grep -q 'budget' '$tmp/err'"
"$BIN/synth" -q --max-ops 3 --ops ewadd,ewsub,ewmul --seed 1 -o "$tmp/sub3.tasodb"
check "--axioms-check --sample with the looping axioms: exit 0" status_is 0 "$prove" \
    --axioms-check "$tmp/loopy.ax" --no-hygiene --sample "$tmp/sub3.tasodb" --rlimit 2000000
check "... warns about one of them" grep -q "^WARN sum-minus" "$tmp/out"
check "... the profile names the others" \
    sh -c "grep '^# instances by axiom' '$tmp/out' | grep sub-of-diff | grep -q sub-of-sum"
check "--axioms-check --sample with the shipped axioms: no warning" status_is 0 "$prove" \
    --axioms-check --no-hygiene --sample "$tmp/sub3.tasodb" --rlimit 2000000
check "... none" grep -q "^0 warnings" "$tmp/out"
# numbers in the axiom language: -1 and 0.5 as rank-0 tensors
cat >"$tmp/num.ax" <<'AX'
(axiom sub-as-add "x - y = x + (-1) y" ((x tensor) (y tensor))
  (ewsub x y) (ewadd x (smul y -1)))
(axiom half-twice "(x * 0.5) * 2 = x" ((x tensor))
  (smul (smul x 0.5) 2) x)
AX
cat >"$tmp/numwrong.ax" <<'AX'
(axiom sub-as-add-wrong "x - y = x + 1 y" ((x tensor) (y tensor))
  (ewsub x y) (ewadd x (smul y 1)))
(axiom quarter-twice-wrong "(x * 0.25) * 2 = x" ((x tensor))
  (smul (smul x 0.25) 2) x)
AX
check "--axioms-check with numbers: exit 0" \
    status_is 0 "$prove" --axioms-check "$tmp/num.ax" --wrong "$tmp/numwrong.ax"
check "... z3 proves the true ones and not the wrong ones" \
    sh -c "grep -q 'ok   sub-as-add  *30 instances, z3 proved' '$tmp/out' &&
           grep -q 'ok   quarter-twice-wrong *refuted' '$tmp/out' && grep -q ' 0 not$' '$tmp/out'"
check "--no-hygiene without --sample: exit 2" status_is 2 "$prove" --axioms-check --no-hygiene

# usage
check "--help: exit 0" status_is 0 "$prove" --help
check "--version: exit 0" status_is 0 "$prove" --version
check "no arguments: usage, exit 2" status_is 2 "$prove"
check "no -o: exit 2" status_is 2 "$prove" "$tmp/cands.tasodb"
check "bad --timeout: exit 2" status_is 2 "$prove" --timeout x "$tmp/cands.tasodb" -o "$tmp/x"
check "unknown option: exit 2" status_is 2 "$prove" --frobnicate

# the shipped ruledb re-proves (what CI runs): the release build the whole
# built-in set; the sanitizer build, where its 36,420 rules take over ten
# minutes, the same code on the pruned set only (below, in both builds),
# and a sparser sample of the derivation
every=50
case "$BIN" in
*asan*) every=250 ;;
*)
    check "shipped ruledb/default.tasodb: --check exit 0, every rule proved" sh -c "
        '$prove' --check --verdicts ruledb/default.tasodb >'$tmp/shipped' 2>'$tmp/shipped.err' &&
        test \$(grep -c '^[0-9]* proved\$' '$tmp/shipped') -eq \$('$BIN/ruledb' info ruledb/default.tasodb |
            sed -n 's/^rules: *\([0-9]*\).*/\1/p')"
    ;;
esac
# the pruned set (ruledb/pruned.tasodb): proved, and nothing lost: a sample
# of the shipped set is in it, the reverse of one of its rules, or derived
check "ruledb/pruned.tasodb: --check exit 0, every rule proved" sh -c "
    '$prove' --check --verdicts ruledb/pruned.tasodb >'$tmp/pruned' 2>'$tmp/pruned.err' &&
    test \$(grep -c '^[0-9]* proved\$' '$tmp/pruned') -eq \$('$BIN/ruledb' info ruledb/pruned.tasodb |
        sed -n 's/^rules: *\([0-9]*\).*/\1/p')"
check "ruledb/default.tasodb against ruledb/pruned.tasodb: every ${every}th rule not in it is derived (--derive --every $every)" sh -c "
    '$prove' --derive ruledb/pruned.tasodb ruledb/default.tasodb --every $every 2>'$tmp/derive.err' &&
    grep -qE ': [0-9]+ rules: [0-9]+ shipped, [0-9]+ the reverse of a shipped rule, [1-9][0-9]* \(a sample\) checked: [0-9]+ derived from them, 0 neither' '$tmp/derive.err'"
check "the pruned set is the shipped set pruned: fewer rules, said so" sh -c "
    test \$('$BIN/ruledb' info ruledb/pruned.tasodb | sed -n 's/^rules: *\([0-9]*\).*/\1/p') -lt \
        \$('$BIN/ruledb' info ruledb/default.tasodb | sed -n 's/^rules: *\([0-9]*\).*/\1/p') &&
    '$BIN/ruledb' info ruledb/pruned.tasodb | grep -q '^note: *pruned by derivability'"
# the checks run on threads: the same verdicts, in the same order, with 1 and 2
for j in 1 2; do
    "$prove" --derive ruledb/pruned.tasodb ruledb/default.tasodb --every 200 --derive-rounds 1 --derive-nodes 300 \
        --jobs $j 2>&1 | grep -v ' checked$' | sed 's/, [0-9.]* s (rounds/, s (rounds/' >"$tmp/jobs$j"
done
check "--derive at tight bounds with --jobs 1 and --jobs 2: the same rules not derived, in the same order" sh -c "
    test \$(grep -c '^not derived: ' '$tmp/jobs1') -gt 0 && cmp -s '$tmp/jobs1' '$tmp/jobs2'"
check "--derive-by of no known kind: exit 2" status_is 2 "$prove" --derive ruledb/default.tasodb ruledb/default.tasodb --derive-by sideways
echo "1..$n"
