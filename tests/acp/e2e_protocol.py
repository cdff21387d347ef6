#!/usr/bin/env python3
"""e2e_protocol.py: end-to-end tests of the protocol contract of `peri acp` (docs/acp.md):
event identity on every update (turn, attempt, agent, epoch), the terminal notification
_peri/turn_done and its position, cancel and the input queue, the extension methods,
the closing guard, and session/new answering before its MCP servers are up. Same harness
as e2e.py (mock model, private HOME).

usage: e2e_protocol.py PERI_BINARY MOCK_MODEL_PY SCENARIO
Exit 0 = pass, 1 = fail, 77 = skipped.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import (check, end_agents_cleanly, prompt,  # noqa: E402
                         scenario_main)


def frames_between(a, t0, t1=None):
    return [(t, f) for t, f in list(a.log) if t >= t0 and (t1 is None or t <= t1)]


def meta_of(f):
    return f.get("params", {}).get("_meta", {})


def turn_frames(a, sid, rid, t0):
    """(updates, turn_done notifications, answer) of the prompt rid sent at t0, in order of
    arrival, once its answer came."""
    ans = a.response(rid)
    seen = []
    for t, f in frames_between(a, t0):
        if f.get("method") in ("session/update", "_peri/turn_done") and \
                f["params"].get("sessionId") == sid:
            seen.append(f)
        if f is ans:
            break
    return seen, ans


# ---------------------------------------------------------------- 1 event identity

def s_ids(E):
    a = E.agent()
    sid = E.new_session(a)
    E.put("data.txt", "hello")
    E.mock.script([
        {"tool_calls": [{"id": "r1", "name": "read", "arguments": {"path": "data.txt"}}],
         "usage": {"input": 5, "output": 2}},
        {"text": ["one", " two"], "usage": {"input": 7, "output": 3}},
        {"text": "second turn"}])
    turns = []
    for text in ("first", "second"):
        t0 = time.monotonic()
        rid = prompt(a, sid, text)
        fs, ans = turn_frames(a, sid, rid, t0)
        check(ans.get("result", {}).get("stopReason") == "end_turn", "turn %r" % ans)
        ups = [f for f in fs if f["method"] == "session/update"]
        check(ups, "no updates in turn %s" % text)
        for f in fs:
            m = meta_of(f)
            for k in ("peri.sessionSeq", "peri.sessionEpoch", "peri.turnId", "peri.attemptId",
                      "peri.agentId"):
                check(k in m, "%s missing on %s" % (k, json.dumps(f)[:300]))
            check(m["peri.agentId"] == sid, "main agent id %r" % m["peri.agentId"])
            check(m["peri.sessionEpoch"] == 1, "first epoch %r" % m["peri.sessionEpoch"])
        tids = {meta_of(f)["peri.turnId"] for f in fs}
        aids = {meta_of(f)["peri.attemptId"] for f in fs}
        check(len(tids) == 1 and len(aids) == 1, "one turn, one attempt: %r %r" % (tids, aids))
        seqs = [meta_of(f)["peri.sessionSeq"] for f in fs]
        check(seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "seq order %r" % seqs)
        turns.append((tids.pop(), aids.pop(), seqs))
    check(turns[0][0] != turns[1][0] and turns[0][1] != turns[1][1], "ids reused %r" % turns)
    check(turns[0][2][-1] < turns[1][2][0], "seq not monotonic across turns")

    # a subagent's events carry its own agent id
    E.mock.script([
        {"tool_calls": [{"id": "task1", "name": "task", "arguments": {
            "description": "look", "prompt": "Read data.txt"}}]},
        {"tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "data.txt"}}]},
        {"text": "child says hello"},
        {"text": "parent done"}])
    t0 = time.monotonic()
    rid = prompt(a, sid, "delegate")
    fs, ans = turn_frames(a, sid, rid, t0)
    child = [f for f in fs if f["method"] == "session/update"
             and f["params"]["update"].get("toolCallId", "").startswith("task1/")]
    check(child, "no child updates")
    cid = child[0]["params"]["update"]["_meta"]["peri.childSessionId"]
    for f in child:
        check(meta_of(f)["peri.agentId"] == cid and cid != sid,
              "child agent id %r (child %s)" % (meta_of(f).get("peri.agentId"), cid))
        check(meta_of(f)["peri.turnId"] == meta_of(fs[0])["peri.turnId"], "child turn id")
    own = [f for f in fs if f["method"] == "session/update"
           and f["params"]["update"].get("toolCallId") == "task1"]
    check(own and all(meta_of(f)["peri.agentId"] == sid for f in own), "task call is main's")

    # cancel with a queued prompt: the queued one runs as a new turn and a new attempt
    E.mock.script([{"text": "x", "hang": True}, {"text": "queued ran"}])
    t0 = time.monotonic()
    rid1 = prompt(a, sid, "first")
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk", "hanging chunk", sid=sid)
    rid2 = prompt(a, sid, "second")
    time.sleep(0.2)
    a.cancel(sid, rid1)
    r2 = a.response(rid2)
    check(r2.get("result") == {"stopReason": "end_turn"}, "queued prompt %r" % r2)
    done = [f for _, f in frames_between(a, t0) if f.get("method") == "_peri/turn_done"]
    check(len(done) == 2, "two terminal events %r" % done)
    check(done[0]["params"]["stopReason"] == "cancelled" and
          done[1]["params"]["stopReason"] == "end_turn", "terminal reasons %r" % done)
    check(done[0]["params"]["turnId"] != done[1]["params"]["turnId"] and
          done[0]["params"]["attemptId"] != done[1]["params"]["attemptId"], "new attempt")
    used = {t[0] for t in turns} | {t[1] for t in turns}
    check(done[1]["params"]["turnId"] not in used, "turn id reused")

    # a new process makes the session live again: a new epoch, new ids; replay has none
    check(a.close_stdin() == 0, "exit")
    b = E.agent()
    t0 = time.monotonic()
    b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    rep = [f for _, f in frames_between(b, t0) if f.get("method") == "session/update"]
    check(rep, "no replay")
    for f in rep:
        m = meta_of(f)
        check(m.get("peri.sessionEpoch") == 2 and "peri.turnId" not in m and
              m.get("periReplay") is True, "replay meta %r" % m)
    E.mock.script([{"text": "after load"}])
    t0 = time.monotonic()
    rid = prompt(b, sid, "again")
    fs, ans = turn_frames(b, sid, rid, t0)
    m = meta_of(fs[-1])
    check(m["peri.sessionEpoch"] == 2 and m["peri.turnId"] not in used and
          m["peri.turnId"] != done[1]["params"]["turnId"], "ids after load %r" % m)
    check(b.close_stdin() == 0, "exit")
    c = E.agent()
    c.result("session/resume", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    E.mock.script([{"text": "after resume"}])
    t0 = time.monotonic()
    fs, _ = turn_frames(c, sid, prompt(c, sid, "third process"), t0)
    check(meta_of(fs[-1])["peri.sessionEpoch"] == 3, "epoch 3 %r" % meta_of(fs[-1]))


# ---------------------------------------------------------------- 2 terminal ordering

def s_terminal(E):
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"text": ["a", "b", "c"], "usage": {"input": 11, "output": 4}}])
    t0 = time.monotonic()
    rid = prompt(a, sid, "hi")
    fs, ans = turn_frames(a, sid, rid, t0)
    kinds = [f["params"]["update"]["sessionUpdate"] if f["method"] == "session/update"
             else f["method"] for f in fs]
    check(kinds[-1] == "_peri/turn_done", "terminal event last before the answer: %r" % kinds)
    check(kinds.count("_peri/turn_done") == 1, "exactly one terminal %r" % kinds)
    check("usage_update" in kinds, "no usage update %r" % kinds)
    td = fs[-1]["params"]
    check(td["stopReason"] == "end_turn" and td["outcome"] == "completed" and
          td["sessionId"] == sid, "turn_done %r" % td)
    check(td["turnId"] == meta_of(fs[0])["peri.turnId"], "turn_done ids %r" % td)
    seqs = [meta_of(f)["peri.sessionSeq"] for f in fs]
    check(seqs == sorted(seqs), "terminal seq %r" % seqs)
    # the answer comes after the terminal event, on the wire
    order = [f for _, f in frames_between(a, t0)]
    i_done = next(i for i, f in enumerate(order) if f.get("method") == "_peri/turn_done")
    i_ans = next(i for i, f in enumerate(order) if f.get("id") == rid and "method" not in f)
    check(i_done < i_ans, "answer before terminal")

    # a failed turn: one terminal event with the error, then the error answer
    E.mock.script([{"status": 400}])
    t0 = time.monotonic()
    rid = prompt(a, sid, "fail")
    fs, ans = turn_frames(a, sid, rid, t0)
    check("error" in ans, "failed turn %r" % ans)
    td = [f for f in fs if f["method"] == "_peri/turn_done"]
    check(len(td) == 1 and td[0]["params"]["outcome"] == "failed" and
          "message" in td[0]["params"]["error"] and "stopReason" not in td[0]["params"],
          "failed terminal %r" % td)
    check(fs[-1]["method"] == "_peri/turn_done", "failed terminal not last")

    # cancelled: terminal before the answer, nothing of the turn after it; a second
    # cancel of the same turn changes nothing (no second terminal)
    E.mock.script([{"text": ["x", "y"], "hang": True, "hang_after": 2}, {"text": "next"}])
    t0 = time.monotonic()
    rid = prompt(a, sid, "long")
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk", "chunk", sid=sid)
    a.cancel(sid, rid)
    a.notify("session/cancel", {"sessionId": sid})
    time.sleep(0.5)
    fr = frames_between(a, t0)
    td = [f for _, f in fr if f.get("method") == "_peri/turn_done"]
    check(len(td) == 1 and td[0]["params"]["outcome"] == "interrupted" and
          td[0]["params"]["stopReason"] == "cancelled", "cancel terminal %r" % td)
    i_done = next(i for i, (_, f) in enumerate(fr) if f.get("method") == "_peri/turn_done")
    i_ans = next(i for i, (_, f) in enumerate(fr) if f.get("id") == rid and "method" not in f)
    check(i_done < i_ans, "cancel: answer before terminal")
    check(not [f for _, f in fr[i_done + 1:] if f.get("method") == "session/update"],
          "updates after the terminal event")
    # the session still works, and its next turn has its own terminal event
    t0 = time.monotonic()
    fs, ans = turn_frames(a, sid, prompt(a, sid, "next"), t0)
    check(ans.get("result") == {"stopReason": "end_turn"} and
          fs[-1]["method"] == "_peri/turn_done", "turn after cancel %r" % ans)


SCENARIOS = {"ids": s_ids, "terminal": s_terminal}


def main():
    return scenario_main(__doc__, SCENARIOS, at_end=end_agents_cleanly)


if __name__ == "__main__":
    sys.exit(main())
