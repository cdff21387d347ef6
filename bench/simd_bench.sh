#!/usr/bin/env bash
# bench/simd_bench.sh BUILD_DIR — the SIMD programs (bench/simd/, built by
# simd_build.sh with -msimd128) under the interpreter and the JIT
# (`peri run --engine interp|jit`) beside the native gcc -O2 build; interleaved rounds
# in shuffled order, CPU time (user+sys) medians, outputs checked against native.
# Env: ROUNDS (3), ENGINES ("native interp jit"), PERI_FLAGS (extra `peri run` flags),
# PERI_BASE (another peri binary, e.g. a build before a change: adds a "jit-base"
# column, its JIT on the same programs in the same rounds).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-build}" && pwd)"
rounds="${ROUNDS:-3}"
. "$here/simd/programs.sh"
"$here/simd_build.sh" > /dev/null
python3 - "$here" "$build" "$rounds" "${ENGINES:-native interp jit}" "${SIMD_PROGRAMS[@]}" <<'PY'
import os, random, statistics, subprocess, sys
here, build, rounds, engines, progs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(), sys.argv[5:]
flags = os.environ.get("PERI_FLAGS", "").split()
base = os.environ.get("PERI_BASE")
if base: engines.append("jit-base")
def cmd(e, p):
    if e == "native": return [f"{here}/out/simd/native/{p}"]
    if e == "jit-base": return [base, "run", "--engine", "jit", f"{here}/out/simd/{p}.wasm"]
    return [f"{build}/peri", "run", "--engine", e] + flags + [f"{here}/out/simd/{p}.wasm"]
t = {(e, p): [] for e in engines for p in progs}
ref, bad = {}, []
for r in range(rounds):
    pairs = [(e, p) for e in engines for p in progs]
    random.shuffle(pairs)
    for e, p in pairs:
        res = subprocess.run(["python3", f"{here}/timeit.py", "/tmp/simd_bench.out"] + cmd(e, p),
                             capture_output=True, text=True).stdout.split()
        text = open("/tmp/simd_bench.out").read()
        ref.setdefault(p, text)
        if text != ref[p] or res[0] != "0": bad.append((e, p, res[0], text.strip()))
        t[(e, p)].append(int(res[2]) / 1000.0)
cols = engines + [f"{e}/native" for e in engines if e != "native" and "native" in engines]
print("| program | " + " | ".join(cols) + " |")
print("|---" * (len(cols) + 1) + "|")
g = {e: [] for e in engines}
for p in progs:
    m = {e: statistics.median(t[(e, p)]) for e in engines}
    row = [f"{m[e]:.1f} ms" for e in engines]
    if "native" in engines:
        n = max(m["native"], 0.1)
        for e in engines:
            if e != "native":
                g[e].append(m[e] / n); row.append(f"{m[e]/n:.2f}x")
    print(f"| {p} | " + " | ".join(row) + " |")
if "native" in engines:
    gm = [f"{statistics.geometric_mean(g[e]):.2f}x" for e in engines if e != "native"]
    print("| geomean | " + " | ".join([""] * len(engines) + gm) + " |")
print("load average:", " ".join(f"{v:.2f}" for v in os.getloadavg()))
for b in bad: print("MISMATCH", *b)
PY
