#!/bin/sh
# hot-text.sh [BUILD_DIR]: write cmake/hot_text.txt, the functions of `peri` that small
# runs enter (`peri run tests/room/fixtures/hello.wasm` on each engine, with the
# compiled-code cache empty and then filled, and `peri --help`), traced by gdb (scripts/hot-text-gdb.py). The link of `peri` places
# these functions first and together (cmake/hot_text.cmake), so that the few 64 KiB
# windows the kernel maps around each touched page of text are all a cold start makes
# resident, instead of the whole binary. Needs gdb and nm. Run it after changing the
# run path; wasi.cold_start fails when `peri run hello.wasm` or `peri --help` enters a
# function outside the list, or when the list names several functions `peri` lacks.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
peri=$build/peri
hello=$here/tests/room/fixtures/hello.wasm
out=$here/cmake/hot_text.txt
command -v gdb >/dev/null || { echo "hot-text.sh: gdb is needed" >&2; exit 1; }
[ -x "$peri" ] || { echo "hot-text.sh: no $peri (build it first)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# each engine twice over an empty compiled-code cache: the first run writes it, the
# second reads it
for args in "run $hello" "run --engine interp $hello" "run --engine jit $hello" "--help"; do
    rm -rf "$tmp/cache"
    mkdir "$tmp/cache"
    for pass in first again; do
        PERI_CACHE_DIR=$tmp/cache XDG_CACHE_HOME=$tmp/cache HOT_ARGS=$args HOT_OUT=$tmp/$pass \
            gdb -q -batch -x "$here/scripts/hot-text-gdb.py" "$peri" >"$tmp/log" 2>&1 ||
            { cat "$tmp/log" >&2; exit 1; }
    done
done
# base names: GCC's clones (.constprop.0, .isra.0, .part.0) are matched by pattern
sed 's/\..*//' "$tmp/again" | sort -u >"$tmp/warm"
sed 's/\..*//' "$tmp/first" | sort -u | comm -23 - "$tmp/warm" >"$tmp/fill"
{
    echo "# Functions of \`peri\` that small runs enter, placed first and together in its text"
    echo "# in this order (cmake/hot_text.cmake). Written by scripts/hot-text.sh; do not edit."
    echo "# Every run (the compiled-code cache filled):"
    cat "$tmp/warm"
    echo "# Also the run that fills the cache (the JIT's translation, the cache's writer):"
    cat "$tmp/fill"
} >"$out"
echo "hot-text.sh: $(grep -vc '^#' "$out") functions in $out"
