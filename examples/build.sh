#!/usr/bin/env bash
# examples/build.sh — regenerates the committed example modules from their C sources
# (needs clang-14 and lld-14). The .wasm files are committed so `make demo` does
# not need a wasm toolchain.
set -euo pipefail
cd "$(dirname "$0")"
clang-14 --target=wasm32 -nostdlib -O2 -Wl,--no-entry -Wl,--export=fib -Wl,--strip-all \
  fib.c -o fib.wasm
echo "examples/fib.wasm: $(wc -c < fib.wasm) bytes"
