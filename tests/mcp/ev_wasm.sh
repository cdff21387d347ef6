#!/bin/sh
# tests/mcp/ev_wasm.sh SRCDIR WORKDIR: builds the event-driven MCP client (src/mcp/ev*.c
# with the shared proto.c/sse.c, the HTTP client and the guest side of the ports) into a
# wasm32-wasi reactor (tests/mcp/ev_wasm.c) with clang and Debian's wasi-libc alone:
# no pthread.h, no libcurl. Then checks that the module imports nothing but the ports
# (peri_port) and WASI's descriptor calls: no clock of its own. Exit 77 (ctest: Skipped)
# when the toolchain is missing (1 under CI=true).
set -eu
src=$1 work=$2
cc=$(command -v clang-14 || command -v clang || true)
if [ -z "$cc" ] || [ ! -f /usr/lib/wasm32-wasi/libc.a ] || ! command -v wasm-ld >/dev/null; then
    echo "ev_wasm: clang, wasm-ld or Debian's wasi-libc (/usr/lib/wasm32-wasi) missing: not run"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
mkdir -p "$work"
s="$src/src"
"$cc" --target=wasm32-wasi -mexec-model=reactor -std=c17 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror \
    -I"$src/include" -I"$s" "$src/tests/mcp/ev_wasm.c" \
    "$s"/mcp/ev*.c "$s/mcp/proto.c" "$s/mcp/sse.c" \
    "$s/net/http_client.c" "$s/net/http_codec.c" "$s/net/port_wasm.c" "$s/net/err.c" \
    "$s/base/rpc.c" "$s"/base/json_*.c "$s/base/buf.c" "$s/base/array.c" "$s/base/log.c" \
    -Wl,--strip-all -o "$work/ev_wasm.wasm"
for bad in clock_time_get pthread curl_; do
    if grep -q "$bad" "$work/ev_wasm.wasm"; then
        echo "ev_wasm: the module names $bad"
        exit 1
    fi
done
for want in ev_start ev_call ev_cancel ev_close peri_port timer_set; do
    grep -q "$want" "$work/ev_wasm.wasm" || { echo "ev_wasm: $want missing"; exit 1; }
done
echo "ev_wasm: $(wc -c <"$work/ev_wasm.wasm") bytes, imports only the ports and WASI descriptors"
