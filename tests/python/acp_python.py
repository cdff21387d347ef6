#!/usr/bin/env python3
"""acp_python.py: Python through the ACP `run` tool, end to end.

usage: acp_python.py PERI_BINARY MOCK_MODEL_PY PYTHON_DIR

Built on tests/lib/acp_harness.py (private HOME, tests/host/mock_model.py, `peri acp`).
Checks:
  - {"python": ...} runs in the room without asking permission: right stdout, returned
    files, stdin, and _meta["peri.placement"] says wasm_room;
  - importing a module that is not installed fails in the room as an ordinary
    ModuleNotFoundError: still the room, no permission request (never a promotion);
  - `import numpy` (a known native extension) asks permission for the native sandbox;
  - an endless loop ends at the CPU limit with the contract's message;
  - a script importing subprocess is placed in the native sandbox at L1 (Debian's
    python3 there) after exactly one permission request.
Exit 0 pass, 1 fail, 77 skipped (never under CI=true).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import Env, check, missing_dependency, prompt, run_scenario  # noqa: E402

PYDIR = None


def finals(a, sid, since):
    return [u for _, u in a.updates(sid, since) if u["sessionUpdate"] == "tool_call_update"
            and u.get("status") in ("completed", "failed")]


def tool_turn(E, a, sid, calls, timeout=120):
    t0 = time.monotonic()
    E.mock.script([{"tool_calls": calls}, {"text": "done"}])
    r = a.response(prompt(a, sid, "go"), timeout=timeout)
    return r, finals(a, sid, t0), t0


def perms_since(a, t0):
    return [f for t, f in a.log if f.get("method") == "session/request_permission" and t >= t0]


def placement(u):
    return u.get("_meta", {}).get("peri.placement", {})


def scenario(E):
    a = E.agent(PERI_PYTHON_DIR=PYDIR)
    sid = E.new_session(a)
    a.permission_answer = "reject_once"  # the room must not ask
    script = ("import json, sys\n"
              "print(json.dumps({'sum': sum(range(11))}))\n"
              "open('/响应/r.txt', 'w').write('ok')\n"
              "print(open('/请求/a.txt').read().upper(), len(sys.stdin.read()))\n")
    r, fin, t0 = tool_turn(E, a, sid, [
        {"id": "py", "name": "run", "arguments": {"python": script, "files": {"/请求/a.txt": "abc"},
                                                  "stdin": "12345"}},
        {"id": "np", "name": "run", "arguments": {"python": "import leftpad_not_installed\n"}},
    ], timeout=300)
    check(r.get("result") == {"stopReason": "end_turn"}, "run turn %r" % r)
    by = {u["toolCallId"]: u for u in fin}
    out = by["py"]["rawOutput"]
    check(by["py"]["status"] == "completed" and out["stdout"] == '{"sum": 55}\nABC 5\n',
          "python result %r" % by["py"])
    check(out["files"] == {"/响应/r.txt": "ok"}, "returned file %r" % out)
    check(placement(by["py"]).get("backend") == "wasm_room", "placement %r" % placement(by["py"]))
    np = by["np"]
    text = json.dumps(np, ensure_ascii=False)
    check("ModuleNotFoundError: No module named 'leftpad_not_installed'" in text,
          "import error %r" % np)
    meta = placement(np)
    check(meta.get("backend") == "wasm_room", "import error placement %r" % meta)
    check("native_sandbox" not in json.dumps(meta), "an ImportError was promoted: %r" % meta)
    check(not perms_since(a, t0), "the room asked permission")

    # numpy is a known native extension: native at L1, so it asks (and is refused here)
    r, fin, t0 = tool_turn(E, a, sid, [{"id": "nu", "name": "run",
                                        "arguments": {"python": "import numpy\n"}}])
    check(len(perms_since(a, t0)) == 1 and fin[0]["status"] == "failed" and
          "rejected" in json.dumps(fin[0]), "numpy should ask and be refused: %r" % fin[0])

    # an endless loop: the CPU limit, with the contract's message
    r, fin, t0 = tool_turn(E, a, sid, [{"id": "sp", "name": "run",
                                        "arguments": {"python": "while True:\n    pass\n"}}])
    limit = json.dumps(fin[0], ensure_ascii=False)
    check(fin[0]["status"] == "failed" and ("CPU 时间超过" in limit or "运行时间超过" in limit),
          "cpu limit %r" % fin[0])

    # subprocess: native at L1, after one permission request
    a.permission_answer = "allow_once"
    r, fin, t0 = tool_turn(E, a, sid, [{"id": "sub", "name": "run", "arguments": {"python":
        "import subprocess\n"
        "print(subprocess.run(['echo', 'from-subprocess'], capture_output=True, text=True).stdout,"
        " end='')\n"}}])
    check(r.get("result") == {"stopReason": "end_turn"}, "native turn %r" % r)
    check(len(perms_since(a, t0)) == 1, "the native run should ask permission once")
    meta = placement(fin[0])
    check(meta.get("backend") == "native_sandbox", "subprocess placement %r" % meta)
    check("required_native_feature" in json.dumps(meta), "reason %r" % meta)
    check(fin[0]["rawOutput"].get("stdout") == "from-subprocess\n", "native output %r" % fin[0])
    check(a.close_stdin() == 0, "exit")


def main():
    global PYDIR
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    peri, mock_py, PYDIR = sys.argv[1:]
    if not os.path.exists(os.path.join(PYDIR, "python.wasm")):
        return missing_dependency("CPython's WASI build is missing in %s (scripts/deps.sh)" % PYDIR)
    if not os.path.exists("/usr/bin/bwrap") or not os.path.exists("/usr/bin/python3"):
        return missing_dependency("bubblewrap or /usr/bin/python3 is not installed")
    return run_scenario("python", scenario, lambda: Env(peri, mock_py))


if __name__ == "__main__":
    sys.exit(main())
