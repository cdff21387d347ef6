#!/bin/sh
# tests/store/pgwire_wasm.sh NATIVE PERI SRCDIR WORKDIR: builds tests/store/
# pgwire_transcript.c with the wire client and base's crypto for wasm32-wasi (clang and
# Debian's wasi-libc, as the agent host's WebAssembly form builds them), runs it on the
# project's engine (`peri run`) and compares its output with the native build's.
# Exit 77 (ctest: Skipped) when the toolchain is missing.
set -eu
native=$1 peri=$2 src=$3 work=$4
cc=$(command -v clang-14 || command -v clang || true)
if [ -z "$cc" ] || [ ! -f /usr/lib/wasm32-wasi/libc.a ] || ! command -v wasm-ld >/dev/null; then
    echo "pgwire_wasm: clang, wasm-ld or Debian's wasi-libc (/usr/lib/wasm32-wasi) missing: not run"
    exit 77
fi
mkdir -p "$work"
"$cc" --target=wasm32-wasi -std=c17 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror \
    -I"$src/include" -I"$src/src" "$src/tests/store/pgwire_transcript.c" \
    "$src/src/store/pgwire.c" "$src/src/store/pgwire_scram.c" "$src/src/base/sha256.c" \
    "$src/src/base/hmac.c" "$src/src/base/base64.c" "$src/src/base/buf.c" "$src/src/base/fifo.c" \
    -o "$work/pgwire_transcript.wasm"
"$native" >"$work/native.txt"
"$peri" run "$work/pgwire_transcript.wasm" >"$work/wasm.txt"
if ! cmp -s "$work/native.txt" "$work/wasm.txt"; then
    echo "pgwire_wasm: the wasm build writes something else than the native one:"
    diff "$work/native.txt" "$work/wasm.txt" || true
    exit 1
fi
echo "pgwire_wasm: $(wc -l <"$work/wasm.txt") lines identical (native, wasm32-wasi on peri run)"
