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

# --- one agent turn end to end, with both placements -----------------------
# The model is SCRIPTED (tests/host/mock_model.py on 127.0.0.1; no network, no key): it
# writes a small Ruby program, runs it with `run` in the WebAssembly room, runs a
# `shell` command in the native sandbox, and answers.
ruby_wasm="${PERI_RUBY_WASM:-${XDG_CACHE_HOME:-$HOME/.cache}/peri/ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm}"
# Without Ruby's WebAssembly build (scripts/deps.sh fetches it from the npm registry;
# offline it cannot), the turn runs the contract's prebuilt WASI program in the room
# instead of a Ruby program: the demo needs nothing from outside the clone.
use_ruby=1
if [ ! -f "$ruby_wasm" ]; then
  use_ruby=0
  echo
  echo "note: Ruby's WebAssembly build is not installed ($ruby_wasm; scripts/deps.sh fetches"
  echo "      it from the npm registry), so the room runs a prebuilt WASI program in this turn."
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/peri-demo-agent.XXXXXX")"
mock_pid=""
cleanup_agent() { [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup_agent EXIT
mkdir -p "$work/home/.peri" "$work/project"
echo '{"maxRetries": 0}' > "$work/home/.peri/settings.json"
program='words = File.read("/请求/words.txt").split
counts = words.tally.sort_by { |w, c| [-c, w] }
counts.first(3).each { |w, c| puts "#{w}: #{c}" }
File.write("/响应/top.txt", counts.first.first + "\n")
'
[ "$use_ruby" = 1 ] || cp "$probe" "$work/project/probe.wasm"
python3 - "$work/script.json" "$program" "$use_ruby" <<'PY'
import json, sys
path, program, use_ruby = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
words = "the room runs the code and the sandbox runs the shell"
if use_ruby:
    run_args = {"ruby": program, "files": {"/请求/words.txt": words}}
else:
    run_args = {"wasm": "probe.wasm", "args": ["echo"], "files": {"/请求/路径.txt": "/x"}}
json.dump({"responses": [
    {"text": "I'll write a small word-count program, run it in the room, then check the project from a shell.",
     "tool_calls": [{"id": "call_write", "name": "write",
                     "arguments": {"path": "wordcount.rb", "content": program}}]},
    {"tool_calls": [{"id": "call_run", "name": "run", "arguments": run_args}]},
    {"tool_calls": [{"id": "call_shell", "name": "shell",
                     "arguments": {"command": "ls -l && wc -l wordcount.rb && id -u && (ping -c1 -W1 127.0.0.1 >/dev/null 2>&1 && echo network: yes || echo network: no)"}}]},
    {"text": ("\n\nThe most frequent word is \"the\" (4 times), then \"runs\" (2). " if use_ruby else
              "\n\nThe program greeted, echoed the request path and wrote its two files. ") +
             "The program ran in the WebAssembly room; the shell command ran in the native sandbox, where only the project is writable and there is no network."}],
    "default": {"text": "done"}}, open(path, "w"))
PY
python3 "$root/tests/host/mock_model.py" --script "$work/script.json" --port-file "$work/port" --quiet --timeout 120 >/dev/null 2>&1 &
mock_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || { echo "demo: FAILED: the scripted model server did not start" >&2; exit 1; }
port=$(cat "$work/port")
echo
echo "== one agent turn (scripted model on 127.0.0.1:$port; no network, no key)"
echo "\$ peri print \"Count the words in my text with a small program, then look at the project.\" --allow"
out="$work/out.txt"; err="$work/err.txt"
HOME="$work/home" PERI_MODEL=openai:scripted OPENAI_API_KEY=demo-key OPENAI_BASE_URL="http://127.0.0.1:$port/v1" \
  PERI_RUBY_WASM="$ruby_wasm" \
  "$peri" print "Count the words in my text with a small program, then look at the project." \
  --cwd "$work/project" --db "$work/peri.db" --allow > "$out" 2> "$err" || {
  cat "$out" "$err" >&2; echo "demo: FAILED: the agent turn did not end normally" >&2; exit 1; }
cat "$err"
echo "-- answer:"
cat "$out"
grep -q "placement: wasm_room" "$err" || { echo "demo: FAILED: no run in the room" >&2; exit 1; }
grep -q "placement: native_sandbox" "$err" || { echo "demo: FAILED: no shell in the sandbox" >&2; exit 1; }
if [ "$use_ruby" = 1 ]; then
  grep -q "the: 4" "$err" || { echo "demo: FAILED: the program's output is missing" >&2; exit 1; }
else
  grep -q "你好" "$err" || { echo "demo: FAILED: the program's output is missing" >&2; exit 1; }
fi
[ -f "$work/project/wordcount.rb" ] || { echo "demo: FAILED: the program was not written" >&2; exit 1; }
echo "the agent turn ran code in both placements: the room (run) and the native sandbox (shell)"
