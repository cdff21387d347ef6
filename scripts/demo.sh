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

# The room: the contract's program A (tests/room/fixtures/probe.c, a WASI program)
# run once under the isolation run contract.
probe="$root/tests/room/fixtures/probe.wasm"
if [ -f "$probe" ]; then
  tmp="${TMPDIR:-/tmp}/peri-demo-room.$$"
  base64 -w0 "$probe" > "$tmp.b64"
  printf '%s' '{"args":["echo"],"files":{"/请求/路径.txt":"/x","/数据/旧.txt":"旧"}}' > "$tmp.json"
  digest=$(sha256sum "$probe" | cut -d' ' -f1)
  echo "== the room: tests/room/fixtures/probe.wasm (program A of the isolation run contract)"
  echo "\$ peri isolate run --runner LOADER --scope demo --digest ${digest:0:12}… --program probe.b64 --input input.json"
  echo "input: $(cat "$tmp.json")"
  got=$("$peri" isolate run --runner LOADER --scope demo --digest "$digest" --program "$tmp.b64" --input "$tmp.json")
  rm -f "$tmp.b64" "$tmp.json"
  echo "$got"
  want='{"ok":true,"stdout":"你好\n","stderr":"","exitCode":0,"files":{"/数据/旧.txt":"旧","/数据/记录.txt":"见：/x\n","/响应/正文.txt":"回显：/x\n"}}'
  if [ "$got" != "$want" ]; then
    echo "demo: FAILED: the room's answer differs from the contract's" >&2
    exit 1
  fi
  echo "the room returned exactly the contract's answer"
fi
