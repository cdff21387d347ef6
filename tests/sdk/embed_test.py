#!/usr/bin/env python3
"""embed_test.py: examples/embed against build/peri acp and tests/host/mock_model.py.

usage: embed_test.py EMBED PERI MOCK_MODEL_PY
Checks the streamed text and that the last line is "closed"; then a budget-0 close
while a turn hangs prints either "closed" or the incomplete error text, and exits.
Exit 0 = pass, 1 = fail (77 = skipped outside CI when python cannot run the mock).
"""
import json, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import Fail, Mock, base_env  # noqa: E402

embed, peri, mock_py = sys.argv[1:4]
tmp = tempfile.mkdtemp(prefix="peri-embed-")
mock = None
try:
    try:
        mock = Mock(mock_py, tmp)
    except Fail as e:
        print(e)
        sys.exit(1)
    url = mock.url
    script = mock.script

    settings = os.path.join(tmp, "settings.json")
    with open(settings, "w") as f:
        json.dump({"model": "openai:m", "closeGraceMs": 100,
                   "providers": {"openai": {"baseUrl": url + "/v1", "apiKey": "k"}}}, f)
    env = base_env(tmp)
    work = os.path.join(tmp, "work")  # HOME is tmp: a session may not run in the home itself
    os.makedirs(work)
    agent = ["--agent", peri, "acp", "--db", os.path.join(tmp, "db"), "--settings", settings,
             "--cwd", work, "--"]
    script([{"text": ["Hello ", "embed"]}])
    r = subprocess.run([embed] + agent + ["hi"], cwd=work, env=env, capture_output=True,
                       text=True, timeout=60)
    lines = r.stdout.strip().split("\n")
    ok = r.returncode == 0 and "Hello embed" in r.stdout and lines[-1] == "closed"
    if not ok:
        print("embed run 1 failed:", r.returncode, repr(r.stdout), r.stderr[-2000:])
        sys.exit(1)
    # Budget 0: exactly one close attempt; embed reports what the host said.
    script([{"text": ["a", "b", "c"], "delay_ms": 50}])
    r = subprocess.run([embed] + agent + ["--close-budget-ms", "0", "slow"], cwd=work, env=env,
                       capture_output=True, text=True, timeout=60)
    last = r.stdout.strip().split("\n")[-1]
    if not (last == "closed" or last.startswith("Session close is incomplete: ")):
        print("embed run 2 failed:", r.returncode, repr(r.stdout), r.stderr[-2000:])
        sys.exit(1)
    r = subprocess.run([embed, "--close-budget-ms"], capture_output=True, text=True, timeout=10)
    if r.returncode != 2:
        print("usage error expected")
        sys.exit(1)
    print("ok")
finally:
    if mock:
        mock.stop()
    shutil.rmtree(tmp, ignore_errors=True)
