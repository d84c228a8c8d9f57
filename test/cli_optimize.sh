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
check "budget 0: the input comes back" status_is 0 "$E" optimize "$corpus/convs.onnx" -o "$tmp/b0.onnx" -q --budget 0
check "--cost-cache is written with --cost cpu" eval "status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/c.onnx' -q --cost cpu --cost-cache '$tmp/cache' && test -s '$tmp/cache'"
check "... and reused" status_is 0 "$E" optimize "$corpus/convs.onnx" -o "$tmp/c2.onnx" -q --cost cpu --cost-cache "$tmp/cache"
check "a garbage cost cache: exit 2" eval "echo garbage >'$tmp/bad_cache'; status_is 2 '$E' optimize '$corpus/convs.onnx' -o '$tmp/c3.onnx' -q --cost cpu --cost-cache '$tmp/bad_cache'"

run_py test/engine_opt_test.py "$E"
echo "1..$n"
