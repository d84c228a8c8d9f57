#!/usr/bin/env bash
# cli_synth.sh - the synth tool's exit codes, messages and output file (TAP).
# BIN names the directory holding the binaries.
set -u
: "${BIN:?BIN must name the binary directory}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.inc"
S=$BIN/synth

check "--help: exit 0, usage on stdout" status_is 0 "$S" --help
check "... names the options" grep -q -- "--memory-limit" "$tmp/out"
check "--version: exit 0" status_is 0 "$S" --version
check "no -o: exit 2" status_is 2 "$S" --max-ops 1
check "... says what is missing" grep -q "missing -o" "$tmp/err"
check "unknown option: exit 2" status_is 2 "$S" --bogus -o "$tmp/x"
check "... names it" grep -q "bogus" "$tmp/err"
check "--max-ops 9: exit 2" status_is 2 "$S" --max-ops 9 -o "$tmp/x"
check "--max-ops without a value: exit 2" status_is 2 "$S" -o "$tmp/x" --max-ops
check "unknown operator: exit 2" status_is 2 "$S" --ops matmul,frobnicate -o "$tmp/x"
check "... names it" grep -q "frobnicate" "$tmp/err"
check "unknown pool type: exit 2" status_is 2 "$S" --types act,vector -o "$tmp/x"
check "... names it" grep -q "vector" "$tmp/err"
check "bad shard: exit 2" status_is 2 "$S" --shard 3/3 -o "$tmp/x"
check "bad memory limit: exit 2" status_is 2 "$S" --memory-limit 8Q -o "$tmp/x"
check "bad backend: exit 2" status_is 2 "$S" --backend tpu -o "$tmp/x"
check "nothing written after a usage error" test ! -e "$tmp/x"

# Without a GPU the CUDA backend refuses clearly (with one, it runs).
if "$S" --backend cuda --max-ops 1 --ops relu -q -o "$tmp/cuda.db" >"$tmp/out" 2>"$tmp/err"; then
    check "--backend cuda with a device: file written" test -s "$tmp/cuda.db"
else
    check "--backend cuda without a device: exit 2" test $? -eq 2
    check "... with a clear message" grep -q "backend cuda: .*\(device\|CUDA\)" "$tmp/err"
fi

check "a small run: exit 0" status_is 0 "$S" --max-ops 2 --ops matmul -o "$tmp/mm.db"
check "... summary on stderr" grep -q "candidates after output-side" "$tmp/err"
check "... a valid candidates file" status_is 0 "$BIN/ruledb" info "$tmp/mm.db"
check "... with matmul associativity" sh -c "'$BIN/ruledb' dump '$tmp/mm.db' | grep -A3 'inputs: x0 \[3,3\] x1 \[3,3\] x2 \[3,3\]' | grep -q '(matmul (matmul x. x.) x.)'"
check "-q: nothing on stderr" status_is 0 "$S" -q --max-ops 1 --ops relu -o "$tmp/q.db"
check "... really nothing" test ! -s "$tmp/err"
check "unwritable output: exit 2" status_is 2 "$S" -q --max-ops 1 --ops relu -o "$tmp/no/such/dir/x.db"
check "... names the file" grep -q "no/such/dir" "$tmp/err"
check "no temporary file left behind" sh -c "! ls '$tmp' | grep -q tmp"

# Identity kernels: 3x3 by default, 1x1 too with --kernels1x1 (a scale as
# a 1x1 conv, dense or depthwise with --groups2).
K1=(-q --no-timings --max-ops 3 --ops conv2d,iconv,dwiconv,scale --types act,vec2 --groups2)
"$S" "${K1[@]}" -o "$tmp/k3.db"
"$S" "${K1[@]}" --kernels1x1 -o "$tmp/k1.db"
check "default: no 1x1 identity kernel" sh -c "! '$BIN/ruledb' dump '$tmp/k3.db' | grep -q 'iconv 1x1'"
check "--kernels1x1: a scale as a 1x1 conv" sh -c "'$BIN/ruledb' dump '$tmp/k1.db' | grep -q '(conv2d 1 SAME NONE 1 x0 (scale 0 (iconv 1x1 x0) x.))'"
check "... and as a depthwise 1x1 conv" sh -c "'$BIN/ruledb' dump '$tmp/k1.db' | grep -q '(conv2d 1 SAME NONE 2 x0 (scale 0 (dwiconv 1x1 x0) x.))'"
check "... noted in the file" sh -c "'$BIN/ruledb' info '$tmp/k1.db' | grep -q 'constant_kernels=3x3,1x1'"

# Same seed, 1 or 2 threads: the same bytes.
"$S" -q --no-timings --max-ops 2 --ops conv2d,relu,ewadd --threads 1 -o "$tmp/t1.db"
"$S" -q --no-timings --max-ops 2 --ops conv2d,relu,ewadd --threads 2 -o "$tmp/t2.db"
check "1 and 2 threads: byte-identical files" cmp -s "$tmp/t1.db" "$tmp/t2.db"

# A divided run (map, shuffle by fingerprint, reduce): 3 shards in 2 parts,
# merged per part, the parts merged by ruledb: the unsharded run's bytes.
# Depth 3 over these operators joins classes met in different shards.
D3=(-q --no-timings --max-ops 3 --ops matmul,ewadd,relu,transpose)
"$S" "${D3[@]}" -o "$tmp/u3.db"
for k in 0 1 2; do "$S" "${D3[@]}" --shard $k/3 --parts 2 -o "$tmp/s$k.shd"; done
"$S" "${D3[@]}" --shard 1/3 --parts 2 --threads 1 -o "$tmp/t1.shd"
"$S" "${D3[@]}" --shard 1/3 --parts 2 --threads 2 -o "$tmp/t2.shd"
check "a shard file: the same bytes with 1 and 2 threads" cmp -s "$tmp/t1.shd" "$tmp/t2.shd"
check "shard files: complete (--verify-shard)" status_is 0 "$S" --verify-shard "$tmp/s0.shd" "$tmp/s1.shd" "$tmp/s2.shd"
for p in 0 1; do "$S" -q --no-timings --merge-part $p -o "$tmp/p$p.db" "$tmp/s2.shd" "$tmp/s0.shd" "$tmp/s1.shd"; done
"$BIN/ruledb" merge -o "$tmp/merged.db" "$tmp/p0.db" "$tmp/p1.db" >/dev/null 2>&1
check "shards merged: byte-identical to the unsharded run" cmp -s "$tmp/merged.db" "$tmp/u3.db"
check "... which has classes" test "$(stat -c %s "$tmp/u3.db")" -gt 10000
check "a shard's share of the work: fewer graphs than the whole run" \
    test "$("$S" --no-timings --max-ops 3 --ops matmul,ewadd,relu,transpose --shard 1/3 -o "$tmp/x1.shd" 2>&1 |
            sed -n 's/^synth: *level 3: \([0-9]*\) graphs.*/\1/p')" -lt \
         "$("$S" --no-timings --max-ops 3 --ops matmul,ewadd,relu,transpose -o "$tmp/x.db" 2>&1 |
            sed -n 's/^synth: *level 3: \([0-9]*\) graphs.*/\1/p')"
check "merge without shard 1: exit 2" status_is 2 "$S" --merge-part 0 -o "$tmp/bad.db" "$tmp/s0.shd" "$tmp/s2.shd"
check "... naming the missing shard" grep -q "shard 1 of 3 missing" "$tmp/err"
check "... and nothing written" test ! -e "$tmp/bad.db"
check "shard given twice: exit 2" status_is 2 "$S" --merge-part 0 -o "$tmp/bad.db" "$tmp/s0.shd" "$tmp/s0.shd" "$tmp/s2.shd"
head -c 5000 "$tmp/s1.shd" >"$tmp/trunc.shd"
check "truncated shard file: --verify-shard exit 2" status_is 2 "$S" --verify-shard "$tmp/trunc.shd"
check "... naming the file" grep -q "trunc.shd" "$tmp/err"
check "truncated shard file: merge exit 2" status_is 2 "$S" --merge-part 0 -o "$tmp/bad.db" "$tmp/s0.shd" "$tmp/trunc.shd" "$tmp/s2.shd"
cp "$tmp/s1.shd" "$tmp/flip.shd"
printf '\377' | dd of="$tmp/flip.shd" bs=1 seek=$(( $(stat -c %s "$tmp/s1.shd") - 100 )) conv=notrunc 2>/dev/null
check "damaged shard file: --verify-shard exit 2" status_is 2 "$S" --verify-shard "$tmp/flip.shd"
check "... says checksum" grep -q "checksum" "$tmp/err"
"$S" -q --no-timings --max-ops 2 --ops matmul --shard 0/3 -o "$tmp/other.shd"
check "a shard of another run: merge exit 2" status_is 2 "$S" --merge-part 0 -o "$tmp/bad.db" "$tmp/other.shd" "$tmp/s1.shd" "$tmp/s2.shd"
check "... says options differ" grep -q "options differ" "$tmp/err"
check "a candidates file is not a shard file" status_is 2 "$S" --verify-shard "$tmp/u3.db"
check "--shard with --memory-limit: exit 2" status_is 2 "$S" --max-ops 1 --shard 0/2 --memory-limit 1G -o "$tmp/x.shd"
check "--memory-limit too small: exit 2 with a message" status_is 2 "$S" --memory-limit 1K --max-ops 2 -o "$tmp/m.db"
check "... naming the limit" grep -q "memory limit" "$tmp/err"
echo "1..$n"
