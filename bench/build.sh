#!/usr/bin/env bash
# bench/build.sh — builds the benchmark programs of ../shared/bench/programs/ into
# bench/out/ (gitignored):
#   out/<p>.wasm     import-free module exporting <p> (clang-14 --target=wasm32-wasi,
#                    -nostdlib, our own tiny libc in bench/support/; the export comes
#                    from export_name in bench/wrap/<p>_wasm.c), runnable as
#                    `peri wasm invoke out/<p>.wasm <p> ARGS` and
#                    `wasm3 --func <p> out/<p>.wasm ARGS`
#   out/native/<p>   the unmodified program built with gcc -O2 (the reference)
#   out/<p>.expect   the 31-bit FNV-1a hash of the native output, which is what the
#                    wasm export must return
#   out/wasi/<p>.wasm  the unmodified program as a WASI command (wasi-libc), for
#                    `peri run` and `wasm3 FILE` (run.sh with BENCH_WASI=1)
# Usage: bench/build.sh [PROGRAMS_DIR]   (default: $PERI_SHARED_DIR/bench/programs)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shared="${PERI_SHARED_DIR:-$here/../../shared}"
prog_dir="${1:-$shared/bench/programs}"
out="$here/out"
CLANG="${CLANG:-clang-14}"
CC_NATIVE="${CC_NATIVE:-gcc}"

if [ ! -d "$prog_dir" ]; then
  echo "bench/build.sh: no benchmark programs at $prog_dir (set PERI_SHARED_DIR)" >&2
  exit 77
fi
mkdir -p "$out/native"

# Arguments that reproduce ANCHORS.md's workloads (the programs' defaults).
. "$here/programs.sh"

hash_text() { # FNV-1a 32 of stdin, masked to 31 bits, as decimal
  python3 -c 'import sys
h = 2166136261
for b in sys.stdin.buffer.read():
    h = ((h ^ b) * 16777619) & 0xffffffff
print(h & 0x7fffffff)'
}

for p in "${BENCH_PROGRAMS[@]}"; do
  src="$prog_dir/$p.c"
  [ -f "$src" ] || { echo "bench/build.sh: missing $src" >&2; exit 1; }
  "$CLANG" --target=wasm32-wasi -O2 -nostdlib -fno-builtin-printf \
    -I "$here/support" -I "$prog_dir" \
    -Wl,--no-entry -Wl,--strip-all \
    "$here/wrap/${p}_wasm.c" "$here/support/pb_rt.c" -o "$out/$p.wasm"
  "$CC_NATIVE" -O2 "$src" -o "$out/native/$p" -lm
  # The unmodified program as a WASI command (wasi-libc), as ANCHORS.md built it.
  mkdir -p "$out/wasi"
  "$CLANG" --target=wasm32-wasi -O2 "$src" -o "$out/wasi/$p.wasm" -lm
  # shellcheck disable=SC2086
  "$out/native/$p" $(bench_args "$p") | hash_text > "$out/$p.expect"
  echo "built $p.wasm ($(wc -c < "$out/$p.wasm") bytes), expect $(cat "$out/$p.expect")"
done

# The large module for bench/compile_speed.c: generated C, rebuilt only when the
# generator changes (clang takes several seconds on it).
if [ ! -f "$out/big.wasm" ] || [ "$here/gen_big.py" -nt "$out/big.wasm" ]; then
  python3 "$here/gen_big.py" 6000 > "$out/big.c"
  "$CLANG" --target=wasm32-wasi -O2 -nostdlib -I "$here/support" \
    -Wl,--no-entry -Wl,--export-all -Wl,--strip-all \
    "$out/big.c" "$here/support/pb_rt.c" -o "$out/big.wasm"
fi
echo "built big.wasm ($(wc -c < "$out/big.wasm") bytes)"
