#!/bin/sh
# tests/base/json_wasm.sh NATIVE PERI SRCDIR WORKDIR: builds tests/base/json_roundtrip.c
# and the JSON library for wasm32-wasi with clang and Debian's wasi-libc, runs it on the
# project's engine (`peri run`) and compares its output with the native build's.
# Exit 77 (ctest: Skipped) when the toolchain is missing.
set -eu
native=$1 peri=$2 src=$3 work=$4
cc=$(command -v clang-14 || command -v clang || true)
if [ -z "$cc" ] || [ ! -f /usr/lib/wasm32-wasi/libc.a ] || ! command -v wasm-ld >/dev/null; then
    echo "json_wasm: clang, wasm-ld or Debian's wasi-libc (/usr/lib/wasm32-wasi) missing: not run"
    exit 77
fi
mkdir -p "$work"
# -O1 and a 1 MiB stack: the parser recurses once per nesting level (2048 at most)
"$cc" --target=wasm32-wasi -std=c17 -O1 -Wl,-z,stack-size=1048576 -Wall -Wextra -Werror -I"$src/include" -I"$src/src" \
    "$src/tests/base/json_roundtrip.c" "$src"/src/base/json_*.c "$src/src/base/buf.c" \
    -o "$work/json_roundtrip.wasm"
"$native" >"$work/native.txt"
"$peri" run "$work/json_roundtrip.wasm" >"$work/wasm.txt"
if ! cmp -s "$work/native.txt" "$work/wasm.txt"; then
    echo "json_wasm: the wasm build writes something else than the native one:"
    diff "$work/native.txt" "$work/wasm.txt" || true
    exit 1
fi
echo "json_wasm: $(wc -l <"$work/wasm.txt") lines identical (native, wasm32-wasi on peri run)"
