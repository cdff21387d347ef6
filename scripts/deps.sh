#!/usr/bin/env bash
# Installs the Debian packages Peri-C needs to build, test and benchmark.
# Idempotent and quiet when everything is present. Needs root (or sudo) only
# when something is missing.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config clang-14 lld-14 clang-format
  libjansson-dev libsqlite3-dev libcurl4-openssl-dev libssl-dev libcmocka-dev
  wasi-libc libclang-rt-14-dev-wasm32 python3
  bubblewrap libseccomp-dev ruby # placement: the native sandbox and native Ruby
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps.sh: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps.sh: need root to install ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
