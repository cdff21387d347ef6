#!/bin/sh
# bench/gc/run.sh BUILD_DIR — the GC benchmark: binary trees (depth ${DEPTH:-16}) on
# Peri-C (`peri wasm invoke`) and, when NODE=/path/to/node (node 22+: final-encoding
# WasmGC) is given, on V8 side by side. Interleaved rounds (ROUNDS, default 5, plus a
# warm-up); prints the median wall time, CPU time (user + sys, all threads) and peak
# RSS of each engine and checks that both return the same result. Assemble the module first with build.mjs.
set -eu
BUILD=${1:-build}
DIR=$(cd "$(dirname "$0")" && pwd)
WASM=$DIR/binary_trees.wasm
DEPTH=${DEPTH:-16}
ROUNDS=${ROUNDS:-5}
PERI=$BUILD/peri
[ -f "$WASM" ] || { echo "missing $WASM: run bench/gc/build.mjs" >&2; exit 1; }
[ -x "$PERI" ] || { echo "missing $PERI: build first" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

one() { # engine -> appends "wall kib user sys" to $TMP/engine, result to $TMP/engine.out
    case $1 in
    peri) /usr/bin/time -f '%e %M %U %S' -o "$TMP/t" "$PERI" wasm invoke "$WASM" run "$DEPTH" >"$TMP/$1.out" ;;
    node) /usr/bin/time -f '%e %M %U %S' -o "$TMP/t" "$NODE" "$DIR/../node-invoke.mjs" "$WASM" run "$DEPTH" >"$TMP/$1.out" ;;
    esac
    cat "$TMP/t" >>"$TMP/$1"
}

engines=peri
[ -n "${NODE:-}" ] && engines="peri node"
for e in $engines; do one "$e"; : >"$TMP/$e"; done # warm-up
i=0
while [ $i -lt "$ROUNDS" ]; do
    for e in $engines; do one "$e"; done
    i=$((i + 1))
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-6s %9s %9s %13s %10s\n' engine 'wall (s)' 'CPU (s)' 'peak RSS MiB' result
for e in $engines; do
    t=$(cut -d' ' -f1 "$TMP/$e" | median)
    m=$(cut -d' ' -f2 "$TMP/$e" | median)
    c=$(awk '{printf "%.2f\n", $3 + $4}' "$TMP/$e" | median)
    printf '%-6s %9s %9s %13s %10s\n' "$e" "$t" "$c" "$(awk "BEGIN {printf \"%.1f\", $m/1024}")" "$(cat "$TMP/$e.out")"
done
if [ -n "${NODE:-}" ] && ! cmp -s "$TMP/peri.out" "$TMP/node.out"; then
    echo "results differ" >&2
    exit 1
fi
