#!/usr/bin/env python3
"""mcp.workspace.confine — `peri mcp workspace` confines what it serves: its shell runs in
the native sandbox (a write outside --root never lands, the control files stay read-only),
and resources/read refuses a hard link to an outside file, a FIFO (at once), a symlink
out, and answers an ordinary file.

usage: ws_confine_test.py PERI
"""
import json, os, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import missing_dependency  # noqa: E402

peri = sys.argv[1]
fails, checks = [], [0]


def check(cond, what):
    checks[0] += 1
    if not cond:
        fails.append(what)
        print("FAIL:", what)


if not shutil.which("bwrap"):
    sys.exit(missing_dependency("bubblewrap missing"))

top = tempfile.mkdtemp(prefix="peri-wsconf-")
os.chmod(top, 0o755)
root = os.path.join(top, "root")
os.makedirs(os.path.join(root, ".peri"))
with open(os.path.join(root, "ok.txt"), "w") as f:
    f.write("fine\n")
secret = os.path.join(top, "secret.txt")
with open(secret, "w") as f:
    f.write("outside-secret-91\n")
os.link(secret, os.path.join(root, "hard.txt"))
os.symlink(secret, os.path.join(root, "sym.txt"))
os.mkfifo(os.path.join(root, "pipe"))
marker = os.path.join(top, "outside-marker")

p = subprocess.Popen([peri, "mcp", "workspace", "--root", root], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def call(i, method, params, timeout=30):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    t0 = time.monotonic()
    line = p.stdout.readline()
    return json.loads(line) if line else {}, time.monotonic() - t0


r, _ = call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}})
check("result" in r, "initialize %r" % r)
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
p.stdin.flush()
r, _ = call(2, "tools/call", {"name": "shell", "arguments": {
    "command": "touch %s; echo in > inside.txt; echo x > .peri/x; echo done" % marker}})
text = json.dumps(r)
check("native_sandbox" in text and "done" in text, "shell did not run sandboxed: %s" % text[:400])
check(not os.path.exists(marker), "a shell write outside --root landed on the host")
check(open(os.path.join(root, "inside.txt")).read() == "in\n", "a write inside --root failed")
check(not os.path.exists(os.path.join(root, ".peri", "x")), "the shell wrote into .peri")
for i, (name, want) in enumerate([("hard.txt", False), ("sym.txt", False), ("pipe", False),
                                  ("ok.txt", True)]):
    r, dt = call(10 + i, "resources/read", {"uri": "file://" + os.path.join(root, name)})
    text = json.dumps(r)
    check("outside-secret-91" not in text, "%s leaked the outside file" % name)
    check(("fine" in text) == want and ("error" in r) != want, "%s: %s" % (name, text[:300]))
    check(dt < 10, "%s took %.1f s" % (name, dt))
p.stdin.close()
check(p.wait(timeout=30) == 0, "exit after EOF")
shutil.rmtree(top, ignore_errors=True)
print("%d passed, %d failed" % (checks[0] - len(fails), len(fails)))
sys.exit(1 if fails else 0)
