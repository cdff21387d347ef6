#!/usr/bin/env bash
# scripts/demo.sh BUILD_DIR — `make demo`: runs the bundled example module on the
# Peri-C engine through the `peri` command and checks the answer.
set -euo pipefail
build="${1:-build}"
root="$(cd "$(dirname "$0")/.." && pwd)"
peri="$build/peri"
wasm="$root/examples/fib.wasm"
[ -x "$peri" ] || { echo "demo: $peri not found; run make build" >&2; exit 1; }

echo "== Peri-C demo: examples/fib.wasm ($(wc -c < "$wasm") bytes, built from examples/fib.c)"
echo "\$ peri wasm validate examples/fib.wasm"
"$peri" wasm validate "$wasm"

for n in 10 20; do
  echo "\$ peri wasm invoke examples/fib.wasm fib $n"
  "$peri" wasm invoke "$wasm" fib "$n"
done

n=30
echo "\$ peri wasm invoke --time examples/fib.wasm fib $n"
errf="$(mktemp)"
start=$(date +%s%N)
got=$("$peri" wasm invoke --time "$wasm" fib "$n" 2> "$errf") || { cat "$errf" >&2; rm -f "$errf"; exit 1; }
end=$(date +%s%N)
echo "$got"
sed 's/^/  /' "$errf"; rm -f "$errf"
if [ "$got" != "832040" ]; then
  echo "demo: FAILED: fib($n) should be 832040, got '$got'" >&2
  exit 1
fi
echo "fib($n) = $got, by naive recursion in the Peri-C interpreter; whole process $(( (end - start) / 1000000 )) ms"
