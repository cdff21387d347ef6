#!/usr/bin/env python3
"""e2e_shared.py: two `peri acp` hosts on one PostgreSQL store (issue 15, acceptance 2).

usage: e2e_shared.py PERI_BINARY MOCK_MODEL_PY      (run through tests/store/pg_cluster.sh,
                                                     which sets PERI_TEST_PG_URL)

Hosts A and B (different --machine-id, one database, each with its own mock model) run
two sessions each, concurrently, through ACP: 200 completed turns in total. Then A is
killed with SIGKILL in the middle of a turn while B keeps prompting. Checks:
  * every message is in the database exactly once, seq dense 1..n, user/assistant
    alternating, the user texts in the order they were sent (psql reads the rows);
  * the killed turn's committed user message is there, its answer is not;
  * session/list from A and from B shows both machines' sessions, the other machine's
    flagged _meta."peri.readOnly" with its "peri.machineId";
  * B loading / resuming / prompting / forking / deleting A's session is refused naming
    the owner;
  * B keeps working after A's death; when the server drops B's connection the next turn
    answers (error or result) and the one after reconnects;
  * a restarted A loads its session and continues.
Exit 0 = pass, 1 = fail.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import acp_harness  # noqa: E402  (the ACP harness: Agent, Mock, check, Fail)
from acp_harness import Agent, Fail, Mock, base_env, check, prompt  # noqa: E402

MA = "aaaaaaaa-aaaa-4aaa-8aaa-000000000001"
MB = "bbbbbbbb-bbbb-4bbb-8bbb-000000000002"
TURNS_PER_SESSION = 50  # 2 hosts x 2 sessions x 50 = 200 turns


def psql_bin():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))
    return found[-1] if found else shutil.which("psql")


def rows(url, sql):
    out = subprocess.run([psql_bin(), "-X", "-A", "-t", "-F", "\t", "-d", url, "-c", sql],
                         capture_output=True, timeout=30)
    check(out.returncode == 0, "psql failed: %s" % out.stderr.decode()[-500:])
    return [line.split("\t") for line in out.stdout.decode().splitlines() if line]


class Host:
    def __init__(self, name, machine, peri, mock_py, tmp, url):
        self.name, self.machine, self.peri, self.url = name, machine, peri, url
        self.home = os.path.join(tmp, "home-" + name)
        self.cwd = os.path.join(tmp, "work-" + name)
        os.makedirs(os.path.join(self.home, ".peri"), exist_ok=True)
        os.makedirs(self.cwd, exist_ok=True)
        with open(os.path.join(self.home, ".peri", "settings.json"), "w") as f:
            json.dump({"maxRetries": 0}, f)
        self.mock = Mock(mock_py, tmp if name == "A" else os.path.join(tmp, "mb"))
        self.mock.script({"responses": [], "default": {"text": "ok"}})
        self.agents = []
        self.sent = {}  # sid -> user texts sent, in order

    def start(self):
        env = dict(base_env(self.home), PERI_MODEL="openai:mock-model", OPENAI_API_KEY="k",
                   OPENAI_BASE_URL=self.mock.url + "/v1")
        a = Agent(self.peri, env, self.url, ["--machine-id", self.machine])
        # Agent passes "--db URL": --db and --store are the same option
        self.agents.append(a)
        init = a.result("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        check(init["protocolVersion"] == 1, "initialize " + self.name)
        self.a = a
        return a

    def new_session(self):
        sid = self.a.result("session/new", {"cwd": self.cwd, "mcpServers": []})["sessionId"]
        self.sent[sid] = []
        return sid

    def turns(self, sids, n, errors):
        """n rounds: one prompt to every session at once, then all the answers."""
        try:
            for i in range(n):
                rids = []
                for sid in sids:
                    text = "%s %s turn %d" % (self.name, sid[-6:], len(self.sent[sid]))
                    self.sent[sid].append(text)
                    rids.append(prompt(self.a, sid, text))
                for rid in rids:
                    r = self.a.response(rid, timeout=30)
                    check(r.get("result") == {"stopReason": "end_turn"},
                          "%s prompt: %r" % (self.name, r))
        except Exception as e:  # reported by the main thread
            errors.append("%s: %s" % (self.name, e))

    def stop(self):
        for a in self.agents:
            a.kill()
            check(not a.bad_lines, "non-JSON output on stdout: %r" % a.bad_lines[:3])
        self.mock.stop()


def listed(host, sid_filter=None):
    out, cursor = [], None
    while True:
        params = {} if not cursor else {"cursor": cursor}
        page = host.a.result("session/list", params)
        out += page["sessions"]
        cursor = page.get("nextCursor")
        if not cursor:
            return out


def check_list(host, own, foreign, other_machine):
    sessions = {s["sessionId"]: s for s in listed(host)}
    for sid in own:
        check(sid in sessions, "%s does not list its own session %s" % (host.name, sid))
        meta = sessions[sid].get("_meta", {})
        check("peri.readOnly" not in meta, "own session flagged read-only: %r" % meta)
    for sid in foreign:
        check(sid in sessions, "%s does not list the other machine's session %s"
              % (host.name, sid))
        meta = sessions[sid].get("_meta", {})
        check(meta.get("peri.readOnly") is True and meta.get("peri.machineId") == other_machine,
              "foreign session not flagged: %r" % sessions[sid])


def check_messages(url, host, extra_user=None):
    """Every session of host: exactly the sent turns, in order, each message once."""
    for sid, sent in host.sent.items():
        got = rows(url, "SELECT seq, role, content FROM messages WHERE thread_id = '%s' "
                        "ORDER BY seq" % sid)
        seqs = [int(r[0]) for r in got]
        check(seqs == list(range(1, len(got) + 1)), "%s: seq not dense/unique: %r" % (sid, seqs))
        users = [r for r in got if r[1] == "user"]
        texts = [json.loads(r[2])["parts"][0]["text"] for r in users]
        want = list(sent) + (extra_user.get(sid, []) if extra_user else [])
        check(texts == want, "%s: user messages differ:\n got %r\nwant %r" % (sid, texts[-3:],
                                                                           want[-3:]))
        roles = [r[1] for r in got]
        n_done = len(sent)
        check(roles[:2 * n_done] == ["user", "assistant"] * n_done,
              "%s: turns not user/assistant pairs" % sid)
        dup = rows(url, "SELECT count(*) FROM (SELECT thread_id, seq FROM messages WHERE "
                        "thread_id = '%s' GROUP BY 1, 2 HAVING count(*) > 1) d" % sid)
        check(dup == [["0"]], "duplicate seq rows")
        count = rows(url, "SELECT message_count, next_seq FROM threads WHERE id = '%s'" % sid)
        check(int(count[0][0]) == len(got) and int(count[0][1]) == len(got) + 1,
              "%s: thread counters %r vs %d rows" % (sid, count, len(got)))


def run(peri, mock_py, url, tmp):
    os.makedirs(os.path.join(tmp, "mb"))
    A = Host("A", MA, peri, mock_py, tmp, url)
    B = Host("B", MB, peri, mock_py, tmp, url)
    hosts = [A, B]
    try:
        A.start()
        B.start()
        sa = [A.new_session(), A.new_session()]
        sb = [B.new_session(), B.new_session()]
        # 1) 180 turns, both hosts at once, two sessions each at once
        errors = []
        ths = [threading.Thread(target=h.turns, args=(s, TURNS_PER_SESSION - 5, errors))
               for h, s in ((A, sa), (B, sb))]
        t0 = time.monotonic()
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        check(not errors, "; ".join(errors))
        print("180 concurrent turns: %.1f s" % (time.monotonic() - t0))
        # 2) both list both machines' sessions; the foreign ones read-only
        check_list(A, sa, sb, MB)
        check_list(B, sb, sa, MA)
        # 3) B may not load or prompt A's session (reading via list is fine)
        r = B.a.call("session/load", {"sessionId": sa[0], "cwd": B.cwd, "mcpServers": []})
        check(r.get("error", {}).get("code") == -32602 and MA in r["error"]["message"]
              and "belongs to machine" in r["error"]["message"], "foreign load: %r" % r)
        r = B.a.response(prompt(B.a, sa[0], "hijack"))
        check("error" in r and MA in r["error"]["message"], "foreign prompt: %r" % r)
        for method in ("session/fork", "session/delete", "session/resume"):
            params = {"sessionId": sa[0], "cwd": B.cwd, "mcpServers": []}
            if method == "session/delete":
                params = {"sessionId": sa[0]}
            r = B.a.call(method, params)
            check(r.get("error", {}).get("code") == -32602 and MA in r["error"]["message"],
                  "foreign %s: %r" % (method, r))
        # 4) A's remaining turns (10) and B's (10) concurrently
        errors = []
        ths = [threading.Thread(target=h.turns, args=(s, 5, errors)) for h, s in ((A, sa),
                                                                                (B, sb))]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        check(not errors, "; ".join(errors))
        # 5) kill -9 of A in the middle of a turn while B keeps working
        A.mock.script({"responses": [{"text": "never", "hang": True, "hang_after": 2}],
                       "default": {"text": "ok"}})
        before = len(A.mock.requests())
        killed_text = "A killed turn"
        prompt(A.a, sa[0], killed_text)
        errors = []
        extra = {sid: [] for sid in sb}

        def b_more():
            try:
                for i in range(5):
                    rids = []
                    for sid in sb:
                        text = "B after kill %d" % i
                        extra[sid].append(text)
                        rids.append(prompt(B.a, sid, text))
                    for rid in rids:
                        r = B.a.response(rid, timeout=30)
                        check(r.get("result") == {"stopReason": "end_turn"}, "B after kill")
            except Exception as e:
                errors.append("B after kill: %s" % e)
        tb = threading.Thread(target=b_more)
        tb.start()
        deadline = time.monotonic() + 20
        while len(A.mock.requests()) <= before:
            check(time.monotonic() < deadline, "A's killed turn never reached the model")
            time.sleep(0.02)
        os.kill(A.a.proc.pid, signal.SIGKILL)
        A.a.proc.wait(5)
        tb.join()
        check(not errors, "; ".join(errors))
        # 6) every message exactly once, in order (200 completed turns + the killed one)
        total = rows(url, "SELECT count(*) FROM messages")
        check(int(total[0][0]) == 2 * 200 + 2 * 10 + 1,
              "messages in the store: %s, want %d" % (total, 2 * 200 + 2 * 10 + 1))
        check_messages(url, A, {sa[0]: [killed_text]})
        for sid in sb:
            B.sent[sid] += extra[sid]
        check_messages(url, B)
        # 6b) the server drops B's connection: the next turn answers (an error or a
        # result, never a hang or a crash), the one after reconnects and works
        rows(url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                  "WHERE application_name = 'peri'")
        time.sleep(0.2)
        r = B.a.response(prompt(B.a, sb[0], "B during outage"), timeout=30)
        check("result" in r or "error" in r, "B after connection loss: %r" % r)
        print("turn during the outage answered: %s" % json.dumps(r.get("result", r.get("error"))))
        r = B.a.response(prompt(B.a, sb[0], "B reconnected"), timeout=30)
        check(r.get("result") == {"stopReason": "end_turn"}, "B after reconnect: %r" % r)
        got = rows(url, "SELECT seq FROM messages WHERE thread_id = '%s' ORDER BY seq" % sb[0])
        check([int(x[0]) for x in got] == list(range(1, len(got) + 1)), "seq after outage")
        last = rows(url, "SELECT content FROM messages WHERE thread_id = '%s' AND role = 'user' "
                         "ORDER BY seq DESC LIMIT 1" % sb[0])
        check(json.loads(last[0][0])["parts"][0]["text"] == "B reconnected", "last user text")
        # 7) A restarts (same machine id): loads its session and continues
        A.mock.script({"responses": [], "default": {"text": "ok"}})
        A.start()
        r = A.a.call("session/load", {"sessionId": sa[0], "cwd": A.cwd, "mcpServers": []})
        check("result" in r, "A reload after kill -9: %r" % r)
        r = A.a.response(prompt(A.a, sa[0], "A after restart"))
        check(r.get("result") == {"stopReason": "end_turn"}, "A after restart: %r" % r)
        A.sent[sa[0]] += [killed_text, "A after restart"]
        got = rows(url, "SELECT role FROM messages WHERE thread_id = '%s' ORDER BY seq" % sa[0])
        check([r[0] for r in got[-3:]] == ["user", "user", "assistant"],
              "after restart: %r" % got[-3:])
    finally:
        for h in hosts:
            try:
                h.stop()
            except Fail as e:
                print("cleanup: %s" % e)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    peri, mock_py = sys.argv[1:]
    base = os.environ.get("PERI_TEST_PG_URL")
    if not base:
        print("FAIL: PERI_TEST_PG_URL not set (run through tests/store/pg_cluster.sh)")
        return 1
    if not psql_bin():
        print("FAIL: psql not found")
        return 1
    url = base  # the throwaway cluster's "postgres" database
    tmp = tempfile.mkdtemp(prefix="peri-shared-")
    t0 = time.monotonic()
    try:
        run(peri, mock_py, url, tmp)
    except Fail as e:
        print("FAIL: %s" % e)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS shared store (%.1f s)" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    acp_harness.TIMEOUT = 30.0  # the mock model's start-up bound
    sys.exit(main())
