#!/usr/bin/env python3
"""e2e_shared.py: two `peri acp` hosts on one PostgreSQL store (acceptance 2).

usage: e2e_shared.py PERI_BINARY MOCK_MODEL_PY [wasm | node PERI_WASM_MJS MODULE]
       (run through tests/store/pg_cluster.sh, which sets PERI_TEST_PG_URL; the wasm and
       node forms need PERI_PG_TCP=1)

The same checks run against three hosts: `peri acp --store` (native, the reference),
`peri acp --wasm` (the agent module on Peri-C's engine) and `peri-wasm.mjs acp` (the
module on Node). The module reaches the store only through the network port, so its
hosts use a TCP URL with a password (the host hands it over as the `store` credential);
the checks are the same, except where the form itself differs (said where it does).

Hosts A and B (different --machine-id, one database, each with its own mock model) run
two sessions each, concurrently, through ACP: 200 completed turns in total. Then A is
killed with SIGKILL in the middle of a turn while B keeps prompting. Checks:
  * every message is in the database exactly once, seq dense 1..n, user/assistant
    alternating, the user texts in the order they were sent (psql reads the rows);
  * the killed turn's committed user message is there, its answer is not;
  * session/list from A and from B shows both machines' sessions, the other machine's
    flagged _meta."peri.readOnly" with its "peri.machineId";
  * B loading A's session opens it read-only (_meta peri.readOnly, peri.machineId);
    prompting / forking / deleting / set_mode / set_config_option is refused naming the
    owner;
  * B keeps working after A's death; when the server drops B's connection the next turn
    answers (error or result) and the one after reconnects;
  * a restarted A loads its session and continues;
  * (issue 15 follow-up) A runs a turn with thinking, a tool call and a plan; B lists it
    read-only, loads it and receives exactly the replay A's own load sends; B's writes
    are refused, A's thread row is unchanged and the server's statement log
    (log_statement=mod, per application name) shows no write of B meanwhile; A appends
    and B's next load shows it; resume is read-only too;
  * `peri acp` with a wrong password fails naming neither password; PGPASSWORD (mapped by
    the CLI) with the right one connects; no password in the server's log.
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
        a = Agent(self.peri, env, self.url, HOST_ARGS + ["--machine-id", self.machine])
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


def refused(host, sid, owner):
    """Every writing request on another machine's session: -32602 naming the owner."""
    r = host.a.response(prompt(host.a, sid, "hijack"))
    check(r.get("error", {}).get("code") == -32602 and owner in r["error"]["message"]
          and "belongs to machine" in r["error"]["message"], "foreign prompt: %r" % r)
    for method, params in (("session/fork", {"cwd": host.cwd, "mcpServers": []}),
                           ("session/delete", {}),
                           ("session/set_mode", {"modeId": "plan"}),
                           ("session/set_config_option", {"configId": "mode",
                                                          "value": "plan"})):
        params = dict(params, sessionId=sid)
        r = host.a.call(method, params)
        check(r.get("error", {}).get("code") == -32602 and owner in r["error"]["message"]
              and "belongs to machine" in r["error"]["message"]
              and r["error"].get("data", {}).get("sessionId") == sid,
              "foreign %s: %r" % (method, r))


def load_replay(host, sid):
    """session/load of sid on host: (result, the replayed updates before the answer)."""
    t0 = time.monotonic()
    rid = host.a.request("session/load", {"sessionId": sid, "cwd": host.cwd, "mcpServers": []})
    t_resp, r = host.a.wait(lambda f: f.get("id") == rid and "method" not in f,
                            what="load response")
    check("result" in r, "%s load %s: %r" % (host.name, sid, r))
    ups = [u for t, u in host.a.updates(sid, t0) if t <= t_resp]
    return r["result"], ups


def log_text(path, start):
    with open(path, "rb") as f:
        f.seek(start)
        return f.read().decode(errors="replace")


def writes_of(text, app):
    """Data-modifying statements logged (log_statement=mod) for application app."""
    out = []
    for line in text.splitlines():
        if line.startswith(app + "|") and ("statement:" in line or "execute" in line):
            if any(k in line.upper() for k in ("INSERT", "UPDATE", "DELETE")):
                out.append(line)
    return out


def foreign_replay(url, A, B):
    """Issue 15 follow-up: B opens a session of A read-only and sees exactly A's replay."""
    with open(os.path.join(A.cwd, "f.txt"), "w") as f:
        f.write("abc")
    sr = A.new_session()
    todo = {"todos": [{"content": "read f.txt", "status": "completed"},
                      {"content": "answer", "status": "in_progress", "priority": "high"}]}
    A.mock.script({"responses": [
        {"thinking": "let me look", "text": "reading",
         "tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "f.txt"}}]},
        {"tool_calls": [{"id": "c2", "name": "todo", "arguments": todo}]},
        {"text": "f.txt says abc"}], "default": {"text": "ok"}})
    r = A.a.response(prompt(A.a, sr, "what is in f.txt?"))
    check(r.get("result") == {"stopReason": "end_turn"}, "A tool turn: %r" % r)
    r = A.a.response(prompt(A.a, sr, "thanks"))
    check(r.get("result") == {"stopReason": "end_turn"}, "A second turn: %r" % r)
    # A's own load is the reference
    res_a, ups_a = load_replay(A, sr)
    check("_meta" not in res_a or "peri.readOnly" not in res_a["_meta"], "own load: %r" % res_a)
    kinds = [u["sessionUpdate"] for u in ups_a]
    # The module has no file tools and no todo tool (it offers only MCP tools): its `read`
    # and `todo` calls are answered as unknown tools, so its replay has tool calls and
    # their results but no plan.
    want = ("user_message_chunk", "agent_thought_chunk", "agent_message_chunk", "tool_call",
            "tool_call_update") + (("plan",) if FORM == "native" else ())
    for k in want:
        check(k in kinds, "A's replay has no %s: %r" % (k, kinds))
    # B: listed read-only, then loaded: the identical replay
    entry = [s for s in listed(B) if s["sessionId"] == sr]
    check(entry and entry[0].get("_meta", {}).get("peri.readOnly") is True, "B list: %r" % entry)
    sock = os.environ["PERI_TEST_PG_SOCKDIR"]
    log = os.path.join(sock, "server.log")
    # from here every data-modifying statement is logged with its application name
    rows(url, "ALTER SYSTEM SET log_statement = 'mod'")
    rows(url, "ALTER SYSTEM SET log_line_prefix = '%a|'")
    rows(url, "SELECT pg_reload_conf()")
    time.sleep(0.5)
    before = rows(url, "SELECT title, meta, model, updated_at, message_count, next_seq "
                       "FROM threads WHERE id = '%s'" % sr)
    start = os.path.getsize(log)
    res_b, ups_b = load_replay(B, sr)
    check(res_b.get("_meta") == {"peri.readOnly": True, "peri.machineId": MA},
          "foreign load result: %r" % res_b)
    check(ups_b == ups_a, "B's replay differs from A's:\n A %s\n B %s"
          % (json.dumps(ups_a)[:1500], json.dumps(ups_b)[:1500]))
    print("foreign replay: %d updates, identical to the owner's: %s"
          % (len(ups_b), " ".join(u["sessionUpdate"] for u in ups_b)))
    refused(B, sr, MA)
    check(rows(url, "SELECT title, meta, model, updated_at, message_count, next_seq "
                    "FROM threads WHERE id = '%s'" % sr) == before, "A's thread row changed")
    time.sleep(0.3)
    w = writes_of(log_text(log, start), "peri-B")
    check(not w, "B wrote to the store while reading A's session: %r" % w[:3])
    # the check can fail: B's own write (set_mode on its session) is in the log
    B.a.result("session/set_mode", {"sessionId": list(B.sent)[0], "modeId": "default"})
    deadline = time.monotonic() + 5
    while not writes_of(log_text(log, start), "peri-B"):
        check(time.monotonic() < deadline, "statement log shows no write of B at all")
        time.sleep(0.1)
    rows(url, "ALTER SYSTEM RESET log_statement")
    rows(url, "SELECT pg_reload_conf()")
    # A appends; B's next load reads the store again and shows it, still A's exact replay
    r = A.a.response(prompt(A.a, sr, "one more from A"))
    check(r.get("result") == {"stopReason": "end_turn"}, "A third turn: %r" % r)
    res_a, ups_a = load_replay(A, sr)
    res_b, ups_b = load_replay(B, sr)
    check(any(u["sessionUpdate"] == "user_message_chunk"
              and u["content"].get("text") == "one more from A" for u in ups_b),
          "B's reload misses A's new message")
    check(ups_b == ups_a, "B's reload differs from A's load")
    check(res_b.get("_meta") == {"peri.readOnly": True, "peri.machineId": MA}, "reload meta")
    # resume (no replay) of a foreign session is read-only too
    t0 = time.monotonic()
    r = B.a.result("session/resume", {"sessionId": sr, "cwd": B.cwd})
    check(r.get("_meta") == {"peri.readOnly": True, "peri.machineId": MA}, "resume: %r" % r)
    check(not B.a.updates(sr, t0), "resume replayed")
    refused(B, sr, MA)


def password_cli(peri, url, tmp):
    """`peri acp` against a role that needs its password (pg_cluster.sh: scram-sha-256 for
    every role but the admin): a wrong one fails with a clear message naming neither
    password; the right one via PGPASSWORD (mapped by the CLI only) connects."""
    sock = os.environ["PERI_TEST_PG_SOCKDIR"]
    right, wrong = "cli-Right-%d" % os.getpid(), "cli-Wrong-%d" % os.getpid()
    rows(url, "CREATE ROLE peri_cli LOGIN SUPERUSER PASSWORD '%s'" % right)
    home = os.path.join(tmp, "home-pw")
    os.makedirs(home, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    base = "postgresql:///postgres?host=%s&user=peri_cli&passfile=%s/none" % (sock, tmp)
    if FORM != "native":  # the module's hosts: TCP (its role logs in with SCRAM there too)
        base = ("postgresql:///postgres?host=127.0.0.1&port=%s&user=peri_cli&passfile=%s/none"
                "&sslmode=disable" % (os.environ["PERI_TEST_PG_PORT"], tmp))
    r = subprocess.run([peri, "acp", "--store", base + "&password=" + wrong, "--machine-id",
                        "pw-host"] + HOST_ARGS, stdin=subprocess.DEVNULL, capture_output=True,
                       env=env, timeout=60)
    err = r.stderr.decode(errors="replace")
    check(r.returncode != 0 and "password authentication failed" in err,
          "wrong password: rc %d, %r" % (r.returncode, err[-400:]))
    check(wrong not in err and right not in err and wrong not in r.stdout.decode(),
          "a password in peri's output: %r" % err[-400:])
    print("wrong password: %s" % err.strip().splitlines()[-1])
    a = Agent(peri, dict(env, PGPASSWORD=right), base, HOST_ARGS + ["--machine-id", "pw-host"])
    try:
        init = a.result("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        check(init["protocolVersion"] == 1, "initialize with PGPASSWORD")
        a.result("session/list", {})
    finally:
        a.kill()
    # the password file, as libpq reads it (* matches anything, \: is a colon); one that
    # others may read is ignored
    pf = os.path.join(tmp, "pgpass")
    with open(pf, "w") as f:
        f.write("# comment\nother:*:*:peri_cli:%s\n*:*:postgres:peri_cli:%s\n" % (wrong, right))
    os.chmod(pf, 0o600)
    with_pf = base.replace("passfile=%s/none" % tmp, "passfile=" + pf)
    a = Agent(peri, env, with_pf, HOST_ARGS + ["--machine-id", "pw-host"])
    try:
        a.result("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        a.result("session/list", {})
    finally:
        a.kill()
    os.chmod(pf, 0o644)
    r = subprocess.run([peri, "acp", "--store", with_pf, "--machine-id", "pw-host"] + HOST_ARGS,
                       stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=60)
    err = r.stderr.decode(errors="replace")
    check(r.returncode != 0 and "group or world access" in err and right not in err,
          "a password file others may read: rc %d, %r" % (r.returncode, err[-400:]))
    log = open(os.path.join(sock, "server.log"), errors="replace").read()
    check(right not in log and wrong not in log, "a password in the server's log")


FORM = "native"  # or "wasm" / "node": which host runs the agent (main sets it)
HOST_ARGS = []  # extra arguments of every `peri acp` (--wasm for the module's hosts)


def node_front(tmp, mjs, module):
    """A `peri`-shaped front for the Node host, so Agent's argv fits all three hosts."""
    path = os.path.join(tmp, "peri-node")
    with open(path, "w") as f:
        f.write("#!%s\nimport os, sys\nargs = [a for a in sys.argv[2:] if a != '--wasm']\n"
                "os.execvp('node', ['node', %r, 'acp', '--module', %r] + args)\n"
                % (sys.executable, os.path.abspath(mjs), os.path.abspath(module)))
    os.chmod(path, 0o755)
    return path


def store_url(admin, tmp):
    """The hosts' store: the admin socket URL natively; for the module's hosts a TCP URL
    of a role that logs in with its password (SCRAM), the password in the URL."""
    if FORM == "native":
        return admin + "&"
    port = os.environ.get("PERI_TEST_PG_PORT")
    check(port, "the module's hosts need PostgreSQL on TCP (PERI_PG_TCP=1)")
    rows(admin, "CREATE ROLE peri_shared LOGIN SUPERUSER PASSWORD 'shared pw'")
    return "postgresql://peri_shared:shared%%20pw@127.0.0.1:%s/postgres?sslmode=disable&" % port


def run(peri, mock_py, url, tmp):
    os.makedirs(os.path.join(tmp, "mb"))
    store = store_url(url, tmp)
    # distinct application names: the statement log tells the hosts apart
    A = Host("A", MA, peri, mock_py, tmp, store + "application_name=peri-A")
    B = Host("B", MB, peri, mock_py, tmp, store + "application_name=peri-B")
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
        # 3) B may read A's session (load: read-only) but neither prompt nor change it
        r = B.a.call("session/load", {"sessionId": sa[0], "cwd": B.cwd, "mcpServers": []})
        check(r.get("result", {}).get("_meta") == {"peri.readOnly": True, "peri.machineId": MA},
              "foreign load: %r" % r)
        refused(B, sa[0], MA)
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
                  "WHERE application_name LIKE 'peri%'")
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
        # 8) B opens one of A's sessions read-only: the owner's exact replay, refusals,
        # no write reaching the store, and A's later appends on the next load
        foreign_replay(url, A, B)
        # 9) the password path through the CLI
        password_cli(peri, url, tmp)
    finally:
        for h in hosts:
            try:
                h.stop()
            except Fail as e:
                print("cleanup: %s" % e)


def main():
    global FORM, HOST_ARGS
    args = sys.argv[1:]
    if len(args) not in (2, 3, 5) or (len(args) > 2 and args[2] not in ("wasm", "node")):
        print(__doc__, file=sys.stderr)
        return 2
    peri, mock_py = args[:2]
    FORM = args[2] if len(args) > 2 else "native"
    HOST_ARGS = [] if FORM == "native" else ["--wasm"]
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
    if FORM == "node":
        if len(args) != 5:
            print(__doc__, file=sys.stderr)
            return 2
        peri = node_front(tmp, args[3], args[4])
    try:
        run(peri, mock_py, url, tmp)
    except Fail as e:
        print("FAIL: %s" % e)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS shared store, %s host (%.1f s)" % (FORM, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    acp_harness.TIMEOUT = 30.0  # the mock model's start-up bound
    sys.exit(main())
