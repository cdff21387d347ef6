#!/usr/bin/env bash
# Rebuilds the room's WASI test programs (tests/room/fixtures/*.wasm) from their C
# sources with clang-14 and Debian's wasi-libc. The .wasm files are committed so the
# tests do not need clang; run this after changing a source.
set -euo pipefail
cd "$(dirname "$0")/../tests/room/fixtures"
CC=${CC:-clang-14}
for src in hello.c probe.c; do
  out=${src%.c}.wasm
  "$CC" --target=wasm32-wasi --sysroot=/usr -O2 -Wall -Wextra -o "$out" "$src"
  echo "built $out ($(stat -c %s "$out") bytes)"
done
