#!/usr/bin/env python3
"""place.git — sandboxed code, with real git, cannot make the host's git run code in the
workspace's own repository, while git inside the sandbox still commits; nested
repositories and gitlinks it makes stay inert for the host's git invoked as
docs/security.md says (`-c core.fsmonitor=false -c core.hooksPath=/dev/null`).

usage: git_test.py PERI
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

top = tempfile.mkdtemp(prefix="peri-git-")
os.chmod(top, 0o755)  # the sandbox's own uid must reach the scratch directory
scratch = os.path.join(top, "scratch")
os.makedirs(scratch)
pwned = os.path.join(top, "PWNED")
ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=top, GIT_AUTHOR_NAME="t",
           GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def git(ws, *args, check_rc=True):
    p = subprocess.run(["git", "-C", ws] + list(args), capture_output=True, text=True, env=ENV,
                       timeout=60)
    if check_rc and p.returncode != 0:
        print("git", args, "->", p.returncode, p.stderr[:300])
    return p


def run(name, ws, shell):
    req = {"run_id": name, "program": {"shell": shell}, "requirements": ["shell"],
           "state_class": "native_workspace_ref", "workspace": ws,
           "limits": {"wall_ms": 60000, "cpu_ms": 30000}}
    rf = os.path.join(top, name + ".json")
    with open(rf, "w") as f:
        json.dump(req, f)
    p = subprocess.run([peri, "place", "run", "--scratch", scratch, rf], capture_output=True,
                       timeout=180)
    lines = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    res = next((l["result"] for l in lines if "result" in l), {})
    check(os.listdir(scratch) == [], f"{name}: scratch left: {os.listdir(scratch)}")
    return res


def repo(name):
    ws = os.path.join(top, name)
    os.makedirs(ws)
    git(ws, "init", "-q")
    with open(os.path.join(ws, "a.txt"), "w") as f:
        f.write("a\n")
    git(ws, "add", "a.txt")
    git(ws, "commit", "-qm", "init")
    return ws


def gitdir_state(ws):
    """What the host's git reads from .git that could run code or redirect it."""
    g = os.path.join(ws, ".git")
    out = {}
    for n in ("config", "commondir", "config.worktree"):
        p = os.path.join(g, n)
        out[n] = open(p, "rb").read() if os.path.isfile(p) else None
    for d in ("hooks", "modules", "worktrees"):
        p = os.path.join(g, d)
        out[d] = sorted(os.listdir(p)) if os.path.isdir(p) else None
    return out


PAYLOAD = f"touch {pwned}; false"

# 1. Every route into the top-level repository's code-running files, with real git.
ws = repo("top")
before = gitdir_state(ws)
ATTACKS = [
    f"git config core.fsmonitor '{PAYLOAD}'",
    f"git config core.hooksPath hooks2",
    f"printf '#!/bin/sh\\n{PAYLOAD}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit",
    # commondir: git would read another git directory's config instead of .git/config
    f"cp -r .git evilgit && git config --file evilgit/config core.fsmonitor '{PAYLOAD}' && "
    f"printf '../evilgit\\n' > .git/commondir",
    "printf '[core]\\n\\tfsmonitor = x\\n' > .git/config.worktree",
    "mkdir -p .git/modules/m/hooks",
    "git worktree add -q ../wt-evil",
    "mv .git/hooks .git/hooks.old",
    "rm -f .git/config",
    # an ordinary commit still works inside the sandbox
    "echo b > b.txt && git add b.txt && git -c user.name=s -c user.email=s@s commit -qm two",
]
script = "set +e\n" + "\n".join(f"( {a} ) >/dev/null 2>&1; echo rc{i}=$?"
                                for i, a in enumerate(ATTACKS))
res = run("top", ws, script)
out = res.get("stdout", "")
after = gitdir_state(ws)
check(before == after, f"top: .git's code-running files changed: {before} -> {after}\n{out}")
for i in range(len(ATTACKS) - 1):
    check(f"rc{i}=0" not in out, f"top: attack {i} ({ATTACKS[i][:60]}) succeeded: {out}")
check(f"rc{len(ATTACKS) - 1}=0" in out, f"top: a commit in the sandbox failed: {out} {res}")
log = git(ws, "log", "--format=%s").stdout.split()
check(log == ["two", "init"], f"top: the sandbox's commit is not in the host's repo: {log}")
for cmd in (["status", "--short"], ["commit", "-qm", "host", "--allow-empty"], ["diff"]):
    git(ws, *cmd, check_rc=False)
check(not os.path.exists(pwned), "top: the host's git ran a payload")
check(not os.path.exists(os.path.join(ws, "wt-evil")) and
      not os.path.exists(os.path.join(top, "wt-evil")), "top: a worktree was added")
# nothing the masks used is left in the repository
check(not os.path.exists(os.path.join(ws, ".git", "commondir")) and
      not os.path.exists(os.path.join(ws, ".git", "modules")) and
      not os.path.exists(os.path.join(ws, "AGENTS.md")), "top: a placeholder was left")

# 2. A workspace that is a submodule checkout: its .git is a gitdir file, read-only.
outer = repo("outer")
sub = repo("subsrc")
git(outer, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sm")
git(outer, "commit", "-qm", "sm")
smws = os.path.join(outer, "sm")
gitfile = open(os.path.join(smws, ".git")).read()
res = run("submodule", smws, "set +e; echo 'gitdir: ../evil' > .git; echo rc=$?; "
                             f"git config core.fsmonitor '{PAYLOAD}'; echo rc2=$?")
check(open(os.path.join(smws, ".git")).read() == gitfile and "rc=0" not in res.get("stdout", "")
      and "rc2=0" not in res.get("stdout", ""), f"submodule: {res}")
git(outer, "status", "--short", check_rc=False)
git(smws, "status", "--short", check_rc=False)
check(not os.path.exists(pwned), "submodule: the host's git ran a payload")

# 3. A nested repository and a gitlink made by the sandbox (git init sub, a hook, an
# fsmonitor, the gitlink in the top index): the host's git invoked as docs/security.md
# says runs none of it, in the top repository or in the nested one.
ws = repo("nested")
res = run("nested", ws, "set -e; git init -q sub; cd sub; "
                        f"git config core.fsmonitor '{PAYLOAD}'; "
                        f"printf '#!/bin/sh\\n{PAYLOAD}\\n' > .git/hooks/pre-commit; "
                        "chmod +x .git/hooks/pre-commit; "
                        "git -c user.name=s -c user.email=s@s commit -q --no-verify --allow-empty -m x; "
                        "cd ..; git update-index --add --cacheinfo 160000,$(git -C sub rev-parse "
                        "HEAD),sub; echo planted")
check("planted" in res.get("stdout", ""), f"nested: the setup in the sandbox failed: {res}")
SAFE = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"]
for where, cmd in ((ws, ["status", "--short"]), (ws, ["diff"]),
                   (os.path.join(ws, "sub"), ["status"]),
                   (os.path.join(ws, "sub"), ["commit", "-q", "--allow-empty", "-m", "h"])):
    git(where, *(SAFE + cmd), check_rc=False)
check(not os.path.exists(pwned), "nested: the host's git, invoked safely, ran a payload")

# 4. A .git file naming a git directory inside the workspace (git init
# --separate-git-dir=.g): that directory is masked like .git; one named through a
# symlink, "..", or a missing path (which the sandbox could re-point or create) refuses
# the run.
ws = os.path.join(top, "sep")
os.makedirs(ws)
git(ws, "init", "-q", "--separate-git-dir=" + os.path.join(ws, ".g"), ".")
git(ws, "commit", "-q", "--allow-empty", "-m", "init")
before = sorted(os.listdir(os.path.join(ws, ".g", "hooks")))
conf = open(os.path.join(ws, ".g", "config"), "rb").read()
res = run("sep", ws, "set +e; "
                     f"printf '#!/bin/sh\\n{PAYLOAD}\\n' > .g/hooks/pre-commit; echo rc0=$?; "
                     f"git config core.fsmonitor '{PAYLOAD}'; echo rc1=$?; "
                     "printf '.\\n' > .g/commondir; echo rc2=$?; mv .g .h; echo rc3=$?; "
                     "git -c user.name=s -c user.email=s@s commit -q --allow-empty -m two; "
                     "echo rc4=$?")
out = res.get("stdout", "")
check(all(f"rc{i}=0" not in out for i in range(4)) and "rc4=0" in out, f"sep: {res}")
check(sorted(os.listdir(os.path.join(ws, ".g", "hooks"))) == before and
      open(os.path.join(ws, ".g", "config"), "rb").read() == conf and
      not os.path.exists(os.path.join(ws, ".g", "commondir")), "sep: the git directory changed")
git(ws, "status", "--short", check_rc=False)
check(not os.path.exists(pwned), "sep: the host's git ran a payload")
for name, target in (("sep-link", "lnk"), ("sep-dotdot", "sub/../.g"), ("sep-missing", ".nope")):
    ws = os.path.join(top, name)
    os.makedirs(os.path.join(ws, ".g"))
    os.makedirs(os.path.join(ws, "sub"))
    os.symlink(".g", os.path.join(ws, "lnk"))
    with open(os.path.join(ws, ".git"), "w") as f:
        f.write("gitdir: " + target + "\n")
    res = run(name, ws, "touch ran")
    check(res.get("ok") is False and "git directory" in res.get("error", "") and
          not os.path.exists(os.path.join(ws, "ran")), f"{name}: {res}")

# 6. The placeholders of missing guides are no untracked files to git inside the sandbox
# (its own excludes file), so git add -A does not stage them.
ws = repo("quiet")
res = run("quiet", ws, "echo new > n.txt; git add -A; git status --porcelain; "
                       "git diff --cached --name-only")
out = res.get("stdout", "")
check("n.txt" in out and not any(g in out for g in ("AGENTS.md", "PERI.md", "CLAUDE.md",
                                                    ".mcp.json")), f"quiet: {res}")

# 5. A hooks directory (or config) that is a symlink back into the workspace: git would
# follow it, so the run is refused. One that leads out of the workspace is masked by the
# link itself where masks are mounted with the new mount API (a root caller): sandboxed
# code can neither remove it nor put hooks of its own in its place; where bubblewrap
# mounts the masks (its binds follow symlinks) the run is refused instead.
ws = repo("hooklink")
shutil.rmtree(os.path.join(ws, ".git", "hooks"))
os.makedirs(os.path.join(ws, "tools", "hooks"))
os.symlink("../tools/hooks", os.path.join(ws, ".git", "hooks"))
res = run("hooklink", ws, "touch ran")
check(res.get("ok") is False and "symlink" in res.get("error", "") and
      not os.path.exists(os.path.join(ws, "ran")), f"hooklink: {res}")
os.unlink(os.path.join(ws, ".git", "hooks"))
outside = os.path.join(top, "outside-hooks")
os.makedirs(outside)
os.symlink(outside, os.path.join(ws, ".git", "hooks"))
swap = ("set +e; touch ran; rm .git/hooks; mv .git/hooks .git/h2; rm -rf .git/hooks; "
        "mkdir .git/hooks; printf '#!/bin/sh\\necho PWNED > %s\\n' > .git/hooks/pre-commit; "
        "chmod +x .git/hooks/pre-commit; ln -sfn /tmp .git/hooks; echo swapped" % pwned)
res = run("hooklink-out", ws, swap)
if res.get("ok") is False:
    check("symlink" in res.get("error", "") and not os.path.exists(os.path.join(ws, "ran")),
          f"hooklink-out refused: {res}")
else:
    check(res.get("ok") is True and os.path.exists(os.path.join(ws, "ran")) and
          "swapped" in res.get("stdout", ""), f"hooklink-out: {res}")
    hooks = os.path.join(ws, ".git", "hooks")
    check(os.path.islink(hooks) and os.readlink(hooks) == outside and os.listdir(outside) == [],
          f"hooklink-out: the hooks link was replaced: {os.path.islink(hooks)} "
          f"{os.listdir(outside)}")
    git(ws, "commit", "-q", "--allow-empty", "-m", "after", check_rc=False)
    check(not os.path.exists(pwned), "hooklink-out: a hook the sandbox wrote ran on the host")

shutil.rmtree(top, ignore_errors=True)
print(f"{checks[0] - len(failures)} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
