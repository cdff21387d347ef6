#!/usr/bin/env python3
"""place.protect — the policy's protected directories (the user's Peri home, the session
store's directory) stay the host's inside a writable dir or the workspace that contains
them: no write, no new name, no rename or removal of the directory or of any parent up to
the writable dir, no symlink or hard-link swap. A symlink on the way, a writable dir at or
inside a protected one, a hard link or a symlink into the writable dir refuse the run.

usage: protect_test.py PERI
Real bubblewrap through `peri place run`, as the caller it runs as (root: the child mounts
the protections on the idmapped or reach view) and, when run as root with setpriv, as an
ordinary uid (bubblewrap mounts them). Without bubblewrap: exit 77 (skipped), or failure
under CI=true.
"""
import json, os, shutil, stat, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import missing_dependency  # noqa: E402

peri = sys.argv[1]
failures = []
checks = [0]

if not shutil.which("bwrap"):
    sys.exit(missing_dependency("bubblewrap missing"))

top = tempfile.mkdtemp(prefix="peri-protect-")
os.chmod(top, 0o755)
scratch = os.path.join(top, "scratch")
os.makedirs(scratch)
os.chmod(scratch, 0o1777)


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(name, ws, shell, policy, uid=None):
    req = {"run_id": name, "program": {"shell": shell}, "requirements": ["shell"],
           "state_class": "native_workspace_ref", "workspace": ws,
           "limits": {"wall_ms": 60000, "cpu_ms": 30000}}
    rf = os.path.join(top, name + ".json")
    pf = os.path.join(top, name + ".policy.json")
    for path, obj in ((rf, req), (pf, policy)):
        with open(path, "w") as f:
            json.dump(obj, f)
        os.chmod(path, 0o644)
    pre = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] if uid else []
    p = subprocess.run(pre + [peri, "place", "run", "--native", "yes", "--scratch", scratch,
                              "--policy", pf, rf], capture_output=True, timeout=180)
    lines = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    res = next((l["result"] for l in lines if "result" in l), {})
    if not res:
        res = {"ok": False, "error": p.stderr.decode()}
    return res


def tree(d):
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            rel = os.path.relpath(p, d)
            if stat.S_ISREG(st.st_mode):
                out[rel] = ("f", open(p, "rb").read(), st.st_nlink)
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("l", os.readlink(p))
            else:
                out[rel] = ("d", stat.S_IMODE(st.st_mode))
    return out


def chown_tree(d, uid):
    if uid is None:
        return
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            os.lchown(os.path.join(root, n), uid, uid)
    os.lchown(d, uid, uid)


def layout(tag, uid):
    """A home (the writable dir) with ~/.peri (existing) and ~/.local/share/peri (the
    store's directory, missing), and a separate workspace."""
    base = os.path.join(top, tag)
    home = os.path.join(base, "home")
    ws = os.path.join(base, "ws")
    os.makedirs(os.path.join(home, ".peri", "oauth"))
    os.makedirs(ws)
    with open(os.path.join(home, ".peri", "settings.json"), "w") as f:
        f.write('{"original": true}\n')
    with open(os.path.join(home, ".peri", "oauth", "token"), "w") as f:
        f.write("secret\n")
    os.makedirs(os.path.join(home, "evil", "hooks"))
    with open(os.path.join(home, "evil", "settings.json"), "w") as f:
        f.write('{"mcpServers": {"x": {"command": "/bin/evil"}}}\n')
    os.chmod(base, 0o755)
    chown_tree(home, uid)
    chown_tree(ws, uid)
    peri_home = os.path.join(home, ".peri")
    store = os.path.join(home, ".local", "share", "peri")
    return home, ws, peri_home, store


# Each attack prints ok<N> only when its last step succeeded.
def attacks(home, P, S):
    return [
        # writes and new names in the protected dirs
        f"echo evil > {P}/settings.json",
        f"echo evil > {P}/trust.json",
        f"echo evil > {P}/oauth/token",
        f"mkdir {P}/commands",
        f"mkdir -p {S}/x && echo x > {S}/peri.db",
        f"chmod 777 {P}",
        f"touch -d 2000-01-01 {P}/settings.json",
        # rename or remove the protected dirs, then put another in their place
        f"mv {P} {home}/old && mv {home}/evil {P}",
        f"rm -rf {P} && mv {home}/evil {P}",
        f"rmdir {S} && mkdir {S} && echo x > {S}/peri.db",
        # rename or remove a parent that only contains the protected dir
        f"mv {home}/.local {home}/l2 && mkdir -p {home}/.local/share/peri && echo x > {S}/peri.db",
        f"mv {home}/.local/share {home}/.local/s2 && mkdir -p {S} && echo x > {S}/peri.db",
        f"rm -rf {home}/.local && mkdir -p {S} && echo x > {S}/peri.db",
        # symlink swaps
        f"rm -rf {P}; ln -s {home}/evil {P} && test -L {P}",
        f"ln -sfn {home}/evil {home}/.local/share/peri2 && mv -T {home}/.local/share/peri2 {S}",
        f"ln -s {home}/evil {home}/.local/x && mv -T {home}/.local/x {home}/.local/share",
        # hard links out of the protected dir, and writes through them
        f"ln {P}/settings.json {home}/hl && echo evil > {home}/hl",
        f"ln {home}/evil/settings.json {P}/settings2.json",
        # /proc and '..' routes
        f"echo evil > /proc/self/root{P}/settings.json",
        f"cd {home}/.local/share && echo x > ../share/peri/peri.db",
        # mounts (no capability, no user namespace)
        f"mount --bind {home}/evil {P}",
        f"umount -l {P}",
        f"unshare -rm sh -c 'mount --bind {home}/evil {P}'",
        # what must keep working: the writable dir's other files, the parents' other entries
        f"echo plain > {home}/plain.txt && mkdir {home}/.local/share/other && echo y > {home}/.local/share/other/f",
    ]


def suite(tag, uid):
    home, ws, P, S = layout(tag, uid)
    before = tree(P)
    pol = {"writable": [home], "protect": [P, S]}
    acts = attacks(home, P, S)
    script = "set +e\n" + "\n".join(f"( {a} ) >/dev/null 2>&1 && echo ok{i}"
                                     for i, a in enumerate(acts))
    res = run(tag, ws, script, pol, uid)
    out = res.get("stdout", "")
    last = len(acts) - 1
    check(res.get("exitCode") == 0, f"{tag}: the run did not run: {res}")
    for i, a in enumerate(acts[:-1]):
        check(f"ok{i}\n" not in out, f"{tag}: attack {i} succeeded: {a}")
    check(f"ok{last}\n" in out, f"{tag}: ordinary writes failed: {out} {res.get('stderr', '')}")
    check(tree(P) == before, f"{tag}: the Peri home changed: {tree(P)}")
    st = os.lstat(S)
    check(stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
          and os.listdir(S) == [] and st.st_uid == (uid if uid else 0),
          f"{tag}: the store's directory was not made 0700, the caller's and empty: "
          f"{oct(st.st_mode)} {st.st_uid} {os.listdir(S) if os.path.isdir(S) else None}")
    check(os.path.isdir(os.path.join(home, ".local", "share")) and not os.path.lexists(
        os.path.join(home, "l2")) and os.path.isdir(os.path.join(home, "evil")),
        f"{tag}: a parent was renamed: {sorted(os.listdir(home))}")
    check(open(os.path.join(home, "plain.txt")).read() == "plain\n", f"{tag}: plain.txt")

    # the workspace itself containing a protected dir (a workspace of a Peri home)
    res = run(tag + "-ws", home, f"echo evil > {P}/settings.json; echo evil > .peri/trust.json; "
              f"mv .local l3; echo w > w.txt", {"protect": [P, S]}, uid)
    check(res.get("exitCode") == 0 and tree(P) == before
          and os.path.isdir(os.path.join(home, ".local")) and os.path.exists(
              os.path.join(home, "w.txt")), f"{tag}-ws: {res} {tree(P)}")

    # the workspace between the writable dir and a protected dir: pinning its path from
    # the writable side must not cover the workspace's own control-file masks
    proj = os.path.join(home, "proj")
    state = os.path.join(proj, "state")
    os.makedirs(os.path.join(proj, ".peri"))
    chown_tree(proj, uid)
    res = run(tag + "-order", proj, "set +e; echo evil > .peri/settings.json && echo W1; "
              "echo evil > AGENTS.md && echo W2; echo x > state/f && echo W3; "
              "echo ok > plain2 && echo W4", {"writable": [home], "protect": [state]}, uid)
    out = res.get("stdout", "")
    check("W1" not in out and "W2" not in out and "W3" not in out and "W4" in out
          and not os.path.exists(os.path.join(proj, ".peri", "settings.json")),
          f"{tag}-order: {res}")

    # a writable dir named through a symlink: protected where it really lives
    link = os.path.join(top, tag, "homelink")
    os.symlink(home, link)
    res = run(tag + "-wlink", ws, f"echo evil > {link}/.peri/settings.json; echo ran",
              {"writable": [link], "protect": [P]}, uid)
    check("ran" in res.get("stdout", "") and tree(P) == before, f"{tag}-wlink: {res}")
    # a protected dir named through a symlink: protected where it really lives
    plink = os.path.join(top, tag, "perilink")
    os.symlink(P, plink)
    res = run(tag + "-plink", ws, f"echo evil > {P}/settings.json; echo ran",
              {"writable": [home], "protect": [plink]}, uid)
    check("ran" in res.get("stdout", "") and tree(P) == before, f"{tag}-plink: {res}")

    # refusals: a writable dir that is, or lies in, a protected one
    for i, w in enumerate((P, os.path.join(P, "oauth"), P + "/")):
        res = run(f"{tag}-inside{i}", ws, "echo ran", {"writable": [w], "protect": [P]}, uid)
        check(res.get("ok") is False and "protected directory" in res.get("error", "")
              and "ran" not in res.get("stdout", ""), f"{tag}-inside{i}: {res}")
    res = run(f"{tag}-wsinside", os.path.join(P, "oauth"), "echo ran", {"protect": [P]}, uid)
    check(res.get("ok") is False and "protected directory" in res.get("error", ""),
          f"{tag}-wsinside: {res}")

    # refusals: a symlink on the way, as the protected dir or as a parent
    h2 = os.path.join(top, tag, "home2")
    os.makedirs(os.path.join(h2, "real"))
    os.symlink("real", os.path.join(h2, ".peri"))
    os.symlink("real", os.path.join(h2, ".local"))
    chown_tree(h2, uid)
    for name, prot in (("symp", os.path.join(h2, ".peri")),
                       ("syma", os.path.join(h2, ".local", "share", "peri"))):
        res = run(f"{tag}-{name}", ws, "echo ran", {"writable": [h2], "protect": [prot]}, uid)
        err = res.get("error", "")
        # a symlinked protected dir is protected where it lies; its link is refused
        check(res.get("ok") is False and "symlink" in err and h2 in err
              and "ran" not in res.get("stdout", ""), f"{tag}-{name}: {res}")

    # refusals: a hard link to a protected file, a symlink from it into the writable dir
    h3 = os.path.join(top, tag, "home3")
    os.makedirs(os.path.join(h3, ".peri"))
    with open(os.path.join(h3, "x"), "w") as f:
        f.write("{}\n")
    os.link(os.path.join(h3, "x"), os.path.join(h3, ".peri", "settings.json"))
    chown_tree(h3, uid)
    res = run(f"{tag}-hard", ws, "echo evil > x; echo ran",
              {"writable": [h3], "protect": [os.path.join(h3, ".peri")]}, uid)
    check(res.get("ok") is False and "hard link" in res.get("error", "")
          and open(os.path.join(h3, "x")).read() == "{}\n", f"{tag}-hard: {res}")
    os.unlink(os.path.join(h3, ".peri", "settings.json"))
    os.symlink(os.path.join(h3, "x"), os.path.join(h3, ".peri", "settings.json"))
    res = run(f"{tag}-dotlink", ws, "echo evil > x; echo ran",
              {"writable": [h3], "protect": [os.path.join(h3, ".peri")]}, uid)
    check(res.get("ok") is False and "symlink" in res.get("error", "")
          and open(os.path.join(h3, "x")).read() == "{}\n", f"{tag}-dotlink: {res}")

    # strict policy parsing
    for bad in (["relative"], [P + "/../x"], [P + "/./x"], "not-a-list", [1]):
        res = run(f"{tag}-bad", ws, "echo ran", {"protect": bad}, uid)
        check(res.get("ok") is not True and "ran" not in res.get("stdout", ""),
              f"{tag}-bad {bad}: {res}")


suite("self", None)
if os.geteuid() == 0 and shutil.which("setpriv"):
    suite("user", 4242)

print(f"{checks[0] - len(failures)}/{checks[0]} checks passed")
shutil.rmtree(top, ignore_errors=True)
sys.exit(1 if failures else 0)
