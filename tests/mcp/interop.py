#!/usr/bin/env python3
"""interop.py: MCP interop with real npm servers and the MCP Inspector CLI.

usage: interop.py PERI_BINARY MCP_PROBE SCENARIO

The npm packages are pinned in tests/mcp/npm/package-lock.json (sha512 integrity) and
installed by scripts/deps.sh into $PERI_NPM_DIR (default ~/.cache/peri-c/npm). When they
are missing the test skips (exit 77) with a message, except under CI=true where it
FAILS. Exit 0 = pass, 1 = fail, 77 = skipped.

Scenarios:
  everything_stdio  server-everything over stdio: list, ping, echo, get-sum (the "add"
                    tool of this version), get-tiny-image, a long-running tool with
                    progress, cancel mid-call; no server process left after close
  everything_http   the same over streamable HTTP (Mcp-Session-Id, SSE answers)
  everything_sse    the same over the legacy HTTP+SSE transport
  filesystem        server-filesystem over stdio: list, read inside, refused outside
  inspector         the MCP Inspector CLI lists `peri mcp workspace` tools, calls write
                    and read, and sees path escapes refused
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import Fail, check, missing_dependency, procs_with  # noqa: E402

NPM_DIR = os.environ.get("PERI_NPM_DIR", os.path.expanduser("~/.cache/peri-c/npm"))
MODS = os.path.join(NPM_DIR, "node_modules", "@modelcontextprotocol")
EVERYTHING = os.path.join(MODS, "server-everything", "dist", "index.js")
FILESYSTEM = os.path.join(MODS, "server-filesystem", "dist", "index.js")
INSPECTOR = os.path.join(MODS, "inspector-cli", "build", "index.js")
PINNED = {"server-everything": "2026.8.31", "server-filesystem": "2026.8.31",
          "inspector-cli": "1.0.3"}


def need_packages():
    """None when every pinned package is installed, else why not."""
    if not shutil.which("node"):
        return "node is not installed"
    try:
        ver = subprocess.run(["node", "--version"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
        major = int(ver.lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError):
        ver, major = "unknown", 0
    if major < 20:
        return ("node %s is older than 20, which the pinned MCP packages need "
                "(scripts/deps.sh installs one into ~/.cache/peri/node; `make test` puts it on PATH)"
                % ver)
    for name, ver in PINNED.items():
        pj = os.path.join(MODS, name, "package.json")
        try:
            got = json.load(open(pj))["version"]
        except (OSError, ValueError, KeyError):
            return "%s is not installed in %s (run scripts/deps.sh)" % (name, NPM_DIR)
        if got != ver:
            return "%s is %s, pinned %s (run scripts/deps.sh)" % (name, got, ver)
    return None


def probe(probe_bin, conn, actions, timeout=90):
    p = subprocess.run([probe_bin] + conn + actions, capture_output=True, timeout=timeout)
    lines = [json.loads(l) for l in p.stdout.decode().splitlines() if l.strip()]
    check(lines and lines[0].get("connect"), "connect failed: %r\n%s"
          % (lines[:1], p.stderr.decode()[-2000:]))
    check(lines[-1].get("closed"), "probe did not close cleanly: %s" % p.stderr.decode()[-2000:])
    return lines[1:-1], lines[-1], p.stderr.decode()


EVERYTHING_ACTIONS = [
    "list", "ping",
    "call", "echo", '{"message":"hello interop"}',
    "call", "get-sum", '{"a":2,"b":40}',
    "call", "get-tiny-image", "{}",
    "progress", "trigger-long-running-operation", '{"duration":2,"steps":4}',
    "cancel", "700", "trigger-long-running-operation", '{"duration":30,"steps":30}',
    "call", "echo", '{"message":"still alive after cancel"}',
    "request", "resources/list", "{}",
]


def check_everything(out):
    tools, ping, echo, add, img, prog, canc, echo2, res = out
    for t in ("echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"):
        check(t in tools["tools"], "tool %s missing: %r" % (t, tools))
    check(ping["status"] == 0 and ping["result"] == {}, "ping %r" % ping)
    check(echo["status"] == 0 and echo["text"] == "Echo: hello interop", "echo %r" % echo)
    check(add["status"] == 0 and "42" in add["text"], "get-sum %r" % add)
    imgs = [c for c in img["acp"] if c["content"]["type"] == "image"]
    check(imgs and imgs[0]["content"]["mimeType"] == "image/png" and
          len(imgs[0]["content"]["data"]) > 100, "image not mapped to ACP: %r" % img["acp"])
    check(prog["status"] == 0 and not prog["isError"], "long-running %r" % prog)
    steps = [p["progress"] for p in prog["progress"]]
    check(steps == [1.0, 2.0, 3.0, 4.0] and prog["progress"][0]["total"] == 4.0,
          "progress notifications %r" % prog["progress"])
    check(canc["status"] == 1 and canc["elapsed_ms"] < 5000, "cancel mid-call %r" % canc)
    check(echo2["status"] == 0 and "still alive" in echo2["text"], "after cancel %r" % echo2)
    check(res["status"] == 0 and "resources" in res["result"], "resources/list %r" % res)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_server(mode):
    port = free_port()
    env = dict(os.environ, PORT=str(port))
    p = subprocess.Popen(["node", EVERYTHING, mode], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p, port
        except OSError:
            if p.poll() is not None or time.monotonic() > deadline:
                p.kill()
                raise Fail("server-everything %s did not start: %s"
                           % (mode, p.stderr.read().decode()[-1000:]))
            time.sleep(0.1)


def s_everything_stdio(peri, probe_bin, tmp):
    out, closed, err = probe(probe_bin, ["--stdio", "node", EVERYTHING, "stdio", "--"],
                             EVERYTHING_ACTIONS)
    check_everything(out)
    check(not procs_with(EVERYTHING + " stdio"), "server process left after close")
    check("peri: mcp[probe]:" in err, "server stderr not logged with its name")


def everything_over_http(probe_bin, mode, flag, path):
    """server-everything started in mode, probed over flag at http://127.0.0.1:PORT/path."""
    p, port = http_server(mode)
    try:
        out, closed, _ = probe(probe_bin, [flag, "http://127.0.0.1:%d/%s" % (port, path)],
                               EVERYTHING_ACTIONS)
        check_everything(out)
    finally:
        p.kill()
        p.wait()


def s_everything_http(peri, probe_bin, tmp):
    everything_over_http(probe_bin, "streamableHttp", "--http", "mcp")


def s_everything_sse(peri, probe_bin, tmp):
    everything_over_http(probe_bin, "sse", "--sse", "sse")


def s_filesystem(peri, probe_bin, tmp):
    root = os.path.join(tmp, "fsroot")
    os.makedirs(root)
    open(os.path.join(root, "hello.txt"), "w").write("fs-interop-data\n")
    out, closed, _ = probe(probe_bin, ["--stdio", "node", FILESYSTEM, root, "--"], [
        "list",
        "call", "read_text_file", json.dumps({"path": os.path.join(root, "hello.txt")}),
        "call", "read_text_file", '{"path":"/etc/hostname"}',
        "call", "write_file", json.dumps({"path": os.path.join(root, "new.txt"),
                                          "content": "written via mcp"})])
    tools, rd, outside, wr = out
    check("read_text_file" in tools["tools"] and "write_file" in tools["tools"],
          "filesystem tools %r" % tools)
    check(rd["status"] == 0 and rd["text"] == "fs-interop-data\n", "read %r" % rd)
    check(outside["isError"] and "denied" in outside["text"].lower(), "outside %r" % outside)
    check(wr["status"] == 0 and not wr["isError"], "write %r" % wr)
    check(open(os.path.join(root, "new.txt")).read() == "written via mcp", "file not written")
    check(not procs_with(FILESYSTEM), "filesystem server left after close")


def inspector(peri, root, *args):
    # inspector-cli 1.0.3 reads "../package.json" relative to the process cwd.
    p = subprocess.run(["node", INSPECTOR, peri, "mcp", "workspace", "--root", root] +
                       list(args), capture_output=True, timeout=60,
                       cwd=os.path.dirname(INSPECTOR))
    check(p.returncode == 0, "inspector %r failed: %s %s" % (args, p.stdout.decode()[-500:],
                                                             p.stderr.decode()[-1500:]))
    return json.loads(p.stdout)


def s_inspector(peri, probe_bin, tmp):
    root = os.path.join(tmp, "wsroot")
    os.makedirs(root)
    outside = os.path.join(tmp, "outside.txt")
    tools = inspector(peri, root, "--method", "tools/list")
    names = [t["name"] for t in tools["tools"]]
    for t in ("read", "write", "edit", "list", "glob", "grep", "shell"):
        check(t in names, "inspector: tool %s missing from %r" % (t, names))
    w = inspector(peri, root, "--method", "tools/call", "--tool-name", "write",
                  "--tool-arg", "path=notes.txt", "content=via inspector")
    check(not w.get("isError"), "write %r" % w)
    check(open(os.path.join(root, "notes.txt")).read() == "via inspector", "file not written")
    r = inspector(peri, root, "--method", "tools/call", "--tool-name", "read",
                  "--tool-arg", "path=notes.txt")
    check(not r.get("isError") and "via inspector" in r["content"][0]["text"], "read %r" % r)
    for bad in ("../outside.txt", outside):
        e = inspector(peri, root, "--method", "tools/call", "--tool-name", "write",
                      "--tool-arg", "path=" + bad, "content=x")
        check(e.get("isError") and e["content"][0]["text"] ==
              "path escapes the workspace: " + bad, "escape %s not refused: %r" % (bad, e))
    check(not os.path.exists(outside), "escaping write happened")
    os.symlink("/etc", os.path.join(root, "etc-link"))
    e = inspector(peri, root, "--method", "tools/call", "--tool-name", "read",
                  "--tool-arg", "path=etc-link/hostname")
    check(e.get("isError") and "path escapes the workspace" in e["content"][0]["text"],
          "symlink escape not refused: %r" % e)


SCENARIOS = {"everything_stdio": s_everything_stdio, "everything_http": s_everything_http,
             "everything_sse": s_everything_sse, "filesystem": s_filesystem,
             "inspector": s_inspector}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        return 2
    peri, probe_bin, name = sys.argv[1:]
    why = need_packages()
    if why:
        return missing_dependency("%s: npm MCP packages missing: %s" % (name, why))
    tmp = tempfile.mkdtemp(prefix="peri-mcp-")
    try:
        SCENARIOS[name](peri, probe_bin, tmp)
    except (Fail, subprocess.TimeoutExpired, ValueError) as e:
        print("FAIL %s: %s" % (name, e))
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS " + name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
