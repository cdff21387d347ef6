#!/usr/bin/env python3
"""e2e_run.py: end-to-end tests of the code-running tools over ACP.

usage: e2e_run.py PERI_BINARY MOCK_MODEL_PY RUBY_WASM WASI_HELLO SCENARIO

Built on e2e.py's harness (private HOME, tests/host/mock_model.py, `peri acp` on stdio).
Scenarios:
  shell   a shell call writes a file in the cwd (visible afterwards), cannot write
          outside the cwd, cannot connect to a listener the test opened on 127.0.0.1,
          cannot read a file the test placed in $HOME; it asks permission; _meta carries
          the placement decision (native_sandbox); without a sandbox (PERI_BWRAP missing)
          shell fails clearly and runs nothing; sandbox mode off runs unsandboxed
          with a warning on stderr per call.
  run     `run` of a WASI program and of a Ruby script returns the right output without
          asking permission (room); _meta says wasm_room; an endless loop ends at the
          CPU limit with a clear tool error, what it printed before kept, and the turn
          continues; a module whose
          imports the room lacks, undeclared, is refused without a question; declared
          requirements go native and ask, a subagent's too (its request titled with
          the whole script, made visible).
  cancel  cancel during a long shell call and during long run calls (Ruby, WASI) ends the turn as
          cancelled within 200 ms, and the shell's process tree is gone; the run calls'
          result is the typed "cancelled" (stopped_by), not the room's CPU limit.
  cache   the room's code cache is the user's (~/.cache/peri/code of the agent's HOME):
          after an agent ran Ruby once the cache holds its translation (0600 files in a
          0700 directory), and a second agent process running Ruby maps that file (a hit
          touches it in place: same inode, later time) instead of writing another.
The other scenarios run with PERI_CODE_CACHE=off: filling the cache translates Ruby's
module on a background thread, CPU the cancel scenario would count against the agent.
Exit 0 pass, 1 fail, 77 skipped (never under CI=true).
"""
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import (Env, check, missing_dependency, procs_with, prompt,  # noqa: E402
                         run_scenario, text_of, wait_gone)

RUBY = None
HELLO = None


def agent(E, **extra):
    env = {"PERI_CODE_CACHE": "off"}
    env.update(extra)
    return E.agent(PERI_RUBY_WASM=RUBY, **{k: v for k, v in env.items() if v is not None})


def final_updates(a, sid, since=0.0):
    return [u for _, u in a.updates(sid, since) if u["sessionUpdate"] == "tool_call_update"
            and u.get("status") in ("completed", "failed")]


def tool_turn(E, a, sid, calls, text="done", timeout=60):
    """Scripts one turn: the tool calls, then a text answer. Returns (result, finals)."""
    t0 = time.monotonic()
    E.mock.script([{"tool_calls": calls}, {"text": text}])
    r = a.response(prompt(a, sid, "go"), timeout=timeout)
    return r, final_updates(a, sid, t0), t0


def perms_since(a, t0):
    return [f for t, f in a.log if f.get("method") == "session/request_permission" and t >= t0]


def s_shell(E):
    secret = os.path.join(E.home, "secret.txt")
    with open(secret, "w") as f:
        f.write("home-secret-77\n")
    outside = os.path.join(E.tmp, "outside-dir")
    os.makedirs(outside)
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(5)
    port = lst.getsockname()[1]
    a = agent(E)
    sid = E.new_session(a)
    a.permission_answer = "allow_once"
    r, fin, t0 = tool_turn(E, a, sid, [
        {"id": "w", "name": "shell", "arguments": {"command": "echo made-in-sandbox > made.txt && cat made.txt"}},
        {"id": "o", "name": "shell", "arguments": {"command": "echo x > %s/escape.txt" % outside}},
        {"id": "n", "name": "shell", "arguments": {"command":
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', %d), 2); print('CONNECTED')\"" % port}},
        {"id": "h", "name": "shell", "arguments": {"command": "cat %s" % secret}},
    ])
    check(r.get("result") == {"stopReason": "end_turn"}, "shell turn %r" % r)
    by = {u["toolCallId"]: u for u in fin}
    check(set(by) == {"w", "o", "n", "h"}, "tool results %r" % list(by))
    check(open(os.path.join(E.cwd, "made.txt")).read() == "made-in-sandbox\n", "file in cwd")
    check("made-in-sandbox" in json.dumps(by["w"]["content"]), "shell output in content")
    meta = by["w"].get("_meta", {}).get("peri.placement", {})
    check(meta.get("backend") == "native_sandbox" and meta.get("identity", "").startswith("sha256:")
          and meta.get("reason"), "placement _meta %r" % meta)
    check(not os.path.exists(os.path.join(outside, "escape.txt")), "wrote outside the cwd")
    check(by["o"]["status"] == "failed", "outside write should fail: %r" % by["o"])
    check("CONNECTED" not in by["n"]["rawOutput"].get("stdout", "") and by["n"]["status"] == "failed",
          "connected to the host's listener: %r" % by["n"])
    check("home-secret-77" not in json.dumps(by["h"]["rawOutput"]) and by["h"]["status"] == "failed",
          "read a file in $HOME: %r" % by["h"])
    check(len(perms_since(a, t0)) == 4, "shell should ask permission for each call")
    check("rawOutput" in by["w"] and "backend" in json.dumps(by["w"]["rawOutput"]), "rawOutput")
    lst.close()
    check(a.close_stdin() == 0, "exit")

    # No sandbox on the machine: a clear error naming what is missing, nothing runs.
    c = agent(E, PERI_BWRAP="/nonexistent/bwrap")
    sid = E.new_session(c)
    c.permission_answer = "allow_once"
    r, fin, _ = tool_turn(E, c, sid, [{"id": "x", "name": "shell",
                                       "arguments": {"command": "echo ran > unsandboxed.txt"}}])
    check(r.get("result") == {"stopReason": "end_turn"}, "no-sandbox turn %r" % r)
    check(fin[0]["status"] == "failed" and "bwrap" in json.dumps(fin[0]), "no-sandbox error %r" % fin[0])
    check(not os.path.exists(os.path.join(E.cwd, "unsandboxed.txt")), "ran without the sandbox")
    check(c.close_stdin() == 0, "exit")

    # "sandbox": {"mode": "off"} is the only way to run unsandboxed, and it warns.
    E.settings({"maxRetries": 0, "sandbox": {"mode": "off"}, "permissions": {"allow": ["shell"]}})
    b = agent(E)
    sid = E.new_session(b)
    r, fin, _ = tool_turn(E, b, sid, [{"id": "u", "name": "shell",
                                       "arguments": {"command": "cat %s" % secret}}])
    check(r.get("result") == {"stopReason": "end_turn"}, "off turn %r" % r)
    check("home-secret-77" in json.dumps(fin[0]), "mode off should run unsandboxed")
    check(fin[0].get("_meta", {}).get("peri.placement", {}).get("unsandboxed") is True, "off _meta")
    check(b.close_stdin() == 0, "exit")
    check(any("UNSANDBOXED" in l for l in b.stderr), "no warning logged: %r" % b.stderr[-5:])


def s_run(E):
    import shutil
    shutil.copy(HELLO, os.path.join(E.cwd, "hello.wasm"))
    a = agent(E)
    sid = E.new_session(a)
    a.permission_answer = "reject_once"  # the room must not ask
    script = 'require "json"\nputs JSON.generate({"sum" => (1..10).sum})\nFile.write("/响应/r.txt", "ok")\n'
    r, fin, t0 = tool_turn(E, a, sid, [
        {"id": "rb", "name": "run", "arguments": {"ruby": script}},
        {"id": "wa", "name": "run", "arguments": {"wasm": "hello.wasm"}},
        {"id": "in", "name": "run", "arguments": {"ruby": "puts File.read('/请求/a.txt').upcase\nputs $stdin.read.size",
                                                   "files": {"/请求/a.txt": "abc"}, "stdin": "12345"}},
    ], timeout=120)
    check(r.get("result") == {"stopReason": "end_turn"}, "run turn %r" % r)
    by = {u["toolCallId"]: u for u in fin}
    check(by["rb"]["status"] == "completed" and by["rb"]["rawOutput"]["stdout"] == '{"sum":55}\n',
          "ruby result %r" % by["rb"])
    check(by["rb"]["rawOutput"]["files"] == {"/响应/r.txt": "ok"}, "returned file")
    meta = by["rb"].get("_meta", {}).get("peri.placement", {})
    check(meta.get("backend") == "wasm_room", "ruby placement %r" % meta)
    check(by["wa"]["status"] == "completed", "wasm result %r" % by["wa"])
    check(by["wa"]["rawOutput"]["stdout"] == "hello\n", "wasm stdout %r" % by["wa"]["rawOutput"])
    check(by["in"]["rawOutput"]["stdout"] == "ABC\n5\n",
          "files/stdin %r" % by["in"])
    check(not perms_since(a, t0), "the room asked permission")

    # endless loop: CPU limit, a clear tool error, and the turn continues
    r, fin, t0 = tool_turn(E, a, sid, [{"id": "sp", "name": "run", "arguments": {
        "ruby": "$stdout.sync = true\nputs 'started before the loop'\nloop { }"}}],
                           text="the loop was stopped")
    check(r.get("result") == {"stopReason": "end_turn"}, "spin turn %r" % r)
    limit = json.dumps(fin[0], ensure_ascii=False)  # CPU limit; wall limit if starved
    check(fin[0]["status"] == "failed" and ("CPU 时间超过" in limit or "运行时间超过" in limit),
          "cpu limit error %r" % fin[0])
    # what the script printed before it was stopped comes with the error
    check(fin[0].get("rawOutput", {}).get("stdout") == "started before the loop\n",
          "output before the stop %r" % fin[0])
    check("the loop was stopped" in text_of(a.updates(sid, t0)), "turn did not continue")

    # a module whose imports the room lacks (env.f) needs the native sandbox: undeclared,
    # it never leaves the room (no question, nothing run), and the error says what to do
    mod = (b"\0asm\1\0\0\0" + b"\x01\x04\x01\x60\x00\x00"  # type () -> ()
           + b"\x02\x09\x01\x03env\x01f\x00\x00"  # import env.f
           + b"\x03\x02\x01\x00" + b"\x07\x0a\x01\x06_start\x00\x01"
           + b"\x0a\x06\x01\x04\x00\x10\x00\x0b")  # _start: call env.f
    with open(os.path.join(E.cwd, "envf.wasm"), "wb") as f:
        f.write(mod)
    a.permission_answer = "allow_once"
    r, fin, t0 = tool_turn(E, a, sid, [{"id": "ef", "name": "run", "arguments": {"wasm": "envf.wasm"}}])
    check(r.get("result") == {"stopReason": "end_turn"}, "env.f turn %r" % r)
    check(not perms_since(a, t0), "an undeclared native run asked (and would have run)")
    ef = json.dumps(fin[0], ensure_ascii=False)
    check(fin[0]["status"] == "failed" and "needs the native sandbox (no_qualified_wasm_runtime)" in ef
          and "requirements" in ef and "native_sandbox" not in ef, "undeclared native run %r" % fin[0])

    # declared requirements: native, and it asks
    a.permission_answer = "allow_once"
    r, fin, t0 = tool_turn(E, a, sid, [{"id": "nv", "name": "run", "arguments": {
        "ruby": "puts `echo from-subprocess`", "requirements": ["subprocess"]}}])
    check(r.get("result") == {"stopReason": "end_turn"}, "native run turn %r" % r)
    check(len(perms_since(a, t0)) == 1, "native run should ask permission")
    meta = fin[0].get("_meta", {}).get("peri.placement", {})
    check(meta.get("backend") == "native_sandbox", "native run placement %r" % meta)
    check(fin[0]["rawOutput"].get("stdout") == "from-subprocess\n", "native run output %r" % fin[0])

    # a subagent's native run asks as the parent's does (through the parent's client),
    # and rejected it does not run; the request's title is the whole script, every
    # character visible (the second line and the controls too)
    a.permission_answer = "reject_once"
    src = 'puts 1\n\x1b[2K\rFile.write("sub-ran.txt", `id`)\n'
    t0 = time.monotonic()
    E.mock.script([
        {"tool_calls": [{"id": "sub", "name": "task", "arguments": {
            "description": "native", "prompt": "run it", "tools": ["run"]}}]},
        {"tool_calls": [{"id": "cr", "name": "run", "arguments": {
            "ruby": src, "requirements": ["subprocess"]}}]},
        {"text": "child done"}, {"text": "parent done"}])
    r = a.response(prompt(a, sid, "delegate"), timeout=120)
    check(r.get("result") == {"stopReason": "end_turn"}, "subagent turn %r" % r)
    asks = [f["params"]["toolCall"] for f in perms_since(a, t0)]
    check(len(asks) == 1 and asks[0]["toolCallId"] == "sub/cr",
          "the subagent's native run did not ask: %r" % asks)
    title = asks[0]["title"]
    check('File.write("sub-ran.txt", `id`)' in title and "puts 1" in title and
          "\x1b" not in title and "\r" not in title, "native run title %r" % title)
    check(asks[0].get("rawInput", {}).get("ruby") == src, "rawInput %r" % asks[0].get("rawInput"))
    child = [u for u in final_updates(a, sid, t0) if u["toolCallId"] == "sub/cr"]
    check(child and child[0]["status"] == "failed" and "rejected" in json.dumps(child[0]),
          "the rejected child run %r" % child)
    check(not os.path.exists(os.path.join(E.cwd, "sub-ran.txt")), "the rejected child run ran")
    check(a.close_stdin() == 0, "exit")


def cpu_s(pid):
    """User + system CPU seconds of a process (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def s_cancel(E):
    E.settings({"maxRetries": 0, "permissions": {"allow": ["shell"]}})
    a = agent(E)
    sid = E.new_session(a)
    marker = "31.%d" % (os.getpid() % 1000)
    import shutil
    shutil.copy(os.path.join(os.path.dirname(HELLO), "probe.wasm"), os.path.join(E.cwd, "probe.wasm"))
    # Ruby's first run in a host compiles its 30 MB module (not interruptible, nor a
    # room run yet); warm it so that the cancel below lands in the room run itself.
    r, fin, _ = tool_turn(E, a, sid, [{"id": "warm", "name": "run", "arguments": {"ruby": "puts 1"}}])
    check(fin and fin[0]["status"] == "completed", "ruby warm-up %r" % fin)
    for name, args in (("shell", {"command": "sleep %s & sleep %s; echo late" % (marker, marker)}),
                       ("run", {"ruby": "loop { }"}),
                       ("run", {"wasm": "probe.wasm", "args": ["loop"]})):
        E.mock.script([{"tool_calls": [{"id": "c-%s-%d" % (name, len(args)), "name": name, "arguments": args}]},
                       {"text": "after"}])
        rid = prompt(a, sid, "long " + name)
        a.wait_update(lambda u: u.get("status") == "in_progress", "tool in progress", 60)
        time.sleep(0.3)
        if name == "shell":
            deadline = time.monotonic() + 10  # the sandbox may be slow to start under load
            while not procs_with("sleep " + marker) and time.monotonic() < deadline:
                time.sleep(0.05)
            check(procs_with("sleep " + marker), "the shell's sleep is not running")
        cpu_at_cancel = cpu_s(a.proc.pid)
        t_cancel, t_resp = a.cancel(sid, rid, name + " cancel")
        check(t_resp - t_cancel < 0.2, "%s cancel took %.0f ms" % (name, (t_resp - t_cancel) * 1000))
        if name == "run":
            # The room run was really interrupted (the prompt itself is answered at once,
            # whatever the tool does): the next prompt of the session starts only when the
            # cancelled turn has ended, and the agent spent little CPU until then. A room
            # run left going would first use the rest of its 1000 ms CPU limit (>= 600 ms
            # here: the cancel came 300 ms into it), whatever the machine's load.
            E.mock.script([{"text": "next"}])
            r2 = a.response(prompt(a, sid, "next"), timeout=60)
            cpu_after = cpu_s(a.proc.pid) - cpu_at_cancel
            check(r2.get("result", {}).get("stopReason") == "end_turn", "%s next turn %r" % (name, r2))
            print("%s %s: cancelled turn ended after %.0f ms of agent CPU" % (name, args, cpu_after * 1000))
            check(cpu_after < 0.45, "%s %s: the room run went on after the cancel (%.0f ms CPU)"
                  % (name, args, cpu_after * 1000))
        if name == "shell":
            check(wait_gone("sleep " + marker, 2), "the shell's process tree survived the cancel")
    check(a.close_stdin() == 0, "exit")


def cache_files(d):
    """{name: (inode, mtime_ns, mode)} of the finished files in the cache directory d,
    but for the small memos (validated records, digests, checked files: under 4 KiB),
    which a later run may add."""
    out = {}
    for n in os.listdir(d) if os.path.isdir(d) else []:
        if not n.startswith("."):
            st = os.stat(os.path.join(d, n))
            if st.st_size >= 4096:
                out[n] = (st.st_ino, st.st_mtime_ns, st.st_mode & 0o777)
    return out


def s_cache(E):
    cache = os.path.join(E.home, ".cache", "peri", "code")
    seen = []
    for round_ in (1, 2):
        a = agent(E, PERI_CODE_CACHE=None)  # the default: the cache of the agent's HOME
        sid = E.new_session(a)
        r, fin, _ = tool_turn(E, a, sid, [{"id": "rb%d" % round_, "name": "run",
                                           "arguments": {"ruby": "puts 6 * 7"}}], timeout=120)
        check(fin and fin[0]["status"] == "completed" and fin[0]["rawOutput"]["stdout"] == "42\n",
              "ruby run %d %r" % (round_, fin))
        # the translation is saved when the room lets go of the module: at the agent's exit
        try:
            rc = a.close_stdin(timeout=180)
        except Exception as e:
            rc = repr(e)
        check(rc == 0, "agent %d exit %r" % (round_, rc))
        seen.append(cache_files(cache))
        time.sleep(0.05)  # a touch later than the file's write has a later time
    first, second = seen
    print("cache after the first agent: %r; after the second: %r" % (first, second))
    check(len(first) >= 1, "the first agent's Ruby run left no translation in %s" % cache)
    check(os.path.isdir(cache) and os.stat(cache).st_mode & 0o777 == 0o700,
          "the cache directory is 0700")
    check(all(v[2] == 0o600 for v in first.values()), "cache files are 0600: %r" % first)
    check(set(first) == set(second), "the second agent wrote new files: %r -> %r" % (first, second))
    # A run that did not use the saved translation translates and saves it again at
    # exit (a new file renamed over the name: a new inode); a hit leaves it in place
    # (a hit touches its mtime only once the file is an hour old).
    same = [n for n in first if n in second and second[n][0] == first[n][0]]
    check(len(same) == len(first), "the second agent's Ruby run did not use the cached "
          "files (replaced): %r -> %r" % (first, second))


SCENARIOS = {"shell": s_shell, "run": s_run, "cancel": s_cancel, "cache": s_cache}


def main():
    global RUBY, HELLO
    if len(sys.argv) != 6 or sys.argv[5] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        return 2
    peri, mock_py, RUBY, HELLO, name = sys.argv[1:]
    missing = [p for p in (RUBY, HELLO) if not os.path.exists(p)]
    if missing and name in ("run", "cancel", "cache"):  # these run Ruby in the room
        return missing_dependency("missing %s (scripts/deps.sh)" % missing)
    if not os.path.exists("/usr/bin/bwrap"):
        return missing_dependency("bubblewrap is not installed (scripts/deps.sh)")
    return run_scenario(name, SCENARIOS[name], lambda: Env(peri, mock_py))


if __name__ == "__main__":
    sys.exit(main())
