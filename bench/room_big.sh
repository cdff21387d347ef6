#!/usr/bin/env bash
# bench/room_big.sh OUT.wasm — builds the ~3 MiB WASI module of the room's cold-run
# benchmark: bench/gen_big.py's 22,000 generated functions plus a main that prints
# run(7), every function exported so the linker keeps them, the name section
# stripped so the module stays under the contract's 3,145,728-byte limit.
# Takes a few minutes of clang. Then: build/peri-room-bench HELLO.wasm build/peri OUT.wasm
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: room_big.sh OUT.wasm}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 "$here/gen_big.py" 22000 | sed 's/__attribute__((export_name("run"))) u32 run/u32 run/' > "$tmp/big.c"
printf '#include <stdio.h>\nint main(void) { printf("%%u\\n", run(7)); return 0; }\n' >> "$tmp/big.c"
clang-14 --target=wasm32-wasi --sysroot=/usr -O2 -Wl,--export-all -o "$tmp/big.wasm" "$tmp/big.c"
python3 - "$tmp/big.wasm" "$out" <<'PY'
import sys
d = open(sys.argv[1], 'rb').read()
def leb(b, i):
    r = s = 0
    while True:
        x = b[i]; i += 1; r |= (x & 0x7f) << s; s += 7
        if x < 0x80: return r, i
out, i = bytearray(d[:8]), 8
while i < len(d):
    n, j = leb(d, i + 1)
    if d[i] != 0: out += d[i:j + n]   # drop custom sections (names)
    i = j + n
open(sys.argv[2], 'wb').write(out)
PY
echo "built $out ($(stat -c %s "$out") bytes)"
