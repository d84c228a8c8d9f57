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

# same.py INPUT CAND...: every candidate computes the input's outputs in
# onnxruntime (random float inputs, max |a - b| <= 1e-4 x max |a|).
cat >"$tmp/same.py" <<'PY'
import sys
import numpy as np
import onnxruntime as ort
a, *bs = (ort.InferenceSession(p, providers=["CPUExecutionProvider"]) for p in sys.argv[1:])
rng = np.random.default_rng(1)
feed = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
        for i in a.get_inputs()}
ref = a.run(None, feed)
for b in bs:
    for x, y in zip(ref, b.run(None, feed)):
        assert np.max(np.abs(x - y)) <= 1e-4 * max(1.0, float(np.max(np.abs(x)))), "outputs differ"
PY

check "--help lists optimize's options" eval "'$E' --help | grep -q -- '--time-limit'"
# --deterministic: the work bounds decide, the clock is a safety net (600 s
# unless given); a search the given time limit stopped says so.
check "--deterministic, a time limit of 0: the search stops on the clock" \
    eval "'$E' optimize --deterministic --time-limit 0 '$corpus/inception.onnx' -o '$tmp/t0.onnx' >'$tmp/out' 2>'$tmp/err'"
check "... reports that stop" grep -q "stopped: time limit" "$tmp/out"
check "... and warns that the clock decided" grep -q "warning: the time limit (0 s) stopped the search" "$tmp/err"
check "... the output computes the input's outputs" python3 "$tmp/same.py" "$corpus/inception.onnx" "$tmp/t0.onnx"
check "--deterministic alone: the work bounds stop it, no clock warning" \
    eval "'$E' optimize --deterministic '$corpus/inception.onnx' -o '$tmp/t1.onnx' >'$tmp/out' 2>'$tmp/err' && ! grep -q 'time limit' '$tmp/out' '$tmp/err'"
check "optimize without -o: exit 2" status_is 2 "$E" optimize --deterministic "$corpus/convs.onnx"
check "unknown option: exit 2" status_is 2 "$E" optimize --deterministic "$corpus/convs.onnx" -o "$tmp/o.onnx" --frob
check "bad --alpha: exit 2" status_is 2 "$E" optimize --deterministic "$corpus/convs.onnx" -o "$tmp/o.onnx" --alpha x
check "... names the option" grep -q -- "--alpha" "$tmp/err"
check "bad --cost: exit 2" status_is 2 "$E" optimize "$corpus/convs.onnx" -o "$tmp/o.onnx" --cost gpu
# --cost cuda: without a GPU a clear refusal; with one (bench/gpu.sh runs
# this script there) a model that computes the input's outputs.
if "$E" optimize "$corpus/convs.onnx" -o "$tmp/cuda.onnx" --cost cuda --no-cost-cache -q >"$tmp/out" 2>"$tmp/err"; then
    check "--cost cuda with a GPU: the output computes the input's outputs" \
        python3 "$tmp/same.py" "$corpus/convs.onnx" "$tmp/cuda.onnx"
    check "... every kernel measured on the device" grep -q "^costs: [1-9][0-9]* measured" "$tmp/out"
else
    check "--cost cuda without a GPU: exit 2" status_is 2 "$E" optimize "$corpus/convs.onnx" -o "$tmp/o.onnx" --cost cuda
    check "... says there is no device" grep -qi "no CUDA device" "$tmp/err"
fi
check "truncated model: exit 2" eval "head -c 200 '$corpus/convs.onnx' >'$tmp/cut.onnx'; status_is 2 '$E' optimize --deterministic '$tmp/cut.onnx' -o '$tmp/o.onnx'"
check "... and no output file" test ! -e "$tmp/o.onnx"
check "missing ruledb: exit 2" status_is 2 "$E" optimize --deterministic "$corpus/convs.onnx" -o "$tmp/o.onnx" --ruledb "$tmp/none"
check "truncated ruledb: exit 2" eval "head -c 1000 ruledb/default.tasodb >'$tmp/cut.tasodb'; status_is 2 '$E' optimize --deterministic '$corpus/convs.onnx' -o '$tmp/o.onnx' --ruledb '$tmp/cut.tasodb'"
check "... names the file" grep -q "cut.tasodb" "$tmp/err"
check "a candidates file is not a rule set: exit 2" eval "'$BIN/synth' -q --max-ops 1 -o '$tmp/c.tasodb' && status_is 2 '$E' optimize --deterministic '$corpus/convs.onnx' -o '$tmp/o.onnx' --ruledb '$tmp/c.tasodb'"

# --dim: a symbolic batch pinned. convs.onnx with its batch made symbolic
# ('B') gets no rule (no shapes) until --dim B=1; then the output declares
# batch 1 and computes what the input computes at that size.
python3 - "$corpus/convs.onnx" "$tmp/dyn.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
for v in list(m.graph.input) + list(m.graph.output):
    v.type.tensor_type.shape.dim[0].dim_param = "B"
onnx.save(m, sys.argv[2])
PY
check "symbolic batch: the census says how to pin it" eval "'$E' optimize --deterministic '$tmp/dyn.onnx' -o '$tmp/d0.onnx' 2>&1 | grep -q -- '--dim B=SIZE'"
check "... and no rule applies" eval "'$E' optimize --deterministic '$tmp/dyn.onnx' -o '$tmp/d0.onnx' -q | grep -q '^rules applied: 0'"
check "--dim B=1: every shape known" eval "'$E' optimize --deterministic '$tmp/dyn.onnx' -o '$tmp/d1.onnx' --dim B=1 2>&1 | grep 'census' | grep -q '(100%)'"
check "... rules apply (the GPU-like analytic cost merges its convs)" eval "'$E' optimize '$tmp/dyn.onnx' -o '$tmp/d1.onnx' --dim B=1 --cost analytic -q | grep -q '^rules applied: [1-9]'"
check "... the output declares batch 1" python3 -c "import onnx, sys; m = onnx.load('$tmp/d1.onnx'); sys.exit(any(v.type.tensor_type.shape.dim[0].dim_value != 1 for v in list(m.graph.input) + list(m.graph.output)))"
check "... and computes the input's outputs" python3 "$tmp/same.py" "$tmp/dyn.onnx" "$tmp/d1.onnx"
check "--dim B=1 at the deterministic cost (analytic-cpu): nothing cheaper" eval "'$E' optimize --deterministic '$tmp/dyn.onnx' -o '$tmp/d3.onnx' --dim B=1 2>&1 | grep -q 'cost analytic-cpu' && '$E' optimize --deterministic '$tmp/dyn.onnx' -o '$tmp/d3.onnx' --dim B=1 -q | grep -q '^rules applied: 0'"
check "... yet the output is the model at that size: it declares batch 1" python3 -c "import onnx, sys; m = onnx.load('$tmp/d3.onnx'); sys.exit(any(v.type.tensor_type.shape.dim[0].dim_value != 1 for v in list(m.graph.input) + list(m.graph.output)))"
check "... and computes the input's outputs" python3 "$tmp/same.py" "$tmp/dyn.onnx" "$tmp/d3.onnx"
check "--dim with a name the model lacks: exit 2" status_is 2 "$E" optimize --deterministic "$tmp/dyn.onnx" -o "$tmp/d2.onnx" --dim batch=1
check "... names it" grep -q "'batch'" "$tmp/err"
check "... and no output file" test ! -e "$tmp/d2.onnx"
check "--dim B=0: exit 2" status_is 2 "$E" optimize --deterministic "$tmp/dyn.onnx" -o "$tmp/d2.onnx" --dim B=0
check "--dim without a size: exit 2" status_is 2 "$E" optimize --deterministic "$tmp/dyn.onnx" -o "$tmp/d2.onnx" --dim B
# --dim INPUT:AXIS=SIZE: the same batch with neither size nor name (as
# skl2onnx writes it): the census names the axis, and pinning it works
# as --dim B=1 does.
python3 - "$corpus/convs.onnx" "$tmp/anon.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
for v in list(m.graph.input) + list(m.graph.output):
    v.type.tensor_type.shape.dim[0].Clear()
onnx.save(m, sys.argv[2])
PY
xin=$(python3 -c "import onnx; print(onnx.load('$tmp/anon.onnx').graph.input[0].name)")
check "anonymous batch: the census says how to pin it" eval "'$E' optimize --deterministic '$tmp/anon.onnx' -o '$tmp/a0.onnx' 2>&1 | grep -q -- '--dim $xin:0=SIZE'"
check "... and no rule applies" eval "'$E' optimize --deterministic '$tmp/anon.onnx' -o '$tmp/a0.onnx' -q | grep -q '^rules applied: 0'"
check "--dim $xin:0=1: every shape known" eval "'$E' optimize --deterministic '$tmp/anon.onnx' -o '$tmp/a1.onnx' --dim $xin:0=1 2>&1 | grep 'census' | grep -q '(100%)'"
check "... rules apply (the GPU-like analytic cost merges its convs)" eval "'$E' optimize '$tmp/anon.onnx' -o '$tmp/a1.onnx' --dim $xin:0=1 --cost analytic -q | grep -q '^rules applied: [1-9]'"
check "... the output's input declares batch 1" python3 -c "import onnx, sys; m = onnx.load('$tmp/a1.onnx'); sys.exit(m.graph.input[0].type.tensor_type.shape.dim[0].dim_value != 1)"
check "... and computes the input's outputs" python3 "$tmp/same.py" "$tmp/anon.onnx" "$tmp/a1.onnx"
check "--dim on an axis that has a size: exit 2" status_is 2 "$E" optimize --deterministic "$tmp/anon.onnx" -o "$tmp/a2.onnx" --dim $xin:1=4
check "... names it" grep -q "'$xin:1'" "$tmp/err"
check "--dim on an axis past the rank: exit 2" status_is 2 "$E" optimize --deterministic "$tmp/anon.onnx" -o "$tmp/a2.onnx" --dim $xin:9=1
check "... and no output file" test ! -e "$tmp/a2.onnx"
check "optimize a corpus model: exit 0" status_is 0 "$E" optimize --deterministic "$corpus/convs.onnx" -o "$tmp/o.onnx" -q
check "... prints the costs" grep -q "^cost before: " "$tmp/out"
check "... and the output loads again" status_is 0 "$E" info "$tmp/o.onnx"
# --budget 0 still runs the built-in rewrites: convs.onnx is a model none
# of them changes, conv_bn_relu.onnx one whose batchnorm they fold.
check "budget 0, no built-in applies (convs.onnx): the output is the input, byte for byte" \
    eval "status_is 0 '$E' optimize --deterministic '$corpus/convs.onnx' -o '$tmp/b0.onnx' -q --budget 0 && cmp '$corpus/convs.onnx' '$tmp/b0.onnx'"
check "... the summary says so: no rule, no built-in" \
    eval "grep -q '^rules applied: 0 (result not cheaper: the input is kept)' '$tmp/out' && grep -q '^built-ins: 0 ' '$tmp/out' && ! grep -E '^built-ins: .*[1-9]' '$tmp/out'"
check "budget 0, a batchnorm to fold (conv_bn_relu.onnx): the built-ins still apply" \
    eval "status_is 0 '$E' optimize --deterministic '$corpus/conv_bn_relu.onnx' -o '$tmp/b0bn.onnx' -q --budget 0 && grep -q '^built-ins: 1 batchnorm folded' '$tmp/out' && ! cmp -s '$corpus/conv_bn_relu.onnx' '$tmp/b0bn.onnx'"
# The search stops on its budget, never its clock, so a run with the same
# costs takes the same path and needs the same kernels.
cpu_opt="-q --cost cpu --budget 50 --time-limit 100000 --cost-cache $tmp/cache"
check "--cost-cache is written with --cost cpu, after measuring" \
    eval "status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/c.onnx' $cpu_opt && test -s '$tmp/cache' && grep -qE '^costs: [1-9][0-9]* measured in [0-9.]+ s, .* \(0 loaded from ' '$tmp/out'"
cp "$tmp/cache" "$tmp/cache.first"
check "... and reused: the second run measures nothing and loads every entry" \
    eval "status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/c2.onnx' $cpu_opt && grep -qE '^costs: 0 measured, .* \($(($(wc -l <"$tmp/cache") - 1)) loaded from ' '$tmp/out'"
check "... the cache file is unchanged" cmp "$tmp/cache.first" "$tmp/cache"
check "... and the same costs give the same model" cmp "$tmp/c.onnx" "$tmp/c2.onnx"
check "a garbage cost cache: exit 2" eval "echo garbage >'$tmp/bad_cache'; status_is 2 '$E' optimize '$corpus/convs.onnx' -o '$tmp/c3.onnx' -q --cost cpu --cost-cache '$tmp/bad_cache'"


# --verify: the helper's timings decide. Fake interpreters (TASOC_PYTHON)
# print fixed figures, so the choice they force is known; lines are
# "model INDEX MEDIAN MIN ERR" and "ratios INDEX MEDIAN P25 P75" (index 1:
# the search result, 2: the built-ins alone, -1: the input against itself).
fake() { # fake FILE LINE...: an interpreter that prints the lines, exit 0
    f=$1; shift
    { echo '#!/bin/sh'; for l in "$@"; do printf "printf '%s\\\\n'\n" "$l"; done; } >"$f"
    chmod +x "$f"
}
T='\t'
fake "$tmp/py_fast" "model${T}0${T}10${T}9${T}0" "model${T}1${T}5${T}5${T}1e-07" "model${T}2${T}9${T}9${T}0" \
    "model${T}-1${T}10${T}9${T}0" "ratios${T}1${T}2${T}1.9${T}2.1" "ratios${T}2${T}1.1${T}1.0${T}1.2" \
    "ratios${T}-1${T}1${T}0.99${T}1.01"
fake "$tmp/py_wrong" "model${T}0${T}10${T}9${T}0" "model${T}1${T}5${T}5${T}0.5" "model${T}2${T}7${T}7${T}0" \
    "model${T}-1${T}10${T}9${T}0" "ratios${T}1${T}2${T}1.9${T}2.1" "ratios${T}2${T}1.4${T}1.3${T}1.5" \
    "ratios${T}-1${T}1${T}0.99${T}1.01"
fake "$tmp/py_slow" "model${T}0${T}10${T}9${T}0" "model${T}1${T}11${T}11${T}0" "model${T}2${T}10.2${T}10${T}0" \
    "model${T}-1${T}10${T}9${T}0" "ratios${T}1${T}0.9${T}0.8${T}0.95" "ratios${T}2${T}1.01${T}0.98${T}1.03" \
    "ratios${T}-1${T}1.02${T}0.97${T}1.05"
fake "$tmp/py_spread" "model${T}0${T}10${T}9${T}0" "model${T}1${T}9.7${T}9${T}0" "model${T}2${T}9.8${T}9${T}0" \
    "model${T}-1${T}10${T}9${T}0" "ratios${T}1${T}1.03${T}1.01${T}1.05" "ratios${T}2${T}1.02${T}1.01${T}1.03" \
    "ratios${T}-1${T}1.0${T}0.94${T}1.06"
fake "$tmp/py_tie" "model${T}0${T}10${T}9${T}0" "model${T}1${T}9.3${T}9${T}0" "model${T}2${T}9.2${T}9${T}0" \
    "model${T}-1${T}10${T}9${T}0" "ratios${T}1${T}1.075${T}1.06${T}1.09" "ratios${T}2${T}1.08${T}1.06${T}1.09" \
    "ratios${T}-1${T}1.0${T}0.99${T}1.01"
fake "$tmp/py_junk" "model${T}0${T}ten"
printf '#!/bin/sh\necho "onnxruntime for Python is missing (No module named onnxruntime): pip install onnxruntime" >&2\nexit 3\n' >"$tmp/py_noort"
chmod +x "$tmp/py_noort"
# The fakes time four models (the input, the search result, the built-ins
# alone, A/A): the backtracking search on the full set, which leaves no
# runner-up on convs.onnx and one on attention.onnx at --budget 2.
BT="--search backtrack --ruledb ruledb/default.tasodb"
check "--verify: the plain run first (its result is the search's)" \
    status_is 0 "$E" optimize "$corpus/convs.onnx" -o "$tmp/plain.onnx" -q --cost analytic $BT
check "... the search changed the model" eval "! cmp -s '$corpus/convs.onnx' '$tmp/plain.onnx'"
check "--verify, the search result measured 2x faster: it is written" \
    eval "TASOC_PYTHON='$tmp/py_fast' status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/v.onnx' -q --cost analytic $BT --verify && cmp '$tmp/plain.onnx' '$tmp/v.onnx'"
check "... the report says so, with the A/A row" \
    eval "grep -q '^verify: writing the search result' '$tmp/out' && grep -q '^verify: A/A 1.000x' '$tmp/out'"
check "... and its temporary files are gone" eval "! ls '$tmp' | grep -q '\.verify\.'"
check "--verify, the faster result computes other outputs: the built-ins alone win" \
    eval "TASOC_PYTHON='$tmp/py_wrong' status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/w.onnx' -q --cost analytic $BT --verify && grep -q '^verify: writing the built-ins alone' '$tmp/out' && ! cmp -s '$tmp/plain.onnx' '$tmp/w.onnx'"
check "... which compute what the input computes" status_is 0 "$E" info "$tmp/w.onnx"
check "--verify, the built-ins alone 0.5% faster than the search result, inside the noise: the search result" \
    eval "TASOC_PYTHON='$tmp/py_tie' status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/tie.onnx' -q --cost analytic $BT --verify && cmp '$tmp/plain.onnx' '$tmp/tie.onnx' && grep -q '^verify: writing the search result' '$tmp/out'"
check "--verify, nothing faster beyond the noise: the input, byte for byte" \
    eval "TASOC_PYTHON='$tmp/py_slow' status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/s.onnx' -q --cost analytic $BT --verify && cmp '$corpus/convs.onnx' '$tmp/s.onnx' && grep -q '^verify: writing the input' '$tmp/out'"
check "--verify, 3% faster but the A/A rounds spread 6% either way: the input, byte for byte" \
    eval "TASOC_PYTHON='$tmp/py_spread' status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/sp.onnx' -q --cost analytic $BT --verify && cmp '$corpus/convs.onnx' '$tmp/sp.onnx' && grep -q '^verify: writing the input' '$tmp/out'"
# A helper that times however many models it is given and makes candidate
# $FAST_K (default 2, the second: a runner-up when the search left one)
# twice as fast.
cat >"$tmp/runner.py" <<'PY'
import os, sys
paths = [p for p in sys.argv[1:] if p.endswith(".onnx")]
fast = int(os.environ.get("FAST_K", "2"))
for k in list(range(len(paths))) + [-1]:
    print(f"model\t{k}\t{5 if k == fast else 10}\t5\t0")
for k in list(range(1, len(paths))) + [-1]:
    print("ratios\t%d\t%s" % (k, "2\t1.9\t2.1" if k == fast else "1\t0.99\t1.01"))
PY
printf '#!/bin/sh\nshift 2\nexec python3 "%s" "$@"\n' "$tmp/runner.py" >"$tmp/py_runner"
chmod +x "$tmp/py_runner"
check "--verify, a runner-up of the search measured fastest: it is written, and it is a sound model" \
    eval "TASOC_PYTHON='$tmp/py_runner' status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/ru.onnx' -q --verify --budget 20 $BT && grep -q '^verify: runner-up 1 ' '$tmp/out' && grep -q '^verify: writing the runner-up 1' '$tmp/out' && python3 '$tmp/same.py' '$corpus/attention.onnx' '$tmp/ru.onnx'"
check "--verify without the interpreter: exit 2, says so, no output" \
    eval "TASOC_PYTHON='$tmp/none' status_is 2 '$E' optimize '$corpus/convs.onnx' -o '$tmp/n.onnx' -q --cost analytic --verify && grep -q 'not found' '$tmp/err' && test ! -e '$tmp/n.onnx'"
check "--verify without onnxruntime: exit 2 with the helper's advice" \
    eval "TASOC_PYTHON='$tmp/py_noort' status_is 2 '$E' optimize '$corpus/convs.onnx' -o '$tmp/n.onnx' -q --cost analytic --verify && grep -q 'pip install onnxruntime' '$tmp/err'"
check "--verify, a helper that prints junk: exit 2" \
    eval "TASOC_PYTHON='$tmp/py_junk' status_is 2 '$E' optimize '$corpus/convs.onnx' -o '$tmp/n.onnx' -q --cost analytic --verify && grep -q 'does not parse' '$tmp/err'"
check "bad --verify-runs: exit 2" status_is 2 "$E" optimize "$corpus/convs.onnx" -o "$tmp/n.onnx" --verify --verify-runs 0
check "--search-threads 3: exit 2, names the option and its range" \
    eval "status_is 2 '$E' optimize --deterministic '$corpus/convs.onnx' -o '$tmp/n.onnx' --search-threads 3 && grep -q -- '--search-threads wants a number in \[1, 2\]' '$tmp/err' && test ! -e '$tmp/n.onnx'"
check "--search-threads 1: exit 0, the same bytes as the default" \
    eval "status_is 0 '$E' optimize --deterministic '$corpus/attention.onnx' -o '$tmp/st1.onnx' -q --search-threads 1 && status_is 0 '$E' optimize --deterministic '$corpus/attention.onnx' -o '$tmp/st2.onnx' -q && cmp -s '$tmp/st1.onnx' '$tmp/st2.onnx'"
check "--verify in onnxruntime for real: exit 0, a report, an output that loads" \
    eval "status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/r.onnx' -q --cost analytic --verify --verify-runs 5 && grep -q '^verify: writing the ' '$tmp/out' && '$E' info '$tmp/r.onnx' >/dev/null"
check "... and computes what the input computes in onnxruntime" python3 "$tmp/same.py" "$corpus/convs.onnx" "$tmp/r.onnx"

# --cost ort: kernels timed by a helper that talks "ready" / "time LEN" /
# "us T" over stdin and stdout. The fake helper checks every small model it
# is sent (onnx.checker, full check, and a run in onnxruntime) and answers
# a time made from the model's bytes, so the costs are deterministic and a
# model the engine writes wrong is an error, not a number.
cat >"$tmp/ortfake.py" <<'PY'
import sys
import numpy as np
import onnx
import onnxruntime as ort
die_after = int(sys.argv[1])
slow_skip_ln = len(sys.argv) > 2
print("ready fake", flush=True)
n = 0
while True:
    line = sys.stdin.buffer.readline()
    if not line:
        break
    model = sys.stdin.buffer.read(int(line.split()[1]))
    n += 1
    if n > die_after:
        sys.exit(1)
    m = onnx.load_from_string(model)
    onnx.checker.check_model(m, full_check=True)
    s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    feed = {i.name: np.zeros([d if isinstance(d, int) else 1 for d in i.shape],
                             dtype=np.float32 if i.type == "tensor(float)" else np.int64)
            for i in s.get_inputs()}
    s.run(None, feed)
    ops = {node.op_type for node in m.graph.node}
    if slow_skip_ln and "LayerNormalization" in ops and ("Add" in ops or "Sum" in ops):
        print(f"us {500 if 'Add' in ops else 50}", flush=True)  # a slow fused Add + LayerNormalization
        continue
    print(f"us {len(m.graph.node) * 10 + sum(len(i.name) for i in m.graph.input)}", flush=True)
PY
printf '#!/bin/sh\nexec python3 "%s" 1000000\n' "$tmp/ortfake.py" >"$tmp/py_ort"
printf '#!/bin/sh\nexec python3 "%s" 3\n' "$tmp/ortfake.py" >"$tmp/py_ortdie"
printf '#!/bin/sh\necho "err onnxruntime for Python is missing (No module named onnxruntime): pip install onnxruntime numpy"\nexit 3\n' >"$tmp/py_ortnone"
printf '#!/bin/sh\nexec python3 "%s" 1000000 slow_skip_ln\n' "$tmp/ortfake.py" >"$tmp/py_ortskip"
chmod +x "$tmp/py_ort" "$tmp/py_ortdie" "$tmp/py_ortnone" "$tmp/py_ortskip"
ort_opt="-q --cost ort --no-verify --no-cost-cache --budget 50 --time-limit 100000"
for m in convs attention inception; do
    check "--cost ort on $m: every kernel model is valid ONNX that onnxruntime runs" \
        eval "TASOC_PYTHON='$tmp/py_ort' status_is 0 '$E' optimize '$corpus/$m.onnx' -o '$tmp/ort_$m.onnx' $ort_opt && grep -qE '^costs: [1-9][0-9]* measured in [0-9.]+ s, 0 estimated' '$tmp/out'"
done
check "--cost ort --cost-cache: the cache names onnxruntime, the threads and the CPU" \
    eval "TASOC_PYTHON='$tmp/py_ort' status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/oc1.onnx' $ort_opt --cost-cache '$tmp/ort_cache' && head -1 '$tmp/ort_cache' | grep -q '^eg-cost-cache 1 ort onnxruntime fake, 1 thread, '"
check "... a second run measures nothing and writes the same bytes" \
    eval "TASOC_PYTHON='$tmp/py_ort' status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/oc2.onnx' $ort_opt --cost-cache '$tmp/ort_cache' && grep -q '^costs: 0 measured' '$tmp/out' && cmp '$tmp/oc1.onnx' '$tmp/oc2.onnx' && cmp '$tmp/oc1.onnx' '$tmp/ort_attention.onnx'"
check "... the cache of 1 thread is refused at --threads 2: exit 2" \
    eval "TASOC_PYTHON='$tmp/py_ort' status_is 2 '$E' optimize '$corpus/attention.onnx' -o '$tmp/oc3.onnx' $ort_opt --threads 2 --cost-cache '$tmp/ort_cache' && grep -q 'another backend or machine' '$tmp/err'"
check "--cost ort, the helper dies after 3 kernels: the rest estimated, a valid result" \
    eval "TASOC_PYTHON='$tmp/py_ortdie' status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/od.onnx' $ort_opt && grep -qE '^costs: 3 measured in [0-9.]+ s, [1-9][0-9]* estimated' '$tmp/out' && '$E' info '$tmp/od.onnx' >/dev/null"
check "--cost ort without onnxruntime: exit 2 with the helper's advice, no output" \
    eval "TASOC_PYTHON='$tmp/py_ortnone' status_is 2 '$E' optimize '$corpus/convs.onnx' -o '$tmp/on.onnx' -q --cost ort && grep -q 'pip install onnxruntime' '$tmp/err' && test ! -e '$tmp/on.onnx'"
check "--cost ort without the interpreter: exit 2, says so" \
    eval "TASOC_PYTHON='$tmp/none' status_is 2 '$E' optimize '$corpus/convs.onnx' -o '$tmp/on.onnx' -q --cost ort && grep -q 'TASOC_PYTHON' '$tmp/err'"
check "--cost ort, a runtime whose fused Add + LayerNormalization is slow, no search: the residual Add is written as Sum" \
    eval "TASOC_PYTHON='$tmp/py_ortskip' status_is 0 '$E' optimize '$corpus/post_ln.onnx' -o '$tmp/pl.onnx' $ort_opt --budget 0 && grep -q '^built-ins: .* 1 additions written as Sum' '$tmp/out' && python3 -c \"import onnx, sys; g = onnx.load(sys.argv[1]).graph; by = {o: n.op_type for n in g.node for o in n.output}; sys.exit(not all(by[n.input[0]] == 'Sum' for n in g.node if n.op_type == 'LayerNormalization'))\" '$tmp/pl.onnx'"
check "... with the search: no LayerNormalization reads an Add of two same-shape tensors any more" \
    eval "TASOC_PYTHON='$tmp/py_ortskip' status_is 0 '$E' optimize '$corpus/post_ln.onnx' -o '$tmp/pls.onnx' $ort_opt && python3 -c \"import onnx, sys; m = onnx.shape_inference.infer_shapes(onnx.load(sys.argv[1])); g = m.graph; sh = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in list(g.value_info) + list(g.input)}; sh.update({t.name: list(t.dims) for t in g.initializer}); by = {o: n for n in g.node for o in n.output}; sys.exit(any(n.op_type == 'LayerNormalization' and by[n.input[0]].op_type == 'Add' and sh[by[n.input[0]].input[0]] == sh[by[n.input[0]].input[1]] for n in g.node))\" '$tmp/pls.onnx'"
check "... both compute what the input computes" python3 "$tmp/same.py" "$corpus/post_ln.onnx" "$tmp/pl.onnx" "$tmp/pls.onnx"
check "--cost ort, the fused form as fast: no spelling changes (the analytic cost rates both alike too)" \
    eval "TASOC_PYTHON='$tmp/py_ort' status_is 0 '$E' optimize '$corpus/post_ln.onnx' -o '$tmp/pl2.onnx' $ort_opt && grep -q '^built-ins: .* 0 additions written as Sum' '$tmp/out' && status_is 0 '$E' optimize --deterministic '$corpus/post_ln.onnx' -o '$tmp/pl3.onnx' -q && grep -q '^built-ins: .* 0 additions written as Sum' '$tmp/out'"
check "--cost ort for real: --verify is on by default, the result agrees in onnxruntime" \
    eval "status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/real_ort.onnx' -q --cost ort --verify-runs 5 --no-cost-cache && grep -qE '^costs: [1-9][0-9]* measured' '$tmp/out' && grep -qE '^verify: writing the |^rules applied: 0 \(result not cheaper' '$tmp/out'"
# The calibration trace (bench/calibrate.py): onnxruntime's time and
# analytic-cpu's for each kernel, and each judgment's two deltas.
check "--cost-trace: a kern line per kernel timed, a pair line per judgment, all fields numbers" \
    eval "status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/tr.onnx' $ort_opt --cost-trace '$tmp/trace' && grep -q '^kern ' '$tmp/trace' && grep -q '^pair ' '$tmp/trace' && awk '\$1==\"kern\" && (NF!=15 || \$14<=0 || \$15<=0) {bad=1} \$1==\"pair\" && NF!=6 {bad=1} END {exit bad}' '$tmp/trace'"
check "--cost-trace without --cost ort: exit 2, says why" \
    eval "status_is 2 '$E' optimize --deterministic '$corpus/attention.onnx' -o '$tmp/tr2.onnx' --cost-trace '$tmp/trace2' && grep -q 'needs --cost ort' '$tmp/err'"
# calibrate.py fit recovers the constants of kernels made to follow them
mkdir -p "$tmp/calib"
python3 - "$tmp/calib/bench.synthetic.trace" <<'PY'
import random, sys
random.seed(3)
law = {"conv": (1.0, 1e-5, 2e-5), "ew": (1.0, 0.0, 1.5e-5)}  # one launch for all classes
with open(sys.argv[1], "w") as f:
    for i in range(200):
        cls = "conv" if i % 2 else "ew"
        a, b, c = law[cls]
        flops, nbytes = random.uniform(1e4, 1e8), random.uniform(1e3, 1e7)
        f.write(f"kern {i:016x} {cls} 0 1 0 {flops} {nbytes} 3 3 1 8 8 {a + b * flops + c * nbytes} 1\n")
PY
check "calibrate.py fit: the constants the kernels follow, per class, into the header" \
    eval "python3 bench/calibrate.py fit '$tmp/calib' --header '$tmp/calib.h' >/dev/null && python3 -c \"import re, sys; t = {m[0]: [float(v) for v in m[1].split(',')] for m in re.findall(r'\[EG_CAL_(\w+)\] = \{([^}]*)\}', open(sys.argv[1]).read())}; ok = lambda got, want: all(abs(g - w) <= 1e-3 * abs(w) + 1e-12 for g, w in zip(got, want)); sys.exit(not (ok(t['CONV'], [1, 1e-5, 2e-5]) and ok(t['EW'], [1, 0, 1.5e-5]) and len(t) == 15))\" '$tmp/calib.h'"
printf 'garbage\n' >"$tmp/garbage.onnx"
check "the timing helper: a candidate onnxruntime refuses is reported and never timed, the others are" \
    eval "python3 -c \"\$(cat engine/verify/ort_time.py)\" --runs 3 '$corpus/attention.onnx' '$tmp/garbage.onnx' '$corpus/attention.onnx' >'$tmp/oh' 2>'$tmp/eh' && grep -qP '^model\t1\t0\t0\tinf\t0$' '$tmp/oh' && grep -qP '^ratios\t2\t[0-9.]+' '$tmp/oh' && ! grep -qP '^ratios\t2\t0\t' '$tmp/oh' && grep -q 'garbage.onnx: onnxruntime refuses it' '$tmp/eh'"
check "... and computes what the input computes" python3 "$tmp/same.py" "$corpus/attention.onnx" "$tmp/real_ort.onnx"
# The helper's rounds end when they have decided: a candidate with wrong
# outputs is timed once, one 50x slower leaves after the screening rounds,
# the rest stop between the minimum and the maximum.
python3 - "$tmp" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
def save(name, nodes, inits):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256, 256])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8  # what onnxruntime 1.30 still reads (onnx 1.23 writes 14 by default)
    onnx.save(m, f"{sys.argv[1]}/rounds_{name}.onnx")
save("base", [helper.make_node("Relu", ["x"], ["y"])], [])
save("wrong", [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "two"], ["y"])],
     [numpy_helper.from_array(np.array(2, np.float32), "two")])
k = [numpy_helper.from_array(np.array(1 + (-1) ** i * 1e-4, np.float32), f"k{i}") for i in range(60)]
save("slow", [helper.make_node("Relu", ["x"], ["t0"])] +
     [helper.make_node("Mul", [f"t{i}", f"k{i}"], ["y" if i == 59 else f"t{i + 1}"]) for i in range(60)], k)
PY
check "the timing helper: wrong outputs timed in 1 round, a much slower candidate in 3, the rest in 5 to 20" \
    eval "python3 -c \"\$(cat engine/verify/ort_time.py)\" --runs 20 '$tmp/rounds_base.onnx' '$tmp/rounds_slow.onnx' '$tmp/rounds_base.onnx' '$tmp/rounds_wrong.onnx' >'$tmp/oh' 2>'$tmp/eh' && grep -qP '^model\t3\t.*\t1$' '$tmp/oh' && grep -qP '^model\t1\t.*\t3$' '$tmp/oh' && grep -qP '^model\t2\t.*\t([5-9]|1[0-9]|20)$' '$tmp/oh'"
check "... with --min-runs 20, exactly 20 for those left" \
    eval "python3 -c \"\$(cat engine/verify/ort_time.py)\" --runs 20 --min-runs 20 '$tmp/rounds_base.onnx' '$tmp/rounds_base.onnx' >'$tmp/oh' 2>'$tmp/eh' && grep -qP '^model\t1\t.*\t20$' '$tmp/oh' && grep -qP '^model\t-1\t.*\t20$' '$tmp/oh'"
check "--cost ort --no-verify: no onnxruntime timing of the result" \
    eval "status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/nv.onnx' -q --cost ort --no-verify && ! grep -q '^verify:' '$tmp/out'"

# The default: onnxruntime's costs and --verify where python3 has
# onnxruntime (this suite's machines do: ./configure installs it), a
# per-user cost cache (here $TASOC_CACHE_DIR), and without onnxruntime the
# analytic cost with a warning; --deterministic says the latter is meant.
ucache="$tmp/user-cache"
check "default: costs measured in onnxruntime, and the result verified" \
    eval "TASOC_CACHE_DIR='$ucache' status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/def1.onnx' --verify-runs 3 && grep -q 'cost ort' '$tmp/err' && grep -qE '^costs: [1-9][0-9]* measured' '$tmp/out' && grep -qE '^verify: writing the |^rules applied: 0 \(result not cheaper' '$tmp/out'"
check "... the output computes what the input computes" python3 "$tmp/same.py" "$corpus/convs.onnx" "$tmp/def1.onnx"
check "... the per-user cost cache was written, one file named by backend and machine" \
    eval "ls '$ucache' | grep -qE '^costs-ort-[0-9a-f]{16}\.txt$' && test \$(ls '$ucache' | grep -c '\.txt$') -eq 1"
check "... a second run measures nothing: every cost comes from it" \
    eval "TASOC_CACHE_DIR='$ucache' status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/def2.onnx' --verify-runs 3 -q && grep -qE '^costs: 0 measured, .* \([1-9][0-9]* loaded from $ucache/costs-ort-' '$tmp/out'"
check "... at --threads 2 another file: times at other threads do not transfer" \
    eval "TASOC_CACHE_DIR='$ucache' status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/def3.onnx' --verify-runs 3 -q --threads 2 && test \$(ls '$ucache' | grep -c '\.txt$') -eq 2"
check "... a damaged per-user cache is a warning, rewritten whole" \
    eval "f=\$(ls '$ucache'/*.txt | head -1); echo garbage >\"\$f\"; TASOC_CACHE_DIR='$ucache' status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/def4.onnx' --verify-runs 3 -q && grep -q 'warning: .*not a cost cache' '$tmp/err' && head -1 \"\$f\" | grep -q '^eg-cost-cache 1 ort '"
# verify's choice is kept beside the cost cache, keyed by the models'
# content and the machine: the same run again times nothing. The kernel
# costs come from the fake helper, so the search improves the model on any
# machine under any load (measured costs may find nothing cheaper, and then
# nothing is verified); verify itself times in onnxruntime for real.
vcache="$tmp/vcache"
printf '#!/bin/sh\nif [ "$3" = --threads ] && [ $# -eq 4 ]; then exec python3 "%s" 1000000; fi\nexec python3 "$@"\n' "$tmp/ortfake.py" >"$tmp/py_hy"
chmod +x "$tmp/py_hy"
check "default on a model the search improves: verify times the candidates" \
    eval "TASOC_PYTHON='$tmp/py_hy' TASOC_CACHE_DIR='$vcache' status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/vc1.onnx' --verify-runs 3 -q && grep -q '^verify: writing the ' '$tmp/out' && ! grep -q 'verify cache' '$tmp/out' && ls '$vcache' | grep -qE '^costs-ort-[0-9a-f]{16}\.txt\.verify$'"
check "... the same run again: the verify cache's choice, the same bytes, nothing timed" \
    eval "TASOC_PYTHON='$tmp/py_hy' TASOC_CACHE_DIR='$vcache' status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/vc2.onnx' --verify-runs 3 -q && grep -q '^verify: writing the .*the verify cache' '$tmp/out' && cmp '$tmp/vc1.onnx' '$tmp/vc2.onnx'"
check "... other verify options: timed anew" \
    eval "TASOC_PYTHON='$tmp/py_hy' TASOC_CACHE_DIR='$vcache' status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/vc3.onnx' --verify-runs 4 -q && grep -q '^verify: writing the ' '$tmp/out' && ! grep -q 'verify cache' '$tmp/out' && test \$(grep -c . '$vcache'/*.verify) -eq 3"
check "... a damaged verify cache: timed anew, the file rewritten" \
    eval "f=\$(ls '$vcache'/*.verify) && printf 'junk\n' >\"\$f\" && TASOC_PYTHON='$tmp/py_hy' TASOC_CACHE_DIR='$vcache' status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/vc4.onnx' --verify-runs 3 -q && ! grep -q 'verify cache' '$tmp/out' && head -1 '$vcache'/*.verify | grep -q '^eg-verify-cache 1$'"
# The second opinion: with measured costs, verify also times the search
# under analytic-cpu costs. Kernel costs from the fake helper, timings from
# runner.py: the first run says at which row the second opinion is, the
# second run makes that row the fastest.
printf '#!/bin/sh\nif [ "$3" = --threads ] && [ $# -eq 4 ]; then exec python3 "%s" 1000000; fi\nshift 2\nexec python3 "%s" "$@"\n' "$tmp/ortfake.py" "$tmp/runner.py" >"$tmp/py_second"
chmod +x "$tmp/py_second"
check "default: verify times a second opinion, the search under analytic-cpu costs" \
    eval "TASOC_PYTHON='$tmp/py_second' FAST_K=0 status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/so1.onnx' --no-cost-cache && grep -q '^second opinion: the search under analytic-cpu costs' '$tmp/out' && grep -q '^verify: second opinion ' '$tmp/out'"
check "... the second opinion measured fastest: it is written, and computes what the input computes" \
    eval "k=\$(grep '^verify: ' '$tmp/out' | grep -n 'verify: second opinion ' | cut -d: -f1) && TASOC_PYTHON='$tmp/py_second' FAST_K=\$((k - 1)) status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/so2.onnx' --no-cost-cache && grep -q '^verify: writing the second opinion' '$tmp/out' && python3 '$tmp/same.py' '$corpus/attention.onnx' '$tmp/so2.onnx' && ! cmp -s '$corpus/attention.onnx' '$tmp/so2.onnx'"
check "... --no-second-opinion: none" \
    eval "TASOC_PYTHON='$tmp/py_second' FAST_K=0 status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/so4.onnx' --no-cost-cache --no-second-opinion && grep -q '^verify: search result ' '$tmp/out' && ! grep -q 'second opinion' '$tmp/out'"
check "... --deterministic has none" \
    eval "status_is 0 '$E' optimize --deterministic '$corpus/attention.onnx' -o '$tmp/so3.onnx' && ! grep -q 'second opinion' '$tmp/out'"
check "--no-cost-cache: nothing written" \
    eval "TASOC_CACHE_DIR='$tmp/nocache' status_is 0 '$E' optimize '$corpus/convs.onnx' -o '$tmp/def5.onnx' --verify-runs 3 -q --no-cost-cache && test ! -e '$tmp/nocache'"
check "default without onnxruntime: the analytic cost, a warning that the result is unverified" \
    eval "TASOC_PYTHON='$tmp/py_ortnone' status_is 0 '$E' optimize '$corpus/attention.onnx' -o '$tmp/def6.onnx' -q && grep -q 'warning: .*pip install onnxruntime.*not verified' '$tmp/err' && ! grep -q '^verify:' '$tmp/out'"
check "... the same bytes as --deterministic" \
    eval "status_is 0 '$E' optimize --deterministic '$corpus/attention.onnx' -o '$tmp/def7.onnx' -q && cmp '$tmp/def6.onnx' '$tmp/def7.onnx'"
check "--deterministic measures nothing and writes no cost cache" \
    eval "TASOC_CACHE_DIR='$tmp/dcache' status_is 0 '$E' optimize --deterministic '$corpus/convs.onnx' -o '$tmp/def8.onnx' -q && grep -q '^costs: 0 measured' '$tmp/out' && test ! -e '$tmp/dcache'"
check "--deterministic --cost ort: exit 2" status_is 2 "$E" optimize --deterministic "$corpus/convs.onnx" -o "$tmp/d9.onnx" --cost ort
check "--deterministic --verify: exit 2" status_is 2 "$E" optimize --deterministic "$corpus/convs.onnx" -o "$tmp/d9.onnx" --verify
check "--deterministic --cost analytic: fine" status_is 0 "$E" optimize --deterministic "$corpus/convs.onnx" -o "$tmp/d9.onnx" --cost analytic -q

run_py test/engine_opt_test.py "$E"
echo "1..$n"
