#!/usr/bin/env bash
# bench/simd_build.sh — builds the SIMD benchmark programs of bench/simd/ into
# bench/out/simd/ (gitignored):
#   out/simd/<p>.wasm     WASI command, clang --target=wasm32-wasi -O2 -msimd128
#                         against Debian's wasi-libc (auto-vectorised to v128)
#   out/simd/scalar/<p>.wasm  the same without -msimd128 (for comparison)
#   out/simd/native/<p>   gcc -O2 (auto-vectorised with SSE2 by gcc 12), the reference
# Usage: bench/simd_build.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/out/simd"
CLANG="${CLANG:-clang}"
CC_NATIVE="${CC_NATIVE:-gcc}"
. "$here/simd/programs.sh"
mkdir -p "$out/native" "$out/scalar"
for p in "${SIMD_PROGRAMS[@]}"; do
  src="$here/simd/$p.c"
  if [ ! -f "$out/$p.wasm" ] || [ "$src" -nt "$out/$p.wasm" ]; then
    "$CLANG" --target=wasm32-wasi -O2 -msimd128 "$src" -o "$out/$p.wasm"
    "$CLANG" --target=wasm32-wasi -O2 "$src" -o "$out/scalar/$p.wasm"
    "$CC_NATIVE" -O2 "$src" -o "$out/native/$p"
  fi
  echo "built simd/$p.wasm ($(wc -c < "$out/$p.wasm") bytes)"
done
