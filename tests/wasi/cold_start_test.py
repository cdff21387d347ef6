#!/usr/bin/env python3
"""Cold start: `peri` itself must not link the agent host's libraries (libcurl,
SQLite, jansson, OpenSSL); the agent commands reach them through peri-agent. Nor
libm: the engine rounds and takes square roots itself (src/wasm/fops.h), and libm's
text (~340 KiB resident) was an eighth of `peri run hello.wasm`'s peak RSS.
And `peri run hello.wasm` must leave little of peri's own text resident: the run path
is placed together (cmake/hot_text.cmake, cmake/hot_text.txt); a function of the
run path outside the list costs a 64 KiB window each. The list must name only
functions peri has. Both fail when the list is stale: rerun scripts/hot-text.sh.
usage: cold_start_test.py PERI TEXT_PROBE.so SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

peri, probe, src = sys.argv[1:4]
# peri's text resident at exit: the 64 KiB windows around what the run touched. With
# the run path together (~180 KiB of functions) that is 220-296 KiB, depending on where
# the load address puts the window boundaries; without it, all ~540 KiB. A stale list
# costs up to a window per function left out, so this fails at about two.
TEXT_KIB = 352
failures = []
r = subprocess.run(["readelf", "-d", peri], capture_output=True, text=True)
if r.returncode != 0:
    sys.exit("readelf failed: %s" % r.stderr)
needed = [l.split("[")[1].rstrip("]") for l in r.stdout.splitlines() if "(NEEDED)" in l]
heavy = [n for n in needed if any(k in n for k in ("curl", "sqlite", "jansson", "crypto", "ssl"))
         or n.startswith("libm.")]
if heavy:
    failures.append("peri links %s (needed: %s)" % (heavy, needed))
agent = os.path.join(os.path.dirname(os.path.abspath(peri)), "peri-agent")
if not os.access(agent, os.X_OK):
    failures.append("no peri-agent next to peri")
r = subprocess.run([peri, "print", "--help"], capture_output=True, text=True)
if r.returncode != 0 or "usage: peri print" not in r.stdout + r.stderr:
    failures.append("peri print --help through peri-agent: %r" % (r,))
hot = [l.strip() for l in open(os.path.join(src, "cmake", "hot_text.txt"))
       if l.strip() and not l.startswith("#")]
r = subprocess.run(["nm", peri], capture_output=True, text=True)
funcs = {p[2] for p in (l.split() for l in r.stdout.splitlines()) if len(p) == 3 and p[1] in "tT"}
gone = [n for n in hot if n not in funcs]
if r.returncode != 0 or not funcs or gone:
    failures.append("cmake/hot_text.txt names functions peri lacks (rerun scripts/hot-text.sh): %s"
                    % gone[:10])
hello = os.path.join(src, "tests", "room", "fixtures", "hello.wasm")
worst = 0
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "text")
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(probe), PERI_TEXT_PROBE_OUT=out)
    for _ in range(10):  # the load address moves the 64 KiB windows: take the worst
        r = subprocess.run([peri, "run", hello], capture_output=True, text=True, env=env)
        if r.returncode != 0 or r.stdout != "hello\n" or not os.path.exists(out):
            failures.append("peri run hello.wasm with the probe: %r" % (r,))
            break
        worst = max(worst, int(open(out).read()))
        os.unlink(out)
if worst > TEXT_KIB:
    failures.append("peri run hello.wasm left %d KiB of peri's text resident (at most %d): is "
                    "cmake/hot_text.txt stale? rerun scripts/hot-text.sh" % (worst, TEXT_KIB))
for f in failures:
    print("FAIL: " + f)
print("cold start: %s (peri needs %s; peri's text resident after a run: %d KiB at most)" % (
    "ok" if not failures else "FAILED", ", ".join(needed), worst))
sys.exit(1 if failures else 0)
