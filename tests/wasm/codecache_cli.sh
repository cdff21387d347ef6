#!/usr/bin/env bash
# tests/wasm/codecache_cli.sh PERI SOURCE_DIR — `peri compile` and `peri run
# --compiled|--code-cache` (docs/jit.md, "Compiled-code cache"): an artifact runs the
# program; a flipped byte, a truncated file and another module's artifact are refused
# with their kind and exit status 1, and the program does not run; the automatic cache
# saves a 0600 file in a 0700 directory and a second process runs from it; a cache
# directory writable by others is not used, and the program still runs; a big module
# (1 MiB or more) runs from a copy the cache keeps, and its errors read as a small one's.
set -uo pipefail
peri="$1"; src="$2"
hello="$src/tests/room/fixtures/hello.wasm"; fib="$src/examples/fib.wasm"
tmp="$(mktemp -d)"; trap 'chmod -R u+rwx "$tmp"; rm -rf "$tmp"' EXIT
fails=0
check() { # NAME WANT_RC WANT_OUT_SUBSTRING -- CMD...
  local name=$1 want_rc=$2 want=$3; shift 4
  local out; out=$("$@" 2>&1); local rc=$?
  if [ "$rc" != "$want_rc" ] || { [ -n "$want" ] && ! printf '%s' "$out" | grep -qF -- "$want"; }; then
    echo "FAIL $name: status $rc (want $want_rc), output [$out] (want ~[$want])"; fails=$((fails + 1))
  else echo "ok   $name"; fi
}
refused() { # NAME KIND FILE: refused with KIND, and hello did not run
  local out; out=$("$peri" run --code-cache off --compiled "$3" "$hello" 2>&1); local rc=$?
  if [ "$rc" != 1 ] || ! printf '%s' "$out" | grep -qF "($2)" || printf '%s' "$out" | grep -q '^hello'; then
    echo "FAIL $1: status $rc, output [$out] (want 1 and ($2), no hello)"; fails=$((fails + 1))
  else echo "ok   $1"; fi
}
flip() { # FILE AT: the byte at AT inverted (a fixed value may be what it held already: the
  # header's engine digest differs per build)
  local b; b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  printf "\\$(printf '%03o' $((b ^ 0xff)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
check compile 0 "" -- "$peri" compile "$hello" -o "$tmp/hello.pcc"
check "compile usage" 2 "give one of -o FILE" -- "$peri" compile "$hello"
check "run compiled" 0 "hello" -- "$peri" run --code-cache off --compiled "$tmp/hello.pcc" "$hello"
size=$(stat -c %s "$tmp/hello.pcc")
for at in 20 100 2000 5000 $((size - 40)) $((size - 1)); do
  cp "$tmp/hello.pcc" "$tmp/bad.pcc"
  flip "$tmp/bad.pcc" "$at"
  cmp -s "$tmp/hello.pcc" "$tmp/bad.pcc" && { echo "FAIL byte $at not changed"; fails=$((fails + 1)); }
  out=$("$peri" run --code-cache off --compiled "$tmp/bad.pcc" "$hello" 2>&1); rc=$?
  if [ "$rc" != 1 ] || printf '%s' "$out" | grep -q '^hello' || ! printf '%s' "$out" | grep -q 'peri run: --compiled'; then
    echo "FAIL flipped byte $at: status $rc, output [$out]"; fails=$((fails + 1))
  else echo "ok   flipped byte $at refused: ${out##*(}"; fi
done
refused "flipped code byte" corrupt "$(cp "$tmp/hello.pcc" "$tmp/c.pcc"; flip "$tmp/c.pcc" 5000; echo "$tmp/c.pcc")"
head -c $((size / 2)) "$tmp/hello.pcc" > "$tmp/half.pcc"
refused truncated truncated "$tmp/half.pcc"
printf 'not an artifact at all, just text\n' > "$tmp/text.pcc"
refused "not an artifact" not-an-artifact "$tmp/text.pcc"
"$peri" compile "$fib" -o "$tmp/fib.pcc"
refused "another module" foreign-module "$tmp/fib.pcc"
# the automatic cache
check "cold cache" 0 "hello" -- "$peri" run --code-cache "$tmp/c/code" "$hello"
n=$(find "$tmp/c/code" -name '*.pcc' | wc -l)
modes="$(stat -c %a "$tmp/c/code") $(stat -c %a "$tmp/c/code"/*.pcc 2>/dev/null)"
if [ "$n" != 1 ] || [ "$modes" != "700 600" ]; then
  echo "FAIL cache file: $n files, modes $modes"; fails=$((fails + 1)); else echo "ok   cache file 0600 in 0700"; fi
check "warm cache" 0 "hello" -- env PERI_CODE_CACHE="$tmp/c/code" "$peri" run "$hello"
check "compile into the cache" 0 "" -- "$peri" compile "$hello" --into-cache --code-cache "$tmp/f"
check "run from the filled cache" 0 "hello" -- "$peri" run --code-cache "$tmp/f" "$hello"
if [ "$(find "$tmp/f" -name '*.pcc' | wc -l)" != 1 ]; then
  echo "FAIL filled cache: not one file"; fails=$((fails + 1)); else echo "ok   filled cache used"; fi
cmp -s "$(find "$tmp/f" -name '*.pcc')" "$(find "$tmp/c/code" -name '*.pcc')" &&
  echo "ok   --into-cache writes what a run writes" ||
  { echo "FAIL --into-cache and a run wrote different files"; fails=$((fails + 1)); }
check "compile usage: both" 2 "one of" -- "$peri" compile "$hello" -o "$tmp/x" --into-cache
mkdir -m 777 "$tmp/open" && chmod 777 "$tmp/open"
check "unsafe cache dir: still runs" 0 "hello" -- "$peri" run --code-cache "$tmp/open" "$hello"
if [ -n "$(ls -A "$tmp/open")" ]; then echo "FAIL unsafe dir was written"; fails=$((fails + 1)); else echo "ok   unsafe dir left alone"; fi
# a module of 1 MiB or more is loaded from its file: once it is quiet the cache keeps a
# copy (checked, then mapped by later runs); every run prints the same; a big file that
# is no module, or no valid one, gets the same English errors as a small one
big="$tmp/big.wasm"
python3 - "$hello" "$big" <<'PY'
import sys
pad = b"\0" * (3 << 19)
body = b"\x03pad" + pad
n, leb = len(body), b""
for k in range(5):
    leb += bytes([((n >> (7 * k)) & 0x7f) | (0x80 if k < 4 else 0)])
open(sys.argv[2], "wb").write(open(sys.argv[1], "rb").read() + b"\0" + leb + body)
PY
sleep 3
check "big module, cold" 0 "hello" -- "$peri" run --code-cache "$tmp/b" "$big"
bsize=$(stat -c %s "$big")
if [ -z "$(find "$tmp/b" -name '*.pcc' -size "${bsize}c")" ]; then
  echo "FAIL no copy of the big module in the cache"; fails=$((fails + 1)); else echo "ok   big module copied"; fi
check "big module, copy read" 0 "hello" -- "$peri" run --code-cache "$tmp/b" "$big"
sleep 3
check "big module, copy checked" 0 "hello" -- "$peri" run --code-cache "$tmp/b" "$big"
check "big module, copy mapped" 0 "hello" -- "$peri" run --code-cache "$tmp/b" "$big"
check "big module, no cache" 0 "hello" -- "$peri" run --code-cache off "$big"
{ printf 'garbage!'; head -c 1100000 /dev/zero; } > "$tmp/big-text.wasm"
check "big non-module" 1 "is not a WebAssembly module" -- "$peri" run "$tmp/big-text.wasm"
{ printf '\0asm\1\0\0\0\1\377'; head -c 1100000 /dev/zero; } > "$tmp/big-bad.wasm"
check "big invalid module" 1 "is not a valid WebAssembly module" -- "$peri" run "$tmp/big-bad.wasm"
[ "$fails" = 0 ] && echo "all passed" || { echo "$fails failed"; exit 1; }
