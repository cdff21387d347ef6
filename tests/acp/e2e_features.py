#!/usr/bin/env python3
"""e2e_features.py: end-to-end tests of the editor features of `peri acp`:
modes, config options (model choice), remembered permissions, slash commands, plans,
image prompts, usage, fork and $/cancel_request, subagents, project guidance and
skills, session/new validation. Same harness as e2e.py (mock model, private HOME).

usage: e2e_features.py PERI_BINARY MOCK_MODEL_PY SCENARIO
Exit 0 = pass, 1 = fail, 77 = skipped.
"""
import base64
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from collector import Collector  # noqa: E402
from acp_harness import (TIMEOUT, check, end_agents_cleanly, prompt,  # noqa: E402
                         scenario_main, text_of)

PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")).decode()


def upd(a, sid, tag, since=0.0):
    return [u for _, u in a.updates(sid, since) if u["sessionUpdate"] == tag]


def wait_update(a, sid, tag, what=None):
    return a.wait_update(lambda u: u["sessionUpdate"] == tag, what or tag, sid=sid)[1]


def perms(a, since=0.0):
    return [f for t, f in a.log if f.get("method") == "session/request_permission" and t >= since]


def last_body(E):
    return E.mock.requests()[-1]["body"]


def error_of(a, method, params):
    r = a.call(method, params)
    check("error" in r, "%s %r should fail: %r" % (method, params, r))
    return r["error"]


# ---------------------------------------------------------------- 1 modes

def s_modes(E):
    a = E.agent()
    r = a.result("session/new", {"cwd": E.cwd, "mcpServers": []})
    sid = r["sessionId"]
    modes = r["modes"]
    check(modes["currentModeId"] == "default", "default mode %r" % modes)
    check([m["id"] for m in modes["availableModes"]] ==
          ["default", "acceptEdits", "plan", "bypassPermissions"], "modes %r" % modes)
    e = error_of(a, "session/set_mode", {"sessionId": sid, "modeId": "nope"})
    check(e["code"] == -32602 and "nope" in e["message"], "unknown mode %r" % e)
    t0 = time.monotonic()
    check(a.result("session/set_mode", {"sessionId": sid, "modeId": "plan"}) == {}, "set_mode")
    u = wait_update(a, sid, "current_mode_update")
    check(u["params"]["update"]["currentModeId"] == "plan", "current_mode_update %r" % u)
    # plan mode: a write tool is refused without asking; read-only tools run
    E.put("r.txt", "readable")
    E.mock.script([
        {"tool_calls": [{"id": "w1", "name": "write",
                         "arguments": {"path": "plan.txt", "content": "x"}},
                        {"id": "r1", "name": "read", "arguments": {"path": "r.txt"}}]},
        {"text": "planned"}])
    r = a.response(prompt(a, sid, "make a plan"))
    check(r.get("result") == {"stopReason": "end_turn"}, "plan turn %r" % r)
    check(not perms(a, t0), "plan mode asked for permission")
    check(not os.path.exists(os.path.join(E.cwd, "plan.txt")), "plan mode wrote a file")
    ups = a.updates(sid, t0)
    failed = [u for _, u in ups if u["sessionUpdate"] == "tool_call_update"
              and u["toolCallId"] == "w1" and u.get("status") == "failed"]
    check(failed and "plan mode" in json.dumps(failed[0]), "write not refused: %r" % failed)
    done = [u for _, u in ups if u["sessionUpdate"] == "tool_call_update"
            and u["toolCallId"] == "r1" and u.get("status") == "completed"]
    check(done, "read did not run in plan mode")
    body = E.mock.requests()[0]["body"]
    check("Plan mode" in body["messages"][0]["content"], "model not told it is planning")
    # acceptEdits: write runs without asking, shell asks
    a.result("session/set_mode", {"sessionId": sid, "modeId": "acceptEdits"})
    t0 = time.monotonic()
    a.permission_answer = "reject_once"
    E.mock.script([
        {"tool_calls": [{"id": "w2", "name": "write",
                         "arguments": {"path": "edit.txt", "content": "edited"}},
                        {"id": "s2", "name": "shell", "arguments": {"command": "echo hi"}}]},
        {"text": "ok"}])
    a.response(prompt(a, sid, "edit and run"))
    check(open(os.path.join(E.cwd, "edit.txt")).read() == "edited", "acceptEdits write")
    p = perms(a, t0)
    check(len(p) == 1 and p[0]["params"]["toolCall"]["toolCallId"] == "s2",
          "acceptEdits asks for shell only: %r" % p)
    # bypassPermissions: nothing asks
    a.result("session/set_mode", {"sessionId": sid, "modeId": "bypassPermissions"})
    t0 = time.monotonic()
    E.mock.script([
        {"tool_calls": [{"id": "s3", "name": "shell",
                         "arguments": {"command": "echo bypass > by.txt"}}]},
        {"text": "ok"}])
    a.response(prompt(a, sid, "run"))
    check(not perms(a, t0), "bypass asked")
    check(os.path.exists(os.path.join(E.cwd, "by.txt")), "bypass shell did not run")
    # persisted across session/load in a new process
    a.result("session/set_mode", {"sessionId": sid, "modeId": "plan"})
    check(a.close_stdin() == 0, "exit")
    b = E.agent()
    r = b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    check(r["modes"]["currentModeId"] == "plan", "mode not persisted: %r" % r)
    cfg = {o["id"]: o for o in r["configOptions"]}
    check(cfg["mode"]["currentValue"] == "plan", "mode config option %r" % cfg)
    # the loaded session behaves in plan mode
    E.mock.script([{"tool_calls": [{"id": "w4", "name": "write",
                                    "arguments": {"path": "p2.txt", "content": "x"}}]},
                   {"text": "ok"}])
    b.response(prompt(b, sid, "write after load"))
    check(not os.path.exists(os.path.join(E.cwd, "p2.txt")), "plan mode lost after load")
    # mode through set_config_option too
    r = b.result("session/set_config_option", {"sessionId": sid, "configId": "mode",
                                               "value": "default"})
    check({o["id"]: o for o in r["configOptions"]}["mode"]["currentValue"] == "default",
          "mode via config %r" % r)


# ---------------------------------------------------------------- 2 config options

def s_config(E):
    E.settings({"maxRetries": 0,
                "providers": {"alt": {"type": "anthropic", "baseUrl": E.mock.url,
                                      "apiKey": "alt-key"}},
                "models": [{"id": "openai:mock-a", "name": "Mock A", "contextWindow": 50000},
                           {"id": "openai:mock-b", "name": "Mock B"},
                           {"id": "alt:claude-mock", "name": "Claude via alt"}]})
    a = E.agent(PERI_MODEL="openai:mock-a")
    r = a.result("session/new", {"cwd": E.cwd, "mcpServers": []})
    sid = r["sessionId"]
    opts = {o["id"]: o for o in r["configOptions"]}
    m = opts["model"]
    check(m["type"] == "select" and m["category"] == "model" and m["currentValue"] ==
          "openai:mock-a", "model option %r" % m)
    check([o["value"] for o in m["options"]] == ["openai:mock-a", "openai:mock-b",
                                                 "alt:claude-mock"], "choices %r" % m)
    check(m["options"][0]["name"] == "Mock A", "display name")
    E.mock.script([{"text": "from a"}])
    a.response(prompt(a, sid, "one"))
    check(last_body(E)["model"] == "mock-a", "first model %r" % last_body(E)["model"])
    e = error_of(a, "session/set_config_option", {"sessionId": sid, "configId": "model",
                                                  "value": "openai:unknown"})
    check(e["code"] == -32602 and "model" in e["message"], "unknown value %r" % e)
    e = error_of(a, "session/set_config_option", {"sessionId": sid, "configId": "nope",
                                                  "value": "x"})
    check(e["code"] == -32602 and "nope" in e["message"], "unknown option %r" % e)
    r = a.result("session/set_config_option", {"sessionId": sid, "configId": "model",
                                               "value": "openai:mock-b"})
    check({o["id"]: o for o in r["configOptions"]}["model"]["currentValue"] == "openai:mock-b",
          "set result %r" % r)
    wait_update(a, sid, "config_option_update")
    E.mock.script([{"text": "from b"}])
    a.response(prompt(a, sid, "two"))
    check(last_body(E)["model"] == "mock-b", "switched model %r" % last_body(E)["model"])
    # a named provider of the other format
    a.result("session/set_config_option", {"sessionId": sid, "configId": "model",
                                           "value": "alt:claude-mock"})
    E.mock.script([{"text": "from claude"}])
    r = a.response(prompt(a, sid, "three"))
    check(r.get("result") == {"stopReason": "end_turn"}, "alt turn %r" % r)
    q = E.mock.requests()[-1]
    check(q["path"].endswith("/messages") and q["body"]["model"] == "claude-mock" and
          q["headers"].get("x-api-key") == "alt-key", "named provider request %r" % q["path"])
    check(a.close_stdin() == 0, "exit")
    # persisted with the session
    b = E.agent(PERI_MODEL="openai:mock-a")
    r = b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    check({o["id"]: o for o in r["configOptions"]}["model"]["currentValue"] == "alt:claude-mock",
          "model not persisted %r" % r)
    E.mock.script([{"text": "again"}])
    b.response(prompt(b, sid, "four"))
    check(E.mock.requests()[-1]["path"].endswith("/messages"), "loaded session lost its model")


# ---------------------------------------------------------------- 3 permissions

def s_permissions(E):
    a = E.agent()
    sid = E.new_session(a)
    a.permission_answer = "allow_always"
    E.mock.script([
        {"tool_calls": [{"id": "w1", "name": "write",
                         "arguments": {"path": "a.txt", "content": "1"}}]},
        {"text": "ok"},
        {"tool_calls": [{"id": "w2", "name": "write",
                         "arguments": {"path": "b.txt", "content": "2"}}]},
        {"text": "ok"}])
    a.response(prompt(a, sid, "write a"))
    p = perms(a)
    check(len(p) == 1, "one ask %r" % len(p))
    opts = [(o["optionId"], o["kind"]) for o in p[0]["params"]["options"]]
    check(opts == [("allow_once", "allow_once"), ("allow_always", "allow_always"),
                   ("allow_always_project", "allow_always"), ("reject_once", "reject_once"),
                   ("reject_always", "reject_always")], "options %r" % opts)
    names = [o["name"] for o in p[0]["params"]["options"]]
    check("session" in names[1] and "project" in names[2], "option names %r" % names)
    a.response(prompt(a, sid, "write b"))
    check(len(perms(a)) == 1, "allow_always not remembered")
    check(os.path.exists(os.path.join(E.cwd, "b.txt")), "second write")
    # reject_always
    a.permission_answer = "reject_always"
    E.mock.script([
        {"tool_calls": [{"id": "s1", "name": "shell", "arguments": {"command": "echo 1"}}]},
        {"text": "ok"},
        {"tool_calls": [{"id": "s2", "name": "shell",
                         "arguments": {"command": "echo no > no.txt"}}]},
        {"text": "ok"}])
    a.response(prompt(a, sid, "shell 1"))
    n = len(perms(a))
    a.response(prompt(a, sid, "shell 2"))
    check(len(perms(a)) == n, "reject_always not remembered")
    check(not os.path.exists(os.path.join(E.cwd, "no.txt")), "rejected shell ran")
    # remembered with the session across a reload
    check(a.close_stdin() == 0, "exit")
    b = E.agent()
    b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    b.permission_answer = "reject_once"
    E.mock.script([{"tool_calls": [{"id": "w3", "name": "write",
                                    "arguments": {"path": "c.txt", "content": "3"}}]},
                   {"text": "ok"}])
    b.response(prompt(b, sid, "write c"))
    check(not perms(b) and os.path.exists(os.path.join(E.cwd, "c.txt")),
          "allow_always lost after load")
    # allow_always_project is kept in the user's own state (~/.peri/trust.json), never in
    # the project (which the sandbox or a cloned repo could write); a new session does not
    # ask
    sid2 = E.new_session(b)
    b.permission_answer = "allow_always_project"
    E.mock.script([{"tool_calls": [{"id": "e1", "name": "shell",
                                    "arguments": {"command": "echo p > p.txt"}}]},
                   {"text": "ok"}])
    b.response(prompt(b, sid2, "project shell"))
    check(not os.path.exists(os.path.join(E.cwd, ".peri", "settings.json")),
          "allow_always_project wrote into the project")
    trust = json.load(open(os.path.join(E.home, ".peri", "trust.json")))
    entry = trust["projects"][os.path.realpath(E.cwd)]
    check("shell" in entry["allow"], "user-state allow-list %r" % trust)
    sid3 = E.new_session(b)
    n = len(perms(b))
    b.permission_answer = "reject_once"
    E.mock.script([{"tool_calls": [{"id": "e2", "name": "shell",
                                    "arguments": {"command": "echo q > q.txt"}}]},
                   {"text": "ok"}])
    b.response(prompt(b, sid3, "again"))
    check(len(perms(b)) == n and os.path.exists(os.path.join(E.cwd, "q.txt")),
          "user-state project allow-list not honoured")
    # a control character in a path cannot rewrite the request's title: it shows
    E.put("AGENTS.md", "x")
    t0 = time.monotonic()
    E.mock.script([{"tool_calls": [{"id": "ed", "name": "edit", "arguments": {
        "path": "AGENTS.md\u001b[2K\rREADME", "old_string": "x", "new_string": "y"}}]},
                   {"text": "ok"}])
    b.response(prompt(b, sid3, "edit"))
    p = perms(b, t0)
    title = p[0]["params"]["toolCall"]["title"] if p else ""
    check(len(p) == 1 and "\x1b" not in title and "\r" not in title and
          "AGENTS.md\u241b[2K\\rREADME" in title, "edit title %r" % title)


# ---------------------------------------------------------------- 4 slash commands

def s_commands(E):
    os.makedirs(os.path.join(E.cwd, ".peri", "commands"))
    with open(os.path.join(E.cwd, ".peri", "commands", "review.md"), "w") as f:
        f.write("---\ndescription: Review a file carefully\nargument-hint: path\n---\n"
                "Review $ARGUMENTS and list bugs in $ARGUMENTS.\n")
    os.makedirs(os.path.join(E.home, ".peri", "commands"))
    with open(os.path.join(E.home, ".peri", "commands", "hello.md"), "w") as f:
        f.write("Say hello politely.\n")
    a = E.agent()
    sid = E.new_session(a)
    u = wait_update(a, sid, "available_commands_update")
    cmds = {c["name"]: c for c in u["params"]["update"]["availableCommands"]}
    for name in ("compact", "clear", "init", "model", "mode", "review", "hello"):
        check(name in cmds, "command %s missing: %r" % (name, list(cmds)))
    check(cmds["review"]["description"] == "Review a file carefully", "front matter")
    check(cmds["review"]["input"]["hint"] == "path", "hint")
    check(cmds["hello"]["description"] == "Say hello politely.", "home command description")
    # user command with $ARGUMENTS
    E.mock.script([{"text": "reviewed"}])
    r = a.response(prompt(a, sid, "/review src/x.c"))
    check(r.get("result") == {"stopReason": "end_turn"}, "review %r" % r)
    last = last_body(E)["messages"][-1]
    check("Review src/x.c and list bugs in src/x.c." in json.dumps(last), "expanded %r" % last)
    # two ordinary turns, then /compact with a model-written summary
    E.mock.script([{"text": "answer-one"}, {"text": "answer-two"},
                   {"text": "SUMMARY: user asked about alpha and beta"}, {"text": "after"}])
    a.response(prompt(a, sid, "OLD-ALPHA question"))
    a.response(prompt(a, sid, "OLD-BETA question"))
    t0 = time.monotonic()
    r = a.response(prompt(a, sid, "/compact focus on names"))
    check(r.get("result") == {"stopReason": "end_turn"}, "compact %r" % r)
    summ_req = last_body(E)
    check("focus on names" in json.dumps(summ_req["messages"][-1]), "compact instructions")
    check("OLD-ALPHA" in json.dumps(summ_req), "summary request lacks the history")
    check(not summ_req.get("tools"), "summary request offered tools")
    check("SUMMARY: user asked" in text_of(a.updates(sid, t0)), "summary not shown")
    a.response(prompt(a, sid, "NEW question"))
    body = json.dumps(last_body(E)["messages"])
    check("OLD-ALPHA" not in body and "OLD-BETA" not in body, "old turns still sent")
    check("SUMMARY: user asked about alpha and beta" in body, "summary not seen by next turn")
    check("NEW question" in body, "new prompt")
    # the compaction survives a reload
    check(a.close_stdin() == 0, "exit")
    b = E.agent()
    b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    E.mock.script([{"text": "x"}])
    b.response(prompt(b, sid, "after reload"))
    body = json.dumps(last_body(E)["messages"])
    check("OLD-ALPHA" not in body and "SUMMARY: user asked" in body, "compaction not persisted")
    # /clear
    b.response(prompt(b, sid, "/clear"))
    E.mock.script([{"text": "fresh"}])
    b.response(prompt(b, sid, "FRESH start"))
    body = json.dumps(last_body(E)["messages"])
    check("SUMMARY" not in body and "after reload" not in body and "FRESH start" in body,
          "clear did not hide history: %s" % body[:500])
    # /model and /mode
    n_req = len(E.mock.requests())
    t0 = time.monotonic()
    b.response(prompt(b, sid, "/model"))
    check("openai:mock-model" in text_of(b.updates(sid, t0)), "/model listing")
    b.response(prompt(b, sid, "/mode plan"))
    u = wait_update(b, sid, "current_mode_update")
    check(u["params"]["update"]["currentModeId"] == "plan", "/mode %r" % u)
    check(len(E.mock.requests()) == n_req, "/model or /mode called the model")
    b.response(prompt(b, sid, "/mode default"))
    # /init: the model writes AGENTS.md
    b.permission_answer = "allow_once"
    E.mock.script([{"tool_calls": [{"id": "i1", "name": "write", "arguments": {
        "path": "AGENTS.md", "content": "# Guide\nbuild with make\n"}}]}, {"text": "wrote it"}])
    r = b.response(prompt(b, sid, "/init"))
    check(r.get("result") == {"stopReason": "end_turn"}, "init %r" % r)
    check("AGENTS.md" in json.dumps(E.mock.requests()[-2]["body"]["messages"][-1]),
          "init prompt not sent")
    check(open(os.path.join(E.cwd, "AGENTS.md")).read().startswith("# Guide"), "AGENTS.md")
    # an unknown /word is an ordinary prompt
    E.mock.script([{"text": "plain"}])
    b.response(prompt(b, sid, "/usr/bin is a path"))
    check("/usr/bin is a path" in json.dumps(last_body(E)["messages"][-1]), "slash prompt")


# ---------------------------------------------------------------- 5 plans

def s_plan(E):
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([
        {"tool_calls": [{"id": "t1", "name": "todo", "arguments": {"todos": [
            {"content": "read code", "status": "in_progress", "priority": "high"},
            {"content": "fix bug", "status": "pending"}]}}]},
        {"tool_calls": [{"id": "t2", "name": "todo", "arguments": {"todos": [
            {"content": "read code", "status": "completed", "priority": "high"},
            {"content": "fix bug", "status": "in_progress"}]}}]},
        {"tool_calls": [{"id": "t3", "name": "todo", "arguments": {"todos": "bad"}}]},
        {"text": "done"}])
    r = a.response(prompt(a, sid, "plan it"))
    check(r.get("result") == {"stopReason": "end_turn"}, "plan turn %r" % r)
    plans = upd(a, sid, "plan")
    check(len(plans) == 2, "two plan updates, got %d" % len(plans))
    check(plans[0]["entries"] == [
        {"content": "read code", "priority": "high", "status": "in_progress"},
        {"content": "fix bug", "priority": "medium", "status": "pending"}], "plan 1 %r" % plans)
    check([e["status"] for e in plans[1]["entries"]] == ["completed", "in_progress"], "plan 2")
    bad = [u for u in upd(a, sid, "tool_call_update") if u["toolCallId"] == "t3"
           and u.get("status") == "failed"]
    check(bad, "invalid todo input not a tool error")
    check(not perms(a), "todo asked for permission")


# ---------------------------------------------------------------- 6 prompt content

# text, image, text, link, text, image: the order is kept end to end
ORDERED = [{"type": "text", "text": "First:"},
           {"type": "image", "mimeType": "image/png", "data": PNG},
           {"type": "text", "text": "Second:"},
           {"type": "resource_link", "uri": "https://example.com/spec", "name": "spec",
            "title": "The spec"},
           {"type": "text", "text": "Third:"},
           {"type": "image", "mimeType": "image/gif", "data": PNG}]


def image_prompt(a, sid, extra=()):
    return a.request("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "text", "text": "what is in this image?"},
        {"type": "image", "mimeType": "image/png", "data": PNG}] + list(extra)})


def s_images(E):
    a = E.agent()
    init = [f for _, f in a.log if f.get("id") == 101][0]["result"]
    check(init["agentCapabilities"]["promptCapabilities"]["image"] is True, "image capability")
    sid = E.new_session(a)
    E.mock.script([{"text": "a pixel"}])
    r = a.response(image_prompt(a, sid))
    check(r.get("result") == {"stopReason": "end_turn"}, "image prompt %r" % r)
    content = last_body(E)["messages"][-1]["content"]
    check(isinstance(content, list), "OpenAI content parts %r" % content)
    check({"type": "text", "text": "what is in this image?"} in content, "text part")
    imgs = [p for p in content if p.get("type") == "image_url"]
    check(imgs and imgs[0]["image_url"]["url"] == "data:image/png;base64," + PNG,
          "OpenAI image part %r" % imgs)
    # the image is kept in the history (next turn still sends it)
    E.mock.script([{"text": "ok"}])
    a.response(prompt(a, sid, "and now?"))
    check("data:image/png;base64," in json.dumps(last_body(E)["messages"]), "image dropped")
    # unsupported blocks are refused one by one; the rest goes through
    t0 = time.monotonic()
    E.mock.script([{"text": "partial"}])
    r = a.response(image_prompt(a, sid, [
        {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"},
        {"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAAA",
                                          "mimeType": "application/octet-stream"}},
        {"type": "resource", "resource": {"uri": "file:///p.png", "blob": PNG,
                                          "mimeType": "image/png"}},
        {"type": "image", "mimeType": "image/bmp", "data": "AAAA"}]))
    check(r.get("result") == {"stopReason": "end_turn"}, "mixed prompt rejected %r" % r)
    note = text_of(a.updates(sid, t0))
    check("audio" in note and "file:///x.bin" in note and "image/bmp" in note,
          "refusal notice %r" % note)
    last = last_body(E)["messages"][-1]["content"]
    check(len([p for p in last if p.get("type") == "image_url"]) == 2, "image blob not passed")
    check("Not shown to you" in json.dumps(last), "model not told about refused blocks")
    # the blocks reach the model in the client's order: each text before the image it
    # introduces, a resource link where it was
    E.mock.script([{"text": "both"}])
    r = a.response(a.request("session/prompt", {"sessionId": sid, "prompt": ORDERED}))
    check(r.get("result") == {"stopReason": "end_turn"}, "ordered prompt %r" % r)
    parts = [p["type"] + ":" + (p.get("text") or p["image_url"]["url"].split(";")[0][5:])
             for p in last_body(E)["messages"][-1]["content"]]
    check(parts == ["text:First:", "image_url:image/png", "text:Second:",
                    "text:[Resource: spec](https://example.com/spec)", "text:Third:",
                    "image_url:image/gif"], "model got %r" % parts)
    # a prompt with nothing usable is invalid params
    e = error_of(a, "session/prompt", {"sessionId": sid, "prompt": [
        {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}]})
    check(e["code"] == -32602 and "audio" in e["message"], "nothing usable %r" % e)
    check(a.close_stdin() == 0, "exit")
    # the image is replayed by session/load as an image block
    c = E.agent()
    c.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    blocks = [u["content"] for u in upd(c, sid, "user_message_chunk")]
    check({"type": "image", "mimeType": "image/png", "data": PNG} in blocks,
          "image not replayed: %r" % [b.get("type") for b in blocks])
    # in the order they came, a resource link as the block it was
    check(blocks[-len(ORDERED):] == ORDERED,
          "replayed %r" % [b.get("text") or b["type"] for b in blocks[-len(ORDERED):]])
    # Anthropic's native image block
    b = E.agent(PERI_MODEL="anthropic:claude-mock", ANTHROPIC_API_KEY="ak",
                ANTHROPIC_BASE_URL=E.mock.url, OPENAI_API_KEY="", OPENAI_BASE_URL="")
    sid = E.new_session(b)
    E.mock.script([{"text": "a pixel"}])
    r = b.response(image_prompt(b, sid))
    check(r.get("result") == {"stopReason": "end_turn"}, "anthropic image %r" % r)
    q = E.mock.requests()[-1]
    check(q["path"].endswith("/messages"), "not anthropic")
    blocks = q["body"]["messages"][-1]["content"]
    imgs = [x for x in blocks if x.get("type") == "image"]
    check(imgs and imgs[0]["source"] == {"type": "base64", "media_type": "image/png",
                                         "data": PNG}, "Anthropic image block %r" % blocks)


# ---------------------------------------------------------------- 7 usage

def s_usage(E):
    E.settings({"maxRetries": 0, "models": [
        {"id": "openai:mock-priced", "contextWindow": 32000,
         "price": {"input": 2.0, "output": 8.0}}]})
    a = E.agent(PERI_MODEL="openai:mock-priced")
    sid = E.new_session(a)
    E.mock.script([{"text": "x", "usage": {"input": 1000, "output": 500}},
                   {"text": "y", "usage": {"input": 2000, "output": 100}}])
    a.response(prompt(a, sid, "one"))
    a.response(prompt(a, sid, "two"))
    us = upd(a, sid, "usage_update")
    check(len(us) == 2, "usage updates %r" % us)
    check(us[0]["used"] == 1500 and us[0]["size"] == 32000, "window from settings %r" % us[0])
    check(us[0]["cost"]["currency"] == "USD" and abs(us[0]["cost"]["amount"] - 0.006) < 1e-9,
          "cost %r" % us[0])
    check(abs(us[1]["cost"]["amount"] - (0.006 + 0.0048)) < 1e-9, "cumulative cost %r" % us[1])
    check(a.close_stdin() == 0, "exit")
    # built-in table: a known model name
    E.settings({"maxRetries": 0})
    b = E.agent(PERI_MODEL="openai:gpt-4o-mini")
    sid = E.new_session(b)
    E.mock.script([{"text": "x", "usage": {"input": 1000000, "output": 0}}])
    b.response(prompt(b, sid, "one"))
    u = upd(b, sid, "usage_update")[0]
    check(u["size"] == 128000 and abs(u["cost"]["amount"] - 0.15) < 1e-9, "built-in %r" % u)
    # unknown model: budget as size, no cost
    c = E.agent(PERI_MODEL="openai:mystery-model")
    sid = E.new_session(c)
    E.mock.script([{"text": "x", "usage": {"input": 10, "output": 1}}])
    c.response(prompt(c, sid, "one"))
    u = upd(c, sid, "usage_update")[0]
    check(u["size"] == 100000 and "cost" not in u, "unknown model usage %r" % u)


# ---------------------------------------------------------------- 8 fork and $/cancel_request

def s_fork(E):
    a = E.agent()
    sid = E.new_session(a)
    a.result("session/set_mode", {"sessionId": sid, "modeId": "acceptEdits"})
    E.mock.script([{"text": "first answer"}])
    a.response(prompt(a, sid, "ORIGINAL question"))
    r = a.result("session/fork", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    fid = r["sessionId"]
    check(fid != sid and r["modes"]["currentModeId"] == "acceptEdits", "fork result %r" % r)
    E.mock.script([{"text": "forked answer"}])
    a.response(prompt(a, fid, "FORK question"))
    body = json.dumps(last_body(E)["messages"])
    check("ORIGINAL question" in body and "first answer" in body, "history not copied")
    E.mock.script([{"text": "source answer"}])
    a.response(prompt(a, sid, "SOURCE again"))
    check("FORK question" not in json.dumps(last_body(E)["messages"]), "fork leaked into source")
    lst = a.result("session/list", {"cwd": E.cwd})["sessions"]
    f = [s for s in lst if s["sessionId"] == fid]
    check(f and f[0]["_meta"]["peri.parentSessionId"] == sid, "fork not listed with parent %r"
          % f)
    e = error_of(a, "session/fork", {"sessionId": "00000000-0000-7000-8000-000000000000",
                                     "cwd": E.cwd})
    check(e["code"] == -32002, "fork unknown %r" % e)
    # fork while the source is active: -32010
    E.mock.script([{"text": "never", "hang": True}])
    rid = prompt(a, sid, "long one")
    deadline = time.monotonic() + TIMEOUT
    while not any("long one" in json.dumps(q["body"]) for q in E.mock.requests()):
        check(time.monotonic() < deadline, "hanging call never came")
        time.sleep(0.02)
    e = error_of(a, "session/fork", {"sessionId": sid, "cwd": E.cwd})
    check(e["code"] == -32010, "fork while active %r" % e)
    # $/cancel_request of the running prompt
    a.notify("$/cancel_request", {"requestId": rid})
    r = a.response(rid)
    check(r.get("result") == {"stopReason": "cancelled"}, "cancel_request %r" % r)
    # $/cancel_request of a queued prompt: the running one goes on
    E.mock.script([{"text": ["slow", " answer"], "delay_ms": 300}, {"text": "third"}])
    r1 = prompt(a, sid, "running")
    r2 = prompt(a, sid, "queued")
    time.sleep(0.1)
    a.notify("$/cancel_request", {"requestId": r2})
    x = a.response(r2)
    check(x.get("result") == {"stopReason": "cancelled"}, "queued cancel %r" % x)
    y = a.response(r1)
    check(y.get("result") == {"stopReason": "end_turn"}, "running prompt hurt %r" % y)
    check(not any("queued" in json.dumps(q["body"]["messages"][-1]) for q in E.mock.requests()),
          "cancelled queued prompt reached the model")
    a.notify("$/cancel_request", {"requestId": 99999})  # unknown: ignored
    check(a.call("session/list", {}).get("result") is not None, "alive")


# ---------------------------------------------------------------- 9 subagents

def s_subagent(E):
    E.put("data.txt", "child-secret-7")
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([
        {"tool_calls": [{"id": "task1", "name": "task", "arguments": {
            "description": "find the secret", "prompt": "Read data.txt and report it"}}]},
        {"tool_calls": [{"id": "c_read", "name": "read", "arguments": {"path": "data.txt"}}]},
        {"text": "the secret is child-secret-7"},
        {"text": "parent done"}])
    r = a.response(prompt(a, sid, "delegate"))
    check(r.get("result") == {"stopReason": "end_turn"}, "task turn %r" % r)
    reqs = E.mock.requests()
    check(len(reqs) == 4, "4 model calls, got %d" % len(reqs))
    child_first = reqs[1]["body"]
    check(child_first["messages"][0]["content"] == reqs[0]["body"]["messages"][0]["content"],
          "child has a different frozen context")
    check(child_first["messages"][-1]["content"] == "Read data.txt and report it", "child prompt")
    tools = sorted(t["function"]["name"] for t in child_first["tools"])
    check("task" not in tools and "write" not in tools and "read" in tools, "child tools %r"
          % tools)
    ups = a.updates(sid)
    nested = [u for _, u in ups if u.get("_meta", {}).get("peri.parentToolCallId") == "task1"]
    check(any(u["sessionUpdate"] == "tool_call" and u["toolCallId"] == "task1/c_read"
              for u in nested),
          "child tool call not nested %r" % nested)
    child_id = nested[0]["_meta"]["peri.childSessionId"]
    done = [u for _, u in ups if u["sessionUpdate"] == "tool_call_update"
            and u["toolCallId"] == "task1" and u.get("status") == "completed"]
    check(done and "child-secret-7" in json.dumps(done[0]), "task result %r" % done)
    prog = [u for _, u in ups if u["sessionUpdate"] == "tool_call_update"
            and u["toolCallId"] == "task1" and u.get("status") == "in_progress"
            and u.get("content")]
    check(prog and prog[-1]["content"][0]["content"]["text"] == "the secret is child-secret-7",
          "child progress not shown %r" % prog)
    check("child-secret-7" in json.dumps(reqs[3]["body"]["messages"]), "result not returned")
    lst = a.result("session/list", {"cwd": E.cwd})["sessions"]
    ch = [s for s in lst if s["sessionId"] == child_id]
    check(ch and ch[0]["_meta"]["peri.parentSessionId"] == sid and
          ch[0]["title"] == "find the secret", "child thread not listed %r" % ch)
    # a subagent given the write tool asks through the parent's broker, nested
    a.permission_answer = "allow_once"
    E.mock.script([
        {"tool_calls": [{"id": "task3", "name": "task", "arguments": {
            "description": "writer", "prompt": "write w.txt", "tools": ["write"]}}]},
        {"tool_calls": [{"id": "cw", "name": "write",
                         "arguments": {"path": "w.txt", "content": "by child"}}]},
        {"text": "written"}, {"text": "ok"}])
    a.response(prompt(a, sid, "delegate a write"))
    p = [f for _, f in a.log if f.get("method") == "session/request_permission"]
    check(p and p[-1]["params"]["toolCall"]["toolCallId"] == "task3/cw" and
          p[-1]["params"]["toolCall"]["_meta"]["peri.parentToolCallId"] == "task3",
          "child permission %r" % (p[-1]["params"] if p else None))
    check(open(os.path.join(E.cwd, "w.txt")).read() == "by child", "child write")
    # cancel of the parent cancels the child
    E.mock.script([
        {"tool_calls": [{"id": "task2", "name": "task", "arguments": {
            "description": "slow", "prompt": "think hard"}}]},
        {"text": "never", "hang": True},
        {"text": "must not be asked"}])
    n0 = len(E.mock.requests())
    rid = prompt(a, sid, "delegate slowly")
    deadline = time.monotonic() + TIMEOUT
    while len(E.mock.requests()) < n0 + 2:
        check(time.monotonic() < deadline, "child call never came")
        time.sleep(0.02)
    a.cancel(sid, rid, "parent cancel")
    time.sleep(0.5)
    check(len(E.mock.requests()) == n0 + 2, "the child or parent went on after cancel")
    # the session is usable afterwards (the child unwound)
    E.mock.script([{"text": "fine"}])
    r = a.response(prompt(a, sid, "next"))
    check(r.get("result") == {"stopReason": "end_turn"}, "after cancel %r" % r)


# ---------------------------------------------------------------- 10 guidance and skills

def s_guidance(E):
    E.put("AGENTS.md", "AGENTS-GUIDE-TEXT")
    E.put("CLAUDE.md", "CLAUDE-GUIDE-TEXT")
    outside = os.path.join(E.tmp, "outside.md")
    with open(outside, "w") as f:
        f.write("OUTSIDE-SECRET")
    os.symlink(outside, os.path.join(E.cwd, "PERI.md"))  # a symlink is never followed
    sk = os.path.join(E.cwd, ".peri", "skills")
    os.makedirs(os.path.join(sk, "deploy"))
    os.makedirs(os.path.join(sk, "lint"))
    with open(os.path.join(sk, "deploy", "SKILL.md"), "w") as f:
        f.write("---\nname: deploy\ndescription: Ship the app to production\n---\n"
                "DEPLOY-BODY step 1: run make release\n")
    with open(os.path.join(sk, "lint", "SKILL.md"), "w") as f:
        f.write("---\nname: lint\ndescription: Lint the code\n---\nLINT-BODY\n")
    os.makedirs(os.path.join(sk, "evil"))
    os.symlink(outside, os.path.join(sk, "evil", "SKILL.md"))
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([
        {"tool_calls": [{"id": "k1", "name": "skill", "arguments": {"name": "deploy"}},
                        {"id": "k2", "name": "skill", "arguments": {"name": "../outside"}},
                        {"id": "k3", "name": "skill", "arguments": {"name": "evil"}}]},
        {"text": "ok"}])
    a.response(prompt(a, sid, "deploy it"))
    system = E.mock.requests()[0]["body"]["messages"][0]["content"]
    check("AGENTS-GUIDE-TEXT" in system and "CLAUDE-GUIDE-TEXT" in system, "guides missing")
    check(system.index("AGENTS-GUIDE-TEXT") < system.index("CLAUDE-GUIDE-TEXT"), "guide order")
    check("OUTSIDE-SECRET" not in system, "symlinked guide was read")
    check("- deploy: Ship the app to production" in system and "- lint: Lint the code" in system,
          "skills summary %r" % system[-400:])
    check("DEPLOY-BODY" not in system, "skill body in the summary")
    ups = upd(a, sid, "tool_call_update")
    body = {u["toolCallId"]: u for u in ups if u.get("status") in ("completed", "failed")}
    check(body["k1"]["status"] == "completed" and "DEPLOY-BODY" in json.dumps(body["k1"]),
          "skill body %r" % body.get("k1"))
    check("name: deploy" not in json.dumps(body["k1"]["rawOutput"]), "front matter in body")
    for k in ("k2", "k3"):
        check(body[k]["status"] == "failed" and "OUTSIDE" not in json.dumps(body[k]),
              "skill escape %s %r" % (k, body[k]))
    # a FIFO guide does not hang session creation
    w2 = os.path.join(E.tmp, "fifo")
    os.makedirs(w2)
    os.mkfifo(os.path.join(w2, "AGENTS.md"))
    t0 = time.monotonic()
    r = a.call("session/new", {"cwd": w2, "mcpServers": []})
    check("result" in r and time.monotonic() - t0 < 5, "FIFO guide %r" % r)


# ---------------------------------------------------------------- 11 session/new validation

def s_newcheck(E):
    a = E.agent()
    cases = [({"mcpServers": []}, "cwd"), ({"cwd": 5, "mcpServers": []}, "cwd"),
             ({"cwd": E.cwd}, "mcpServers"), ({"cwd": E.cwd, "mcpServers": {}}, "mcpServers"),
             ({"cwd": "rel", "mcpServers": []}, "cwd")]
    for params, field in cases:
        e = error_of(a, "session/new", params)
        check(e["code"] == -32602 and field in e["message"], "%r -> %r" % (params, e))
    check("sessionId" in a.result("session/new", {"cwd": E.cwd, "mcpServers": []}), "valid new")


def s_telemetry(E):
    """settings.telemetry: one OTLP span per turn to the collector with PERI_TELEMETRY_TOKEN
    as the bearer token, the same span as the WebAssembly form's (form "native"); no prompt
    or output in it; a failing or hanging collector never changes a turn, and the exit
    does not wait for it."""
    col = Collector()
    try:
        E.settings({"maxRetries": 0,
                    "telemetry": {"url": "http://127.0.0.1:%d/v1/traces" % col.port}})
        a = E.agent(PERI_TELEMETRY_TOKEN="tel-token")
        sid = E.new_session(a)
        E.mock.script([{"text": "SECRET-ANSWER", "usage": {"input": 11, "output": 4}},
                       {"text": "two"}, {"text": "three"}])
        check(a.response(prompt(a, sid, "SECRET-PROMPT")).get("result") ==
              {"stopReason": "end_turn"}, "turn")
        check(col.wait_posts(1) == 1, "spans: %r" % col.posts)
        path, h, res, span, attrs = col.span(0)
        check(path == "/v1/traces" and h.get("authorization") == "Bearer tel-token",
              "post %r %r" % (path, h))
        check(res["service.name"] == {"stringValue": "peri-agent"} and
              res["peri.form"] == {"stringValue": "native"}, "resource %r" % res)
        check(attrs["peri.session.id"] == sid and attrs["gen_ai.usage.input_tokens"] == "11"
              and attrs["gen_ai.usage.output_tokens"] == "4" and
              attrs["peri.stop_reason"] == "end_turn" and attrs["peri.model_calls"] == "1" and
              attrs["peri.turn.id"], "attributes %r" % attrs)
        raw = json.dumps(col.posts[0][2])
        check("SECRET-PROMPT" not in raw and "SECRET-ANSWER" not in raw, "content leaked")
        col.status = 503
        check(a.response(prompt(a, sid, "two")).get("result") == {"stopReason": "end_turn"},
              "turn with a failing collector")
        col.wait_posts(2)
        col.status, col.hang = 200, True
        check(a.response(prompt(a, sid, "three")).get("result") == {"stopReason": "end_turn"},
              "turn with a hanging collector")
        col.wait_posts(3)
        t0 = time.monotonic()
        check(a.close_stdin() == 0, "exit")
        check(time.monotonic() - t0 < 8, "the exit waited for the collector")
        err = "".join(a.stderr)
        check("collector answered HTTP 503" in err and "side channel" in err,
              "no warning: %r" % err[-500:])
    finally:
        col.stop()


SCENARIOS = {"modes": s_modes, "config": s_config, "permissions": s_permissions,
             "commands": s_commands, "plan": s_plan, "images": s_images, "usage": s_usage,
             "fork": s_fork, "subagent": s_subagent, "guidance": s_guidance,
             "newcheck": s_newcheck, "telemetry": s_telemetry}


def main():
    # every agent still running ends cleanly on EOF (exit 0, no sanitizer report)
    return scenario_main(__doc__, SCENARIOS, at_end=end_agents_cleanly)


if __name__ == "__main__":
    sys.exit(main())
