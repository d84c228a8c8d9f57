#!/usr/bin/env bash
# cli_fold.sh - the built-in rewrites end to end: runs test/engine_fold_test.py
# (TAP) on BIN/fold_driver, which loads a model, applies eg_builtin_pre and
# eg_builtin_post and saves it. BIN names the directory holding the binaries.
set -u
: "${BIN:?BIN must name the binary directory}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0
if [ ! -x "$BIN/fold_driver" ]; then
    n=1; echo "not ok 1 - $BIN/fold_driver not built"
elif python3 -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
    python3 test/engine_fold_test.py "$BIN/fold_driver" --start 1 >"$tmp/py" 2>"$tmp/pyerr"
    rc=$?
    cat "$tmp/py"
    n=$(grep -cE '^(ok|not ok) ' "$tmp/py")
    if [ "$rc" -ne 0 ] && ! grep -q '^not ok ' "$tmp/py"; then
        n=$((n + 1)); echo "not ok $n - engine_fold_test.py exited $rc"; sed 's/^/# /' "$tmp/pyerr"
    fi
else
    n=1; echo "ok 1 - # SKIP python3 with onnx, onnxruntime and numpy not found"
fi
echo "1..$n"
