#!/usr/bin/env bash
# bench/bounds_bench.sh BUILD_DIR — guard-page against explicit bounds checks
# (docs/jit.md, "Bounds checks"): the six programs under the JIT
# (`peri wasm invoke --engine jit --bounds-checks guard|explicit`), CoreMark as a WASI
# command (`peri run --engine jit`, guard pages: the default), and `peri run
# hello.wasm` (default engine: CPU time and peak RSS), beside the same commands of
# another build (BEFORE=path/to/peri, e.g. main's, which has explicit checks only).
# Interleaved rounds in shuffled order after a warm-up; CPU time (user+sys, wait4)
# medians. Every program's result is checked against the native build's hash.
# Env: ROUNDS (5), BEFORE, COREMARK_WASM + COREMARK_NATIVE (CoreMark built with the
# posix port, ITERATIONS=0: its count is an argument), COREMARK_ITERS (20000),
# HELLO (tests/room/fixtures/hello.wasm), HELLO_RUNS (20 per round).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-build}" && pwd)"
"$here/build.sh" > /dev/null
exec python3 - "$here" "$build" <<'PY'
import os, random, resource, statistics, subprocess, sys
here, build = sys.argv[1], sys.argv[2]
env = os.environ
rounds = int(env.get("ROUNDS", "5"))
before = env.get("BEFORE", "")
peri = f"{build}/peri"
progs = subprocess.run(["bash", "-c", f". {here}/programs.sh; echo ${{BENCH_PROGRAMS[@]}}"],
                       capture_output=True, text=True, check=True).stdout.split()
def args(p):
    return subprocess.run(["bash", "-c", f". {here}/programs.sh; bench_args {p}"],
                          capture_output=True, text=True).stdout.split()
expect = {p: open(f"{here}/out/{p}.expect").read().split()[0] for p in progs}
hello = env.get("HELLO", f"{here}/../tests/room/fixtures/hello.wasm")
hello_runs = int(env.get("HELLO_RUNS", "20"))
cm_wasm, cm_native = env.get("COREMARK_WASM", ""), env.get("COREMARK_NATIVE", "")
cm_n = env.get("COREMARK_ITERS", "20000")

def run(cmd):
    """(exit status, CPU ms, peak RSS KiB, output)"""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.read()
    _, st, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(st), (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_maxrss, out

variants = [("guard", peri, ["--bounds-checks", "guard"]),
            ("explicit", peri, ["--bounds-checks", "explicit"])]
if before:
    variants.insert(0, ("before", before, []))
jobs = [("p", v, p) for v in variants for p in progs]
if cm_wasm and cm_native:
    jobs += [("c", v, None) for v in variants if v[0] != "explicit"]
jobs += [("h", v, None) for v in variants if v[0] != "explicit"]
T, RSS, bad = {}, {}, []
for r in range(rounds + 1):
    random.shuffle(jobs)
    for kind, (name, exe, flags), p in jobs:
        if kind == "p":
            cmd = [exe, "wasm", "invoke", "--engine", "jit"] + flags + \
                  [f"{here}/out/{p}.wasm", p] + args(p)
            st, cpu, rss, out = run(cmd)
            if st != 0 or out.split()[-1:] != [expect[p].encode()]:
                bad.append(f"{name} {p}: {st} {out[-200:]!r}")
            key = (name, p)
        elif kind == "c":
            st, cpu, rss, out = run([exe, "run", "--engine", "jit", cm_wasm,
                                     "0x0", "0x0", "0x66", cm_n])
            if b"crcfinal" not in out: bad.append(f"{name} coremark: {out[-300:]!r}")
            key = (name, "coremark")
        else:
            cpus, rsss = [], []
            for _ in range(hello_runs):
                st, cpu, rss, out = run([exe, "run", hello])
                if st != 0: bad.append(f"{name} hello: {out[-200:]!r}")
                cpus.append(cpu); rsss.append(rss)
            cpu, rss = statistics.median(cpus), statistics.median(rsss)
            key = (name, "hello")
        if r == 0: continue  # warm-up
        T.setdefault(key, []).append(cpu)
        RSS.setdefault(key, []).append(rss)
names = [v[0] for v in variants]
print(f"CPU time medians of {rounds} rounds (ms), load {open('/proc/loadavg').read().split()[:3]}")
print("| program | " + " | ".join(names) + " |")
print("|---" * (len(names) + 1) + "|")
for p in progs + ["coremark", "hello"]:
    cells = []
    for n in names:
        v = T.get((n, p))
        cells.append(f"{statistics.median(v):.1f}" if v else "-")
    if any(c != "-" for c in cells): print(f"| {p} | " + " | ".join(cells) + " |")
g = {}
for n in names:
    xs = [statistics.median(T[(n, p)]) for p in progs]
    g[n] = statistics.geometric_mean(xs)
print("| geomean (six) | " + " | ".join(f"{g[n]:.1f}" for n in names) + " |")
print("hello peak RSS (KiB, median): " +
      ", ".join(f"{n} {statistics.median(RSS[(n, 'hello')]):.0f}" for n in names
                if (n, "hello") in RSS))
if bad:
    print("FAILED:", *bad, sep="\n  ")
    sys.exit(1)
PY
