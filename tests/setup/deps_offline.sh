#!/usr/bin/env bash
# deps_offline.sh DEPS_SH: runs deps.sh against an unreachable npm registry with empty
# caches. It must exit 0 within a minute, say that the registry is unreachable, and leave
# nothing half-installed in the caches (the CPython build, which needs no npm, is left
# out: PERI_NO_PYTHON_WASM=1). Exit 0 = pass, 1 = fail, 77 = no npm here.
set -u
deps="$1"
command -v npm >/dev/null || { echo "SKIP: npm is not installed"; exit 77; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
npm_config_registry=http://127.0.0.1:9/ PERI_NO_PYTHON_WASM=1 PERI_CACHE_DIR="$tmp/cache" \
  PERI_NPM_CACHE="$tmp/npm-acp" PERI_NPM_DIR="$tmp/npm-mcp" "$deps" >"$tmp/out" 2>"$tmp/err"
rc=$?
took=$(( $(date +%s) - start ))
fail=0
[ "$rc" = 0 ] || { echo "FAIL: deps.sh exited $rc"; fail=1; }
[ "$took" -le 60 ] || { echo "FAIL: deps.sh took ${took}s against an unreachable registry"; fail=1; }
grep -q "npm registry is unreachable" "$tmp/err" || { echo "FAIL: no line says the registry is unreachable"; fail=1; }
[ "$(grep -c unreachable "$tmp/err")" = 1 ] || { echo "FAIL: the registry was reported more than once"; fail=1; }
if find "$tmp/cache" -name '*.part' -o -name 'ruby+stdlib.wasm' 2>/dev/null | grep -q .; then
  echo "FAIL: something was half-installed"; fail=1
fi
# A second run within the hour does not probe again and stays quiet.
start=$(date +%s)
npm_config_registry=http://127.0.0.1:9/ PERI_NO_PYTHON_WASM=1 PERI_CACHE_DIR="$tmp/cache" \
  PERI_NPM_CACHE="$tmp/npm-acp" PERI_NPM_DIR="$tmp/npm-mcp" "$deps" >/dev/null 2>"$tmp/err2" || fail=1
[ $(( $(date +%s) - start )) -le 20 ] || { echo "FAIL: the second run waited for the registry again"; fail=1; }
cat "$tmp/err"
[ "$fail" = 0 ] && echo "PASS: deps.sh degrades without the npm registry (${took}s)"
exit "$fail"
