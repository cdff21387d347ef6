#!/usr/bin/env bash
# Rebuilds tests/wasi/fixtures/*.wasm (the `peri run` option and --dir escape probe)
# with clang-14 and Debian's wasi-libc. The .wasm is committed so the tests do not
# need clang; run this after changing a source.
set -euo pipefail
cd "$(dirname "$0")/../tests/wasi/fixtures"
CC=${CC:-clang-14}
for src in wasi_probe.c; do
  out=${src%.c}.wasm
  "$CC" --target=wasm32-wasi --sysroot=/usr -O2 -Wall -Wextra -Wl,--strip-all -o "$out" "$src"
  echo "built $out ($(stat -c %s "$out") bytes)"
done
