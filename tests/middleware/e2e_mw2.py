#!/usr/bin/env python3
"""e2e_mw2.py: end-to-end tests over ACP (mock model, private HOME) of automatic
model-written compaction, the session goal and cron prompts.

usage: e2e_mw2.py PERI_BINARY MOCK_MODEL_PY SCENARIO
Exit 0 = pass, 1 = fail.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import check, end_agents_cleanly, prompt, scenario_main  # noqa: E402

BIG = "OLD-ALPHA " + "lorem ipsum dolor sit amet " * 75  # ~2000 bytes: ~500 tokens


def bodies(E):
    return [r["body"] for r in E.mock.requests()]


def compactions(a, sid, since=0.0):
    out = []
    for _, u in a.updates(sid, since):
        meta = (u.get("_meta") or {}).get("peri.compaction")
        if u["sessionUpdate"] == "usage_update" and meta:
            out.append((u, meta))
    return out


# ---------------------------------------------------------------- automatic compaction

def s_autocompact(E):
    E.settings({"maxRetries": 0, "contextBudget": 400, "autoCompact": {"threshold": 0.5}})
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"text": "answer-one"},
                   {"text": "SUMMARY: the user sent a long alpha text"},
                   {"text": "answer-two"}, {"text": "answer-three"}])
    r = a.response(prompt(a, sid, BIG))
    check(r.get("result") == {"stopReason": "end_turn"}, "turn 1 %r" % r)
    check(not compactions(a, sid), "compacted before the context was full")
    t0 = time.monotonic()
    r = a.response(prompt(a, sid, "SECOND question"))
    check(r.get("result") == {"stopReason": "end_turn"}, "turn 2 %r" % r)
    b = bodies(E)
    check(len(b) == 3, "expected turn, summary, turn: %d requests" % len(b))
    summ = json.dumps(b[1]["messages"])
    check("Summarize the conversation" in summ and "OLD-ALPHA" in summ,
          "the summary request: %s" % summ[:300])
    check("SECOND question" not in summ, "the new prompt was summarized away")
    check(not b[1].get("tools"), "the summary request offered tools")
    turn = json.dumps(b[2]["messages"])
    check("OLD-ALPHA" not in turn, "the old turn is still sent")
    check("SUMMARY: the user sent a long alpha text" in turn, "the summary is not in the view")
    check("SECOND question" in turn, "the new prompt is missing")
    c = compactions(a, sid, t0)
    check(len(c) == 1, "one compaction update: %r" % c)
    u, meta = c[0]
    check(meta["method"] == "summary" and meta["trigger"] == "auto", "meta %r" % meta)
    check(meta["before"] > meta["after"] > 0 and u["used"] == meta["after"], "counts %r" % u)
    check(meta["before"] >= 200, "before %r" % meta)
    check(u.get("size", 0) > 0, "size %r" % u)
    # the compaction survives a reload
    check(a.close_stdin() == 0, "exit")
    b2 = E.agent()
    b2.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    b2.response(prompt(b2, sid, "THIRD question"))
    turn = json.dumps(bodies(E)[-1]["messages"])
    check("OLD-ALPHA" not in turn and "SUMMARY: the user sent" in turn,
          "compaction not persisted: %s" % turn[:400])


def s_autocompact_fallback(E):
    E.settings({"maxRetries": 0, "contextBudget": 400, "autoCompact": {"threshold": 0.5}})
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"text": "answer-one"},
                   {"status": 500, "error_body": {"error": {"message": "summary refused"}}},
                   {"text": "answer-two"}])
    a.response(prompt(a, sid, BIG))
    t0 = time.monotonic()
    r = a.response(prompt(a, sid, "SECOND question"))
    check(r.get("result") == {"stopReason": "end_turn"}, "the turn goes on: %r" % r)
    b = bodies(E)
    check(len(b) == 3, "expected turn, failed summary, turn: %d" % len(b))
    turn = b[2]
    msgs = json.dumps(turn["messages"])
    check("SECOND question" in msgs, "the new prompt is missing")
    check("Summary of the earlier conversation" not in msgs, "a summary appeared")
    c = compactions(a, sid, t0)
    check(len(c) == 1, "one compaction update: %r" % c)
    u, meta = c[0]
    check(meta["method"] == "trim", "meta %r" % meta)
    check(meta["before"] > meta["after"], "counts %r" % meta)
    user_msgs = [m for m in turn["messages"] if m.get("role") == "user"]
    check(not any("OLD-ALPHA" in json.dumps(m) for m in user_msgs), "the old prompt was sent")


# ---------------------------------------------------------------- goal

def last_user(body):
    users = [m for m in body["messages"] if m.get("role") == "user"]
    return json.dumps(users[-1]) if users else ""


def plans(a, sid, since=0.0):
    return [u["entries"] for _, u in a.updates(sid, since) if u["sessionUpdate"] == "plan"]


def say_text(a, sid, since):
    return "".join(u["content"]["text"] for _, u in a.updates(sid, since)
                   if u["sessionUpdate"] == "agent_message_chunk")


def s_goal(E):
    E.settings({"maxRetries": 0, "goal": {"maxContinuations": 2}})
    a = E.agent()
    sid = E.new_session(a)
    t0 = time.monotonic()
    r = a.response(prompt(a, sid, "/goal make the tests pass"))
    check(r.get("result") == {"stopReason": "end_turn"}, "/goal %r" % r)
    check("Goal set: make the tests pass" in say_text(a, sid, t0), "not confirmed")
    p = plans(a, sid, t0)
    check(p and p[-1][0] == {"content": "Goal: make the tests pass", "priority": "high",
                             "status": "in_progress"}, "plan entry %r" % p)
    check(not E.mock.requests(), "/goal asked the model")
    # a turn that ends without the goal met continues on its own; goal_complete ends it
    E.mock.script([{"text": "working"}, {"text": "still working"},
                   {"tool_calls": [{"id": "g1", "name": "goal_complete",
                                    "arguments": {"summary": "all green"}}]},
                   {"text": "done"}])
    t0 = time.monotonic()
    r = a.response(prompt(a, sid, "start"))
    check(r.get("result") == {"stopReason": "end_turn"}, "turn %r" % r)
    b = bodies(E)
    check(len(b) == 4, "turn, continuation, continuation with goal_complete, final: %d" % len(b))
    check("Standing goal of this session, set by the user: make the tests pass"
          in json.dumps(b[0]["messages"][0]), "the system prompt lacks the goal")
    check(any(t["function"]["name"] == "goal_complete" for t in b[0].get("tools", [])),
          "goal_complete not offered")
    check("Automatic continuation 1 of 2" in last_user(b[1]), "continuation 1: %s" % last_user(b[1]))
    check("Automatic continuation 2 of 2" in last_user(b[2]), "continuation 2")
    ups = [u for _, u in a.updates(sid, t0) if u["sessionUpdate"] == "user_message_chunk"]
    check(len(ups) == 2 and "Automatic continuation" in ups[0]["content"]["text"],
          "continuations not shown: %r" % ups)
    p = plans(a, sid, t0)
    check(p and p[-1][0]["status"] == "completed", "goal not completed in the plan %r" % p)
    # a met goal asks for nothing more
    E.mock.script({"responses": [], "default": {"text": "ok"}})
    n = len(bodies(E))
    a.response(prompt(a, sid, "anything else?"))
    check(len(bodies(E)) == n + 1, "continued after the goal was met")
    check("Standing goal" not in json.dumps(bodies(E)[-1]["messages"][0]), "met goal in prompt")
    # the bound: an unmet goal gets exactly maxContinuations more turns
    a.response(prompt(a, sid, "/goal second goal"))
    n = len(bodies(E))
    a.response(prompt(a, sid, "go"))
    check(len(bodies(E)) == n + 3, "bound not kept: %d" % (len(bodies(E)) - n))
    # cancel stops at once: no continuation after it
    E.mock.script({"responses": [{"text": "slow", "first_delay_ms": 3000}],
                   "default": {"text": "ok", "first_delay_ms": 3000}})
    n = len(bodies(E))
    rid = prompt(a, sid, "go again")
    a.wait(lambda f: f.get("method") == "session/update" and
           f["params"]["update"].get("sessionUpdate") == "user_message_chunk", what="continuation")
    a.cancel(sid, rid)
    time.sleep(4)
    check(len(bodies(E)) <= n + 2, "continued after cancel: %d" % (len(bodies(E)) - n))
    # /goal shows it; it survives a reload; /goal clear clears it
    E.mock.script({"responses": [], "default": {"text": "ok"}})
    t0 = time.monotonic()
    a.response(prompt(a, sid, "/goal"))
    check("Goal (in progress): second goal" in say_text(a, sid, t0), "show")
    check(a.close_stdin() == 0, "exit")
    b2 = E.agent()
    b2.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    E.mock.script({"responses": [{"tool_calls": [{"id": "g2", "name": "goal_complete",
                                                  "arguments": {"summary": "ok"}}]}],
                   "default": {"text": "ok"}})
    b2.response(prompt(b2, sid, "after reload"))
    check("Standing goal of this session, set by the user: second goal"
          in json.dumps(bodies(E)[-2]["messages"][0]), "goal lost on reload")
    t0 = time.monotonic()
    b2.response(prompt(b2, sid, "/goal clear"))
    check("Goal cleared." in say_text(b2, sid, t0), "clear")
    b2.response(prompt(b2, sid, "/goal"))
    check("No goal is set" in say_text(b2, sid, t0), "cleared goal still shown")


# ---------------------------------------------------------------- cron

def cron_turns(E):
    return [b for b in bodies(E) if "Scheduled prompt, cron id" in last_user(b)
            and "CRON-PING" in last_user(b)]


def tool_output(a, sid, call_id):
    for _, u in a.updates(sid):
        if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == call_id and \
                u.get("status") in ("completed", "failed"):
            return json.dumps(u)
    return ""


def s_cron(E):
    a = E.agent()
    sid = E.new_session(a)
    # the model schedules a prompt every 2 s; each run of it takes 5 s
    E.mock.script({"responses": [
        {"tool_calls": [{"id": "c1", "name": "cron_create",
                         "arguments": {"schedule": "every 2s", "prompt": "CRON-PING"}}]},
        {"text": "scheduled"},
        {"text": "pong", "first_delay_ms": 5000}],
        "default": {"text": "ok"}})
    r = a.response(prompt(a, sid, "schedule it"))
    check(r.get("result") == {"stopReason": "end_turn"}, "create %r" % r)
    check("Scheduled as id 1" in tool_output(a, sid, "c1"), "create output %s" % tool_output(a, sid, "c1"))
    a.wait(lambda f: f.get("method") == "_peri/turn_done", what="the prompt's own end")
    # the first run fires as a turn of the session: its prompt shows, its terminal event comes
    a.wait(lambda f: f.get("method") == "session/update" and "CRON-PING" in
           json.dumps(f["params"]["update"]), timeout=10, what="the cron run")
    a.wait(lambda f: f.get("method") == "_peri/turn_done", timeout=15, what="the cron turn's end")
    runs = cron_turns(E)
    check(len(runs) == 1, "one run while the first was still going: %d" % len(runs))
    # listing shows the skipped due times (a run was still going)
    E.mock.script({"responses": [{"tool_calls": [{"id": "l1", "name": "cron_list",
                                                  "arguments": {}}]}, {"text": "listed"}],
                   "default": {"text": "ok"}})
    a.response(prompt(a, sid, "list them"))
    out = tool_output(a, sid, "l1")
    check("every 2s" in out and "CRON-PING" in out, "list %s" % out)
    import re
    m = re.search(r"skipped (\d+)", out)
    check(m and int(m.group(1)) >= 1, "no skipped run recorded: %s" % out)
    # delete it: no more runs
    E.mock.script({"responses": [{"tool_calls": [{"id": "d1", "name": "cron_delete",
                                                  "arguments": {"id": 1}}]}, {"text": "gone"}],
                   "default": {"text": "ok"}})
    a.response(prompt(a, sid, "delete it"))
    check("Deleted." in tool_output(a, sid, "d1"), "delete")
    n = len(cron_turns(E))
    time.sleep(4.5)
    check(len(cron_turns(E)) == n, "a deleted schedule still ran")
    # a schedule ends with the session
    E.mock.script({"responses": [
        {"tool_calls": [{"id": "c2", "name": "cron_create",
                         "arguments": {"schedule": "every 1s", "prompt": "CRON-PING"}}]},
        {"text": "scheduled"}], "default": {"text": "ok"}})
    a.response(prompt(a, sid, "again"))
    check(a.result("session/close", {"sessionId": sid}) == {}, "close")
    n = len(cron_turns(E))
    time.sleep(3)
    check(len(cron_turns(E)) == n, "a schedule outlived its session")


def s_cron_ask(E):
    """cron_create asks first (a schedule starts turns later, unattended); the request's
    title says the schedule and the prompt; a rejected one schedules nothing."""
    a = E.agent()
    sid = E.new_session(a)
    a.permission_answer = "reject_once"
    E.mock.script({"responses": [
        {"tool_calls": [{"id": "c1", "name": "cron_create",
                         "arguments": {"schedule": "every 1s", "prompt": "CRON-PING\u001b[2K"}}]},
        {"text": "not scheduled"}], "default": {"text": "ok"}})
    r = a.response(prompt(a, sid, "schedule it"))
    check(r.get("result") == {"stopReason": "end_turn"}, "create %r" % r)
    asks = [f["params"]["toolCall"] for _, f in a.log
            if f.get("method") == "session/request_permission"]
    check(len(asks) == 1 and asks[0]["toolCallId"] == "c1", "cron_create did not ask: %r" % asks)
    title = asks[0]["title"]
    check("every 1s" in title and "CRON-PING" in title and "\x1b" not in title,
          "cron_create title %r" % title)
    check("rejected" in tool_output(a, sid, "c1"), "rejected %s" % tool_output(a, sid, "c1"))
    time.sleep(2.5)
    check(not cron_turns(E), "a rejected schedule ran")


def s_cron_restart(E):
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script({"responses": [
        {"tool_calls": [{"id": "c1", "name": "cron_create",
                         "arguments": {"schedule": "*/1 * * * *", "prompt": "CRON-PING"}},
                        {"id": "c2", "name": "cron_create",
                         "arguments": {"schedule": "every 2s", "prompt": "CRON-PING"}}]},
        {"text": "scheduled"}], "default": {"text": "ok"}})
    a.response(prompt(a, sid, "schedule two"))
    check("Scheduled as id 2" in tool_output(a, sid, "c2"), "second schedule")
    check(a.close_stdin() == 0, "exit")
    n = len(cron_turns(E))
    b = E.agent()
    b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    time.sleep(4)
    check(len(cron_turns(E)) == n, "a schedule was revived after the restart")
    E.mock.script({"responses": [{"tool_calls": [{"id": "l1", "name": "cron_list",
                                                  "arguments": {}}]}, {"text": "listed"}],
                   "default": {"text": "ok"}})
    b.response(prompt(b, sid, "list"))
    out = tool_output(b, sid, "l1")
    check("No scheduled prompts" in out and "2 schedule(s) created before this session was "
          "reloaded were not revived" in out, "list after load: %s" % out)


SCENARIOS = {"autocompact": s_autocompact, "autocompact_fallback": s_autocompact_fallback,
             "goal": s_goal, "cron": s_cron, "cron_ask": s_cron_ask,
             "cron_restart": s_cron_restart}

if __name__ == "__main__":
    sys.exit(scenario_main(__doc__, SCENARIOS, at_end=end_agents_cleanly))
