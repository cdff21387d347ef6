#!/usr/bin/env python3
"""cli_user.py — what a user sees from `peri`: the version, errors that name the file or
field and say what to do (in English; the contract's Chinese texts byte for byte where
the isolation contract prescribes them, with the English beside them on a terminal),
exit codes that are never 0 on a failure, the settings checked against their schema,
`peri print` joining the model's text as the model meant it, `peri ruby` with piped
stdin and a progress note. Real binaries, a real pty, the mock model.

usage: cli_user.py PERI VERSION ROOM_FIXTURES MOCK_MODEL_PY RUBY_WASM SCENARIO
Scenarios: version run isolate place settings print ruby.
Exit 0 pass, 1 fail, 77 skipped (ruby: the Ruby build is missing; a failure when CI=true).
"""
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, stdin=None, env=None, cwd=None, timeout=120):
    """The command with pipes: (status, stdout text, stderr text)."""
    r = subprocess.run(args, input=stdin, capture_output=True, env=env, cwd=cwd,
                       timeout=timeout)
    err = r.stderr.decode("utf-8", "replace")
    no_sanitizer_report(args, err)
    return (r.returncode, r.stdout.decode("utf-8", "replace"), err)


def no_sanitizer_report(args, err):
    """Under the ASan build an error path must be as clean as a success."""
    check("Sanitizer" not in err and "runtime error:" not in err,
          "%s: sanitizer report: %s" % (" ".join(args[1:3]), err[-1500:]))


def run_tty(args, env=None, timeout=120, stream="stderr"):
    """The command with one of stdout or stderr (stream) on a pseudo-terminal, the other a
    pipe, stdin empty: (status, stdout text, stderr text), the terminal's side as it
    received it (stdout's CR LF as LF)."""
    master, slave = pty.openpty()
    tty_out = stream == "stdout"
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                         stdout=slave if tty_out else subprocess.PIPE,
                         stderr=subprocess.PIPE if tty_out else slave, env=env)
    os.close(slave)
    term = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not chunk:
                break
            term += chunk
        elif p.poll() is not None:
            break
    piped = (p.stderr if tty_out else p.stdout).read()
    p.wait(timeout)
    os.close(master)
    out, err = (term.replace(b"\r\n", b"\n"), piped) if tty_out else (piped, term)
    no_sanitizer_report(args, err.decode("utf-8", "replace"))
    return p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def run_tty_stderr(args, env=None, timeout=120):
    """The command with stderr on a pseudo-terminal (run_tty)."""
    return run_tty(args, env, timeout, "stderr")


def run_tty_all(args, env=None, cwd=None, timeout=60):
    """The command on a pseudo-terminal (stdin, stdout and stderr): (status, output)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    if p.poll() is None:
        p.kill()
    p.wait(timeout)
    os.close(master)
    no_sanitizer_report(args, out.decode("utf-8", "replace"))
    return p.returncode, out.decode("utf-8", "replace")


def has_cjk(s):
    return re.search("[\u4e00-\u9fff]", s) is not None


# ---------------------------------------------------------------- scenarios


def s_version(peri, version, **_):
    agent = os.path.join(os.path.dirname(peri), "peri-agent")
    for args, want in ([[peri, "--version"], "peri " + version],
                       [[peri, "version"], "peri " + version],
                       [[agent, "--version"], "peri-agent " + version]):
        rc, out, err = run(args)
        check(rc == 0 and out == want + "\n" and err == "",
              "%s: %d %r %r (want %r)" % (" ".join(args[1:]), rc, out, err, want))
    rc, out, _ = run([peri, "run", "--version"])
    check(rc == 0 and out.startswith("peri run " + version + " "), "peri run --version: %r" % out)
    rc, out, _ = run([peri, "--help"])
    check(rc == 0 and "version" in out and "Exit status" in out, "peri --help: %r" % out)


def s_run(peri, fixtures, tmp, **_):
    src = os.path.join(tmp, "hello.c")
    with open(src, "w") as f:
        f.write('#include <stdio.h>\nint main(void) { puts("hi"); }\n')
    rc, out, err = run([peri, "run", src])
    check(rc == 1 and out == "", "run hello.c: status %d" % rc)
    check(src in err and "not a WebAssembly module" in err and "Compile" in err
          and not has_cjk(err), "run hello.c names the file and says what to do: %r" % err)
    missing = os.path.join(tmp, "nope.wasm")
    rc, _, err = run([peri, "run", missing])
    check(rc == 1 and missing in err and "No such file" in err, "run missing: %d %r" % (rc, err))
    rc, _, err = run([peri, "run", tmp])
    check(rc == 1 and tmp in err and "Is a directory" in err, "run a directory: %d %r" % (rc, err))
    rc, _, err = run([peri], stdin=b"")
    check(rc == 2 and err.startswith("peri: a command is missing\n"), "peri alone: %r" % err[:200])
    broken = os.path.join(tmp, "broken.wasm")
    with open(broken, "wb") as f:
        f.write(b"\0asm\x01\0\0\0\x01\x19\x05\x60")
    rc, _, err = run([peri, "run", broken])
    check(rc == 1 and broken in err and "not a valid WebAssembly module" in err
          and "peri wasm validate" in err, "run truncated module: %d %r" % (rc, err))
    probe = os.path.join(fixtures, "probe.wasm")
    rc, _, err = run([peri, "run", "--cpu-ms", "100", probe, "loop"])
    check(rc == 1 and "CPU time" in err and "100 ms" in err and "--cpu-ms" in err
          and probe in err and not has_cjk(err), "run CPU limit in English: %d %r" % (rc, err))
    rc, _, err = run([peri, "run", "--wall-ms", "300", probe, "loop"])
    check(rc == 1 and "wall-clock" in err and "--wall-ms" in err and not has_cjk(err),
          "run wall limit in English: %d %r" % (rc, err))
    rc, _, err = run([peri, "run", "--cpu-ms", "abc", probe])
    check(rc == 2 and "--cpu-ms wants a positive number" in err, "run bad value: %r" % err)
    rc, _, err = run([peri, "run"])
    check(rc == 2 and "no module given" in err, "run without module: %r" % err)
    # peri wasm: what was wrong before the usage; exit codes in --help
    rc, _, err = run([peri, "wasm", "invoke", probe])
    check(rc == 2 and err.startswith("peri wasm invoke: the function FUNC to call is missing\n"),
          "wasm invoke without FUNC: %r" % err[:200])
    rc, _, err = run([peri, "wasm"])
    check(rc == 2 and err.startswith("peri wasm: validate or invoke is missing\n"),
          "wasm alone: %r" % err[:200])
    rc, _, err = run([peri, "wasm", "validate", src])
    check(rc == 1 and err.startswith(src + ": malformed"), "wasm validate hello.c: %r" % err)
    rc, out, _ = run([peri, "wasm", "--help"])
    check(rc == 0 and "Exit status" in out, "wasm --help: %r" % out)


def s_isolate(peri, fixtures, tmp, **_):
    rc, out, _ = run([peri, "isolate", "--help"])
    check(rc == 0 and "Base64" in out and "base64 -w0" in out and "sha256sum" in out,
          "isolate --help explains --program and --digest: %r" % out)
    rc, out, err = run([peri, "isolate"])
    check(rc == 2 and err.startswith("peri isolate: run or serve is missing\n"),
          "isolate alone says what is missing: %r" % err[:200])
    rc, _, err = run([peri, "isolate", "run", "--runner", "LOADER", "--scope", "s"])
    check(rc == 2 and err.startswith("peri isolate: --digest HEX is missing\n"),
          "isolate run missing option named: %r" % err[:200])
    rc, _, err = run([peri, "isolate", "run", "--frob"])
    check(rc == 2 and err.startswith('peri isolate: unknown option or argument "--frob"'),
          "isolate unknown option: %r" % err[:200])
    rc, _, err = run([peri, "isolate", "serve", "--workers", "0"])
    check(rc == 2 and "--workers wants 1..256" in err, "isolate serve --workers 0: %r" % err[:200])
    # the .wasm file itself given as --program: the contract's text, byte for byte, first
    wasm = os.path.join(fixtures, "hello.wasm")
    inp = os.path.join(tmp, "in.json")
    with open(inp, "w") as f:
        f.write("{}")
    args = [peri, "isolate", "run", "--runner", "LOADER", "--scope", "s", "--digest", "0" * 64,
            "--program", wasm, "--input", inp]
    rc, out, err = run(args)
    check(rc == 1 and out == "" and err == "运行产物无效：不是有效的 Base64\n",
          "isolate run on a pipe: the contract text alone: %d %r" % (rc, err))
    rc, out, err = run_tty_stderr(args)
    lines = err.replace("\r\n", "\n").split("\n")
    check(rc == 1 and lines[0] == "运行产物无效：不是有效的 Base64" and "not Base64" in lines[1]
          and "base64 -w0" in lines[1], "isolate run on a terminal: English beside: %r" % err)


def s_place(peri, fixtures, tmp, **_):
    def req(obj, name="r.json"):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return path

    missing = os.path.join(tmp, "gone.wasm")
    rc, out, err = run([peri, "place", "run", req({"run_id": "m", "program": {"wasm": missing}})])
    check(rc == 1 and out == "" and missing in err and "No such file" in err,
          "place run with a missing module fails before running: %d %r %r" % (rc, out, err))
    src = os.path.join(tmp, "prog.c")
    with open(src, "w") as f:
        f.write("int main(void) { return 0; }\n")
    rc, out, err = run([peri, "place", "run", req({"run_id": "c", "program": {"wasm": src}})])
    check(rc == 1 and out == "" and "not a WebAssembly module" in err,
          "place run with C source as the module: %d %r" % (rc, err))
    probe = os.path.join(fixtures, "probe.wasm")
    rc, out, err = run([peri, "place", "run", req({"run_id": "f", "program": {"wasm": probe,
                                                                               "args": ["fail"]}})])
    res = [json.loads(l)["result"] for l in out.splitlines() if l.startswith('{"result"')]
    check(rc == 3 and res and res[0]["ok"] is False,
          "place run whose result is ok:false exits 3: %d %r %r" % (rc, res, err))
    rc, out, err = run([peri, "place", "run", req({"run_id": "h", "program": {
        "wasm": os.path.join(fixtures, "hello.wasm")}})])
    res = [json.loads(l)["result"] for l in out.splitlines() if l.startswith('{"result"')]
    check(rc == 0 and res and res[0]["ok"] is True, "place run ok:true exits 0: %d %r" % (rc, err))
    rc, _, err = run([peri, "place", "run", req({"run_id": "u", "program": {"shell": "true"},
                                                 "requirements": ["shel"]})])
    check(rc == 1 and "unknown feature" in err and "shell" in err and "network" in err,
          "unknown feature lists the valid ones: %r" % err)
    rc, _, err = run([peri, "place"])
    check(rc == 2 and err.startswith("peri place: run or decide is missing\n"),
          "place alone: %r" % err[:200])
    rc, _, err = run([peri, "place", "run"])
    check(rc == 2 and err.startswith("peri place: the request file"), "place run alone: %r"
          % err[:200])
    rc, _, err = run([peri, "place", "run", "--native", "maybe", "x.json"])
    check(rc == 2 and err.startswith('peri place: --native wants yes, no or auto, got "maybe"'),
          "place --native bad: %r" % err[:200])
    rc, out, _ = run([peri, "place", "--help"])
    check(rc == 0 and "Exit status" in out and "ok:false" in out, "place --help: %r" % out)


def s_settings(peri, tmp, **_):
    home = os.path.join(tmp, "home")
    os.makedirs(os.path.join(home, ".peri"))
    path = os.path.join(home, ".peri", "settings.json")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    db = os.path.join(tmp, "x.db")

    def acp(text, extra=()):
        with open(path, "w") as f:
            f.write(text)
        rc, out, err = run([peri, "acp", "--db", db] + list(extra), stdin=b"", env=env,
                           cwd=tmp, timeout=60)
        check("settings: settings:" not in err, "doubled prefix: %r" % err)
        return rc, err

    rc, err = acp('{"modle": "openai:gpt-4o-mini", "maxStpes": 5}')
    check(rc == 0, "unknown keys are warnings, not errors: %d %r" % (rc, err))
    check('unknown key "modle" (did you mean "model"?)' in err and path in err,
          "did you mean model: %r" % err)
    check('unknown key "maxStpes" (did you mean "maxSteps"?)' in err, "did you mean maxSteps: %r" % err)
    rc, err = acp('{"providers": {"openai": {"baseURL": "http://x"}}, "zzz": 1}')
    check(rc == 0 and 'providers.openai: unknown key "baseURL" (did you mean "baseUrl"?)' in err
          and 'unknown key "zzz" is ignored (known keys: model,' in err, "nested keys: %r" % err)
    rc, err = acp('{"model": "openai:m",\n "maxSteps": 5,\n}')
    check(rc == 1 and path + ":3:1: not valid JSON" in err, "broken JSON: line and column: %r" % err)
    rc, err = acp('{"maxSteps": "50", "sandbox": {"network": "yes"}, "models": [{"id": "gpt"}]}')
    check(rc == 1 and "maxSteps: must be a positive integer, not a string" in err
          and "sandbox.network: must be true (own network namespace), false, or \"host\"" in err
          and "models[0].id: must look like provider:model" in err
          and "3 settings to fix" in err, "types checked, every field named: %r" % err)
    rc, err = acp('[1]')
    check(rc == 1 and "settings must be an object" in err, "not an object: %r" % err)
    # the TUI says it before taking the screen (its agent's stderr goes to a log)
    with open(path, "w") as f:
        f.write('{"maxSteps": true}')
    rc, out = run_tty_all([peri, "tui", "--db", db], env=dict(env, TERM="xterm"), cwd=tmp)
    check(rc == 1 and "maxSteps: must be a positive integer, not a boolean" in out
          and "peri tui: " + path in out, "tui with broken settings: %r %r" % (rc, out[-600:]))
    # --settings FILE is checked the same way
    other = os.path.join(tmp, "s.json")
    with open(other, "w") as f:
        f.write('{"contextBudget": 0}')
    rc, err = acp("{}", ["--settings", other])
    check(rc == 1 and other in err and "contextBudget: must be a positive integer" in err,
          "--settings checked: %r" % err)
    rc, err = acp('{"model": "openai:m", "maxRetries": 0, "permissions": {"allow": ["write"]},'
                  ' "sandbox": {"mode": "off"}, "mcpServers": {"x": {"command": "true"}}}')
    check(rc == 0 and err == "", "valid settings pass silently: %d %r" % (rc, err))


def s_print(peri, mock_py, fixtures, **_):
    from acp_harness import Env
    E = Env(peri, mock_py)
    try:
        E.settings({"maxRetries": 0})
        E.mock.script([
            {"text": ["Let me", " look."],
             "tool_calls": [{"id": "t1", "name": "todo", "arguments": {"todos": [
                 {"content": "Look", "status": "completed"}]}}]},
            {"text": ["No files ", "over 1 MB."]},
        ])
        rc, out, err = run([peri, "print", "find big files", "--cwd", E.cwd, "--db", E.db],
                           env=E.env(), timeout=120)
        check(rc == 0 and out == "Let me look.\nNo files over 1 MB.\n",
              "print joins the parts of one message, separates messages: %d %r %r"
              % (rc, out, err[-500:]))
        # an error: nothing on stdout, not even an empty line; the reason on stderr
        E.mock.script([{"status": 400, "error_body": {"error": {"message": "bad request"}}}])
        rc, out, err = run([peri, "print", "hello", "--cwd", E.cwd, "--db", E.db],
                           env=E.env(), timeout=120)
        check(rc == 1 and out == "" and err.strip() != "", "print on error: %d %r %r"
              % (rc, out, err[-500:]))
        # the run tool's result keeps the contract's text; a terminal gets the English beside
        shutil.copy(os.path.join(fixtures, "probe.wasm"), E.cwd)
        spin = [{"tool_calls": [{"id": "r1", "name": "run",
                                 "arguments": {"wasm": "probe.wasm", "args": ["loop"]}}]},
                {"text": "stopped"}]
        args = [peri, "print", "spin", "--cwd", E.cwd, "--db", E.db]
        E.mock.script(spin)
        rc, out, err = run_tty_stderr(args, env=E.env())
        # the CPU limit; the wall-clock one when the machine is starved
        check(rc == 0 and out == "stopped\n"
              and re.search("\\| error: 隔离运行失败：(CPU 时间|运行时间)超过 [0-9]+ ms", err)
              and re.search("\\|   \\(stopped after [0-9]+ ms of (CPU|wall-clock) time", err),
              "print on a terminal: contract text and English: %d %r %r" % (rc, out, err[-600:]))
        E.mock.script(spin)
        rc, out, err = run(args, env=E.env())
        check(rc == 0 and re.search("隔离运行失败：(CPU 时间|运行时间)超过", err)
              and "stopped after" not in err,
              "print to a pipe: the contract text alone: %d %r" % (rc, err[-600:]))
        # a question to the user: nobody can answer it here; declined, said on stderr
        E.mock.script([{"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {
                            "question": "Which one?", "options": ["red", "blue"]}}]},
                       {"text": "went on"}])
        rc, out, err = run([peri, "print", "ask me", "--cwd", E.cwd, "--db", E.db, "--allow"],
                           env=E.env(), timeout=120)
        check(rc == 0 and out.endswith("went on\n") and "[question] Which one?: declined" in err,
              "print declines a question: %d %r %r" % (rc, out, err[-500:]))
        reqs = json.dumps(E.mock.requests()[-1]["body"])
        check("declined" in reqs.lower(), "the model is told the question was declined: %s"
              % reqs[-600:])
        rc, out, err = run([peri, "print"], env=E.env())
        check(rc == 2 and err.startswith("peri print: the prompt is missing\n"),
              "print without a prompt: %r" % err[:200])
        # an MCP server's log messages reach stderr with their control characters shown,
        # not sent: no window title, no cleared screen, no forged line; Chinese kept
        E.settings({"maxRetries": 0, "mcpServers": {"evil": {
            "command": sys.executable, "args": [os.path.join(HERE, "mcp_log_server.py")]}}})
        E.mock.script([{"tool_calls": [{"id": "h1", "name": "mcp__evil__hello",
                                        "arguments": {}}]}, {"text": "done"}])
        rc, out, err = run([peri, "print", "say hello", "--cwd", E.cwd, "--db", E.db, "--allow"],
                           env=E.env(), timeout=120)
        shown = ("peri: mcp[evil]: error: \\x1b]0;PWNED-TITLE\\x07\\x1b[2J\\x1b[31mFAKE: all good"
                 "\\nperi: forged line\\r\\xc2\\x9b2J 中文\n")
        check(rc == 0 and out == "done\n" and shown in err
              and "peri: mcp[evil]: \\x1b[8mwarning: " in err,
              "print shows a server's log message visibly: %d %r %r" % (rc, out, err[-1500:]))
        check(not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", err)
              and not re.search("^peri: forged", err, re.M),
              "control characters of a server's log reached the terminal: %r" % err[-1500:])
        # the answer itself: to a terminal its control characters are shown, never sent
        # (no window title, clipboard write or colour); to a pipe it is the output as is
        hostile = "hi \x1b]0;PWNED\x07 \x1b]52;c;cHduZWQ=\x07\x1b[31mred\x1b[0m\n中文\tx"
        E.settings({"maxRetries": 0})
        E.mock.script([{"text": [hostile]}])
        rc, out, err = run_tty([peri, "print", "say it", "--cwd", E.cwd, "--db", E.db],
                               env=E.env(), stream="stdout")
        check(rc == 0 and not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)
              and "hi \\x1b]0;PWNED\\x07 \\x1b]52;c;cHduZWQ=\\x07\\x1b[31mred\\x1b[0m\n中文\tx"
              in out, "print to a terminal shows the answer's control characters: %d %r %r"
              % (rc, out, err[-500:]))
        E.mock.script([{"text": [hostile]}])
        rc, out, err = run([peri, "print", "say it", "--cwd", E.cwd, "--db", E.db],
                           env=E.env(), timeout=120)
        check(rc == 0 and out == hostile + "\n", "print to a pipe writes the answer as is: %d %r"
              % (rc, out))
    finally:
        E.cleanup()


def s_ruby(peri, ruby_wasm, tmp, **_):
    script = os.path.join(tmp, "echo.rb")
    with open(script, "w") as f:
        f.write('data = $stdin.read\nputs "got: #{data.upcase}"\n')
    env = dict(os.environ, PERI_RUBY_WASM=ruby_wasm)
    t0 = time.monotonic()
    rc, out, err = run([peri, "ruby", script], stdin=b"piped text\n", env=env, timeout=300)
    dt = time.monotonic() - t0
    check(rc == 0 and out == "got: PIPED TEXT\n", "piped stdin reaches the script: %d %r %r"
          % (rc, out, err))
    notes = err.count("starting Ruby")
    # a pipe: one line at most, and only when the boot took over a second
    if dt > 2.0:
        check(notes == 1 and "\r" not in err, "one progress line on a pipe after %.1f s: %r"
              % (dt, err))
    elif dt < 0.9:
        check(notes == 0, "no progress note for a %.1f s run: %r" % (dt, err))
    t0 = time.monotonic()
    rc, out, err = run_tty_stderr([peri, "ruby", "--stdin", script, script], env=env,
                                  timeout=300)
    dt = time.monotonic() - t0
    check(rc == 0 and out.startswith("got: DATA = $STDIN.READ"), "--stdin FILE: %d %r" % (rc, out))
    if dt > 2.0:
        check("starting Ruby" in err and err.endswith("\r\x1b[K"),
              "the terminal note is erased at the end: %r" % err[-200:])
    loop = os.path.join(tmp, "loop.rb")
    with open(loop, "w") as f:
        f.write("loop {}\n")
    rc, out, err = run([peri, "ruby", "--cpu-ms", "100", loop], stdin=b"", env=env, timeout=300)
    check(rc == 1 and "CPU time" in err and "100 ms" in err and loop in err
          and not has_cjk(err), "ruby CPU limit in English, non-zero exit: %d %r" % (rc, err))
    rc, _, err = run([peri, "ruby", "--cpu-ms", "5000", loop], env=env)
    check(rc == 2 and err.startswith('peri ruby: --cpu-ms wants 1..1000'), "ruby bad cpu: %r"
          % err[:200])
    rc, _, err = run([peri, "ruby"], env=env)
    check(rc == 2 and err.startswith("peri ruby: the script (SCRIPT.rb) is missing\n"),
          "ruby without a script: %r" % err[:200])
    rc, _, err = run([peri, "ruby", "--wasm", os.path.join(tmp, "none.wasm"), loop], env=env)
    check(rc == 1 and "none.wasm" in err and "scripts/deps.sh" in err,
          "ruby without its build: %r" % err)
    # the build is found in $PERI_CACHE_DIR, as scripts/deps.sh puts it there
    cache = os.path.join(tmp, "moved-cache")
    os.makedirs(os.path.join(cache, "ruby-3.4-wasm-wasi-2.10.1"))
    os.symlink(ruby_wasm, os.path.join(cache, "ruby-3.4-wasm-wasi-2.10.1", "ruby+stdlib.wasm"))
    env2 = {k: v for k, v in os.environ.items() if k != "PERI_RUBY_WASM"}
    env2.update(PERI_CACHE_DIR=cache, HOME=os.path.join(tmp, "nohome"))
    rc, out, err = run([peri, "ruby", script], stdin=b"x\n", env=env2, timeout=300)
    check(rc == 0 and out == "got: X\n", "ruby from $PERI_CACHE_DIR: %d %r %r" % (rc, out, err))
    env2["PERI_CACHE_DIR"] = os.path.join(tmp, "empty-cache")
    rc, _, err = run([peri, "ruby", loop], env=env2)
    check(rc == 1 and "empty-cache/ruby-3.4-wasm-wasi-2.10.1" in err,
          "a missing build names the cache it looked in: %r" % err[:300])


SCENARIOS = {"version": s_version, "run": s_run, "isolate": s_isolate, "place": s_place,
             "settings": s_settings, "print": s_print, "ruby": s_ruby}


def main():
    if len(sys.argv) != 7 or sys.argv[6] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        return 2
    peri, version, fixtures, mock_py, ruby_wasm, name = sys.argv[1:]
    peri = os.path.abspath(peri)
    if name == "ruby" and not os.path.exists(ruby_wasm):
        ci = os.environ.get("CI") == "true"
        print(("FAIL" if ci else "SKIP") + ": Ruby's WebAssembly build is missing (" +
              ruby_wasm + "; scripts/deps.sh fetches it)")
        return 1 if ci else 77
    tmp = tempfile.mkdtemp(prefix="peri-cli-user-")
    try:
        SCENARIOS[name](peri=peri, version=version, fixtures=fixtures, mock_py=mock_py,
                        ruby_wasm=ruby_wasm, tmp=tmp)
    except Exception as e:  # a crash of the test is a failure, with its reason
        import traceback
        traceback.print_exc()
        failures.append(repr(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("PASS " + name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
