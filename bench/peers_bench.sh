#!/usr/bin/env bash
# bench/peers_bench.sh BUILD_DIR — the six programs and CoreMark side by side:
# native gcc -O2, Peri-C's interpreter and JIT, wasm3, WAMR iwasm (fast interpreter,
# Fast JIT, and optionally LLVM JIT and LLVM AOT through wamrc) and node. Interleaved rounds in shuffled order; every output checked; CPU
# time (user+sys, wait4) medians with ratios to native and geomeans; CoreMark in
# iterations/s. Prints markdown tables.
#
# The peers are not built here (they live outside the repo; BENCHMARKS.md names the
# commits and flags). Each one is optional; a missing one is skipped with a note:
#   PERI_WASM3            wasm3 binary            (`wasm3 --func P M ARGS`, `wasm3 M ARGS`)
#   PERI_IWASM_FAST       iwasm, fast interpreter (`iwasm -f P M ARGS`, `iwasm M ARGS`)
#   PERI_IWASM_JIT        iwasm, Fast JIT         (same command lines)
#   PERI_IWASM_LLVM       iwasm, LLVM JIT         (same command lines)
#   PERI_WAMRC            wamrc (WAMR's LLVM AOT compiler) and PERI_IWASM_AOT, an iwasm
#                         built with AOT support: column "iwasm-aot". Every module is
#                         compiled once before the rounds (`wamrc -o F.aot F.wasm`,
#                         default options; its CPU time is noted, not in the table)
#                         and the rounds run `iwasm -f P F.aot ARGS` / `iwasm F.aot`
#   node                  from PATH (PERI_NODE overrides; PERI_NODE=none skips it)
#   PERI_COREMARK_WASM    CoreMark built for wasm32-wasi (posix port, ITERATIONS=0)
#   PERI_COREMARK_NATIVE  the same CoreMark built natively with gcc -O2
#   PERI_ALT_BUILD        a second Peri-C build dir: adds a column "jit@ALT" running its
#                         JIT (to compare two JIT revisions in the same interleaved run);
#                         PERI_ALT_LABEL names it (default: that tree's short commit)
# Other env: ROUNDS (3, plus one discarded warm-up round; WARMUP=0 drops it),
# PROGRAMS (subset), FIXED=1 (see below), COREMARK_ITERS_NATIVE (60000), COREMARK_ITERS_JIT (20000: our JIT,
# WAMR's JITs and AOT, node), COREMARK_ITERS_INTERP (4000: interpreters), NO_COREMARK=1.
#
# The six programs run as import-free modules (bench/build.sh: out/<p>.wasm, the
# export returns the hash of the program's output): `peri wasm invoke --engine E`,
# `wasm3 --func`, `iwasm -f`, node through bench/node-invoke.mjs. CoreMark runs as a
# WASI command: `peri run --engine E`, `wasm3 FILE`, `iwasm FILE`, node through
# bench/node-wasi.mjs. CoreMark's own "Iterations/Sec" (its wall clock around the
# benchmark loop) is reported, and iterations per second of process CPU time (which
# includes start-up and compilation). Each CoreMark run is checked against the known
# CRCs of the performance run and the native build's final CRC (see cm_check below).
# FIXED=1 also runs, in the same rounds, every (runtime, program) pair with a trivial
# workload (fib 1, sha256 1, matmul 0, nbody 1, qsort 1, alloc 1 1; CoreMark 1
# iteration), checked the same way, and adds two tables: that fixed cost (start-up,
# loading, compilation of the whole module) and the CPU time less it, whose ratios to
# native's (likewise less its own) compare the generated code without start-up costs
# (e.g. WAMR's LLVM JIT, which compiles the whole module at -O3 before it runs).
# Exit status 1 if any run failed its check (the failures are listed after the tables).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-build}" && pwd)"
[ -x "$build/peri" ] || { echo "bench/peers_bench.sh: $build/peri not built" >&2; exit 1; }
"$here/build.sh" > /dev/null || { rc=$?; [ $rc -eq 77 ] && exit 0; exit $rc; }
exec python3 - "$here" "$build" <<'PY'
import math, os, random, re, shutil, statistics, subprocess, sys, tempfile, time

here, build = sys.argv[1], sys.argv[2]
env = os.environ
rounds = int(env.get("ROUNDS", "3"))
warmup = int(env.get("WARMUP", "1"))
progs = env.get("PROGRAMS", "").split() or subprocess.run(
    ["bash", "-c", f". {here}/programs.sh; echo ${{BENCH_PROGRAMS[@]}}"],
    capture_output=True, text=True, check=True).stdout.split()
bench_args = {p: subprocess.run(["bash", "-c", f". {here}/programs.sh; bench_args {p}"],
                                capture_output=True, text=True).stdout.split() for p in progs}
notes = []

def git_short(d):
    r = subprocess.run(["git", "-C", d, "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "?"

def exe(var, what):
    v = env.get(var, "")
    if not v:
        notes.append(f"{what}: skipped ({var} not set)"); return None
    if not (os.path.isfile(v) and os.access(v, os.X_OK)):
        notes.append(f"{what}: skipped ({var}={v} is not an executable file)"); return None
    return v

peri = f"{build}/peri"
wasm3 = exe("PERI_WASM3", "wasm3")
iw_fast = exe("PERI_IWASM_FAST", "iwasm-fast")
iw_jit = exe("PERI_IWASM_JIT", "iwasm-jit")
iw_llvm = exe("PERI_IWASM_LLVM", "iwasm-llvm-jit")
wamrc = exe("PERI_WAMRC", "iwasm-aot (wamrc)")
iw_aot = exe("PERI_IWASM_AOT", "iwasm-aot (iwasm)") if wamrc else None
if not iw_aot: wamrc = None
node = env.get("PERI_NODE") or shutil.which("node")
if node == "none" or not node:
    notes.append("node: skipped (not on PATH, or PERI_NODE=none)"); node = None
alt = None
if env.get("PERI_ALT_BUILD"):
    ab = os.path.abspath(env["PERI_ALT_BUILD"])
    if os.access(f"{ab}/peri", os.X_OK):
        alt = (f"{ab}/peri", env.get("PERI_ALT_LABEL") or git_short(ab))
    else:
        notes.append(f"jit@alt: skipped ({ab}/peri not built)")
cm_wasm = env.get("PERI_COREMARK_WASM", "")
cm_native = env.get("PERI_COREMARK_NATIVE", "")
coremark = not env.get("NO_COREMARK")
if coremark and not (os.path.isfile(cm_wasm) and os.path.isfile(cm_native)):
    notes.append("CoreMark: skipped (PERI_COREMARK_WASM and PERI_COREMARK_NATIVE must both be files)")
    coremark = False

aotdir = tempfile.mkdtemp(prefix="peers_bench_aot.")
def aot(w): return os.path.join(aotdir, os.path.basename(w)[:-5] + ".aot")
if wamrc:  # ahead-of-time compilation, once, outside the rounds
    aot_cpu = []
    for w in [f"{here}/out/{p}.wasm" for p in progs] + ([cm_wasm] if coremark else []):
        pr = subprocess.Popen([wamrc, "-o", aot(w), w], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        outw = pr.stdout.read()
        _, st, ru = os.wait4(pr.pid, 0)
        if os.waitstatus_to_exitcode(st) != 0 or not os.path.isfile(aot(w)):
            notes.append(f"iwasm-aot: skipped (wamrc failed on {w}: "
                         f"{outw.decode(errors='replace')[-200:]!r})")
            wamrc = None; break
        aot_cpu.append(f"{os.path.basename(w)[:-5]} {(ru.ru_utime + ru.ru_stime) * 1e3:.0f} ms")
    if wamrc:
        notes.append("iwasm-aot: wamrc CPU time per module (not counted in the tables): "
                     + ", ".join(aot_cpu))

# engine name -> (kind, program command builder, CoreMark command builder)
def mod(p): return f"{here}/out/{p}.wasm"
E = {"native": ("text", lambda p: [f"{here}/out/native/{p}"], lambda: [cm_native]),
     "interp": ("int", lambda p: [peri, "wasm", "invoke", "--engine", "interp", mod(p), p],
                lambda: [peri, "run", "--engine", "interp", cm_wasm]),
     "jit": ("int", lambda p: [peri, "wasm", "invoke", "--engine", "jit", mod(p), p],
             lambda: [peri, "run", "--engine", "jit", cm_wasm])}
if alt:
    E[f"jit@{alt[1]}"] = ("int", lambda p: [alt[0], "wasm", "invoke", "--engine", "jit", mod(p), p],
                          lambda: [alt[0], "run", "--engine", "jit", cm_wasm])
if wasm3:
    E["wasm3"] = ("int", lambda p: [wasm3, "--func", p, mod(p)], lambda: [wasm3, cm_wasm])
if iw_fast:
    E["iwasm-fast"] = ("hex", lambda p: [iw_fast, "-f", p, mod(p)], lambda: [iw_fast, cm_wasm])
if iw_jit:
    E["iwasm-jit"] = ("hex", lambda p: [iw_jit, "-f", p, mod(p)], lambda: [iw_jit, cm_wasm])
if iw_llvm:
    E["iwasm-llvm-jit"] = ("hex", lambda p: [iw_llvm, "-f", p, mod(p)], lambda: [iw_llvm, cm_wasm])
if wamrc:
    E["iwasm-aot"] = ("hex", lambda p: [iw_aot, "-f", p, aot(mod(p))],
                      lambda: [iw_aot, aot(cm_wasm)])
if node:
    E["node"] = ("int", lambda p: [node, "--no-warnings", f"{here}/node-invoke.mjs", mod(p), p],
                 lambda: [node, "--no-warnings", f"{here}/node-wasi.mjs", cm_wasm])
engines = list(E)

def cm_iters(e):
    if e == "native": return int(env.get("COREMARK_ITERS_NATIVE", "60000"))
    if e in ("interp", "wasm3", "iwasm-fast"): return int(env.get("COREMARK_ITERS_INTERP", "4000"))
    return int(env.get("COREMARK_ITERS_JIT", "20000"))

def fnv31(b):
    h = 2166136261
    for x in b: h = ((h ^ x) * 16777619) & 0xffffffff
    return h & 0x7fffffff

expect = {p: int(open(f"{here}/out/{p}.expect").read()) for p in progs}
fixed = bool(env.get("FIXED"))
TINY = {"fib": ["1"], "sha256": ["1"], "matmul": ["0"], "nbody": ["1"], "qsort": ["1"],
        "alloc": ["1", "1"]}
if fixed and any(p not in TINY for p in progs):
    sys.exit(f"bench/peers_bench.sh: FIXED=1 knows no trivial workload for "
             f"{[p for p in progs if p not in TINY]}")
outf = tempfile.NamedTemporaryFile(prefix="peers_bench.", delete=False).name

def run(cmd):
    """(exit status, wall ms, cpu ms, output bytes) of one process."""
    with open(outf, "wb") as o:
        t0 = time.perf_counter_ns()
        pr = subprocess.Popen(cmd, stdout=o, stderr=subprocess.STDOUT)
        _, st, ru = os.wait4(pr.pid, 0)
        wall = (time.perf_counter_ns() - t0) / 1e6
    return os.waitstatus_to_exitcode(st), wall, (ru.ru_utime + ru.ru_stime) * 1e3, open(outf, "rb").read()

def result(kind, out):
    if kind == "text": return fnv31(out)
    s = out.decode(errors="replace")
    if kind == "hex":
        m = re.findall(r"0x[0-9a-fA-F]+", s); return int(m[-1], 16) if m else None
    m = re.findall(r"-?[0-9]+", s); return int(m[-1]) if m else None

# CoreMark's own verdict needs a run of at least 10 s ("ERROR! Must execute for at
# least 10 secs" counts as an error and suppresses "Correct operation validated."),
# which is too long here. So the run is checked by hand: the seed, list, matrix and
# state CRCs must be the known values of the 2K performance run (seeds 0, 0, 0x66;
# core_main.c's tables), the final CRC (it depends on the iteration count) must equal
# the native build's for the same count, and there must be no other "ERROR" line.
CM_KNOWN = {"seedcrc": "0xe9f5", "[0]crclist": "0xe714", "[0]crcmatrix": "0x1fd7",
            "[0]crcstate": "0x8e3a"}
def cm_fields(s):
    return dict(re.findall(r"^(\S+)\s*:\s*(0x[0-9a-f]+)\s*$", s, re.M))
def cm_check(s, n, final):
    f = cm_fields(s)
    for k, v in CM_KNOWN.items():
        if f.get(k) != v: return f"{k} {f.get(k)} (want {v})"
    if f.get("[0]crcfinal") != final: return f"crcfinal {f.get('[0]crcfinal')} (native: {final})"
    it = re.search(r"^Iterations\s*:\s*([0-9]+)", s, re.M)
    if not it or int(it.group(1)) != n: return f"iterations {it and it.group(1)} (want {n})"
    errs = [l for l in s.splitlines() if "ERROR" in l and "at least 10 secs" not in l]
    if errs: return errs[0]
    return ""
expect_tiny = {}
if fixed:  # what the export returns for the trivial workload: the native output's hash
    for p in progs:
        st, _, _, out = run(E["native"][1](p) + TINY[p])
        if st != 0: sys.exit(f"bench/peers_bench.sh: native {p} {TINY[p]} failed")
        expect_tiny[p] = fnv31(out)
cm_final = {}
if coremark:  # the native build's final CRC for each iteration count used
    for n in sorted({cm_iters(e) for e in engines} | ({1} if fixed else set())):
        st, _, _, out = run([cm_native, "0x0", "0x0", "0x66", str(n)])
        s = out.decode(errors="replace"); fin = cm_fields(s).get("[0]crcfinal")
        bad = cm_check(s, n, fin)
        if st != 0 or bad:
            sys.exit(f"bench/peers_bench.sh: native CoreMark failed ({bad}): {s[-300:]}")
        cm_final[n] = fin

T = {}    # (engine, program) -> [(wall, cpu)]
CM = {}   # engine -> [(coremark it/s, iterations / cpu s, cpu ms)]
F = {}    # (engine, program or "coremark") -> [cpu ms of the trivial run]
fails = []
load0 = open("/proc/loadavg").read().split()[:3]
t_start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
jobs = [("p", e, p) for e in engines for p in progs] + \
       ([("c", e, None) for e in engines] if coremark else [])
if fixed:
    jobs += [("f", e, p) for e in engines for p in progs] + \
            ([("cf", e, None) for e in engines] if coremark else [])
loads = []
for r in range(rounds + (1 if warmup else 0)):
    keep = r >= (1 if warmup else 0)
    random.shuffle(jobs)
    for kind, e, p in jobs:
        if kind == "p":
            cmd = E[e][1](p) + bench_args[p]
            st, wall, cpu, out = run(cmd)
            got = result(E[e][0], out) if st == 0 else None
            if got != expect[p]:
                fails.append(f"{e} {p}: exit {st}, result {got}, expected {expect[p]}: "
                             f"{out[:200]!r}")
                continue
            if keep: T.setdefault((e, p), []).append((wall, cpu))
        elif kind == "f":
            st, wall, cpu, out = run(E[e][1](p) + TINY[p])
            got = result(E[e][0], out) if st == 0 else None
            if got != expect_tiny[p]:
                fails.append(f"{e} {p} {' '.join(TINY[p])}: exit {st}, result {got}, "
                             f"expected {expect_tiny[p]}: {out[:200]!r}")
                continue
            if keep: F.setdefault((e, p), []).append(cpu)
        elif kind == "cf":
            st, wall, cpu, out = run(E[e][2]() + ["0x0", "0x0", "0x66", "1"])
            s = out.decode(errors="replace")
            bad = cm_check(s, 1, cm_final[1])
            if st != 0 or bad:
                fails.append(f"{e} CoreMark 1 iteration: exit {st}, {bad}: {s[-300:]!r}")
                continue
            if keep: F.setdefault((e, "coremark"), []).append(cpu)
        else:
            n = cm_iters(e)
            st, wall, cpu, out = run(E[e][2]() + ["0x0", "0x0", "0x66", str(n)])
            s = out.decode(errors="replace")
            m = re.search(r"Iterations/Sec\s*:\s*([0-9.]+)", s)
            bad = cm_check(s, n, cm_final[n])
            if st != 0 or not m or bad:
                fails.append(f"{e} CoreMark: exit {st}, {bad}: {s[-300:]!r}"); continue
            if keep: CM.setdefault(e, []).append((float(m.group(1)), n / (cpu / 1e3), cpu))
    loads.append(open("/proc/loadavg").read().split()[0])
    print(".", end="", file=sys.stderr, flush=True)
print(file=sys.stderr)
os.unlink(outf)
shutil.rmtree(aotdir, ignore_errors=True)
load1 = open("/proc/loadavg").read().split()[:3]

def fmt(ms): return f"{ms/1000:.2f} s" if ms >= 1000 else f"{ms:.1f} ms"
geo = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")

def ver(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        return (r.stdout + r.stderr).strip().splitlines()[0]
    except Exception as x:
        return f"? ({x})"

print(f"Run {t_start}, Peri-C build {build} (its tree at `{git_short(build)}`)"
      + (f", column jit@{alt[1]} from {os.path.dirname(alt[0])}" if alt else "")
      + f": {rounds} rounds" + (" after a discarded warm-up round" if warmup else "")
      + f", shuffled order. Load average (1/5/15 min) {'/'.join(load0)} before, "
      f"{'/'.join(load1)} after; 1-min load after each round: {', '.join(loads)}.")
print()
vs = []
if wasm3: vs.append(f"wasm3: {ver([wasm3, '--version'])}")
if iw_fast: vs.append(f"iwasm-fast: {ver([iw_fast, '--version'])}")
if iw_jit: vs.append(f"iwasm-jit: {ver([iw_jit, '--version'])}")
if iw_llvm: vs.append(f"iwasm-llvm-jit: {ver([iw_llvm, '--version'])}")
if wamrc: vs.append(f"iwasm-aot: {ver([iw_aot, '--version'])}, {ver([wamrc, '--version'])}")
if node: vs.append(f"node: {ver([node, '--version'])}")
for v in vs + notes: print(f"- {v}")
for col, title in ((1, "CPU time (user+sys)"), (0, "Wall time")):
    print(f"\n#### {title}, medians of {rounds}; in parentheses the ratio to native\n")
    print("| program | " + " | ".join(engines) + " |")
    print("|---" * (len(engines) + 1) + "|")
    med = {k: statistics.median(x[col] for x in v) for k, v in T.items()}
    ratios = {e: [] for e in engines}
    for p in progs:
        cells = []
        for e in engines:
            if (e, p) not in med: cells.append("FAIL"); continue
            n = med.get(("native", p))
            if n and e != "native":
                x = med[e, p] / max(n, 0.1); ratios[e].append(x)
                cells.append(f"{fmt(med[e, p])} ({x:.2f}x)")
            else:
                cells.append(fmt(med[e, p]))
        print(f"| {p} | " + " | ".join(cells) + " |")
    print("| geomean vs native | 1x | " + " | ".join(
        ("-" if not ratios[e] else f"**{geo(ratios[e]):.2f}x**") +
        ("" if len(ratios[e]) == len(progs) else
                                       f" ({len(ratios[e])} programs)")
        for e in engines[1:]) + " |")
if coremark:
    print(f"\n#### CoreMark 1.0, median of {rounds} (posix port, seeds 0x0 0x0 0x66)\n")
    print("| runtime | iterations | CoreMark it/s | vs native | it/s of process CPU time | vs native |")
    print("|---|---|---|---|---|---|")
    nat = CM.get("native")
    nm = statistics.median(x[0] for x in nat) if nat else None
    nc = statistics.median(x[1] for x in nat) if nat else None
    for e in engines:
        if e not in CM: print(f"| {e} | {cm_iters(e)} | FAIL | | | |"); continue
        a = statistics.median(x[0] for x in CM[e]); c = statistics.median(x[1] for x in CM[e])
        ra = f"{a/nm:.3f}" if nm else ""; rc = f"{c/nc:.3f}" if nc else ""
        print(f"| {e} | {cm_iters(e)} | **{a:.0f}** | {ra} | {c:.0f} | {rc} |")
    print("\nEvery CoreMark run counted here gave the known seed/list/matrix/state CRCs of "
          "the performance run and the native build's final CRC for its iteration count "
          "(a run that did not is listed below as a failure). The runs are shorter than "
          "CoreMark's 10 s rule for a reportable score, so CoreMark itself prints \"ERROR! "
          "Must execute for at least 10 secs\" instead of \"Correct operation validated.\"; "
          "that line is the only error accepted. CoreMark's own it/s is wall time around its "
          "loop; under load the CPU-time column is the steadier one.")
if fixed:
    cols = progs + (["coremark"] if coremark else [])
    fm = {k: statistics.median(v) for k, v in F.items()}
    print(f"\n#### Fixed cost: CPU time of a trivial run, medians of {rounds}\n")
    print("Workloads: " + ", ".join(f"{p} {' '.join(TINY[p])}" for p in progs)
          + (", CoreMark 1 iteration" if coremark else "") + ".\n")
    print("| runtime | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for e in engines:
        print(f"| {e} | " + " | ".join(fmt(fm[e, c]) if (e, c) in fm else "FAIL"
                                       for c in cols) + " |")
    # The benchmark's CPU median less the trivial run's, per (runtime, program).
    net = {}
    for e in engines:
        for p in progs:
            if (e, p) in T and (e, p) in fm:
                net[e, p] = statistics.median(x[1] for x in T[e, p]) - fm[e, p]
        if coremark and e in CM and (e, "coremark") in fm:
            net[e, "coremark"] = statistics.median(x[2] for x in CM[e]) - fm[e, "coremark"]
    print(f"\n#### CPU time less the fixed cost; in parentheses the ratio to native's "
          f"(likewise)\n")
    print("| program | " + " | ".join(engines) + " |")
    print("|---" * (len(engines) + 1) + "|")
    ratios = {e: [] for e in engines}
    for p in progs:
        cells = []
        n = net.get(("native", p))
        for e in engines:
            x = net.get((e, p))
            if x is None or x <= 0 or not n or n <= 0: cells.append("-"); continue
            if e == "native": cells.append(fmt(x)); continue
            ratios[e].append(x / n); cells.append(f"{fmt(x)} ({x / n:.2f}x)")
        print(f"| {p} | " + " | ".join(cells) + " |")
    print("| geomean vs native | 1x | " + " | ".join(
        ("-" if not ratios[e] else f"**{geo(ratios[e]):.2f}x**") +
        ("" if len(ratios[e]) == len(progs) else f" ({len(ratios[e])} programs)")
        for e in engines[1:]) + " |")
    if coremark:
        print("\nCoreMark, iterations per CPU second less the fixed cost "
              "(n / (CPU of n iterations - CPU of 1 iteration)): " + ", ".join(
                  f"{e} **{cm_iters(e) / (net[e, 'coremark'] / 1e3):.0f}**"
                  if net.get((e, "coremark"), 0) > 0 else f"{e} -" for e in engines) + ".")
if fails:
    print("\nFailures:")
    for f in fails: print(f"- {f}")
sys.exit(1 if fails else 0)
PY
