#!/bin/sh
# tests/store/remote_wasm.sh NATIVE PERI SRCDIR WORKDIR: builds tests/store/remote_wasm.c
# with the remote store client alone (no libpq, libcrypto or threads) for wasm32-wasi
# (clang and Debian's wasi-libc), runs it on the project's engine (`peri run`) and
# compares its output with the native build's. Exit 77 (ctest: Skipped) when the
# toolchain is missing.
set -eu
native=$1 peri=$2 src=$3 work=$4
cc=$(command -v clang-14 || command -v clang || true)
if [ -z "$cc" ] || [ ! -f /usr/lib/wasm32-wasi/libc.a ] || ! command -v wasm-ld >/dev/null; then
    echo "remote_wasm: clang, wasm-ld or Debian's wasi-libc (/usr/lib/wasm32-wasi) missing: not run"
    exit 77
fi
mkdir -p "$work"
s="$src/src/store"
"$cc" --target=wasm32-wasi -std=c17 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror \
    -I"$src/include" -I"$src/src" "$src/tests/store/remote_wasm.c" \
    "$s/remote.c" "$s/remote_conn.c" "$s/rules_sql.c" "$s/pg_shared.c" "$s/error.c" \
    "$s/uuid_form.c" "$s/pgwire.c" "$s/pgwire_scram.c" "$src/src/base/sha256.c" \
    "$src/src/base/hmac.c" "$src/src/base/base64.c" "$src/src/base/buf.c" "$src/src/base/fifo.c" \
    -o "$work/remote_wasm.wasm"
"$native" >"$work/native.txt"
"$peri" run "$work/remote_wasm.wasm" >"$work/wasm.txt"
if ! cmp -s "$work/native.txt" "$work/wasm.txt"; then
    echo "remote_wasm: the wasm build writes something else than the native one:"
    diff "$work/native.txt" "$work/wasm.txt" || true
    exit 1
fi
cat "$work/wasm.txt"
