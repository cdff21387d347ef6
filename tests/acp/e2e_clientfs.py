#!/usr/bin/env python3
"""e2e_clientfs.py: the editor's file system (clientCapabilities.fs) while sandboxed code
may be changing the workspace.

The client opens a path by name and follows symlinks, so between peri's check of a path
and the client's open, code running in the workspace could swap a directory on the way
for a symlink that leads out of it. peri therefore never hands the client a path while
a run holds the workspace (the shared flock(2) every sandboxed run holds on its workspace
directory; the test holds one itself, a deterministic stand-in for a running sandbox) or
while a background task of the session lives: read, write and edit then use the disk
through their descriptors. The fake client here does what such code would do: when
asked, it swaps the directory for a symlink to a host directory outside the workspace
and reads or writes by name, so any call it gets while the workspace is held leaks or
plants a file outside. When nothing runs, the client is asked again (and does not swap).

usage: e2e_clientfs.py PERI_BINARY MOCK_MODEL_PY SCENARIO
Exit 0 = pass, 1 = fail, 77 = skipped.
"""
import fcntl
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import Agent, check, prompt, scenario_main  # noqa: E402

CAPS = {"fs": {"readTextFile": True, "writeTextFile": True}}


class SwappingClient(Agent):
    """A client that reads and writes by path name. While attack is set it first makes
    the workspace's directory d a symlink to the outside directory (the race won)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.attack = None  # (workspace d, outside dir) or None
        self.fs_calls = []

    def _swapped(self, fn):
        if not self.attack:
            return fn()
        d, outside = self.attack
        os.rename(d, d + ".real")
        os.symlink(outside, d)
        try:
            return fn()
        finally:
            os.unlink(d)
            os.rename(d + ".real", d)

    def on_request(self, f):
        m = f.get("method")
        if m not in ("fs/read_text_file", "fs/write_text_file"):
            return super().on_request(f)
        self.fs_calls.append(f)
        p = f["params"]
        try:
            if m == "fs/read_text_file":
                def rd():
                    with open(p["path"]) as h:
                        return h.read()
                res = {"content": self._swapped(rd)}
            else:
                def wr():
                    with open(p["path"], "w") as h:
                        h.write(p["content"])
                self._swapped(wr)
                res = None
            self.send({"jsonrpc": "2.0", "id": f["id"], "result": res})
        except OSError as e:
            self.send({"jsonrpc": "2.0", "id": f["id"],
                       "error": {"code": -32603, "message": str(e)}})


def setup(E):
    d = os.path.join(E.cwd, "d")
    outside = os.path.join(E.tmp, "outside")
    os.makedirs(d)
    os.makedirs(outside)
    E.put("d/secret.txt", "inside-text\n")
    with open(os.path.join(outside, "secret.txt"), "w") as h:
        h.write("OUTSIDE-HOST-FILE\n")
    return d, outside


def turn(a, sid, E, calls):
    E.mock.script([{"tool_calls": [c]} for c in calls] + [{"text": "ok"}])
    r = a.response(prompt(a, sid, "go"), timeout=60)
    check(r.get("result") == {"stopReason": "end_turn"}, "turn %r" % r)
    done = {}
    for _, u in a.updates(sid):
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed",
                                                                              "failed"):
            done[u["toolCallId"]] = u
    return done


def attacked_calls(tag):
    return [{"id": "r" + tag, "name": "read", "arguments": {"path": "d/secret.txt"}},
            {"id": "w" + tag, "name": "write",
             "arguments": {"path": "d/pwned-%s.txt" % tag, "content": "planted"}},
            {"id": "e" + tag, "name": "edit",
             "arguments": {"path": "d/secret.txt", "old_string": "inside-text",
                           "new_string": "inside-text-%s" % tag}}]


def check_disk_route(a, E, done, tag, d, outside):
    """While the workspace may be changing: no client call, the disk's files, none
    outside."""
    check(not a.fs_calls, "the client's fs was asked while code may run in the workspace: %r"
          % [f["method"] for f in a.fs_calls])
    text = json.dumps(done)
    check("OUTSIDE-HOST-FILE" not in text, "read returned a host file outside the workspace")
    check("inside-text" in json.dumps(done["r" + tag]), "read result %r" % done["r" + tag])
    check(not os.path.exists(os.path.join(outside, "pwned-%s.txt" % tag)),
          "write created a file outside the workspace")
    with open(os.path.join(outside, "secret.txt")) as h:
        check(h.read() == "OUTSIDE-HOST-FILE\n", "edit changed a file outside the workspace")
    with open(os.path.join(d, "pwned-%s.txt" % tag)) as h:
        check(h.read() == "planted", "write did not reach the disk")
    with open(os.path.join(d, "secret.txt")) as h:
        check("inside-text-%s" % tag in h.read(), "edit did not reach the disk")


def check_client_again(a, sid, E):
    """Nothing runs: the client is asked again (given the real path) and not attacked."""
    a.attack = None
    done = turn(a, sid, E, [{"id": "rc", "name": "read", "arguments": {"path": "d/secret.txt"}}])
    reads = [f for f in a.fs_calls if f["method"] == "fs/read_text_file"]
    check(len(reads) == 1 and reads[0]["params"]["path"] ==
          os.path.join(os.path.realpath(E.cwd), "d", "secret.txt"),
          "the client was not asked once nothing ran: %r" % a.fs_calls)
    check("inside-text" in json.dumps(done["rc"]), "client read %r" % done["rc"])


def s_held(E):
    """A run of another session or process holds the workspace (the test's shared lock)."""
    d, outside = setup(E)
    a = E.agent(agent_class=SwappingClient, caps=CAPS)
    a.permission_answer = "allow_once"
    sid = E.new_session(a)
    a.attack = (d, outside)
    lock = os.open(E.cwd, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(lock, fcntl.LOCK_SH)
    try:
        done = turn(a, sid, E, attacked_calls("1"))
    finally:
        os.close(lock)
    check_disk_route(a, E, done, "1", d, outside)
    check_client_again(a, sid, E)


def bg_session(E, settings):
    E.settings(settings)
    d, outside = setup(E)
    a = E.agent(agent_class=SwappingClient, caps=CAPS)
    a.permission_answer = "allow_once"
    sid = E.new_session(a)
    turn(a, sid, E, [{"id": "b1", "name": "shell",
                      "arguments": {"command": "sleep 60", "background": True}}])
    a.wait_update(lambda u: ((u.get("_meta") or {}).get("peri.task") or {}).get(
        "status") == "started", "task started", sid=sid)
    a.attack = (d, outside)
    done = turn(a, sid, E, attacked_calls("2"))
    check_disk_route(a, E, done, "2", d, outside)
    turn(a, sid, E, [{"id": "x1", "name": "task_stop", "arguments": {"task_id": "task-1"}}])
    a.wait_update(lambda u: ((u.get("_meta") or {}).get("peri.task") or {}).get(
        "status") == "stopped", "task stopped", sid=sid)
    time.sleep(0.2)
    check_client_again(a, sid, E)


def s_bgtask(E):
    """A background shell of the session lives (sandbox mode off: no run holds a lock,
    the session's own task registry decides)."""
    bg_session(E, {"maxRetries": 0, "sandbox": {"mode": "off"}})


def s_bgsandboxed(E):
    """A background shell in the native sandbox lives (both rules apply)."""
    bg_session(E, {"maxRetries": 0})


SCENARIOS = {"held": s_held, "bgtask": s_bgtask, "bgsandboxed": s_bgsandboxed}

if __name__ == "__main__":
    sys.exit(scenario_main(__doc__, SCENARIOS))
