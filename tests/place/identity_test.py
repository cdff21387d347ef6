#!/usr/bin/env python3
"""place.identity — the sandboxed command never runs as host uid 0, and what it leaves in
the workspace belongs to the workspace's owner, with no setuid or setgid bit.

usage: identity_test.py PERI
Run as root (the case that matters: an agent run as root on a root-owned project). Each
case runs `peri place run` with a native_workspace_ref shell request and checks the host
side: the uid of the sandbox's processes while they run (from /proc), the owner and mode
of every file the command wrote, and that no mount is left. Needs root and bubblewrap:
else exit 77 (skipped), or failure under CI=true.
"""
import json, os, shutil, stat, subprocess, sys, tempfile, threading, time

peri = sys.argv[1]
failures = []
checks = [0]


def skip(why):
    if os.environ.get("CI") == "true":
        print(why, "under CI"); sys.exit(1)
    print(why + ": skipped"); sys.exit(77)


if not shutil.which("bwrap"):
    skip("bubblewrap missing")
if os.geteuid() != 0:
    skip("not root (this test is about a root caller)")

top = tempfile.mkdtemp(prefix="peri-identity-")
os.chmod(top, 0o755)
scratch = os.path.join(top, "scratch")
os.makedirs(scratch)


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(name, ws, shell, policy=None, limits=None):
    req = {"run_id": name, "program": {"shell": shell}, "requirements": ["shell"],
           "state_class": "native_workspace_ref", "workspace": ws}
    if limits:
        req["limits"] = limits
    rf = os.path.join(top, name + ".json")
    with open(rf, "w") as f:
        json.dump(req, f)
    args = [peri, "place", "run", "--scratch", scratch]
    if policy:
        pf = os.path.join(top, name + ".policy.json")
        with open(pf, "w") as f:
            json.dump(policy, f)
        args += ["--policy", pf]
    p = subprocess.run(args + [rf], capture_output=True, timeout=120)
    lines = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    res = next((l["result"] for l in lines if "result" in l), {})
    ev = next((l["evidence"] for l in lines if "evidence" in l), {})
    check(os.listdir(scratch) == [], f"{name}: scratch left: {os.listdir(scratch)}")
    mounts = open("/proc/self/mountinfo").read()
    check(ws not in mounts, f"{name}: a mount of the workspace is left on the host")
    return res, ev


def tree(ws):
    """(path, uid, gid, mode) of everything below ws."""
    out = []
    for root, dirs, files in os.walk(ws):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            out.append((os.path.relpath(p, ws), st.st_uid, st.st_gid, st.st_mode))
    return out


def workspace(name, uid=0, gid=0):
    ws = os.path.join(top, name)
    os.makedirs(ws)
    with open(os.path.join(ws, "existing.txt"), "w") as f:
        f.write("v1\n")
    os.chown(ws, uid, gid)
    os.chown(os.path.join(ws, "existing.txt"), uid, gid)
    return ws


# 1. root-owned workspace: the tree is not host uid 0 (seen from /proc while it runs),
#    it can edit and create files, and everything it made belongs to root.
ws = workspace("rootws")
tag = "identity-%d" % os.getpid()
seen = {}


def watch():
    for _ in range(400):
        ps = subprocess.run(["pgrep", "-f", "sleep 3.%s" % os.getpid()], capture_output=True,
                            text=True)
        pids = ps.stdout.split()
        if pids:
            for pid in pids:
                try:
                    for line in open(f"/proc/{pid}/status"):
                        if line.startswith(("Uid:", "Gid:")):
                            seen.setdefault(pid, []).append(line.split()[1:])
                except OSError:
                    pass
            return
        time.sleep(0.02)


t = threading.Thread(target=watch)
t.start()
res, ev = run("rootws", ws, f"""set -e
id -u; stat -c '%u' existing.txt
echo v2 >> existing.txt
echo new > new.txt
mkdir -p sub/deeper && echo x > sub/deeper/f
ln new.txt hard.txt; ln -s new.txt soft.txt; mkfifo fifo
cp existing.txt copy.txt && mv copy.txt moved.txt
sleep 3.{os.getpid()}
echo done""", limits={"wall_ms": 20000})
t.join()
out = res.get("stdout", "")
check(res.get("ok") is True and out.startswith("1000\n1000\n") and out.endswith("done\n"),
      f"rootws: {res}")
check(isinstance(ev.get("uid"), int) and ev["uid"] >= 2000000000, f"rootws: evidence uid {ev}")
check(seen and all(ids[0] != "0" and all(x != "0" for x in ids)
                   for v in seen.values() for ids in v), f"rootws: process ids {seen}")
check(open(os.path.join(ws, "existing.txt")).read() == "v1\nv2\n", "rootws: the edit is missing")
bad = [e for e in tree(ws) if e[1] != 0 or e[2] != 0]
check(bad == [], f"rootws: files not owned by root:root: {bad}")
check(len(tree(ws)) == 9, f"rootws: unexpected tree {tree(ws)}")

# 2. no setuid/setgid bit by any route, as root too (seccomp), ordinary modes still work
ws = workspace("setid")
shutil.copy("/bin/true", os.path.join(top, "suid-true"))
os.chmod(os.path.join(top, "suid-true"), 0o6755)
res, ev = run("setid", ws, """set +e
echo x > f; chmod u+s f; chmod g+s f; chmod 6755 f
install -m 4755 /bin/true t1
mkdir -m 2775 d1; mkdir d2; chmod g+s d2
python3 - <<'EOF'
import os
for what, fn in [
    ("open", lambda: os.close(os.open("p1", os.O_CREAT | os.O_WRONLY, 0o4755))),
    ("mkdir", lambda: os.mkdir("p2", 0o2775)),
    ("fchmod", lambda: os.fchmod(os.open("p3", os.O_CREAT | os.O_WRONLY, 0o755), 0o4755)),
    ("chmod", lambda: os.chmod("f", 0o2755)),
    ("mknod", lambda: os.mknod("p4", 0o4644)),
]:
    try:
        fn()
        print(what, "allowed")
    except OSError as e:
        print(what, "denied", e.errno)
import ctypes, platform
if platform.machine() == "x86_64":  # io_uring_setup(8, params): it would open with any mode
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    r = libc.syscall(425, 8, params)
    print("IOURING", r, ctypes.get_errno())
else:
    print("IOURING -1 38")
EOF
echo y > g; chmod 750 g; echo done""")
out = res.get("stdout", "")
check("done" in out and " allowed" not in out and out.count(" denied 1") == 5, f"setid: {out}")
check("IOURING -1 38" in out, f"setid: io_uring is not refused (ENOSYS): {out}")
bad = [e for e in tree(ws) if e[3] & (stat.S_ISUID | stat.S_ISGID)]
check(bad == [], f"setid: set-id bits left behind: {bad}")
check(stat.S_IMODE(os.stat(os.path.join(ws, "g")).st_mode) == 0o750, "setid: chmod 750 broke")
bad = [e for e in tree(ws) if e[1] != 0]
check(bad == [], f"setid: files not owned by root: {bad}")

# 3. files of another owner in a root workspace stay theirs and read-only to the run
ws = workspace("foreign")
other = os.path.join(ws, "other.txt")
with open(other, "w") as f:
    f.write("theirs\n")
os.chown(other, 4321, 4321)
os.chmod(other, 0o644)
res, ev = run("foreign", ws, "stat -c '%u' other.txt; cat other.txt; "
                             "echo mine >> other.txt && echo WROTE; rm -f other.txt && echo RM; true")
out = res.get("stdout", "")
check("theirs" in out and "WROTE" not in out, f"foreign: {out}")
st = os.stat(other)
check(st.st_uid == 4321 and open(other).read() == "theirs\n", "foreign: the file changed")
# (the directory is the run's to edit, so removing an entry is possible, as for any
# writer of the directory; what must never happen is writing as root into the file)

# 4. a workspace owned by an ordinary user: the run is that user, its files are theirs
ws = workspace("userws", 1234, 1234)
res, ev = run("userws", ws, "id -u; echo hi > made.txt; mkdir m; touch m/x")
check(ev.get("uid") == 1234 and res.get("ok") is True, f"userws: {ev} {res}")
bad = [e for e in tree(ws) if e[1] != 1234]
check(bad == [], f"userws: files not owned by the workspace's owner: {bad}")

# 5. a root-owned writable directory of the policy: idmapped like the workspace
ws = workspace("wsx")
extra = os.path.join(top, "extra")
os.makedirs(extra)
res, ev = run("writable", ws, f"echo a > {extra}/a.txt && mkdir {extra}/d && echo ok",
              policy={"writable": [extra]})
check("ok" in res.get("stdout", ""), f"writable: {res}")
bad = [e for e in tree(extra) if e[1] != 0]
check(bad == [] and len(tree(extra)) == 2, f"writable: {tree(extra)}")

# 5b. a writable dir inside the workspace, and one around it: the workspace's mapping
#     covers the first; the second is left unmapped (read-only to the run) and the run
#     still works
ws = workspace("nested")
inner = os.path.join(ws, "inner")
os.makedirs(inner)
res, ev = run("nested", ws, "echo a > inner/a.txt && echo b > b.txt && echo ok",
              policy={"writable": [inner + "/", top]})
check("ok" in res.get("stdout", ""), f"nested: {res}")
bad = [e for e in tree(ws) if e[1] != 0]
check(bad == [] and os.path.exists(os.path.join(inner, "a.txt")), f"nested: {tree(ws)}")

# 5c. a workspace below a directory the run's uid may not enter (mkdtemp's 0700 of root):
#     the run still reaches it (through its idmapped view), and it is still root's
closed = tempfile.mkdtemp(prefix="closed-", dir=top)
os.chmod(closed, 0o700)
ws = os.path.join(closed, "proj")
os.makedirs(ws)
os.makedirs(os.path.join(ws, ".git", "hooks"))
res, ev = run("closed", ws, "echo made > made.txt && cat made.txt && ls -a .git")
check(res.get("ok") is True and "made" in res.get("stdout", "") and "hooks" in res.get("stdout", ""),
      f"closed: {res}")
check(os.stat(os.path.join(ws, "made.txt")).st_uid == 0, "closed: made.txt is not root's")

# 6. the run cannot become root inside and write as root: no setuid binary helps (the
#    tree has no privilege on the host), and uid 0 inside is not mapped at all
ws = workspace("becomeroot")
res, ev = run("becomeroot", ws, "cat /proc/self/uid_map; su -c true 2>&1 | head -1; "
                                "unshare -r true 2>&1 | head -1; echo end")
out = res.get("stdout", "")
first = out.splitlines()[0].split() if out else []
check(len(first) == 3 and first[0] == "1000" and first[2] == "1" and ev.get("uid", 0) >= 2000000000
      and "unshare failed" in out, f"becomeroot: {out} {ev.get('uid')}")
check(not any(e[0] != "existing.txt" for e in tree(ws)), f"becomeroot: {tree(ws)}")

print(f"{checks[0]} checks, {len(failures)} failures")
shutil.rmtree(top, ignore_errors=True)
sys.exit(1 if failures else 0)
