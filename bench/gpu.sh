#!/usr/bin/env bash
# bench/gpu.sh - the GPU check: the CUDA paths (synth's fingerprint backend,
# the cuda cost backend, --cost cuda) run on a GPU machine, in one command.
#
#   bench/gpu.sh pack [--pack DIR]                 (here: build and pack)
#   bench/gpu.sh run  [--pack DIR] [--report FILE] [--models LIST] [--runs N]
#                     [--steps LIST] [--simulate]
#   bench/gpu.sh      [same options]               (pack, then run)
#
# pack (on a machine with the build's Debian packages and nvcc): builds
#   the release binaries with CUDA and writes DIR (default gpu-pack/, which
#   git ignores): the binaries the check runs and the shared libraries they
#   load that a GPU machine lacks (z3, msgpack, protobuf-c, xxhash, oneDNN,
#   OpenBLAS, cmocka), xz-compressed, under 64 MiB. CUDA's own libraries
#   (cudart, cuBLAS, cuDNN) are not packed: the GPU machine's toolkit and
#   torch's nvidia wheels have them, and run finds them there.
# run (on the GPU machine, or here): unpacks DIR, then
#   1. the tests that touch CUDA (test_gpu, test_synth, test_engine_cost,
#      cli_synth.sh, cli_optimize.sh): with a device they run the device;
#   2. synth at depth 3 with --backend cuda and --backend cpu: the two
#      candidates files must be byte-identical;
#   3. per bench model (bench/models.py; default all six): engine optimize
#      --cost cuda --no-verify: every kernel measured (0 not measurable);
#      the summed cost of the input against its end-to-end time with torch
#      on the GPU (bench/torch_run.py: eager, and a CUDA graph replay); the
#      output against the input in onnxruntime (bench/ort_compare.py) and
#      its speedup with torch on the GPU.
#   --steps picks some of the three (default "tests synth models").
#   --simulate runs the device steps with the CPU standing in for the GPU
#   (--cost cpu, --backend cpu, torch on the CPU), to test this script where
#   no GPU is; its figures are not GPU figures.
#   Writes one markdown report (default bench/results/gpu.md) and prints
#   it. Without a device every CUDA part says "no device" and the run
#   exits 0; it exits 1 when a check fails, 2 on bad usage.
#
# On a GPU machine lent through the device tool (README, "GPU check"):
#   bench/gpu.sh pack here, then run there with gpu-pack carried:
#   bench/gpu.sh run --report "$OUT/gpu.md"
# TF32 is off (NVIDIA_TF32_OVERRIDE=0): the GPU computes in float32, as the
# CPU and onnxruntime do.
set -uo pipefail
cd "$(dirname "$0")/.."

mode=all pack=gpu-pack report=bench/results/gpu.md models="" runs=30 simulate=0 steps="tests synth models"
case "${1:-}" in pack|run) mode=$1; shift ;; esac
while [ $# -gt 0 ]; do
    case "$1" in
    --pack) pack=$2; shift ;;
    --report) report=$2; shift ;;
    --models) models=$2; shift ;;
    --runs) runs=$2; shift ;;
    --simulate) simulate=1 ;;
    --steps) steps=$2; shift ;;
    -h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/gpu.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$models" ] || models="resnet50 resnext50 inception_v3 squeezenet nasnet_a bert_base"

# ---- pack -----------------------------------------------------------------
# The binaries the run needs, from out/.
PACK_BINS="bin/engine bin/synth bin/ruledb test/test_gpu test/test_synth test/test_engine_cost"
# Libraries a GPU machine has itself: glibc's, the toolchain runtime (packed
# apart, used only if missing there) and CUDA's (found there).
is_system_lib() { case "$1" in libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|linux-vdso*) return 0 ;; esac; return 1; }
is_cuda_lib() { case "$1" in libcuda.so*|libcudart*|libcublas*|libcudnn*) return 0 ;; esac; return 1; }
is_runtime_lib() { case "$1" in libstdc++*|libgcc_s*|libgomp*|libgfortran*|libquadmath*) return 0 ;; esac; return 1; }

do_pack() {
    grep -q "have_cuda = 1" config.ninja 2>/dev/null ||
        { echo "bench/gpu.sh: config.ninja has no CUDA (run ./configure where nvcc exists)" >&2; return 2; }
    ninja $(for b in $PACK_BINS; do echo "out/$b"; done) >/dev/null || { echo "bench/gpu.sh: build failed" >&2; return 2; }
    local stage; stage=$(mktemp -d)
    mkdir -p "$stage/tasoc/bin" "$stage/tasoc/test" "$stage/tasoc/lib" "$stage/tasoc/lib-runtime"
    for b in $PACK_BINS; do cp "out/$b" "$stage/tasoc/$b"; done
    local name path
    for b in $PACK_BINS; do ldd "out/$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
        while read -r name path; do
            if is_system_lib "$name" || is_cuda_lib "$name"; then continue; fi
            if is_runtime_lib "$name"; then cp -L "$path" "$stage/tasoc/lib-runtime/$name"
            else cp -L "$path" "$stage/tasoc/lib/$name"; fi
        done
    rm -rf "$pack"; mkdir -p "$pack"
    (cd "$stage" && tar -cf - tasoc) | xz -T0 -6 >"$pack/tasoc.tar.xz"
    git rev-parse HEAD >"$pack/COMMIT" 2>/dev/null || echo unknown >"$pack/COMMIT"
    (cd "$stage/tasoc" && find . -type f -printf '%s %p\n' | sort -k2) >"$pack/MANIFEST"
    rm -rf "$stage"
    local bytes; bytes=$(du -cb "$pack" | tail -1 | cut -f1)
    echo "bench/gpu.sh: packed $pack: $((bytes / 1048576)) MiB ($bytes bytes; limit 64 MiB)"
    [ "$bytes" -lt $((64 * 1048576)) ] || { echo "bench/gpu.sh: $pack is over 64 MiB" >&2; return 1; }
}

# ---- run ------------------------------------------------------------------
fails=0
fail() { fails=$((fails + 1)); echo "- **FAIL**: $*" >>"$rep"; }
say() { echo "$*" >>"$rep"; }

# Directories holding CUDA's libraries on this machine: the toolkit's, and
# those of the nvidia wheels torch brought (cuDNN is often only there).
cuda_lib_dirs() {
    local d
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && echo "$d"; done
    python3 - <<'EOF' 2>/dev/null
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
seen = set()
for r in roots:
    for lib in glob.glob(os.path.join(r, "nvidia", "**", "lib*.so*"), recursive=True):
        name = os.path.basename(lib)
        if name.startswith(("libcudnn", "libcublas", "libcudart")):
            seen.add(os.path.dirname(lib))
for d in sorted(seen):
    print(d)
EOF
}

missing_libs() { for b in $PACK_BINS; do ldd "$T/$b" 2>&1 | grep "not found"; done | sort -u; }

# Runs a TAP-printing test; a line in the report either way.
tap_test() {
    local name=$1; shift
    local log="$work/$(basename "$name").log" t0=$SECONDS rc
    timeout 420 "$@" >"$log" 2>&1; rc=$?
    local ok nok; ok=$(grep -cE '^ok ' "$log"); nok=$(grep -cE '^not ok ' "$log")
    if [ "$rc" -ne 0 ] || [ "$nok" -gt 0 ] || [ "$ok" -eq 0 ]; then
        fail "$name: $ok passed, $nok failed, exit $rc ($((SECONDS - t0)) s)"
        keep_log "$log"
        grep -E '^not ok|FAIL|rror' "$log" | head -20 | sed 's/^/    /' >>"$rep"
    else
        say "- $name: $ok passed ($((SECONDS - t0)) s)$(grep -h '^# cuda' "$log" | head -1 | sed 's/^# / -- /')"
    fi
}

keep_log() { mkdir -p "$logs" && cp "$@" "$logs/" 2>/dev/null; }

want() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }

json_field() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); v=d.get(sys.argv[2]); print("" if v is None else (f"{v:.4g}" if isinstance(v, float) else v))' "$1" "$2" 2>/dev/null; }

do_run() {
    [ -f "$pack/tasoc.tar.xz" ] || { echo "bench/gpu.sh: no $pack/tasoc.tar.xz (bench/gpu.sh pack first)" >&2; return 2; }
    work=$(mktemp -d); T=$work/tasoc
    xz -dc "$pack/tasoc.tar.xz" | tar -xf - -C "$work" || { echo "bench/gpu.sh: cannot unpack $pack" >&2; return 2; }
    export NVIDIA_TF32_OVERRIDE=0 PYTHONUNBUFFERED=1 TASOC_CACHE_DIR="$work/cost-cache"
    export LD_LIBRARY_PATH="$T/lib:$(cuda_lib_dirs | paste -sd:)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # The toolchain's runtime libraries only where this machine lacks them
    # (a newer system libstdc++ must win over the packed one).
    mkdir -p "$T/lib-extra"; LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$T/lib-extra"
    local pass name
    for pass in 1 2 3; do
        for name in $(missing_libs | awk '{print $1}'); do
            [ -f "$T/lib-runtime/$name" ] && ln -sf "$T/lib-runtime/$name" "$T/lib-extra/$name"
        done
    done
    mkdir -p "$(dirname "$report")"
    # The report grows beside its final name, so a run stopped at a time
    # limit still leaves what it measured; the logs of the failed checks go
    # to $report.logs/.
    rep=$report.partial logs=$report.logs
    : >"$rep"; rm -rf "$logs"
    local gpu; gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
    say "# GPU check (bench/gpu.sh)"
    say ""
    say "$(date -u +%Y-%m-%dT%H:%MZ); packed from commit $(cut -c1-7 "$pack/COMMIT"), run at $(git rev-parse --short HEAD 2>/dev/null || echo '?');"
    say "GPU: ${gpu:-none (nvidia-smi found none)}; $(nproc) CPU cores; $(ldd --version 2>&1 | head -1);"
    say "$(python3 -c 'import sys, onnxruntime as o; print("Python", sys.version.split()[0] + ", onnxruntime", o.__version__)' 2>&1 | tail -1);"
    say "torch: $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo none). TF32 off (NVIDIA_TF32_OVERRIDE=0)."
    say ""
    say "## Libraries"
    say ""
    local miss; miss=$(missing_libs)
    if [ -n "$miss" ]; then fail "libraries not found: $(echo "$miss" | awk '{print $1}' | paste -sd' ')"; fi
    say "CUDA libraries the engine loads: $(ldd "$T/bin/engine" | awk '/libcudart|libcublas.so|libcudnn.so/ {print $1 " -> " $3}' | paste -sd';' | sed 's/;/; /g')"
    say ""

    # Is there a device our CUDA code can use? synth's cuda backend on one
    # operator answers (exit 2 and "no CUDA device" without one).
    local device=0 probe dev=cuda
    if [ "$simulate" = 1 ]; then
        device=1 dev=cpu
        say "Device: **simulated**: the CPU stands in for the GPU (--cost cpu, --backend cpu, torch on the CPU); no figure below is a GPU figure."; say ""
    elif probe=$("$T/bin/synth" --backend cuda --max-ops 1 --ops relu -q -o "$work/probe.db" 2>&1); then device=1
    else say "Device: **no device** ($(echo "$probe" | head -1)): every CUDA part below reports \"no device\"."; say ""; fi

    if want tests; then
        say "## 1. Tests that touch CUDA"
        say ""
        for t in test_gpu test_synth test_engine_cost; do
            tap_test "$t" env CMOCKA_MESSAGE_OUTPUT=TAP OPSPECS_DIR=opspecs "$T/test/$t"
        done
        for s in cli_synth.sh cli_optimize.sh; do tap_test "$s" env BIN="$T/bin" bash "test/$s"; done
        say ""
    fi

    if want synth; then
        say "## 2. synth fingerprints: --backend cuda against --backend cpu, depth 3"
        say ""
        local t0=$SECONDS
        if timeout 300 "$T/bin/synth" --max-ops 3 --no-timings -q -o "$work/cpu.db"; then
            local cpu_s=$((SECONDS - t0))
            if [ "$device" = 1 ]; then
                t0=$SECONDS
                if timeout 300 "$T/bin/synth" --max-ops 3 --no-timings -q --backend "$dev" -o "$work/cuda.db"; then
                    if cmp -s "$work/cpu.db" "$work/cuda.db"; then
                        say "- identical candidates files ($(stat -c %s "$work/cpu.db") bytes; cpu $cpu_s s, cuda $((SECONDS - t0)) s)"
                    else fail "the cuda candidates file differs from the cpu one ($(cmp "$work/cpu.db" "$work/cuda.db" 2>&1 | head -1))"; fi
                else fail "synth --backend cuda at depth 3 failed or timed out ($((SECONDS - t0)) s)"; fi
            else say "- cpu: $cpu_s s; cuda: no device"; fi
        else fail "synth --backend cpu at depth 3 failed"; fi
        say ""
    fi

    if want models; then
        say "## 3. The cuda cost backend and --cost cuda on the bench models"
        say ""
        say "Summed cost: \`engine optimize --cost cuda\`'s cost of the input (us), against its time"
        say "end to end with torch on the GPU (median of $runs; eager: one launch per node from"
        say "Python; graph: a CUDA graph replay, the kernels alone). Output: the optimized model"
        say "against the input in onnxruntime (max rel err) and with torch on the GPU (speedup,"
        say "eager and graph; A/A: the input against itself). cuDNN's convolution algorithms are the"
        say "fastest found by trying each, in the cost and in torch (onnxruntime's CUDA provider"
        say "searches so by default); the last speedup uses cuDNN's heuristic pick instead."
        say ""
        say "| model | kernels measured | not measurable | summed cost us | torch eager us | torch graph us | cost / graph | cost after us | rules | max rel err (ort) | speedup eager | speedup graph | A/A | search s | speedup graph, heuristic |"
        say "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
        local m
        for m in $models; do
            local in="$work/$m.onnx" opt="$work/$m.cuda.onnx" log="$work/$m.log"
            if ! python3 bench/models.py "$m" -o "$in" >/dev/null 2>"$log"; then fail "$m: bench/models.py failed: $(tail -1 "$log")"; continue; fi
            if [ "$device" = 0 ]; then
                if timeout 120 "$T/bin/engine" optimize "$in" -o "$opt" --cost cuda --no-verify -q >"$log" 2>&1; then
                    fail "$m: --cost cuda succeeded without a device"
                elif grep -q "no CUDA device" "$log"; then say "| $m | no device | | | | | | | | | | | | | |"
                else fail "$m: --cost cuda without a device: $(head -1 "$log")"; fi
                rm -f "$in"; continue
            fi
            t0=$SECONDS
            if ! timeout 300 "$T/bin/engine" optimize "$in" -o "$opt" --cost "$dev" --no-verify --no-cost-cache -q >"$log" 2>&1; then
                fail "$m: engine optimize --cost cuda: $(grep -v '^engine:' "$log" | tail -1)"; keep_log "$log"; rm -f "$in" "$opt"; continue
            fi
            local secs=$((SECONDS - t0))
            keep_log "$log"
            local before after measured unmeas rules
            before=$(sed -n 's/^cost before: \([0-9.]*\) us/\1/p' "$log")
            after=$(sed -n 's/^cost after: \([0-9.]*\) us/\1/p' "$log")
            measured=$(sed -n 's/^costs: \([0-9]*\) measured.*/\1/p' "$log")
            unmeas=$(sed -n 's/^costs: .*(\([0-9]*\) not measurable).*/\1/p' "$log")
            rules=$(sed -n 's/^rules applied: \([0-9]*\).*/\1/p' "$log")
            [ "${unmeas:-x}" = 0 ] || fail "$m: ${unmeas:-?} kernels not measurable on the device (roofline used)"
            local ort tr
            ort=$(timeout 300 python3 bench/ort_compare.py "$in" "$opt" --runs 1 --warmup 0 --threads "$(nproc)" 2>&1 | tail -1)
            local err; err=$(json_field "$ort" max_rel_err)
            if [ -z "$err" ] || ! python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 1e-4 else 1)" "$err"; then
                fail "$m: the output differs from the input in onnxruntime: ${ort:0:200}"
            fi
            tr=$(timeout 300 python3 bench/torch_run.py "$in" "$opt" --device "$dev" --runs "$runs" --name "$m" 2>"$work/$m.torch.err" | tail -1)
            if [ -z "$(json_field "$tr" ms)" ]; then
                fail "$m: bench/torch_run.py: $(json_field "$tr" skipped)$(tail -1 "$work/$m.torch.err")"
                keep_log "$work/$m.torch.err"
            fi
            local th; th=$(timeout 300 python3 bench/torch_run.py "$in" "$opt" --device "$dev" --runs "$runs" --name "$m" --cudnn-heuristic 2>/dev/null | tail -1)
            local eager graph ratio
            eager=$(python3 -c 'import sys; print("%.1f" % (float(sys.argv[1]) * 1000))' "$(json_field "$tr" ms)" 2>/dev/null)
            graph=$(python3 -c 'import sys; print("%.1f" % (float(sys.argv[1]) * 1000))' "$(json_field "$tr" graph_ms)" 2>/dev/null)
            ratio=$(python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$before" "$graph" 2>/dev/null)
            say "| $m | ${measured:-?} | ${unmeas:-?} | $before | ${eager:-n/a} | ${graph:-n/a} | ${ratio:-n/a} | $after | $rules | $err | $(json_field "$tr" speedup | sed 's/.$/&x/') | $(json_field "$tr" graph_speedup | sed 's/.$/&x/') | $(json_field "$tr" aa) | $secs | $(json_field "$th" graph_speedup | sed 's/.$/&x/') |"
            echo "$tr" >>"$work/torch.jsonl"
            rm -f "$in" "$opt" "$in.data" "$opt.data"
        done
        say ""
    fi
    if [ "$fails" -eq 0 ]; then say "Result: every check passed$([ "$device" = 0 ] && echo ' (no device: the CUDA parts did not run)')."
    else say "Result: **$fails check(s) failed** (marked FAIL above)."; fi
    mv "$rep" "$report"
    cat "$report"
    rm -rf "$work"
    [ "$fails" -eq 0 ]
}

case "$mode" in
pack) do_pack ;;
run) do_run ;;
all) do_pack && do_run ;;
esac
