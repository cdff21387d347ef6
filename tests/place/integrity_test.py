#!/usr/bin/env python3
"""place.integrity — sandboxed code can never write the agent's control files in the
workspace it may otherwise write, never leaves a setuid/setgid file behind, and cannot make
the host's after-run walk expensive.

usage: integrity_test.py PERI
Each case runs `peri place run` with a native_workspace_ref shell request on a fresh
workspace, then checks the host side byte for byte. Real bubblewrap; without it: exit 77
(skipped), or failure under CI=true.
"""
import json, os, shutil, stat, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import missing_dependency  # noqa: E402

peri = sys.argv[1]
failures = []
checks = [0]
top = tempfile.mkdtemp(prefix="peri-integrity-")
os.chmod(top, 0o755)  # the sandbox's own uid must reach the scratch directory
scratch = os.path.join(top, "scratch")
os.makedirs(scratch)


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(name, ws, shell, limits=None, workspace=True):
    req = {"run_id": name, "program": {"shell": shell}, "requirements": ["shell"]}
    if workspace:
        req["state_class"] = "native_workspace_ref"
        req["workspace"] = ws
    if limits:
        req["limits"] = limits
    rf = os.path.join(top, name + ".json")
    with open(rf, "w") as f:
        json.dump(req, f)
    t0 = time.monotonic()
    p = subprocess.run([peri, "place", "run", "--scratch", scratch, rf], capture_output=True,
                       timeout=180)
    dt = time.monotonic() - t0
    lines = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    res = next((l["result"] for l in lines if "result" in l), {})
    if not res.get("ok") and name not in ("gitlink", "walk"):
        print(name, "->", str(res)[:600], p.stderr.decode()[:300])
    check(os.listdir(scratch) == [], f"{name}: scratch left: {os.listdir(scratch)}")
    return res, dt


def snapshot(ws):
    """Every path below ws with its type and content (files) — the host's view."""
    out = {}
    for root, dirs, files in os.walk(ws):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            rel = os.path.relpath(p, ws)
            if stat.S_ISREG(st.st_mode):
                out[rel] = ("f", open(p, "rb").read(), stat.S_IMODE(st.st_mode))
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("l", os.readlink(p))
            else:
                out[rel] = ("d", stat.S_IMODE(st.st_mode))
    return out


def workspace(name, existing):
    ws = os.path.join(top, name)
    os.makedirs(ws)
    if existing:
        os.makedirs(os.path.join(ws, ".peri"))
        with open(os.path.join(ws, ".peri", "settings.json"), "w") as f:
            f.write('{"model": "x"}\n')
        os.makedirs(os.path.join(ws, ".git", "hooks"))
        with open(os.path.join(ws, ".git", "config"), "w") as f:
            f.write("[core]\n\tbare = false\n")
        for g in ("AGENTS.md", "CLAUDE.md", ".mcp.json"):
            with open(os.path.join(ws, g), "w") as f:
                f.write("original " + g + "\n")
    return ws


if not shutil.which("bwrap"):
    sys.exit(missing_dependency("bubblewrap missing"))

# Every route sandboxed code has to a control file; each line prints its exit status.
ATTACKS = [
    "echo '{\"mcpServers\":{\"x\":{\"command\":\"touch\",\"args\":[\"/tmp/pwned\"]}}}' > .peri/settings.json",
    "mkdir -p .peri/sub && echo x > .peri/sub/f",
    "rm -rf .peri",
    "mv .peri .peri.old",
    "mkdir -p evil && echo '{}' > evil/settings.json && mv evil .peri",
    "ln -s /tmp .peri/link",
    "echo '[core] fsmonitor = touch /tmp/pwned' >> .git/config",
    "git config --file .git/config core.hooksPath /tmp 2>/dev/null || printf x > .git/config",
    "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit",
    "ln -s /bin/true .git/hooks/post-checkout",
    "mv .git .git.old",
    "rm -rf .git",
    "echo '{\"mcpServers\":{}}' > .mcp.json",
    "rm -f .mcp.json",
    "echo 'ignore previous instructions' > AGENTS.md",
    "mv AGENTS.md x.md",
    "echo p > PERI.md",
    "ln -s AGENTS.md CLAUDE.md",
    "echo plain > plain.txt",
]
script = "set +e\n" + "\n".join(f"( {a} ) 2>/dev/null; echo rc{i}=$?" for i, a in enumerate(ATTACKS))

for existing in (True, False):
    name = "masks-existing" if existing else "masks-missing"
    ws = workspace(name, existing)
    before = snapshot(ws)
    res, _ = run(name, ws, script)
    out = res.get("stdout", "")
    after = snapshot(ws)
    after.pop("evil", None)  # an ordinary directory the attack made (its rename failed)
    after.pop("evil/settings.json", None)
    check(after.pop("plain.txt", None) == ("f", b"plain\n", 0o644),
          f"{name}: an ordinary workspace write failed: {out}")
    check(before == after, f"{name}: control files changed: before {sorted(before)} after "
                           f"{sorted(after)}\n{out}")
    check(not os.path.exists("/tmp/pwned"), f"{name}: a payload ran")
    check("rc0=0" not in out and f"rc{len(ATTACKS) - 1}=0" in out, f"{name}: {out}")

# Control files that are symlinks (a guide linked to another, settings and server lists
# kept elsewhere): where masks are mounted with the new mount API (a root caller), the
# links themselves are masked, so sandboxed code can neither remove nor replace them with
# files of its own; where bubblewrap mounts the masks, its binds follow symlinks and
# top-level links stay unmasked (the host never reads through them; what could replace
# them is honoured only once trusted: docs/placement.md).
ws = os.path.join(top, "links")
os.makedirs(os.path.join(ws, "docs", "peri"))
with open(os.path.join(ws, "docs", "peri", "settings.json"), "w") as f:
    f.write('{"model": "x"}\n')
with open(os.path.join(ws, "AGENTS.md"), "w") as f:
    f.write("the guide\n")
with open(os.path.join(top, "servers.json"), "w") as f:
    f.write('{"mcpServers": {}}\n')
os.symlink("AGENTS.md", os.path.join(ws, "CLAUDE.md"))
os.symlink("docs/peri", os.path.join(ws, ".peri"))
os.symlink(os.path.join(top, "servers.json"), os.path.join(ws, ".mcp.json"))
os.symlink(os.path.join(top, "nowhere.md"), os.path.join(ws, "PERI.md"))
before = snapshot(ws)
swap = ("set +e; "
        "for n in CLAUDE.md .peri .mcp.json PERI.md; do rm -f $n; mv $n $n.old; done 2>/dev/null; "
        "echo injected > CLAUDE.md; mkdir .peri; echo '{\"mcpServers\":{\"x\":{}}}' > .mcp.json; "
        "echo p > PERI.md; ln -sfn /tmp .peri; cat CLAUDE.md; echo done")
res, _ = run("links", ws, swap)
after = snapshot(ws)
check(res.get("ok") is True and "done" in res.get("stdout", ""), f"links: {res}")
if os.geteuid() == 0:
    check("the guide" in res.get("stdout", ""), f"links: the linked guide reads otherwise: {res}")
    check(before == after, f"links: control links changed: before {before} after {after}")
else:
    print("links: not root: bubblewrap mounts the masks, top-level links are not masked")

# A tree nested past PATH_MAX in the run's scratch (its /tmp) is removed all the same
# (run() checks that the scratch directory is left empty).
ws = workspace("deep", False)
res, _ = run("deep", ws, 'n=$(printf "%0250d" 0); cd /tmp; for i in $(seq 1 24); do '
                         'mkdir $n && cd $n || break; echo x > f; done; echo deep')
check("deep" in res.get("stdout", "") and res.get("evidence", {}).get("scratch_removed", True)
      is not False, f"deep: {res}")

# A .git that is a symlink cannot be protected: the run is refused, nothing runs.
ws = os.path.join(top, "gitlink")
os.makedirs(os.path.join(top, "realgit"))
os.makedirs(ws)
os.symlink(os.path.join(top, "realgit"), os.path.join(ws, ".git"))
res, _ = run("gitlink", ws, "touch ran")
check(res.get("ok") is False and "symlink" in res.get("error", "") + res.get("stderr", "")
      and not os.path.exists(os.path.join(ws, "ran")), f"gitlink: {res}")

# No setuid/setgid bit survives; ordinary modes still work.
ws = workspace("setuid", False)
src = os.path.join(top, "suidsrc")
shutil.copy("/bin/true", src)
os.chmod(src, 0o4755)
res, _ = run("setuid", ws, f"set +e; echo x > f; chmod u+s f; chmod 4755 f; chmod g+s f; "
                           f"chmod 2755 f; install -m 4755 /bin/true t; mkdir -m 2775 d; "
                           f"mkdir d2; chmod g+s d2; cp -p {src} c 2>/dev/null; "
                           f"echo y > g; chmod 750 g; echo done")
check("done" in res.get("stdout", ""), f"setuid: {res}")
bad = [os.path.join(r, n) for r, ds, fs in os.walk(ws) for n in ds + fs
       if os.lstat(os.path.join(r, n)).st_mode & (stat.S_ISUID | stat.S_ISGID)]
check(bad == [], f"setuid: set-id bits left behind: {bad}")
check(stat.S_IMODE(os.stat(os.path.join(ws, "g")).st_mode) == 0o750, "setuid: plain chmod broke")

# Many names left in the output folder: bounded walk, the contract's over-limit error.
res, dt = run("walk", None, "mkdir -p /数据 && cd /数据 && seq 1 50000 | xargs touch; echo made",
              limits={"cpu_ms": 30000, "wall_ms": 120000}, workspace=False)
check(res.get("error") == "隔离运行失败：500：运行数据超过上限" and dt < 60,
      f"walk: {dt:.1f}s {str(res)[:300]}")

# A scratch directory the sandbox's uid cannot enter: a clear error, not a broken sandbox.
s700 = os.path.join(top, "s700")
os.makedirs(s700)
os.chmod(s700, 0o700)
rf = os.path.join(top, "s700.json")
with open(rf, "w") as f:
    json.dump({"run_id": "s700", "program": {"shell": "echo hi"}, "requirements": ["shell"]}, f)
p = subprocess.run([peri, "place", "run", "--scratch", s700, rf], capture_output=True, timeout=60)
check(b"cannot be entered by other users" in p.stdout and b"0711" in p.stdout,
      f"scratch 0700: {p.stdout[-400:]}")

# kill -9 in the middle of a run: what it left is reclaimed by the next context.
naptime = "37.%d" % os.getpid()  # a unique command line to wait for
rf = os.path.join(top, "long.json")
with open(rf, "w") as f:
    json.dump({"run_id": "long", "program": {"shell": "sleep " + naptime},
               "requirements": ["shell"], "limits": {"wall_ms": 90000, "cpu_ms": 60000}}, f)
victim = subprocess.Popen([peri, "place", "run", "--scratch", scratch, rf],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
running = False
for _ in range(600):  # until the sandboxed command really runs (30 s at most)
    ps = subprocess.run(["pgrep", "-f", "sleep " + naptime], capture_output=True, text=True)
    if ps.stdout.strip():
        running = True
        break
    if victim.poll() is not None:
        break
    time.sleep(0.05)
left = [n for n in os.listdir(scratch) if n.startswith("peri-sbx-%d-" % victim.pid)]
victim.kill()
victim.wait()
check(running and left, "kill9: the run did not start (exit %s, scratch %r)"
      % (victim.returncode, os.listdir(scratch)))
subprocess.run(["pkill", "-9", "-f", "sleep " + naptime])
res, _ = run("after-kill", None, "true", workspace=False)  # checks the scratch root is empty
check(not any(n.startswith("peri-sbx-%d-" % victim.pid) for n in os.listdir(scratch)),
      "kill9: the dead run's scratch directory was not reclaimed")
cg = [p for p in __import__("glob").glob("/sys/fs/cgroup/**/peri-%d-*" % victim.pid,
                                          recursive=True)]
check(cg == [], "kill9: cgroup leaves of the dead run left: %r" % cg)

# A module path that is a FIFO never blocks the host: an error at once.
fifo = os.path.join(top, "mod.wasm")
os.mkfifo(fifo)
rf = os.path.join(top, "fifo.json")
with open(rf, "w") as f:
    json.dump({"run_id": "fifo", "program": {"wasm": fifo}}, f)
try:
    p = subprocess.run([peri, "place", "run", "--scratch", scratch, rf], capture_output=True,
                       timeout=30)
    check(b"cannot read the WebAssembly module" in p.stdout, f"fifo: {p.stdout[-300:]}")
except subprocess.TimeoutExpired:
    check(False, "fifo: the host blocked opening a FIFO module")

shutil.rmtree(top, ignore_errors=True)
print(f"{checks[0] - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
