#!/usr/bin/env bash
# cli_optimize.sh - `engine optimize`: options and exit codes on bad input
# (TAP), then the end-to-end checks of test/engine_opt_test.py (models
# optimized, checked by onnx.checker, compared in onnxruntime). BIN names
# the directory holding the binaries.
set -u
: "${BIN:?BIN must name the binary directory}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
corpus=test/corpus/onnx
. "$(dirname "$0")/tap.inc"
E="$BIN/engine"

check "--help lists optimize's options" eval "'$E' --help | grep -q -- '--time-limit'"
check "optimize without -o: exit 2" status_is 2 "$E" optimize "$corpus/convs.onnx"
check "unknown option: exit 2" status_is 2 "$E" optimize "$corpus/convs.onnx" -o "$tmp/o.onnx" --frob
check "bad --alpha: exit 2" status_is 2 "$E" optimize "$corpus/convs.onnx" -o "$tmp/o.onnx" --alpha x
check "... names the option" grep -q -- "--alpha" "$tmp/err"
check "bad --cost: exit 2" status_is 2 "$E" optimize "$corpus/convs.onnx" -o "$tmp/o.onnx" --cost gpu
check "--cost cuda without a GPU: exit 2" status_is 2 "$E" optimize "$corpus/convs.onnx" -o "$tmp/o.onnx" --cost cuda
check "... says there is no device" grep -qi "cuda" "$tmp/err"
check "truncated model: exit 2" eval "head -c 200 '$corpus/convs.onnx' >'$tmp/cut.onnx'; status_is 2 '$E' optimize '$tmp/cut.onnx' -o '$tmp/o.onnx'"
check "... and no output file" test ! -e "$tmp/o.onnx"
check "missing ruledb: exit 2" status_is 2 "$E" optimize "$corpus/convs.onnx" -o "$tmp/o.onnx" --ruledb "$tmp/none"
check "truncated ruledb: exit 2" eval "head -c 1000 ruledb/default.tasodb >'$tmp/cut.tasodb'; status_is 2 '$E' optimize '$corpus/convs.onnx' -o '$tmp/o.onnx' --ruledb '$tmp/cut.tasodb'"
check "... names the file" grep -q "cut.tasodb" "$tmp/err"
check "a candidates file is not a rule set: exit 2" eval "'$BIN/synth' -q --max-ops 1 -o '$tmp/c.tasodb' && status_is 2 '$E' optimize '$corpus/convs.onnx' -o '$tmp/o.onnx' --ruledb '$tmp/c.tasodb'"
check "optimize a corpus model: exit 0" status_is 0 "$E" optimize "$corpus/convs.onnx" -o "$tmp/o.onnx" -q
check "... prints the costs" grep -q "^cost before: " "$tmp/out"
check "... and the output loads again" status_is 0 "$E" info "$tmp/o.onnx"
# --budget 0 still runs the built-in rewrites: convs.onnx is a model none
# of them changes, conv_bn_relu.onnx one whose batchnorm they fold.
check "budget 0, no built-in applies (convs.onnx): the output is the input, byte for byte" \
    eval "status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/b0.onnx' -q --budget 0 && cmp '$corpus/convs.onnx' '$tmp/b0.onnx'"
check "... the summary says so: no rule, no built-in" \
    eval "grep -q '^rules applied: 0 (result not cheaper: the input is kept)' '$tmp/out' && grep -q '^built-ins: 0 ' '$tmp/out' && ! grep -E '^built-ins: .*[1-9]' '$tmp/out'"
check "budget 0, a batchnorm to fold (conv_bn_relu.onnx): the built-ins still apply" \
    eval "status_is 0 '$E' optimize '$corpus/conv_bn_relu.onnx' -o '$tmp/b0bn.onnx' -q --budget 0 && grep -q '^built-ins: 1 batchnorm folded' '$tmp/out' && ! cmp -s '$corpus/conv_bn_relu.onnx' '$tmp/b0bn.onnx'"
# The search stops on its budget, never its clock, so a run with the same
# costs takes the same path and needs the same kernels.
cpu_opt="-q --cost cpu --budget 50 --time-limit 100000 --cost-cache $tmp/cache"
check "--cost-cache is written with --cost cpu, after measuring" \
    eval "status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/c.onnx' $cpu_opt && test -s '$tmp/cache' && grep -qE '^costs: [1-9][0-9]* measured, .* \(0 loaded from ' '$tmp/out'"
cp "$tmp/cache" "$tmp/cache.first"
check "... and reused: the second run measures nothing and loads every entry" \
    eval "status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/c2.onnx' $cpu_opt && grep -qE '^costs: 0 measured, .* \($(($(wc -l <"$tmp/cache") - 1)) loaded from ' '$tmp/out'"
check "... the cache file is unchanged" cmp "$tmp/cache.first" "$tmp/cache"
check "... and the same costs give the same model" cmp "$tmp/c.onnx" "$tmp/c2.onnx"
check "a garbage cost cache: exit 2" eval "echo garbage >'$tmp/bad_cache'; status_is 2 '$E' optimize '$corpus/convs.onnx' -o '$tmp/c3.onnx' -q --cost cpu --cost-cache '$tmp/bad_cache'"

run_py test/engine_opt_test.py "$E"
echo "1..$n"
