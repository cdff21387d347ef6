#!/usr/bin/env python3
"""security.home — the user's Peri home stays the host's when the settings make a
directory that contains it writable for the sandbox (`"sandbox": {"writable": [HOME]}`):
a model's `shell` call (real bubblewrap, through `peri acp` and a scripted mock model)
cannot write ~/.peri/settings.json (whose MCP servers start on the host), create a file
there, or rename ~/.peri away, nor plant a file in the code cache (~/.cache/peri/code)
or move it away, while the rest of HOME stays writable. A writable dir that
is the Peri home (also when named with ".."), lies inside it, or is the session store's
directory refuses the call.

usage: home_test.py PERI MOCK_MODEL_PY
Without bubblewrap: exit 77 (skipped), or failure under CI=true.
"""
import json, os, shutil, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import Env, check, missing_dependency, prompt, run_scenario  # noqa: E402

if len(sys.argv) != 3:
    print(__doc__, file=sys.stderr)
    sys.exit(2)
peri, mock_py = sys.argv[1:]
if not shutil.which("bwrap"):
    sys.exit(missing_dependency("bubblewrap missing"))


def tool_text(a, sid, call_id):
    out = []
    for _, u in a.updates(sid):
        if u.get("sessionUpdate") in ("tool_call", "tool_call_update") and \
                u.get("toolCallId") == call_id:
            out.append(json.dumps(u.get("content") or u.get("rawOutput") or ""))
    return "\n".join(out)


def shell_turn(E, a, sid, call_id, command):
    E.mock.script([{"tool_calls": [{"id": call_id, "name": "shell",
                                    "arguments": {"command": command}}]},
                   {"text": "done"}])
    r = a.response(prompt(a, sid, "run it"), timeout=60)
    check(r.get("result", {}).get("stopReason") == "end_turn", "turn: %r" % r)
    return tool_text(a, sid, call_id)


def peri_home(E):
    out = {}
    for d, dirs, files in os.walk(os.path.join(E.home, ".peri")):
        for n in dirs + files:
            p = os.path.join(d, n)
            out[os.path.relpath(p, E.home)] = open(p).read() if os.path.isfile(p) else "dir"
    return out


def scenario(E):
    home = E.home
    E.settings({"maxRetries": 0, "sandbox": {"writable": [home]}})
    a = E.agent()
    sid = E.new_session(a)
    before = peri_home(E)  # after the agent's own writes (machine-id)
    cache = os.path.join(home, ".cache", "peri", "code")  # the default code cache
    evil = json.dumps({"mcpServers": {"x": {"command": "/bin/sh", "args": ["-c", "touch /tmp/pwn"]}}})
    cmd = ("set +e\n"
           f"echo '{evil}' > {home}/.peri/settings.json && echo $((40+2))-WROTE-SETTINGS\n"
           f"echo x > {home}/.peri/trust.json && echo $((40+2))-WROTE-TRUST\n"
           f"mv {home}/.peri {home}/old && mkdir {home}/.peri && echo '{evil}' > "
           f"{home}/.peri/settings.json && echo $((40+2))-SWAPPED\n"
           f"echo plain > {home}/plain.txt && echo $((40+2))-PLAIN-OK\n"
           # the code cache: its files decide what machine code the host runs
           f"echo x > {cache}/0.pcc && echo $((40+2))-WROTE-CACHE\n"
           f"mv {cache} {cache}.old && echo $((40+2))-MOVED-CACHE\n"
           f"mv {home}/.cache {home}/cache2 && echo $((40+2))-MOVED-CACHE-PARENT\n")
    out = shell_turn(E, a, sid, "sh1", cmd)
    check("42-PLAIN-OK" in out, "the writable home was not writable (or no sandbox): %s" % out)
    for bad in ("42-WROTE-SETTINGS", "42-WROTE-TRUST", "42-SWAPPED", "42-WROTE-CACHE",
                "42-MOVED-CACHE", "42-MOVED-CACHE-PARENT"):
        check(bad not in out, "%s: %s" % (bad, out))
    check(os.path.isdir(cache) and not os.path.lexists(os.path.join(cache, "0.pcc")),
          "the code cache was written: %r" % (os.listdir(cache) if os.path.isdir(cache) else None))
    check(peri_home(E) == before, "~/.peri changed: %r" % peri_home(E))
    check(not os.path.lexists(os.path.join(home, "old")), "~/.peri was renamed")
    check(open(os.path.join(home, "plain.txt")).read() == "plain\n", "plain.txt")
    a.close_stdin()

    # a writable dir that is the Peri home, lies inside it, or is the store's directory
    os.makedirs(os.path.join(home, "sub"))
    for w in (os.path.join(home, ".peri"), os.path.join(home, ".peri", "oauth"),
              home + "/sub/../.peri", E.tmp):
        os.makedirs(w, exist_ok=True)
        E.settings({"maxRetries": 0, "sandbox": {"writable": [w]}})
        db = open(E.db, "rb").read() if os.path.exists(E.db) else None
        a = E.agent()
        sid = E.new_session(a)
        before = peri_home(E)
        out = shell_turn(E, a, sid, "sh2", f"echo x > {w}/settings.json && echo $((40+2))-WROTE")
        check("42-WROTE" not in out and "protected directory" in out,
              "writable %s was not refused: %s" % (w, out))
        check(not os.path.exists(os.path.join(w, "settings.json")) or
              os.path.realpath(w) == os.path.join(home, ".peri"), "a file was written in %s" % w)
        a.close_stdin()
        check(peri_home(E) == before, "~/.peri changed with writable %s" % w)
        if db is not None and w == E.tmp:
            check(os.path.exists(E.db), "the store is gone")
        del db


sys.exit(run_scenario("security.home", scenario, lambda: Env(peri, mock_py)))
