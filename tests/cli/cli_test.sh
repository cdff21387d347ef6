#!/usr/bin/env bash
# tests/cli/cli_test.sh PERI FIB_WASM — end-to-end checks of `peri` and
# `peri wasm validate|invoke`: outputs, exit codes (0 ok, 1 failure, 2 usage), trap
# messages in both wordings, argument parsing and result printing.
set -uo pipefail
peri="$1"; fib="$2"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
fails=0

# t NAME WANT_STATUS WANT_STDOUT WANT_STDERR_SUBSTRING -- CMD...
t() {
  local name=$1 want_rc=$2 want_out=$3 want_err=$4; shift 5
  "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
  local out; out=$(cat "$tmp/out")
  if [ "$rc" != "$want_rc" ] || { [ "$want_out" != "*" ] && [ "$out" != "$want_out" ]; } ||
     { [ -n "$want_err" ] && ! grep -qF -- "$want_err" "$tmp/err"; }; then
    echo "FAIL $name: status $rc (want $want_rc), stdout [$out] (want [$want_out]), stderr [$(head -c 400 "$tmp/err")] (want ~[$want_err])"
    fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}

# (module (func (export "div") (param i32 i32) (result i32) local.get 0 local.get 1 i32.div_s)
#         (func (export "boom") unreachable)
#         (func (export "f64id") (param f64) (result f64) local.get 0)
#         (func (export "neg") (param i64) (result i64) i64.const 0 local.get 0 i64.sub)
#         (func (export "f32id") (param f32) (result f32) local.get 0))
printf '\x00\x61\x73\x6d\x01\x00\x00\x00\x01\x19\x05\x60\x02\x7f\x7f\x01\x7f\x60\x00\x00\x60\x01\x7c\x01\x7c\x60\x01\x7e\x01\x7e\x60\x01\x7d\x01\x7d\x03\x06\x05\x00\x01\x02\x03\x04\x07\x24\x05\x03\x64\x69\x76\x00\x00\x04\x62\x6f\x6f\x6d\x00\x01\x05\x66\x36\x34\x69\x64\x00\x02\x03\x6e\x65\x67\x00\x03\x05\x66\x33\x32\x69\x64\x00\x04\x0a\x1f\x05\x07\x00\x20\x00\x20\x01\x6d\x0b\x03\x00\x00\x0b\x04\x00\x20\x00\x0b\x07\x00\x42\x00\x20\x00\x7d\x0b\x04\x00\x20\x00\x0b' > "$tmp/ops.wasm"
# (module (import "env" "f" (func)))
printf '\x00\x61\x73\x6d\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x02\x09\x01\x03\x65\x6e\x76\x01\x66\x00\x00' > "$tmp/imports.wasm"
# truncated: the header and half a type section
printf '\x00\x61\x73\x6d\x01\x00\x00\x00\x01\x19\x05\x60' > "$tmp/truncated.wasm"

t help 0 "*" "" -- "$peri" --help
t no-args 2 "" "usage" -- "$peri"
t unknown-command 2 "" "unknown command" -- "$peri" frobnicate
t wasm-help 0 "*" "" -- "$peri" wasm --help
t validate-ok 0 "valid" "" -- "$peri" wasm validate "$fib"
t validate-truncated 1 "" "malformed" -- "$peri" wasm validate "$tmp/truncated.wasm"
t validate-missing-file 1 "" "No such file" -- "$peri" wasm validate "$tmp/nope.wasm"
t validate-usage 2 "" "usage" -- "$peri" wasm validate
t invoke-fib 0 "6765" "" -- "$peri" wasm invoke "$fib" fib 20
t invoke-fib-time 0 "55" "time: compile" -- "$peri" wasm invoke --time "$fib" fib 10
t invoke-div 0 "-3" "" -- "$peri" wasm invoke "$tmp/ops.wasm" div -7 2
t invoke-div-hex 0 "8" "" -- "$peri" wasm invoke "$tmp/ops.wasm" div 0x10 2
t invoke-i32-unsigned 0 "-1" "" -- "$peri" wasm invoke "$tmp/ops.wasm" div 4294967295 1
t invoke-i32-range 2 "" "not a valid i32" -- "$peri" wasm invoke "$tmp/ops.wasm" div 4294967296 1
t invoke-bad-arg 2 "" "not a valid i32" -- "$peri" wasm invoke "$tmp/ops.wasm" div x 1
t invoke-arity 2 "" "takes 2 arguments" -- "$peri" wasm invoke "$tmp/ops.wasm" div 1
t invoke-no-func 2 "" "no exported function" -- "$peri" wasm invoke "$tmp/ops.wasm" nope
t invoke-trap-div 1 "" "trap: integer divide by zero" -- "$peri" wasm invoke "$tmp/ops.wasm" div 1 0
t invoke-trap-div-v8 1 "" "trap: divide by zero" -- "$peri" wasm invoke --v8-messages "$tmp/ops.wasm" div 1 0
t invoke-trap-overflow 1 "" "trap: integer overflow" -- "$peri" wasm invoke "$tmp/ops.wasm" div -2147483648 -1
t invoke-unreachable 1 "" "trap: unreachable" -- "$peri" wasm invoke "$tmp/ops.wasm" boom
t invoke-f64 0 "0.1" "" -- "$peri" wasm invoke "$tmp/ops.wasm" f64id 0.1
t invoke-f64-big 0 "1e+300" "" -- "$peri" wasm invoke "$tmp/ops.wasm" f64id 1e300
t invoke-f64-neg-zero 0 "-0" "" -- "$peri" wasm invoke "$tmp/ops.wasm" f64id -0
t invoke-f64-inf 0 "inf" "" -- "$peri" wasm invoke "$tmp/ops.wasm" f64id inf
t invoke-f64-nan 0 "nan" "" -- "$peri" wasm invoke "$tmp/ops.wasm" f64id nan
t invoke-f32 0 "0.1" "" -- "$peri" wasm invoke "$tmp/ops.wasm" f32id 0.1
t invoke-i64 0 "-9223372036854775807" "" -- "$peri" wasm invoke "$tmp/ops.wasm" neg 9223372036854775807
t invoke-i64-min 0 "-9223372036854775808" "" -- "$peri" wasm invoke "$tmp/ops.wasm" neg -9223372036854775808
t invoke-imports 1 "" "env.f (function)" -- "$peri" wasm invoke "$tmp/imports.wasm" f
t invoke-malformed 1 "" "malformed" -- "$peri" wasm invoke "$tmp/truncated.wasm" f
t invoke-bad-option 2 "" "unknown option" -- "$peri" wasm invoke --frob "$fib" fib 1

echo "$fails failed"
[ "$fails" -eq 0 ]
