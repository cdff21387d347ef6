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
from acp_harness import check, prompt, scenario_main  # noqa: E402

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


SCENARIOS = {"autocompact": s_autocompact, "autocompact_fallback": s_autocompact_fallback}

if __name__ == "__main__":
    sys.exit(scenario_main(__doc__, SCENARIOS))
