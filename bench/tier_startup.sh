#!/usr/bin/env bash
# bench/tier_startup.sh BUILD_DIR [RUNS] — what the JIT costs at startup:
# one process each, the three tiers interleaved, CPU time (user+sys, bench/timeit.py)
# medians over RUNS, for
#   hello   `peri run tests/room/fixtures/hello.wasm` (a 17 KB C program)
#   ruby    `peri ruby` of `puts 1` (the 30 MB Ruby build: read, compile, boot, run)
#   ruby10  `peri ruby --repeat 10` of a loop of 40,000 steps (boot, then 10 runs from
#           the snapshot: where `auto` turns to the JIT)
# and the peak resident memory of the last run of each.
set -euo pipefail
build="${1:-build}"
runs="${2:-5}"
here="$(cd "$(dirname "$0")" && pwd)"
wasm="${PERI_RUBY_WASM:-${XDG_CACHE_HOME:-$HOME/.cache}/peri/ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm}"
[ -f "$wasm" ] || { echo "bench/tier_startup.sh: $wasm missing (scripts/deps.sh)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
printf 'puts 1\n' > "$tmp/p1.rb"
printf 's = 0; 40000.times { |i| s += i * i %% 7 }; puts s\n' > "$tmp/p2.rb"
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
declare -A cpu rss
for case in hello ruby ruby10; do
  case $case in
    hello) cmd=("$build/peri" run "$here/../tests/room/fixtures/hello.wasm") ;;
    ruby) cmd=("$build/peri" ruby --wasm "$wasm" "$tmp/p1.rb") ;;
    ruby10) cmd=("$build/peri" ruby --wasm "$wasm" --repeat 10 "$tmp/p2.rb") ;;
  esac
  for _ in $(seq "$runs"); do
    for e in interp jit auto; do
      r=$(PERI_ENGINE=$e python3 "$here/timeit.py" "$tmp/out" "${cmd[@]}")
      cpu[$case.$e]+="$(echo "$r" | awk '{print $3 / 1000}') "
    done
  done
  for e in interp jit auto; do
    m=$( { PERI_ENGINE=$e /usr/bin/time -f '%M' "${cmd[@]}" > /dev/null; } 2>&1 | tail -1)
    printf '%-7s %-6s cpu median %8.1f ms  (runs: %s)  max RSS %6d KB\n' "$case" "$e" \
      "$(echo "${cpu[$case.$e]}" | tr ' ' '\n' | grep . | median)" "${cpu[$case.$e]% }" "$m"
  done
done
