#!/usr/bin/env python3
"""place.attack — more routes by which sandboxed code might write the agent's control
files, several variants per class, each against real bubblewrap: hard links, renames
onto a mask, symlinks into a mask, "..", /proc, parents that do not exist yet, mounts
and namespaces, case variants and lookalikes (ordinary files, the real ones untouched),
FIFOs in a control path, a second process's run ending in the middle of a first
one's (the placeholders are shared across processes through the workspace lock), and a
kill between making a placeholder and recording it.

usage: attack_test.py PERI
Without bubblewrap: exit 77 (skipped), or failure under CI=true.
"""
import json, os, shutil, stat, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import missing_dependency  # noqa: E402

peri = sys.argv[1]
failures = []
checks = [0]

if not shutil.which("bwrap"):
    sys.exit(missing_dependency("bubblewrap missing"))

top = tempfile.mkdtemp(prefix="peri-attack-")
os.chmod(top, 0o755)
scratch = os.path.join(top, "scratch")
os.makedirs(scratch)


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def request(name, ws, shell, wall_ms=60000):
    req = {"run_id": name, "program": {"shell": shell}, "requirements": ["shell"],
           "state_class": "native_workspace_ref", "workspace": ws,
           "limits": {"wall_ms": wall_ms, "cpu_ms": 30000}}
    rf = os.path.join(top, name + ".json")
    with open(rf, "w") as f:
        json.dump(req, f)
    return [peri, "place", "run", "--scratch", scratch, rf]


def result(stdout):
    lines = [json.loads(l) for l in stdout.decode().splitlines() if l.strip()]
    return next((l["result"] for l in lines if "result" in l), {})


def run(name, ws, shell):
    p = subprocess.run(request(name, ws, shell), capture_output=True, timeout=180)
    return result(p.stdout)


def snapshot(ws):
    out = {}
    for root, dirs, files in os.walk(ws):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            rel = os.path.relpath(p, ws)
            if stat.S_ISREG(st.st_mode):
                out[rel] = ("f", open(p, "rb").read())
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("l", os.readlink(p))
            elif stat.S_ISFIFO(st.st_mode):
                out[rel] = ("p",)
            else:
                out[rel] = ("d",)
    return out


CONTROL = (".peri", ".mcp.json", "AGENTS.md", "PERI.md", "CLAUDE.md", ".git")


def control_view(ws):
    """The control paths of a snapshot (what the host acts on)."""
    return {k: v for k, v in snapshot(ws).items()
            if k.split("/")[0] in CONTROL}


def workspace(name, existing):
    ws = os.path.join(top, name)
    os.makedirs(os.path.join(ws, "sub"))
    if existing:
        os.makedirs(os.path.join(ws, ".peri"))
        with open(os.path.join(ws, ".peri", "settings.json"), "w") as f:
            f.write("{}\n")
        os.makedirs(os.path.join(ws, ".git", "hooks"))
        with open(os.path.join(ws, ".git", "config"), "w") as f:
            f.write("[core]\n")
        for g in ("AGENTS.md", ".mcp.json"):
            with open(os.path.join(ws, g), "w") as f:
                f.write("original\n")
    return ws


# Each attack prints ok<N> only when its last step succeeded.
ATTACKS = [
    # hard links to a control file, then a write through the link
    "ln .git/config x1 && echo evil >> x1",
    "ln AGENTS.md x2 && echo evil >> x2",
    "ln .peri/settings.json x3 && echo evil > x3",
    # renames onto a mask
    "echo evil > y1 && mv -f y1 AGENTS.md",
    "echo evil > y2 && mv -f y2 .git/config",
    "mkdir -p y3/hooks && mv -fT y3 .git",
    "mkdir -p y4 && echo '{}' > y4/settings.json && mv -fT y4 .peri",
    "echo evil > y5 && mv -f y5 PERI.md",
    # symlinks that lead into a mask
    "ln -s .git/hooks h1 && echo x > h1/pre-commit",
    "ln -s AGENTS.md h2 && echo evil > h2",
    "ln -s ../.peri sub/h3 && echo x > sub/h3/settings.json",
    # '..' and /proc routes
    "cd sub && echo evil > ../AGENTS.md",
    "echo x > sub/../.peri/settings.json",
    "echo x > /proc/self/cwd/.git/hooks/post-checkout",
    "echo x > /proc/self/root$PWD/CLAUDE.md",
    # parents that do not exist yet
    "mkdir -p .peri/commands && echo x > .peri/commands/c.md",
    "mkdir -p .git/hooks/sub && echo x > .git/hooks/sub/y",
    "mkdir -p .git/modules/m/hooks",
    # mounts and namespaces
    "mount --bind sub .peri",
    "unshare -rm sh -c 'mount --bind sub .peri && echo x > .peri/settings.json'",
    "umount -l AGENTS.md",
    # chmod/chown of a mask
    "chmod 666 AGENTS.md && echo evil > AGENTS.md",
    "touch -d 2000-01-01 .git/config",
    # the ordinary write that must keep working
    "echo plain > plain.txt",
]
script = "set +e\n" + "\n".join(f"( {a} ) >/dev/null 2>&1 && echo ok{i}"
                                for i, a in enumerate(ATTACKS))

for existing in (True, False):
    name = "attack-existing" if existing else "attack-missing"
    ws = workspace(name, existing)
    before = control_view(ws)
    res = run(name, ws, script)
    out = res.get("stdout", "")
    after = control_view(ws)
    check(before == after, f"{name}: control paths changed:\n{before}\n{after}\n{out}")
    won = [ATTACKS[i] for i in range(len(ATTACKS) - 1) if f"ok{i}\n" in out]
    check(won == [], f"{name}: these attacks succeeded: {won}")
    check(f"ok{len(ATTACKS) - 1}\n" in out, f"{name}: an ordinary write failed: {res}")
    left = [n for n in os.listdir(ws) if n in CONTROL and n not in before]
    check(left == [], f"{name}: placeholders left behind: {left}")

# Case variants and lookalikes are ordinary files (the host reads the exact names);
# writing them never touches the real ones.
ws = workspace("lookalike", True)
before = control_view(ws)
res = run("lookalike", ws, "set -e; mkdir -p .PERI .Peri .\u0440eri; "
                           "echo x > .PERI/settings.json; echo x > agents.md; "
                           "echo x > AGENTS.MD; echo x > 'AGENTS.md '; echo x > \u0410GENTS.md; "
                           "echo x > '.git\u200b'; echo done")
check("done" in res.get("stdout", "") and control_view(ws) == before,
      f"lookalike: {res.get('stdout')} {res.get('stderr')}")

# A FIFO or a device node where a control file should be: masked like a file, and the
# host never opens it (the run neither blocks nor fails).
ws = workspace("fifo", False)
os.mkfifo(os.path.join(ws, "AGENTS.md"))
os.mkfifo(os.path.join(ws, ".mcp.json"))
t0 = time.monotonic()
res = run("fifo", ws, "set +e; echo evil > .mcp.json & sleep 0.2; kill $! 2>/dev/null; "
                      "rm -f AGENTS.md && echo removed; echo done")
check("done" in res.get("stdout", "") and "removed" not in res.get("stdout", "") and
      stat.S_ISFIFO(os.lstat(os.path.join(ws, "AGENTS.md")).st_mode) and
      time.monotonic() - t0 < 60, f"fifo: {res}")

# Two processes, one workspace whose control files are missing: the short run ends
# while the long one is still going; the long run's masks must hold to its end.
ws = workspace("concurrent", False)
long_cmd = request("long", ws, "sleep 4; set +e; echo evil > AGENTS.md && echo wrote1; "
                               "echo '{}' > .mcp.json && echo wrote2; "
                               "mkdir .peri/x 2>/dev/null && echo wrote3; echo done",
                   wall_ms=90000)
p_long = subprocess.Popen(long_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
time.sleep(1.5)
for i in range(3):
    r = run(f"short{i}", ws, "true")
    check(r.get("ok") is True, f"concurrent: a short run failed: {r}")
out, _ = p_long.communicate(timeout=180)
r = result(out)
check("done" in r.get("stdout", "") and "wrote" not in r.get("stdout", ""),
      f"concurrent: the long run wrote a control file after a short one ended: {r}")
left = sorted(n for n in os.listdir(ws) if n in CONTROL)
check(left == [], f"concurrent: placeholders left behind or written: {left}")

# kill -9 of the process in the middle of a run: its placeholders (empty guide files in
# the user's project) are removed by the next process's context, and the journal with them;
# a file the user made meanwhile under a placeholder's name is not touched.
ws = workspace("killed", False)
p_kill = subprocess.Popen(request("killed", ws, "sleep 30", wall_ms=90000),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
for _ in range(200):
    if all(os.path.exists(os.path.join(ws, g)) for g in ("AGENTS.md", "PERI.md")):
        break
    time.sleep(0.05)
made = sorted(n for n in os.listdir(ws) if n in CONTROL)
check("AGENTS.md" in made, f"killed: no placeholder to leave behind: {made}")
p_kill.kill()
p_kill.communicate(timeout=60)
time.sleep(0.5)  # the sandbox dies with its parent
journals = [n for n in os.listdir(scratch) if n.startswith(f"peri-masks-{p_kill.pid}-")]
check(len(journals) == 1, f"killed: the journal of the killed process: {os.listdir(scratch)}")
os.unlink(os.path.join(ws, "PERI.md"))
with open(os.path.join(ws, "PERI.md"), "w") as f:
    pass  # the user's own (empty) file under a placeholder's name: another inode
run("after-kill", workspace("other", False), "true")  # a new context reclaims
left = sorted(n for n in os.listdir(ws) if n in CONTROL)
check(left == ["PERI.md"], f"killed: placeholders left in the project: {left}")
check(not any(n.startswith(f"peri-masks-{p_kill.pid}-") for n in os.listdir(scratch)),
      "killed: the dead process's journal stayed")

# A kill between making a placeholder and recording it: the intent written before the
# make (no identity: device 0, inode 0, no change time) lets the next context remove it
# when it is still an empty placeholder and no full record of it follows; anything
# else under such a name (a file with content) is left alone.
ws = workspace("intent", False)
dead = subprocess.Popen(["true"])
dead.wait()
made_git = os.path.join(ws, ".git")
os.mkdir(made_git)
made_guide = os.path.join(ws, "CLAUDE.md")
with open(made_guide, "w") as f:
    pass
os.chmod(made_guide, 0o444)
users = os.path.join(ws, "AGENTS.md")
with open(users, "w") as f:
    f.write("the user's own guide\n")
rec = b""
for kind, path in (("d", made_git), ("f", made_guide), ("f", users)):
    rec += b"\0".join([kind.encode(), b"0", b"0", b"", ws.encode(), path.encode()]) + b"\0"
fd, jpath = tempfile.mkstemp(prefix=f"peri-masks-{dead.pid}-", dir=scratch)
os.write(fd, rec)
os.close(fd)
run("after-intent", workspace("other2", False), "true")  # a new context reclaims
left = sorted(n for n in os.listdir(ws) if n in CONTROL)
check(left == ["AGENTS.md"], f"intent: placeholders of a kill before their record: {left}")
check(not os.path.exists(jpath), "intent: the dead process's journal stayed")

shutil.rmtree(top, ignore_errors=True)
print(f"{checks[0] - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
