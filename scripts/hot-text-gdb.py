# Loaded by scripts/hot-text.sh into `gdb -batch`: runs the program gdb was given with
# the arguments in $HOT_ARGS, with a breakpoint on every function of it, and appends
# the name of each function entered to the file $HOT_OUT (each breakpoint is removed
# at its first hit, so this costs one stop per function). The real CPU runs the
# program, so the paths chosen by CPU features (SHA-256 extensions, the JIT's ISA
# levels) are the ones a user gets.
import os
import subprocess

import gdb

exe = os.path.realpath(gdb.current_progspace().filename)
funcs = []
for line in subprocess.run(["nm", exe], capture_output=True, text=True, check=True).stdout.splitlines():
    p = line.split()
    if len(p) == 3 and p[1] in "tT":
        funcs.append((int(p[0], 16), p[2]))
gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set startup-with-shell off")
gdb.execute("starti " + os.environ["HOT_ARGS"], to_string=True)
pid = gdb.selected_inferior().pid
base = None
for line in open("/proc/%d/maps" % pid):
    p = line.split()
    if len(p) >= 6 and os.path.realpath(p[5]) == exe and int(p[2], 16) == 0:
        base = int(p[0].split("-")[0], 16)
        break
if base is None:
    raise gdb.GdbError("hot-text: %s is not mapped" % exe)
bps = {}
for addr, name in funcs:
    bps[base + addr] = (gdb.Breakpoint("*0x%x" % (base + addr), internal=True), name)
with open(os.environ["HOT_OUT"], "a") as out:
    while gdb.selected_inferior().pid:
        try:
            gdb.execute("continue", to_string=True)
        except gdb.error:
            break
        if not gdb.selected_inferior().pid:
            break
        hit = bps.pop(int(gdb.parse_and_eval("$pc")), None)
        if hit:
            out.write(hit[1] + "\n")
            hit[0].delete()
