#!/usr/bin/env python3
"""reach_test.py PERI: a root caller's sandbox runs as a uid of its own, which cannot
enter 0700 directories of root's. The sandbox must still work when the workspace, a
writable directory and the programs themselves (peri, peri-agent as the native WASI
runner) live below such a directory, as /root/project does, and what it writes must
land in the real workspace, owned by root. Exit 0 pass, 1 fail, 77 not root."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

peri = sys.argv[1]
if os.geteuid() != 0:
    print("SKIP: needs root (the uid switch happens only for a root caller)")
    sys.exit(77)
bad = []


def check(cond, what):
    if not cond:
        bad.append(what)
        print("FAIL: " + what)


def place(bin_dir, req, policy=None):
    args = [os.path.join(bin_dir, "peri"), "place", "run"]
    if policy:
        args += ["--policy", policy]
    p = subprocess.run(args + ["-"], input=json.dumps(req), capture_output=True, text=True,
                       timeout=120)
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    res = [l["result"] for l in lines if "result" in l]
    return p.returncode, (res[-1] if res else {}), p.stdout + p.stderr


closed = tempfile.mkdtemp(prefix="peri-reach-")  # 0700, root's
try:
    os.chmod(closed, 0o700)
    ws = os.path.join(closed, "deep", "project")
    extra = os.path.join(closed, "cache")
    os.makedirs(ws)
    os.makedirs(extra)
    bindir = os.path.join(closed, "bin")  # the programs below a closed directory too
    os.makedirs(bindir)
    build = os.path.dirname(os.path.abspath(peri))
    for name in ("peri", "peri-agent"):
        shutil.copy2(os.path.join(build, name), os.path.join(bindir, name))
    pol = os.path.join(closed, "policy.json")
    with open(pol, "w") as f:
        json.dump({"writable": [extra]}, f)

    rc, res, out = place(bindir, {
        "run_id": "reach1", "program": {"shell": "id -u; echo made > made.txt; echo x > %s/c.txt; cat made.txt" % extra},
        "requirements": ["shell"], "state_class": "native_workspace_ref", "workspace": ws}, pol)
    check(rc == 0 and res.get("ok"), "shell in a workspace below a 0700 directory: rc %d\n%s" % (rc, out))
    uid = (res.get("stdout") or "").split("\n")[0]
    check(uid.isdigit() and uid != "0", "the sandbox ran as uid %r" % uid)
    made = os.path.join(ws, "made.txt")
    check(os.path.exists(made) and open(made).read() == "made\n", "the file did not land in the workspace")
    if os.path.exists(made):
        check(os.stat(made).st_uid == 0, "the workspace file is owned by %d, not root" % os.stat(made).st_uid)
    check(os.path.exists(os.path.join(extra, "c.txt")), "the policy's writable dir was not written")

    # the native WASI runner (peri run) below a closed directory
    probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "room", "fixtures", "hello.wasm")
    with open(pol, "w") as f:
        json.dump({"network": True}, f)
    # a network request is refused by the room and promoted to the native sandbox
    rc, res, out = place(bindir, {"run_id": "reach2", "program": {"wasm": os.path.abspath(probe)},
                                  "network": True}, pol)
    check(rc == 0 and res.get("ok") and res.get("stdout") == "hello\n" and res.get("backend") == "native_sandbox",
          "the native WASI runner below a 0700 directory: rc %d\n%s" % (rc, out))

    # peri-agent ignores SIGPIPE for itself; the sandboxed command must not inherit it
    # (`yes | head` would spin until the CPU limit)
    rc, res, out = place(bindir, {"run_id": "reach3", "program": {"shell": "grep -E '^SigIgn' /proc/$$/status"},
                                  "requirements": ["shell"]})
    # signals 1-31 (SIGPIPE is 13); glibc keeps 32 and 33 for itself and never lets a
    # program change their disposition, so whatever the caller had there stays
    ign = (res.get("stdout") or "").split("\t")[-1].strip()
    check(rc == 0 and res.get("ok") and ign and int(ign, 16) & 0x7FFFFFFF == 0,
          "the sandboxed shell inherited ignored signals (%r): rc %d\n%s" % (ign, rc, out[-800:]))

    # nothing of the run is left mounted or behind in the scratch directory
    mounts = open("/proc/self/mountinfo").read()
    check(closed not in mounts, "a mount of the run is still visible on the host")
finally:
    shutil.rmtree(closed, ignore_errors=True)

if bad:
    sys.exit(1)
print("PASS: the sandbox reaches workspaces, writable dirs and runners below 0700 directories")
