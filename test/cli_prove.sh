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

# axiom hygiene
check "--axioms-check with wrong.ax: exit 0" \
    status_is 0 "$prove" --axioms-check opspecs/axioms.ax --wrong opspecs/wrong.ax
check "... every line as expected" grep -q " 0 not$" "$tmp/out"
check "--axioms-check on false axioms: exit 1" status_is 1 "$prove" --axioms-check opspecs/wrong.ax
check "--axioms-check on a bad file: exit 2" status_is 2 "$prove" --axioms-check "$tmp/bad.ax"

# usage
check "--help: exit 0" status_is 0 "$prove" --help
check "--version: exit 0" status_is 0 "$prove" --version
check "no arguments: usage, exit 2" status_is 2 "$prove"
check "no -o: exit 2" status_is 2 "$prove" "$tmp/cands.tasodb"
check "bad --timeout: exit 2" status_is 2 "$prove" --timeout x "$tmp/cands.tasodb" -o "$tmp/x"
check "unknown option: exit 2" status_is 2 "$prove" --frobnicate

# the shipped ruledb re-proves (what CI runs)
if [ -f ruledb/default.tasodb ]; then
    check "shipped ruledb/default.tasodb: --check exit 0" \
        status_is 0 "$prove" -q --check ruledb/default.tasodb
fi
echo "1..$n"
