#!/usr/bin/env python3
"""e2e_terminal.py: the shell tool in the ACP client's terminal.

usage: e2e_terminal.py PERI_BINARY MOCK_MODEL_PY

Built on e2e.py's harness (private HOME, tests/host/mock_model.py, `peri acp` on stdio).
The fake client advertises clientCapabilities.terminal and implements terminal/create,
wait_for_exit, output, kill and release by running the command itself.
  - sandbox mode off: shell goes through terminal/create (/bin/sh -c CMD in the session
    cwd), wait_for_exit, output; the completed tool_call_update content is exactly
    [{"type":"terminal","terminalId":ID}]; terminal/release of ID comes after that update;
    the model sees the output and the exit code; the mode-off warning is still logged.
  - cancel during a long command: terminal/kill then terminal/release; the turn ends
    cancelled.
  - default (sandboxed) settings: no terminal/* request at all; the output is text content.
Exit 0 pass, 1 fail, 77 skipped (never under CI=true).
"""
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import (Agent, Env, check, missing_dependency, prompt,  # noqa: E402
                         run_scenario)


class TermAgent(Agent):
    """An Agent whose client side implements the ACP terminal methods."""

    def __init__(self, *a, **k):
        self.terms = {}
        self.term_calls = []  # (time, method, params)
        self.lock = threading.Lock()
        super().__init__(*a, **k)

    def _reply(self, rid, result):
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def _exit_status(self, p):
        rc = p.returncode
        return {"exitCode": rc, "signal": None} if rc >= 0 else {"exitCode": None,
                                                                 "signal": "SIGKILL"}

    def _handle(self, f):
        m, p, rid = f["method"], f.get("params", {}), f.get("id")
        with self.lock:
            self.term_calls.append((time.monotonic(), m, p))
        if m == "terminal/create":
            tid = "term-%d" % (len(self.terms) + 1)
            proc = subprocess.Popen([p["command"]] + p.get("args", []), cwd=p["cwd"],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            t = {"proc": proc, "out": b""}

            def pump():
                for chunk in iter(lambda: proc.stdout.read1(4096), b""):
                    t["out"] += chunk
            t["pump"] = threading.Thread(target=pump, daemon=True)
            t["pump"].start()
            self.terms[tid] = t
            self._reply(rid, {"terminalId": tid})
        elif m == "terminal/wait_for_exit":
            t = self.terms[p["terminalId"]]

            def waiter():
                t["proc"].wait()
                self._reply(rid, self._exit_status(t["proc"]))
            threading.Thread(target=waiter, daemon=True).start()
        elif m == "terminal/output":
            t = self.terms[p["terminalId"]]
            if t["proc"].poll() is not None:
                t["pump"].join(5)
            r = {"output": t["out"].decode(errors="replace"), "truncated": False}
            if t["proc"].poll() is not None:
                r["exitStatus"] = self._exit_status(t["proc"])
            self._reply(rid, r)
        elif m == "terminal/kill":
            self.terms[p["terminalId"]]["proc"].kill()
            self.terms[p["terminalId"]]["proc"].wait()
            self._reply(rid, {})
        elif m == "terminal/release":
            t = self.terms.get(p["terminalId"])
            if t and t["proc"].poll() is None:
                t["proc"].kill()
            self._reply(rid, {})
        else:
            self.send({"jsonrpc": "2.0", "id": rid,
                       "error": {"code": -32601, "message": "Method not found"}})

    def on_request(self, f):
        if str(f.get("method", "")).startswith("terminal/"):
            self._handle(f)
        else:
            super().on_request(f)

    def kill(self):
        for t in self.terms.values():
            if t["proc"].poll() is None:
                t["proc"].kill()
                t["proc"].wait()
        super().kill()


def agent(E, terminal=True):
    return E.agent(agent_class=TermAgent, caps={"terminal": True} if terminal else {})


def finals(a, sid, since):
    return [(t, u) for t, u in a.updates(sid, since) if u["sessionUpdate"] == "tool_call_update"
            and u.get("status") in ("completed", "failed")]


def methods(a):
    with a.lock:
        return [m for _, m, _ in a.term_calls]


def s_off(E):
    E.settings({"maxRetries": 0, "sandbox": {"mode": "off"}, "permissions": {"allow": ["shell"]}})
    a = agent(E)
    sid = E.new_session(a)
    t0 = time.monotonic()
    cmd = "echo hello-from-term; echo made > viaterm.txt; exit 3"
    E.mock.script([{"tool_calls": [{"id": "t1", "name": "shell", "arguments": {"command": cmd}}]},
                   {"text": "done"}])
    r = a.response(prompt(a, sid, "go"), timeout=60)
    check(r.get("result") == {"stopReason": "end_turn"}, "turn %r" % r)
    fin = finals(a, sid, t0)
    check(len(fin) == 1, "one final update: %r" % fin)
    t_upd, upd = fin[0]
    with a.lock:
        calls = list(a.term_calls)
    create = [p for _, m, p in calls if m == "terminal/create"]
    check(len(create) == 1, "one terminal/create: %r" % calls)
    check(create[0]["sessionId"] == sid and create[0]["command"] == "/bin/sh"
          and create[0]["args"] == ["-c", cmd], "create params %r" % create[0])
    check(create[0]["cwd"] == os.path.realpath(E.cwd), "create cwd %r" % create[0])
    check(isinstance(create[0].get("outputByteLimit"), int), "outputByteLimit %r" % create[0])
    ms = methods(a)
    check(ms[:3] == ["terminal/create", "terminal/wait_for_exit", "terminal/output"],
          "method order %r" % ms)
    check(upd.get("content") == [{"type": "terminal", "terminalId": "term-1"}],
          "content %r" % upd.get("content"))
    check(upd["status"] == "failed", "exit 3 is a failed call: %r" % upd)
    check(upd.get("_meta", {}).get("peri.placement", {}).get("unsandboxed") is True, "_meta")
    # released exactly once, after the update that embeds it was written
    deadline = time.monotonic() + 10
    while "terminal/release" not in methods(a) and time.monotonic() < deadline:
        time.sleep(0.02)
    with a.lock:
        rel = [(t, p) for t, m, p in a.term_calls if m == "terminal/release"]
    check(len(rel) == 1 and rel[0][1]["terminalId"] == "term-1", "release %r" % rel)
    check(rel[0][0] >= t_upd, "terminal released before the update that shows it")
    check(os.path.exists(os.path.join(E.cwd, "viaterm.txt")), "the command did not run")
    # the model saw the output and the exit code
    reqs = json.dumps(E.mock.requests())
    check("hello-from-term" in reqs and "[exit code 3]" in reqs, "model input lacks output")
    check(a.close_stdin() == 0, "exit")
    check(any("UNSANDBOXED" in l for l in a.stderr), "no warning logged")


def s_cancel(E):
    E.settings({"maxRetries": 0, "sandbox": {"mode": "off"}, "permissions": {"allow": ["shell"]}})
    a = agent(E)
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "t2", "name": "shell",
                                    "arguments": {"command": "sleep 30"}}]}, {"text": "done"}])
    rid = prompt(a, sid, "go")
    deadline = time.monotonic() + 30
    while "terminal/wait_for_exit" not in methods(a):
        check(time.monotonic() < deadline, "no terminal/wait_for_exit")
        time.sleep(0.02)
    t_cancel, t_resp = a.cancel(sid, rid, "cancel turn", timeout=30)
    check(t_resp - t_cancel < 10, "cancel took too long")
    deadline = time.monotonic() + 10
    while "terminal/release" not in methods(a) and time.monotonic() < deadline:
        time.sleep(0.02)
    ms = methods(a)
    check("terminal/kill" in ms and "terminal/release" in ms, "kill+release %r" % ms)
    check(ms.index("terminal/kill") < ms.index("terminal/release"), "order %r" % ms)
    check(ms.count("terminal/release") == 1, "released once %r" % ms)
    check(a.close_stdin() == 0, "exit")


def s_sandboxed(E):
    E.settings({"maxRetries": 0, "permissions": {"allow": ["shell"]}})
    a = agent(E)
    sid = E.new_session(a)
    t0 = time.monotonic()
    E.mock.script([{"tool_calls": [{"id": "t3", "name": "shell",
                                    "arguments": {"command": "echo sandboxed-out"}}]},
                   {"text": "done"}])
    r = a.response(prompt(a, sid, "go"), timeout=60)
    check(r.get("result") == {"stopReason": "end_turn"}, "turn %r" % r)
    fin = finals(a, sid, t0)
    check(len(fin) == 1 and fin[0][1]["status"] == "completed", "final %r" % fin)
    check(methods(a) == [], "sandboxed shell must not use the client's terminal: %r" % methods(a))
    c = fin[0][1].get("content")
    check(isinstance(c, list) and c and c[0]["type"] == "content"
          and "sandboxed-out" in c[0]["content"]["text"], "text content %r" % c)
    check(a.close_stdin() == 0, "exit")


SCENARIOS = {"off": s_off, "cancel": s_cancel, "sandboxed": s_sandboxed}


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    peri, mock_py = sys.argv[1:]
    if not os.path.exists("/usr/bin/bwrap"):
        return missing_dependency("bubblewrap is not installed (scripts/deps.sh)")
    for name, fn in SCENARIOS.items():
        if run_scenario(name, fn, lambda: Env(peri, mock_py)):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
