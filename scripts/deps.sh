#!/usr/bin/env bash
# Installs the Debian packages Peri-C needs to build, test and benchmark.
# Idempotent and quiet when everything is present. Needs root (or sudo) only
# when something is missing.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config clang-14 lld-14 clang-format
  libjansson-dev libsqlite3-dev libcurl4-openssl-dev libssl-dev libcmocka-dev
  wasi-libc libclang-rt-14-dev-wasm32 python3
  bubblewrap libseccomp-dev ruby passt # placement: the native sandbox (passt: its network), native Ruby
  nodejs # issue 13: the ACP SDK client end-to-end tests (acp.sdk.*)
  tmux # issue 16: the TUI tests drive `peri tui` in tmux (tui.*)
  postgresql libpq-dev # issue 15: the shared session store (libpq) and its tests' server
)

# ---- npm packages (issue 13): the ACP SDK client of the acp.sdk.* tests ----
# Pinned by tests/acp/sdk/package-lock.json (exact versions and sha512 integrity, which
# `npm ci` verifies for every tarball). Installed into a cache outside the tree
# ($PERI_NPM_CACHE, default ~/.cache/peri/npm); the build never needs it.
install_acp_sdk() {
  local here lock dir stamp want
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  lock="$here/tests/acp/sdk/package-lock.json"
  dir="${PERI_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/peri/npm}/acp-sdk"
  stamp="$dir/.lock.sha256"
  want="$(sha256sum "$lock" | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
     [ -f "$dir/node_modules/@agentclientprotocol/sdk/package.json" ]; then
    return 0
  fi
  if ! command -v npm >/dev/null; then
    echo "deps.sh: npm not found: installing the Debian npm package" >&2
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
  fi
  echo "deps.sh: installing the pinned ACP SDK into $dir" >&2
  mkdir -p "$dir"
  cp "$here/tests/acp/sdk/package.json" "$lock" "$dir/"
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$want" >"$stamp"
}

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# --- MCP interop (issue 12): pinned npm MCP servers/clients for tests/mcp only -------
# Installed with `npm ci` from tests/mcp/npm/package-lock.json (exact versions, sha512
# integrity of every tarball checked by npm) into $PERI_NPM_DIR (default
# ~/.cache/peri-c/npm). Best effort: the build never needs them; tests/mcp fail in CI
# (CI=true) and skip elsewhere when they are missing.
mcp_npm() {
  local src dir stamp want
  src="$(cd "$(dirname "$0")/.." && pwd)/tests/mcp/npm"
  dir="${PERI_NPM_DIR:-$HOME/.cache/peri-c/npm}"
  stamp="$dir/.lock.sha256"
  want="$(sha256sum "$src/package-lock.json" | cut -d' ' -f1)"
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$dir/node_modules" ] && return 0
  command -v npm >/dev/null || { echo "deps.sh: npm not found: MCP interop tests cannot run" >&2; return 0; }
  # after a failure (offline?) retry at most once an hour, so builds stay fast
  if [ -f "$dir/.failed" ] && [ "$(cat "$dir/.failed")" = "$want" ] &&
     [ -n "$(find "$dir/.failed" -mmin -60 2>/dev/null)" ]; then return 0; fi
  echo "deps.sh: installing pinned MCP npm packages into $dir" >&2
  mkdir -p "$dir"
  cp "$src/package.json" "$src/package-lock.json" "$dir/"
  if (cd "$dir" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --fetch-retries=1 \
        >/dev/null 2>&1); then
    echo "$want" > "$stamp"
    rm -f "$dir/.failed"
  else
    echo "$want" > "$dir/.failed"
    echo "deps.sh: npm ci failed (offline?): MCP interop tests cannot run" >&2
  fi
}
[ "${PERI_SKIP_NPM:-}" = 1 ] || mcp_npm
# --- end MCP interop --------------------------------------------------------------
SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps.sh: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
    echo "deps.sh: need root to install ${missing[*]}" >&2
    exit 1
  fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
install_acp_sdk

# ---- issue 11: Ruby's WebAssembly build, from the npm registry, into a cache ----------
# Pinned version and the registry's sha512 integrity; the build never needs it (without
# it the room's `ruby` program kind is unavailable and the Ruby tests say so).
RUBY_WASM_PKG="@ruby/3.4-wasm-wasi"
RUBY_WASM_VER="2.10.1"
RUBY_WASM_SHA512="sha512-qrzIJ/7TGSpsZpFyLJb9OXO6TYAq18XoLd11We17Sr78hWpb5IGGFgMQ9A2Y8Ww5n0k8uKA/I8/P8MJdzlJX0Q=="
cache="${PERI_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/peri}/ruby-3.4-wasm-wasi-$RUBY_WASM_VER"
if [ ! -s "$cache/ruby+stdlib.wasm" ] && [ "${PERI_NO_RUBY_WASM:-}" != 1 ]; then
  if ! command -v npm >/dev/null; then
    echo "deps.sh: installing npm (to fetch $RUBY_WASM_PKG)" >&2
    if [ "$(id -u)" -eq 0 ] || [ -n "$SUDO" ]; then
      $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null || true
    fi
  fi
  tmp="$(mktemp -d)"
  if command -v npm >/dev/null &&
     (cd "$tmp" && npm pack --silent "$RUBY_WASM_PKG@$RUBY_WASM_VER" >/dev/null 2>&1); then
    tgz="$tmp/ruby-3.4-wasm-wasi-$RUBY_WASM_VER.tgz"
    got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
    if [ "$got" != "$RUBY_WASM_SHA512" ]; then
      echo "deps.sh: $RUBY_WASM_PKG@$RUBY_WASM_VER failed its integrity check ($got); not installed" >&2
    else
      mkdir -p "$cache"
      tar -xzf "$tgz" -C "$tmp" package/dist/ruby+stdlib.wasm package/dist/LICENSE 2>/dev/null ||
        tar -xzf "$tgz" -C "$tmp" package/dist/ruby+stdlib.wasm
      mv "$tmp/package/dist/ruby+stdlib.wasm" "$cache/ruby+stdlib.wasm.part"
      [ -f "$tmp/package/dist/LICENSE" ] && mv "$tmp/package/dist/LICENSE" "$cache/LICENSE"
      echo "$RUBY_WASM_PKG@$RUBY_WASM_VER $RUBY_WASM_SHA512" > "$cache/INTEGRITY"
      mv "$cache/ruby+stdlib.wasm.part" "$cache/ruby+stdlib.wasm"
      echo "deps.sh: $RUBY_WASM_PKG@$RUBY_WASM_VER -> $cache" >&2
    fi
  else
    echo "deps.sh: could not fetch $RUBY_WASM_PKG@$RUBY_WASM_VER with npm; Ruby in the room stays unavailable" >&2
  fi
  rm -rf "$tmp"
fi
