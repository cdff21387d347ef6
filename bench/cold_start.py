#!/usr/bin/env python3
"""Cold start of `peri` against wasm3, side by side.

usage: cold_start.py PERI WASM3 HELLO.wasm [ROUNDS]

Runs, in interleaved rounds (default 200, after 10 warm-up rounds), `peri run HELLO`,
`wasm3 HELLO`, `peri --help` and `wasm3 --help`, each as a fresh process, and takes
from wait4() (in bench/support/rusage_run.c) each run's user+sys CPU time, peak RSS
(ru_maxrss) and wall time. Prints medians and the peri/wasm3 ratios.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time


HERE = os.path.dirname(os.path.abspath(__file__))


def launcher():
    """bench/support/rusage_run.c, built once into a temporary directory."""
    out = os.path.join(tempfile.gettempdir(), "peri-rusage-run-%d" % os.getuid())
    src = os.path.join(HERE, "support", "rusage_run.c")
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(src):
        subprocess.run(["cc", "-O2", "-o", out, src], check=True)
    return out


def one(run, cmd):
    r = subprocess.run([run] + cmd, capture_output=True, text=True, check=True)
    cpu, rss, wall, rc = r.stdout.split()
    if rc != "0":
        sys.exit("failed: %r" % cmd)
    return float(cpu), int(rss), float(wall)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__.strip().splitlines()[2])
    peri, wasm3, hello = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 200
    cases = [("peri run hello.wasm", [peri, "run", hello]), ("wasm3 hello.wasm", [wasm3, hello]),
             ("peri --help", [peri, "--help"]), ("wasm3 --help", [wasm3, "--help"])]
    res = {name: [] for name, _ in cases}
    run = launcher()
    for r in range(rounds + 10):
        for name, cmd in cases:
            m = one(run, cmd)
            if r >= 10:
                res[name].append(m)
    med = {}
    print("%-22s %12s %12s %12s" % ("command", "CPU ms", "wall ms", "peak RSS KiB"))
    for name, _ in cases:
        cpu = statistics.median(x[0] for x in res[name]) * 1e3
        wall = statistics.median(x[2] for x in res[name]) * 1e3
        rss = statistics.median(x[1] for x in res[name])
        med[name] = (cpu, wall, rss)
        print("%-22s %12.2f %12.2f %12d" % (name, cpu, wall, rss))
    for a, b in (("peri run hello.wasm", "wasm3 hello.wasm"), ("peri --help", "wasm3 --help")):
        print("%s / %s: CPU %.2fx, wall %.2fx, RSS %.2fx" % (
            a, b, med[a][0] / med[b][0] if med[b][0] else float("nan"), med[a][1] / med[b][1],
            med[a][2] / med[b][2]))


if __name__ == "__main__":
    main()
