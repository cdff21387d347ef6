#!/usr/bin/env python3
"""cli_test.py — end-to-end tests of `peri isolate run`, `peri isolate serve` and
`peri run`: exit codes and exact texts, JSON-RPC codes, out-of-order answers,
1000 good and 1000 failing runs in one serve process with file descriptors, threads
and memory flat, and the CPU limit ending an infinite loop while the server stays up.
usage: cli_test.py PERI FIXTURES_DIR [sanitized]
With "sanitized" (ASan build) memory is not compared: ASan's quarantine keeps freed
memory resident on purpose."""
import base64, hashlib, json, os, subprocess, sys, tempfile, threading, time

PERI, FIX = sys.argv[1], sys.argv[2]
SANITIZED = len(sys.argv) > 3 and sys.argv[3] == "sanitized"
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


def prog(name):
    data = open(os.path.join(FIX, name), "rb").read()
    return base64.b64encode(data).decode(), hashlib.sha256(data).hexdigest()


PROBE_B64, PROBE_D = prog("probe.wasm")
HELLO_B64, HELLO_D = prog("hello.wasm")
HELLO_OUT = '{"ok":true,"stdout":"hello\\n","stderr":"","exitCode":0,"files":{}}'

# ---------------------------------------------------------------- isolate run
tmp = tempfile.mkdtemp()
pfile = os.path.join(tmp, "p.b64")
ifile = os.path.join(tmp, "in.json")
open(pfile, "w").write("\r\n  " + PROBE_B64[:100] + "\r\n" + PROBE_B64[100:].rstrip("="))
open(ifile, "w").write('{"args":["echo"],"files":{"/请求/路径.txt":"/x","/数据/旧.txt":"旧"}}')


def iso_run(*extra, stdin=None, digest=PROBE_D, program=pfile, input_=ifile):
    args = [PERI, "isolate", "run", "--runner", "LOADER", "--scope", "s", "--digest", digest,
            "--program", program, "--input", input_] + list(extra)
    return subprocess.run(args, input=stdin, capture_output=True)


PROGRAM_A_OUT = ('{"ok":true,"stdout":"你好\\n","stderr":"","exitCode":0,"files":{'
                 '"/数据/旧.txt":"旧","/数据/记录.txt":"见：/x\\n","/响应/正文.txt":"回显：/x\\n"}}\n')
r = iso_run()
check(r.returncode == 0, "isolate run exit 0")
check(r.stdout.decode() == PROGRAM_A_OUT, "isolate run program A output: %r" % r.stdout)
r = iso_run(digest="0" * 64)
check(r.returncode == 1 and r.stderr.decode().split("\n")[0] == "运行产物摘要不匹配",
      "isolate run digest mismatch: %r" % r.stderr)
r = iso_run("--grant", "OTHER")
check(r.returncode == 1 and r.stderr.decode().split("\n")[0] == "隔离运行失败：未授权的LOADER绑定：LOADER",
      "--grant replaces LOADER: %r" % r.stderr)
r = iso_run(stdin=b'{"args":["fail"]}', input_="-")
check(r.returncode == 0 and r.stdout.decode() ==
      '{"ok":false,"stdout":"","stderr":"","exitCode":3,"files":{}}\n', "input from stdin")
r = iso_run(stdin=open(pfile, "rb").read(), program="-")
check(r.returncode == 0 and r.stdout.decode() == PROGRAM_A_OUT,
      "program from stdin: %r" % r.stdout)
r = iso_run(program="-", input_="-")
check(r.returncode == 2, "both from stdin is a usage error")
r = subprocess.run([PERI, "isolate", "run", "--runner", "LOADER"], capture_output=True)
check(r.returncode == 2, "missing options: usage error")
r = iso_run("--cpu-ms", "1001")
check(r.returncode == 2, "--cpu-ms over 1000 refused")
open(ifile, "w").write('{"args":["loop"]}')
t0 = time.time()
r = iso_run("--cpu-ms", "200", "--wall-ms", "120000")
check(r.returncode == 1 and r.stderr.decode().split("\n")[0] == "隔离运行失败：CPU 时间超过 200 ms",
      "isolate run --cpu-ms 200 loop: %r" % r.stderr)
check(time.time() - t0 < 10, "loop stopped quickly")  # 200 ms CPU; a loaded machine stretches wall time
# one program and one input, one result: clocks and randomness are deterministic by
# default (--deterministic still says so); --real-clocks gives the host's own
r = iso_run(stdin=b'{"args":["rand"]}', input_="-")
r2 = iso_run(stdin=b'{"args":["rand"]}', input_="-")
check(r.returncode == 0 and r.stdout == r2.stdout and b"1767225600.000000000" in r.stdout,
      "a run reproduces by default: %r %r" % (r.stdout, r2.stdout))
r3 = iso_run("--deterministic", stdin=b'{"args":["rand"]}', input_="-")
check(r3.returncode == 0 and r3.stdout == r.stdout, "--deterministic reproduces")
r4 = iso_run("--real-clocks", stdin=b'{"args":["rand"]}', input_="-")
r5 = iso_run("--real-clocks", stdin=b'{"args":["rand"]}', input_="-")
check(r4.returncode == 0 and r4.stdout != r5.stdout and b"1767225600.000000000" not in r4.stdout,
      "--real-clocks: %r %r" % (r4.stdout, r5.stdout))

# ---------------------------------------------------------------- peri run
out_dir = os.path.join(tmp, "out")
os.mkdir(out_dir)
req_file = os.path.join(tmp, "path.txt")
open(req_file, "w").write("/y")
r = subprocess.run([PERI, "run", "--file", "/请求/路径.txt=" + req_file, "--out", out_dir,
                    os.path.join(FIX, "probe.wasm"), "echo"], capture_output=True)
check(r.returncode == 0 and r.stdout.decode() == "你好\n", "peri run echo: %r" % (r,))
check(open(os.path.join(out_dir, "数据", "记录.txt")).read() == "见：/y\n", "peri run --out copies")
check(not os.path.exists(os.path.join(out_dir, "其他")), "peri run copies only returned dirs")
r = subprocess.run([PERI, "run", os.path.join(FIX, "probe.wasm"), "fail"], capture_output=True)
check(r.returncode == 3, "peri run exit code")
r = subprocess.run([PERI, "run", os.path.join(FIX, "probe.wasm"), "stderr"], capture_output=True)
check(r.stdout.decode() == "照常\n" and r.stderr.decode() == "警告：探针\n", "peri run streams")
# Options only before the module: everything after it (even "--") goes to the program.
r = subprocess.run([PERI, "run", "--", os.path.join(FIX, "probe.wasm"), "args", "--out", "--"],
                   capture_output=True)
check(r.stdout.decode() == "[/程序.wasm]\n[args]\n[--out]\n[--]\n", "peri run args: %r" % r.stdout)

# ---------------------------------------------------------------- serve


class Server:
    def __init__(self, workers):
        # A long wall-clock bound: on a loaded machine 1 s of CPU can take over 5 s.
        self.p = subprocess.Popen([PERI, "isolate", "serve", "--workers", str(workers),
                                   "--wall-ms", "120000"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.answers = []
        self.cv = threading.Condition()
        self.t = threading.Thread(target=self.reader, daemon=True)
        self.t.start()

    def reader(self):
        for line in self.p.stdout:
            with self.cv:
                self.answers.append(json.loads(line))
                self.cv.notify_all()

    def send(self, obj):
        line = obj if isinstance(obj, (bytes, str)) else json.dumps(obj, ensure_ascii=False)
        if isinstance(line, str):
            line = line.encode()
        self.p.stdin.write(line + b"\n")
        self.p.stdin.flush()

    def wait(self, n, timeout=120):
        end = time.time() + timeout
        with self.cv:
            while len(self.answers) < n and time.time() < end:
                self.cv.wait(1)
            return list(self.answers)

    def stats(self):
        pid = self.p.pid
        fds = len(os.listdir("/proc/%d/fd" % pid))
        st = open("/proc/%d/status" % pid).read()
        th = int(st.split("Threads:")[1].split()[0])
        rss = int(st.split("VmRSS:")[1].split()[0])
        hwm = int(st.split("VmHWM:")[1].split()[0])
        return fds, th, rss, hwm

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(60)
        self.t.join(10)
        return rc


def run_req(i, b64, digest, inp, scope="s"):
    return {"jsonrpc": "2.0", "id": i, "method": "isolate/run",
            "params": {"runner": "LOADER", "scope": scope, "digest": digest, "program": b64,
                       "input": inp}}


s = Server(2)
# Malformed JSON-RPC gets the standard codes; notifications get no answer.
s.send(b"this is not json")
s.send({"jsonrpc": "2.0", "id": "m", "method": "nope"})
s.send({"jsonrpc": "2.0", "id": "p", "method": "isolate/run", "params": {"runner": "LOADER"}})
s.send({"id": "v", "method": "isolate/run"})
s.send({"jsonrpc": "2.0", "method": "nope"})
s.send(run_req("d", HELLO_B64, "X" * 64, "{}"))
ans = s.wait(5)
by = {a.get("id"): a for a in ans}
check(by[None]["error"]["code"] == -32700, "parse error -32700")
check(by["m"]["error"]["code"] == -32601, "method not found -32601")
check(by["p"]["error"]["code"] == -32602, "invalid params -32602")
check(by["v"]["error"]["code"] == -32600, "invalid request -32600")
check(by["d"]["error"] == {"code": -32000, "message": "产物摘要无效", "data": {"kind": "violation"}},
      "contract exception as -32000: %r" % by["d"])
check(len(ans) == 5, "notification unanswered")
s.answers.clear()
# Garbage never hurts the server: bad UTF-8, deep nesting, odd ids, batches.
s.send(b"\xff\xfe{}")
s.send(b"[" * 5000)
s.send(b'{"jsonrpc":"2.0","id":[1],"method":"isolate/run"}')
s.send(b'[]')
s.send(b'{"jsonrpc":"2.0","id":1.5e3,"method":"nope"}')
s.send(b'{"jsonrpc":"2.0","id":"\\u4f60","method":"isolate/run","params":{"runner":1}}')
raw = []
ans = s.wait(6)
codes = sorted(a["error"]["code"] for a in ans)
check(codes == [-32700, -32700, -32602, -32601, -32600, -32600], "garbage codes: %r" % codes)
check(any(a.get("id") == 1500 for a in ans), "numeric id echoed")
check(any(a.get("id") == "你" for a in ans), "string id echoed")
s.answers.clear()

# Bounds through serve: a program text of 4,194,305 characters, an input one byte
# over 1,572,864 (checked before anything is decoded).
s.send(run_req("big-text", "A" * 4194305, HELLO_D, "{}"))
s.send(run_req("big-input", HELLO_B64, HELLO_D, " " * 1572865))
s.send(run_req("ok-input", HELLO_B64, HELLO_D, " " * 1572862 + "{}"))
ans = {a["id"]: a for a in s.wait(3)}
check(ans["big-text"].get("error", {}).get("message") == "运行产物无效", "text bound via serve")
check(ans["big-input"].get("error", {}).get("message") == "运行输入超过上限", "input bound via serve")
check(ans["ok-input"].get("result", {}).get("output") == HELLO_OUT, "input at the bound runs")
s.answers.clear()

# Same (scope, digest) → same isolate id; different scope → different id.
s.send(run_req(1, HELLO_B64, HELLO_D, "{}", "甲"))
s.send(run_req(2, HELLO_B64, HELLO_D, "{}", "甲"))
s.send(run_req(3, HELLO_B64, HELLO_D, "{}", "乙"))
ans = {a["id"]: a for a in s.wait(3)}
check(ans[1]["result"] == {"output": HELLO_OUT, "isolate": "甲:" + HELLO_D}, "serve result")
check(ans[1]["result"]["isolate"] == ans[2]["result"]["isolate"], "same isolate id")
check(ans[3]["result"]["isolate"] == "乙:" + HELLO_D, "different scope, different id")
s.answers.clear()

# Warm up, then 1000 good and 1000 failing runs with resources flat.
for i in range(100):
    s.send(run_req(i, HELLO_B64, HELLO_D, "{}"))
    s.send(run_req(-i - 1, PROBE_B64, PROBE_D, '{"args":["trap"]}'))
s.wait(200)
s.answers.clear()
before = s.stats()
t0 = time.time()
for i in range(1000):
    s.send(run_req(i, HELLO_B64, HELLO_D, "{}"))
ans = s.wait(1000)
good_secs = time.time() - t0
check(len(ans) == 1000 and all(a.get("result", {}).get("output") == HELLO_OUT for a in ans),
      "1000 good runs")
s.answers.clear()
for i in range(1000):
    s.send(run_req(i, PROBE_B64, PROBE_D, '{"args":["trap"]}' if i % 2 else '{"args":[1]}'))
ans = s.wait(1000)
check(len(ans) == 1000, "1000 failing runs answered")
# each answer is checked against the outcome of ITS request (odd ids trap, even ids have
# bad args), exactly: neither outcome is accepted for the other
TRAP_ANSWER = {"output": '{"ok":false,"stdout":"","stderr":"","exitCode":1,"error":"unreachable",'
                         '"files":{}}', "isolate": "s:" + PROBE_D}
ARGS_ERROR = {"code": -32000, "message": "隔离运行输入无效：args 须为字符串数组",
              "data": {"kind": "violation"}}
by_id = {a.get("id"): a for a in ans}
check(sorted(by_id) == list(range(1000)), "one answer per failing run")
wrong = [i for i in range(1000)
         if (by_id.get(i, {}).get("result") != TRAP_ANSWER if i % 2
             else by_id.get(i, {}).get("error") != ARGS_ERROR)]
check(not wrong, "failing runs with the wrong outcome: %r (first: %r)"
      % (wrong[:10], by_id.get(wrong[0]) if wrong else None))
s.answers.clear()
after = s.stats()
print("serve: fds %d→%d threads %d→%d rss %d→%d KiB (peak %d KiB); 1000 hello runs in %.2f s"
      % (before[0], after[0], before[1], after[1], before[2], after[2], after[3], good_secs))
check(before[0] == after[0], "file descriptors flat")
check(before[1] == after[1], "threads flat")
if not SANITIZED:
    check(after[2] - before[2] < 16 * 1024, "memory flat (< 16 MiB growth)")

# Out of order: a CPU-bound loop on one worker, quick runs answered meanwhile.
s.send(run_req("loop", PROBE_B64, PROBE_D, '{"args":["loop"]}'))
time.sleep(0.1)
s.send(run_req("quick", HELLO_B64, HELLO_D, "{}"))
ans = s.wait(2, timeout=30)
check([a["id"] for a in ans] == ["quick", "loop"], "answers out of order: %r" % [a.get("id") for a in ans])
loop = [a for a in ans if a["id"] == "loop"]
check(loop and loop[0].get("error") == {"code": -32000, "message": "隔离运行失败：CPU 时间超过 1000 ms",
                                         "data": {"kind": "run_failed"}}, "CPU limit exception")
s.answers.clear()
s.send(run_req("after", HELLO_B64, HELLO_D, "{}"))
ans = s.wait(1)
check(ans and ans[0].get("result", {}).get("output") == HELLO_OUT, "healthy after the loop")
check(s.close() == 0, "serve exits 0 at end of input")

if failures:
    print("%d check(s) failed" % failures, file=sys.stderr)
    sys.exit(1)
print("all CLI checks passed")
