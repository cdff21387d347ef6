#!/usr/bin/env bash
# bench/run.sh BUILD_DIR — runs the benchmark modules on Peri-C and on every peer
# engine present, interleaved, and prints medians and ratios.
#
#   BUILD_DIR/peri wasm invoke out/<p>.wasm <p> ARGS     Peri-C
#   $WASM3 --func <p> out/<p>.wasm ARGS                   wasm3 (if WASM3 is set)
#   $WAMR -f <p> out/<p>.wasm ARGS                        WAMR iwasm (if WAMR is set)
#   $NODE bench/node-invoke.mjs out/<p>.wasm <p> ARGS     node (if NODE is set)
#   out/native/<p> ARGS                                   native gcc -O2
#
# Every round runs each (program, engine) pair once, in a shuffled order, so that a
# burst of load on this shared machine does not hit one engine only. Each result is
# checked against the native program's output hash. Times are whole-process wall
# clock and user+sys CPU time (bench/timeit.py); the tables give both. Env: ROUNDS (default 5), PROGRAMS (space-separated subset), BENCH_WASI=1
# (also run the unmodified programs as WASI commands: `peri run`, `wasm3 FILE`).
# Then it measures compile speed with BUILD_DIR/peri-compile-speed if present.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-build}" && pwd)"
rounds="${ROUNDS:-5}"
. "$here/programs.sh"
[ -n "${PROGRAMS:-}" ] && read -r -a BENCH_PROGRAMS <<< "$PROGRAMS"

"$here/build.sh" > /dev/null || { rc=$?; [ $rc -eq 77 ] && exit 0; exit $rc; }

engines=(native peri)
[ -n "${WASM3:-}" ] && engines+=(wasm3)
[ -n "${WAMR:-}" ] && engines+=(wamr)
[ -n "${NODE:-}" ] && engines+=(node)
if [ -n "${BENCH_WASI:-}" ]; then # the WASI builds: Peri-C's room and wasm3's WASI
  engines+=(peri-wasi)
  [ -n "${WASM3:-}" ] && engines+=(wasm3-wasi)
  [ -n "${WAMR:-}" ] && engines+=(wamr-wasi)
fi
[ -x "$build/peri" ] || { echo "bench/run.sh: $build/peri not built" >&2; exit 1; }

cmd_for() { # engine program -> command line (as words)
  local e=$1 p=$2 w="$here/out/$2.wasm" a
  a=$(bench_args "$p")
  case $e in
    native) echo "$here/out/native/$p $a" ;;
    peri) echo "$build/peri wasm invoke $w $p $a" ;;
    wasm3) echo "$WASM3 --func $p $w $a" ;;
    wamr) echo "$WAMR -f $p $w $a" ;;
    node) echo "$NODE --no-warnings $here/node-invoke.mjs $w $p $a" ;;
    peri-wasi) echo "$build/peri run $here/out/wasi/$p.wasm $a" ;;
    wasm3-wasi) echo "$WASM3 $here/out/wasi/$p.wasm $a" ;;
    wamr-wasi) echo "$WAMR $here/out/wasi/$p.wasm $a" ;;
  esac
}

# The checked value: native prints the program's text (hash it); engines print the
# i32 the export returned, in their own format.
result_of() { # engine output-file
  case $1 in
    native | *-wasi) python3 -c 'import sys
h = 2166136261
for b in open(sys.argv[1], "rb").read():
    h = ((h ^ b) * 16777619) & 0xffffffff
print(h & 0x7fffffff)' "$2" ;;
    wamr) grep -oE '0x[0-9a-f]+' "$2" | tail -1 | xargs -r printf '%d\n' ;;
    *) grep -oE -- '-?[0-9]+' "$2" | tail -1 ;;
  esac
}

times="$(mktemp)"; out="$(mktemp)"
trap 'rm -f "$times" "$out"' EXIT
echo "bench: ${#BENCH_PROGRAMS[@]} programs x ${engines[*]}, $rounds rounds (+1 warm-up), $(date -u '+%F %H:%M UTC'), load before $(cut -d' ' -f1-3 /proc/loadavg)"
pairs=()
for p in "${BENCH_PROGRAMS[@]}"; do for e in "${engines[@]}"; do pairs+=("$p:$e"); done; done
failed=0
for ((r = 0; r <= rounds; r++)); do
  for pe in $(printf '%s\n' "${pairs[@]}" | shuf); do
    p=${pe%%:*}; e=${pe#*:}
    # shellcheck disable=SC2046
    read -r rc wall cpu < <(python3 "$here/timeit.py" "$out" $(cmd_for "$e" "$p"))
    if [ "$rc" != 0 ]; then
      echo "FAIL $e $p (exit status $rc): $(head -c 300 "$out")" >&2; failed=1; continue
    fi
    got=$(result_of "$e" "$out")
    want=$(cat "$here/out/$p.expect")
    if [ "$got" != "$want" ]; then
      echo "FAIL $e $p: result $got, expected $want" >&2; failed=1; continue
    fi
    [ $r -gt 0 ] && echo "$p $e $wall $cpu" >> "$times"
  done
  [ $r -gt 0 ] && printf '.' >&2
done
echo >&2

python3 - "$times" "${engines[*]}" "${BENCH_PROGRAMS[*]}" <<'PY'
import sys, statistics, math
rows = [l.split() for l in open(sys.argv[1])]
engines = sys.argv[2].split(); progs = sys.argv[3].split()
def fmt(ms): return f"{ms/1000:.2f} s" if ms >= 1000 else f"{ms:.1f} ms"
geo = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")
for col, title in ((3, "CPU time (user+sys)"), (2, "wall time")):
    med = {}
    for p in progs:
        for e in engines:
            v = [int(r[col]) for r in rows if r[0] == p and r[1] == e]
            if v: med[p, e] = statistics.median(v) / 1000.0  # ms
    print(f"\n### {title}, medians\n")
    pairs = [("peri-wasi" if d.endswith("-wasi") else "peri", d) for d in engines
             if d not in ("peri", "peri-wasi")]
    if "peri-wasi" in engines and "native" in engines: pairs.append(("peri-wasi", "native"))
    cols = engines + [f"{n}/{d}" for n, d in pairs]
    print("| program | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    ratios = {pd: [] for pd in pairs}
    for p in progs:
        cells = [fmt(med[p, e]) if (p, e) in med else "-" for e in engines]
        for n, d in pairs:
            if (p, n) in med and (p, d) in med:
                x = med[p, n] / med[p, d]; ratios[n, d].append(x); cells.append(f"{x:.2f}x")
            else: cells.append("-")
        print(f"| {p} | " + " | ".join(cells) + " |")
    print("| geomean | " + " | ".join([""] * len(engines)) + " | " +
          " | ".join(f"{geo(ratios[pd]):.2f}x" for pd in pairs) + " |")
    if "native" in engines:
        print()
        for e in engines:
            if e == "native": continue
            v = [med[p, e] / med[p, "native"] for p in progs if (p, e) in med and (p, "native") in med]
            print(f"- {e}: geomean {geo(v):.2f}x native over {len(v)} programs")
PY

if [ -x "$build/peri-compile-speed" ]; then
  echo
  "$build/peri-compile-speed" "$here/out/big.wasm" "$here"/out/{fib,sha256,matmul,nbody,qsort,alloc}.wasm
fi
exit $failed
