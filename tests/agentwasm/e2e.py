#!/usr/bin/env python3
"""e2e.py: the agent module's reactor (src/agentwasm/) run natively by paw_native over
pn_loop (or, with PAW_MODULE=peri-agent.wasm and paw_engine as the driver, inside the
module under Peri-C's engine host), speaking ACP on stdio, against a real PostgreSQL (pg_cluster.sh with
PERI_PG_TCP=1: the role logs in with scram-sha-256 over TCP) and the mock model.

    pg_cluster.sh python3 e2e.py PAW_NATIVE MOCK_MODEL_PY [SCENARIO...]

Every scenario starts its own reactor (a fresh instance) on one shared database; each
prints PASS NAME or FAIL NAME: WHY. Exit status 0 when all passed.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import pg_role_db, Agent, Fail, Mock, check, prompt, text_of  # noqa: E402
from collector import Collector  # noqa: E402

MACHINE_A = "0190f5e4-0000-7000-8000-00000000000a"
MACHINE_B = "0190f5e4-0000-7000-8000-00000000000b"
ROLE, PASSWORD, DB = "paw_role", "paw secret", "paw_db"


class Paw(Agent):
    """One paw_native process: the start object from a file, credentials from its env."""

    def __init__(self, exe, start, tmp, env_extra=None):
        path = os.path.join(tmp, "start-%d.json" % time.monotonic_ns())
        with open(path, "w") as f:
            f.write(start if isinstance(start, str) else json.dumps(start))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PAW_STORE_PASSWORD": PASSWORD}
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        env.update(env_extra or {})
        argv = [exe, path]
        if os.environ.get("PAW_MODULE"):  # paw_engine: the module under the engine host
            argv = [exe, os.environ["PAW_MODULE"], path]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        import queue
        self.frames = queue.Queue()
        self.log = []
        self.next_id = 100
        self.pending = []
        self.bad_lines = []
        self.permission_answer = "allow_once"
        self.stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        self.err_thread = threading.Thread(target=self._drain_err, daemon=True)
        self.err_thread.start()

    def wait_exit(self, timeout=10):
        """The exit status, once stderr was read to its end."""
        rc = self.proc.wait(timeout)
        self.err_thread.join(timeout)
        return rc

    def on_request(self, f):
        if f.get("method") == "session/request_permission" and self.permission_answer is None:
            return  # left unanswered
        Agent.on_request(self, f)

    def err(self):
        return "".join(self.stderr)

    def finish(self, timeout=15):
        """EOF on stdin: the reactor closes everything and reports settlement."""
        self.proc.stdin.close()
        try:
            rc = self.wait_exit(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Fail("paw_native did not settle after EOF; stderr: " + self.err()[-1500:])
        check(rc == 0, "exit status %r; stderr: %s" % (rc, self.err()[-1500:]))
        check("paw: settled {" in self.err(), "no settled report: " + self.err()[-1500:])
        check("Sanitizer" not in self.err(), "sanitizer: " + self.err()[-3000:])
        check(not self.bad_lines, "non-JSON output: %r" % self.bad_lines[:3])


class Env:
    def __init__(self, exe, mock_py, pg_port):
        self.exe, self.pg_port = exe, pg_port
        self.tmp = tempfile.mkdtemp(prefix="paw-e2e-")
        self.mock = Mock(mock_py, self.tmp)
        self.agents = []
        self.allow = ["127.0.0.1:%d" % self.mock.port, "127.0.0.1:%d" % pg_port]

    def store_url(self):
        return "postgresql://%s@127.0.0.1:%d/%s?sslmode=disable" % (ROLE, self.pg_port, DB)

    def start_object(self, machine=MACHINE_A, model_url=None, **over):
        o = {"cwd": "/work/project/./sub/..",
             "settings": {"model": "openai:mock-1",
                          "providers": {"openai": {"baseUrl": (model_url or self.mock.url) + "/v1"}},
                          "maxRetries": 0},
             "storage": {"url": self.store_url(), "credential": {"source": "host"}},
             "machineId": machine}
        o.update(over)
        return o

    def agent(self, start=None, init=True, env_extra=None):
        env = {"PAW_ALLOW": ",".join(self.allow)}
        env.update(env_extra or {})
        a = Paw(self.exe, start if start is not None else self.start_object(), self.tmp, env)
        self.agents.append(a)
        if init:
            r = a.result("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            check(r["protocolVersion"] == 1, "initialize: %r" % r)
        return a

    def new_session(self, a, cwd="/work/project"):
        return a.result("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]

    def cleanup(self):
        for a in self.agents:
            a.kill()
        self.mock.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def wait_done(a, rid, timeout=15):
    return a.response(rid, timeout)


# ---------------------------------------------------------------- scenarios

def s_start_errors(E):
    base = E.start_object()
    cases = [
        ("not json", "{", "not valid JSON"),
        ("no cwd", {k: v for k, v in base.items() if k != "cwd"}, "needs cwd"),
        ("no settings", {k: v for k, v in base.items() if k != "settings"}, "needs settings"),
        ("no storage", {k: v for k, v in base.items() if k != "storage"}, "needs storage"),
        ("no machineId", {k: v for k, v in base.items() if k != "machineId"}, "needs machineId"),
        ("relative cwd", dict(base, cwd="work"), "cwd must be an absolute path"),
        ("bad machine", dict(base, machineId="has space"), "machineId must be the instance's"),
        ("long machine", dict(base, machineId="x" * 37), "machineId must be the instance's"),
        ("empty machine", dict(base, machineId=""), "machineId must be the instance's"),
        ("settings not object", dict(base, settings=[]), "settings must be an object"),
        ("secret in start", dict(base, storage={"url": E.store_url(),
                                                "credential": {"password": "x"}}),
         "secrets never travel"),
    ]
    for what, start, want in cases:
        a = E.agent(start, init=False)
        rc = a.wait_exit(10)
        check(rc == 2, "%s: exit %r (want 2: refused): %s" % (what, rc, a.err()[-800:]))
        check("Sanitizer" not in a.err(), "%s: sanitizer: %s" % (what, a.err()[-3000:]))
        check(want in a.err(), "%s: error text %r not in %r" % (what, want, a.err()[-600:]))


def s_local_store_refused(E):
    for loc in ("sqlite:/tmp/x.db", "/home/u/.peri/peri.db", ":memory:"):
        a = E.agent(dict(E.start_object(), storage={"url": loc, "credential": {"source": "host"}}),
                    init=False)
        rc = a.wait_exit(10)
        check(rc == 2, "%s: exit %r" % (loc, rc))
        check("is a local store" in a.err() and "never falls back" in a.err(),
              "%s: %r" % (loc, a.err()[-500:]))


def s_initialize(E):
    a = E.agent(init=False)
    r = a.result("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    caps = r["agentCapabilities"]
    check(caps["loadSession"] is True, "loadSession: %r" % caps)
    check(r["agentInfo"]["name"] == "peri-c", "agentInfo: %r" % r)
    check(sorted(caps.get("sessionCapabilities", {})) ==
          ["close", "delete", "fork", "list", "resume"], "sessionCapabilities: %r" % caps)
    # one identity per instance: another machine id is refused, with the native text
    bad = a.call("initialize", {"protocolVersion": 1, "clientCapabilities": {
        "_meta": {"peri.machineId": MACHINE_B}}})
    check(bad.get("error", {}).get("code") == -32602 and
          "machine identity is fixed for this host" in bad["error"]["message"], "%r" % bad)
    a.finish()


def s_bad_input(E):
    a = E.agent()
    a.send_raw("{not json")
    r = a.wait(lambda f: "error" in f and f.get("id") is None, what="parse error")[1]
    check(r["error"] == {"code": -32700, "message": "Parse error"}, "%r" % r)
    a.send_raw('{"jsonrpc": "2.0", "id": 7}')
    r = a.response(7)
    check(r["error"]["code"] == -32600, "%r" % r)
    r = a.call("no/such_method", {})
    check(r["error"] == {"code": -32601, "message": "Method not found: no/such_method"}, "%r" % r)
    r = a.call("session/new", {"cwd": 5, "mcpServers": []})
    check(r["error"]["code"] == -32602 and "cwd must be a string" in r["error"]["message"], "%r" % r)
    r = a.call("session/new", {"cwd": "/x"})
    check(r["error"]["message"] == "missing required field: mcpServers (an array, may be empty)",
          "%r" % r)
    r = a.call("session/prompt", {"sessionId": "0190f5e4-0000-7000-8000-000000000999",
                                  "prompt": [{"type": "text", "text": "hi"}]})
    check(r["error"]["code"] == -32002, "%r" % r)
    # a session id with a NUL character is refused, not cut short to another session's
    sid = E.new_session(a)
    r = a.call("session/prompt", {"sessionId": sid + "\u0000x",
                                  "prompt": [{"type": "text", "text": "hi"}]})
    check(r.get("error", {}).get("code") == -32602 and "NUL" in r["error"]["message"], "%r" % r)
    r = a.call("session/new", "not an object")  # the shared codec refuses the frame
    check(r["error"]["code"] == -32600, "%r" % r)
    r = a.call("session/new", [1])
    check(r["error"] == {"code": -32602, "message": "params must be an object"}, "%r" % r)
    # stdio MCP servers cannot run here, and say why
    r = a.call("session/new", {"cwd": "/w", "mcpServers": [
        {"name": "fs", "command": "/bin/true", "args": [], "env": []}]})
    check(r["error"]["code"] == -32602 and "stdio MCP servers" in r["error"]["message"] and
          "no subprocesses" in r["error"]["message"], "%r" % r)
    a.finish()


def s_prompt_stream_and_tool(E):
    E.mock.script([
        {"text": ["Hel", "lo ", "there"], "usage": {"input": 10, "output": 3}},
        {"tool_calls": [{"id": "call_1", "name": "shell", "arguments": {"command": "ls"}}]},
        {"text": "after the tool"},
    ])
    a = E.agent()
    sid = E.new_session(a)
    rid = prompt(a, sid, "say hello")
    r = wait_done(a, rid)
    check(r.get("result") == {"stopReason": "end_turn"}, "prompt: %r" % r)
    check(text_of(a.updates(sid)) == "Hello there", "text: %r" % text_of(a.updates(sid)))
    seqs = [f["params"]["_meta"]["peri.sessionSeq"] for _, f in a.log
            if f.get("method") == "session/update"]
    check(seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "sequence: %r" % seqs)
    info = [u for _, u in a.updates(sid) if u["sessionUpdate"] == "session_info_update"]
    check(len(info) == 1 and info[0]["title"] == "say hello", "title update: %r" % info)
    # a tool round: no shell in this form, the model hears so and goes on
    rid = prompt(a, sid, "list files")
    r = wait_done(a, rid)
    check(r.get("result") == {"stopReason": "end_turn"}, "tool prompt: %r" % r)
    ups = [u for _, u in a.updates(sid)]
    calls = [u for u in ups if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    check(calls and calls[-1]["status"] == "failed", "tool updates: %r" % calls)
    reqs = E.mock.requests()
    check(not any(t["function"]["name"] in ("shell", "run", "read", "write")
                  for q in reqs for t in (q["body"].get("tools") or [])),
          "native tools offered: %r" % [q["body"].get("tools") for q in reqs])
    last = reqs[-1]["body"]["messages"]
    check(any(m.get("role") == "tool" and "unknown tool" in json.dumps(m) for m in last),
          "tool result: %r" % last)
    check("after the tool" in text_of(a.updates(sid)), "text after the tool")
    turn_done = [f for _, f in a.log if f.get("method") == "_peri/turn_done"]
    check(len(turn_done) == 2 and turn_done[0]["params"]["outcome"] == "completed",
          "turn_done: %r" % turn_done)
    a.finish()
    E.sid_for_load = sid


def s_deep_args(E):
    """Tool-call arguments nested nearly as deep as the JSON reader allows: the module's
    C stack must hold the deepest walk (it lies below the data, so an overflow would trap,
    never overwrite the module's own strings). Each turn ends, the other session and the
    history stay whole."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))  # to read the echoed arguments
    a = E.agent()
    sid, other = E.new_session(a), E.new_session(a)
    for depth in (850, 1100, 2040):
        args = '{"command":' + "[" * depth + "7" + "]" * depth + "}"
        E.mock.script([{"tool_calls": [{"id": "d%d" % depth, "name": "shell", "arguments": args}]},
                       {"text": "after %d" % depth}])
        r = wait_done(a, prompt(a, sid, "deep %d" % depth))
        check(r.get("result") == {"stopReason": "end_turn"}, "depth %d: %r" % (depth, r))
        check("after %d" % depth in text_of(a.updates(sid)), "text after depth %d" % depth)
        E.mock.script([{"text": "still fine"}])
        r = wait_done(a, prompt(a, other, "and you?"))
        check(r.get("result") == {"stopReason": "end_turn"}, "other session: %r" % r)
        last = E.mock.requests()[-1]["body"]["messages"]
        roles = [m.get("role") for m in last]
        check(roles and roles[0] in ("system", "user") and None not in roles, "roles %r" % roles)
    a.finish()


def s_tool_source(E):
    E.mock.script([
        {"tool_calls": [{"id": "c1", "name": "echo", "arguments": {"text": "ping"}},
                        {"id": "c2", "name": "guarded", "arguments": {"x": 1}}]},
        {"text": "done"},
        {"tool_calls": [{"id": "c3", "name": "guarded", "arguments": {"y": 2}}]},
        {"text": "done again"},
        {"tool_calls": [{"id": "c4", "name": "guarded", "arguments": {"y": 3}}]},
        {"text": "done a third time"},
        {"tool_calls": [{"id": "c5", "name": "echo", "arguments": {}}]},
        {"text": "echoed"},
    ])
    a = E.agent(env_extra={"PAW_TEST_TOOLS": "1"})
    a.permission_answer = "reject_once"
    sid = E.new_session(a)
    r = wait_done(a, prompt(a, sid, "use the tools"))
    check(r.get("result") == {"stopReason": "end_turn"}, "prompt: %r" % r)
    reqs = E.mock.requests()
    names = sorted(t["function"]["name"] for t in reqs[0]["body"].get("tools") or [])
    check(names == ["echo", "guarded"], "tools offered: %r" % names)
    results = {m.get("tool_call_id"): m.get("content") for m in reqs[1]["body"]["messages"]
               if m.get("role") == "tool"}
    check("echo: " in json.dumps(results.get("c1")) and "ping" in json.dumps(results.get("c1")),
          "echo result: %r" % results)
    check("rejected" in json.dumps(results.get("c2")), "guarded result: %r" % results)
    asked = [f["params"]["toolCall"]["toolCallId"] for _, f in a.log
             if f.get("method") == "session/request_permission"]
    check(asked == ["c2"], "asked: %r" % asked)
    ups = [u for _, u in a.updates(sid) if u["sessionUpdate"] == "tool_call_update"]
    st = {u["toolCallId"]: u["status"] for u in ups}
    check(st.get("c1") == "completed" and st.get("c2") == "failed", "statuses: %r" % st)
    # "always allow": asked once, remembered for the session
    a.permission_answer = "allow_always"
    for want in ("c3", "c4"):
        r = wait_done(a, prompt(a, sid, "guarded " + want))
        check(r.get("result") == {"stopReason": "end_turn"}, "%s: %r" % (want, r))
        res = {m.get("tool_call_id"): m.get("content")
               for m in E.mock.requests()[-1]["body"]["messages"] if m.get("role") == "tool"}
        check("echo: " in json.dumps(res.get(want)), "%s ran: %r" % (want, res))
    asked = [f["params"]["toolCall"]["toolCallId"] for _, f in a.log
             if f.get("method") == "session/request_permission"]
    check(asked == ["c2", "c3"], "asked after always: %r" % asked)
    a.finish()
    # a question nobody answers: cancel answers it, the turn ends cancelled
    E.mock.script([{"tool_calls": [{"id": "q1", "name": "guarded", "arguments": {}}]},
                   {"text": "never"}])
    b = E.agent(env_extra={"PAW_TEST_TOOLS": "1"})
    b.permission_answer = None
    sid = E.new_session(b)
    rid = prompt(b, sid, "ask me")
    b.wait(lambda f: f.get("method") == "session/request_permission", what="the question")
    b.cancel(sid, rid)
    b.finish()
    # allowed by settings: runs without asking
    E.mock.script([{"tool_calls": [{"id": "s1", "name": "guarded", "arguments": {}}]},
                   {"text": "fine"}])
    start = E.start_object()
    start["settings"]["permissions"] = {"allow": ["guarded"]}
    c = E.agent(start, env_extra={"PAW_TEST_TOOLS": "1"})
    sid = E.new_session(c)
    r = wait_done(c, prompt(c, sid, "again"))
    check(r.get("result") == {"stopReason": "end_turn"}, "prompt: %r" % r)
    check(not any(f.get("method") == "session/request_permission" for _, f in c.log), "asked")
    res = {m.get("tool_call_id"): m.get("content")
           for m in E.mock.requests()[-1]["body"]["messages"] if m.get("role") == "tool"}
    check("echo: " in json.dumps(res.get("s1")), "allowed guarded: %r" % res)
    c.finish()


def s_tools_two_sessions(E):
    """Two sessions whose turns call tools at the same time: each keeps its own tool list
    while the other asks for a new one (no list is freed under a turn)."""
    E.mock.script({"responses": [], "default": {
        "tool_calls": [{"id": "e", "name": "echo", "arguments": {"text": "x"}}],
        "delay_ms": 40}})
    start = E.start_object()
    start["settings"]["maxSteps"] = 3
    a = E.agent(start, env_extra={"PAW_TEST_TOOLS": "1"})
    s1, s2 = E.new_session(a), E.new_session(a)
    r1, r2 = prompt(a, s1, "loop one"), prompt(a, s2, "loop two")
    x1, x2 = wait_done(a, r1), wait_done(a, r2)
    check(x1.get("result") == x2.get("result") == {"stopReason": "max_turn_requests"},
          "%r %r" % (x1, x2))
    for sid in (s1, s2):
        done = [u for _, u in a.updates(sid)
                if u["sessionUpdate"] == "tool_call_update" and u["status"] == "completed"]
        check(len(done) == 3, "%s: %d tool results" % (sid, len(done)))
    a.finish()


def s_mcp_http(E):
    """The settings' MCP server over streamable HTTP (the event-driven client)."""
    srv_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mcp",
                          "ev_server.py")
    srv = subprocess.Popen([sys.executable, srv_py, os.path.join(E.tmp, "mcp.log")],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        port = int(srv.stdout.readline())
        E.allow.append("127.0.0.1:%d" % port)
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))
        dead_port = dead.getsockname()[1]
        dead.close()
        E.allow.append("127.0.0.1:%d" % dead_port)
        start = E.start_object()
        start["settings"]["mcpServers"] = {
            "files": {"url": "http://127.0.0.1:%d/mcp/sse" % port},
            "gone": {"url": "http://127.0.0.1:%d/mcp" % dead_port},
            "local": {"command": "/bin/true"}}
        E.mock.script([
            {"tool_calls": [{"id": "m1", "name": "mcp__files__echo",
                             "arguments": {"message": "over http"}}]},
            {"text": "echoed"},
            {"tool_calls": [{"id": "m2", "name": "mcp__files__slow", "arguments": {}}]},
            {"text": "never"},
        ])
        a = E.agent(start)
        deadline = time.monotonic() + 10
        while 'MCP server "files": 4 tools' not in a.err():
            check(time.monotonic() < deadline, "MCP server not ready: " + a.err()[-800:])
            time.sleep(0.05)
        check('MCP server "gone" is unavailable' in a.err(), "gone: " + a.err()[-800:])
        check("stdio MCP servers" in a.err(), "stdio refused: " + a.err()[-800:])
        sid = E.new_session(a)
        r = wait_done(a, prompt(a, sid, "echo"))
        check(r.get("result") == {"stopReason": "end_turn"}, "prompt: %r" % r)
        reqs = E.mock.requests()
        names = sorted(t["function"]["name"] for t in reqs[0]["body"].get("tools") or [])
        check(names == ["mcp__files__boom", "mcp__files__echo", "mcp__files__fail",
                        "mcp__files__slow"], "tools: %r" % names)
        res = {m.get("tool_call_id"): m.get("content") for m in reqs[1]["body"]["messages"]
               if m.get("role") == "tool"}
        check("Echo: over http" in json.dumps(res.get("m1")), "echo: %r" % res)
        # a call that needs permission (asked, allowed), then cancelled while it runs
        rid = prompt(a, sid, "slow")
        a.wait(lambda f: f.get("method") == "session/request_permission", what="the ask")
        a.wait_update(lambda u: u["sessionUpdate"] == "tool_call" and u["toolCallId"] == "m2",
                      "the slow call", sid=sid)
        time.sleep(0.3)
        a.cancel(sid, rid)
        a.finish()
        log = [json.loads(x) for x in open(os.path.join(E.tmp, "mcp.log"))]
        check(any(x.get("method") == "notifications/cancelled" for x in log),
              "no cancel sent: %r" % log[-5:])
        check(any(x.get("verb") == "DELETE" for x in log), "no DELETE at close")
    finally:
        srv.kill()
        srv.wait()


def s_load_and_list(E):
    E.mock.script([{"text": "first answer"}, {"text": "second answer"}])
    a = E.agent()
    sid = E.new_session(a, "/work/listed")
    check(wait_done(a, prompt(a, sid, "one")).get("result") == {"stopReason": "end_turn"}, "one")
    check(wait_done(a, prompt(a, sid, "two")).get("result") == {"stopReason": "end_turn"}, "two")
    a.finish()
    # a new instance (same machine) loads it from the shared store and replays it
    b = E.agent()
    r = b.result("session/load", {"sessionId": sid, "cwd": "/work/listed", "mcpServers": []})
    check("_meta" not in r, "own session read-only? %r" % r)
    check(r["modes"]["currentModeId"] == "default" and
          len(r["modes"]["availableModes"]) == 4, "modes: %r" % r)
    ups = b.updates(sid)
    check(text_of(ups, "user_message_chunk") == "onetwo", "replayed user: %r" % ups)
    check(text_of(ups) == "first answersecond answer", "replayed agent: %r" % ups)
    check(all(f["params"]["_meta"].get("periReplay") for _, f in b.log
              if f.get("method") == "session/update"), "replay flag")
    lst = b.result("session/list", {"cwd": "/work/listed"})
    check([s["sessionId"] for s in lst["sessions"]] == [sid], "list: %r" % lst)
    check(lst["sessions"][0].get("title") == "one", "title from the first prompt: %r" % lst)
    # the session continues with its history
    E.mock.script([{"text": "third"}])
    check(wait_done(b, prompt(b, sid, "three")).get("result") == {"stopReason": "end_turn"},
          "three")
    msgs = E.mock.requests()[-1]["body"]["messages"]
    check(sum(1 for m in msgs if m["role"] == "user") == 3, "history sent: %r" % msgs)
    b.finish()
    # another machine: listed read-only, loads, cannot prompt
    c = E.agent(E.start_object(machine=MACHINE_B))
    lst = c.result("session/list", {"cwd": "/work/listed"})
    check(lst["sessions"][0]["_meta"] == {"peri.machineId": MACHINE_A, "peri.readOnly": True},
          "foreign list: %r" % lst)
    r = c.result("session/load", {"sessionId": sid, "mcpServers": []})
    check(r.get("_meta", {}).get("peri.readOnly") is True, "foreign load: %r" % r)
    r = c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
    check(r.get("error", {}).get("code") == -32602, "foreign prompt: %r" % r)
    r = c.call("session/load", {"sessionId": "0190f5e4-0000-7000-8000-000000000999",
                                "mcpServers": []})
    check(r.get("error", {}).get("code") == -32002, "unknown load: %r" % r)
    c.finish()


def s_options_fork_delete(E):
    """set_mode / set_config_option persist in the thread's meta (another instance loads
    them); fork copies the history into a new session of this machine; delete removes a
    session; resume opens without a replay."""
    E.mock.script([{"text": "answer one"}, {"text": ["a", "b", "c"], "hang": True,
                                             "hang_after": 2}])
    a = E.agent()
    sid = E.new_session(a, "/work/opts")
    r = a.call("session/new", {"cwd": "/work/opts", "mcpServers": []})
    cfg = {o["id"]: o for o in r["result"]["configOptions"]}
    check(cfg["mode"]["currentValue"] == "default" and
          cfg["model"]["currentValue"] == "openai:mock-1", "configOptions: %r" % cfg)
    check(wait_done(a, prompt(a, sid, "one")).get("result") == {"stopReason": "end_turn"}, "one")
    r = a.result("session/set_config_option", {"sessionId": sid, "configId": "mode",
                                               "value": "plan"})
    got = {o["id"]: o["currentValue"] for o in r["configOptions"]}
    check(got["mode"] == "plan", "set_config_option: %r" % r)
    r = a.call("session/set_config_option", {"sessionId": sid, "configId": "model",
                                             "value": "openai:other"})
    check(r.get("error", {}).get("message") ==
          "unknown value for config option model: openai:other", "bad model: %r" % r)
    r = a.call("session/set_config_option", {"sessionId": sid, "configId": "nope", "value": "x"})
    check(r.get("error", {}).get("code") == -32602 and "unknown configId: nope" in
          r["error"]["message"], "bad configId: %r" % r)
    r = a.call("session/set_mode", {"sessionId": sid, "modeId": "sideways"})
    check(r.get("error", {}).get("message") ==
          "unknown modeId: sideways (default, acceptEdits, plan, bypassPermissions)", "%r" % r)
    # fork: a new session of this machine with the same history
    fid = a.result("session/fork", {"sessionId": sid, "cwd": "/work/opts",
                                    "mcpServers": []})["sessionId"]
    check(fid != sid, "fork id")
    lst = {s["sessionId"]: s for s in a.result("session/list", {"cwd": "/work/opts"})["sessions"]}
    check(fid in lst and lst[fid].get("title") == "Fork of one", "fork listed: %r" % lst)
    # a running turn cannot be forked
    rid = prompt(a, sid, "hang")
    a.wait(lambda f: f.get("method") == "session/update" and
           f["params"]["update"].get("sessionUpdate") == "agent_message_chunk" and
           f["params"]["sessionId"] == sid and
           f["params"]["update"]["content"]["text"] in ("a", "b"),
           what="the hanging turn's first chunk")
    r = a.call("session/fork", {"sessionId": sid, "cwd": "/work/opts", "mcpServers": []})
    check(r.get("error", {}).get("code") == -32010 and "before forking" in
          r["error"]["message"], "fork during a turn: %r" % r)
    a.call("session/cancel", {"sessionId": sid})
    wait_done(a, rid)
    # delete: gone from the list and from the store
    check(a.result("session/delete", {"sessionId": fid}) == {}, "delete")
    lst = a.result("session/list", {"cwd": "/work/opts"})["sessions"]
    check(fid not in [s["sessionId"] for s in lst], "deleted but listed: %r" % lst)
    a.finish()
    # another instance: the mode persisted; the fork's history replays; resume: no replay
    b = E.agent()
    r = b.result("session/load", {"sessionId": sid, "cwd": "/work/opts", "mcpServers": []})
    check(r["modes"]["currentModeId"] == "plan", "mode not persisted: %r" % r["modes"])
    r = b.call("session/load", {"sessionId": fid, "cwd": "/work/opts", "mcpServers": []})
    check(r.get("error", {}).get("code") == -32002, "deleted fork loads: %r" % r)
    b.finish()
    c = E.agent()
    n = len(c.log)
    r = c.result("session/resume", {"sessionId": sid, "cwd": "/work/opts"})
    check(r["modes"]["currentModeId"] == "plan", "resume: %r" % r)
    check(not [f for _, f in c.log[n:] if f.get("method") == "session/update"
               and f["params"]["update"].get("sessionUpdate") == "user_message_chunk"],
          "resume replayed")
    E.mock.script([{"text": "after resume"}])
    check(wait_done(c, prompt(c, sid, "two")).get("result") == {"stopReason": "end_turn"}, "two")
    msgs = E.mock.requests()[-1]["body"]["messages"]
    check(any(m["role"] == "user" and "one" in json.dumps(m) for m in msgs),
          "resumed history: %r" % msgs)
    c.finish()


BIG = "OLD-ALPHA " + "lorem ipsum dolor sit amet " * 75  # ~2000 bytes: ~500 tokens


def s_autocompact(E):
    """A turn whose context would reach the threshold: the model summarizes the earlier
    conversation first (a request of its own, without tools), the summary starts the
    view, the client hears of it, and a reload keeps it (as native)."""
    start = E.start_object()
    start["settings"].update({"contextBudget": 400, "autoCompact": {"threshold": 0.5}})
    E.mock.script([{"text": "answer-one"}, {"text": "SUMMARY: the user sent a long alpha text"},
                   {"text": "answer-two"}, {"text": "answer-three"}])
    a = E.agent(start)
    sid = E.new_session(a)
    check(wait_done(a, prompt(a, sid, BIG)).get("result") == {"stopReason": "end_turn"}, "one")
    t0 = time.monotonic()
    check(wait_done(a, prompt(a, sid, "SECOND question")).get("result") ==
          {"stopReason": "end_turn"}, "two")
    b = [r["body"] for r in E.mock.requests()]
    check(len(b) == 3, "expected turn, summary, turn: %d requests" % len(b))
    summ = json.dumps(b[1]["messages"])
    check("Summarize the conversation" in summ and "OLD-ALPHA" in summ, "summary: %s" % summ[:300])
    check(not b[1].get("tools") and not b[1].get("stream"), "the summary request: %r" % b[1])
    turn = json.dumps(b[2]["messages"])
    check("OLD-ALPHA" not in turn and "SUMMARY: the user sent" in turn and
          "SECOND question" in turn, "the view after the summary: %s" % turn[:400])
    c = [u for _, u in a.updates(sid, t0) if u["sessionUpdate"] == "usage_update" and
         (u.get("_meta") or {}).get("peri.compaction")]
    check(len(c) == 1 and c[0]["_meta"]["peri.compaction"]["method"] == "summary",
          "compaction update: %r" % c)
    a.finish()
    b2 = E.agent(start)
    b2.result("session/load", {"sessionId": sid, "cwd": "/work/project", "mcpServers": []})
    check(wait_done(b2, prompt(b2, sid, "THIRD")).get("result") == {"stopReason": "end_turn"},
          "three")
    turn = json.dumps(E.mock.requests()[-1]["body"]["messages"])
    check("OLD-ALPHA" not in turn and "SUMMARY: the user sent" in turn,
          "compaction not persisted: %s" % turn[:400])
    b2.finish()


def s_telemetry(E):
    """One OTLP span per turn to settings.telemetry.url with the host's `telemetry`
    credential; no prompt or output in it; a failing or hanging collector never changes a
    turn, and a close does not wait for it."""
    col = Collector()
    try:
        E.allow.append("127.0.0.1:%d" % col.port)
        start = E.start_object()
        start["settings"]["telemetry"] = {"url": "http://127.0.0.1:%d/v1/traces" % col.port,
                                          "serviceName": "tenant-7"}
        E.mock.script([{"text": "SECRET-ANSWER", "usage": {"input": 11, "output": 4}},
                       {"text": "second"}, {"text": "third"}])
        a = E.agent(start, env_extra={"PAW_TELEMETRY_TOKEN": "tel-token"})
        sid = E.new_session(a)
        check(wait_done(a, prompt(a, sid, "SECRET-PROMPT")).get("result") ==
              {"stopReason": "end_turn"}, "turn")
        check(col.wait_posts(1) == 1, "spans: %r" % col.posts)
        path, h, res, span, attrs = col.span(0)
        check(path == "/v1/traces", "path %r" % path)
        check(h.get("authorization") == "Bearer tel-token" and
              h.get("content-type") == "application/json", "headers %r" % h)
        check(res["service.name"] == {"stringValue": "tenant-7"} and
              res["peri.form"] == {"stringValue": "wasm"}, "resource %r" % res)
        check(attrs["peri.session.id"] == sid and attrs["peri.machine.id"] == MACHINE_A and
              attrs["gen_ai.request.model"] == "mock-1" and attrs["gen_ai.system"] == "openai" and
              attrs["gen_ai.usage.input_tokens"] == "11" and
              attrs["gen_ai.usage.output_tokens"] == "4" and
              attrs["peri.stop_reason"] == "end_turn", "attributes %r" % attrs)
        check(len(span["traceId"]) == 32 and len(span["spanId"]) == 16 and
              span["status"] == {"code": 1} and
              int(span["endTimeUnixNano"]) >= int(span["startTimeUnixNano"]) > 10**18,
              "span %r" % span)
        raw = json.dumps(col.posts[0][2])
        check("SECRET-PROMPT" not in raw and "SECRET-ANSWER" not in raw, "content leaked")
        # a collector that fails: the turn is unaffected, a warning is logged
        col.status = 503
        check(wait_done(a, prompt(a, sid, "two")).get("result") == {"stopReason": "end_turn"},
              "turn with a failing collector")
        deadline = time.monotonic() + 10
        while "collector answered HTTP 503" not in a.err() and time.monotonic() < deadline:
            time.sleep(0.05)
        check("collector answered HTTP 503" in a.err() and "side channel" in a.err(),
              "no warning: %r" % a.err()[-500:])
        # a collector that hangs: the turn answers, and the close settles at once anyway
        col.status, col.hang = 200, True
        check(wait_done(a, prompt(a, sid, "three")).get("result") == {"stopReason": "end_turn"},
              "turn with a hanging collector")
        col.wait_posts(3)
        t0 = time.monotonic()
        a.finish()
        check(time.monotonic() - t0 < 5, "the close waited for the collector")
        # a malformed telemetry setting refuses the start, saying why
        bad = E.start_object()
        bad["settings"]["telemetry"] = {"url": "ftp://x"}
        b = E.agent(bad, init=False)
        check(b.wait_exit(10) == 2 and "telemetry.url must be an http(s) URL" in b.err(),
              "bad telemetry: %r" % b.err()[-400:])
    finally:
        col.stop()


def s_cancel_and_close(E):
    E.mock.script([{"text": ["a", "b", "c"], "hang": True, "hang_after": 2}])
    a = E.agent()
    sid = E.new_session(a)
    rid = prompt(a, sid, "hang")
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk", "first chunk", sid=sid)
    a.cancel(sid, rid)
    # close while a turn runs: the turn is cancelled, then close answers {}
    E.mock.script([{"text": ["x"], "hang": True, "hang_after": 2}])
    rid = prompt(a, sid, "hang again")
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk" and
                  u["content"]["text"] == "x", "chunk x", sid=sid)
    cid = a.request("session/close", {"sessionId": sid})
    r = a.response(rid)
    check(r.get("result") == {"stopReason": "cancelled"}, "prompt under close: %r" % r)
    check(a.response(cid).get("result") == {}, "close")
    r = a.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
    check(r.get("error", {}).get("code") == -32002, "closed session: %r" % r)
    a.finish()


def s_concurrent(E):
    E.mock.script({"responses": [], "default": {"text": ["one ", "two ", "three"],
                                                "delay_ms": 60}})
    a = E.agent()
    s1, s2 = E.new_session(a), E.new_session(a)
    t0 = time.monotonic()
    r1, r2 = prompt(a, s1, "first"), prompt(a, s2, "second")
    x1, x2 = wait_done(a, r1), wait_done(a, r2)
    took = time.monotonic() - t0
    check(x1.get("result") == x2.get("result") == {"stopReason": "end_turn"}, "%r %r" % (x1, x2))
    check(text_of(a.updates(s1)) == text_of(a.updates(s2)) == "one two three", "texts")
    # interleaved on the one loop: session 2's first chunk came before session 1 ended
    first2 = min(t for t, f in a.log if f.get("method") == "session/update"
                 and f["params"]["sessionId"] == s2)
    end1 = max(t for t, f in a.log if f.get("method") == "session/update"
               and f["params"]["sessionId"] == s1)
    check(first2 < end1, "not interleaved (took %.2fs)" % took)
    a.finish()


def s_model_errors(E):
    E.mock.script([{"status": 500}, {"status": 401}])
    a = E.agent()
    sid = E.new_session(a)
    r = wait_done(a, prompt(a, sid, "x"))
    e = r.get("error", {})
    check(e.get("code") == -32000 and e.get("data", {}).get("kind") == "llm_http" and
          e["data"].get("status") == 500, "500: %r" % r)
    r = wait_done(a, prompt(a, sid, "y"))
    e = r.get("error", {})
    check(e.get("code") == -32000 and e.get("data", {}).get("status") == 401, "401: %r" % r)
    a.finish()
    # a retryable failure waits on a host timer (the turn's WAIT), then the same call again
    E.mock.script([{"status": 503, "retry_after": "1"}, {"text": "recovered"}])
    start = E.start_object()
    start["settings"]["maxRetries"] = 2
    b = E.agent(start)
    sid = E.new_session(b)
    t0 = time.monotonic()
    r = wait_done(b, prompt(b, sid, "z"))
    check(r.get("result") == {"stopReason": "end_turn"}, "retried: %r" % r)
    check(time.monotonic() - t0 >= 0.9, "Retry-After not waited")
    check(text_of(b.updates(sid)) == "recovered", "text: %r" % text_of(b.updates(sid)))
    check(len(E.mock.requests()) == 4, "requests: %d" % len(E.mock.requests()))
    b.finish()


def s_port_refused(E):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    E.allow.append("127.0.0.1:%d" % port)
    a = E.agent(E.start_object(model_url="http://127.0.0.1:%d" % port))
    sid = E.new_session(a)
    r = wait_done(a, prompt(a, sid, "x"))
    e = r.get("error", {})
    check(e.get("code") == -32000 and "refused" in e.get("message", ""), "refused: %r" % r)
    a.finish()


def s_port_hangs(E):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)  # a backlog that is full at once: further connects hang
    port = srv.getsockname()[1]
    E.allow.append("127.0.0.1:%d" % port)
    fill = []
    for _ in range(8):
        c = socket.socket()
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fill.append(c)
    try:
        # the store itself on a port that never answers: the open times out, typed
        a = E.agent(dict(E.start_object(), storage={
            "url": "postgresql://%s@127.0.0.1:%d/%s?sslmode=disable" % (ROLE, port, DB),
            "credential": {"source": "host"}}), init=False,
            env_extra={"PAW_CONNECT_TIMEOUT_MS": "400"})
        r = a.call("session/new", {"cwd": "/w", "mcpServers": []})
        e = r.get("error", {})
        check(e.get("code") == -32603 and "tim" in e.get("message", "").lower() and
              "stopped" not in e.get("message", ""), "store hang: %r" % r)
        a.finish()
    finally:
        for c in fill:
            c.close()
        srv.close()


def s_close_settles(E):
    E.mock.script([{"text": ["a"], "hang": True, "hang_after": 2}])
    a = E.agent(env_extra={"PAW_CLOSE_AFTER_MS": "1500"})
    sid = E.new_session(a)
    rid = prompt(a, sid, "hang")
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk", "chunk", sid=sid)
    r = a.response(rid, timeout=10)
    check(r.get("result") == {"stopReason": "cancelled"}, "turn under paw_close: %r" % r)
    rc = a.wait_exit(10)
    check(rc == 0, "exit %r: %s" % (rc, a.err()[-800:]))
    check('paw: settled {"settled":true' in a.err(), "report: %s" % a.err()[-800:])
    check("Sanitizer" not in a.err(), "sanitizer: %s" % a.err()[-3000:])


SCENARIOS = {
    "start_errors": s_start_errors,
    "local_store_refused": s_local_store_refused,
    "initialize": s_initialize,
    "bad_input": s_bad_input,
    "prompt_stream_and_tool": s_prompt_stream_and_tool,
    "tool_source": s_tool_source,
    "deep_args": s_deep_args,
    "tools_two_sessions": s_tools_two_sessions,
    "mcp_http": s_mcp_http,
    "load_and_list": s_load_and_list,
    "options_fork_delete": s_options_fork_delete,
    "autocompact": s_autocompact,
    "telemetry": s_telemetry,
    "cancel_and_close": s_cancel_and_close,
    "concurrent": s_concurrent,
    "model_errors": s_model_errors,
    "port_refused": s_port_refused,
    "port_hangs": s_port_hangs,
    "close_settles": s_close_settles,
}


def setup_db():
    return pg_role_db(ROLE, PASSWORD, DB)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    exe, mock_py = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(SCENARIOS)
    if os.environ.get("PAW_MODULE") and not sys.argv[3:]:
        # the test tool source is linked into paw_native only; the module's own tool
        # source is the MCP client
        names.remove("tool_source")
        names.remove("tools_two_sessions")
        print("not run under the engine: tool_source, tools_two_sessions (their tool source "
              "is paw_native's)")
    try:
        pg_port = setup_db()
    except (Fail, subprocess.CalledProcessError, FileNotFoundError) as e:
        print("FAIL setup: %s" % e)
        return 1
    failed = 0
    for name in names:
        E = Env(exe, mock_py, pg_port)
        try:
            SCENARIOS[name](E)
            print("PASS " + name, flush=True)
        except Fail as e:
            failed += 1
            print("FAIL %s: %s" % (name, e), flush=True)
            for a in E.agents:
                sys.stdout.write("".join(a.stderr)[-2500:])
                if os.environ.get("PAW_E2E_VERBOSE"):
                    for t, f in a.log:
                        print(json.dumps(f)[:300])
        finally:
            E.cleanup()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
