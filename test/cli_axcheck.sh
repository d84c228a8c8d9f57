#!/usr/bin/env bash
# cli_axcheck.sh - the axcheck tool's exit codes and messages (TAP).
# BIN names the directory holding the binaries.
set -u
: "${BIN:?BIN must name the binary directory}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.inc"

check "shipped axioms hold, wrong ones refuted" \
    status_is 0 "$BIN/axcheck" -q opspecs/axioms.ax --wrong opspecs/wrong.ax
check "a false identity listed as an axiom fails with exit 1" \
    status_is 1 "$BIN/axcheck" -q opspecs/wrong.ax
check "... and names it" grep -q "FAIL relu-ewadd" "$tmp/out"
check "a true axiom listed as wrong fails with exit 1" \
    status_is 1 "$BIN/axcheck" -q --wrong opspecs/axioms.ax
printf '(axiom a "c" ((x tensor)) (relu x)\n (bogus x))\n' >"$tmp/bad.ax"
check "unknown operator: exit 2" status_is 2 "$BIN/axcheck" "$tmp/bad.ax"
check "... message has file:line" grep -q "bad.ax:2:" "$tmp/err"
check "missing file: exit 2" status_is 2 "$BIN/axcheck" "$tmp/none.ax"
check "no arguments: usage, exit 2" status_is 2 "$BIN/axcheck"
check "--help: exit 0" status_is 0 "$BIN/axcheck" --help
check "bad --instances value: exit 2" status_is 2 "$BIN/axcheck" --instances 0 opspecs/axioms.ax
echo "1..$n"
