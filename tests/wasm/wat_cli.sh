#!/usr/bin/env bash
# tests/wasm/wat_cli.sh PERI — `peri wasm validate|invoke` and `peri run` take text
# modules (.wat): results, a WASI program's output, and a malformed file's error with
# its line:column and exit status 1.
set -uo pipefail
peri="$1"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # NAME WANT_RC WANT_OUT_SUBSTRING -- CMD...
  local name=$1 want_rc=$2 want=$3; shift 4
  local out; out=$("$@" 2>&1); local rc=$?
  if [ "$rc" != "$want_rc" ] || ! printf '%s' "$out" | grep -qF -- "$want"; then
    echo "FAIL $name: status $rc (want $want_rc), output [$out] (want ~[$want])"; fails=$((fails + 1))
  else echo "ok   $name"; fi
}
cat > "$tmp/add.wat" <<'W'
(module
  (func (export "add") (param $a i32) (param $b i32) (result i32)
    (i32.add (local.get $a) (local.get $b))))
W
cat > "$tmp/hello.wat" <<'W'
(module
  (import "wasi_snapshot_preview1" "fd_write"
    (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "hello from text\n")
  (func (export "_start")
    (i32.store (i32.const 0) (i32.const 16))   ;; iovec: base
    (i32.store (i32.const 4) (i32.const 16))   ;; iovec: length
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))
W
printf '(module\n  (func (result i32)\n    (i32.const 0x1_0000_0000)))\n' > "$tmp/bad.wat"
check validate 0 valid -- "$peri" wasm validate "$tmp/add.wat"
check invoke 0 5 -- "$peri" wasm invoke "$tmp/add.wat" add 2 3
check run 0 "hello from text" -- "$peri" run "$tmp/hello.wat"
check malformed 1 "constant out of range (at 3:16)" -- "$peri" wasm validate "$tmp/bad.wat"
check run-malformed 1 "constant out of range (at 3:16)" -- "$peri" run "$tmp/bad.wat"
[ "$fails" -eq 0 ]
