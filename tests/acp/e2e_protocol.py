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
from acp_harness import (Fail, check, end_agents_cleanly, prompt,  # noqa: E402
                         scenario_main)


def frames_between(a, t0, t1=None):
    return [(t, f) for t, f in list(a.log) if t >= t0 and (t1 is None or t <= t1)]


def meta_of(f):
    return f.get("params", {}).get("_meta", {})


def session_level(f):
    """The session's command list follows the answer to session/new, load or resume, so it
    may arrive after the next prompt was sent; it belongs to no turn."""
    return f.get("method") == "session/update" and \
        f["params"].get("update", {}).get("sessionUpdate") == "available_commands_update"


def turn_frames(a, sid, rid, t0):
    """(updates, turn_done notifications, answer) of the prompt rid sent at t0, in order of
    arrival, once its answer came."""
    ans = a.response(rid)
    seen = []
    for t, f in frames_between(a, t0):
        if f.get("method") in ("session/update", "_peri/turn_done") and \
                f["params"].get("sessionId") == sid and not session_level(f):
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

    # a permission question of a turn carries that turn's identity
    E.mock.script([{"tool_calls": [{"id": "w1", "name": "write",
                                    "arguments": {"path": "w.txt", "content": "x"}}]},
                   {"text": "written"}])
    t0 = time.monotonic()
    fs, ans = turn_frames(a, sid, prompt(a, sid, "write it"), t0)
    asks = [f for _, f in frames_between(a, t0) if f.get("method") ==
            "session/request_permission"]
    check(len(asks) == 1, "one permission question %r" % asks)
    m = asks[0]["params"].get("_meta", {})
    check(m.get("peri.turnId") == meta_of(fs[-1])["peri.turnId"] and
          m.get("peri.attemptId") == meta_of(fs[-1])["peri.attemptId"] and
          m.get("peri.agentId") == sid and m.get("peri.sessionEpoch") == 1,
          "permission ids %r" % m)
    turns.append((m["peri.turnId"], m["peri.attemptId"], []))

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
    E.mock.script([{"text": "x", "hang": True, "hang_after": 2}, {"text": "queued ran"}])
    t0 = time.monotonic()
    rid1 = prompt(a, sid, "first")
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk" and
                  u["content"]["text"] == "x", "hanging chunk", sid=sid)
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
    rep = [f for _, f in frames_between(b, t0)
           if f.get("method") == "session/update" and not session_level(f)]
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
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk" and
                  u["content"]["text"] == "x", "chunk", sid=sid)
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


# ---------------------------------------------------------------- 3 cancel and the queue

def turn_done_of(a, rid, t0):
    """The _peri/turn_done sent just before the answer to rid (already received)."""
    last = None
    for _, f in frames_between(a, t0):
        if f.get("method") == "_peri/turn_done":
            last = f
        if f.get("id") == rid and "method" not in f:
            return last
    raise Fail("no answer to %d" % rid)


def no_answer(a, rid, wait=0.6):
    time.sleep(wait)
    return not [f for _, f in list(a.log) if f.get("id") == rid and "method" not in f]


def s_queue(E):
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"text": "one", "hang": True, "hang_after": 2},
                   {"text": "two", "hang": True, "hang_after": 2},
                   {"text": "three"}])
    t0 = time.monotonic()
    rid1 = prompt(a, sid, "first prompt")
    _, f = a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk" and
                         u["content"]["text"] == "one", "chunk 1",
                         sid=sid)
    t1, a1 = f["params"]["_meta"]["peri.turnId"], f["params"]["_meta"]["peri.attemptId"]
    rid2 = prompt(a, sid, "second prompt")
    rid3 = prompt(a, sid, "third prompt " + "x" * 500)
    time.sleep(0.2)
    q = a.result("_peri/queue/list", {"sessionId": sid})["queue"]
    check([e["text"][:13] for e in q] == ["second prompt", "third prompt "], "queue %r" % q)
    check(len(q[1]["text"]) == 200 and all(e["turnId"] != t1 for e in q), "queue %r" % q)
    t2, t3 = q[0]["turnId"], q[1]["turnId"]
    # a cancel naming another attempt of the running turn, or a queued turn's attempt,
    # changes nothing
    a.notify("session/cancel", {"sessionId": sid, "_meta": {"peri.turnId": t1,
                                                            "peri.attemptId": "attempt-9-9"}})
    check(no_answer(a, rid1), "a cancel of another attempt cancelled the turn")
    # a malformed target names nothing (it does not fall back to the running turn)
    for bad in ({"peri.turnId": 7}, {"peri.attemptId": a1}, {"peri.turnId": t1,
                                                              "peri.attemptId": None}):
        a.notify("session/cancel", {"sessionId": sid, "_meta": bad})
    check(no_answer(a, rid1, 0.4), "a malformed cancel target cancelled the turn")
    # the cancel naming the running turn and attempt
    a.notify("session/cancel", {"sessionId": sid, "_meta": {"peri.turnId": t1,
                                                            "peri.attemptId": a1}})
    r = a.response(rid1)
    check(r.get("result") == {"stopReason": "cancelled"}, "targeted cancel %r" % r)
    # the queue survived: the second prompt runs; the same cancel again is a no-op
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk"
                  and u["content"]["text"] == "two", "second prompt running", sid=sid)
    a.notify("session/cancel", {"sessionId": sid, "_meta": {"peri.turnId": t1,
                                                            "peri.attemptId": a1}})
    a.notify("session/cancel", {"sessionId": sid, "_meta": {"peri.turnId": t1}})
    check(no_answer(a, rid2), "a repeated cancel of an ended turn cancelled its successor")
    q = a.result("_peri/queue/list", {"sessionId": sid})["queue"]
    check([e["turnId"] for e in q] == [t3], "queue after start %r" % q)
    # a cancel with clear_queue: the running turn and every queued prompt end
    n_model = len(E.mock.requests())
    t0 = time.monotonic()
    a.notify("session/cancel", {"sessionId": sid, "clear_queue": True})
    r2, r3 = a.response(rid2), a.response(rid3)
    check(r2.get("result") == {"stopReason": "cancelled"} and
          r3.get("result") == {"stopReason": "cancelled"}, "clear_queue %r %r" % (r2, r3))
    td = turn_done_of(a, rid3, t0)
    check(td["params"]["turnId"] == t3 and "attemptId" not in td["params"] and
          td["params"]["outcome"] == "interrupted", "never-ran terminal %r" % td)
    time.sleep(0.3)
    check(len(E.mock.requests()) == n_model, "a cleared prompt reached the model")
    check(a.result("_peri/queue/list", {"sessionId": sid})["queue"] == [], "queue not empty")

    # _peri/queue/clear drops the waiting prompts and leaves the running one
    E.mock.script([{"text": "four", "hang": True, "hang_after": 2}, {"text": "after"}])
    rid4 = prompt(a, sid, "fourth")
    a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk"
                  and u["content"]["text"] == "four", "fourth running", sid=sid)
    rid5, rid6 = prompt(a, sid, "fifth"), prompt(a, sid, "sixth")
    time.sleep(0.2)
    r = a.result("_peri/queue/clear", {"sessionId": sid})
    check(r == {"cleared": 2}, "queue/clear %r" % r)
    for rid in (rid5, rid6):
        check(a.response(rid).get("result") == {"stopReason": "cancelled"}, "cleared prompt")
    check(no_answer(a, rid4, 0.3), "queue/clear cancelled the running turn")
    a.cancel(sid, rid4)
    # unknown session: -32002; missing sessionId: -32602
    e = a.call("_peri/queue/list", {"sessionId": "nope"})["error"]
    check(e["code"] == -32002, "unknown session %r" % e)
    e = a.call("_peri/queue/clear", {})["error"]
    check(e["code"] == -32602, "missing sessionId %r" % e)
    # the session still works
    E.mock.script([{"text": "fine"}])
    check(a.response(prompt(a, sid, "ok?")).get("result") == {"stopReason": "end_turn"},
          "after the queue tests")


def s_retry_cancel(E):
    """cancel > retry: a cancel during the retry wait ends the turn; no retry is sent."""
    E.settings({"maxRetries": 3})
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"status": 503, "retry_after": "2"}, {"text": "retried"}])
    rid = prompt(a, sid, "retry me")
    deadline = time.monotonic() + 5
    while not E.mock.requests():
        check(time.monotonic() < deadline, "no model request")
        time.sleep(0.02)
    time.sleep(0.2)
    t_cancel, t_resp = a.cancel(sid, rid)
    check(t_resp - t_cancel < 1.5, "cancel waited for the retry (%.2f s)" % (t_resp - t_cancel))
    time.sleep(2.5)
    check(len(E.mock.requests()) == 1, "a retry was sent after the cancel")


# ---------------------------------------------------------------- extension methods

def s_extensions(E):
    a = E.agent()
    init = a.log[0][1] if a.log else None
    check(init and "result" in init, "initialize answer")
    meta = init["result"]["agentCapabilities"]["_meta"]
    for m in ("_peri/queue/list", "_peri/queue/clear", "_peri/session/rename",
              "_peri/session/archive", "_peri/session/unarchive", "_peri/session/rewind"):
        check(m in meta["peri.methods"], "%s not advertised: %r" % (m, meta))
    check(meta["peri.turnDone"] is True and meta["peri.eventIds"] is True, "flags %r" % meta)
    sid = E.new_session(a)
    E.mock.script([{"text": "answer one"}, {"text": "answer two"}, {"text": "answer three"}])
    for w in ("one", "two", "three"):
        check(a.response(prompt(a, sid, "turn " + w)).get("result") ==
              {"stopReason": "end_turn"}, "turn " + w)
    # rename
    check(a.result("_peri/session/rename", {"sessionId": sid, "title": "Renamed"}) == {},
          "rename")
    u = a.wait_update(lambda u: u["sessionUpdate"] == "session_info_update" and
                      u.get("title") == "Renamed", "session_info_update", sid=sid)
    check(u, "no session_info_update")
    for bad in ("", "a\nb", "x" * 201):
        e = a.call("_peri/session/rename", {"sessionId": sid, "title": bad})["error"]
        check(e["code"] == -32602, "bad title %r: %r" % (bad, e))
    lst = a.result("session/list", {"cwd": E.cwd})["sessions"]
    check([s["title"] for s in lst if s["sessionId"] == sid] == ["Renamed"], "list %r" % lst)
    # archive / unarchive
    check(a.result("_peri/session/archive", {"sessionId": sid}) == {}, "archive")
    lst = a.result("session/list", {"cwd": E.cwd})["sessions"]
    check(sid not in [s["sessionId"] for s in lst], "archived session listed %r" % lst)
    lst = a.result("session/list", {"cwd": E.cwd, "_meta": {"peri.includeArchived": True}})
    arch = [s for s in lst["sessions"] if s["sessionId"] == sid]
    check(arch and arch[0]["_meta"]["peri.archived"] is True, "includeArchived %r" % lst)
    check(a.result("_peri/session/unarchive", {"sessionId": sid}) == {}, "unarchive")
    lst = a.result("session/list", {"cwd": E.cwd})["sessions"]
    check(sid in [s["sessionId"] for s in lst], "unarchived session not listed")
    # rewind: bad arguments, then drop the last two turns
    for bad in (0, -1, "2", 10001):
        e = a.call("_peri/session/rewind", {"sessionId": sid, "turns": bad})["error"]
        check(e["code"] == -32602, "bad turns %r: %r" % (bad, e))
    import sqlite3
    def rows():
        db = sqlite3.connect(E.db)
        try:
            return db.execute("select count(*) from messages where thread_id = ?",
                              (sid,)).fetchone()[0]
        finally:
            db.close()
    before = rows()
    r = a.result("_peri/session/rewind", {"sessionId": sid, "turns": 2})
    check(r == {"dropped": 2}, "rewind %r" % r)
    check(rows() == before, "rewind rewrote stored rows (%d -> %d)" % (before, rows()))
    E.mock.script([{"text": "after rewind"}])
    t0 = time.monotonic()
    rid = prompt(a, sid, "turn four")
    fs, ans = turn_frames(a, sid, rid, t0)
    body = json.dumps(E.mock.requests()[-1]["body"]["messages"])
    check("turn one" in body and "answer one" in body and "turn two" not in body and
          "turn three" not in body and "answer three" not in body, "model saw %s" % body)
    check(meta_of(fs[-1])["peri.sessionEpoch"] == 2, "rewind is a new epoch")
    # the rewound state survives a restart; the replay shows it
    check(a.close_stdin() == 0, "exit")
    b = E.agent()
    t0 = time.monotonic()
    b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    rep = json.dumps([f for _, f in frames_between(b, t0) if f.get("method") == "session/update"])
    check("turn one" in rep and "turn four" in rep and "turn two" not in rep and
          "turn three" not in rep, "replay after rewind %s" % rep[:600])
    # a rewind of more turns than there are drops what there is; fork copies the state
    fk = b.result("session/fork", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    E.mock.script([{"text": "fork ok"}])
    b.response(prompt(b, fk["sessionId"], "in the fork"))
    body = json.dumps(E.mock.requests()[-1]["body"]["messages"])
    check("turn one" in body and "turn four" in body and "turn two" not in body,
          "fork history %s" % body)
    r = b.result("_peri/session/rewind", {"sessionId": sid, "turns": 50})
    check(r == {"dropped": 2}, "rewind all %r" % r)
    # a rewind while a prompt runs is refused
    E.mock.script([{"text": "busy", "hang": True, "hang_after": 2}])
    rid = prompt(b, sid, "busy")
    b.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk" and
                  u["content"]["text"] == "busy", "busy chunk", sid=sid)
    e = b.call("_peri/session/rewind", {"sessionId": sid, "turns": 1})["error"]
    check(e["code"] == -32602 and "active" in e["message"], "rewind while busy %r" % e)
    b.cancel(sid, rid)
    e = b.call("_peri/session/rename", {"sessionId": "nope", "title": "x"})["error"]
    check(e["code"] == -32002, "rename of an unknown session %r" % e)


# ---------------------------------------------------------------- 4 the closing guard

GUARDED = [
    ("session/set_mode", {"modeId": "plan"}),
    ("session/set_config_option", {"configId": "mode", "value": "plan"}),
    ("session/fork", {"mcpServers": []}),
    ("_peri/session/rename", {"title": "t"}),
    ("_peri/session/rewind", {"turns": 1}),
    ("_peri/session/archive", {}),
    ("_peri/session/unarchive", {}),
    ("_peri/queue/clear", {}),
    ("session/prompt", {"prompt": [{"type": "text", "text": "x"}]}),
    ("session/load", {"mcpServers": []}),
]


def s_closing(E):
    a = E.agent(PERI_CLOSE_GRACE_MS="0")
    for attempt in range(8):
        sid = E.new_session(a)
        E.mock.script([{"text": "x", "hang": True, "hang_after": 2}])
        rid = prompt(a, sid, "hang")
        a.wait_update(lambda u: u["sessionUpdate"] == "agent_message_chunk", "chunk", sid=sid)
        a.next_id += 1
        cid = a.next_id
        a.send_raw(json.dumps({"jsonrpc": "2.0", "id": cid, "method": "session/close",
                               "params": {"sessionId": sid}}))
        r = a.response(cid)
        a.response(rid)
        if "result" in r:
            continue  # the turn unwound before the close was read: try again
        check(r["error"]["code"] == -32010, "close %r" % r)
        break
    else:
        raise Fail("close never observed a turn still unwinding")
    # the session stays closing until a close settles it: every state change refuses
    for method, extra in GUARDED:
        params = dict(extra, sessionId=sid, cwd=E.cwd)
        r = a.call(method, params)
        check("error" in r and r["error"]["code"] == -32010 and
              r["error"]["message"] == "Session is closing",
              "%s while closing: %r" % (method, r))
    # reading stays possible
    check("queue" in a.result("_peri/queue/list", {"sessionId": sid}), "queue/list")
    deadline = time.monotonic() + 3
    while "error" in a.call("session/close", {"sessionId": sid}):
        check(time.monotonic() < deadline, "close never settled")
        time.sleep(0.05)
    # once closed, the session can be opened again and changed
    a.result("session/resume", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    check(a.result("session/set_mode", {"sessionId": sid, "modeId": "plan"}) == {}, "reopened")


# ---------------------------------------------------------------- MCP servers start late

def late_entry(E, name, root, delay):
    """An MCP server (Peri's own workspace server) that takes `delay` seconds to start."""
    return {"name": name, "command": "sh",
            "args": ["-c", 'sleep %s; exec "$0" mcp workspace --root "$1"' % delay,
                     os.path.abspath(E.peri), root], "env": []}


def s_mcp_start(E):
    from acp_harness import procs_with, wait_gone
    a = E.agent()
    root = os.path.join(E.tmp, "lateroot")
    os.makedirs(root)
    with open(os.path.join(root, "late.txt"), "w") as f:
        f.write("late-secret-5\n")
    # answered at once, naming the servers still starting
    t0 = time.monotonic()
    rid = a.request("session/new", {"cwd": E.cwd, "mcpServers": [
        late_entry(E, "late", root, 2),
        {"name": "never", "command": "sh", "args": ["-c", "sleep 8"], "env": []}]})
    # a prompt in the same breath: its turn waits for the servers on its worker
    r = a.response(rid)
    t_ans = time.monotonic()
    check(t_ans - t0 < 1.5, "session/new waited %.1f s for its MCP servers" % (t_ans - t0))
    sid = r["result"]["sessionId"]
    st = r["result"]["_meta"]["peri.mcpServers"]
    check(st == [{"name": "late", "status": "starting"}, {"name": "never", "status": "starting"}],
          "starting servers %r" % st)
    # another session is not held up meanwhile
    sid2 = E.new_session(a)
    check(time.monotonic() - t_ans < 1.5, "a second session/new was held up")
    # the final status comes once every server is ready or failed, after the answer
    _, f = a.wait(lambda f: f.get("method") == "_peri/mcp_status", 40, "_peri/mcp_status")
    p = f["params"]
    check(p["sessionId"] == sid and
          p["servers"] == [{"name": "late", "status": "ready"},
                           {"name": "never", "status": "failed"}]
          and any('"never"' in e for e in p["errors"]) and
          p["_meta"]["peri.sessionEpoch"] == 1, "final status %r" % p)
    # the ready server's tools reach the model
    E.mock.script([{"tool_calls": [{"id": "m1", "name": "mcp__late__read",
                                    "arguments": {"path": "late.txt"}}]}, {"text": "read it"}])
    a.permission_answer = "allow_once"
    check(a.response(prompt(a, sid, "read the late file"), timeout=30).get("result") ==
          {"stopReason": "end_turn"}, "turn with the late server")
    tools = [t["function"]["name"] for t in E.mock.requests()[-2]["body"]["tools"]]
    check("mcp__late__read" in tools and not any(t.startswith("mcp__never") for t in tools),
          "tools %r" % tools)
    check("late-secret-5" in json.dumps(E.mock.requests()[-1]["body"]["messages"]),
          "the MCP tool did not run")

    # a prompt sent right after session/new waits for the servers, and sees their tools
    root2 = os.path.join(E.tmp, "lateroot2")
    os.makedirs(root2)
    E.mock.script([{"text": "seen"}])
    n0 = len(E.mock.requests())
    t0 = time.monotonic()
    r = a.result("session/new", {"cwd": E.cwd, "mcpServers": [late_entry(E, "slowws", root2, 1.5)]})
    check(time.monotonic() - t0 < 1.2, "session/new waited")
    sid3 = r["sessionId"]
    check(a.response(prompt(a, sid3, "hi"), timeout=30).get("result") ==
          {"stopReason": "end_turn"}, "early prompt")
    tools = [t["function"]["name"] for t in E.mock.requests()[n0]["body"]["tools"]]
    check("mcp__slowws__read" in tools, "early prompt did not get the tools: %r" % tools)

    # a cancel ends a turn that waits for servers; closing a session whose servers are
    # still starting answers at once and leaves no server process behind
    root3 = os.path.join(E.tmp, "lateroot3")
    os.makedirs(root3)
    r = a.result("session/new", {"cwd": E.cwd, "mcpServers": [late_entry(E, "gone", root3, 2)]})
    sid4 = r["sessionId"]
    n0 = len(E.mock.requests())
    rid = prompt(a, sid4, "wait for it")
    time.sleep(0.3)
    t_cancel, t_resp = a.cancel(sid4, rid)
    check(t_resp - t_cancel < 1.0, "cancel waited for the servers")
    t0 = time.monotonic()
    r = a.call("session/close", {"sessionId": sid4})
    check(time.monotonic() - t0 < 1.0, "close waited for the servers")
    # honest close: a server still starting is a live background task
    check(r.get("error", {}).get("code") == -32010 and
          r["error"]["data"] == {"reason": "background_task", "sessionId": sid4},
          "close while servers start %r" % r)
    e = a.call("_peri/session/rename", {"sessionId": sid4, "title": "t"})["error"]
    check(e["message"] == "Session is closing", "closing guard %r" % e)
    deadline = time.monotonic() + 10
    while "error" in a.call("session/close", {"sessionId": sid4}):
        check(time.monotonic() < deadline, "close never settled")
        time.sleep(0.1)
    check(wait_gone(root3, 5.0), "a server of the closed session is still running")
    check(len(E.mock.requests()) == n0, "the cancelled turn reached the model")
    check(not [f for _, f in list(a.log) if f.get("method") == "_peri/mcp_status"
               and f["params"]["sessionId"] == sid4], "status of a closed session sent")
    # the other sessions still work
    E.mock.script([{"text": "fine"}])
    check(a.response(prompt(a, sid2, "ok?")).get("result") == {"stopReason": "end_turn"},
          "other session")
    # EOF while a server starts: the agent waits for the start, closes it, exits 0
    root4 = os.path.join(E.tmp, "lateroot4")
    os.makedirs(root4)
    a.result("session/new", {"cwd": E.cwd, "mcpServers": [late_entry(E, "exit", root4, 1)]})
    check(a.close_stdin(timeout=20) == 0, "exit with a server starting")
    check(wait_gone(root4, 5.0), "a server outlived the agent")


# ---------------------------------------------------------------- 5 honest close

def close_incomplete(a, E, sid, script, wait_text):
    """Starts a turn with script, waits for an update with wait_text, closes with no grace:
    the -32010 answer, or None when the turn had already unwound."""
    E.mock.script(script)
    rid = prompt(a, sid, "work")
    a.wait_update(lambda u: wait_text in json.dumps(u), wait_text, sid=sid)
    r = a.call("session/close", {"sessionId": sid})
    a.response(rid)
    return None if "result" in r else r


def s_close_honest(E):
    import sqlite3
    a = E.agent(PERI_CLOSE_GRACE_MS="0")
    # an active turn: the reason in data, the fixed message
    for attempt in range(8):
        sid = E.new_session(a)
        r = close_incomplete(a, E, sid, [{"text": "x", "hang": True, "hang_after": 2}], '"x"')
        if r:
            break
    else:
        raise Fail("close never observed an active turn")
    check(r["error"] == {"code": -32010,
                         "message": "Session close incomplete: prompt is still active",
                         "data": {"reason": "active_turn", "sessionId": sid}}, "active %r" % r)
    deadline = time.monotonic() + 5
    while "error" in a.call("session/close", {"sessionId": sid}):
        check(time.monotonic() < deadline, "close never settled")
        time.sleep(0.05)
    # the close intent is in the store once close succeeded
    db = sqlite3.connect(E.db)
    meta = json.loads(db.execute("select meta from threads where id = ?", (sid,)).fetchone()[0])
    db.close()
    check(meta.get("closeIntent", {}).get("epoch") == 1 and meta["closeIntent"]["at"] > 0,
          "close intent %r" % meta.get("closeIntent"))
    # a subagent that has not handed over
    for attempt in range(8):
        sid = E.new_session(a)
        r = close_incomplete(a, E, sid, [
            {"tool_calls": [{"id": "t1", "name": "task", "arguments": {
                "description": "d", "prompt": "p"}}]},
            {"text": "childtext", "hang": True, "hang_after": 2}], '"in_progress"')
        if r:
            check(r["error"]["code"] == -32010 and r["error"]["data"]["reason"] in
                  ("subagent", "active_turn"), "subagent %r" % r)
            deadline = time.monotonic() + 5
            while "error" in a.call("session/close", {"sessionId": sid}):
                check(time.monotonic() < deadline, "close never settled")
                time.sleep(0.05)
            if r["error"]["data"]["reason"] == "subagent":
                check(r["error"]["message"] ==
                      "Session close incomplete: a subagent has not handed over", "msg %r" % r)
                break
    else:
        raise Fail("close never observed a subagent")
    # the close intent cannot be recorded (another writer holds the store): incomplete,
    # the session stays closing; once the store is free, the retry settles
    sid = E.new_session(a)
    E.mock.script([{"text": "one turn"}])
    a.response(prompt(a, sid, "hi"))
    lock = sqlite3.connect(E.db, timeout=1, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        r = a.call("session/close", {"sessionId": sid}, timeout=20)
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    check(r.get("error", {}).get("code") == -32010 and
          r["error"]["data"]["reason"] == "close_intent_not_persisted", "intent %r" % r)
    e = a.call("session/set_mode", {"sessionId": sid, "modeId": "plan"})["error"]
    check(e["message"] == "Session is closing", "still closing %r" % e)
    check(a.result("session/close", {"sessionId": sid}) == {}, "retry after the store freed")


# ---------------------------------------------------------------- 9 authentication

def s_auth(E):
    import stat
    # no key and no base URL (a base URL alone would be a usable local provider)
    E.settings({"maxRetries": 0, "model": "openai:mock-model", "keep": "me"})
    a = E.agent(model=False)
    init = a.log[0][1]["result"]
    ids = [m["id"] for m in init["authMethods"]]
    check(ids == ["openai-api-key", "anthropic-api-key"], "authMethods %r" % init["authMethods"])
    check(init["authMethods"][0]["_meta"]["peri.vars"] == [{"name": "OPENAI_API_KEY"}],
          "vars %r" % init["authMethods"][0])
    check(all("type" not in m for m in init["authMethods"]),
          "terminal methods only for clients that declare auth.terminal %r" % init["authMethods"])
    # a client that can run the agent in a terminal also gets ACP's terminal logins
    t = E.agent(model=False, caps={"auth": {"terminal": True}})
    tm = [m for m in t.log[0][1]["result"]["authMethods"] if m.get("type") == "terminal"]
    check([(m["id"], m["args"]) for m in tm] ==
          [("openai-terminal-login", ["--login", "openai"]),
           ("anthropic-terminal-login", ["--login", "anthropic"])], "terminal methods %r" % tm)
    e = t.call("authenticate", {"methodId": "openai-terminal-login"})
    check(e.get("error", {}).get("code") == -32602, "a terminal method via authenticate %r" % e)
    # without a usable key: auth_required at session/new, not at the first prompt
    r = a.call("session/new", {"cwd": E.cwd, "mcpServers": []})
    check(r.get("error", {}).get("code") == -32000 and
          r["error"]["message"] == "Authentication required", "auth required %r" % r)
    # bad authenticate calls change nothing
    for params in ({"methodId": "nope"}, {"methodId": "openai-api-key"},
                   {"methodId": "openai-api-key", "_meta": {"peri.apiKey": 5}},
                   {"methodId": "openai-api-key", "_meta": {"peri.apiKey": "a b"}},
                   {"methodId": "openai-api-key", "_meta": {"peri.apiKey": "k\n"}},
                   {"methodId": "openai-api-key", "_meta": {"peri.apiKey": "x" * 513}}):
        e = a.call("authenticate", params)
        check(e.get("error", {}).get("code") == -32602, "bad authenticate %r -> %r" % (params, e))
    path = os.path.join(E.home, ".peri", "settings.json")
    check("apiKey" not in open(path).read(), "a refused key was stored")
    # the key: kept in the user's settings (0600), applied at once, never in the project
    check(a.result("authenticate", {"methodId": "openai-api-key",
                                    "_meta": {"peri.apiKey": "sk-test-123"}}) == {}, "auth")
    st = os.stat(path)
    check(stat.S_IMODE(st.st_mode) == 0o600, "settings mode %o" % stat.S_IMODE(st.st_mode))
    doc = json.load(open(path))
    check(doc["providers"]["openai"]["apiKey"] == "sk-test-123" and doc["keep"] == "me",
          "stored settings %r" % doc)
    check(not os.path.exists(os.path.join(E.cwd, ".peri")), "something written to the project")
    # the provider's base URL comes from the environment here (the mock)
    b = E.agent(model=False, PERI_MODEL="openai:mock-model",
                OPENAI_BASE_URL=E.mock.url + "/v1")
    sid = E.new_session(b)
    E.mock.script([{"text": "authed"}])
    check(b.response(prompt(b, sid, "hi")).get("result") == {"stopReason": "end_turn"},
          "turn after authenticate")
    check(E.mock.requests()[-1]["headers"].get("authorization") == "Bearer sk-test-123",
          "key not used: %r" % E.mock.requests()[-1]["headers"])
    # in the first host too, at once: a new session works without a restart
    r = a.call("session/new", {"cwd": E.cwd, "mcpServers": []})
    check("result" in r, "session/new after authenticate %r" % r)
    # authenticate without a key once credentials are usable: {}
    check(a.result("authenticate", {"methodId": "openai-api-key"}) == {}, "no-key auth")
    # a symlinked settings file is not followed
    os.unlink(path)
    target = os.path.join(E.tmp, "elsewhere.json")
    open(target, "w").write("{}")
    os.symlink(target, path)
    e = a.call("authenticate", {"methodId": "anthropic-api-key",
                                "_meta": {"peri.apiKey": "sk-ant"}})
    check("error" in e and open(target).read() == "{}", "symlink followed %r" % e)


# ---------------------------------------------------------------- 8 model discovery

def s_discover(E):
    import http.server
    import threading
    seen = []

    class Models(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            seen.append((self.path, self.headers.get("Authorization")))
            ids = ["m-one", "m-two", "bad id", "x" * 200, "ctl\u0001"]
            body = json.dumps({"data": [{"id": i} for i in ids] + [{"nope": 1}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        E.settings({"maxRetries": 0, "providers": {"disc": {
            "type": "openai", "baseUrl": "http://127.0.0.1:%d/v1" % srv.server_address[1],
            "apiKey": "dk"}}})
        a = E.agent()
        r = a.result("session/new", {"cwd": E.cwd, "mcpServers": []})
        opts = [o["value"] for o in
                {c["id"]: c for c in r["configOptions"]}["model"]["options"]]
        check(opts[0] == "openai:mock-model", "the configured model first %r" % opts)
        check("disc:m-one" in opts and "disc:m-two" in opts, "discovered models %r" % opts)
        check(not any(" " in o or len(o) > 140 or "\u0001" in o for o in opts),
              "a bad id reached the selector %r" % opts)
        check(seen and seen[0] == ("/v1/models", "Bearer dk"), "listing request %r" % seen)
        # the mock model provider answers 404 to its listing: logged, nothing added
        time.sleep(0.2)
        check("listing the models of provider openai failed" in "".join(a.stderr),
              "failed listing not logged: %s" % "".join(a.stderr)[-500:])
        # cached: a second session lists nothing again
        n = len(seen)
        a.result("session/new", {"cwd": E.cwd, "mcpServers": []})
        check(len(seen) == n, "listing not cached (%d -> %d)" % (n, len(seen)))
        # a discovered model can be chosen
        sid = r["sessionId"]
        r = a.result("session/set_config_option", {"sessionId": sid, "configId": "model",
                                                   "value": "disc:m-two"})
        check({o["id"]: o for o in r["configOptions"]}["model"]["currentValue"] ==
              "disc:m-two", "choose a discovered model %r" % r)
    finally:
        srv.shutdown()


# ---------------------------------------------------------------- 7 config options

def s_options(E):
    E.settings({"maxRetries": 0,
                "providers": {"alt": {"type": "anthropic", "baseUrl": E.mock.url,
                                      "apiKey": "alt-key"}},
                "models": [{"id": "openai:mock-model", "name": "Mock"},
                           {"id": "openai:o3-mock", "name": "Reasoning mock"},
                           {"id": "alt:claude-sonnet-4-mock", "name": "Sonnet mock"}]})
    a = E.agent()
    r = a.result("session/new", {"cwd": E.cwd, "mcpServers": []})
    sid = r["sessionId"]
    ids = [o["id"] for o in r["configOptions"]]
    check(ids == ["model", "mode"], "a model without effort or 1M offers neither: %r" % ids)
    e = a.call("session/set_config_option", {"sessionId": sid, "configId": "thinking_effort",
                                             "value": "high"})["error"]
    check(e["code"] == -32602 and "not offered" in e["message"], "effort refused %r" % e)

    def opts(r):
        return {o["id"]: o for o in r["configOptions"]}
    r = a.result("session/set_config_option", {"sessionId": sid, "configId": "model",
                                               "value": "openai:o3-mock"})
    te = opts(r).get("thinking_effort")
    check(te and te["currentValue"] == "off" and te["category"] == "thought_level" and
          [v["value"] for v in te["options"]] == ["off", "low", "medium", "high"] and
          "context_1m" not in opts(r), "o3 options %r" % r["configOptions"])
    for bad in ("max", "", "HIGH"):
        e = a.call("session/set_config_option", {"sessionId": sid, "configId": "thinking_effort",
                                                 "value": bad})["error"]
        check(e["code"] == -32602, "bad effort %r: %r" % (bad, e))
    r = a.result("session/set_config_option", {"sessionId": sid, "configId": "thinking_effort",
                                               "value": "high"})
    check(opts(r)["thinking_effort"]["currentValue"] == "high", "effort set %r" % r)
    E.mock.script([{"text": "thought hard"}])
    a.response(prompt(a, sid, "think"))
    body = E.mock.requests()[-1]["body"]
    check(body.get("reasoning_effort") == "high" and body["model"] == "o3-mock",
          "openai reasoning_effort %r" % {k: body.get(k) for k in ("model", "reasoning_effort")})
    # an Anthropic model with extended thinking and the 1M context
    r = a.result("session/set_config_option", {"sessionId": sid, "configId": "model",
                                               "value": "alt:claude-sonnet-4-mock"})
    check(opts(r)["thinking_effort"]["currentValue"] == "high" and
          opts(r)["context_1m"]["currentValue"] == "off", "sonnet options %r" % r)
    a.result("session/set_config_option", {"sessionId": sid, "configId": "thinking_effort",
                                           "value": "medium"})
    a.result("session/set_config_option", {"sessionId": sid, "configId": "context_1m",
                                           "value": "on"})
    E.mock.script([{"text": "long context"}])
    a.response(prompt(a, sid, "with 1M"))
    q = E.mock.requests()[-1]
    b = q["body"]
    check(q["path"].endswith("/messages") and b.get("thinking") == {
        "type": "enabled", "budget_tokens": 8192} and b["max_tokens"] > 8192 and
        "temperature" not in b, "anthropic thinking %r" % {k: b.get(k) for k in (
            "thinking", "max_tokens", "temperature")})
    check("context-1m" in q["headers"].get("anthropic-beta", ""), "1M header %r" % q["headers"])
    # back to a model without them: nothing is sent
    a.result("session/set_config_option", {"sessionId": sid, "configId": "model",
                                           "value": "openai:mock-model"})
    E.mock.script([{"text": "plain"}])
    a.response(prompt(a, sid, "plain"))
    body = E.mock.requests()[-1]["body"]
    check("reasoning_effort" not in body, "effort sent to a model without it %r" % body.keys())
    # kept with the session
    a.result("session/set_config_option", {"sessionId": sid, "configId": "model",
                                           "value": "alt:claude-sonnet-4-mock"})
    check(a.close_stdin() == 0, "exit")
    b2 = E.agent()
    r = b2.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    check(opts(r)["thinking_effort"]["currentValue"] == "medium" and
          opts(r)["context_1m"]["currentValue"] == "on", "not persisted %r" % r["configOptions"])


# ---------------------------------------------------------------- 10 attachments

def s_attachments(E):
    import base64 as b64
    wav = b64.b64encode(b"RIFF....WAVEfmt fake").decode()
    pdf = b64.b64encode(b"%PDF-1.4 fake document").decode()
    E.settings({"maxRetries": 0,
                "providers": {"alt": {"type": "anthropic", "baseUrl": E.mock.url,
                                      "apiKey": "alt-key"}},
                "models": [{"id": "openai:gpt-4o-audio-mock", "name": "Audio"},
                           {"id": "openai:mock-model", "name": "Mock"},
                           {"id": "alt:claude-mock", "name": "Claude"}]})
    a = E.agent(PERI_MODEL="openai:gpt-4o-audio-mock")
    init = a.log[0][1]["result"]["agentCapabilities"]["promptCapabilities"]
    check(init["audio"] is True and init["image"] is True and init["embeddedContext"] is True,
          "prompt capabilities %r" % init)
    sid = E.new_session(a)
    # audio to an audio model: OpenAI input_audio; a PDF: an OpenAI file part
    E.mock.script([{"text": "heard and read"}])
    r = a.response(a.request("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "text", "text": "listen"},
        {"type": "audio", "mimeType": "audio/wav", "data": wav},
        {"type": "resource", "resource": {"uri": "file:///doc.pdf", "mimeType": "application/pdf",
                                          "blob": pdf}}]}))
    check(r.get("result") == {"stopReason": "end_turn"}, "audio turn %r" % r)
    parts = E.mock.requests()[-1]["body"]["messages"][-1]["content"]
    check({"type": "input_audio", "input_audio": {"data": wav, "format": "wav"}} in parts,
          "input_audio part %r" % parts)
    check({"type": "file", "file": {"filename": "document.pdf",
                                    "file_data": "data:application/pdf;base64," + pdf}} in parts,
          "file part %r" % parts)
    # a model without audio: a clear refusal naming it; the PDF still goes, as an Anthropic
    # document block
    a.result("session/set_config_option", {"sessionId": sid, "configId": "model",
                                           "value": "alt:claude-mock"})
    E.mock.script([{"text": "read only"}])
    t0 = time.monotonic()
    r = a.response(a.request("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "text", "text": "again"},
        {"type": "audio", "mimeType": "audio/wav", "data": wav},
        {"type": "resource", "resource": {"uri": "file:///doc.pdf", "mimeType": "application/pdf",
                                          "blob": pdf}}]}))
    check(r.get("result") == {"stopReason": "end_turn"}, "claude turn %r" % r)
    note = "".join(u["content"]["text"] for _, u in a.updates(sid, t0)
                   if u["sessionUpdate"] == "agent_message_chunk")
    check("alt:claude-mock does not take audio" in note, "audio refusal %r" % note)
    q = E.mock.requests()[-1]
    blocks = q["body"]["messages"][-1]["content"]
    check({"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                          "data": pdf}} in blocks, "document block %r" % blocks)
    check(not any(b.get("type") == "input_audio" for b in blocks), "audio sent to claude")
    # other audio formats are refused alone
    a.result("session/set_config_option", {"sessionId": sid, "configId": "model",
                                           "value": "openai:gpt-4o-audio-mock"})
    e = a.call("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "audio", "mimeType": "audio/ogg", "data": wav}]})["error"]
    check(e["code"] == -32602 and "only wav and mp3" in e["message"], "ogg %r" % e)
    # workspace files: a resource_link, and a binary blob of one, are offered as files the
    # model reads with its tools; outside the workspace, or escaping it, they are not
    root = os.path.realpath(E.cwd)
    E.put("notes.txt", "n")
    E.mock.script([{"text": "refs"}])
    t0 = time.monotonic()
    r = a.response(a.request("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "resource_link", "name": "notes", "uri": "file://%s/notes.txt" % root},
        {"type": "resource_link", "name": "esc", "uri": "file://%s/../secret" % root},
        {"type": "resource", "resource": {"uri": "file://%s/data.bin" % root,
                                          "mimeType": "application/octet-stream", "blob": pdf}},
        {"type": "resource", "resource": {"uri": "file:///etc/x.bin",
                                          "mimeType": "application/octet-stream", "blob": pdf}}]}))
    check(r.get("result") == {"stopReason": "end_turn"}, "refs turn %r" % r)
    msg = json.dumps(E.mock.requests()[-1]["body"]["messages"][-1])
    check("the workspace file notes.txt" in msg and "the workspace file data.bin" in msg,
          "workspace references %s" % msg[:600])
    check("the workspace file ../" not in msg and "workspace file secret" not in msg,
          "an escaping link became a workspace file %s" % msg[:600])
    note = "".join(u["content"]["text"] for _, u in a.updates(sid, t0)
                   if u["sessionUpdate"] == "agent_message_chunk")
    check("file:///etc/x.bin" in note, "an outside blob was not refused %r" % note)
    # the history keeps them: replayed as the blocks they came in
    check(a.close_stdin() == 0, "exit")
    b = E.agent(PERI_MODEL="openai:gpt-4o-audio-mock")
    t0 = time.monotonic()
    b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    rep = [u for _, u in b.updates(sid, t0) if u["sessionUpdate"] == "user_message_chunk"]
    kinds = [u["content"]["type"] for u in rep]
    check("audio" in kinds and "resource" in kinds, "replayed blocks %r" % kinds)
    # a host whose default model takes no audio says so in initialize
    c = E.agent(PERI_MODEL="openai:mock-model")
    check(c.log[0][1]["result"]["agentCapabilities"]["promptCapabilities"]["audio"] is False,
          "audio advertised for a model without it")


# ---------------------------------------------------------------- 6 history format

def s_history_format(E):
    """A session whose history is in another format than this host writes (older or
    newer) lists and replays read-only with the reason, and cannot be continued."""
    import sqlite3
    a = E.agent()
    sids = []
    for text in ("old one", "new one", "current"):
        sid = E.new_session(a)
        E.mock.script([{"text": text}])
        a.response(prompt(a, sid, "hi " + text))
        sids.append(sid)
    check(a.close_stdin() == 0, "exit")
    db = sqlite3.connect(E.db, timeout=10, isolation_level=None)
    meta = {r[0]: json.loads(r[1]) for r in db.execute("SELECT id, meta FROM threads")}
    check(all(meta[x].get("format") == 1 for x in sids), "format recorded %r" % meta)
    for sid, fmt in ((sids[0], 0), (sids[1], 7)):
        db.execute("UPDATE threads SET meta = json_set(meta, '$.format', ?) WHERE id = ?",
                   (fmt, sid))
    before = {r[0]: r[1] for r in db.execute("SELECT id, meta FROM threads")}
    b = E.agent()
    listed = {x["sessionId"]: x.get("_meta", {})
              for x in b.result("session/list", {})["sessions"]}
    check(listed[sids[0]] == {"peri.historyFormat": 0, "peri.readOnly": True} and
          listed[sids[1]] == {"peri.historyFormat": 7, "peri.readOnly": True} and
          listed[sids[2]] == {}, "list %r" % listed)
    for sid, fmt, text in ((sids[0], 0, "old one"), (sids[1], 7, "new one")):
        t0 = time.monotonic()
        r = b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
        check(r.get("_meta", {}).get("peri.readOnly") is True and
              r["_meta"].get("peri.historyFormat") == fmt, "load meta %r" % r)
        rep = json.dumps([f for _, f in frames_between(b, t0)
                          if f.get("method") == "session/update"])
        check("hi " + text in rep and text in rep, "history replayed: %s" % rep[:400])
        for method, params in (("session/prompt", {"prompt": [{"type": "text", "text": "go"}]}),
                               ("session/set_mode", {"modeId": "plan"}),
                               ("session/fork", {"cwd": E.cwd, "mcpServers": []})):
            e = b.call(method, dict(params, sessionId=sid)).get("error", {})
            check(e.get("code") == -32602 and "start a new session" in e.get("message", "") and
                  e.get("data", {}).get("reason") == "history_format",
                  "%s on format %d: %r" % (method, fmt, e))
        b.result("_peri/session/rename", {"sessionId": sid, "title": "kept %d" % fmt})
    # the current-format session is untouched by all this and still continues
    b.result("session/load", {"sessionId": sids[2], "cwd": E.cwd, "mcpServers": []})
    E.mock.script([{"text": "continued"}])
    check(b.response(prompt(b, sids[2], "more")).get("result") == {"stopReason": "end_turn"},
          "current format continues")
    check(b.close_stdin() == 0, "exit")
    after = {r[0]: r[1] for r in db.execute("SELECT id, meta FROM threads")}
    check(after[sids[0]] == before[sids[0]] and after[sids[1]] == before[sids[1]],
          "an old-format session's meta was rewritten")
    titles = dict(db.execute("SELECT id, title FROM threads"))
    check(titles[sids[0]] == "kept 0" and titles[sids[1]] == "kept 7", "renamed %r" % titles)
    n = db.execute("SELECT count(*) FROM messages WHERE thread_id IN (?, ?)",
                   (sids[0], sids[1])).fetchone()[0]
    check(n == 4, "messages written to old-format sessions: %d" % n)
    db.close()


NUL_MSG = "%s must not contain a NUL character (U+0000)"


def s_input_nul(E):
    """A NUL byte in a string the client sends is refused with -32602 naming the field,
    never cut off there: a cut-off id would name another session (or mode, option,
    auth method), cut-off prompt text would reach the model and the history as something
    the client did not write."""
    a = E.agent()
    new = a.result("session/new", {"cwd": E.cwd, "mcpServers": []})
    sid = new["sessionId"]
    mode = new["modes"]["currentModeId"]
    model = [o for o in new["configOptions"] if o["id"] == "model"][0]["currentValue"]
    E.mock.script({"responses": [], "default": {"text": "ok"}})
    n0 = len(E.mock.requests())

    def refused(method, params, field, what):
        r = a.call(method, params)
        check(r.get("error") == {"code": -32602, "message": NUL_MSG % field},
              "%s: %r" % (what, r))

    hi = [{"type": "text", "text": "hi"}]
    for bad in (sid + "\x00garbage", "\x00", "\x00" + sid):
        for key in ("sessionId", "session_id"):
            refused("session/prompt", {key: bad, "prompt": hi}, "sessionId",
                    "prompt %s=%r" % (key, bad))
        for method in ("session/load", "session/resume", "session/fork", "session/cancel",
                       "session/close", "_peri/queue/list", "_peri/session/archive"):
            refused(method, {"sessionId": bad, "mcpServers": []}, "sessionId",
                    "%s %r" % (method, bad))
    refused("session/set_mode", {"sessionId": sid, "modeId": mode + "\x00x"}, "modeId", "mode")
    refused("session/set_config_option", {"sessionId": sid, "configId": "model\x00x",
                                          "value": model}, "configId", "configId")
    refused("session/set_config_option", {"sessionId": sid, "configId": "model",
                                          "value": model + "\x00x"}, "value", "config value")
    refused("_peri/session/rename", {"sessionId": sid, "title": "t\x00x"}, "title", "title")
    refused("session/new", {"cwd": E.cwd + "\x00/x", "mcpServers": []}, "cwd", "new cwd")
    refused("session/list", {"cwd": E.cwd + "\x00x"}, "cwd", "list cwd")
    # an auth method id cut at the NUL would be a real one
    r = a.call("authenticate", {"methodId": "openai-api-key\x00x"})
    check(r.get("error", {}).get("code") == -32602 and
          "methodId must be one of" in r["error"]["message"], "methodId %r" % r)
    # prompt text: the whole prompt is refused, naming the block and its field
    refused("session/prompt", {"sessionId": sid, "prompt": hi + [
        {"type": "text", "text": "a\x00b"}]}, "prompt[1].text", "text block")
    refused("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "resource", "resource": {"uri": "file:///x.txt", "text": "a\x00b"}}]},
        "prompt[0].resource.text", "resource text")
    refused("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "resource_link", "uri": "file://%s/a\x00/../../etc/passwd" % E.cwd}]},
        "prompt[0].uri", "resource_link uri")
    refused("session/prompt", {"sessionId": sid, "message": {"content": "a\x00b"}},
            "prompt[0].text", "message.content")
    check(len(E.mock.requests()) == n0, "a refused request reached the model")
    # nothing of them was kept: the next turn's request holds just its own user message
    r = a.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text",
                                                                "text": "clean"}]})
    check(r.get("result") == {"stopReason": "end_turn"}, "clean prompt %r" % r)
    users = [m for m in E.mock.requests()[-1]["body"]["messages"] if m["role"] == "user"]
    check(len(users) == 1 and "clean" in json.dumps(users[0]), "history %r" % users)
    check(a.close_stdin() == 0, "exit")


def s_workspace_uri(E):
    """A file:// URI is a workspace file only when the part after the session's directory
    is a plain relative path; "file://<cwd>//etc/passwd" names /etc/passwd and is treated
    as any file outside the workspace."""
    import base64 as b64
    a = E.agent()
    sid = E.new_session(a)
    root = os.path.realpath(E.cwd)
    E.put("notes.txt", "n")
    os.makedirs(os.path.join(E.cwd, "sub"), exist_ok=True)
    blob = b64.b64encode(b"PK\x03\x04 zip").decode()
    E.mock.script([{"text": "refs"}])
    t0 = time.monotonic()
    links = ["/notes.txt", "//etc/passwd", "///etc/passwd", "/sub//x", "/sub/", "/", "//",
             "/./notes.txt", "/sub/./x", "/sub/../notes.txt", "/%2Fetc/passwd"]
    r = a.response(a.request("session/prompt", {"sessionId": sid, "prompt": [
        {"type": "resource_link", "name": "l%d" % i, "uri": "file://" + root + l}
        for i, l in enumerate(links)] + [
        {"type": "resource", "resource": {"uri": "file://%s//etc/shadow" % root,
                                          "mimeType": "application/zip", "blob": blob}},
        {"type": "resource", "resource": {"uri": "file://%s/sub/data.zip" % root,
                                          "mimeType": "application/zip", "blob": blob}}]}))
    check(r.get("result") == {"stopReason": "end_turn"}, "turn %r" % r)
    msg = json.dumps(E.mock.requests()[-1]["body"]["messages"][-1])
    refs = msg.count("the workspace file ")
    check(refs == 2 and "the workspace file notes.txt" in msg and
          "the workspace file sub/data.zip" in msg, "workspace references (%d) %s" % (refs, msg))
    check("the workspace file /" not in msg, "an outside file became a workspace file")
    check("[Resource: l1](file://%s//etc/passwd)" % root in msg, "the link itself %s" % msg)
    note = "".join(u["content"]["text"] for _, u in a.updates(sid, t0)
                   if u["sessionUpdate"] == "agent_message_chunk")
    check("file://%s//etc/shadow (application/zip)" % root in note and
          "are not supported" in note, "the outside blob was not refused %r" % note)
    check(a.close_stdin() == 0, "exit")


# ---------------------------------------------------------------- pipelined requests

def pipelined(a, *frames):
    """Sends every frame in one write, none waiting for an answer (frames: (id or None,
    method, params)); returns the answers of the requests, by id."""
    a.send_raw("\n".join(json.dumps(dict({"jsonrpc": "2.0", "method": m, "params": p},
                                          **({"id": i} if i is not None else {})))
                          for i, m, p in frames))
    return {i: a.response(i) for i, _, _ in frames if i is not None}


def s_pipelined(E):
    """A request sent right behind session/load (or resume) naming the same session waits
    for the load, and runs after it, in order: a prompt, set_mode, close, delete, a
    session/cancel; another session's requests do not wait."""
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"text": "one"}])
    check(a.response(prompt(a, sid, "p")).get("result") == {"stopReason": "end_turn"}, "first")
    check(a.close_stdin() == 0, "exit")
    load = {"sessionId": sid, "cwd": E.cwd, "mcpServers": []}
    ptext = {"sessionId": sid, "prompt": [{"type": "text", "text": "q"}]}

    # load + prompt: the prompt continues the loaded history
    b = E.agent()
    E.mock.script([{"text": "two"}])
    r = pipelined(b, (1, "session/load", load), (2, "session/prompt", ptext))
    check("result" in r[1], "load %r" % r[1])
    check(r[2].get("result") == {"stopReason": "end_turn"}, "pipelined prompt %r" % r[2])
    texts = [json.dumps(m.get("content")) for m in E.mock.requests()[-1]["body"]["messages"]]
    check(texts[-3:] == ['"p"', '"one"', '"q"'],
          "the prompt did not see the loaded history: %r" % texts[-3:])
    check(b.close_stdin() == 0, "exit")

    # resume + set_mode + prompt; the mode holds for the prompt and is stored
    b = E.agent()
    E.mock.script([{"text": "three"}])
    r = pipelined(b, (1, "session/resume", load),
                  (2, "session/set_mode", {"sessionId": sid, "modeId": "plan"}),
                  (3, "session/prompt", ptext))
    check("result" in r[1] and r[2].get("result") == {}, "resume + set_mode %r" % r)
    check(r[3].get("result") == {"stopReason": "end_turn"}, "prompt %r" % r[3])
    check("Plan mode" in json.dumps(E.mock.requests()[-1]["body"]["messages"][0]),
          "the prompt ran before set_mode")
    check(b.close_stdin() == 0, "exit")
    b = E.agent()
    got = b.result("session/load", load)
    check(got["modes"]["currentModeId"] == "plan", "mode not stored: %r" % got.get("modes"))
    check(b.result("session/close", {"sessionId": sid}) == {}, "close")

    # load + close: the session is closed, not live again behind the close's answer;
    # a request of another session goes on meanwhile
    other = E.new_session(b)
    r = pipelined(b, (1, "session/load", load), (2, "session/close", {"sessionId": sid}),
                  (3, "session/set_mode", {"sessionId": other, "modeId": "plan"}))
    check("result" in r[1] and r[2].get("result") == {} and r[3].get("result") == {},
          "load + close %r" % r)
    e = b.call("session/prompt", ptext).get("error", {})
    check(e.get("code") == -32002, "the closed session is live again: %r" % e)

    # load + prompt + session/cancel: the cancel reaches the prompt (the model hangs)
    E.mock.script([{"hang": True, "hang_after": 2}])
    b.send_raw("\n".join(json.dumps(f) for f in (
        {"jsonrpc": "2.0", "id": 1, "method": "session/load", "params": load},
        {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": ptext},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})))
    check("result" in b.response(1), "load")
    check(b.response(2).get("result") == {"stopReason": "cancelled"}, "cancel lost")
    # load + prompt + $/cancel_request of that prompt
    E.mock.script([{"hang": True, "hang_after": 2}])
    b.send_raw("\n".join(json.dumps(f) for f in (
        {"jsonrpc": "2.0", "id": 5, "method": "session/load", "params": load},
        {"jsonrpc": "2.0", "id": 6, "method": "session/prompt", "params": ptext},
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 6}})))
    check("result" in b.response(5), "load")
    check(b.response(6).get("result") == {"stopReason": "cancelled"}, "cancel_request lost")

    # load + delete: gone, not live again
    r = pipelined(b, (7, "session/load", load), (8, "session/delete", {"sessionId": sid}))
    check("result" in r[7] and r[8].get("result") == {}, "load + delete %r" % r)
    lst = b.result("session/list", {"cwd": E.cwd})["sessions"]
    check(sid not in [x["sessionId"] for x in lst], "deleted session listed %r" % lst)
    e = b.call("session/prompt", ptext).get("error", {})
    check(e.get("code") == -32002, "the deleted session is live: %r" % e)
    # a load that fails: what waited behind it gets its own answer
    r = pipelined(b, (9, "session/load", load), (10, "session/set_mode",
                                                 {"sessionId": sid, "modeId": "default"}))
    check(r[9].get("error", {}).get("code") == -32002 and
          r[10].get("error", {}).get("code") == -32002, "failed load %r" % r)
    check(b.close_stdin() == 0, "exit")


# ---------------------------------------------------------------- refusal

def s_refusal(E):
    """A refused turn (stopReason refusal) is not part of the conversation: the next
    request does not hold it, a load does not replay it, and the name it gave the session
    is taken back; the stored rows stay, hidden (as after a rewind)."""
    a = E.agent()
    sid = E.new_session(a)
    E.mock.script([{"tool_calls": [{"id": "r1", "name": "list", "arguments": {}}]},
                   {"text": "I can't help with that", "stop": "refusal"},
                   {"text": "sure"}, {"text": "second"}])
    t0 = time.monotonic()
    r = a.response(prompt(a, sid, "forbidden request"))
    check(r.get("result") == {"stopReason": "refusal"}, "refusal %r" % r)
    info = [u.get("title", "absent") for _, u in a.updates(sid, t0)
            if u["sessionUpdate"] == "session_info_update"]
    check(info == ["forbidden request", None], "the refused prompt's name stays: %r" % info)
    lst = a.result("session/list", {"cwd": E.cwd})["sessions"]
    check([x.get("title") for x in lst if x["sessionId"] == sid] == [None], "list %r" % lst)
    check(a.response(prompt(a, sid, "next")).get("result") == {"stopReason": "end_turn"}, "next")
    msgs = json.dumps(E.mock.requests()[-1]["body"]["messages"])
    check("forbidden" not in msgs and "can't help" not in msgs and '"next"' in msgs,
          "the refused turn went to the model: %s" % msgs[:600])
    lst = a.result("session/list", {"cwd": E.cwd})["sessions"]
    check([x.get("title") for x in lst if x["sessionId"] == sid] == ["next"], "list %r" % lst)
    check(a.close_stdin() == 0, "exit")
    b = E.agent()
    t0 = time.monotonic()
    b.result("session/load", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    replay = json.dumps([u for _, u in b.updates(sid, t0)])
    check("forbidden" not in replay and "can't help" not in replay and "sure" in replay,
          "replay %s" % replay[:600])
    check(b.response(prompt(b, sid, "again")).get("result") == {"stopReason": "end_turn"}, "again")
    msgs = json.dumps(E.mock.requests()[-1]["body"]["messages"])
    check("forbidden" not in msgs and '"next"' in msgs, "after load: %s" % msgs[:600])
    fork = b.result("session/fork", {"sessionId": sid, "cwd": E.cwd, "mcpServers": []})
    check(fork["sessionId"] != sid, "fork")
    check(b.close_stdin() == 0, "exit")


SCENARIOS = {"attachments": s_attachments, "options": s_options, "discover": s_discover,
             "ids": s_ids, "terminal": s_terminal, "queue": s_queue,
             "retry_cancel": s_retry_cancel, "extensions": s_extensions, "closing": s_closing,
             "close_honest": s_close_honest, "mcp_start": s_mcp_start, "auth": s_auth,
             "history_format": s_history_format, "input_nul": s_input_nul,
             "workspace_uri": s_workspace_uri, "pipelined": s_pipelined, "refusal": s_refusal}


def main():
    return scenario_main(__doc__, SCENARIOS, at_end=end_agents_cleanly)


if __name__ == "__main__":
    sys.exit(main())
