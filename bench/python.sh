#!/usr/bin/env bash
# bench/python.sh BUILD_DIR [RUNS] — Python in the room against Debian's python3 and the
# same python.wasm under node:wasi (bench/node-python.mjs). For hi.py (print("hi")) and
# loop.py (20,000 iterations of total += i * i % 7, then json.dumps):
#   room cold: RUNS separate `peri python` processes; per process the wall time and max
#     RSS, and run 1's wall/CPU (read + compile python.wasm, initialise, snapshot, run);
#   room warm: one `peri python --repeat RUNS` process; runs 2..RUNS (from the snapshot);
#   native: RUNS `python3 SCRIPT` processes (wall, max RSS);
#   node: RUNS node processes, each compiling python.wasm once, initialising (node has
#     no snapshot: that is its per-run cost) and running the script once.
# Medians everywhere; wall times are from date +%s%N or the tools' own clocks, process
# CPU (user + system) and max RSS from /usr/bin/time. On a loaded machine read the CPU
# columns: wall times include waiting for a core.
set -euo pipefail
build="${1:-build}"
runs="${2:-7}"
dir="${PERI_PYTHON_DIR:-${PERI_CACHE_DIR:-$HOME/.cache/peri}/python/3.11.2}"
[ -f "$dir/python.wasm" ] || { echo "bench/python.sh: $dir/python.wasm missing (scripts/deps.sh)" >&2; exit 1; }
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
printf 'print("hi")\n' > "$tmp/hi.py"
printf 'import json\ntotal = 0\nfor i in range(20000):\n    total += i * i %% 7\nprint(json.dumps({"total": total}))\n' > "$tmp/loop.py"
for s in hi loop; do
  f="$tmp/$s.py"
  : > "$tmp/cold"
  for _ in $(seq "$runs"); do
    a=$(date +%s%N)
    /usr/bin/time -f 'rss %M %U %S' "$build/peri" python --python-dir "$dir" --time "$f" > /dev/null 2> "$tmp/err"
    b=$(date +%s%N)
    echo "$(( (b - a) / 1000000 )) $(grep -m1 'run 1:' "$tmp/err" | awk '{print $5, $8}') $(grep '^rss' "$tmp/err" | awk '{print $2, ($3 + $4) * 1000}')" >> "$tmp/cold"
  done
  /usr/bin/time -f 'rss %M %U %S' "$build/peri" python --python-dir "$dir" --repeat "$runs" --time "$f" > /dev/null 2> "$tmp/err"
  warm=$(grep 'run [0-9]*:' "$tmp/err" | tail -n +2 | awk '{print $5}' | median)
  warmcpu=$(grep 'run [0-9]*:' "$tmp/err" | tail -n +2 | awk '{print $8}' | median)
  warmrss=$(grep '^rss' "$tmp/err" | awk '{print $2}')
  : > "$tmp/nat"
  for _ in $(seq "$runs"); do
    a=$(date +%s%N)
    /usr/bin/time -f 'rss %M %U %S' python3 "$f" > /dev/null 2> "$tmp/err"
    b=$(date +%s%N)
    echo "$(( (b - a) / 1000 )) $(grep '^rss' "$tmp/err" | awk '{print $2, ($3 + $4) * 1000}')" >> "$tmp/nat"
  done
  : > "$tmp/node"
  for _ in $(seq "$runs"); do
    a=$(date +%s%N)
    /usr/bin/time -f 'rss %M %U %S' node --no-warnings "$here/node-python.mjs" "$dir" "$f" 1 > /dev/null 2> "$tmp/err"
    b=$(date +%s%N)
    echo "$(( (b - a) / 1000000 )) $(grep -v '^rss' "$tmp/err" | tail -1) $(grep '^rss' "$tmp/err" | awk '{print $2, ($3 + $4) * 1000}')" >> "$tmp/node"
  done
  col() { awk -v c="$1" '{print $c}' "$2" | median; }
  printf '%s.py\n' "$s"
  printf '  room cold   process %6s ms wall (cpu %6s), run 1 %7s ms wall (cpu %7s), max RSS %6s KB\n' \
    "$(col 1 "$tmp/cold")" "$(col 5 "$tmp/cold")" "$(col 2 "$tmp/cold")" "$(col 3 "$tmp/cold")" "$(col 4 "$tmp/cold")"
  printf '  room warm   run %6s ms wall (cpu %5s), %d runs, process max RSS %6s KB\n' \
    "$warm" "$warmcpu" "$((runs - 1))" "$warmrss"
  printf '  native      process %6.1f ms wall (cpu %6s), max RSS %6s KB\n' \
    "$(echo "$(col 1 "$tmp/nat") / 1000" | bc -l)" "$(col 3 "$tmp/nat")" "$(col 2 "$tmp/nat")"
  printf '  node:wasi   process %6s ms wall (cpu %6s): compile %6s + init %6s + script %6s ms wall, max RSS %6s KB\n' \
    "$(col 1 "$tmp/node")" "$(col 6 "$tmp/node")" "$(col 2 "$tmp/node")" "$(col 3 "$tmp/node")" "$(col 4 "$tmp/node")" "$(col 5 "$tmp/node")"
done
