#!/usr/bin/env python3
"""e2e.py: end-to-end tests of `peri acp` over stdio against tests/host/mock_model.py.

usage: e2e.py PERI_BINARY MOCK_MODEL_PY SCENARIO

Each scenario starts a private HOME, the mock model on 127.0.0.1 and the agent as a
subprocess, speaks newline-delimited JSON-RPC to it and checks the ACP contract.
Every wait is bounded. Exit 0 = pass, 1 = fail (a broken harness is a failure too).
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
# the shared harness; its names are re-exported here for tests that import e2e
from acp_harness import (TIMEOUT, Agent, Env, Fail, Mock, check, prompt,  # noqa: E402,F401
                         scenario_main, text_of)

# "Did not hang" bound for cancels: generous, so that a loaded 2-core machine running the
# ASan build never flakes; exact properties (no update after the answer, the command did
# not run on, the model was not called) are checked separately.
CANCEL_BOUND_S = TIMEOUT


# ---------------------------------------------------------------- scenarios

def s_basic(E):
    a = E.agent()
    init = [f for _, f in a.log if f.get("id") == 101][0]["result"]
    caps = init["agentCapabilities"]
    check(caps["loadSession"] is True, "loadSession")
    for k in ("list", "close", "resume"):
        check(caps["sessionCapabilities"][k] == {}, "sessionCapabilities." + k)
    rid = a.request("session/new", {"cwd": E.cwd, "mcpServers": []})
    t_resp, resp = a.wait(lambda f: f.get("id") == rid, what="session/new")
    sid = resp["result"]["sessionId"]
    t_cmd, _ = a.wait_update(lambda u: u["sessionUpdate"] == "available_commands_update",
                             "available_commands_update")
    check(t_cmd >= t_resp, "available_commands_update came before the session/new response")
    E.mock.script([{"text": ["Hello", ", ", "world"], "usage": {"input": 7, "output": 3}}])
    rid = prompt(a, sid, "say hello")
    r = a.response(rid)
    check(r.get("result") == {"stopReason": "end_turn"}, "prompt result %r" % r)
    ups = a.updates(sid)
    check(text_of(ups) == "Hello, world", "streamed text %r" % text_of(ups))
    usage = [(t, u) for t, u in ups if u["sessionUpdate"] == "usage_update"]
    check(usage and usage[-1][1]["used"] == 10, "usage_update %r" % usage)
    t_answer = [t for t, f in a.log if f.get("id") == rid][0]
    check(usage[-1][0] <= t_answer and all(t <= t_answer for t, _ in ups),
          "an update of the turn came after its answer")
    seqs = [f["params"]["_meta"]["peri.sessionSeq"] for _, f in a.log
            if f.get("method") == "session/update"]
    check(seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "session_seq not monotonic")
    # the model saw the frozen context and the user text
    body = E.mock.requests()[-1]["body"]
    check(body["messages"][0]["role"] == "system" and E.cwd in body["messages"][0]["content"],
          "frozen context missing")
    check(body["messages"][-1]["content"] in ("say hello", [{"type": "text", "text": "say hello"}]),
          "user text not sent: %r" % body["messages"][-1])
    # Peri's message.content form works too
    E.mock.script([{"text": "again"}])
    r = a.call("session/prompt", {"sessionId": sid, "message": {"role": "user",
                                                                "content": "hi"}})
    check(r.get("result") == {"stopReason": "end_turn"}, "message.content prompt %r" % r)
    check(a.close_stdin() == 0, "exit status after EOF")


def s_tools(E):
    E.put("notes.txt", "secret-content-42\n")
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([
        {"tool_calls": [{"id": "call_r", "name": "read", "arguments": {"path": "notes.txt"}}]},
        {"text": "read it"}])
    r = a.response(prompt(a, sid, "read notes"))
    check(r.get("result") == {"stopReason": "end_turn"}, "tool turn %r" % r)
    ups = a.updates(sid)
    calls = [u for _, u in ups if u["sessionUpdate"] == "tool_call"]
    check(calls and calls[0]["toolCallId"] == "call_r" and calls[0]["kind"] == "read",
          "tool_call %r" % calls)
    done = [u for _, u in ups if u["sessionUpdate"] == "tool_call_update"
            and u.get("status") == "completed"]
    check(done and "secret-content-42" in json.dumps(done[0]["rawOutput"]),
          "tool_call_update %r" % done)
    check(done[0].get("content"), "tool_call_update content")
    reqs = E.mock.requests()
    check(len(reqs) == 2, "expected 2 model requests, got %d" % len(reqs))
    tool_msgs = [m for m in reqs[1]["body"]["messages"] if m["role"] == "tool"]
    check(tool_msgs and "secret-content-42" in json.dumps(tool_msgs),
          "tool result did not reach the next model request")

    # permission: allow -> written
    a.permission_answer = "allow_once"
    E.mock.script([
        {"tool_calls": [{"id": "call_w", "name": "write",
                         "arguments": {"path": "out.txt", "content": "allowed"}}]},
        {"text": "wrote"}])
    r = a.response(prompt(a, sid, "write"))
    check(r.get("result") == {"stopReason": "end_turn"}, "allow turn %r" % r)
    perms = [f for _, f in a.log if f.get("method") == "session/request_permission"]
    check(len(perms) == 1, "one permission request expected, got %d" % len(perms))
    opts = [o["optionId"] for o in perms[0]["params"]["options"]]
    check(opts == ["allow_once", "allow_always", "allow_always_project", "reject_once",
                   "reject_always"], "permission options %r" % opts)
    check(perms[0]["params"]["toolCall"]["toolCallId"] == "call_w", "permission toolCall")
    check(open(os.path.join(E.cwd, "out.txt")).read() == "allowed", "file not written")

    # permission: reject -> not written, tool failed, turn continues
    a.permission_answer = "reject_once"
    t0 = time.monotonic()
    E.mock.script([
        {"tool_calls": [{"id": "call_x", "name": "write",
                         "arguments": {"path": "no.txt", "content": "x"}}]},
        {"text": "ok, not writing"}])
    r = a.response(prompt(a, sid, "write again"))
    check(r.get("result") == {"stopReason": "end_turn"}, "reject turn %r" % r)
    check(not os.path.exists(os.path.join(E.cwd, "no.txt")), "rejected write happened")
    fails = [u for _, u in a.updates(sid, t0) if u["sessionUpdate"] == "tool_call_update"
             and u.get("status") == "failed"]
    check(fails and fails[0]["toolCallId"] == "call_x", "rejected tool not failed")
    last = E.mock.requests()[-1]["body"]["messages"]
    check("rejected" in json.dumps([m for m in last if m["role"] == "tool"][-1]),
          "rejection not reported to the model")
    check(a.close_stdin() == 0, "exit after EOF")

    # a settings policy can allow a tool always: no permission request is sent
    E.settings({"maxRetries": 0, "permissions": {"allow": ["write"]}})
    b = E.agent()
    sid = E.new_session(b)
    b.permission_answer = "reject_once"
    E.mock.script([
        {"tool_calls": [{"id": "call_p", "name": "write",
                         "arguments": {"path": "policy.txt", "content": "by policy"}}]},
        {"text": "ok"}])
    r = b.response(prompt(b, sid, "write by policy"))
    check(r.get("result") == {"stopReason": "end_turn"}, "policy turn %r" % r)
    check(not [f for _, f in b.log if f.get("method") == "session/request_permission"],
          "permission asked despite the allow policy")
    check(open(os.path.join(E.cwd, "policy.txt")).read() == "by policy", "policy write")


def s_confine(E):
    outside = os.path.join(E.tmp, "outside.txt")
    with open(outside, "w") as f:
        f.write("do-not-leak")
    os.symlink(outside, os.path.join(E.cwd, "link.txt"))
    os.symlink(E.tmp, os.path.join(E.cwd, "updir"))
    a = E.agent()
    sid = E.new_session(a)
    for i, path in enumerate(["../outside.txt", outside, "link.txt", "updir/outside.txt"]):
        t0 = time.monotonic()
        E.mock.script([{"tool_calls": [{"id": "c%d" % i, "name": "read",
                                        "arguments": {"path": path}}]}, {"text": "k"}])
        r = a.response(prompt(a, sid, "read " + path))
        check(r.get("result") == {"stopReason": "end_turn"}, "turn %r" % r)
        ups = [u for _, u in a.updates(sid, t0) if u["sessionUpdate"] == "tool_call_update"
               and u.get("status") in ("completed", "failed")]
        check(ups and ups[0]["status"] == "failed", "read of %s did not fail" % path)
        out = json.dumps(ups[0])
        check("escapes the workspace" in out, "no confinement error for %s: %s" % (path, out))
        check("do-not-leak" not in out, "content leaked through " + path)
    # writes through a symlink are refused too
    a.permission_answer = "allow_once"
    E.mock.script([{"tool_calls": [{"id": "w1", "name": "write",
                                    "arguments": {"path": "link.txt", "content": "pwned"}}]},
                   {"text": "k"}])
    a.response(prompt(a, sid, "write link"))
    check(open(outside).read() == "do-not-leak", "write followed a symlink out of cwd")


def s_cancel(E):
    a = E.agent()
    sid = E.new_session(a)
    # mid-stream
    E.mock.script([{"text": ["first", "second"], "hang": True, "hang_after": 2}])
    rid = prompt(a, sid, "long answer")
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk", "first chunk")
    t_cancel, t_resp = a.cancel(sid, rid, "cancel mid-stream")
    # "did not hang" (the mock never finishes this stream): a generous bound that a loaded
    # 2-core machine under ASan still meets; the exact property is checked below (no update
    # after the answer)
    check(t_resp - t_cancel < CANCEL_BOUND_S,
          "cancel took %.0f ms" % ((t_resp - t_cancel) * 1000))
    time.sleep(0.5)
    late = [u for t, u in a.updates(sid) if t > t_resp]
    check(not late, "updates after the cancelled answer: %r" % late)

    # mid-tool (a shell command that would run for seconds)
    a.permission_answer = "allow_once"
    E.mock.script([{"tool_calls": [{"id": "sh1", "name": "shell",
                                    "arguments": {"command": "sleep 60; echo late"}}]},
                   {"text": "after"}])
    rid = prompt(a, sid, "run it")
    a.wait_update(lambda u: u.get("status") == "in_progress", "tool in progress")
    time.sleep(0.1)
    t_cancel, t_resp = a.cancel(sid, rid, "cancel mid-tool")
    # the command would run 60 s: finishing well before tells a cancel from a completion
    check(t_resp - t_cancel < CANCEL_BOUND_S,
          "tool cancel took %.0f ms" % ((t_resp - t_cancel) * 1000))
    outs = [json.dumps(u.get("content")) for _, u in a.updates(sid)
            if u["sessionUpdate"] == "tool_call_update" and u.get("toolCallId") == "sh1"]
    check(not any("late" in o for o in outs), "the command ran on: %r" % outs)
    time.sleep(0.5)
    late = [u for t, u in a.updates(sid) if t > t_resp]
    check(not late, "updates after the cancelled tool answer: %r" % late)

    # queued input survives a cancel of the running turn
    E.mock.script([{"text": "x", "hang": True}, {"text": "queued ran"}])
    rid1 = prompt(a, sid, "first")
    time.sleep(0.2)
    rid2 = prompt(a, sid, "second")
    time.sleep(0.1)
    a.cancel(sid, rid1, "cancel of the first prompt")
    r2 = a.response(rid2)
    check(r2.get("result") == {"stopReason": "end_turn"}, "queued prompt %r" % r2)
    check("queued ran" in text_of(a.updates(sid)), "queued prompt output missing")

    # a cancel that arrives before the prompt started still cancels that prompt
    E.mock.script({"responses": [], "default": {"text": "should not run"}})
    n_before = len(E.mock.requests())
    a.next_id += 1
    pid = a.next_id
    a.send_raw(json.dumps({"jsonrpc": "2.0", "id": pid, "method": "session/prompt",
                           "params": {"sessionId": sid,
                                      "prompt": [{"type": "text", "text": "early"}]}}) + "\n" +
               json.dumps({"jsonrpc": "2.0", "method": "session/cancel",
                           "params": {"sessionId": sid}}))
    r = a.response(pid)
    check(r.get("result") == {"stopReason": "cancelled"}, "early cancel %r" % r)
    time.sleep(0.5)
    n_after = len(E.mock.requests())
    check(n_after == n_before,
          "an early-cancelled prompt reached the model (%d requests)" % (n_after - n_before))
    late = [u for t, u in a.updates(sid) if u.get("sessionUpdate") == "agent_message_chunk"
            and "should not run" in json.dumps(u)]
    check(not late, "the early-cancelled prompt produced output: %r" % late)
    n_before = n_after

    # prompts of one session run in arrival order
    ids = [prompt(a, sid, "order %d" % i) for i in range(4)]
    for rid in ids:
        check(a.response(rid).get("result") == {"stopReason": "end_turn"}, "ordered prompt")
    users = []
    for q in E.mock.requests()[n_before:]:
        last = q["body"]["messages"][-1]["content"]
        users.append(last if isinstance(last, str) else last[0]["text"])
    check(users == ["order 0", "order 1", "order 2", "order 3"], "prompt order %r" % users)


def s_close(E):
    a = E.agent(PERI_CLOSE_GRACE_MS="0")
    # The unwinding window is short (the model poll is 20 ms); on a loaded machine the
    # turn may settle before the close is read, then the close rightly answers {}.
    # Retry with a fresh session until the incomplete path is exercised.
    for attempt in range(5):
        sid = E.new_session(a)
        E.mock.script([{"text": "x", "hang": True, "hang_after": 2}])
        rid = prompt(a, sid, "hang")
        a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk", "chunk", sid=sid)
        # close and a prompt in one write: the prompt is read microseconds after the
        # close answer, while the cancelled turn is still unwinding
        a.next_id += 2
        cid, pid = a.next_id - 1, a.next_id
        a.send_raw(json.dumps({"jsonrpc": "2.0", "id": cid, "method": "session/close",
                               "params": {"sessionId": sid}}) + "\n" +
                   json.dumps({"jsonrpc": "2.0", "id": pid, "method": "session/prompt",
                               "params": {"sessionId": sid,
                                          "prompt": [{"type": "text", "text": "x"}]}}))
        r = a.response(cid)
        pr = a.response(rid)
        check(pr.get("result") == {"stopReason": "cancelled"}, "prompt after close %r" % pr)
        p = a.response(pid)
        if r.get("result") == {}:
            check("error" in p, "prompt on a closed session %r" % p)
            continue
        check("error" in r and r["error"]["code"] == -32010,
              "first close should be -32010: %r" % r)
        check(r["error"]["message"] == "Session close incomplete: prompt is still active",
              "message %r" % r["error"]["message"])
        check("error" in p and p["error"]["code"] == -32010, "prompt while closing %r" % p)
        check(p["error"]["message"] == "Session is closing", "closing message %r" % p)
        break
    else:
        raise Fail("close never observed a turn still unwinding in 5 attempts")
    deadline = time.monotonic() + 3.0
    while True:
        r = a.call("session/close", {"sessionId": sid})
        if "result" in r:
            break
        check(r["error"]["code"] == -32010, "retry gave %r" % r)
        check(time.monotonic() < deadline, "close never settled")
        time.sleep(0.05)
    check(r["result"] == {}, "close result %r" % r)
    r = a.call("session/close", {"sessionId": sid})
    check(r.get("result") == {}, "second close %r" % r)
    r = a.call("session/close", {})
    check("error" in r and r["error"]["code"] == -32602, "missing sessionId %r" % r)
    # a question the client still shows when the agent stops waiting for it (the session
    # closes): withdrawn with $/cancel_request, so the client's dialog closes too
    a.permission_answer = None
    sid4 = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "w1", "name": "shell", "arguments": {"command": "true"}}]},
                   {"text": "after"}])
    rid = prompt(a, sid4, "ask me")
    _, q = a.wait(lambda f: f.get("method") == "session/request_permission", what="a question")
    a.request("session/close", {"sessionId": sid4})
    pr = a.response(rid)
    check(pr.get("result") == {"stopReason": "cancelled"}, "prompt at close %r" % pr)
    _, w = a.wait(lambda f: f.get("method") == "$/cancel_request", what="the question withdrawn")
    check(w.get("params") == {"requestId": q["id"]} and "id" not in w, "withdrawal %r" % w)
    a.permission_answer = "allow_once"
    # an idle session closes at once
    sid2 = E.new_session(a)
    check(a.result("session/close", {"sessionId": sid2}) == {}, "idle close")
    # EOF closes every session like close: the running prompt is answered, exit 0
    sid3 = E.new_session(a)
    E.mock.script([{"text": "x", "hang": True, "hang_after": 2}])
    rid = prompt(a, sid3, "hang again")
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk", "chunk 3", sid=sid3)
    t0 = time.monotonic()
    check(a.close_stdin() == 0, "exit status after EOF with a running prompt")
    check(time.monotonic() - t0 < 3.0, "EOF shutdown too slow")
    pr = a.response(rid)
    check(pr.get("result") == {"stopReason": "cancelled"}, "prompt at EOF %r" % pr)


def s_load(E):
    E.put("f.txt", "abc")
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"text": "one"},
                   {"tool_calls": [{"id": "t1", "name": "read", "arguments": {"path": "f.txt"}}]},
                   {"text": "two"}])
    a.response(prompt(a, sid, "first question"))
    a.response(prompt(a, sid, "second question"))
    empty = E.new_session(a)  # never prompted: not listed
    check(a.close_stdin() == 0, "exit after EOF")

    b = E.agent()
    lst = b.result("session/list", {})
    ids = [s["sessionId"] for s in lst["sessions"]]
    check(sid in ids and empty not in ids, "list %r" % ids)
    entry = [s for s in lst["sessions"] if s["sessionId"] == sid][0]
    check(entry["cwd"] == os.path.realpath(E.cwd), "list cwd %r" % entry)
    check(entry.get("title") == "first question", "title %r" % entry.get("title"))
    rid = b.request("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    t_resp, r = b.wait(lambda f: f.get("id") == rid, what="load response")
    check(r.get("result") is not None, "load %r" % r)
    # the session's slash commands follow the answer, as after session/new
    t_cmd, _ = b.wait_update(lambda u: u["sessionUpdate"] == "available_commands_update",
                             "available_commands_update after load", sid=sid)
    check(t_cmd >= t_resp, "available_commands_update came before the session/load response")
    ups = [(t, u) for t, u in b.updates(sid) if u["sessionUpdate"] != "available_commands_update"]
    check(all(t <= t_resp for t, _ in ups), "replay after the load response")
    kinds = [u["sessionUpdate"] for _, u in ups]
    expect = ["user_message_chunk", "agent_message_chunk", "user_message_chunk", "tool_call",
              "tool_call_update", "agent_message_chunk"]
    check(kinds == expect, "replay order %r" % kinds)
    check(text_of(ups, "user_message_chunk") == "first questionsecond question", "user replay")
    check(text_of(ups) == "onetwo", "agent replay %r" % text_of(ups))
    # the conversation continues with the whole history
    E.mock.script([{"text": "three"}])
    r = b.response(prompt(b, sid, "third"))
    check(r.get("result") == {"stopReason": "end_turn"}, "prompt after load %r" % r)
    msgs = E.mock.requests()[-1]["body"]["messages"]
    check("first question" in json.dumps(msgs), "history not sent after load")
    # resume: no replay
    c_sid = sid
    b.result("session/close", {"sessionId": c_sid})
    t0 = time.monotonic()
    res = b.result("session/resume", {"sessionId": c_sid, "cwd": E.cwd})
    check(set(res) == {"modes", "configOptions"}, "resume %r" % res)
    b.wait_update(lambda u: u["sessionUpdate"] == "available_commands_update",
                  "available_commands_update after resume", sid=c_sid)
    check(not [u for _, u in b.updates(c_sid, t0)
               if u["sessionUpdate"] != "available_commands_update"], "resume replayed history")
    # unknown session
    r = b.call("session/load", {"sessionId": "00000000-0000-7000-8000-000000000000",
                                "cwd": E.cwd, "mcpServers": []})
    check("error" in r and r["error"]["code"] == -32002, "unknown load %r" % r)
    # delete
    check(b.result("session/delete", {"sessionId": sid}) == {}, "delete")
    ids = [s["sessionId"] for s in b.result("session/list", {})["sessions"]]
    check(sid not in ids, "deleted session still listed")
    check(b.result("session/delete", {"sessionId": sid}) == {}, "delete twice")


def s_errors(E):
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"status": 401}])
    r = a.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
    check("error" in r and r["error"]["code"] == -32000, "auth error %r" % r)
    check(r["error"]["data"] == {"kind": "llm_http", "status": 401}, "data %r" % r["error"])
    E.mock.script([{"status": 500}])
    r = a.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
    check(r["error"]["data"] == {"kind": "llm_http", "status": 500}, "500 data %r" % r)
    E.mock.script([{"malformed": True}])
    r = a.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
    check("error" in r and r["error"]["data"]["kind"] == "llm", "malformed stream %r" % r)
    E.mock.script([{"text": "fine"}])
    r = a.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
    check(r.get("result") == {"stopReason": "end_turn"}, "session unusable after errors %r" % r)
    # unreachable model
    b = E.agent(OPENAI_BASE_URL="http://127.0.0.1:1/v1")
    sid = E.new_session(b)
    r = b.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
    check("error" in r and r["error"]["code"] == -32000 and r["error"]["data"]["kind"] == "llm",
          "unreachable %r" % r)
    # no provider at all: session/new answers ACP's auth_required (the client then
    # authenticates, see e2e_protocol.py auth), not an error at the first prompt
    c = E.agent(model=False)
    r = c.call("session/new", {"cwd": E.cwd, "mcpServers": []})
    check("error" in r and r["error"]["code"] == -32000 and
          r["error"]["message"] == "Authentication required", "no provider %r" % r)
    check("no model provider configured" in r["error"]["data"]["reason"], "reason %r" % r)


def s_malformed(E):
    a = E.agent()
    a.send_raw("{this is not json")
    r = a.wait(lambda f: "error" in f, what="parse error")[1]
    check(r["error"]["code"] == -32700 and r["id"] is None, "parse error %r" % r)
    a.send_raw("[1,2]")
    r = a.wait(lambda f: "error" in f, what="batch error")[1]
    check(r["error"]["code"] == -32600, "batch %r" % r)
    for scalar in ("1", '"x"', "null"):  # valid JSON, but not a request object
        a.send_raw(scalar)
        r = a.wait(lambda f: "error" in f, what="scalar %s" % scalar)[1]
        check(r == {"jsonrpc": "2.0", "id": None,
                    "error": {"code": -32600, "message": "Invalid Request"}},
              "scalar %s: %r" % (scalar, r))
    a.send_raw('{"jsonrpc":"2.0","id":5}')
    r = a.wait(lambda f: "error" in f, what="invalid request")[1]
    check(r["error"]["code"] == -32600 and r["id"] == 5, "invalid %r" % r)
    a.send_raw("")
    a.send_raw("   ")
    r = a.call("no/such_method", {})
    check(r["error"]["code"] == -32601, "unknown method %r" % r)
    check(r["error"]["message"] == "Method not found: no/such_method", "message %r" % r)
    a.notify("_unknown/notification", {})
    for params in ({}, {"sessionId": 5}, {"sessionId": "x"}):
        r = a.call("session/prompt", params)
        check("error" in r and r["error"]["code"] in (-32602, -32002), "prompt %r: %r" % (params, r))
    r = a.call("session/prompt", [1, 2])
    check(r["error"]["code"] == -32602, "array params %r" % r)
    r = a.call("session/new", {"cwd": "relative/path", "mcpServers": []})
    check(r["error"]["code"] == -32602, "relative cwd %r" % r)
    # session directories that would put the user's own state (settings that start MCP
    # servers without asking, the trust store) in the sandbox's read-write workspace
    os.makedirs(os.path.join(E.home, ".peri", "commands"), exist_ok=True)
    for cwd, why in (("/", '"/"'), (E.home, "home directory"), (E.tmp, "home directory"),
                     (os.path.join(E.home, ".peri"), "configuration directory"),
                     (os.path.join(E.home, ".peri", "commands"), "configuration directory"),
                     (os.path.join(E.cwd, "..", "home", ".peri"), "configuration directory")):
        r = a.call("session/new", {"cwd": cwd, "mcpServers": []})
        check(r.get("error", {}).get("code") == -32602 and why in r["error"]["message"] and
              "Open a project directory" in r["error"]["message"], "cwd %s: %r" % (cwd, r))
    r = a.call("session/new", {"cwd": E.cwd, "mcpServers": "nope"})
    check(r["error"]["code"] == -32602, "bad mcpServers %r" % r)
    sid = E.new_session(a)
    r = a.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "image", "data": "",
                                                                 "mimeType": "image/png"}]})
    check(r["error"]["code"] == -32602, "image block %r" % r)
    # text with a NUL byte cannot go on whole: refused, not cut short (e2e_protocol.py
    # input_nul has the rest)
    a.send_raw('{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"' + sid
               + '","prompt":[{"type":"text","text":"a\\u0000b"}]}}')
    r = a.wait(lambda f: f.get("id") == 9, what="NUL in text")[1]
    check(r.get("error", {}).get("code") == -32602, "NUL in text %r" % r)
    a.send_raw('{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"x":"\\ud800"}}')
    r = a.wait(lambda f: "error" in f and f["error"]["code"] == -32700, what="lone surrogate")[1]
    check(r["id"] is None, "lone surrogate %r" % r)
    a.send_raw('{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":1}}')
    r = a.wait(lambda f: f.get("id") == 10, what="still alive")[1]
    check(r["result"]["protocolVersion"] == 1, "server did not survive")
    # resource_link is accepted in prompts
    E.mock.script([{"text": "seen"}])
    r = a.call("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "text", "text": "look at"},
        {"type": "resource_link", "uri": "file:///x/y.c", "name": "y.c"}]})
    check(r.get("result") == {"stopReason": "end_turn"}, "resource_link %r" % r)
    check("file:///x/y.c" in json.dumps(E.mock.requests()[-1]["body"]), "resource_link lost")
    check(a.close_stdin() == 0, "exit status")


def s_kill9(E):
    E.put("a.txt", "alpha")
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"text": "first answer"}])
    a.response(prompt(a, sid, "turn one"))
    E.mock.script([{"tool_calls": [{"id": "k1", "name": "read", "arguments": {"path": "a.txt"}}]},
                   {"text": "never", "hang": True}])
    prompt(a, sid, "turn two")
    # wait until the step with the tool result is committed and the next call hangs
    deadline = time.monotonic() + TIMEOUT
    while len(E.mock.requests()) < 3:
        check(time.monotonic() < deadline, "second model call never came")
        time.sleep(0.02)
    os.kill(a.proc.pid, signal.SIGKILL)
    a.proc.wait(5)
    b = E.agent()
    rid = b.request("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    t_resp, r = b.wait(lambda f: f.get("id") == rid, what="load")
    check("result" in r, "load after kill %r" % r)
    # the replay (the slash commands announced after the answer are not part of it)
    kinds = [u["sessionUpdate"] for _, u in b.updates(sid)
             if u["sessionUpdate"] != "available_commands_update"]
    expect = ["user_message_chunk", "agent_message_chunk", "user_message_chunk", "tool_call",
              "tool_call_update"]
    check(kinds == expect, "replay after kill -9: %r" % kinds)
    upd = [u for _, u in b.updates(sid) if u["sessionUpdate"] == "tool_call_update"][0]
    check("alpha" in json.dumps(upd), "tool result lost")


def s_print(E):
    E.mock.script([{"text": ["Hi ", "there"]}])
    env = E.env()
    p = subprocess.run([E.peri, "print", "greet me", "--cwd", E.cwd, "--db", E.db],
                       env=env, capture_output=True, timeout=30)
    check(p.returncode == 0, "print exit %d: %s" % (p.returncode, p.stderr.decode()[-1000:]))
    check(p.stdout.decode().strip() == "Hi there", "print stdout %r" % p.stdout)
    E.mock.script([{"status": 401}])
    p = subprocess.run([E.peri, "print", "x", "--cwd", E.cwd, "--db", E.db],
                       env=env, capture_output=True, timeout=30)
    check(p.returncode != 0, "print should fail on a model error")


def s_anthropic(E):
    E.put("b.txt", "bravo-77")
    a = E.agent(PERI_MODEL="anthropic:claude-mock", ANTHROPIC_API_KEY="ak",
                ANTHROPIC_BASE_URL=E.mock.url, OPENAI_API_KEY="", OPENAI_BASE_URL="")
    sid = E.new_session(a)
    E.mock.script([
        {"thinking": "let me look", "tool_calls": [{"id": "toolu_1", "name": "read",
                                                    "arguments": {"path": "b.txt"}, "chunks": 3}]},
        {"text": ["It says ", "bravo"]}])
    r = a.response(prompt(a, sid, "what is in b.txt"))
    check(r.get("result") == {"stopReason": "end_turn"}, "anthropic turn %r" % r)
    ups = a.updates(sid)
    check(text_of(ups, "agent_thought_chunk") == "let me look", "thought chunk")
    check(text_of(ups) == "It says bravo", "text %r" % text_of(ups))
    reqs = E.mock.requests()
    check(all(q["path"].endswith("/messages") for q in reqs), "not the Anthropic API")
    check(reqs[0]["headers"].get("x-api-key") == "ak", "api key header")
    check("bravo-77" in json.dumps(reqs[1]["body"]["messages"]), "tool result not sent back")


def s_concurrent(E):
    a = E.agent()
    s1, s2 = E.new_session(a), E.new_session(a)
    E.mock.script([{"text": ["a1", "a2", "a3"], "delay_ms": 30},
                   {"text": ["b1", "b2", "b3"], "delay_ms": 30}])
    r1 = prompt(a, s1, "one")
    r2 = prompt(a, s2, "two")
    for rid in (r1, r2):
        r = a.response(rid)
        check(r.get("result") == {"stopReason": "end_turn"}, "concurrent %r" % r)
    t1, t2 = text_of(a.updates(s1)), text_of(a.updates(s2))
    check(sorted([t1, t2]) == ["a1a2a3", "b1b2b3"], "cross-talk: %r %r" % (t1, t2))
    for sid in (s1, s2):
        seqs = [f["params"]["_meta"]["peri.sessionSeq"] for _, f in a.log
                if f.get("method") == "session/update" and f["params"]["sessionId"] == sid]
        check(seqs == list(range(1, len(seqs) + 1)), "session_seq of %s: %r" % (sid, seqs))
    # load of a live session replays from memory, before the answer
    rid = a.request("session/load", {"sessionId": s1, "cwd": E.cwd, "mcpServers": []})
    t_resp, r = a.wait(lambda f: f.get("id") == rid, what="live load")
    check("result" in r, "live load %r" % r)
    kinds = [u["sessionUpdate"] for t, u in a.updates(s1) if u.get("sessionUpdate") in
             ("user_message_chunk",)]
    check(kinds == ["user_message_chunk"], "live replay %r" % kinds)


def s_compact(E):
    # the mechanical trim on its own (the model-written automatic compaction that
    # normally comes first is tested in tests/middleware/e2e_mw2.py)
    E.settings({"maxRetries": 0, "autoCompact": {"enabled": False}})
    E.put("c.txt", "c")
    a = E.agent(PERI_CONTEXT_BUDGET="400")
    sid = E.new_session(a)
    big = "word " * 300  # ~375 tokens by the bytes/4 estimate
    E.mock.script([{"text": "first reply"},
                   {"tool_calls": [{"id": "tc", "name": "read", "arguments": {"path": "c.txt"}}]},
                   {"text": "second reply"},
                   {"text": "third reply"}])
    a.response(prompt(a, sid, "OLDEST " + big))
    a.response(prompt(a, sid, "MIDDLE " + big))
    a.response(prompt(a, sid, "NEWEST question"))
    reqs = E.mock.requests()
    last = reqs[-1]["body"]["messages"]
    blob = json.dumps(last[1:])
    check("OLDEST" not in blob, "oldest turn was not trimmed")
    check("NEWEST question" in blob, "latest user message lost")
    system = last[0]["content"]
    check("trimmed" in system, "no trim note in the system prompt")
    check("\n- OLDEST word" in system, "trimmed requests not summarised: %r" % system[-400:])
    check(len(system) < 2000, "digest too long")
    roles = [m["role"] for m in last[1:]]
    check(roles[0] == "user", "history starts mid-turn: %r" % roles)
    for i, m in enumerate(last):
        if m["role"] == "tool":
            check(last[i - 1]["role"] == "assistant" and last[i - 1].get("tool_calls"),
                  "tool result without its call")


def s_list(E):
    a = E.agent()
    E.mock.script({"responses": [], "default": {"text": "ok"}})
    other = os.path.join(E.tmp, "other")
    os.makedirs(other)
    made = []
    for i in range(103):
        sid = E.new_session(a)
        made.append(sid)
        r = a.response(prompt(a, sid, "session %d" % i))
        check(r.get("result") == {"stopReason": "end_turn"}, "prompt %d %r" % (i, r))
    osid = a.result("session/new", {"cwd": other, "mcpServers": []})["sessionId"]
    a.response(prompt(a, osid, "elsewhere"))
    seen, cursor, pages = [], None, 0
    while True:
        params = {"cwd": E.cwd}
        if cursor:
            params["cursor"] = cursor
        page = a.result("session/list", params)
        pages += 1
        seen += [s["sessionId"] for s in page["sessions"]]
        cursor = page.get("nextCursor")
        if not cursor:
            break
        check(pages < 10, "cursor loop")
    check(pages == 2, "expected 2 pages, got %d" % pages)
    check(sorted(seen) == sorted(made), "paged list differs: %d vs %d" % (len(seen), len(made)))
    check(seen[0] == made[-1], "newest first")
    everything = a.result("session/list", {})
    check(len(everything["sessions"]) == 100 and everything.get("nextCursor"), "unfiltered page")
    r = a.call("session/list", {"cursor": "garbage!"})
    check("error" in r and r["error"]["code"] == -32602, "bad cursor %r" % r)


def s_fuzz(E):
    """Random and mutated frames (fixed seed): the server answers every request with
    an id exactly once (or ignores notifications) and stays up."""
    import random
    rnd = random.Random(int(os.environ.get("FUZZ_SEED", "1234")))
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script({"responses": [], "default": {"text": "ok"}})
    methods = ["initialize", "session/new", "session/load", "session/resume", "session/list",
               "session/delete", "session/prompt", "session/cancel", "session/close",
               "session/set_mode", "authenticate", "x/y", "", "_ext",
               "session/fork", "session/set_config_option", "$/cancel_request"]
    values = [None, True, 0, -1, 2 ** 62, 1.5, "", "x" * 300, [], {}, [1, "a"],
              {"sessionId": sid}, sid, "../..", "\u0000"]

    def rvalue(depth=0):
        if depth < 2 and rnd.random() < 0.3:
            return {rnd.choice(["sessionId", "cwd", "prompt", "cursor", "mcpServers",
                                "message", "protocolVersion", "type", "text", "modeId",
                                "configId", "value", "requestId"]):
                    rvalue(depth + 1) for _ in range(rnd.randint(0, 4))}
        if depth < 2 and rnd.random() < 0.2:
            return [rvalue(depth + 1) for _ in range(rnd.randint(0, 3))]
        return rnd.choice(values)

    expected = set()
    sent = {}
    next_id = 5000
    for i in range(400):
        kind = rnd.random()
        if kind < 0.15:
            junk = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 60)))
            junk = junk.replace(b"\n", b" ")
            a.proc.stdin.write(junk + b"\n")
            a.proc.stdin.flush()
            continue
        msg = {"jsonrpc": "2.0", "method": rnd.choice(methods)}
        if msg["method"] == "session/delete" or msg["method"] == "session/close":
            msg["params"] = {"sessionId": "00000000-0000-7000-8000-%012d" % i}
        elif rnd.random() < 0.9:
            msg["params"] = rvalue()
        if msg["method"] == "session/prompt" and isinstance(msg.get("params"), dict) \
                and msg["params"].get("sessionId") == sid:
            msg["params"]["sessionId"] = "nope"  # keep prompts from queueing up forever
        if rnd.random() < 0.8:
            next_id += 1
            msg["id"] = next_id
            expected.add(next_id)
            sent[next_id] = msg
        a.send(msg)
    # every request with an id got exactly one answer
    deadline = time.monotonic() + TIMEOUT
    answered = {}
    while expected - set(answered):
        check(time.monotonic() < deadline, "unanswered: %r" % [
            sent[k] for k in sorted(expected - set(answered))[:5]])
        time.sleep(0.05)
        for _, f in list(a.log):
            if isinstance(f, dict) and f.get("id") in expected and "method" not in f:
                answered.setdefault(f["id"], 0)
        answered = {k: sum(1 for _, f in a.log if isinstance(f, dict) and f.get("id") == k
                           and "method" not in f) for k in answered}
    dup = [k for k, n in answered.items() if n != 1]
    check(not dup, "ids answered more than once: %r" % dup[:10])
    # an integer beyond int64 cannot be decoded: a parse error with id null
    time.sleep(0.2)
    while not a.frames.empty():
        a.frames.get()
    a.pending = []
    a.send_raw('{"jsonrpc":"2.0","id":77,"method":"initialize","params":{"n":%d}}' % 2 ** 64)
    r = a.wait(lambda f: "error" in f and f.get("id") is None, what="big int")[1]
    check(r["error"]["code"] == -32700, "big int %r" % r)
    r = a.call("initialize", {"protocolVersion": 1})
    check(r["result"]["protocolVersion"] == 1, "server did not survive the fuzz")
    check(a.close_stdin() == 0, "exit status after fuzz")


def s_hostile(E):
    """A hostile workspace. The project guide as a symlink out
    or as a FIFO, a read of a FIFO and a glob with repeated ** never leak, never block the
    server, and the sessions still close."""
    outside = os.path.join(E.tmp, "outside-guide.txt")
    with open(outside, "w") as f:
        f.write("GUIDE-SECRET-1234")
    guide = os.path.join(E.cwd, "AGENTS.md")
    a = E.agent()
    for target in (outside, "../outside-guide.txt", "/proc/self/fd/0"):
        os.symlink(target, guide)
        sid = E.new_session(a)
        E.mock.script([{"text": "ok"}])
        n0 = len(E.mock.requests())
        r = a.response(prompt(a, sid, "hi"))
        check(r.get("result") == {"stopReason": "end_turn"}, "turn with a linked guide %r" % r)
        reqs = E.mock.requests()[n0:]
        check(len(reqs) == 1, "one model request, got %d" % len(reqs))
        check("GUIDE-SECRET" not in json.dumps(reqs),
              "the guide behind %s reached the model provider" % target)
        check(a.result("session/close", {"sessionId": sid}) == {}, "close")
        os.unlink(guide)
    # a FIFO with no writer: session/new still answers (a.result fails after TIMEOUT)
    os.mkfifo(guide)
    sid = E.new_session(a)
    # the read tool on a FIFO fails at once and the session closes afterwards
    os.mkfifo(os.path.join(E.cwd, "pipe"))
    E.mock.script([{"tool_calls": [{"id": "r1", "name": "read", "arguments": {"path": "pipe"}}]},
                   {"text": "done"}])
    t0 = time.monotonic()
    r = a.response(prompt(a, sid, "read the pipe"))
    check(r.get("result") == {"stopReason": "end_turn"}, "FIFO read turn %r" % r)
    ups = [u for _, u in a.updates(sid, t0) if u["sessionUpdate"] == "tool_call_update"
           and u.get("toolCallId") == "r1" and u.get("status") in ("completed", "failed")]
    check(ups and ups[0]["status"] == "failed" and "not a regular file" in json.dumps(ups[0]),
          "FIFO read result %r" % ups)
    check(a.result("session/close", {"sessionId": sid}) == {}, "close after the FIFO read")
    os.unlink(guide)
    # a glob with 30 "**" over a deep tree finishes (polynomial), and close answers {}
    deep = E.cwd
    for _ in range(24):
        deep = os.path.join(deep, "d")
    os.makedirs(deep)
    open(os.path.join(deep, "leaf.c"), "w").close()
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "g1", "name": "glob",
                                    "arguments": {"pattern": "**/" * 30 + "nomatch.h"}}]},
                   {"text": "after"}])
    t0 = time.monotonic()
    r = a.response(prompt(a, sid, "glob"))
    check(r.get("result") == {"stopReason": "end_turn"}, "glob turn %r" % r)
    ups = [u for _, u in a.updates(sid, t0) if u["sessionUpdate"] == "tool_call_update"
           and u.get("toolCallId") == "g1" and u.get("status") == "completed"]
    check(ups and "no files match" in json.dumps(ups[0]), "glob result %r" % ups)
    check(a.result("session/close", {"sessionId": sid}) == {}, "close after the glob")
    check(a.close_stdin() == 0, "exit after EOF")


def s_deep_args(E):
    """Tool arguments from the model nested about as deep as a JSON parser reads (2048,
    ours and the builtin MCP server's): a request frame that would nest deeper is refused
    at once, so the call fails and the turn goes on (it used to wait for the builtin
    server's 30-day call timeout); the client sees every tool_call (its rawInput as text
    when the update would nest too deep) before any update of it."""
    sys.setrecursionlimit(20000)  # this client's own parser reads those frames too
    a = E.agent()
    sid = E.new_session(a)
    # {"path": [[...]]}: 1 + n levels; 2045 fit a request frame (3 levels above them)
    for n in (2045, 2046, 2047, 2048):
        cid = "deep%d" % n
        E.mock.script([{"tool_calls": [{"id": cid, "name": "read",
                                        "arguments": '{"path":%s}' % ("[" * n + "]" * n)}]},
                       {"text": "after"}])
        t0 = time.monotonic()
        r = a.response(prompt(a, sid, "deep"), timeout=20)
        check(r.get("result") == {"stopReason": "end_turn"}, "depth %d: turn %r" % (n, r))
        check(text_of(a.updates(sid, t0)) == "after", "depth %d: the turn did not go on" % n)
        kinds = [(u["sessionUpdate"], u.get("status")) for _, u in a.updates(sid, t0)
                 if u.get("toolCallId") == cid]
        check(kinds and kinds[0][0] == "tool_call" and kinds[-1] == ("tool_call_update", "failed"),
              "depth %d: updates of the call %r" % (n, kinds))
        done = [u for _, u in a.updates(sid, t0) if u.get("toolCallId") == cid][-1]
        if n == 2046:
            check("nests 2049 levels deep" in json.dumps(done), "depth %d: %r" % (n, done))
    check(a.close_stdin() == 0, "exit after EOF")


SCENARIOS = {"basic": s_basic, "tools": s_tools, "confine": s_confine, "cancel": s_cancel,
             "close": s_close, "load": s_load, "errors": s_errors, "malformed": s_malformed,
             "kill9": s_kill9, "print": s_print, "anthropic": s_anthropic,
             "concurrent": s_concurrent, "compact": s_compact, "list": s_list,
             "fuzz": s_fuzz, "hostile": s_hostile, "deep_args": s_deep_args}


def preflight(peri, mock_py):
    # a broken harness is a failure, never a skip: a test that cannot run did not pass
    if not os.path.exists(mock_py):
        print("FAIL: mock model %s not found" % mock_py)
        return 1
    probe = subprocess.run([peri, "acp", "--help"], capture_output=True, timeout=10)
    if probe.returncode != 0 or b"unknown command" in probe.stderr:
        print("FAIL: `%s acp --help` does not work (exit %d): %s"
              % (peri, probe.returncode, probe.stderr.decode(errors="replace")[-500:]))
        return 1
    return 0


def main():
    return scenario_main(__doc__, SCENARIOS, preflight)


if __name__ == "__main__":
    sys.exit(main())
