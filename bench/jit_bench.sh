#!/usr/bin/env bash
# bench/jit_bench.sh BUILD_DIR — the six programs under the interpreter and the baseline
# JIT (`peri wasm invoke --engine interp|jit`) beside the native build, interleaved
# rounds in shuffled order, CPU time (user+sys) medians. Env: ROUNDS (5).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-build}" && pwd)"
rounds="${ROUNDS:-5}"
. "$here/programs.sh"
"$here/build.sh" > /dev/null
python3 - "$here" "$build" "$rounds" "${BENCH_PROGRAMS[@]}" <<'PY'
import os, random, statistics, subprocess, sys
here, build, rounds, progs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def args(p):
    return subprocess.run(["bash", "-c", f". {here}/programs.sh; bench_args {p}"],
                          capture_output=True, text=True).stdout.split()
def cmd(e, p):
    w = f"{here}/out/{p}.wasm"
    if e == "native": return [f"{here}/out/native/{p}"] + args(p)
    return [f"{build}/peri", "wasm", "invoke", "--engine", e, w, p] + args(p)
engines = ["native", "interp", "jit"]
t = {(e, p): [] for e in engines for p in progs}
out = {}
for r in range(rounds):
    pairs = [(e, p) for e in engines for p in progs]
    random.shuffle(pairs)
    for e, p in pairs:
        res = subprocess.run(["python3", f"{here}/timeit.py", "/tmp/jit_bench.out"] + cmd(e, p),
                             capture_output=True, text=True).stdout.split()
        text = open("/tmp/jit_bench.out").read().split()
        if e != "native":
            out.setdefault(p, set()).add(text[0] if text else "")
        t[(e, p)].append(int(res[2]) / 1000.0)
print("| program | native | interp | jit | jit/interp | interp/native | jit/native |")
print("|---|---|---|---|---|---|---|")
g = {"ji": [], "in": [], "jn": []}
for p in progs:
    n, i, j = (statistics.median(t[(e, p)]) for e in engines)
    n = max(n, 0.1)
    g["ji"].append(j / i); g["in"].append(i / n); g["jn"].append(j / n)
    print(f"| {p} | {n:.1f} ms | {i:.1f} ms | {j:.1f} ms | {j/i:.2f}x | {i/n:.2f}x | {j/n:.2f}x |")
gm = lambda v: statistics.geometric_mean(v)
print(f"| geomean | | | | {gm(g['ji']):.2f}x | {gm(g['in']):.2f}x | {gm(g['jn']):.2f}x |")
for p, s in out.items():
    if len(s) != 1: print(f"MISMATCH {p}: {s}")
PY
