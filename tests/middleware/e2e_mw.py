#!/usr/bin/env python3
"""e2e_mw.py: end-to-end scenarios of the middlewares over `peri acp` with the scripted
model (tests/host/mock_model.py) and a private HOME: session hooks run in the real
native sandbox (deny with the reason in the model's next request, added context, a
timeout that does not hang the turn, project hooks only after trust and in later sessions
of a trusted project that also names MCP servers), ask_user answered
by the client through session/request_permission, and an MCP server's elicitation.

usage: e2e_mw.py PERI_BINARY MOCK_MODEL_PY SCENARIO
Exit 0 = pass, 1 = fail, 77 = skipped.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import (Agent, TIMEOUT, check, end_agents_cleanly, prompt,  # noqa: E402
                         scenario_main)


def tool_results(body):
    """Every tool result text of a model request (OpenAI format)."""
    return [m.get("content") for m in body.get("messages", []) if m.get("role") == "tool"]


def user_texts(body):
    out = []
    for m in body.get("messages", []):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        else:
            out.extend(p.get("text", "") for p in c or [])
    return out


def hooks_settings(hooks):
    return {"maxRetries": 0, "hooks": hooks}


def ended(a, rid):
    r = a.response(rid)
    check(r.get("result") == {"stopReason": "end_turn"}, "turn %r" % r)


# ---------------------------------------------------------------- hooks

def s_hook_deny(E):
    # a sandboxed PreToolUse hook refuses any shell command containing "rm "
    E.settings(hooks_settings({"PreToolUse": [{"matcher": "shell", "hooks": [{
        "type": "command",
        "command": "if grep -q 'rm '; then echo 'rm is forbidden by policy' >&2; exit 2; fi"}]}]}))
    E.put("keep.txt", "precious")
    a = E.agent()
    a.permission_answer = "allow_once"
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "c1", "name": "shell",
                                    "arguments": {"command": "rm -f keep.txt"}}]},
                   {"text": "understood"}])
    ended(a, prompt(a, sid, "delete it"))
    check(os.path.exists(os.path.join(E.cwd, "keep.txt")), "the denied command ran")
    asks = [f for _, f in a.log if f.get("method") == "session/request_permission"]
    check(not asks, "the user was asked about a call the hook denied")
    body = E.mock.requests()[-1]["body"]
    res = tool_results(body)
    check(res and "rm is forbidden by policy" in res[-1], "the model did not see why: %r" % res)


def s_hook_context(E):
    E.settings(hooks_settings({"UserPromptSubmit": [{"hooks": [{
        "type": "command", "command": "echo 'the release branch is frozen'"}]}]}))
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"text": "noted"}])
    ended(a, prompt(a, sid, "what now"))
    body = E.mock.requests()[-1]["body"]
    check(any("the release branch is frozen" in t for t in user_texts(body)),
          "context not in the request: %r" % user_texts(body))


def s_hook_block(E):
    # a UserPromptSubmit hook blocks a prompt: ACP's refusal, and the prompt is nowhere:
    # not in the model's requests, not the session's name (sent or stored), not replayed
    E.settings(hooks_settings({"UserPromptSubmit": [{"hooks": [{
        "type": "command",
        "command": "if grep -q hunter2; then echo 'no secrets here' >&2; exit 2; fi"}]}]}))
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"text": "hello back"}])
    r = a.response(prompt(a, sid, "my password is hunter2"))
    check(r.get("result") == {"stopReason": "refusal"}, "blocked prompt answered %r" % r)
    said = "".join(u["content"].get("text", "") for _, u in a.updates(sid)
                   if u["sessionUpdate"] == "agent_message_chunk")
    check("Prompt blocked by a hook: no secrets here" in said, "the user saw %r" % said)
    check(not E.mock.requests(), "the model was called")
    lst = a.result("session/list", {"cwd": E.cwd})["sessions"]  # (an empty one is not listed)
    check([x.get("title") for x in lst if x["sessionId"] == sid] in ([], [None]), "list %r" % lst)
    ended(a, prompt(a, sid, "hello there"))
    check(not any("hunter2" in t for t in user_texts(E.mock.requests()[-1]["body"])),
          "the blocked prompt reached the model")
    titles = [u.get("title") for _, u in a.updates(sid)
              if u["sessionUpdate"] == "session_info_update"]
    check(titles == ["hello there"], "titles sent %r" % titles)
    lst = a.result("session/list", {"cwd": E.cwd})["sessions"]
    check([x.get("title") for x in lst if x["sessionId"] == sid] == ["hello there"],
          "list %r" % lst)
    check(a.close_stdin() == 0, "exit")
    b = E.agent()
    t0 = time.monotonic()
    b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    check("hunter2" not in json.dumps(b.updates(sid, t0)), "the blocked prompt was replayed")


def s_hook_timeout(E):
    E.settings(hooks_settings({"PreToolUse": [{"hooks": [{
        "type": "command", "command": "sleep 60", "timeout": 1}]}]}))
    E.put("r.txt", "readable")
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "r1", "name": "read",
                                    "arguments": {"path": "r.txt"}}]},
                   {"text": "read it"}])
    t0 = time.monotonic()
    ended(a, prompt(a, sid, "read"))
    check(time.monotonic() - t0 < 30, "a hanging hook held the turn %.1fs" % (time.monotonic() - t0))
    res = tool_results(E.mock.requests()[-1]["body"])
    check(res and "readable" in res[-1], "the tool did not run after the failed hook: %r" % res)


def s_hook_mcp(E):
    # an MCP tool as a PreToolUse hook: its tool error denies, its JSON adds context
    srv = os.path.join(os.path.dirname(os.path.abspath(__file__)), "elicit_server.py")
    E.settings(hooks_settings({"PreToolUse": [{"matcher": "shell", "hooks": [{
        "type": "mcp_tool", "server": "el", "tool": "guard"}]}]}))
    E.put("keep.txt", "precious")
    a = E.agent()
    a.permission_answer = "allow_once"
    sid = a.result("session/new", {"cwd": E.cwd, "mcpServers": [
        {"name": "el", "command": sys.executable, "args": [srv], "env": []}]})["sessionId"]
    E.mock.script([{"tool_calls": [{"id": "c1", "name": "shell",
                                    "arguments": {"command": "rm -f keep.txt"}}]},
                   {"tool_calls": [{"id": "c2", "name": "shell",
                                    "arguments": {"command": "echo fine"}}]},
                   {"text": "ok"}])
    ended(a, prompt(a, sid, "go"))
    check(os.path.exists(os.path.join(E.cwd, "keep.txt")), "the denied command ran")
    res = tool_results(E.mock.requests()[-1]["body"])
    check("guard: no rm" in res[-2], "deny reason %r" % res)
    check("fine" in res[-1] and "guard saw shell" in res[-1], "context %r" % res)


def s_hook_cancel(E):
    # a cancel of the turn ends a running hook at once
    E.settings(hooks_settings({"PreToolUse": [{"hooks": [{
        "type": "command", "command": "sleep 100", "timeout": 200}]}]}))
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "r1", "name": "list", "arguments": {}}]},
                   {"text": "never"}])
    rid = prompt(a, sid, "list")
    a.wait_update(lambda u: u["sessionUpdate"] == "tool_call", "the tool call", sid=sid)
    time.sleep(0.5)
    t_cancel, t_answer = a.cancel(sid, rid)
    check(t_answer - t_cancel < 5, "the hook held the cancel %.1fs" % (t_answer - t_cancel))
    E.mock.script([{"text": "after"}])
    ended(a, prompt(a, sid, "again"))


def s_hook_subagent(E):
    # a subagent's tool calls pass the user's PreToolUse hooks; its end is SubagentStop
    E.settings(hooks_settings({
        "PreToolUse": [{"matcher": "read", "hooks": [{
            "type": "command", "command": "echo 'no reading here' >&2; exit 2"}]}],
        "SubagentStop": [{"hooks": [{"type": "command", "command": "cat > subagent-stop.json"}]}]}))
    E.put("secret.txt", "classified")
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "t1", "name": "task", "arguments": {
        "description": "look", "prompt": "read secret.txt"}}]},
        {"tool_calls": [{"id": "r1", "name": "read", "arguments": {"path": "secret.txt"}}]},
        {"text": "could not read it"},
        {"text": "done"}])
    ended(a, prompt(a, sid, "delegate"))
    child_req = E.mock.requests()[2]["body"]
    res = tool_results(child_req)
    check(res and "no reading here" in res[-1] and "classified" not in res[-1],
          "the subagent's read was not denied: %r" % res)
    path = os.path.join(E.cwd, "subagent-stop.json")
    check(os.path.exists(path), "no SubagentStop event")
    ev = json.load(open(path))
    check(ev["hook_event_name"] == "SubagentStop" and ev["agent_id"] != sid and
          ev["session_id"] == sid and ev["stop_reason"] == "end_turn", "event %r" % ev)


def s_hook_project(E):
    # a project's hook runs only once the user trusted that exact content
    marker = os.path.join(E.cwd, "hook-ran")
    os.makedirs(os.path.join(E.cwd, ".peri"))
    with open(os.path.join(E.cwd, ".peri", "settings.json"), "w") as f:
        json.dump({"hooks": {"UserPromptSubmit": [{"hooks": [{
            "type": "command", "command": "touch hook-ran; echo project-context"}]}]}}, f)
    a = E.agent()
    sid = E.new_session(a)
    a.permission_answer = "reject_once"  # not trusted
    E.mock.script([{"text": "one"}])
    ended(a, prompt(a, sid, "first"))
    trust = [f for _, f in a.log if f.get("method") == "session/request_permission"]
    check(trust and "Hooks it would run" in json.dumps(trust[-1]), "trust question %r" % trust)
    check(not os.path.exists(marker), "an untrusted project hook ran")
    check(not any("project-context" in t for t in user_texts(E.mock.requests()[-1]["body"])),
          "untrusted context reached the model")
    # a new session asks again; this time the user trusts it
    sid2 = E.new_session(a)
    a.permission_answer = "trust_project"
    E.mock.script([{"text": "two"}])
    ended(a, prompt(a, sid2, "second"))
    check(os.path.exists(marker), "the trusted project hook did not run")
    check(any("project-context" in t for t in user_texts(E.mock.requests()[-1]["body"])),
          "trusted context missing")
    # a changed file is not trusted: its hook stops
    os.unlink(marker)
    with open(os.path.join(E.cwd, ".peri", "settings.json"), "w") as f:
        json.dump({"hooks": {"UserPromptSubmit": [{"hooks": [{
            "type": "command", "command": "touch hook-ran; echo changed"}]}]}}, f)
    a.permission_answer = "reject_once"
    E.mock.script([{"text": "three"}])
    ended(a, prompt(a, sid2, "third"))
    check(not os.path.exists(marker), "a changed, untrusted project hook ran")


def s_hook_project_mcp(E):
    # a trusted project that also names an MCP server: in a later session (trust already
    # recorded, so its server starts with the session) its hook still runs, once a prompt,
    # and its server is started once
    srv = os.path.join(os.path.dirname(os.path.abspath(__file__)), "elicit_server.py")
    marker = os.path.join(E.cwd, "hook-ran")
    os.makedirs(os.path.join(E.cwd, ".peri"))
    with open(os.path.join(E.cwd, ".peri", "settings.json"), "w") as f:
        json.dump({"mcpServers": {"el": {"type": "stdio", "command": sys.executable,
                                         "args": [srv]}},
                   "hooks": {"UserPromptSubmit": [{"hooks": [{
                       "type": "command", "command": "echo x >> hook-ran; echo project-context"}]}]}},
                  f)
    a = E.agent()
    a.permission_answer = "trust_project"
    sid = E.new_session(a)
    E.mock.script([{"text": "one"}])
    ended(a, prompt(a, sid, "first"))
    check(os.path.exists(marker), "the hook did not run in the session that trusted it")
    os.unlink(marker)

    def asked(agent):
        return [f for _, f in agent.log if f.get("method") == "session/request_permission"]

    # a later session in a new agent process: nothing is asked, the hook runs
    b = E.agent()
    b.permission_answer = "reject_once"
    sid2 = E.new_session(b)
    E.mock.script([{"text": "two"}, {"text": "three"}])
    ended(b, prompt(b, sid2, "second"))
    check(not asked(b), "trusted content asked again: %r" % asked(b))
    check(os.path.exists(marker), "the trusted project hook did not run in a later session")
    body = E.mock.requests()[-1]["body"]
    check(any("project-context" in t for t in user_texts(body)), "trusted context missing")
    tools = [t["function"]["name"] for t in body.get("tools", [])]
    check("mcp__el__guard" in tools, "the trusted project server is missing: %r" % tools)
    ended(b, prompt(b, sid2, "third"))
    check(open(marker).read() == "x\nx\n", "hook runs %r (one a prompt expected)"
          % open(marker).read())
    said = json.dumps([u for _, u in b.updates(sid2)])
    check("refused" not in said, "the project server was started twice: %s" % said[:600])
    # a changed file: its hook stops until that content is trusted
    os.unlink(marker)
    with open(os.path.join(E.cwd, ".peri", "settings.json"), "w") as f:
        json.dump({"mcpServers": {"el": {"type": "stdio", "command": sys.executable,
                                         "args": [srv, "changed"]}},
                   "hooks": {"UserPromptSubmit": [{"hooks": [{
                       "type": "command", "command": "echo x >> hook-ran"}]}]}}, f)
    E.mock.script([{"text": "four"}])
    ended(b, prompt(b, sid2, "fourth"))
    check(asked(b), "a changed file did not ask again")
    check(not os.path.exists(marker), "a changed, untrusted project hook ran")


# ---------------------------------------------------------------- ask_user

class Asked(Agent):
    """A client that renders forms (clientCapabilities.elicitation.form): it answers
    elicitation/create with form_answer, or leaves questions open when hold is set."""
    form_answer = {"action": "accept", "content": {"answer": "blue"}}
    hold = False

    def on_request(self, f):
        if self.hold:
            return
        if f.get("method") == "elicitation/create":
            self.send({"jsonrpc": "2.0", "id": f["id"], "result": self.form_answer})
            return
        Agent.on_request(self, f)


def asks(a, method="session/request_permission"):
    return [f for _, f in a.log if f.get("method") == method]


def s_ask_choice(E):
    a = E.agent()
    sid = E.new_session(a)
    a.permission_answer = "choice_1"
    E.mock.script([{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {
        "question": "Which database?", "options": ["SQLite", "PostgreSQL"]}}]},
        {"text": "ok"}])
    ended(a, prompt(a, sid, "set it up"))
    q = asks(a)
    check(len(q) == 1, "one question %r" % q)
    p = q[0]["params"]
    check([(o["optionId"], o["name"], o["kind"]) for o in p["options"]] ==
          [("choice_0", "SQLite", "allow_once"), ("choice_1", "PostgreSQL", "allow_once"),
           ("decline", "Don't answer", "reject_once")], "options %r" % p["options"])
    check(p["toolCall"]["toolCallId"] == "q1" and p["toolCall"]["title"] == "Which database?",
          "toolCall %r" % p["toolCall"])
    res = tool_results(E.mock.requests()[-1]["body"])
    check(res and res[-1] == "The user chose: PostgreSQL", "result %r" % res)
    # declining
    a.permission_answer = "decline"
    E.mock.script([{"tool_calls": [{"id": "q2", "name": "ask_user", "arguments": {
        "question": "Proceed?", "options": ["yes", "no"]}}]}, {"text": "ok"}])
    ended(a, prompt(a, sid, "again"))
    res = tool_results(E.mock.requests()[-1]["body"])
    check(res[-1] == "The user declined to answer.", "decline %r" % res)


def s_ask_text(E):
    # a free-text question goes to a client that renders forms as elicitation/create
    a = E.agent(agent_class=Asked, caps={"elicitation": {"form": {}}})
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {
        "question": "Favourite colour?"}}]}, {"text": "ok"}])
    ended(a, prompt(a, sid, "ask me"))
    q = asks(a, "elicitation/create")
    check(len(q) == 1, "one elicitation %r" % q)
    p = q[0]["params"]
    check(p["sessionId"] == sid and p["mode"] == "form" and p["message"] == "Favourite colour?"
          and p["toolCallId"] == "q1", "params %r" % p)
    check(p["requestedSchema"]["properties"]["answer"]["type"] == "string", "schema %r" % p)
    res = tool_results(E.mock.requests()[-1]["body"])
    check(res[-1] == "The user answered: blue", "result %r" % res)
    # a client without forms is never sent one: the model is told to offer options
    b = E.agent()
    sid2 = E.new_session(b)
    E.mock.script([{"tool_calls": [{"id": "q2", "name": "ask_user", "arguments": {
        "question": "Favourite colour?"}}]}, {"text": "ok"}])
    ended(b, prompt(b, sid2, "ask me"))
    check(not asks(b, "elicitation/create"), "a form went to a client without the capability")
    res = tool_results(E.mock.requests()[-1]["body"])
    check("cannot take a free-text answer" in res[-1], "result %r" % res)


def s_ask_cancel(E):
    a = E.agent(agent_class=Asked)
    a.hold = True
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {
        "question": "Pick", "options": ["a", "b"]}}]}, {"text": "after"}])
    rid = prompt(a, sid, "ask")
    a.wait(lambda f: f.get("method") == "session/request_permission", what="the question")
    a.cancel(sid, rid)
    # the tool got a clear result; the next turn's request shows it
    a.hold = False
    E.mock.script([{"text": "fine"}])
    ended(a, prompt(a, sid, "next"))
    res = tool_results(E.mock.requests()[-1]["body"])
    check(res and res[-1].startswith("cancelled"), "cancelled result %r" % res)
    # close ends a pending question too
    a.hold = True
    E.mock.script([{"tool_calls": [{"id": "q2", "name": "ask_user", "arguments": {
        "question": "Pick", "options": ["a", "b"]}}]}, {"text": "after"}])
    rid = prompt(a, sid, "ask again")
    a.wait(lambda f: f.get("method") == "session/request_permission" and
           f["params"]["toolCall"]["toolCallId"] == "q2", what="the second question")
    t0 = time.monotonic()
    r = a.call("session/close", {"sessionId": sid})
    check("result" in r, "close %r" % r)
    check(time.monotonic() - t0 < 10, "close waited on the question")


def s_elicit(E):
    # an MCP server's elicitation/create reaches the user as a form and the answer goes
    # back to the server
    srv = os.path.join(os.path.dirname(os.path.abspath(__file__)), "elicit_server.py")
    servers = [{"name": "el", "command": sys.executable, "args": [srv], "env": []}]
    a = E.agent(agent_class=Asked, caps={"elicitation": {"form": {}}})
    a.form_answer = {"action": "accept", "content": {"name": "Ada"}}
    sid = a.result("session/new", {"cwd": E.cwd, "mcpServers": servers})["sessionId"]
    E.mock.script([{"tool_calls": [{"id": "g1", "name": "mcp__el__greet", "arguments": {}}]},
                   {"text": "done"}])
    ended(a, prompt(a, sid, "greet me"))
    q = asks(a, "elicitation/create")
    check(len(q) == 1, "one elicitation %r" % q)
    p = q[0]["params"]
    check(p["sessionId"] == sid and p["mode"] == "form" and "What is your name?" in p["message"]
          and "el" in p["message"], "params %r" % p)
    check(p["requestedSchema"]["properties"]["name"]["type"] == "string", "schema %r" % p)
    res = tool_results(E.mock.requests()[-1]["body"])
    check(res and "hello Ada" in res[-1], "the server did not get the answer: %r" % res)
    # declined by the user
    a.form_answer = {"action": "decline"}
    E.mock.script([{"tool_calls": [{"id": "g2", "name": "mcp__el__greet", "arguments": {}}]},
                   {"text": "done"}])
    ended(a, prompt(a, sid, "greet me again"))
    res = tool_results(E.mock.requests()[-1]["body"])
    check("answer: decline" in res[-1], "decline %r" % res)
    # a client without forms: the server is declined without a question
    b = E.agent()
    sid2 = b.result("session/new", {"cwd": E.cwd, "mcpServers": servers})["sessionId"]
    E.mock.script([{"tool_calls": [{"id": "g3", "name": "mcp__el__greet", "arguments": {}}]},
                   {"text": "done"}])
    ended(b, prompt(b, sid2, "greet"))
    check(not asks(b, "elicitation/create"), "a form went to a client without forms")
    res = tool_results(E.mock.requests()[-1]["body"])
    check("answer: decline" in res[-1], "no-forms result %r" % res)


# ---------------------------------------------------------------- background tasks

def task_events(a, sid):
    """(time, peri.task) of every task update of the session."""
    out = []
    for t, u in a.updates(sid):
        pt = (u.get("_meta") or {}).get("peri.task")
        if u["sessionUpdate"] == "session_info_update" and pt:
            out.append((t, pt))
    return out


def wait_task(a, sid, task_id, status):
    return a.wait_update(lambda u: ((u.get("_meta") or {}).get("peri.task") or {}).get(
        "taskId") == task_id and u["_meta"]["peri.task"]["status"] == status,
        "task %s %s" % (task_id, status), sid=sid)


def last_result(E):
    res = tool_results(E.mock.requests()[-1]["body"])
    check(res, "no tool result")
    return res[-1]


def s_bg_shell(E):
    a = E.agent()
    a.permission_answer = "allow_once"
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "b1", "name": "shell", "arguments": {
        "command": "echo first-line; sleep 60; echo never", "background": True}}]},
        {"text": "started"}])
    t0 = time.monotonic()
    ended(a, prompt(a, sid, "start it"))
    check(time.monotonic() - t0 < 20, "the background shell held the turn")
    check("Started background task task-1" in last_result(E), "start %r" % last_result(E))
    wait_task(a, sid, "task-1", "started")
    # its output so far, while it runs
    deadline = time.monotonic() + 20
    while True:
        E.mock.script([{"tool_calls": [{"id": "o1", "name": "task_output",
                                        "arguments": {"task_id": "task-1"}}]}, {"text": "ok"}])
        ended(a, prompt(a, sid, "output?"))
        out = last_result(E)
        if "first-line" in out:
            break
        check(time.monotonic() < deadline, "no output so far: %r" % out)
        time.sleep(0.3)
    check("running" in out and "never" not in out, "running task %r" % out)
    # a bounded wait returns while it still runs
    E.mock.script([{"tool_calls": [{"id": "w1", "name": "task_wait", "arguments": {
        "task_id": "task-1", "timeout_ms": 300}}]}, {"text": "ok"}])
    ended(a, prompt(a, sid, "wait a bit"))
    check("running" in last_result(E), "wait %r" % last_result(E))
    # stop
    E.mock.script([{"tool_calls": [{"id": "x1", "name": "task_stop",
                                    "arguments": {"task_id": "task-1"}}]}, {"text": "ok"}])
    ended(a, prompt(a, sid, "stop it"))
    check("stopped" in last_result(E) and "never" not in last_result(E),
          "stop %r" % last_result(E))
    wait_task(a, sid, "task-1", "stopped")
    # a finished one: completed with its exit code
    E.mock.script([{"tool_calls": [{"id": "b2", "name": "shell", "arguments": {
        "command": "echo done-2", "background": True}}]}, {"text": "ok"}])
    ended(a, prompt(a, sid, "another"))
    u = wait_task(a, sid, "task-2", "completed")[1]["params"]["update"]
    check(u["_meta"]["peri.task"]["exitCode"] == 0, "end %r" % u)
    # a task's start and end leave the session's title alone: no "title" member (null
    # would clear it in the client)
    info = [u for _, u in a.updates(sid) if u["sessionUpdate"] == "session_info_update"
            and "peri.task" in (u.get("_meta") or {})]
    check(len(info) >= 4 and not [u for u in info if "title" in u],
          "task updates carry a title %r" % [u.get("title", "-") for u in info])
    E.mock.script([{"tool_calls": [{"id": "w2", "name": "task_wait", "arguments": {
        "task_id": "task-2"}}]}, {"text": "ok"}])
    ended(a, prompt(a, sid, "result"))
    check("completed" in last_result(E) and "done-2" in last_result(E), "%r" % last_result(E))
    # the command cannot make task_output read a host file: its output file swapped for a
    # symlink is refused, never followed
    E.mock.script([{"tool_calls": [{"id": "b3", "name": "shell", "arguments": {
        "command": "o=$(readlink /proc/$$/fd/1); rm -f \"$o\"; ln -s /etc/passwd \"$o\"; "
                   "echo swapped >&2; sleep 60", "background": True}}]}, {"text": "ok"}])
    ended(a, prompt(a, sid, "third"))
    time.sleep(1.0)
    E.mock.script([{"tool_calls": [{"id": "o3", "name": "task_output",
                                    "arguments": {"task_id": "task-3"}}]}, {"text": "ok"}])
    ended(a, prompt(a, sid, "output?"))
    out = last_result(E)
    check("swapped" not in out, "the swap did not happen: the check proves nothing %r" % out)
    check("root:" not in out, "a symlinked output file was followed")


def s_bg_close(E):
    # a live task makes close report incomplete with the reason; the retry settles
    a = E.agent(PERI_CLOSE_GRACE_MS="0")
    a.permission_answer = "allow_once"
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "b1", "name": "shell", "arguments": {
        "command": "sleep 60", "background": True}}]}, {"text": "started"}])
    ended(a, prompt(a, sid, "start"))
    wait_task(a, sid, "task-1", "started")
    time.sleep(0.5)  # the prompt's worker is gone (else close says active_turn first)
    r = a.call("session/close", {"sessionId": sid})
    check(r.get("error") == {"code": -32010, "message":
                             "Session close incomplete: a background task is still running",
                             "data": {"reason": "background_task", "sessionId": sid}},
          "close with a live task %r" % r)
    deadline = time.monotonic() + 30
    while "error" in a.call("session/close", {"sessionId": sid}):
        check(time.monotonic() < deadline, "close never settled")
        time.sleep(0.05)


def s_bg_subagents(E):
    # two subagents run at the same time, each with its own agent id
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script({"responses": [
        {"tool_calls": [
            {"id": "s1", "name": "task", "arguments": {
                "description": "one", "prompt": "first job", "background": True}},
            {"id": "s2", "name": "task", "arguments": {
                "description": "two", "prompt": "second job", "background": True}}]}],
        "default": {"text": "sub done", "first_delay_ms": 1500}})
    ended(a, prompt(a, sid, "fan out"))
    e1 = wait_task(a, sid, "task-1", "completed")
    e2 = wait_task(a, sid, "task-2", "completed")
    ev = task_events(a, sid)
    starts = [t for t, p in ev if p["status"] == "started"]
    ends = [t for t, p in ev if p["status"] == "completed"]
    check(len(starts) == 2 and len(ends) == 2, "events %r" % ev)
    check(max(starts) < min(ends), "the second started only after the first ended")
    check(abs(e1[0] - e2[0]) < 1.2, "not concurrent: ends %.2fs apart" % abs(e1[0] - e2[0]))
    ids = {p.get("agentId") for _, p in ev if p["status"] == "completed"}
    check(len(ids) == 2 and sid not in ids and None not in ids, "agent ids %r" % ids)
    E.mock.script([{"tool_calls": [
        {"id": "w1", "name": "task_wait", "arguments": {"task_id": "task-1"}},
        {"id": "w2", "name": "task_wait", "arguments": {"task_id": "task-2"}}]},
        {"text": "ok"}])
    ended(a, prompt(a, sid, "collect"))
    res = tool_results(E.mock.requests()[-1]["body"])
    check(all("sub done" in r and "completed" in r for r in res[-2:]), "results %r" % res[-2:])


def s_bg_restart(E):
    # tasks belong to the process: a new process loading the session finds none, and
    # neither the old task's work nor its result comes back
    a = E.agent()
    a.permission_answer = "allow_once"
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "b1", "name": "shell", "arguments": {
        "command": "sleep 3; touch revived", "background": True}}]}, {"text": "started"}])
    ended(a, prompt(a, sid, "start"))
    wait_task(a, sid, "task-1", "started")
    check(a.close_stdin() == 0, "exit")
    b = E.agent()
    b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    E.mock.script([{"tool_calls": [{"id": "o1", "name": "task_output",
                                    "arguments": {"task_id": "task-1"}}]}, {"text": "ok"}])
    ended(b, prompt(b, sid, "where is it"))
    out = last_result(E)
    check("no task" in out and "never revives" in out, "old task %r" % out)
    time.sleep(4)
    check(not os.path.exists(os.path.join(E.cwd, "revived")), "the old task ran on")
    check(not task_events(b, sid), "an old task's update was delivered again")


SCENARIOS = {"hook_deny": s_hook_deny, "hook_context": s_hook_context, "hook_block": s_hook_block,
             "hook_timeout": s_hook_timeout, "hook_project": s_hook_project,
             "hook_project_mcp": s_hook_project_mcp,
             "hook_mcp": s_hook_mcp, "hook_cancel": s_hook_cancel,
             "hook_subagent": s_hook_subagent,
             "ask_choice": s_ask_choice, "ask_text": s_ask_text, "ask_cancel": s_ask_cancel,
             "elicit": s_elicit, "bg_shell": s_bg_shell, "bg_close": s_bg_close,
             "bg_subagents": s_bg_subagents, "bg_restart": s_bg_restart}

if __name__ == "__main__":
    sys.exit(scenario_main(__doc__, SCENARIOS, at_end=end_agents_cleanly))
