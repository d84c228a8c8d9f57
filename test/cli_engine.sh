#!/usr/bin/env bash
# cli_engine.sh - the engine tool: exit codes and messages of info,
# roundtrip and optimize on the corpus models, then the onnx/onnxruntime
# round-trip checks of test/engine_io_test.py (TAP). BIN names the
# directory holding the binaries.
set -u
: "${BIN:?BIN must name the binary directory}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
corpus=test/corpus/onnx
. "$(dirname "$0")/tap.inc"

check "--help: exit 0" status_is 0 "$BIN/engine" --help
check "... lists the commands" grep -q "engine roundtrip" "$tmp/out"
check "optimize --help: exit 0" status_is 0 "$BIN/engine" optimize --help
check "... shows the optimize options" grep -q -- "--time-limit S" "$tmp/out"
check "--version: exit 0" status_is 0 "$BIN/engine" --version
check "no arguments: usage, exit 2" status_is 2 "$BIN/engine"
check "unknown command: exit 2" status_is 2 "$BIN/engine" frobnicate
check "info on a model: exit 0" status_is 0 "$BIN/engine" info "$corpus/opaque.onnx"
check "... marks the custom op opaque" grep -qE "com.example:Foo +1 +OPAQUE" "$tmp/out"
check "... shows the outputs" grep -qE "^  y +float32 +\[2,3\]" "$tmp/out"
check "info on a symbolic batch: shapes past it unknown" eval "status_is 0 '$BIN/engine' info '$corpus/inception.onnx' && grep -q 'shapes known for 3 of 12' '$tmp/out'"
check "info --dim N=2: every shape known" eval "status_is 0 '$BIN/engine' info '$corpus/inception.onnx' --dim N=2 && grep -q '(100%)' '$tmp/out' && grep -qE '^  x +float32 +\\[2,4,6,6\\]' '$tmp/out'"
check "info --dim with a name the model lacks: exit 2" status_is 2 "$BIN/engine" info "$corpus/inception.onnx" --dim M=2
check "... names it" grep -q "'M'" "$tmp/err"
check "info with two models: exit 2" status_is 2 "$BIN/engine" info "$corpus/inception.onnx" "$corpus/convs.onnx"
check "info on a cycle: exit 2" status_is 2 "$BIN/engine" info "$corpus/bad_cycle.onnx"
check "... names the file, the node and its input" grep -q "bad_cycle.onnx: node 1 'second' (Relu): input 'a' depends on the node's own output" "$tmp/err"
check "missing initializer: exit 2" status_is 2 "$BIN/engine" info "$corpus/bad_missing_init.onnx"
check "... names node and tensor" grep -q "node 0 'conv0' (Conv): input 'w_missing'" "$tmp/err"
check "IR version 99: exit 2" status_is 2 "$BIN/engine" info "$corpus/bad_ir_new.onnx"
check "... says which IR versions are read" grep -q "bad_ir_new.onnx: IR version 99 is not supported (1..14)" "$tmp/err"
check "info on an opset 3 model: exit 0" status_is 0 "$BIN/engine" info "$corpus/opset3.onnx"
check "... prints the census" grep -qx "census:      9 nodes: 8 rule-visible, 1 model ops, 0 opaque; shapes known for 11 of 11 tensors (100%); model ops: Reshape 1" "$tmp/out"
check "info on an opset 6 model: exit 0" status_is 0 "$BIN/engine" info "$corpus/opset6.onnx"
check "... census" grep -qx "census:      10 nodes: 5 rule-visible, 5 model ops, 0 opaque; shapes known for 21 of 21 tensors (100%); model ops: Add 1, BatchNormalization 1, Flatten 1, Gemm 1, Mul 1" "$tmp/out"
check "optimize prints the input's census on stderr" status_is 0 "$BIN/engine" optimize --deterministic "$corpus/opset28.onnx" -o "$tmp/o28.onnx" --budget 20
check "... the census line" grep -qx "engine: census: 11 nodes: 10 rule-visible, 1 model ops, 0 opaque; shapes known for 16 of 16 tensors (100%); model ops: Reshape 1" "$tmp/err"
check "info on an opset 30 model: exit 0, all opaque" status_is 0 "$BIN/engine" info "$corpus/reg_opset30.onnx"
check "... census" grep -q "census:      2 nodes: 0 rule-visible, 0 model ops, 2 opaque" "$tmp/out"
check "external data: exit 2" status_is 2 "$BIN/engine" info "$corpus/bad_external.onnx"
check "missing file: exit 2" status_is 2 "$BIN/engine" info "$tmp/none.onnx"
head -c 300 "$corpus/attention.onnx" >"$tmp/cut.onnx"
check "truncated model: exit 2" status_is 2 "$BIN/engine" info "$tmp/cut.onnx"
check "... names the file" grep -q "cut.onnx: not a valid ONNX model" "$tmp/err"
check "roundtrip: exit 0" status_is 0 "$BIN/engine" roundtrip "$corpus/convs.onnx" -o "$tmp/rt.onnx"
check "... and the output loads again" status_is 0 "$BIN/engine" info "$tmp/rt.onnx"
check "roundtrip without -o: exit 2" status_is 2 "$BIN/engine" roundtrip "$corpus/convs.onnx"
check "roundtrip of a bad model: exit 2, no output" \
    eval "status_is 2 '$BIN/engine' roundtrip '$corpus/bad_shape.onnx' -o '$tmp/bad.onnx' && [ ! -e '$tmp/bad.onnx' ]"

# The onnx/onnxruntime checks, numbered on from here.
run_py test/engine_io_test.py "$BIN/engine"
echo "1..$n"
