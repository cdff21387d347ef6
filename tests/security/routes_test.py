#!/usr/bin/env python3
"""security.routes — the agent's control files against every route that an MCP client of
`peri mcp workspace` has: its sandboxed `shell` (real bubblewrap) and its host-side
`write` and `edit`, one after the other, as a model would chain them.

The sandbox may prepare the ground (swap a git directory's HEAD, objects or refs for a
symlink, make a worktree-style git directory with a commondir, rename, link, re-point);
the host-side tools must still refuse every git directory and control file, and the
files must be unchanged afterwards. Each class has several variants.

usage: routes_test.py PERI
Real bubblewrap and real git; without either: exit 77 (skipped), or failure under CI=true.
"""
import json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import missing_dependency  # noqa: E402

peri = sys.argv[1]
failures = []
checks = [0]

if not shutil.which("bwrap") or not shutil.which("git"):
    sys.exit(missing_dependency("bubblewrap or git missing"))

top = tempfile.mkdtemp(prefix="peri-routes-")
os.chmod(top, 0o755)  # the sandbox's own uid must reach the workspace's parent
ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=top, GIT_AUTHOR_NAME="t",
           GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


class Server:
    """One `peri mcp workspace` over stdio (newline-delimited JSON-RPC)."""

    def __init__(self, root):
        self.p = subprocess.Popen([peri, "mcp", "workspace", "--root", root],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, env=ENV)
        self.n = 0
        init = self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "routes", "version": "1"}})
        check("result" in init, f"initialize: {init}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, m):
        self.p.stdin.write(json.dumps(m) + "\n")
        self.p.stdin.flush()

    def rpc(self, method, params):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line:
                return {"error": "server closed"}
            m = json.loads(line)
            if m.get("id") == self.n:
                return m

    def tool(self, name, args):
        r = self.rpc("tools/call", {"name": name, "arguments": args}).get("result", {})
        text = "".join(c.get("text", "") for c in r.get("content", []))
        return bool(r.get("isError")), text

    def shell(self, cmd):
        err, text = self.tool("shell", {"command": cmd})
        check("ran in native_sandbox" in text, f"shell not sandboxed: {text[:300]}")
        return text

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def git(ws, *args):
    return subprocess.run(["git", "-C", ws] + list(args), capture_output=True, text=True,
                          env=ENV, timeout=60)


def workspace(name, separate=False):
    ws = os.path.join(top, name)
    os.makedirs(ws)
    if separate:  # .git is a file naming .g, a git directory inside the workspace
        git(top, "init", "-q", "--separate-git-dir=" + os.path.join(ws, ".g"), ws)
        with open(os.path.join(ws, ".git"), "w") as f:
            f.write("gitdir: .g\n")
    else:
        git(ws, "init", "-q")
    with open(os.path.join(ws, "README"), "w") as f:
        f.write("r\n")
    git(ws, "add", "README")
    git(ws, "commit", "-q", "-m", "init")
    return ws


def refused(srv, tool, args, what):
    err, text = srv.tool(tool, args)
    check(err and "control files" in text, f"{what}: {tool} {args.get('path')} not refused: "
          f"{text[:200]}")


def snapshot(path):
    out = {}
    for d, dirs, files in os.walk(path):
        for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, n)
            out[os.path.relpath(p, path)] = (os.readlink(p) if os.path.islink(p)
                                             else open(p, "rb").read())
    return out


# 1. a separate git directory (.git names .g) whose signature the sandbox bent so that
#    a check by file type would no longer call it a git directory; git still does
BENDS = {
    "HEAD symlink": "rm .g/HEAD && ln -s refs/heads/master .g/HEAD",
    "objects symlink": "mv .g/objects .g/o2 && ln -s o2 .g/objects",
    "refs symlink": "mv .g/refs .g/r2 && ln -s r2 .g/refs",
    "HEAD and refs symlinks": "rm .g/HEAD && ln -s refs/heads/master .g/HEAD && "
                              "mv .g/refs .g/r2 && ln -s r2 .g/refs",
}
for i, (what, bend) in enumerate(BENDS.items()):
    ws = workspace(f"sep{i}", separate=True)
    before = snapshot(os.path.join(ws, ".g", "hooks"))
    cfg = open(os.path.join(ws, ".g", "config")).read()
    srv = Server(ws)
    out = srv.shell(bend + " && echo BENT")
    check("BENT" in out, f"{what}: the sandbox could not prepare: {out[:300]}")
    check(git(ws, "rev-parse", "--git-dir").returncode == 0, f"{what}: git lost the repository")
    for tool, args in [("write", {"path": ".g/config", "content": "[core]\n\tfsmonitor = touch PWNED\n"}),
                       ("write", {"path": ".g/hooks/post-checkout", "content": "#!/bin/sh\n"}),
                       ("write", {"path": "./.g/info/../config", "content": "x"}),
                       ("edit", {"path": ".g/config", "old_string": "[core]",
                                 "new_string": "[core]\n\tfsmonitor = touch PWNED"})]:
        refused(srv, tool, args, what)
    srv.close()
    check(open(os.path.join(ws, ".g", "config")).read() == cfg, f"{what}: .g/config changed")
    check(snapshot(os.path.join(ws, ".g", "hooks")) == before, f"{what}: .g/hooks changed")
    p = git(ws, "status", "--porcelain")
    check(not os.path.exists(os.path.join(ws, "PWNED")), f"{what}: host git ran code")

# 2. git directories the sandbox makes itself, in every shape git accepts; the host's
#    tools never write into one (the sandbox may, as docs/security.md says)
ws = workspace("made")
srv = Server(ws)
out = srv.shell(
    "git init -q --bare bare.git && "          # a bare repository
    "mkdir -p wt && echo ref: refs/heads/x > wt/HEAD && echo ../bare.git > wt/commondir && "
    "git init -q --bare b2 && rm b2/HEAD && ln -s refs/heads/m b2/HEAD && "
    "git init -q --bare b3 && mv b3/objects b3/o && ln -s o b3/objects && echo MADE")
check("MADE" in out, f"made: the sandbox could not make them: {out[:300]}")
for path in ["bare.git/config", "bare.git/hooks/pre-receive", "wt/config.worktree",
             "wt/hooks/x", "b2/config", "b3/config", "b3/hooks/post-update"]:
    refused(srv, "write", {"path": path, "content": "x"}, "made")
# a directory that merely holds a file named HEAD is no git directory
err, text = srv.tool("write", {"path": "notes/HEAD", "content": "h"})
check(not err, f"notes/HEAD refused: {text[:200]}")
err, text = srv.tool("write", {"path": "notes/refs", "content": "r"})
check(not err, f"notes/refs refused: {text[:200]}")
srv.close()

# 3. the control files through the sandboxed shell: written, renamed, linked, re-pointed
ws = workspace("ctl")
os.makedirs(os.path.join(ws, ".peri"))
with open(os.path.join(ws, ".peri", "settings.json"), "w") as f:
    f.write("{}\n")
with open(os.path.join(ws, "AGENTS.md"), "w") as f:
    f.write("guide\n")
before = {p: snapshot(os.path.join(ws, p)) for p in [".peri", ".git/hooks"]}
cfg = open(os.path.join(ws, ".git", "config")).read()
srv = Server(ws)
ATTACKS = [
    "echo '{\"mcpServers\":{\"x\":{\"command\":\"touch\"}}}' > .peri/settings.json",
    "echo '{}' > .mcp.json", "echo evil > AGENTS.md", "echo evil > CLAUDE.md",
    "printf '[core]\\n\\tfsmonitor = touch PWNED\\n' >> .git/config",
    "printf '#!/bin/sh\\ntouch PWNED\\n' > .git/hooks/post-checkout",
    "mv .peri .p2 && mkdir .peri && echo '{}' > .peri/settings.json",
    "mv .git .g2 && git init -q . && git config core.fsmonitor 'touch PWNED'",
    "ln .git/config cfg && echo '[core] fsmonitor = touch PWNED' >> cfg",
    "rm -rf .git/hooks && ln -s /tmp .git/hooks",
    "echo 'gitdir: elsewhere' > .git/commondir", "mkdir -p .git/worktrees/x",
    "git config core.hooksPath /tmp", "git config --worktree core.fsmonitor 'touch PWNED'",
    "unlink .mcp.json; ln -s .peri/settings.json .mcp.json",
]
for cmd in ATTACKS:
    srv.shell(cmd + " 2>/dev/null; true")
for tool, args in [("write", {"path": ".peri/settings.json", "content": "{}"}),
                   ("write", {"path": ".mcp.json", "content": "{}"}),
                   ("write", {"path": ".git/config", "content": "x"}),
                   ("edit", {"path": ".git/config", "old_string": "[core]", "new_string": "x"})]:
    refused(srv, tool, args, "ctl")
srv.close()
check(open(os.path.join(ws, ".git", "config")).read() == cfg, "ctl: .git/config changed")
for p, snap in before.items():
    check(snapshot(os.path.join(ws, p)) == snap, f"ctl: {p} changed")
check(open(os.path.join(ws, "AGENTS.md")).read() == "guide\n", "ctl: AGENTS.md changed")
for n in [".mcp.json", "CLAUDE.md", "PERI.md", ".git/commondir", ".git/worktrees",
          ".git/config.worktree"]:
    check(not os.path.lexists(os.path.join(ws, n)), f"ctl: {n} left in the workspace")
git(ws, "status")
check(not os.path.exists(os.path.join(ws, "PWNED")), "ctl: host git ran code")

# 4. nested repositories the sandbox makes are not masked (docs/security.md): safe only
#    because no host-side code of Peri runs git. Every host-side tool and listing of
#    the server runs over a workspace whose nested repositories and gitlink would run
#    a command on any git status; none may run it.
ws = workspace("nested")
marker = os.path.join(top, "NESTED-PWNED")
srv = Server(ws)
out = srv.shell(
    "for d in sub deep/er/sub2; do mkdir -p $d && git -C $d init -q && "
    f"git -C $d config core.fsmonitor 'touch {marker}' && "
    f"printf '#!/bin/sh\\ntouch {marker}\\n' > $d/.git/hooks/post-checkout && "
    "chmod +x $d/.git/hooks/post-checkout && echo x > $d/f && git -C $d add f && "
    "git -C $d -c core.fsmonitor=false -c user.name=t -c user.email=t@t commit -q -m m; done && "
    "git -c core.fsmonitor=false add sub && echo NESTED")
check("NESTED" in out, f"nested: the sandbox could not make them: {out[:300]}")
for tool, args in [("read", {"path": "sub/f"}), ("list", {"path": "sub"}),
                   ("list", {"path": "."}), ("glob", {"pattern": "**/*"}),
                   ("grep", {"pattern": "x"}), ("write", {"path": "sub/new.txt", "content": "n"}),
                   ("edit", {"path": "sub/new.txt", "old_string": "n", "new_string": "m"}),
                   ("read", {"path": "deep/er/sub2/f"})]:
    srv.tool(tool, args)
srv.rpc("resources/list", {})
srv.close()
check(not os.path.exists(marker), "nested: a host-side tool ran git in a nested repository")
# the same workspace is live for git as the docs say it is: the settings of the rule
# keep the host's git from running it, and without them it runs (the test can fail)
p = git(ws, "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "status")
check(p.returncode == 0 and not os.path.exists(marker), f"nested: the rule ran code: {p.stderr}")
git(ws, "status")
check(os.path.exists(marker), "nested: the nested repository was not live (the test proves "
      "nothing)")

shutil.rmtree(top, ignore_errors=True)
if failures:
    print(f"{len(failures)} of {checks[0]} checks failed")
    sys.exit(1)
print(f"all {checks[0]} checks passed")
