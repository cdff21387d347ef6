#!/usr/bin/env python3
"""bench.py: the agent host as a WebAssembly module, measured against the native host.

    PERI_PG_TCP=1 tests/store/pg_cluster.sh python3 bench/agentwasm/bench.py BUILD [options]

(from the repository root, after the normal build: BUILD holds peri, peri-agent.wasm).
Options: --rounds N (5), --turns K prompts per batch (20), --sessions for the memory
rows (1,10,50), --hosts (engine,node,native), --old-engine PATH (also measure another
peri-agent binary as host engine-old with this build's module: a before/after of the
engine host's driver), --tiers interp,jit,lazy (also the engine host under each
PERI_ENGINE tier, as hosts engine:TIER; the plain engine host runs the default, auto),
--perf DIR (perf record -g each host's turn batch in the first
round into DIR/HOST.data; `perf report -i DIR/HOST.data --no-children`).

Three hosts, all on the same real PostgreSQL (the throwaway cluster, over TCP with a
password: the module reaches the store only through its network port) and the mock
model (tests/host/mock_model.py, answering "ok" at once):
  engine  `peri acp --wasm --store URL` (build/peri-agent.wasm on Peri-C's engine)
  node    `node sdk/js/bin/peri-wasm.mjs acp --module build/peri-agent.wasm --store URL`
  native  `peri acp --store URL` (the same agent host compiled natively)

What it measures (every number is a median over --rounds rounds; in each round the
hosts run one after the other in a rotated order, so drifting machine load hits all):
  module    size of peri-agent.wasm in bytes and gzip -9 bytes.
  start     process start -> `initialize` answered (wall ms); in-process: for Node the
            compile + instantiate of the module in a fresh node (WebAssembly.Module, then
            Instance with stub imports, no _initialize), for the engine the load and
            pwh_new (instantiate, link, _initialize) of build/peri-agentwasm-instantiate
            (bench/agentwasm/instantiate.c; also its RSS per instance over 50 instances).
  memory    VmRSS of one host process after initialize and after N `session/new`
            (--sessions); for the engine also the module's linear memory size at exit
            (after the last session; `peri acp --wasm` prints it with PERI_WASM_LOG=info,
            which the engine hosts run with).
  turn      one `session/prompt` round trip (send -> response) in a session, after one
            warm-up prompt: median wall ms, and CPU ms of the host process per prompt
            (utime + stime of all its threads over --turns prompts, divided by --turns;
            /proc ticks are 10 ms, hence the batch).
  idle      CPU ms and voluntary context switches of an idle host over 2 s after
            initialize (a polling driver shows hundreds of wake-ups).
The load average before and after is printed. Output: a Markdown table on stdout, the
raw samples as JSON on stderr's last line.
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
sys.path.insert(0, os.path.join(ROOT, "tests", "agentwasm"))
from acp_harness import Agent, Env, check  # noqa: E402
import e2e  # noqa: E402  (setup_db, the role and database names)

MACHINE = "0190f5e4-0000-7000-8000-0000000000b1"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_ms(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / TICK  # utime, stime


def status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


class Hosts:
    def __init__(self, build, E, url, old_engine=None):
        self.build, self.E, self.url = build, E, url
        self.module = os.path.join(build, "peri-agent.wasm")
        peri = os.path.join(build, "peri")
        node_front = os.path.join(E.tmp, "peri-node")  # a `peri`-shaped front for Agent
        with open(node_front, "w") as f:
            f.write("#!/bin/sh\nshift\nexec node %s acp --module %s \"$@\"\n"
                    % (os.path.join(ROOT, "sdk", "js", "bin", "peri-wasm.mjs"), self.module))
        os.chmod(node_front, 0o755)
        self.argv = {"engine": (peri, ["--wasm", "--machine-id", MACHINE]),
                     "engine-old": (old_engine, ["--wasm", "--module", self.module,
                                                 "--machine-id", MACHINE]),
                     "node": (node_front, ["--machine-id", MACHINE]),
                     "native": (peri, ["--machine-id", MACHINE])}

    def start(self, name):
        tier = name.split(":", 1)[1] if name.startswith("engine:") else None
        exe, extra = self.argv["engine" if tier else name]
        t0 = time.monotonic()
        env = self.E.env()
        if name.startswith("engine"):  # its linear memory size at exit (cmd_acp_wasm.c)
            env["PERI_WASM_LOG"] = "info"
        if tier:
            env["PERI_ENGINE"] = tier
        a = Agent(exe, env, self.url, extra)
        # Agent passes --db URL; peri acp and peri-wasm.mjs take it as the store locator
        self.E.agents.append(a)
        rid = a.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        t, r = a.wait(lambda f: f.get("id") == rid and "method" not in f, 60, "initialize")
        check("result" in r, "%s initialize: %r" % (name, r))
        return a, (t - t0) * 1000.0

    def stop(self, a):
        a.close_stdin(60)
        time.sleep(0.1)  # the stderr reader
        for line in a.stderr:
            if "linear memory:" in line:
                return int(line.split("linear memory:")[1].split()[0]) // 1024
        return None


def turn(a, sid):
    t0 = time.monotonic()
    rid = a.request("session/prompt", {"sessionId": sid,
                                       "prompt": [{"type": "text", "text": "hi"}]})
    t, r = a.wait(lambda f: f.get("id") == rid and "method" not in f, 60, "prompt answer")
    check(r.get("result", {}).get("stopReason") == "end_turn", "prompt: %r" % r)
    return (t - t0) * 1000.0


def node_instantiate_ms(module, rounds):
    js = r"""
const fs = require("fs");
const bytes = fs.readFileSync(process.argv[1]);
const out = [];
for (let i = 0; i < +process.argv[2]; i++) {
  const t0 = process.hrtime.bigint();
  const m = new WebAssembly.Module(bytes);
  const t1 = process.hrtime.bigint();
  const imports = {};
  for (const d of WebAssembly.Module.imports(m)) {
    imports[d.module] ??= {};
    imports[d.module][d.name] = () => 0;
  }
  new WebAssembly.Instance(m, imports);
  const t2 = process.hrtime.bigint();
  out.push([Number(t1 - t0) / 1e6, Number(t2 - t1) / 1e6]);
}
console.log(JSON.stringify(out));
"""
    p = subprocess.run(["node", "-e", js, module, str(rounds)], capture_output=True,
                       text=True, timeout=300)
    check(p.returncode == 0, "node instantiate: %s" % p.stderr[-500:])
    return json.loads(p.stdout)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--sessions", default="1,10,50")
    ap.add_argument("--hosts", default="engine,node,native")
    ap.add_argument("--old-engine", help="another peri-agent binary, measured as host "
                    "engine-old (a before/after of the engine host's driver)")
    ap.add_argument("--tiers", default="", help="also the engine host with PERI_ENGINE "
                    "set to each of these tiers (interp,jit,lazy), as hosts engine:TIER")
    ap.add_argument("--perf", help="directory: perf record -g the turn batch of each host")
    o = ap.parse_args()
    build = os.path.abspath(o.build)
    sessions = [int(x) for x in o.sessions.split(",")]
    names = o.hosts.split(",") + (["engine-old"] if o.old_engine else []) + \
        ["engine:" + t for t in o.tiers.split(",") if t]
    load0 = os.getloadavg()
    pg_port = e2e.setup_db()
    url = "postgresql://%s:%s@127.0.0.1:%d/%s?sslmode=disable" % (
        e2e.ROLE, e2e.PASSWORD.replace(" ", "%20"), pg_port, e2e.DB)
    envs = []
    module = os.path.join(build, "peri-agent.wasm")

    def fresh():  # a new mock model each round: the harness's mock ends after 120 s
        envs.append(Env(os.path.join(build, "peri"),
                        os.path.join(ROOT, "tests", "host", "mock_model.py")))
        return Hosts(build, envs[-1], url, o.old_engine and os.path.abspath(o.old_engine))
    S = {n: {"start": [], "rss_init": [], "idle_cpu": [], "idle_csw": [],
             "linmem_end": [],
             "wall": [], "cpu": []} for n in names}
    for n in names:
        for k in sessions:
            S[n]["rss_%d" % k] = []
    try:
        for rnd in range(o.rounds):
            H = fresh()
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            for n in order:
                a, ms = H.start(n)
                S[n]["start"].append(ms)
                pid = a.proc.pid
                if n == "node":  # the front execs node: same pid
                    pass
                time.sleep(0.3)
                S[n]["rss_init"].append(status(pid, "VmRSS"))
                c0, w0 = cpu_ms(pid), status(pid, "voluntary_ctxt_switches")
                time.sleep(2.0)
                S[n]["idle_cpu"].append(cpu_ms(pid) - c0)
                S[n]["idle_csw"].append(status(pid, "voluntary_ctxt_switches") - w0)
                sid = a.result("session/new", {"cwd": H.E.cwd, "mcpServers": []},
                               60)["sessionId"]
                turn(a, sid)  # warm-up
                prof = None
                if o.perf and rnd == 0:
                    os.makedirs(o.perf, exist_ok=True)
                    prof = subprocess.Popen(["perf", "record", "-q", "-g", "-p", str(pid), "-o",
                                             os.path.join(o.perf, n + ".data")],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    time.sleep(0.5)
                c0 = cpu_ms(pid)
                walls = [turn(a, sid) for _ in range(o.turns)]
                S[n]["cpu"].append((cpu_ms(pid) - c0) / o.turns)
                if prof:
                    prof.send_signal(2)
                    prof.wait(30)
                S[n]["wall"].append(med(walls))
                made = 1
                for k in sessions:
                    while made < k:
                        a.result("session/new", {"cwd": H.E.cwd, "mcpServers": []}, 60)
                        made += 1
                    time.sleep(0.2)
                    S[n]["rss_%d" % k].append(status(pid, "VmRSS"))
                lm = H.stop(a)
                if lm is not None:
                    S[n]["linmem_end"].append(lm)
                print("round %d %s: start %.1f ms, turn %.2f ms / %.2f ms CPU" %
                      (rnd, n, ms, S[n]["wall"][-1], S[n]["cpu"][-1]), file=sys.stderr,
                      flush=True)
        inst = [node_instantiate_ms(module, 1)[0] for _ in range(o.rounds)] \
            if "node" in names else []
        tool = os.path.join(build, "peri-agentwasm-instantiate")
        einst = []
        if os.path.exists(tool):
            for _ in range(o.rounds):
                p = subprocess.run([tool, module, "50"], capture_output=True, text=True,
                                   timeout=300)
                check(p.returncode == 0, "peri-agentwasm-instantiate: " + p.stderr[-500:])
                einst.append(json.loads(p.stdout))
    finally:
        for E in envs:
            E.cleanup()
    load1 = os.getloadavg()

    size = os.path.getsize(module)
    with open(module, "rb") as f:
        gz = len(gzip.compress(f.read(), 9))
    print("module: %d bytes, gzip -9 %d bytes" % (size, gz))
    if inst:
        print("node in-process (a fresh node each): compile %.1f ms, instantiate %.2f ms "
              "(median of %d)" % (med([x[0] for x in inst]), med([x[1] for x in inst]),
                                  len(inst)))
    if einst:
        print("engine in-process (peri-agentwasm-instantiate, 50 instances): load %.1f ms, "
              "first pwh_new %.2f ms, median pwh_new %.2f ms, linear memory %d KiB at "
              "instantiation, RSS per instance %.0f KiB (median of %d)"
              % (med([x["module_new_ms"] for x in einst]),
                 med([x["instantiate_first_ms"] for x in einst]),
                 med([x["instantiate_median_ms"] for x in einst]),
                 einst[0]["linear_memory_bytes"] // 1024,
                 med([x["rss_per_instance_kb"] for x in einst]), len(einst)))
    print("load average before %.2f %.2f %.2f, after %.2f %.2f %.2f (%d CPUs)"
          % (load0 + load1 + (os.cpu_count(),)))
    print()
    print("| metric | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    rows = [("start: process -> initialize (ms)", "start", "%.1f"),
            ("turn wall (ms, median)", "wall", "%.2f"),
            ("turn CPU (ms per prompt)", "cpu", "%.2f"),
            ("idle CPU over 2 s (ms)", "idle_cpu", "%.0f"),
            ("idle wake-ups over 2 s", "idle_csw", "%.0f"),
            ("RSS after initialize (KiB)", "rss_init", "%.0f")]
    rows += [("RSS with %d sessions (KiB)" % k, "rss_%d" % k, "%.0f") for k in sessions]
    rows += [("engine linear memory at exit, after %d sessions (KiB)" % sessions[-1],
              "linmem_end", "%.0f")]
    for label, key, fmt in rows:
        cells = [(fmt % med(S[n][key])) if S[n][key] else "-" for n in names]
        print("| %s | %s |" % (label, " | ".join(cells)))
    print(json.dumps({"samples": S, "node_instantiate": inst, "engine_instantiate": einst,
                      "load": [load0, load1]}),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
