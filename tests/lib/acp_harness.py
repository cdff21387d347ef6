"""acp_harness.py: the shared harness of the Python end-to-end tests that drive `peri acp`
over stdio (tests/acp/e2e*.py, tests/mcp/acp_e2e.py, tests/store/e2e_shared.py,
tests/tui/tui_tmux.py), and the parts tests/mcp/interop.py and tests/sdk/embed_test.py
use. Python 3 standard library only.

A test imports it through a path computed from its own file:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from acp_harness import Env, Fail, check, prompt  # noqa: E402

What it owns:
  - Fail / check: a failed check raises Fail; a scenario fails by raising it.
  - Mock: tests/host/mock_model.py on 127.0.0.1 (a free port, told through a port file),
    scripted with POST /_script, its requests read from /_requests.
  - Agent: one `peri acp --db DB` subprocess; newline-delimited JSON-RPC; a reader thread
    timestamps every frame (log) and answers session/request_permission with
    permission_answer (on_request: a subclass adds client methods); wait() bounds every
    wait and keeps frames that do not match for later waits; wait_update, response,
    call, result, cancel build on it. Request ids start at 101.
  - Env: a private temp dir (HOME with .peri/settings.json, a work dir, the database),
    one Mock, the agents started in it (agent(): started and initialized); cleanup()
    kills them, checks that none wrote a non-JSON line on stdout, and removes the temp
    dir. base_env: the environment of a child (PATH, HOME, sanitizer options).
  - run_scenario / scenario_main: run one scenario in a fresh Env; print PASS NAME or
    FAIL NAME: WHY plus the tail of every agent's stderr; exit status 0 or 1.
  - missing_dependency: 77 (skip) for a missing dependency, 1 under CI=true.
  - procs_with / wait_gone: live (not zombie) processes whose command line holds a marker.
Invariant: every wait is bounded, a broken harness is a failure (never a pass or a skip).
"""
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

TIMEOUT = 10.0  # every wait's default bound, in seconds (a Mock reads it when it starts)

SANITIZER_VARS = ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS")


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


class Mock:
    def __init__(self, script_path, tmp):
        port_file = os.path.join(tmp, "mock.port")
        self.proc = subprocess.Popen(
            [sys.executable, script_path, "--port-file", port_file, "--quiet", "--timeout", "120"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + TIMEOUT
        while not os.path.exists(port_file):
            check(time.monotonic() < deadline, "mock model did not start")
            time.sleep(0.02)
        self.port = int(open(port_file).read().strip())
        self.url = "http://127.0.0.1:%d" % self.port

    def script(self, script):
        req = urllib.request.Request(self.url + "/_script", data=json.dumps(script).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=5).read()

    def requests(self):
        return json.loads(urllib.request.urlopen(self.url + "/_requests", timeout=5).read())

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Agent:
    """One `peri acp` subprocess and a reader thread that timestamps every frame."""

    def __init__(self, peri, env, db, extra_args=()):
        self.proc = subprocess.Popen([peri, "acp", "--db", db] + list(extra_args),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.frames = queue.Queue()
        self.log = []  # (time, frame) of everything received
        self.next_id = 100
        self.pending = []
        self.bad_lines = []
        self.permission_answer = "allow_once"
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_err, daemon=True).start()
        self.stderr = []

    def _read(self):
        for line in self.proc.stdout:
            try:
                f = json.loads(line)
            except ValueError:
                self.bad_lines.append(line)
                continue
            t = time.monotonic()
            self.log.append((t, f))
            if "id" in f and "method" in f:
                self.on_request(f)
            self.frames.put((t, f))
        self.frames.put((time.monotonic(), None))

    def on_request(self, f):
        """A request of the agent to the client (called on the reader thread before the
        frame is queued): a permission request is answered with permission_answer (None:
        left unanswered), other requests are left to the test. A subclass adds client
        methods."""
        if f.get("method") == "session/request_permission" and self.permission_answer:
            self.send({"jsonrpc": "2.0", "id": f["id"], "result": {
                "outcome": {"outcome": "selected", "optionId": self.permission_answer}}})

    def _drain_err(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace"))

    def send_raw(self, text):
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def send(self, obj):
        self.send_raw(json.dumps(obj))

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.next_id

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait(self, pred, timeout=TIMEOUT, what="frame"):
        """Returns (time, frame) of the first unconsumed frame satisfying pred.
        Frames that do not match stay available for later waits."""
        for i, (t, f) in enumerate(self.pending):
            if pred(f):
                del self.pending[i]
                return t, f
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            check(left > 0, "timed out waiting for " + what)
            try:
                t, f = self.frames.get(timeout=left)
            except queue.Empty:
                raise Fail("timed out waiting for " + what)
            check(f is not None, "agent closed stdout while waiting for %s; stderr: %s"
                  % (what, "".join(self.stderr)[-2000:]))
            if pred(f):
                return t, f
            self.pending.append((t, f))

    def wait_update(self, pred, what, timeout=TIMEOUT, sid=None):
        """wait() for a session/update (of session sid, when given) whose update
        satisfies pred."""
        return self.wait(lambda f: f.get("method") == "session/update"
                         and (sid is None or f["params"]["sessionId"] == sid)
                         and pred(f["params"]["update"]), timeout, what)

    def response(self, rid, timeout=TIMEOUT):
        return self.wait(lambda f: f.get("id") == rid and "method" not in f, timeout,
                         "response %d" % rid)[1]

    def call(self, method, params=None, timeout=TIMEOUT):
        return self.response(self.request(method, params), timeout)

    def cancel(self, sid, rid, what="cancel", timeout=TIMEOUT):
        """session/cancel of session sid, then the answer to its prompt rid, which must be
        stopReason "cancelled". Returns (time of the cancel, time the answer came)."""
        t_cancel = time.monotonic()
        self.notify("session/cancel", {"sessionId": sid})
        t_resp, r = self.wait(lambda f: f.get("id") == rid and "method" not in f, timeout,
                              "the answer after " + what)
        check(r.get("result") == {"stopReason": "cancelled"}, "%s: %r" % (what, r))
        return t_cancel, t_resp

    def result(self, method, params=None, timeout=TIMEOUT):
        r = self.call(method, params, timeout)
        check("result" in r, "%s failed: %s" % (method, json.dumps(r)))
        return r["result"]

    def updates(self, sid, since=0.0):
        return [(t, f["params"]["update"]) for t, f in list(self.log)
                if f.get("method") == "session/update" and f["params"]["sessionId"] == sid
                and t >= since]

    def close_stdin(self, timeout=TIMEOUT):
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Fail("agent did not exit after EOF")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


class Env:
    def __init__(self, peri, mock_py):
        self.tmp = tempfile.mkdtemp(prefix="peri-e2e-")
        self.home = os.path.join(self.tmp, "home")
        self.cwd = os.path.join(self.tmp, "work")
        os.makedirs(os.path.join(self.home, ".peri"))
        os.makedirs(self.cwd)
        self.db = os.path.join(self.tmp, "peri.db")
        self.peri = peri
        self.mock = Mock(mock_py, self.tmp)
        self.agents = []
        self.settings({"maxRetries": 0})

    def put(self, name, text):
        """Writes text to the file name in the work directory (the sessions' cwd)."""
        with open(os.path.join(self.cwd, name), "w") as f:
            f.write(text)

    def settings(self, obj):
        with open(os.path.join(self.home, ".peri", "settings.json"), "w") as f:
            json.dump(obj, f)

    def env(self, model=True, **extra):
        e = base_env(self.home)
        if model:
            e.update({"PERI_MODEL": "openai:mock-model", "OPENAI_API_KEY": "test-key",
                      "OPENAI_BASE_URL": self.mock.url + "/v1"})
        e.update(extra)
        return e

    def agent(self, model=True, agent_class=None, caps=None, **extra):
        """A started and initialized agent (an Agent, or agent_class with Agent's
        constructor) advertising clientCapabilities caps; extra: environment variables."""
        a = (agent_class or Agent)(self.peri, self.env(model, **extra), self.db)
        self.agents.append(a)
        init = a.result("initialize", {"protocolVersion": 1, "clientCapabilities": caps or {}})
        check(init["protocolVersion"] == 1, "protocolVersion")
        return a

    def new_session(self, a):
        r = a.result("session/new", {"cwd": self.cwd, "mcpServers": []})
        return r["sessionId"]

    def cleanup(self):
        for a in self.agents:
            a.kill()
            check(not a.bad_lines, "non-JSON output on stdout: %r" % a.bad_lines[:3])
        self.mock.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def prompt(a, sid, text):
    return a.request("session/prompt", {"sessionId": sid,
                                        "prompt": [{"type": "text", "text": text}]})


def text_of(updates, tag="agent_message_chunk"):
    return "".join(u["content"]["text"] for _, u in updates if u["sessionUpdate"] == tag)


def pg_role_db(role, password, db):
    """On the throwaway cluster of tests/store/pg_cluster.sh (PERI_PG_TCP=1): a role that
    logs in with its password and a database it owns; returns the TCP port."""
    sock, port = os.environ.get("PERI_TEST_PG_SOCKDIR"), os.environ.get("PERI_TEST_PG_PORT")
    check(sock and port, "run under tests/store/pg_cluster.sh with PERI_PG_TCP=1")

    def psql(sql):
        subprocess.run(["psql", "-h", sock, "-p", port, "-U", "peri", "-d", "postgres", "-q",
                        "-v", "ON_ERROR_STOP=1", "-c", sql], check=True,
                       stdout=subprocess.DEVNULL)
    psql("CREATE ROLE %s LOGIN PASSWORD '%s'" % (role, password))
    psql("CREATE DATABASE %s OWNER %s" % (db, role))
    return int(port)


def base_env(home):
    """The environment of a child under test: PATH, HOME and the sanitizer options."""
    e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
    for k in SANITIZER_VARS:
        if k in os.environ:
            e[k] = os.environ[k]
    return e


def end_agents_cleanly(E):
    """Every agent still running ends cleanly on EOF: exit 0 and no sanitizer report
    (leaks are reported at exit under the ASan build)."""
    for a in E.agents:
        if a.proc.poll() is None:
            a.proc.stdin.close()
            try:
                a.proc.wait(TIMEOUT)
            except Exception:
                raise Fail("agent did not exit after EOF")
        time.sleep(0.05)
        err = "".join(a.stderr)
        check(a.proc.returncode == 0, "agent exit status %r" % a.proc.returncode)
        check("Sanitizer" not in err and "runtime error:" not in err,
              "sanitizer report: %s" % err[-2000:])


def print_agent_stderr(E, tail=3000):
    for a in E.agents:
        sys.stderr.write("".join(a.stderr)[-tail:])


def run_scenario(name, fn, make_env, on_fail=print_agent_stderr, at_end=None):
    """Runs fn(E) in E = make_env(), then at_end(E) when given; always cleans E up.
    Prints PASS NAME, or FAIL NAME: WHY and calls on_fail(E). Returns 0 or 1."""
    E = make_env()
    try:
        fn(E)
        if at_end:
            at_end(E)
    except Fail as e:
        print("FAIL %s: %s" % (name, e))
        on_fail(E)
        return 1
    finally:
        E.cleanup()
    print("PASS " + name)
    return 0


def scenario_main(doc, scenarios, preflight=None, **kw):
    """main() of a harness called as `PROG PERI MOCK_MODEL_PY SCENARIO`: 2 on a usage
    error, preflight(peri, mock_py)'s status when it is not 0, else run_scenario's."""
    if len(sys.argv) != 4 or sys.argv[3] not in scenarios:
        print(doc + "\nscenarios: " + " ".join(scenarios), file=sys.stderr)
        return 2
    peri, mock_py, name = sys.argv[1:]
    rc = preflight(peri, mock_py) if preflight else 0
    if rc:
        return rc
    return run_scenario(name, scenarios[name], lambda: Env(peri, mock_py), **kw)


def missing_dependency(what):
    """A dependency is missing: SKIP (77), or FAIL (1) under CI=true."""
    ci = os.environ.get("CI") == "true"
    print(("FAIL" if ci else "SKIP") + ": " + what)
    return 1 if ci else 77


def procs_with(marker):
    """pids of live (not zombie) processes whose command line (arguments joined by
    spaces) contains marker."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open("/proc/%s/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmd and state != "Z":
            out.append(int(pid))
    return out


def wait_gone(marker, timeout=5.0):
    """True when no live process with marker in its command line is left within timeout."""
    deadline = time.monotonic() + timeout
    while procs_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
