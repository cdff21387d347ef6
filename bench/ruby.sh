#!/usr/bin/env bash
# bench/ruby.sh BUILD_DIR [RUNS] — Ruby in the room: `puts 1+1` and
# `(1..100000).sum` cold (first run of a process: read + compile the 30 MB module,
# _initialize + ruby-init, snapshot, run) and warm (later runs: from the snapshot),
# medians over RUNS warm runs; native `ruby -e` side by side for scale.
set -euo pipefail
build="${1:-build}"
runs="${2:-11}"
wasm="${PERI_RUBY_WASM:-${XDG_CACHE_HOME:-$HOME/.cache}/peri/ruby-3.4-wasm-wasi-2.10.1/ruby+stdlib.wasm}"
[ -f "$wasm" ] || { echo "bench/ruby.sh: $wasm missing (scripts/deps.sh)" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
for script in 'puts 1+1' 'puts (1..100000).sum'; do
  printf '%s\n' "$script" > "$tmp/s.rb"
  start=$(date +%s%N)
  "$build/peri" ruby --wasm "$wasm" --repeat "$runs" --time "$tmp/s.rb" > "$tmp/out" 2> "$tmp/err"
  end=$(date +%s%N)
  cold=$(grep -m1 'run 1:' "$tmp/err" | awk '{print $5}')
  coldcpu=$(grep -m1 'run 1:' "$tmp/err" | awk '{print $8}')
  warm=$(grep 'run [0-9]*:' "$tmp/err" | tail -n +2 | awk '{print $5}' | median)
  warmcpu=$(grep 'run [0-9]*:' "$tmp/err" | tail -n +2 | awk '{print $8}' | median)
  nat=$(for _ in $(seq 5); do s=$(date +%s%N); ruby -e "$script" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000 )); done | median)
  printf '%-22s process %6.0f ms | cold run %7.1f ms (cpu %7.1f) | warm median %6.1f ms (cpu %5.1f, %d runs) | native ruby -e %6.1f ms | %s\n' \
    "$script" "$(( (end - start) / 1000000 ))" "$cold" "$coldcpu" "$warm" "$warmcpu" "$((runs - 1))" "$(echo "$nat / 1000" | bc -l)" "$(head -1 "$tmp/out")"
done
