#!/usr/bin/env python3
"""bench/timeit.py OUT CMD... — runs CMD with stdout+stderr to OUT and prints
"<status> <wall_us> <cpu_us>": wall clock and the child's user+sys CPU time (from
wait4), so that run.sh can report CPU time, which a loaded machine disturbs less."""
import os, subprocess, sys, time

out = open(sys.argv[1], "wb")
t0 = time.perf_counter_ns()
p = subprocess.Popen(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT)
_, status, ru = os.wait4(p.pid, 0)
wall = (time.perf_counter_ns() - t0) // 1000
cpu = int((ru.ru_utime + ru.ru_stime) * 1e6)
print(os.waitstatus_to_exitcode(status), wall, cpu)
