#!/usr/bin/env bash
# scripts/python-wasi.sh: builds CPython for WASI (the room's Python, docs/python.md)
# once, from Debian's own source package, and caches it.
#
#   $PERI_CACHE_DIR/python/3.11.2/   (default ~/.cache/peri/python/3.11.2/)
#     python.wasm          CPython 3.11.2 as a WASI reactor with the room's entry points
#                          (scripts/python-wasi-main.c)
#     lib/python3.11/      the pure-Python standard library with its .pyc files, mapped
#                          read-only into the room at /usr/local/lib/python3.11
#     BUILD                what was built from what (source hashes, build id)
#
# Sources: `apt-get source --download-only` of python3.11 and zlib from Debian 12
# (bookworm main), through a private sources list and private lists directory (the
# system's apt configuration is not touched). apt checks each file against the signed
# Release/Sources indexes; the upstream tarballs are checked again here against the
# SHA-256 pinned below before anything is unpacked. Debian's patches are not applied:
# they adapt CPython to Debian's native layout, which a WASI build does not have.
#
# Toolchain: Debian's clang-14, lld-14 (wasm-ld), llvm-ar and wasi-libc (the Debian
# packages scripts/deps.sh installs). The build side needs a Python 3.11 interpreter
# (Debian's /usr/bin/python3.11); without one a native CPython is built first.
#
# Best effort, like the npm downloads of deps.sh: every failure prints one line and the
# script exits 0; `peri python` and the Python tests then say the build is missing.
# Idempotent: nothing happens when the BUILD stamp matches. PERI_NO_PYTHON_WASM=1 skips.
# A failed attempt is retried at most once an hour (remove $cache/python-wasm.failed).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${PERI_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/peri}"
say() { echo "python-wasi.sh: $*" >&2; }

PY_VER="3.11.2"
PY_ORIG="python3.11_3.11.2.orig.tar.gz"
PY_ORIG_SHA256="2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849"
ZLIB_ORIG="zlib_1.2.13.dfsg.orig.tar.bz2"
ZLIB_ORIG_SHA256="71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1"
# What is built: the version, BUILD_REV (raise it when a change of this script changes
# the result) and the entry points' source. A different BUILD_ID rebuilds.
BUILD_REV=1
BUILD_ID="$PY_VER-r$BUILD_REV-$(sha256sum <"$here/scripts/python-wasi-main.c" 2>/dev/null | cut -c1-16)"

dest="$cache/python/$PY_VER"
[ "${PERI_NO_PYTHON_WASM:-}" = 1 ] && exit 0
if [ -s "$dest/python.wasm" ] && grep -qx "build $BUILD_ID" "$dest/BUILD" 2>/dev/null; then exit 0; fi
failed="$cache/python-wasm.failed"
if [ -f "$failed" ] && [ "$(cat "$failed")" = "$BUILD_ID" ] && [ -n "$(find "$failed" -mmin -60 2>/dev/null)" ]; then
  exit 0
fi

fail() {
  mkdir -p "$cache" && echo "$BUILD_ID" >"$failed"
  cp "$work/log" "$cache/python-wasm.log" 2>/dev/null
  say "$* — Python in the room stays unavailable (details: $cache/python-wasm.log)"
  exit 0
}

for t in clang-14 wasm-ld-14 llvm-ar-14 llvm-ranlib-14 apt-get make; do
  command -v "$t" >/dev/null || { say "$t not found: cannot build CPython for WASI — Python in the room stays unavailable"; exit 0; }
done
if [ ! -f /usr/lib/wasm32-wasi/libc.a ] || [ ! -f /usr/lib/wasm32-wasi/libwasi-emulated-signal.a ]; then
  say "Debian's wasi-libc is missing: cannot build CPython for WASI — Python in the room stays unavailable"
  exit 0
fi

mkdir -p "$cache" || { say "cannot create the cache $cache"; exit 0; }
work="$(mktemp -d "${TMPDIR:-/tmp}/peri-python-wasi.XXXXXX")" || { say "no temporary directory"; exit 0; }
trap 'rm -rf "$work"' EXIT
jobs="$(nproc 2>/dev/null || echo 2)"
t0=$SECONDS
say "building CPython $PY_VER for WASI from Debian's source package into $dest (takes minutes; once)"

# ---- sources: Debian bookworm main, through a private apt state ---------------------
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/src"
echo "deb-src http://deb.debian.org/debian bookworm main" >"$work/apt/sources.list"
APT=(-o "Dir::Etc::sourcelist=$work/apt/sources.list" -o "Dir::Etc::sourceparts=-"
     -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache"
     -o "Debug::NoLocking=1" -o "Acquire::Retries=2")
timeout 600 apt-get "${APT[@]}" update >"$work/log" 2>&1 || fail "apt-get update of bookworm's source index failed (offline?)"
(cd "$work/src" && timeout 900 apt-get "${APT[@]}" source --download-only python3.11 zlib) >>"$work/log" 2>&1 ||
  fail "apt-get source python3.11 zlib failed (offline?)"
check() { # FILE SHA256
  local got
  got="$(sha256sum "$work/src/$1" 2>/dev/null | cut -d' ' -f1)"
  [ "$got" = "$2" ] || fail "$1 failed its SHA-256 check (got ${got:-nothing})"
}
check "$PY_ORIG" "$PY_ORIG_SHA256"
check "$ZLIB_ORIG" "$ZLIB_ORIG_SHA256"
tar -xzf "$work/src/$PY_ORIG" -C "$work" && tar -xjf "$work/src/$ZLIB_ORIG" -C "$work" || fail "cannot unpack the sources"
py="$work/Python-$PY_VER"
zsrc="$(ls -d "$work"/zlib-1.2.13* | head -1)"

# ---- zlib for wasm32-wasi (CPython's zlib module, and binascii's crc32) -------------
WCC=(clang-14 --target=wasm32-wasi)
mkdir -p "$work/zlib/include" "$work/zlib/lib" "$work/zlib/obj"
for f in adler32 compress crc32 deflate infback inffast inflate inftrees trees uncompr zutil \
         gzclose gzlib gzread gzwrite; do
  "${WCC[@]}" -O2 -c "$zsrc/$f.c" -o "$work/zlib/obj/$f.o" >>"$work/log" 2>&1 || fail "zlib's $f.c did not compile"
done
llvm-ar-14 rcs "$work/zlib/lib/libz.a" "$work/zlib/obj/"*.o && cp "$zsrc/zlib.h" "$zsrc/zconf.h" "$work/zlib/include/" ||
  fail "cannot archive zlib"

# ---- the build-side Python: Debian's python3.11 of the same minor version -----------
build_py=""
for c in /usr/bin/python3.11 "$(command -v python3.11 2>/dev/null)"; do
  if [ -n "$c" ] && [ -x "$c" ] && "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    build_py="$c"; break
  fi
done
if [ -z "$build_py" ]; then
  say "no python3.11 on this machine: building a native one first"
  mkdir -p "$py/builddir/build"
  (cd "$py/builddir/build" && ../../configure -C >>"$work/log" 2>&1 && make -j"$jobs" >>"$work/log" 2>&1) ||
    fail "the native build-side CPython did not build"
  build_py="$py/builddir/build/python"
fi

# ---- CPython for wasm32-wasi (Tools/wasm/README.md's recipe, with Debian's clang) ---
mkdir -p "$py/builddir/wasi"
(
  cd "$py/builddir/wasi" &&
  CONFIG_SITE=../../Tools/wasm/config.site-wasm32-wasi \
  CC="clang-14 --target=wasm32-wasi" CPP="clang-14 --target=wasm32-wasi -E" \
  LDSHARED=wasm-ld-14 AR=llvm-ar-14 RANLIB=llvm-ranlib-14 \
  PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR=/nonexistent \
  ZLIB_CFLAGS="-I$work/zlib/include" ZLIB_LIBS="-L$work/zlib/lib -lz" \
  ../../configure -C --host=wasm32-unknown-wasi --build="$(../../config.guess)" \
    --with-build-python="$build_py" --disable-test-modules --without-ensurepip
) >>"$work/log" 2>&1 || fail "CPython's configure for wasm32-wasi failed"
(cd "$py/builddir/wasi" && make -j"$jobs" python.wasm) >>"$work/log" 2>&1 || fail "CPython did not build for wasm32-wasi"

# The room's python.wasm: CPython's own link line for python.wasm, with the entry points
# of python-wasi-main.c instead of Programs/python.o and the reactor start-up code.
b="$py/builddir/wasi"
"${WCC[@]}" -O2 -I"$py/Include" -I"$b" -I"$py/Include/internal" -c "$here/scripts/python-wasi-main.c" \
  -o "$b/peri-main.o" >>"$work/log" 2>&1 || fail "python-wasi-main.c did not compile"
link="$(cd "$b" && make -n python.wasm -W Programs/python.o 2>/dev/null | grep -E -- '-o python\.wasm' | tail -1)"
[ -n "$link" ] || fail "cannot find CPython's link line for python.wasm"
link="${link//Programs\/python.o/peri-main.o}"
link="${link/-o python.wasm/-o peri-python.wasm -mexec-model=reactor -Wl,--strip-debug}"
(cd "$b" && eval "$link") >>"$work/log" 2>&1 || fail "linking the room's python.wasm failed"

# ---- the standard library: pure Python, compiled to .pyc by the build-side Python ---
stage="$work/stage"
lib="$stage/lib/python3.11"
mkdir -p "$lib/lib-dynload"
(cd "$py/Lib" && tar -cf - --exclude=test --exclude=tests --exclude=idlelib --exclude=tkinter \
   --exclude=turtledemo --exclude=ensurepip --exclude=__pycache__ --exclude=venv .) |
  (cd "$lib" && tar -xf -) || fail "cannot copy the standard library"
sysdata="$(ls "$b"/build/lib.*/_sysconfigdata_*.py 2>/dev/null | head -1)"
[ -n "$sysdata" ] && cp "$sysdata" "$lib/"
"$build_py" -E -s -m compileall -q -j "$jobs" -d /usr/local/lib/python3.11 "$lib" >>"$work/log" 2>&1 ||
  say "some standard library modules did not compile to .pyc (they are compiled at import)"
cp "$b/peri-python.wasm" "$stage/python.wasm" && cp "$py/LICENSE" "$stage/LICENSE" || fail "cannot stage the build"
{
  echo "build $BUILD_ID"
  echo "source $PY_ORIG sha256 $PY_ORIG_SHA256 (Debian bookworm main, apt-get source python3.11)"
  echo "source $ZLIB_ORIG sha256 $ZLIB_ORIG_SHA256 (Debian bookworm main, apt-get source zlib)"
  echo "toolchain $(clang-14 --version | head -1); wasi-libc $(dpkg-query -W -f='${Version}' wasi-libc 2>/dev/null)"
  echo "python.wasm sha256 $(sha256sum "$stage/python.wasm" | cut -d' ' -f1)"
  echo "seconds $((SECONDS - t0))"
} >"$stage/BUILD"
rm -rf "$dest.part" && mkdir -p "$(dirname "$dest")" && mv "$stage" "$dest.part" &&
  rm -rf "$dest" && mv "$dest.part" "$dest" || fail "cannot install into $dest"
rm -f "$failed" "$cache/python-wasm.log"
say "CPython $PY_VER for WASI -> $dest ($((SECONDS - t0)) s)"
exit 0
