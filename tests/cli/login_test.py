#!/usr/bin/env python3
"""login_test.py PERI: `peri login` keeps a provider's API key in ~/.peri/settings.json
(mode 0600, other entries kept), reads it from stdin (never from the command line),
refuses a symlinked settings file and unknown providers, and a kept key is what a later
`peri print` uses. Exit 0 pass, 1 fail."""
import json
import os
import stat
import subprocess
import sys
import tempfile

peri = sys.argv[1]
bad = []


def check(cond, what):
    if not cond:
        bad.append(what)
        print("FAIL: " + what)


def login(home, args, key):
    return subprocess.run([peri, "login"] + args, input=key, capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": home})


with tempfile.TemporaryDirectory() as home:
    os.makedirs(os.path.join(home, ".peri"))
    settings = os.path.join(home, ".peri", "settings.json")
    with open(settings, "w") as f:
        json.dump({"model": "openai:gpt-4o-mini", "maxRetries": 0}, f)
    r = login(home, ["openai"], "sk-one\n")
    check(r.returncode == 0, "login openai: rc %d %s" % (r.returncode, r.stderr))
    doc = json.load(open(settings))
    check(doc.get("providers", {}).get("openai", {}).get("apiKey") == "sk-one", "key not kept: %r" % doc)
    check(doc.get("model") == "openai:gpt-4o-mini" and doc.get("maxRetries") == 0, "other entries lost: %r" % doc)
    check(stat.S_IMODE(os.stat(settings).st_mode) == 0o600, "mode %o" % stat.S_IMODE(os.stat(settings).st_mode))
    check("sk-one" not in r.stdout + r.stderr, "the key was printed")
    r = login(home, ["anthropic"], "  sk-ant-two  \n")
    doc = json.load(open(settings))
    check(r.returncode == 0 and doc["providers"]["anthropic"]["apiKey"] == "sk-ant-two"
          and doc["providers"]["openai"]["apiKey"] == "sk-one", "second provider: %r" % doc)
    r = login(home, ["openai"], "")
    check(r.returncode == 1 and "no key" in r.stderr, "empty key: rc %d %s" % (r.returncode, r.stderr))
    check(json.load(open(settings))["providers"]["openai"]["apiKey"] == "sk-one", "an empty login changed the key")
    r = login(home, ["gemini"], "k\n")
    check(r.returncode == 2 and "unknown provider" in r.stderr, "unknown provider: rc %d" % r.returncode)
    r = login(home, ["openai", "sk-on-the-command-line"], "")
    check(r.returncode == 2, "a key on the command line must be refused: rc %d" % r.returncode)
    # ACP's terminal login: the client appends the method's args to its `peri acp` command
    r = subprocess.run([peri, "acp", "--cwd", home, "--login", "anthropic"], input="sk-ant-3\n",
                       capture_output=True, text=True, timeout=60,
                       env={"PATH": "/usr/bin:/bin", "HOME": home})
    doc = json.load(open(settings))
    check(r.returncode == 0 and doc["providers"]["anthropic"]["apiKey"] == "sk-ant-3"
          and r.stdout.startswith("peri login:"), "acp --login: rc %d %r %r" % (r.returncode, r.stdout, r.stderr))
    r = subprocess.run([peri, "acp", "--login", "gemini"], input="k\n", capture_output=True,
                       text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": home})
    check(r.returncode == 2, "acp --login with an unknown provider: rc %d" % r.returncode)

with tempfile.TemporaryDirectory() as home:
    os.makedirs(os.path.join(home, ".peri"))
    target = os.path.join(home, "elsewhere.json")
    with open(target, "w") as f:
        f.write("{}")
    os.symlink(target, os.path.join(home, ".peri", "settings.json"))
    r = login(home, ["openai"], "sk-x\n")
    check(r.returncode == 1, "a symlinked settings file must be refused: rc %d %s" % (r.returncode, r.stderr))
    check(open(target).read() == "{}", "the symlink's target was written")

if bad:
    sys.exit(1)
print("PASS: peri login")
