#!/usr/bin/env python3
"""symbols.py LIBPERI_A INCLUDE_DIR CC JANSSON_INCLUDES: the library's outside surface.

1. Naming rule. Every global symbol libperi.a defines starts with its layer's prefix
   (pb_ and pj_ for base's JSON library, pw_ pr_ pl_ pm_ pst_ ptl_ pmcp_ pag_ prt_ pct_ pacp_ psdk_). The single-underscore
   form (pw_name) is the public API: it must be declared in include/peri/*.h. What files
   of a layer share internally uses the double-underscore form (pw__name), declared in
   the layer's own *_int.h; it never appears in a public header.
2. Every public header compiles on its own as C17 and as C++17 and C++23
   (-Wall -Wextra -Werror), and wraps its declarations in extern "C".
3. No library object references stderr, stdout, perror, getenv or secure_getenv: the
   library reports through its log hook and reads no environment.
Exit 0 = all hold; 1 = each violation listed.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

lib, incdir, cc, jansson = sys.argv[1:5]
PREFIXES = ["pb", "pj", "pw", "pr", "pl", "pm", "pst", "ptl", "pmcp", "pag", "prt", "pct", "pacp", "psdk", "pn", "pwh", "paw"]
problems = []

headers = sorted(glob.glob(os.path.join(incdir, "*.h")))
public_words = set()
for h in headers:
    public_words |= set(re.findall(r"\b[A-Za-z_][A-Za-z0-9_]*\b", open(h).read()))

nm = subprocess.run(["nm", "-A", "-g", "--defined-only", lib], capture_output=True, text=True)
if nm.returncode != 0:
    print("FAIL: nm %s: %s" % (lib, nm.stderr))
    sys.exit(1)
defined = 0
for line in nm.stdout.splitlines():
    parts = line.split()
    if len(parts) != 3:
        continue
    where, _kind, sym = parts
    obj = where.split(":")[1] if ":" in where else where
    if sym.startswith(("__odr_asan", "__asan", "___asan", "__ubsan", "__sancov")):
        continue  # the sanitizers' own companions of our symbols
    defined += 1
    m = re.match(r"^(%s)(__?)([A-Za-z0-9].*)$" % "|".join(PREFIXES), sym, re.I)
    if not m:
        problems.append("%s defines %s, which has no layer prefix" % (obj, sym))
        continue
    internal = m.group(2) == "__"
    if internal and sym in public_words:
        problems.append("%s: %s is internal (double underscore) but named in a public header"
                        % (obj, sym))
    if not internal and sym not in public_words:
        problems.append("%s: %s has the public form but no public header declares it "
                        "(internal names use %s__)" % (obj, sym, m.group(1)))
if defined < 500:
    problems.append("only %d symbols read from %s: is nm working?" % (defined, lib))

und = subprocess.run(["nm", "-A", "-u", lib], capture_output=True, text=True).stdout
for line in und.splitlines():
    parts = line.split()
    sym = parts[-1] if parts else ""
    if sym in ("stderr", "stdout", "perror", "getenv", "secure_getenv"):
        problems.append("%s uses %s (library code reports through pb_logger and reads no "
                        "environment)" % (parts[0].rstrip(":"), sym))

cxx = "g++" if "gcc" in os.path.basename(cc) or os.path.basename(cc) == "cc" else "clang++"
incs = ["-I" + os.path.dirname(incdir)] + ["-I" + d for d in jansson.split(";") if d]
with tempfile.TemporaryDirectory() as tmp:
    for h in headers:
        name = os.path.basename(h)
        if 'extern "C"' not in open(h).read():
            problems.append('%s has no extern "C" block' % name)
        src = os.path.join(tmp, "t.c")
        with open(src, "w") as f:
            f.write('#include "peri/%s"\n#include "peri/%s"\n' % (name, name))
        for tool, std, lang in ((cc, "c17", "c"), (cxx, "c++17", "c++"), (cxx, "c++2b", "c++")):
            r = subprocess.run([tool, "-x", lang, "-std=" + std, "-fsyntax-only", "-Wall",
                                "-Wextra", "-Werror"] + incs + [src],
                               capture_output=True, text=True)
            if r.returncode != 0:
                problems.append("%s does not compile alone as %s:\n%s" % (name, std, r.stderr[:1500]))

for p in problems:
    print("FAIL: " + p)
if problems:
    print("%d problem(s)" % len(problems))
    sys.exit(1)
print("PASS: %d symbols follow the naming rule; %d headers compile alone as C17, C++17 and C++23"
      % (defined, len(headers)))
