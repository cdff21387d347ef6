#!/usr/bin/env python3
"""cli_yuyan_test.py — the 豫言 ABI's conformance examples through the command line:
`peri isolate run` (exact stdout text + newline and exit 0, or exit 1 with the exact
exception as the first stderr line), `peri isolate serve` (the same texts as JSON-RPC
results/errors, the CPU limit on an infinite loop, the server serving on afterwards)
and `peri run` (streamed output, exit code).
usage: cli_yuyan_test.py PERI FIXTURE_DIR [plain|sanitized]"""
import atexit, base64, hashlib, json, os, shutil, subprocess, sys, tempfile, threading

PERI, FIX = sys.argv[1], sys.argv[2]
SANITIZED = len(sys.argv) > 3 and sys.argv[3] == "sanitized"
failed = 0


def check(cond, what):
    global failed
    if not cond:
        failed += 1
        print("FAIL:", what)


def prog(name):
    data = open(os.path.join(FIX, name), "rb").read()
    return data, hashlib.sha256(data).hexdigest()


PROBE, PROBE_D = prog("probe.wasm")
STD, STD_D = prog("std.wasm")
tmp = tempfile.mkdtemp(prefix="peri-yy-")
atexit.register(shutil.rmtree, tmp, ignore_errors=True)
pfile = os.path.join(tmp, "probe.b64")
open(pfile, "wb").write(base64.b64encode(PROBE))


def iso_run(inp, digest=PROBE_D, program=pfile, *extra):
    ifile = os.path.join(tmp, "in.json")
    open(ifile, "w", encoding="utf-8").write(inp)
    r = subprocess.run([PERI, "isolate", "run", "--runner", "LOADER", "--scope", "豫言",
                        "--digest", digest, "--program", program, "--input", ifile,
                        "--wall-ms", "120000", *extra],
                       capture_output=True, timeout=60)
    return r.returncode, r.stdout.decode("utf-8"), r.stderr.decode("utf-8")


def ok_text(inp, want, what):
    rc, out, err = iso_run(inp)
    check(rc == 0 and out == want + "\n", "%s: rc=%d out=%r err=%r" % (what, rc, out[:200], err[:200]))


def exc_text(inp, want, what, **kw):
    rc, out, err = iso_run(inp, **kw)
    check(rc == 1 and out == "" and err.split("\n")[0] == want,
          "%s: rc=%d err=%r" % (what, rc, err[:200]))


ok_text('{"args":["echo"],"files":{"/请求/路径.txt":"/x","/数据/旧.txt":"旧"}}',
        '{"ok":true,"stdout":"你好\\n","stderr":"","exitCode":0,"files":{"/数据/旧.txt":"旧",'
        '"/数据/记录.txt":"见：/x\\n","/响应/正文.txt":"回显：/x\\n"}}', "program A")
ok_text('{"args":["fail"]}',
        '{"ok":false,"stdout":"失败前\\n","stderr":"","exitCode":3,"files":{}}', "exit 3")
ok_text('{"args":["trap"]}',
        '{"ok":false,"stdout":"抛出前\\n","stderr":"","exitCode":1,"error":"illegal cast","files":{}}',
        "uncaught exception")
ok_text('{"args":["stderr"]}',
        '{"ok":true,"stdout":"标准输出\\n","stderr":"错误输出\\n","exitCode":0,"files":{}}', "stderr")
rc, out, err = iso_run('{"args":["bigout"]}')
check(rc == 0 and out == '{"ok":false,"stdout":"' + "x" * 65536 +
      '","stderr":"","exitCode":1,"error":"输出超过 64 KB","files":{}}\n', "bigout 65,537 bytes")
many = ",".join('"/数据/%d.txt":"x"' % i for i in range(256))
ok_text('{"args":["many:256"]}',
        '{"ok":true,"stdout":"","stderr":"","exitCode":0,"files":{' + many + '}}', "256 files")
exc_text('{"args":["many:257"]}', "隔离运行失败：500：运行数据超过上限", "257 files")
ok_text('{"args":["big:1048576"]}', '{"ok":true,"stdout":"","stderr":"","exitCode":0,"files":{'
        '"/数据/大.txt":"' + "a" * 1048576 + '"}}', "1 MiB file")
exc_text('{"args":["big:1048577"]}', "隔离运行失败：500：运行数据超过上限", "1 MiB + 1 file")
exc_text('{"args":["badutf8"]}', "隔离运行失败：500：输出文件不是有效 UTF-8：/数据/坏.txt", "bad UTF-8")
exc_text('不是JSON', "隔离运行输入无效：输入不是有效 JSON", "input not JSON")
exc_text('{"args":[1]}', "隔离运行输入无效：args 须为字符串数组", "args not strings")
exc_text('{"files":{"/a":1}}', "隔离运行输入无效：files 须为路径到文字的对象", "files not strings")
exc_text('{}', "产物摘要无效", "digest upper case", digest=PROBE_D.upper())
exc_text('{}', "运行产物摘要不匹配", "digest mismatch", digest=STD_D)
# Base64 with CRLF line breaks and leading spaces, missing padding: accepted.
b64 = base64.b64encode(PROBE).decode().rstrip("=")
wrapped = os.path.join(tmp, "wrapped.b64")
open(wrapped, "w").write("  " + "\r\n".join(b64[i:i + 76] for i in range(0, len(b64), 76)))
rc, out, err = iso_run('{"args":["fail"]}', PROBE_D, wrapped)
check(rc == 0 and '"exitCode":3' in out, "wrapped Base64: %r %r" % (out[:100], err[:100]))
# CPU limit: an exception after about 1 s of CPU.
exc_text('{"args":["loop"]}', "隔离运行失败：CPU 时间超过 1000 ms", "infinite loop")

# ---------------------------------------------------------------- serve
# A long wall-clock bound: on a loaded machine 1 s of CPU can take over 5 s.
p = subprocess.Popen([PERI, "isolate", "serve", "--workers", "2", "--wall-ms", "120000"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
PROBE_B64, STD_B64 = base64.b64encode(PROBE).decode(), base64.b64encode(STD).decode()


pending = []


def req(rid, b64, d, inp, scope="甲"):
    line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": "isolate/run",
                       "params": {"runner": "LOADER", "scope": scope, "digest": d,
                                  "program": b64, "input": inp}})
    pending.append(line.encode() + b"\n")


def answers(n):
    # A writer thread sends while we read: answers must not back up into the pipe.
    data = b"".join(pending)
    pending.clear()

    def write():
        p.stdin.write(data)
        p.stdin.flush()
    w = threading.Thread(target=write)
    w.start()
    got = {}
    for _ in range(n):
        m = json.loads(p.stdout.readline())
        got[m["id"]] = m
    w.join()
    return got


def stats():
    fds = len(os.listdir("/proc/%d/fd" % p.pid))
    st = open("/proc/%d/status" % p.pid).read()
    return fds, int(st.split("Threads:")[1].split()[0]), int(st.split("VmRSS:")[1].split()[0])


req("loop", PROBE_B64, PROBE_D, '{"args":["loop"]}')
req("a", PROBE_B64, PROBE_D, '{"args":["echo"]}')
req("std", STD_B64, STD_D, '{"args":["stub"]}')
ans = answers(3)
check(ans["loop"].get("error") == {"code": -32000, "message": "隔离运行失败：CPU 时间超过 1000 ms",
                                   "data": {"kind": "run_failed"}}, "serve loop: %r" % ans["loop"])
ECHO = ('{"ok":true,"stdout":"你好\\n","stderr":"","exitCode":0,'
        '"files":{"/数据/记录.txt":"见：\\n","/响应/正文.txt":"回显：\\n"}}')
check(ans["a"].get("result") == {"output": ECHO, "isolate": "甲:" + PROBE_D}, "serve echo: %r" % ans["a"])
check(ans["std"].get("result", {}).get("output") ==
      '{"ok":false,"stdout":"改名前\\n","stderr":"","exitCode":1,"error":'
      '"接口函数未绑定：标准库.同步改名文件","files":{}}', "serve stub: %r" % ans["std"])
# 1000 good and 1000 failing 豫言 runs in one process: descriptors, threads and memory flat.
for i in range(100):
    req(i, PROBE_B64, PROBE_D, '{"args":["echo"]}')
answers(100)
before = stats()
for i in range(1000):
    req(i, PROBE_B64, PROBE_D, '{"args":["echo"]}')
ans = answers(1000)
check(all(a.get("result", {}).get("output") == ECHO for a in ans.values()), "1000 good runs")
for i in range(1000):
    req(i, PROBE_B64, PROBE_D, '{"args":["trap"]}' if i % 2 else '{"args":["missing"]}')
ans = answers(1000)
check(all('"exitCode":1,"error":"illegal cast"' in a.get("result", {}).get("output", "") or
          '"exitCode":2' in a.get("result", {}).get("output", "") for a in ans.values()),
      "1000 failing runs")
after = stats()
print("serve (豫言): fds %d→%d threads %d→%d rss %d→%d KiB" %
      (before[0], after[0], before[1], after[1], before[2], after[2]))
check(before[0] == after[0] and before[1] == after[1], "fds and threads flat")
if not SANITIZED:
    check(after[2] - before[2] < 16 * 1024, "memory flat (< 16 MiB growth)")
p.stdin.close()
check(p.wait(timeout=60) == 0, "serve exit")

# ---------------------------------------------------------------- peri run
r = subprocess.run([PERI, "run", os.path.join(FIX, "probe.wasm"), "fail"], capture_output=True,
                   timeout=60)
check(r.returncode == 3 and r.stdout.decode() == "失败前\n", "peri run fail: %r" % (r,))
r = subprocess.run([PERI, "run", os.path.join(FIX, "std.wasm"), "missing"], capture_output=True,
                   timeout=60)
check(r.returncode == 1 and "文件不存在：/数据/../无.txt" in r.stderr.decode(), "peri run missing: %r" % (r,))

print("cli_yuyan_test: %s" % ("FAILED %d" % failed if failed else "ok"))
sys.exit(1 if failed else 0)
