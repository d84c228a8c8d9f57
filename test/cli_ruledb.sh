#!/usr/bin/env bash
# cli_ruledb.sh - TAP tests of the ruledb tool: exit statuses (0 ok, 1 diff
# found differences, 2 bad input or usage), messages naming the file,
# dump/diff/merge output. Valid files come from $BIN/mkcorpus.
#
#   BIN=out/bin bash test/cli_ruledb.sh
set -u

BIN=${BIN:-out/bin}
R=$BIN/ruledb
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }

# run ARGS...: sets rc, $T/out, $T/err
run() { "$R" "$@" >"$T/out" 2>"$T/err"; rc=$?; }

# expect_rc WANT DESC ARGS...
expect_rc() {
    local want=$1 desc=$2; shift 2
    run "$@"
    if [ "$rc" -eq "$want" ]; then ok "$desc"
    else not_ok "$desc" "exit $rc, wanted $want; stderr: $(head -c 300 "$T/err")"; fi
}

# expect_bad FILE DESC: `info FILE` exits exactly 2 with "ruledb: FILE: ..."
expect_bad() {
    local f=$1 desc=$2
    run info "$f"
    if [ "$rc" -eq 2 ] && grep -qF "ruledb: $f: " "$T/err" && [ ! -s "$T/out" ]; then
        ok "$desc"
    else
        not_ok "$desc" "exit $rc; stderr: $(head -c 300 "$T/err")"
    fi
}

# patch FILE OFFSET HEXBYTE: overwrite one byte in place
patch() { printf "\\x$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }

byte_at() { od -An -tx1 -j "$2" -N1 "$1" | tr -d ' \n'; }

if [ ! -x "$R" ] || [ ! -x "$BIN/mkcorpus" ]; then
    not_ok "binaries $R and $BIN/mkcorpus exist"
    echo "1..$n"
    exit 1
fi

"$BIN/mkcorpus" "$T" && ok "mkcorpus writes the sample files" || not_ok "mkcorpus writes the sample files"
rules=$T/rules.tasodb rules_b=$T/rules-b.tasodb cand=$T/candidates.tasodb

# ---- info ----
expect_rc 0 "info on a rules file exits 0" info "$rules"
grep -q '^kind: *rules' "$T/out" && grep -q '^opspecs: *[0-9a-f]\{32\}$' "$T/out" &&
    grep -q '^rules: *6' "$T/out" && grep -q 'matmul' "$T/out" &&
    ok "info shows kind, digest, counts and the op histogram" ||
    not_ok "info shows kind, digest, counts and the op histogram" "$(cat "$T/out")"
expect_rc 0 "info on a candidates file exits 0" info "$cand"
grep -q '^classes: *3' "$T/out" && ok "info counts classes" || not_ok "info counts classes"

# ---- damaged files: exit exactly 2, message names the file ----
head -c 100 "$rules" >"$T/trunc.tasodb"
expect_bad "$T/trunc.tasodb" "info on a truncated file exits 2 naming it"
: >"$T/empty.tasodb"
expect_bad "$T/empty.tasodb" "info on an empty file exits 2 naming it"

cp "$rules" "$T/flip0.tasodb"
patch "$T/flip0.tasodb" 0 00
expect_bad "$T/flip0.tasodb" "info on a file with its first byte flipped exits 2"

cp "$rules" "$T/flip9.tasodb"
patch "$T/flip9.tasodb" 9 41
expect_bad "$T/flip9.tasodb" "info on a file with a magic byte flipped exits 2"

# the version value sits after map(6) "magic" "tasodb" "version": byte 22
cp "$rules" "$T/v2.tasodb"
if [ "$(byte_at "$T/v2.tasodb" 22)" = 01 ]; then
    patch "$T/v2.tasodb" 22 02
    expect_bad "$T/v2.tasodb" "info on a version-2 file exits 2"
    grep -q 'version 2' "$T/err" && ok "the message names the version" ||
        not_ok "the message names the version" "$(cat "$T/err")"
else
    not_ok "version byte found at offset 22"
fi

# every prefix of a small file exits 2 (never 0, never a crash)
bad_prefix=""
size=$(wc -c <"$rules_b")
for ((k = 0; k < size; k += 7)); do
    head -c "$k" "$rules_b" >"$T/p.tasodb"
    run info "$T/p.tasodb"
    [ "$rc" -eq 2 ] || bad_prefix="$bad_prefix $k:$rc"
done
[ -z "$bad_prefix" ] && ok "every 7th prefix exits 2" || not_ok "every 7th prefix exits 2" "$bad_prefix"

expect_rc 2 "info on a missing file exits 2" info "$T/nope.tasodb"
grep -qF "ruledb: $T/nope.tasodb: " "$T/err" && ok "missing file is named" || not_ok "missing file is named"

# ---- dump ----
expect_rc 0 "dump exits 0" dump "$rules"
grep -qF 'rule 0: (matmul x0 (matmul x1 x2)) => (matmul (matmul x0 x1) x2)  [proved 3 ms]' "$T/out" &&
    ok "dump prints rules as s-expressions" || not_ok "dump prints rules as s-expressions" "$(head -3 "$T/out")"
grep -qF '(split0 1 (dim 1 x0) (concat 1 x0 x1)), (split1 1 (dim 1 x0) (concat 1 x0 x1)) => x0, x1' "$T/out" &&
    ok "dump prints symbolic sizes and several outputs" || not_ok "dump prints symbolic sizes and several outputs"
[ "$(grep -c '^rule ' "$T/out")" -eq 6 ] && ok "dump prints every rule" || not_ok "dump prints every rule"
expect_rc 0 "dump of candidates exits 0" dump "$cand"
grep -q '^class 2: count 4, 2 members' "$T/out" && ok "dump prints classes" || not_ok "dump prints classes"
expect_rc 2 "dump of a truncated file exits 2" dump "$T/trunc.tasodb"

# ---- diff ----
expect_rc 0 "diff of a file with itself exits 0" diff "$rules" "$rules"
[ ! -s "$T/out" ] && ok "diff of equal files prints nothing" || not_ok "diff of equal files prints nothing"
expect_rc 1 "diff of different files exits 1" diff "$rules" "$rules_b"
[ "$(grep -c '^< rule' "$T/out")" -eq 4 ] && [ "$(grep -c '^> rule' "$T/out")" -eq 2 ] &&
    ok "diff lists 4 rules only in A and 2 only in B" || not_ok "diff lists 4 rules only in A and 2 only in B" "$(cat "$T/out")"
expect_rc 1 "diff of files of different kinds exits 1" diff "$rules" "$cand"
expect_rc 2 "diff with a corrupt file exits 2" diff "$rules" "$T/flip0.tasodb"
grep -qF "$T/flip0.tasodb" "$T/err" && ok "diff names the corrupt file" || not_ok "diff names the corrupt file"
expect_rc 2 "diff with a missing file exits 2" diff "$T/nope.tasodb" "$rules"

# ---- merge ----
expect_rc 0 "merge of two files exits 0" merge -o "$T/ab.tasodb" "$rules" "$rules_b"
expect_rc 0 "merge in the other order exits 0" merge -o "$T/ba.tasodb" "$rules_b" "$rules"
cmp -s "$T/ab.tasodb" "$T/ba.tasodb" && ok "merge is order-independent (same bytes)" ||
    not_ok "merge is order-independent (same bytes)"
expect_rc 0 "merged file passes info" info "$T/ab.tasodb"
grep -q '^rules: *8' "$T/out" && ok "merged file has the 8 distinct rules" || not_ok "merged file has the 8 distinct rules" "$(cat "$T/out")"
expect_rc 0 "merged file = merge of itself with A (diff exits 0)" merge -o "$T/aba.tasodb" "$T/ab.tasodb" "$rules"
expect_rc 0 "diff merged vs re-merged exits 0" diff "$T/ab.tasodb" "$T/aba.tasodb"
ls "$T" | grep -q '\.tmp\.' && not_ok "no temp files left" || ok "no temp files left"
expect_rc 2 "merge of rules with candidates exits 2" merge -o "$T/x.tasodb" "$rules" "$cand"
[ ! -e "$T/x.tasodb" ] && ok "a failed merge writes nothing" || not_ok "a failed merge writes nothing"
expect_rc 2 "merge with a corrupt input exits 2" merge -o "$T/x.tasodb" "$rules" "$T/trunc.tasodb"
expect_rc 2 "merge into a missing directory exits 2" merge -o "$T/no/dir/x.tasodb" "$rules" "$rules_b"
expect_rc 2 "merge without -o is a usage error" merge "$rules" "$rules_b"
grep -q '^usage:' "$T/err" && ok "usage text on stderr" || not_ok "usage text on stderr"

# ---- help, version, usage ----
expect_rc 0 "--help exits 0" --help
grep -q 'ruledb info FILE' "$T/out" && ok "--help prints usage on stdout" || not_ok "--help prints usage on stdout"
expect_rc 0 "--version exits 0" --version
expect_rc 2 "no command exits 2" 
expect_rc 2 "unknown command exits 2" frobnicate
expect_rc 2 "info with two files is a usage error" info "$rules" "$rules"

echo "1..$n"
