#!/usr/bin/env bash
# cli_divided.sh - rule generation divided into shards on one machine
# (prove/divided/local.sh, TAP): the ruledb equals the undivided run's
# byte for byte; a rerun skips what is done and redoes what is missing;
# a failing shard is retried, or reported by name. BIN names the binaries.
set -u
: "${BIN:?BIN must name the binary directory}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.inc"
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$BIN" && pwd)
L=$root/prove/divided/local.sh
ax=$root/opspecs/axioms.ax
SY=(--max-ops 3 --ops matmul,ewadd,relu,transpose --threads 1)
drive() { "$L" --bin "$1" -d "$2" -o "$2/rules.tasodb" -n 3 -j 2 --no-timings --axioms "$ax" \
              --synth-args "${SY[*]}" --prove-args "--jobs 1"; }

"$BIN/synth" -q --no-timings "${SY[@]}" -o "$tmp/whole-cands.tasodb"
"$BIN/prove" -q --no-timings --jobs 1 --axioms "$ax" "$tmp/whole-cands.tasodb" -o "$tmp/whole.tasodb"
check "3 local shards: exit 0" status_is 0 drive "$BIN" "$tmp/w"
check "... candidates byte-identical to the undivided synth" cmp -s "$tmp/w/candidates.tasodb" "$tmp/whole-cands.tasodb"
check "... ruledb byte-identical to the undivided synth + prove" cmp -s "$tmp/w/rules.tasodb" "$tmp/whole.tasodb"
check "... which has rules" sh -c "'$BIN/ruledb' info '$tmp/w/rules.tasodb' | grep -q '^rules: *[1-9]'"
check "... each step's log holds its time, CPU and peak memory" sh -c "grep -q '^step.sh: used: wall .* peak RSS [0-9]* KB, exit 0' '$tmp/w/logs/synth-0.log' &&
    grep -q '^step.sh: used: wall' '$tmp/w/logs/prove-1.log' && grep -q '^step.sh: used: wall' '$tmp/w/logs/final.log'"
check "... bench/divided_report.py sums them by stage" sh -c "python3 '$root/bench/divided_report.py' '$tmp/w' |
    grep -q '^| synth | 3 of 3 | 3 |'"
check "rerun: exit 0" status_is 0 drive "$BIN" "$tmp/w"
check "... every step skipped (11 done already)" test "$(grep -c 'done already' "$tmp/out")" -eq 11
rm "$tmp/w/synth/shard-2.shd"
check "a shard file lost: rerun exit 0" status_is 0 drive "$BIN" "$tmp/w"
check "... redoes synth shard 2 only" sh -c "grep -q 'synth shard 2 of 3: done (' '$tmp/out' &&
    grep -q 'synth shard 0 of 3: done already' '$tmp/out' && grep -q 'synth shard 1 of 3: done already' '$tmp/out'"
check "... and the same ruledb" cmp -s "$tmp/w/rules.tasodb" "$tmp/whole.tasodb"

# A synth that fails for shard 1 while $tmp/fails counts down.
mkdir "$tmp/fake"
ln -s "$BIN/prove" "$BIN/ruledb" "$tmp/fake/"
cat >"$tmp/fake/synth" <<EOS
#!/bin/sh
case " \$* " in *" --shard 1/3 "*)
    n=\$(cat "$tmp/fails" 2>/dev/null || echo 0)
    if [ "\$n" -gt 0 ]; then echo \$((n - 1)) >"$tmp/fails"; echo "synth: injected failure" >&2; exit 2; fi ;;
esac
exec "$BIN/synth" "\$@"
EOS
chmod +x "$tmp/fake/synth"
echo 1 >"$tmp/fails"
check "shard 1 fails once: retried, exit 0" status_is 0 drive "$tmp/fake" "$tmp/w2"
check "... its log shows the second attempt" grep -q "attempt 2" "$tmp/w2/logs/synth-1.log"
check "... the same ruledb" cmp -s "$tmp/w2/rules.tasodb" "$tmp/whole.tasodb"
echo 9 >"$tmp/fails"
check "shard 1 fails every attempt: exit 1" status_is 1 drive "$tmp/fake" "$tmp/w3"
check "... names the shard" grep -q "synth shard 1 of 3 FAILED after 2 attempts" "$tmp/err"
check "... and its log" grep -q "synth-1.log" "$tmp/err"
check "... no ruledb written" test ! -e "$tmp/w3/rules.tasodb"
rm "$tmp/fails"
check "fixed, rerun: exit 0" status_is 0 drive "$tmp/fake" "$tmp/w3"
check "... shards 0 and 2 not redone" sh -c "grep -q 'synth shard 0 of 3: done already' '$tmp/out' &&
    grep -q 'synth shard 2 of 3: done already' '$tmp/out'"
check "... the same ruledb" cmp -s "$tmp/w3/rules.tasodb" "$tmp/whole.tasodb"
check "bad usage (-n 1): exit 2" status_is 2 "$L" -d "$tmp/w4" -o "$tmp/x" -n 1

# --known: the shards skip what the known rules derive; the merge gives
# the undivided run's bytes.
"$BIN/prove" -q --no-timings --jobs 1 --axioms "$ax" --known "$root/ruledb/pruned.tasodb" \
    "$tmp/whole-cands.tasodb" -o "$tmp/whole-known.tasodb"
check "--known in --prove-args: exit 0" status_is 0 "$L" --bin "$BIN" -d "$tmp/w5" -o "$tmp/w5/rules.tasodb" -n 3 -j 2 \
    --no-timings --axioms "$ax" --synth-args "${SY[*]}" --prove-args "--jobs 1 --known $root/ruledb/pruned.tasodb"
check "... ruledb byte-identical to the undivided prove --known" cmp -s "$tmp/w5/rules.tasodb" "$tmp/whole-known.tasodb"
check "... which has fewer rules than without" test "$("$BIN/ruledb" info "$tmp/w5/rules.tasodb" | awk '/^rules:/ {print $2 + 0}')" -lt \
    "$("$BIN/ruledb" info "$tmp/whole.tasodb" | awk '/^rules:/ {print $2 + 0}')"
echo "1..$n"
