#!/usr/bin/env python3
"""run.py: the cross-host ACP scenarios. The same scenarios, with the same checks, run
against each form of the agent host on one real PostgreSQL (pg_cluster.sh with
PERI_PG_TCP=1: the module reaches the store only over TCP, with scram-sha-256):

  native  `peri acp --store postgresql://…`           (src/acp; the reference)
  wasm    `peri acp --wasm --store postgresql://…`    (the module under Peri-C's engine)
  node    `node sdk/js/bin/peri-wasm.mjs acp --module peri-agent.wasm --store …`

    pg_cluster.sh python3 run.py PERI MOCK_MODEL_PY HOST [PERI_WASM_MJS MODULE] [SCENARIO...]

HOST is native, wasm or node (node needs PERI_WASM_MJS and MODULE). Every scenario
starts its own processes (a fresh HOME, settings and mock model) on the one database;
each prints PASS NAME or FAIL NAME: WHY. Exit status 0 when all passed.

Only scenarios that need no local files and no shell are here (the module has neither).
Where the hosts legitimately differ, the scenario says so next to the branch on HOST;
nothing is skipped silently.
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from acp_harness import pg_role_db, Agent, Env, Fail, check, prompt, text_of  # noqa: E402

MACHINE_A = "0190f5e4-0000-7000-8000-0000000000d1"
MACHINE_B = "0190f5e4-0000-7000-8000-0000000000d2"
ROLE, PASSWORD, DB = "xhost_role", "xhost secret", "xhost_db"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
WAIT = 30.0  # every wait's bound here: the module under the engine on a busy machine


class Host:
    """How to start one form of the agent host with `peri acp`'s flags."""

    def __init__(self, kind, peri, mjs=None, module=None):
        self.kind, self.peri, self.mjs, self.module = kind, peri, mjs, module
        self.store = None  # the store URL (set once the database exists)

    @property
    def wasm_form(self):
        return self.kind in ("wasm", "node")

    def argv(self, extra):
        if self.kind == "native":
            return [self.peri, "acp", "--store", self.store] + extra
        if self.kind == "wasm":
            return [self.peri, "acp", "--wasm", "--store", self.store] + extra
        return ["node", self.mjs, "acp", "--module", self.module, "--store", self.store] + extra


class HostAgent(Agent):
    """Agent with the host's command line (the harness's Agent starts `peri acp --db`)."""

    def __init__(self, host, env, extra):
        self.proc = subprocess.Popen(host.argv(extra), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        import queue
        self.frames = queue.Queue()
        self.log = []
        self.next_id = 100
        self.pending = []
        self.bad_lines = []
        self.permission_answer = "allow_once"
        self.stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_err, daemon=True).start()

    def err(self):
        return "".join(self.stderr)

    def finish(self):
        """EOF: the host ends cleanly (exit 0, nothing on stdout that is not JSON)."""
        self.proc.stdin.close()
        try:
            rc = self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Fail("the host did not exit after EOF; stderr: " + self.err()[-1500:])
        check(rc == 0, "exit status %r; stderr: %s" % (rc, self.err()[-1500:]))


class XEnv(Env):
    def __init__(self, host, mock_py):
        Env.__init__(self, host.peri, mock_py)
        self.host = host

    def start(self, machine=MACHINE_A, init=True, allow=(), **env):
        extra = ["--machine-id", machine, "--cwd", self.cwd]
        for a in allow:
            if self.host.wasm_form:  # the engine hosts grant the network per destination
                extra += ["--allow", a]
        a = HostAgent(self.host, self.env(**env), extra)
        self.agents.append(a)
        if init:
            r = a.result("initialize", {"protocolVersion": 1, "clientCapabilities": {}},
                         timeout=WAIT)
            check(r["protocolVersion"] == 1, "protocolVersion: %r" % r)
        return a

    def new(self, a, cwd="/work/project", servers=()):
        r = a.result("session/new", {"cwd": cwd, "mcpServers": list(servers)}, timeout=WAIT)
        check(UUID.match(r.get("sessionId", "")), "sessionId: %r" % r)
        return r["sessionId"]


def done(a, rid, timeout=WAIT):
    return a.response(rid, timeout)


def turn(a, sid, text):
    return done(a, prompt(a, sid, text))


def cwd_of(E, tag):
    """A cwd of this run only (the database is shared by the scenarios and the hosts).
    Native canonicalises cwd against the real file system, the module in its virtual
    workspace: a real directory serves both."""
    d = os.path.join(E.cwd, tag)
    os.makedirs(d, exist_ok=True)
    return d


# ---------------------------------------------------------------- scenarios

def s_initialize(E):
    a = E.start(init=False)
    r = a.result("initialize", {"protocolVersion": 1, "clientCapabilities": {
        "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}}, timeout=WAIT)
    check(r.get("protocolVersion") == 1, "protocolVersion: %r" % r)
    caps = r.get("agentCapabilities", {})
    check(caps.get("loadSession") is True, "loadSession: %r" % caps)
    pc = caps.get("promptCapabilities", {})
    check(pc.get("image") is True and pc.get("embeddedContext") is True, "prompt caps: %r" % pc)
    mc = caps.get("mcpCapabilities", {})
    check(mc.get("http") is True, "mcpCapabilities.http: %r" % mc)
    check("list" in caps.get("sessionCapabilities", {}), "session/list not offered: %r" % caps)
    check(isinstance(r.get("authMethods"), list), "authMethods: %r" % r)
    info = r.get("agentInfo", {})
    version = subprocess.run([E.host.peri, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.split()[-1]
    check(info.get("name") == "peri-c" and info.get("version") == version,
          "agentInfo %r (peri --version: %s)" % (info, version))
    if E.host.wasm_form:
        # Legitimate differences of the module, each for a reason:
        #  - model credentials come from the embedding host (credential model:<name>), so
        #    there is nothing to authenticate: no authMethods, authenticate is -32601;
        #  - no legacy SSE MCP client inside (streamable HTTP only): sse false;
        #  - it says which form it is.
        check(r["authMethods"] == [], "authMethods in the module: %r" % r["authMethods"])
        check(mc.get("sse") is False, "sse: %r" % mc)
        check(caps.get("_meta", {}).get("peri.form") == "wasm", "peri.form: %r" % caps)
        r3 = a.call("authenticate", {"methodId": "x"}, timeout=WAIT)
        check(r3.get("error", {}).get("code") == -32601 and
              "embedding host" in r3["error"]["message"], "authenticate: %r" % r3)
    else:
        check(r["authMethods"] and all("id" in m for m in r["authMethods"]),
              "authMethods: %r" % r["authMethods"])
        check(mc.get("sse") is True, "sse: %r" % mc)
    # a protocol version the host does not speak: it answers with its own (ACP's rule)
    r2 = a.result("initialize", {"protocolVersion": 99, "clientCapabilities": {}}, timeout=WAIT)
    check(r2.get("protocolVersion") == 1, "version 99: %r" % r2)
    a.finish()


def s_prompt_stream(E):
    E.mock.script([{"text": ["Hel", "lo ", "there"], "usage": {"input": 10, "output": 3}}])
    a = E.start()
    sid = E.new(a, cwd_of(E, "stream"))
    r = turn(a, sid, "say hello")
    check(r.get("result") == {"stopReason": "end_turn"}, "prompt: %r" % r)
    chunks = [u["content"]["text"] for _, u in a.updates(sid)
              if u["sessionUpdate"] == "agent_message_chunk"]
    check("".join(chunks) == "Hello there" and len(chunks) >= 2, "chunks: %r" % chunks)
    # the chunks came before the answer (streamed, not sent at the end)
    t_answer = max(t for t, f in a.log if f.get("id") is not None and "result" in f)
    t_first = min(t for t, f in a.log if f.get("method") == "session/update"
                  and f["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    check(t_first <= t_answer, "chunks after the answer")
    req = E.mock.requests()[-1]
    auth = {k.lower(): v for k, v in req.get("headers", {}).items()}.get("authorization")
    check(auth == "Bearer test-key", "the model saw %r" % auth)
    info = [u for _, u in a.updates(sid) if u["sessionUpdate"] == "session_info_update"]
    check(len(info) == 1 and info[0]["title"] == "say hello", "title update: %r" % info)
    cmds = [u for _, u in a.updates(sid) if u["sessionUpdate"] == "available_commands_update"]
    if E.host.wasm_form:
        # A gap of the module, not a property of the form: it has no slash commands yet
        # (/compact, /clear, /model, /mode, /goal), so it announces none. Checked so that
        # whoever adds them updates this runner.
        check(cmds == [], "the module announced commands: %r" % cmds)
    else:
        check(len(cmds) == 1 and {c["name"] for c in cmds[0]["availableCommands"]} >=
              {"compact", "clear", "model", "mode"}, "commands: %r" % cmds)
    a.finish()


def s_prompt_blocks(E):
    """The content blocks initialize offers (image, embedded resources) reach the model as
    natively, in the client's order; one the model cannot take (audio) is -32602 naming
    why."""
    E.mock.script({"responses": [], "default": {"text": "ok"}})
    a = E.start()
    sid = E.new(a, cwd_of(E, "blocks"))
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAA"
           "BJRU5ErkJggg==")
    cases = [
        ([{"type": "text", "text": "see"},
          {"type": "resource", "resource": {"uri": "file:///x/a.txt", "mimeType": "text/plain",
                                            "text": "hello res"}}],
         "see\n[Resource: file:///x/a.txt]\nhello res"),
        ([{"type": "resource_link", "uri": "file:///x/b.txt", "name": "b.txt"}],
         "[Resource: b.txt](file:///x/b.txt)"),
        ([{"type": "text", "text": "img"}, {"type": "image", "mimeType": "image/png", "data": png}],
         [{"text": "img", "type": "text"},
          {"image_url": {"url": "data:image/png;base64," + png}, "type": "image_url"}]),
    ]
    for blocks, want in cases:
        n0 = len(E.mock.requests())
        r = a.call("session/prompt", {"sessionId": sid, "prompt": blocks}, timeout=WAIT)
        check(r.get("result") == {"stopReason": "end_turn"}, "%r: %r" % (blocks[-1]["type"], r))
        got = [m for m in E.mock.requests()[n0]["body"]["messages"] if m["role"] == "user"][-1]
        check(got == {"role": "user", "content": want}, "the model got %r" % got)
    r = a.call("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}]}, timeout=WAIT)
    check(r.get("error") == {"code": -32602, "message": "prompt has no usable content: an audio "
                             "block: the model openai:mock-model does not take audio input "
                             "(OpenAI audio models do)"}, "audio: %r" % r)
    a.finish()


def s_cancel(E):
    E.mock.script([{"text": ["a", "b", "c"], "hang": True, "hang_after": 2},
                   {"text": "after the cancel"}])
    a = E.start()
    cwd = cwd_of(E, "cancel")
    sid = E.new(a, cwd)
    rid = prompt(a, sid, "hang")
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk", "first chunk",
                  timeout=WAIT, sid=sid)
    a.cancel(sid, rid, timeout=WAIT)
    # the session goes on; the model sees the cancelled prompt in its history
    r = turn(a, sid, "again")
    check(r.get("result") == {"stopReason": "end_turn"}, "after cancel: %r" % r)
    msgs = E.mock.requests()[-1]["body"]["messages"]
    roles = [m["role"] for m in msgs if m["role"] != "system"]
    users = [json.dumps(m["content"]) for m in msgs if m["role"] == "user"]
    check(roles == ["user", "assistant", "user"] and "hang" in users[0] and "again" in users[1],
          "history after the cancel: %r" % msgs)
    a.finish()
    # what was persisted of the cancelled turn: the prompt, then the next turn, in order
    b = E.start()
    b.result("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []}, timeout=WAIT)
    ups = b.updates(sid)
    # the streamed part of the cancelled answer is kept, as natively
    want = [("user_message_chunk", "hang"), ("agent_message_chunk", "a"),
            ("user_message_chunk", "again"), ("agent_message_chunk", "after the cancel")]
    got = [(u["sessionUpdate"], u["content"]["text"]) for _, u in ups
           if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")]
    check(got == want, "replay after the cancel: %r" % got)
    b.finish()


def s_load_replay(E):
    E.mock.script([{"text": "first answer"}, {"text": "second answer"}, {"text": "third"}])
    cwd = cwd_of(E, "load")
    a = E.start()
    sid = E.new(a, cwd)
    for t in ("one", "two"):
        check(turn(a, sid, t).get("result") == {"stopReason": "end_turn"}, t)
    a.finish()
    # a NEW process of the same host and machine id
    b = E.start()
    r = b.result("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []}, timeout=WAIT)
    check("peri.readOnly" not in r.get("_meta", {}), "own session read-only: %r" % r)
    check(r.get("modes", {}).get("currentModeId") == "default", "modes: %r" % r)
    ups = b.updates(sid)
    check(text_of(ups, "user_message_chunk") == "onetwo", "replayed user: %r" % ups)
    check(text_of(ups) == "first answersecond answer", "replayed agent: %r" % ups)
    check(all(f["params"].get("_meta", {}).get("periReplay") for _, f in b.log
              if f.get("method") == "session/update"
              and f["params"]["update"]["sessionUpdate"] in ("user_message_chunk",
                                                             "agent_message_chunk")),
          "replay flag missing")
    check(turn(b, sid, "three").get("result") == {"stopReason": "end_turn"}, "three")
    msgs = E.mock.requests()[-1]["body"]["messages"]
    check(sum(1 for m in msgs if m["role"] == "user") == 3, "history sent: %r" % msgs)
    r = b.call("session/load", {"sessionId": "0190f5e4-0000-7000-8000-000000000999",
                                "cwd": cwd, "mcpServers": []}, timeout=WAIT)
    check(r.get("error", {}).get("code") == -32002, "unknown session: %r" % r)
    b.finish()
    # another machine: loads it read-only, cannot prompt it
    c = E.start(machine=MACHINE_B)
    foreign = {"peri.machineId": MACHINE_A, "peri.readOnly": True}
    lst = c.result("session/list", {"cwd": cwd}, timeout=WAIT)["sessions"]
    check([(x["sessionId"], x.get("_meta")) for x in lst] == [(sid, foreign)],
          "foreign list: %r" % lst)
    lst = c.result("session/list", {"cwd": cwd, "_meta": {"peri.allMachines": False}},
                   timeout=WAIT)["sessions"]
    check(lst == [], "this machine's only: %r" % lst)
    r = c.result("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []}, timeout=WAIT)
    check(r.get("_meta") == foreign, "foreign load: %r" % r)
    check(text_of(c.updates(sid)) == "first answersecond answerthird", "foreign replay")
    r = c.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]},
               timeout=WAIT)
    check(r.get("error") == {"code": -32602, "data": {"sessionId": sid}, "message":
                             "Session %s belongs to machine %s, not to this host's machine %s"
                             % (sid, MACHINE_A, MACHINE_B)}, "foreign prompt: %r" % r)
    check(c.result("session/close", {"sessionId": sid}, timeout=WAIT) == {}, "foreign close")
    c.finish()


def s_list_paging(E):
    E.mock.script({"responses": [], "default": {"text": "ok"}})
    cwd = cwd_of(E, "listed")
    a = E.start()
    # more than one page (100); a session is listed once it has a message (native lists
    # no empty thread), so each gets a prompt, the last one a title of its own
    made = [E.new(a, cwd) for _ in range(102)]
    rids = [prompt(a, s, "hello") for s in made[1:]]
    for rid in rids:
        check(done(a, rid).get("result") == {"stopReason": "end_turn"}, "prompt")
    check(turn(a, made[0], "named").get("result") == {"stopReason": "end_turn"}, "prompt")
    seen, cursor, pages = [], None, 0
    while True:
        params = {"cwd": cwd}
        if cursor:
            params["cursor"] = cursor
        r = a.result("session/list", params, timeout=WAIT)
        pages += 1
        seen += [s["sessionId"] for s in r["sessions"]]
        for s in r["sessions"]:
            check(s.get("cwd") == cwd, "cwd of a listed session: %r" % s)
        cursor = r.get("nextCursor")
        if not cursor or pages > 5:
            break
    check(pages == 2, "pages: %d, %d listed" % (pages, len(seen)))
    check(sorted(seen) == sorted(made), "listed %d of %d (dups %d)"
          % (len(set(seen) & set(made)), len(made), len(seen) - len(set(seen))))
    first = [s for s in a.result("session/list", {"cwd": cwd}, timeout=WAIT)["sessions"]]
    check(first[0]["sessionId"] == made[0] and first[0].get("title") == "named",
          "the newest first, titled by its prompt: %r" % first[:2])
    r = a.call("session/list", {"cwd": 5}, timeout=WAIT)
    check(r.get("error", {}).get("code") == -32602, "cwd 5: %r" % r)
    a.finish()


def s_cwd_spellings(E):
    """Spellings of one directory are one workspace: native canonicalises cwd with the
    file system (realpath), the module lexically (it sees no host file system), so the
    spellings here hold no symlink and the hosts agree."""
    E.mock.script({"responses": [], "default": {"text": "ok"}})
    base = cwd_of(E, "spell")
    os.makedirs(os.path.join(base, "p"), exist_ok=True)
    os.makedirs(os.path.join(base, "q"), exist_ok=True)
    want = os.path.realpath(os.path.join(base, "p"))
    check(want == os.path.normpath(os.path.join(base, "p")), "the test directory is behind "
          "a symlink: %s" % want)
    a = E.start()
    made = []
    for c in ("/p", "/p/", "/./p", "/q/../p", "//p", "/q/./../p//"):
        sid = E.new(a, base + c)
        check(turn(a, sid, "hello").get("result") == {"stopReason": "end_turn"}, "prompt")
        made.append(sid)
    for c in ("/p", "//q/../p/."):
        r = a.result("session/list", {"cwd": base + c}, timeout=WAIT)
        got = [x["sessionId"] for x in r["sessions"]]
        check(sorted(got) == sorted(made), "list %s: %d of %d sessions: %r"
              % (c, len(set(got) & set(made)), len(made), r))
        for x in r["sessions"]:
            check(x.get("cwd") == want, "cwd of a listed session: %r" % x)
    a.finish()


def s_nul_refused(E):
    """A string parameter holding U+0000 is refused with -32602 naming it, never cut short
    at the NUL (as a C string "<own id>\\u0000x" would be the host's own machine id)."""
    a = E.start(init=False)
    r = a.call("initialize", {"protocolVersion": 1, "clientCapabilities": {
        "_meta": {"peri.machineId": MACHINE_A + "\u0000x"}}}, timeout=WAIT)
    check(r.get("error", {}).get("code") == -32602 and
          "machine identity is fixed" in r["error"]["message"], "machineId + NUL: %r" % r)
    r = a.result("initialize", {"protocolVersion": 1, "clientCapabilities": {
        "_meta": {"peri.machineId": MACHINE_A}}}, timeout=WAIT)
    check(r.get("protocolVersion") == 1, "initialize: %r" % r)
    d = cwd_of(E, "nul")
    sid = E.new(a, d)

    def nul(name):
        return {"code": -32602, "message": "%s must not contain a NUL character (U+0000)" % name}
    table = [  # (method, params, the native host's answer)
        ("session/new", {"cwd": d + "\u0000x", "mcpServers": []}, nul("cwd")),
        ("session/list", {"cwd": d + "\u0000x"}, nul("cwd")),
        ("session/list", {"cursor": "\u0000"}, nul("cursor")),
        ("session/set_mode", {"sessionId": sid, "modeId": "plan\u0000x"}, nul("modeId")),
        ("session/set_config_option", {"sessionId": sid, "configId": "mode",
                                       "value": "plan\u0000x"}, nul("value")),
        ("session/set_config_option", {"sessionId": sid, "configId": "mode\u0000y",
                                       "value": "plan"}, nul("configId")),
    ]
    for method, params, want in table:
        r = a.call(method, params, timeout=WAIT)
        check(r.get("error") == want, "%s %r: %r, native gives %r" % (method, params, r, want))
    a.finish()


def s_close(E):
    E.mock.script([{"text": "one"}, {"text": ["x"], "hang": True, "hang_after": 2}])
    a = E.start()
    s1 = E.new(a, cwd_of(E, "close"))
    check(turn(a, s1, "first").get("result") == {"stopReason": "end_turn"}, "first")
    check(a.result("session/close", {"sessionId": s1}, timeout=WAIT) == {}, "close idle")
    r = a.call("session/prompt", {"sessionId": s1, "prompt": [{"type": "text", "text": "x"}]},
               timeout=WAIT)
    check(r.get("error", {}).get("code") == -32002, "prompt on a closed session: %r" % r)
    r = a.call("session/close", {"sessionId": s1}, timeout=WAIT)
    check(r.get("result") == {}, "closed twice (idempotent, as natively): %r" % r)
    # close while a turn runs: the turn ends cancelled, then close answers {}
    s2 = E.new(a, cwd_of(E, "close"))
    rid = prompt(a, s2, "hang")
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk", "chunk x",
                  timeout=WAIT, sid=s2)
    cid = a.request("session/close", {"sessionId": s2})
    r = done(a, rid)
    check(r.get("result") == {"stopReason": "cancelled"}, "prompt under close: %r" % r)
    check(done(a, cid).get("result") == {}, "close under a turn")
    # a closed session can be loaded again
    r = a.result("session/load", {"sessionId": s1, "cwd": cwd_of(E, "close"), "mcpServers": []},
                 timeout=WAIT)
    check(text_of(a.updates(s1)).count("one") >= 1, "reloaded: %r" % a.updates(s1))
    a.finish()


def s_concurrent(E):
    E.mock.script({"responses": [], "default": {"text": ["one ", "two ", "three"],
                                                "delay_ms": 80}})
    a = E.start()
    cwd = cwd_of(E, "conc")
    sids = [E.new(a, cwd) for _ in range(3)]
    rids = [prompt(a, s, "go %d" % i) for i, s in enumerate(sids)]
    for s, rid in zip(sids, rids):
        r = done(a, rid)
        check(r.get("result") == {"stopReason": "end_turn"}, "%s: %r" % (s, r))
        check(text_of(a.updates(s)) == "one two three", "text of %s: %r" % (s, a.updates(s)))
    # interleaved on one connection: the second session streamed before the first ended
    first2 = min(t for t, f in a.log if f.get("method") == "session/update"
                 and f["params"]["sessionId"] == sids[1])
    end1 = max(t for t, f in a.log if f.get("method") == "session/update"
               and f["params"]["sessionId"] == sids[0])
    check(first2 < end1, "the turns did not run at once")
    # a second prompt on a busy session is queued (answered after the first), not refused
    E.mock.script([{"text": "slow", "delay_ms": 300}, {"text": "queued"}])
    r1, r2 = prompt(a, sids[0], "busy"), prompt(a, sids[0], "next")
    x1, x2 = done(a, r1), done(a, r2)
    check(x1.get("result") == x2.get("result") == {"stopReason": "end_turn"}, "%r %r" % (x1, x2))
    a.finish()


def dropping_model():
    """A model that answers its headers and one SSE chunk, then closes the connection:
    a stream cut short (the transport failed; never a stop)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            try:
                c.settimeout(5)
                data = b""
                while b"\r\n\r\n" not in data:
                    data += c.recv(65536)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                          b'data: {"id":"x","object":"chat.completion.chunk","choices":'
                          b'[{"index":0,"delta":{"role":"assistant","content":"cut"}}]}\n\n')
            except OSError:
                pass
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    return srv


def s_model_errors(E):
    # no retries (the harness's settings): a 500 and a 429 are errors of the prompt
    E.mock.script([{"status": 500}, {"status": 429, "retry_after": "1"},
                   {"malformed": True}, {"text": "fine"}])
    a = E.start()
    sid = E.new(a, cwd_of(E, "errors"))
    for status in (500, 429):
        r = turn(a, sid, "x%d" % status)
        check(r.get("error") == {"code": -32000, "data": {"kind": "llm_http", "status": status},
                                 "message": "model call failed (http): HTTP %d: mock error %d"
                                 % (status, status)}, "%d: %r" % (status, r))
    r = turn(a, sid, "bad json")
    check(r.get("error") == {"code": -32000, "data": {"kind": "llm"}, "message":
                             "model call failed (protocol): bad JSON in the event stream: "
                             "string or '}' expected near 'this'"}, "bad JSON: %r" % r)
    # the session survives all of it
    check(turn(a, sid, "ok").get("result") == {"stopReason": "end_turn"}, "after the errors")
    a.finish()
    # with retries: a 429 and a 503 with Retry-After are waited out, then the same call
    E.settings({"maxRetries": 2})
    E.mock.script([{"status": 429, "retry_after": "1"}, {"status": 503, "retry_after": "1"},
                   {"text": "recovered"}])
    b = E.start()
    sid = E.new(b, cwd_of(E, "errors"))
    n0 = len(E.mock.requests())
    t0 = time.monotonic()
    r = turn(b, sid, "retry")
    check(r.get("result") == {"stopReason": "end_turn"}, "retried: %r" % r)
    check(time.monotonic() - t0 >= 1.8, "Retry-After not waited")
    check(len(E.mock.requests()) - n0 == 3, "requests: %d" % (len(E.mock.requests()) - n0))
    check(text_of(b.updates(sid)) == "recovered", "text: %r" % text_of(b.updates(sid)))
    b.finish()
    # a model stream cut short, and a model that hangs: never a stop. The model's idle
    # timeout is 300 s in every form (not configurable), too long for a test: the hang is
    # ended by a cancel (cancelled, the one stop that is right), the cut stream by the
    # transport's error.
    srv = dropping_model()
    try:
        port = srv.getsockname()[1]
        E.settings({"maxRetries": 0})
        c = E.start(allow=["127.0.0.1:%d" % port],
                    OPENAI_BASE_URL="http://127.0.0.1:%d/v1" % port)
        sid = E.new(c, cwd_of(E, "errors"))
        r = turn(c, sid, "cut")
        check(r.get("error") == {"code": -32000, "data": {"kind": "llm"}, "message":
                                 "model call failed (protocol): the event stream ended early"},
              "cut stream: %r" % r)
        check("agent_message_chunk" in [u["sessionUpdate"] for _, u in c.updates(sid)],
              "the chunk before the cut was not streamed")
        c.finish()
    finally:
        srv.close()
    E.mock.script([{"text": "never", "hang": True}])
    d = E.start()
    sid = E.new(d, cwd_of(E, "errors"))
    rid = prompt(d, sid, "hang")
    time.sleep(1.0)
    check(not any(f.get("id") == rid for _, f in d.log), "a hanging model answered the prompt")
    d.cancel(sid, rid, timeout=WAIT)
    d.finish()


def s_model_timeout(E):
    """A model endpoint that never accepts the connection (a listening socket whose
    backlog is full: the handshake is never completed). The connect deadline ends the
    turn with an error whose text says it timed out; a timeout is never a stop."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
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
        a = E.start(allow=["127.0.0.1:%d" % port],
                    OPENAI_BASE_URL="http://127.0.0.1:%d/v1" % port)
        sid = E.new(a, cwd_of(E, "timeout"))
        t0 = time.monotonic()
        r = done(a, prompt(a, sid, "anyone?"), timeout=90)
        took = time.monotonic() - t0
        e = r.get("error") or {}
        check("result" not in r and e.get("code") == -32000 and
              e.get("data") == {"kind": "llm"}, "timeout: %r" % r)
        check(e.get("message", "").startswith("model call failed (network): "), "text: %r" % r)
        # The connect deadline is the host's, not the module's: native's model client
        # (libcurl) gives up after 10 s in its own words; the engine and Node hosts' network
        # ports after 30 s ("timeout: ... within 30000 ms"). Both say it timed out.
        if E.host.wasm_form:
            check("timeout: " in e["message"] and "within 30000 ms" in e["message"],
                  "timeout text: %r" % r)
            check(25 <= took <= 60, "took %.1fs" % took)
        else:
            # (libcurl words its connect timeout either way, by where the wait ended, and
            # gives the time it really waited: 10000 ms or a few ms more on a busy machine)
            waited = re.search(r"after (\d+) ms", e["message"])
            check(("Timeout was reached" in e["message"] or
                   "Connection timeout after" in e["message"]) and waited is not None and
                  10000 <= int(waited.group(1)) < 15000, "timeout text: %r" % r)
            check(8 <= took <= 30, "took %.1fs" % took)
        a.finish()
    finally:
        for c in fill:
            c.close()
        srv.close()


def s_bad_input(E):
    a = E.start()
    a.send_raw("{not json")
    r = a.wait(lambda f: "error" in f and f.get("id") is None, WAIT, "parse error")[1]
    check(r["error"] == {"code": -32700, "message": "Parse error"}, "parse: %r" % r)
    r = a.call("no/such_method", {}, timeout=WAIT)
    check(r.get("error") == {"code": -32601, "message": "Method not found: no/such_method"},
          "unknown method: %r" % r)
    r = a.call("session/new", {"cwd": "/x"}, timeout=WAIT)
    check(r.get("error") == {"code": -32602, "message":
                             "missing required field: mcpServers (an array, may be empty)"},
          "missing mcpServers: %r" % r)
    r = a.call("session/new", {"mcpServers": []}, timeout=WAIT)
    check(r.get("error") == {"code": -32602,
                             "message": "missing required field: cwd (an absolute path)"},
          "missing cwd: %r" % r)
    r = a.call("session/new", {"cwd": 5, "mcpServers": []}, timeout=WAIT)
    check(r.get("error") == {"code": -32602,
                             "message": "cwd must be a string (an absolute path)"},
          "cwd 5: %r" % r)
    r = a.call("session/new", {"cwd": "/x", "mcpServers": {}}, timeout=WAIT)
    check(r.get("error") == {"code": -32602, "message": "mcpServers must be an array"},
          "mcpServers {}: %r" % r)
    r = a.call("session/prompt", {"sessionId": "0190f5e4-0000-7000-8000-000000000999",
                                  "prompt": [{"type": "text", "text": "hi"}]}, timeout=WAIT)
    check(r.get("error", {}).get("code") == -32002, "unknown session: %r" % r)
    r = a.call("session/prompt", {"sessionId": 7, "prompt": []}, timeout=WAIT)
    check(r.get("error", {}).get("code") == -32602, "sessionId 7: %r" % r)
    r = a.call("session/new", [1], timeout=WAIT)
    check(r.get("error", {}).get("code") == -32602, "params [1]: %r" % r)
    a.send_raw('{"jsonrpc": "2.0", "id": 7}')
    r = a.response(7, WAIT)
    check(r.get("error", {}).get("code") == -32600, "no method: %r" % r)
    sid = E.new(a, cwd_of(E, "bad"))
    unknown = "0190f5e4-0000-7000-8000-000000000999"
    inv = {"code": -32600, "message": "Invalid Request"}

    def p32602(msg):
        return {"code": -32602, "message": msg}
    table = [  # (method, params, the native host's answer)
        ("session/prompt", {"sessionId": sid}, p32602("missing prompt (ContentBlock[])")),
        ("session/prompt", {"sessionId": sid, "prompt": "hi"},
         p32602("missing prompt (ContentBlock[])")),
        ("session/prompt", {"sessionId": sid, "prompt": []},
         p32602("prompt has no usable content: empty prompt")),
        ("session/prompt", {"sessionId": sid, "prompt": [{"type": "nope"}]},
         p32602("prompt has no usable content: a content block of unsupported type nope")),
        ("session/prompt", {"prompt": []}, p32602("missing sessionId")),
        ("session/load", {"cwd": "/", "mcpServers": []}, p32602("missing sessionId")),
        ("session/load", {"sessionId": "zzz", "cwd": "/", "mcpServers": []},
         {"code": -32002, "data": {"sessionId": "zzz"}, "message": "Session not found: zzz"}),
        ("session/list", {"cursor": "garbage"}, p32602("bad cursor")),
        ("session/list", {"cursor": 5}, p32602("cwd and cursor must be strings")),
        ("session/close", {}, p32602("missing sessionId")),
        ("session/new", {"cwd": "rel", "mcpServers": []}, p32602("cwd must be an absolute path")),
        ("session/new", "x", inv),
        ("session/new", None, p32602("missing required field: cwd (an absolute path)")),
        ("session/set_mode", {"sessionId": sid, "modeId": "nope"},
         p32602("unknown modeId: nope (default, acceptEdits, plan, bypassPermissions)")),
    ]
    for method, params, want in table:
        r = a.call(method, params, timeout=WAIT)
        check(r.get("error") == want, "%s %r: %r, native gives %r" % (method, params, r, want))
    # closing a session that is not open is idempotent
    r = a.call("session/close", {"sessionId": unknown}, timeout=WAIT)
    check(r.get("result") == {}, "close of an unknown session: %r" % r)
    for raw in ('[]', '{"jsonrpc":"2.0","id":{"x":1},"method":"initialize"}'):
        a.send_raw(raw)
        r = a.wait(lambda f: "error" in f and f.get("id") is None, WAIT, raw)[1]
        check(r["error"] == inv, "%s: %r" % (raw, r))
    for rid, raw in ((8, '{"jsonrpc":"1.0","id":8,"method":"initialize"}'),
                     (9, '{"jsonrpc":"2.0","id":9,"method":5}')):
        a.send_raw(raw)
        check(a.response(rid, WAIT).get("error") == inv, raw)
    # notifications of nobody: no answer at all, and nothing breaks
    a.notify("session/cancel", {"sessionId": "nope"})
    a.notify("no/such", {})
    # malformed MCP entries: the module refuses them -32602 naming what an entry needs;
    # native ignores them silently (its session has no such server, no error is shown)
    r = a.call("session/new", {"cwd": cwd_of(E, "bad"), "mcpServers": [5]}, timeout=WAIT)
    if E.host.wasm_form:
        check(r.get("error", {}).get("code") == -32602 and
              "an HTTP entry needs name, url" in r["error"]["message"], "mcp [5]: %r" % r)
    else:
        check("result" in r, "mcp [5] (native): %r" % r)
    # a line longer than the frame limit (64 MiB): discarded and reported, id null
    big = b"x" * (1 << 20)
    for _ in range(65):
        a.proc.stdin.write(big)
    a.proc.stdin.write(b"\n")
    a.proc.stdin.flush()
    r = a.wait(lambda f: "error" in f and f.get("id") is None, 60, "frame too long")[1]
    check(r["error"] == {"code": -32600, "message": "Invalid Request: frame too long"},
          "huge line: %r" % r)
    # the process survived all of it
    E.mock.script([{"text": "still here"}])
    sid = E.new(a, cwd_of(E, "bad"))
    check(turn(a, sid, "alive?").get("result") == {"stopReason": "end_turn"}, "after bad input")
    a.finish()


class Workspace:
    """`peri mcp workspace --root DIR --listen 127.0.0.1:0` with a bearer token."""

    def __init__(self, E):
        self.root = tempfile.mkdtemp(prefix="xhost-ws-", dir=E.tmp)
        with open(os.path.join(self.root, "hello.txt"), "w") as f:
            f.write("mcp-secret-77\n")
        self.token = "xhost-token-0123456789abcdef"
        tf = os.path.join(E.tmp, "ws.token")
        with open(tf, "w") as f:
            f.write(self.token + "\n")
        os.chmod(tf, 0o600)
        pf = os.path.join(E.tmp, "ws.port")
        self.proc = subprocess.Popen([E.host.peri, "mcp", "workspace", "--root", self.root,
                                      "--listen", "127.0.0.1:0", "--token-file", tf,
                                      "--port-file", pf, "--unsandboxed"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env=E.env(model=False))
        deadline = time.monotonic() + WAIT
        while not (os.path.exists(pf) and open(pf).read().strip()):
            check(time.monotonic() < deadline and self.proc.poll() is None,
                  "peri mcp workspace did not start")
            time.sleep(0.05)
        self.port = int(open(pf).read().strip())
        self.url = "http://127.0.0.1:%d/mcp" % self.port

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def wait_mcp_status(a, sid, name):
    """The session's `_peri/mcp_status` (every configured server up or failed)."""
    f = a.wait(lambda f: f.get("method") == "_peri/mcp_status"
               and f["params"].get("sessionId") == sid, WAIT, "_peri/mcp_status")[1]
    st = {s["name"]: s["status"] for s in f["params"].get("servers", [])}
    check(st.get(name) == "ready", "MCP status: %r" % f["params"])
    return f["params"]


def mcp_round_trip(E, a, sid, tag):
    E.mock.script([
        {"tool_calls": [{"id": tag, "name": "mcp__ws__read", "arguments": {"path": "hello.txt"}}]},
        {"text": "read it"}])
    n0 = len(E.mock.requests())
    r = turn(a, sid, "read hello.txt")
    check(r.get("result") == {"stopReason": "end_turn"}, "MCP turn: %r" % r)
    reqs = E.mock.requests()[n0:]
    names = [t["function"]["name"] for t in reqs[0]["body"].get("tools") or []]
    check("mcp__ws__read" in names, "tools offered: %r" % names)
    tool_msgs = [m for m in reqs[1]["body"]["messages"] if m["role"] == "tool"]
    check(tool_msgs and "mcp-secret-77" in json.dumps(tool_msgs),
          "the MCP result did not reach the model: %r" % tool_msgs)
    done_ = [u for _, u in a.updates(sid) if u["sessionUpdate"] == "tool_call_update"
             and u["toolCallId"] == tag and u.get("status") == "completed"]
    check(done_, "no completed tool_call_update for %s" % tag)
    return names


def s_mcp_http(E):
    ws = Workspace(E)
    try:
        # 1. configured in the settings (the engine hosts grant the settings' URLs)
        E.settings({"maxRetries": 0, "mcpServers": {"ws": {
            "type": "http", "url": ws.url,
            "headers": {"Authorization": "Bearer " + ws.token}}}})
        a = E.start()
        sid = E.new(a, cwd_of(E, "mcp"))
        # the module connects the settings' servers once per instance (one client for
        # every session), natively each session has its own: either way the session's
        # answer names them and _peri/mcp_status follows
        wait_mcp_status(a, sid, "ws")
        names = mcp_round_trip(E, a, sid, "m1")
        if E.host.wasm_form:
            # no file system and no shell inside: only the server's tools are offered
            check(not any(n in ("read", "write", "edit", "shell") for n in names),
                  "native tools offered in the module: %r" % names)
        a.finish()
        # 2. given per session in session/new (ACP's http shape; the engine hosts must be
        # granted the URL: --allow)
        E.settings({"maxRetries": 0})
        b = E.start(allow=["127.0.0.1:%d" % ws.port])
        entry = {"type": "http", "name": "ws", "url": ws.url,
                 "headers": [{"name": "Authorization", "value": "Bearer " + ws.token}]}
        r = b.result("session/new", {"cwd": cwd_of(E, "mcp"), "mcpServers": [entry]},
                     timeout=WAIT)
        sid = r["sessionId"]
        listed = r.get("_meta", {}).get("peri.mcpServers")
        check(isinstance(listed, list) and [x["name"] for x in listed] == ["ws"] and
              listed[0]["status"] in ("starting", "ready"), "answer's _meta: %r" % r)
        wait_mcp_status(b, sid, "ws")
        mcp_round_trip(E, b, sid, "m2")
        # another session on the same connection does not see this session's server
        other = E.new(b, cwd_of(E, "mcp"))
        E.mock.script([{"text": "plain"}])
        n0 = len(E.mock.requests())
        check(turn(b, other, "tools?").get("result") == {"stopReason": "end_turn"}, "other")
        names = [t["function"]["name"] for t in E.mock.requests()[n0]["body"].get("tools") or []]
        check(not any(n.startswith("mcp__ws__") for n in names),
              "another session's MCP tools offered: %r" % names)
        # a wrong token: the server refuses, the session still works, the status says so
        bad = dict(entry, name="wrong", headers=[{"name": "Authorization",
                                                  "value": "Bearer nope-nope-nope-nope"}])
        sid2 = E.new(b, cwd_of(E, "mcp"), [bad])
        st = b.wait(lambda f: f.get("method") == "_peri/mcp_status"
                    and f["params"].get("sessionId") == sid2, WAIT, "status of wrong")[1]
        check({s["name"]: s["status"] for s in st["params"]["servers"]} == {"wrong": "failed"},
              "wrong token: %r" % st["params"])
        E.mock.script([{"text": "no tools"}])
        check(turn(b, sid2, "hi").get("result") == {"stopReason": "end_turn"}, "after failed")
        # stdio servers: native starts them; the module has no subprocesses and says so
        stdio = {"name": "local", "command": "/bin/true", "args": [], "env": []}
        r = b.call("session/new", {"cwd": cwd_of(E, "mcp"), "mcpServers": [stdio]}, timeout=WAIT)
        if E.host.wasm_form:
            check(r.get("error", {}).get("code") == -32602 and
                  "stdio MCP servers" in r["error"]["message"], "stdio: %r" % r)
        else:
            check("result" in r, "stdio (native): %r" % r)
        b.finish()
        # session/load in a new process with the server given again: connected anew
        b2 = E.start(allow=["127.0.0.1:%d" % ws.port])
        b2.result("session/load", {"sessionId": sid, "cwd": cwd_of(E, "mcp"),
                                   "mcpServers": [entry]}, timeout=WAIT)
        wait_mcp_status(b2, sid, "ws")
        mcp_round_trip(E, b2, sid, "m3")
        b2.finish()
        if E.host.wasm_form:
            # a URL the engine host was not granted: the session's server fails with a
            # reason naming the URL (the grant is never widened by a client)
            c = E.start()
            sid = E.new(c, cwd_of(E, "mcp"), [entry])
            st = c.wait(lambda f: f.get("method") == "_peri/mcp_status"
                        and f["params"].get("sessionId") == sid, WAIT, "status")[1]["params"]
            check(st["servers"] == [{"name": "ws", "status": "failed"}], "ungranted: %r" % st)
            check(any(ws.url in e and "not granted" in e for e in st.get("errors", [])),
                  "no reason naming the URL: %r" % st)
            c.finish()
    finally:
        ws.stop()


def s_refusal(E):
    """A refused turn is not part of the conversation (docs/acp.md "Refusal"): the next
    request does not hold it, a new process's load does not replay it, the name the
    refused prompt gave is taken back."""
    E.mock.script([{"text": "I can't help with that", "stop": "refusal"},
                   {"text": "sure"}, {"text": "again"}])
    cwd = cwd_of(E, "refusal")
    a = E.start()
    sid = E.new(a, cwd)
    check(turn(a, sid, "forbidden request").get("result") == {"stopReason": "refusal"},
          "refusal")
    check(turn(a, sid, "next").get("result") == {"stopReason": "end_turn"}, "next")
    msgs = json.dumps(E.mock.requests()[-1]["body"]["messages"])
    check("forbidden" not in msgs and "can't help" not in msgs, "sent: %s" % msgs[:500])
    info = [u.get("title", "absent") for _, u in a.updates(sid)
            if u["sessionUpdate"] == "session_info_update"]
    check(info == ["forbidden request", None, "next"], "titles %r" % info)
    lst = a.result("session/list", {"cwd": cwd}, timeout=WAIT)["sessions"]
    check([x.get("title") for x in lst] == ["next"], "list %r" % lst)
    a.finish()
    b = E.start()
    b.result("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []}, timeout=WAIT)
    ups = b.updates(sid)
    check(text_of(ups, "user_message_chunk") == "next" and text_of(ups) == "sure",
          "replayed: %r" % ups)
    check(turn(b, sid, "more").get("result") == {"stopReason": "end_turn"}, "more")
    msgs = json.dumps(E.mock.requests()[-1]["body"]["messages"])
    check("forbidden" not in msgs and "sure" in msgs, "sent after load: %s" % msgs[:500])
    b.finish()


def s_pipelined(E):
    """Requests sent right behind session/load, naming the session, run after it in order
    (docs/acp.md "Requests sent behind an opening")."""
    E.mock.script([{"text": "one"}, {"text": "two"}])
    cwd = cwd_of(E, "pipelined")
    a = E.start()
    sid = E.new(a, cwd)
    check(turn(a, sid, "p").get("result") == {"stopReason": "end_turn"}, "first")
    a.finish()
    b = E.start()
    load = {"sessionId": sid, "cwd": cwd, "mcpServers": []}
    b.send_raw("\n".join(json.dumps(f) for f in (
        {"jsonrpc": "2.0", "id": 1, "method": "session/load", "params": load},
        {"jsonrpc": "2.0", "id": 2, "method": "session/set_mode",
         "params": {"sessionId": sid, "modeId": "plan"}},
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
         "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "q"}]}})))
    check("result" in b.response(1, WAIT), "load")
    check(b.response(2, WAIT).get("result") == {}, "set_mode")
    r = b.response(3, WAIT)
    check(r.get("result") == {"stopReason": "end_turn"}, "prompt %r" % r)
    msgs = E.mock.requests()[-1]["body"]["messages"]
    texts = [m.get("content") for m in msgs if m["role"] != "system"]
    check(json.dumps(texts[-3:]) == json.dumps(["p", "one", "q"]), "history %r" % texts)
    check("Plan mode" in json.dumps(msgs[0]), "the prompt ran before set_mode")
    check(b.result("session/close", {"sessionId": sid}, timeout=WAIT) == {}, "close")
    # load + close: closed, not live again behind the close's answer
    b.send_raw("\n".join(json.dumps(f) for f in (
        {"jsonrpc": "2.0", "id": 5, "method": "session/load", "params": load},
        {"jsonrpc": "2.0", "id": 6, "method": "session/close", "params": {"sessionId": sid}})))
    check("result" in b.response(5, WAIT), "load")
    check(b.response(6, WAIT).get("result") == {}, "close")
    r = b.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]},
               timeout=WAIT)
    check(r.get("error", {}).get("code") == -32002, "closed session is live: %r" % r)
    b.finish()


SCENARIOS = {
    "initialize": s_initialize,
    "prompt_stream": s_prompt_stream,
    "prompt_blocks": s_prompt_blocks,
    "cancel": s_cancel,
    "load_replay": s_load_replay,
    "list_paging": s_list_paging,
    "cwd_spellings": s_cwd_spellings,
    "close": s_close,
    "concurrent": s_concurrent,
    "model_errors": s_model_errors,
    "model_timeout": s_model_timeout,
    "bad_input": s_bad_input,
    "nul_refused": s_nul_refused,
    "mcp_http": s_mcp_http,
    "refusal": s_refusal,
    "pipelined": s_pipelined,
}


def setup_db():
    return pg_role_db(ROLE, PASSWORD, DB)


def main():
    args = sys.argv[1:]
    if len(args) < 3 or args[2] not in ("native", "wasm", "node"):
        print(__doc__, file=sys.stderr)
        return 2
    peri, mock_py, kind = args[:3]
    rest = args[3:]
    mjs = module = None
    if kind == "node":
        if len(rest) < 2:
            print(__doc__, file=sys.stderr)
            return 2
        mjs, module = os.path.abspath(rest[0]), os.path.abspath(rest[1])
        rest = rest[2:]
    names = rest or list(SCENARIOS)
    bad = [n for n in names if n not in SCENARIOS]
    if bad:
        print("unknown scenarios: %s (known: %s)" % (" ".join(bad), " ".join(SCENARIOS)),
              file=sys.stderr)
        return 2
    host = Host(kind, os.path.abspath(peri), mjs, module)
    try:
        pg_port = setup_db()
    except (Fail, subprocess.CalledProcessError, FileNotFoundError) as e:
        print("FAIL setup: %s" % e)
        return 1
    host.store = "postgresql://%s:%s@127.0.0.1:%d/%s?sslmode=disable" % (
        ROLE, PASSWORD.replace(" ", "%20"), pg_port, DB)
    failed = 0
    for name in names:
        E = XEnv(host, mock_py)
        t0 = time.monotonic()
        try:
            SCENARIOS[name](E)
            print("PASS %s [%s] (%.1fs)" % (name, kind, time.monotonic() - t0), flush=True)
        except Fail as e:
            failed += 1
            print("FAIL %s [%s]: %s" % (name, kind, e), flush=True)
            for a in E.agents:
                sys.stdout.write("".join(a.stderr)[-2500:])
        finally:
            try:
                E.cleanup()
            except Fail as e:
                failed += 1
                print("FAIL %s [%s] cleanup: %s" % (name, kind, e), flush=True)
    print("%d of %d scenarios passed on %s" % (len(names) - failed, len(names), kind))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
