#!/usr/bin/env python3
"""cli.py: `peri acp --wasm` (src/cli/cmd_acp_wasm.c), the agent module under Peri-C's
engine with the same flags and environment as `peri acp`, against a real PostgreSQL
(pg_cluster.sh with PERI_PG_TCP=1) and the mock model.

    pg_cluster.sh python3 cli.py PERI MOCK_MODEL_PY [PERI_WASM_MJS MODULE]

With PERI_WASM_MJS and MODULE the same checks run against the Node host
(`node sdk/js/bin/peri-wasm.mjs acp --module MODULE`, same flags) instead.

Checks: a prompt answered by the mock model through the module (the API key reached
the model as a credential: the mock saw it), the session in the shared store and
listed, a second process (another machine id) sees it read-only, the store's password
given in the URL works (it travels as the `store` credential), a local store refused
at start with the module's reason, bad flags exit 2, an idle agent sleeps (little CPU and few
wake-ups over 2 s: the driver waits on stdin and the ports together).
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from acp_harness import Agent, Env, Fail, check, prompt, text_of  # noqa: E402
import e2e  # noqa: E402  (setup_db, the role and database names)

MACHINE_A = "0190f5e4-0000-7000-8000-0000000000c1"
MACHINE_B = "0190f5e4-0000-7000-8000-0000000000c2"


def idle_stats(pid):
    """(CPU seconds of every thread, voluntary context switches of the main thread)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    with open("/proc/%d/status" % pid) as f:
        csw = [int(x.split()[1]) for x in f if x.startswith("voluntary_ctxt_switches:")][0]
    return cpu, csw


def idle_check(a):
    """An idle agent sleeps until its client or a port wakes it: over 2 s it uses almost
    no CPU and wakes up rarely (a driver polling stdin in 5 ms slices wakes ~400 times)."""
    time.sleep(0.5)  # start-up work done
    c0, w0 = idle_stats(a.proc.pid)
    time.sleep(2.0)
    c1, w1 = idle_stats(a.proc.pid)
    check(c1 - c0 < 0.1, "idle for 2 s, the agent used %.0f ms of CPU" % ((c1 - c0) * 1000))
    check(w1 - w0 < 50, "idle for 2 s, the agent woke up %d times" % (w1 - w0))
    print("PASS idle (%.0f ms CPU, %d wake-ups in 2 s)" % ((c1 - c0) * 1000, w1 - w0),
          flush=True)


def main():
    if len(sys.argv) not in (3, 5):
        print(__doc__, file=sys.stderr)
        return 2
    peri, mock_py = sys.argv[1], sys.argv[2]
    node = len(sys.argv) == 5
    pg_port = e2e.setup_db()
    url = "postgresql://%s:%s@127.0.0.1:%d/%s?sslmode=disable" % (
        e2e.ROLE, e2e.PASSWORD.replace(" ", "%20"), pg_port, e2e.DB)
    E = Env(peri, mock_py)
    if node:  # a `peri`-shaped front for the Node host, so Agent's argv fits both
        peri = os.path.join(E.tmp, "peri-node")
        with open(peri, "w") as f:
            f.write("#!%s\nimport os, sys\nargs = [a for a in sys.argv[2:] if a != '--wasm']\n"
                    "os.execvp('node', ['node', %r, 'acp', '--module', %r] + args)\n"
                    % (sys.executable, os.path.abspath(sys.argv[3]), os.path.abspath(sys.argv[4])))
        os.chmod(peri, 0o755)
    failed = 0
    try:
        # 1. a turn through the module; the store's password only in the URL
        a = Agent(peri, E.env(), url, ["--wasm", "--machine-id", MACHINE_A])
        E.agents.append(a)
        init = a.result("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        check(init["protocolVersion"] == 1, "initialize: %r" % init)
        idle_check(a)
        E.mock.script([{"text": ["Hello ", "from the module"]}])
        sid = a.result("session/new", {"cwd": "/work/project", "mcpServers": []})["sessionId"]
        rid = prompt(a, sid, "hi")
        r = a.response(rid)
        check(r.get("result", {}).get("stopReason") == "end_turn", "prompt: %r" % r)
        check(text_of(a.updates(sid)) == "Hello from the module", "text: %r" % a.updates(sid))
        req = E.mock.requests()[-1]
        auth = {k.lower(): v for k, v in req.get("headers", {}).items()}.get("authorization")
        check(auth == "Bearer test-key", "the model saw %r" % auth)
        lst = a.result("session/list", {})
        check(any(s["sessionId"] == sid for s in lst["sessions"]), "list: %r" % lst)
        a.close_stdin()
        check(a.proc.wait(20) == 0, "exit status; stderr: " + "".join(a.stderr)[-1500:])
        print("PASS prompt_store_list", flush=True)

        # 2. another machine loads the session from the shared store
        b = Agent(peri, E.env(), url, ["--wasm", "--machine-id", MACHINE_B])
        E.agents.append(b)
        b.result("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        b.result("session/load", {"sessionId": sid, "cwd": "/work/project", "mcpServers": []})
        check("from the module" in text_of(b.updates(sid)), "replay: %r" % b.updates(sid))
        b.close_stdin()
        check(b.proc.wait(20) == 0, "exit status B; stderr: " + "".join(b.stderr)[-1500:])
        print("PASS load_other_machine", flush=True)

        # 3. a local store: the module refuses to start and says why; no session exists
        p = subprocess.run([peri, "acp", "--wasm", "--db", os.path.join(E.tmp, "local.db"),
                            "--machine-id", MACHINE_A], capture_output=True, text=True,
                           input='{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
                                 '{"protocolVersion":1}}\n', env=E.env(), timeout=60)
        check(p.returncode == 1, "a local store started: %r" % (p,))
        check("local store" in p.stderr and "never falls back" in p.stderr,
              "no reason naming the local store: %s" % p.stderr[-800:])
        check(p.stdout == "", "frames answered: %r" % p.stdout[:300])
        check(not os.path.exists(os.path.join(E.tmp, "local.db")), "a local store was made")
        print("PASS local_store_refused", flush=True)

        # 3b. a client that pipes its requests and closes its side at once (a script):
        # every request is answered in order, the prompt's turn within the close grace,
        # and the process exits 0, as `peri acp` does
        E.mock.script([{"text": "piped answer"}])
        frames = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": 1}},
                  {"jsonrpc": "2.0", "id": 2, "method": "session/load",
                   "params": {"sessionId": sid, "cwd": "/work/project", "mcpServers": []}},
                  {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                   "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "p"}]}},
                  {"jsonrpc": "2.0", "id": 4, "method": "session/list", "params": {}}]
        p = subprocess.run([peri, "acp", "--wasm", "--db", url, "--machine-id", MACHINE_A],
                           input="".join(json.dumps(f) + "\n" for f in frames),
                           capture_output=True, text=True, env=E.env(), timeout=60)
        out = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
        answers = [f for f in out if "id" in f and "method" not in f]
        check(p.returncode == 0, "piped: exit %d: %s" % (p.returncode, p.stderr[-800:]))
        # (a prompt is answered when its turn ends: the list after it may be answered first)
        by_id = {a["id"]: a for a in answers}
        check(sorted(by_id) == [1, 2, 3, 4] and len(answers) == 4 and
              all("result" in a for a in answers) and [a["id"] for a in answers][:2] == [1, 2],
              "piped answers: %r" % [(a["id"], a.get("error")) for a in answers])
        check(by_id[3]["result"] == {"stopReason": "end_turn"}, "piped prompt: %r" % by_id[3])
        print("PASS piped_requests", flush=True)

        if node:
            return 0
        # 4. usage errors
        p = subprocess.run([peri, "acp", "--wasm", "--allow", "nohost"], capture_output=True,
                           text=True, env=E.env(), timeout=30)
        check(p.returncode == 2 and "HOST:PORT" in p.stderr, "bad --allow: %r" % (p,))
        print("PASS usage", flush=True)
    except Fail as e:
        failed = 1
        print("FAIL: %s" % e, flush=True)
        for ag in E.agents:
            sys.stdout.write("".join(ag.stderr)[-2500:])
    finally:
        E.cleanup()
    return failed


if __name__ == "__main__":
    sys.exit(main())
