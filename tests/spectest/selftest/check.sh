#!/usr/bin/env bash
# tests/spectest/selftest/check.sh PERI_SPECTEST DATA_DIR — proves the runner can
# fail: the selftest script (see gen.py) must give exactly "14 passed, 6 failed,
# 0 skipped", exit status 1, and failure details for lines 3 5 8 10 21 24 only; in a
# child process and with --no-fork. Also checks the absent-data behaviour.
set -uo pipefail
st="$1"; data="$2"
fails=0
for mode in "" "--no-fork"; do
  # shellcheck disable=SC2086
  out=$(SPECTEST_DIR="$data" "$st" --only selftest $mode -v 2>&1); rc=$?
  last=$(printf '%s\n' "$out" | tail -1)
  lines=$(printf '%s\n' "$out" | sed -n 's/^  selftest\.wast:\([0-9]*\):.*/\1/p' | tr '\n' ' ')
  if [ "$rc" != 1 ] || [ "$last" != "14 passed, 6 failed, 0 skipped" ] || [ "$lines" != "3 5 8 10 21 24 " ]; then
    echo "FAIL selftest ${mode:-fork}: status $rc, last line [$last], failing lines [$lines]"
    printf '%s\n' "$out"
    fails=$((fails + 1))
  else
    echo "ok   selftest ${mode:-fork}"
  fi
done
out=$(SPECTEST_DIR=/nonexistent/spectest "$st" 2>&1); rc=$?
if [ "$rc" != 1 ] || ! printf '%s' "$out" | grep -q "absent"; then
  echo "FAIL absent data: status $rc: $out"; fails=$((fails + 1))
else echo "ok   absent data"; fi
SPECTEST_DIR=/nonexistent/spectest "$st" --skip-if-absent > /dev/null 2>&1; rc=$?
if [ "$rc" != 77 ]; then echo "FAIL --skip-if-absent: status $rc"; fails=$((fails + 1))
else echo "ok   --skip-if-absent"; fi
"$st" --bogus > /dev/null 2>&1; rc=$?
if [ "$rc" != 2 ]; then echo "FAIL usage error: status $rc"; fails=$((fails + 1))
else echo "ok   usage error"; fi
[ "$fails" -eq 0 ]
