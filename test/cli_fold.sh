#!/usr/bin/env bash
# cli_fold.sh - the built-in rewrites end to end: runs test/engine_fold_test.py
# (TAP) on BIN/fold_driver, which loads a model, applies eg_builtin_pre and
# eg_builtin_post and saves it. BIN names the directory holding the binaries.
set -u
: "${BIN:?BIN must name the binary directory}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.inc"
if [ ! -x "$BIN/fold_driver" ]; then
    n=1; echo "not ok 1 - $BIN/fold_driver not built"
else
    run_py test/engine_fold_test.py "$BIN/fold_driver"
fi
echo "1..$n"
