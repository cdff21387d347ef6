#!/usr/bin/env python3
"""Cold start: `peri` itself must not link the agent host's libraries (libcurl,
SQLite, jansson, OpenSSL); the agent commands reach them through peri-agent. Nor
libm: the engine rounds and takes square roots itself (src/wasm/fops.h), and libm's
text (~340 KiB resident) was an eighth of `peri run hello.wasm`'s peak RSS.
usage: cold_start_test.py PERI"""
import os
import subprocess
import sys

peri = sys.argv[1]
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
for f in failures:
    print("FAIL: " + f)
print("cold start: %s (peri needs %s)" % ("ok" if not failures else "FAILED", ", ".join(needed)))
sys.exit(1 if failures else 0)
