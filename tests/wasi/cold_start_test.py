#!/usr/bin/env python3
"""Cold start: `peri` itself must not link the agent host's libraries (libcurl,
SQLite, jansson, OpenSSL); the agent commands reach them through peri-agent. Nor
libm: the engine rounds and takes square roots itself (src/wasm/fops.h), and libm's
text (~340 KiB resident) was an eighth of `peri run hello.wasm`'s peak RSS.
And `peri run hello.wasm` (over an empty compiled-code cache, which it fills, and
again, reading it) and `peri --help` must enter no function of peri outside
its hot text (cmake/hot_text.cmake, the functions cmake/hot_text.txt lists): each one
outside costs another 64 KiB window of resident text. They run with the rest of the
text made inaccessible (tests/wasi/text_trap.c, preloaded), so such a function is a
SIGSEGV; and the list must name functions peri has (a few may be missing: another
compiler may inline them). Both fail when the list is stale: rerun scripts/hot-text.sh.
The list is made from a Release build; a sanitizer or -O0 build inlines other
functions, so there (MODE other) the names are counted, not checked: the Release
build that `make test` also runs holds the list to them.
The trap runs in Release builds only (MODE release; other: at -O0 every static inline
function is one of its own, and ASan refuses a preloaded library ahead of its runtime;
ungrouped: the linker does not take cmake/hot_text.cmake's script, e.g. gold, so there
is no hot text to check).
usage: cold_start_test.py PERI TEXT_TRAP.so SOURCE_DIR MODE"""
import os
import re
import subprocess
import sys
import tempfile

peri, probe, src, mode = sys.argv[1:5]
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
# base names: GCC's clones (run.constprop.0) carry a suffix after the first dot
funcs = {p[2].split(".")[0] for p in (l.split() for l in r.stdout.splitlines())
         if len(p) == 3 and p[1] in "tT"}
gone = [n for n in hot if n not in funcs]
if r.returncode != 0 or not funcs or (mode != "other" and len(gone) > 5):
    failures.append("cmake/hot_text.txt names %d functions peri lacks (rerun "
                    "scripts/hot-text.sh): %s" % (len(gone), gone[:10]))
hello = os.path.join(src, "tests", "room", "fixtures", "hello.wasm")
r = subprocess.run(["readelf", "-SW", peri], capture_output=True, text=True)
sec = {m.group(1): (int(m.group(2), 16), int(m.group(3), 16)) for m in
       re.finditer(r"^\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)",
                   r.stdout, re.M)}
if mode == "ungrouped":
    pass
elif ".text.peri_hot" not in sec or ".text" not in sec:
    failures.append("peri has no .text.peri_hot before .text (cmake/hot_text.cmake): %s" % sorted(sec))
elif mode == "release":
    off, size = sec[".text"]  # the cold text, whole pages of it (its first page holds hot code)
    lo, hi = (off + 4095) // 4096 * 4096, (off + size) // 4096 * 4096
    cache = tempfile.TemporaryDirectory()  # the compiled-code cache: written, then read
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(probe), PERI_TEXT_TRAP="%x:%x" % (lo, hi),
               PERI_CACHE_DIR=cache.name, XDG_CACHE_HOME=cache.name)
    for args, want in ((["run", hello], "hello\n"), (["run", hello], "hello\n"), (["--help"], None)):
        r = subprocess.run([peri] + args, capture_output=True, text=True, env=env)
        if r.returncode != 0 or (want is not None and r.stdout != want):
            failures.append("peri %s entered the cold text (%x-%x of the file: rc %d): a function "
                            "of the run path is missing from cmake/hot_text.txt, rerun "
                            "scripts/hot-text.sh; stderr %r" % (" ".join(args), lo, hi, r.returncode,
                                                                r.stderr[-300:]))
for f in failures:
    print("FAIL: " + f)
print("cold start: %s (peri needs %s; %s)" % (
    "ok" if not failures else "FAILED", ", ".join(needed),
    "the run path stays in the hot text" if mode == "release" else
    "hot text not run-checked, %d of its names inlined here" % len(gone)))
sys.exit(1 if failures else 0)
