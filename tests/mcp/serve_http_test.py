#!/usr/bin/env python3
"""mcp.serve_http.* — `peri mcp workspace --listen`: the workspace MCP server over
streamable HTTP, started for real on an ephemeral loopback port (found through
--port-file).

  protocol  initialize / Mcp-Session-Id, tools/list equal to the stdio server's, write and
            read confined to --root ("..", an absolute path and a symlink out refused),
            the shell in the native sandbox, a long call does not hold up another
            session, DELETE ends the session (then 404), an unknown session 404, GET 405
  attacks   no or a wrong token 401 (no detail), a foreign Origin or Host 403, a body
            over the bound 413, a garbage head and a bad JSON body 400, a pipelined
            flood on one connection, a world-readable --token-file refused, the
            generated token's file 0600 and removed at SIGTERM
  inspector the MCP Inspector CLI (pinned in tests/mcp/npm) over --transport http lists
            the tools and calls write/read
  client    Peri-C's own MCP client (tests/mcp/probe.c over libcurl, the streamable HTTP
            link of the session pool) with the token as a configured header: list, ping,
            read, an escape refused; without the header it does not connect (401)

usage: serve_http_test.py PERI CASE [MCP_PROBE]
"""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import missing_dependency  # noqa: E402

PERI, CASE = sys.argv[1], sys.argv[2]
TOKEN = "t0ken-for-the-serve-http-test-0123456789"
fails, checks = [], [0]


def check(cond, what):
    checks[0] += 1
    if not cond:
        fails.append(what)
        print("FAIL:", what)


top = tempfile.mkdtemp(prefix="peri-mcphttp-")
os.chmod(top, 0o755)
root = os.path.join(top, "root")
os.makedirs(root)
secret = os.path.join(top, "secret.txt")
with open(secret, "w") as f:
    f.write("outside-secret-77\n")
os.symlink(secret, os.path.join(root, "sym.txt"))
tokfile = os.path.join(top, "tok")
with open(tokfile, "w") as f:
    f.write(TOKEN + "\n")
os.chmod(tokfile, 0o600)


def start(extra=(), token_file=tokfile):
    pf = os.path.join(top, "port")
    if os.path.exists(pf):
        os.unlink(pf)
    args = [PERI, "mcp", "workspace", "--root", root, "--listen", "127.0.0.1:0",
            "--port-file", pf] + (["--token-file", token_file] if token_file else []) + list(extra)
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while not os.path.exists(pf) and p.poll() is None and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    if not os.path.exists(pf):
        p.kill()
        out, err = p.communicate()
        raise SystemExit("server did not start: " + err[-2000:])
    return p, int(open(pf).read())


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = "hung"
    err = p.stderr.read()
    check(rc == 0, "exit after SIGTERM: %r %s" % (rc, err[-500:]))
    return err


def req(port, method, body=None, headers=None, token=TOKEN, sid=None, timeout=60):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        h["Authorization"] = "Bearer " + token
    if sid:
        h["Mcp-Session-Id"] = sid
    h.update(headers or {})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    c.request(method, "/mcp", body=data, headers=h)
    r = c.getresponse()
    txt = r.read().decode()
    out = (r.status, dict((k.lower(), v) for k, v in r.getheaders()), txt)
    c.close()
    return out


def rpc(port, sid, i, method, params):
    st, hd, txt = req(port, "POST", {"jsonrpc": "2.0", "id": i, "method": method,
                                     "params": params}, sid=sid)
    try:
        return st, hd, json.loads(txt)
    except ValueError:
        return st, hd, {"raw": txt}


def initialize(port):
    st, hd, r = rpc(port, None, 1, "initialize", {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}})
    sid = hd.get("mcp-session-id")
    check(st == 200 and "result" in r and sid and len(sid) == 64, "initialize %r %r" % (st, r))
    st, _, _ = req(port, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                   sid=sid)
    check(st == 202, "notification -> %r" % st)
    return sid


def call_tool(port, sid, i, name, args):
    st, _, r = rpc(port, sid, i, "tools/call", {"name": name, "arguments": args})
    check(st == 200, "tools/call %s -> %r" % (name, st))
    res = r.get("result", {})
    return res.get("isError"), "".join(c.get("text", "") for c in res.get("content", []))


def raw(port, data, read_all=True):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(data)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
            if not read_all:
                break
    except socket.timeout:
        pass
    s.close()
    return out


def stdio_tools():
    p = subprocess.Popen([PERI, "mcp", "workspace", "--root", root], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}) + "\n")
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                              "params": {}}) + "\n")
    p.stdin.flush()
    p.stdout.readline()
    tools = json.loads(p.stdout.readline())["result"]
    p.stdin.close()
    p.wait(timeout=30)
    return tools


def case_protocol():
    if not shutil.which("bwrap"):
        sys.exit(missing_dependency("bubblewrap missing"))
    p, port = start()
    sid = initialize(port)
    st, _, r = rpc(port, sid, 2, "tools/list", {})
    check(st == 200 and r.get("result") == stdio_tools(), "tools/list differs from stdio")
    err, txt = call_tool(port, sid, 3, "write", {"path": "a.txt", "content": "hello http"})
    check(not err and open(os.path.join(root, "a.txt")).read() == "hello http", "write: " + txt)
    err, txt = call_tool(port, sid, 4, "read", {"path": "a.txt"})
    check(not err and "hello http" in txt, "read: " + txt)
    for i, bad in enumerate(["../secret.txt", secret, "sym.txt"]):
        err, txt = call_tool(port, sid, 10 + i, "read", {"path": bad})
        check(err and "outside-secret-77" not in txt, "escape %s: %s" % (bad, txt))
    err, txt = call_tool(port, sid, 20, "write", {"path": "../escaped.txt", "content": "x"})
    check(err and not os.path.exists(os.path.join(top, "escaped.txt")), "escaping write " + txt)
    marker = os.path.join(top, "outside-marker")
    st, _, r = rpc(port, sid, 21, "tools/call", {"name": "shell", "arguments": {
        "command": "touch %s; echo in > inside.txt; echo done" % marker}})
    text = json.dumps(r)
    check("native_sandbox" in text and "done" in text, "shell not sandboxed: " + text[:400])
    check(not os.path.exists(marker), "a shell write outside --root landed")
    check(os.path.exists(os.path.join(root, "inside.txt")), "a shell write inside failed")
    # a long call in one session does not hold up another session's requests
    sid2 = initialize(port)
    slow = {}

    def long_call():
        t0 = time.monotonic()
        slow["r"] = rpc(port, sid, 30, "tools/call", {"name": "shell", "arguments": {
            "command": "sleep 3; echo slept"}})
        slow["dt"] = time.monotonic() - t0
    th = threading.Thread(target=long_call)
    th.start()
    time.sleep(0.5)
    t0 = time.monotonic()
    st, _, r = rpc(port, sid2, 2, "ping", {})
    check(st == 200 and r.get("result") == {} and time.monotonic() - t0 < 2,
          "ping during a long call: %r %.1fs" % (r, time.monotonic() - t0))
    th.join(60)
    check("slept" in json.dumps(slow.get("r")) and slow.get("dt", 0) >= 2.5, "long call %r" % slow)
    # a request pipelined behind a long call on the same connection waits its turn; a
    # client that leaves during a call costs nothing
    def post(i, method, params):
        one = json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                "Mcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s"
                % (port, TOKEN, sid, len(one), one)).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(post(50, "tools/call", {"name": "shell", "arguments": {"command": "sleep 1.5; echo late"}}))
    time.sleep(0.3)
    s.sendall(post(51, "ping", {}) + b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    got = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
    s.close()
    check(got.count(b"HTTP/1.1 200 ") == 2 and got.index(b"late") < got.index(b'"id":51'),
          "pipelined behind a call: %r" % got[:300])
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(post(52, "tools/call", {"name": "shell", "arguments": {"command": "sleep 1; echo x"}}))
    time.sleep(0.2)
    s.close()
    time.sleep(1.5)
    check(rpc(port, sid, 53, "ping", {})[0] == 200, "alive after a client left mid-call")
    # GET has no stream here; DELETE ends a session; then it is unknown
    check(req(port, "GET", sid=sid)[0] == 405, "GET -> 405")
    check(req(port, "DELETE", sid=sid2)[0] == 204, "DELETE -> 204")
    check(rpc(port, sid2, 3, "ping", {})[0] == 404, "ended session -> 404")
    check(rpc(port, "f" * 64, 3, "ping", {})[0] == 404, "unknown session -> 404")
    check(rpc(port, None, 3, "ping", {})[0] == 400, "no session, not initialize -> 400")
    check(rpc(port, sid, 40, "ping", {})[0] == 200, "the other session still answers")
    stop(p)


def case_attacks():
    p, port = start()
    sid = initialize(port)
    for tok in (None, "wrong-" + TOKEN, TOKEN[:-1], TOKEN + "x"):
        st, hd, txt = req(port, "POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                          token=tok, sid=sid)
        check(st == 401 and TOKEN not in txt and "www-authenticate" in hd,
              "token %r -> %r %s" % (tok, st, txt))
    st, _, _ = req(port, "POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid=sid,
                   headers={"Origin": "http://evil.example"})
    check(st == 403, "foreign Origin -> %r" % st)
    st, _, _ = req(port, "POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid=sid,
                   headers={"Origin": "http://127.0.0.1:%d" % port})
    check(st == 200, "same Origin -> %r" % st)
    st, _, _ = req(port, "POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid=sid,
                   headers={"Host": "evil.example:%d" % port})
    check(st == 403, "rebinding Host -> %r" % st)
    # a body over the bound is refused from its head, never read
    out = raw(port, ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                     "Mcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n"
                     % (port, TOKEN, sid, 64 << 20)).encode())
    check(out.startswith(b"HTTP/1.1 413 "), "oversized body: %r" % out[:80])
    for junk in (b"GARBAGE\r\n\r\n", b"\x00\x01\x02\r\n\r\n", b"GET /mcp HTTP/1.1\nHost: x\n\n",
                 b"POST /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                 b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                 b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n x: folded\r\n\r\n",
                 b"X" * 70000):
        out = raw(port, junk)
        check(out[:13] in (b"HTTP/1.1 400 ", b"HTTP/1.1 501 ", b"HTTP/1.1 431 "),
              "garbage %r: %r" % (junk[:40], out[:80]))
    st, _, txt = req(port, "POST", b"{not json", sid=sid)
    check(st == 400 and "-32700" in txt, "bad JSON -> %r %s" % (st, txt))
    st, _, txt = req(port, "POST", b"[]", sid=sid)
    check(st == 400, "batch/array -> %r" % st)
    # many requests pipelined on one connection: every one answered, in order
    one = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    head = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
            "Mcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n" % (port, TOKEN, sid, len(one)))
    n = 300
    out = raw(port, (head + one).encode() * n + b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Connection: close\r\n\r\n")
    check(out.count(b"HTTP/1.1 200 ") == n, "pipelined: %d answers" % out.count(b"HTTP/1.1 200 "))
    # a 17th session ends the least recently used one (sid is used just below, so it stays)
    first = initialize(port)
    others = [initialize(port) for _ in range(14)]
    check(rpc(port, sid, 8, "ping", {})[0] == 200, "ping")
    extra = initialize(port)
    check(rpc(port, first, 8, "ping", {})[0] == 404, "the least recently used session ended")
    check(all(rpc(port, s2, 8, "ping", {})[0] == 200 for s2 in others + [extra]),
          "the other sessions live")
    # the server still serves after all that
    check(rpc(port, sid, 9, "ping", {})[0] == 200, "alive after the attacks")
    stop(p)
    # a token file others can read is refused
    loose = os.path.join(top, "loose")
    with open(loose, "w") as f:
        f.write(TOKEN)
    os.chmod(loose, 0o644)
    r = subprocess.run([PERI, "mcp", "workspace", "--root", root, "--listen", "127.0.0.1:0",
                        "--token-file", loose], capture_output=True, text=True, timeout=30)
    check(r.returncode != 0 and "0600" in r.stderr, "loose token file: %r" % r.stderr)
    # no --token-file: a generated token in a 0600 file, named on stderr, removed at exit
    env = dict(os.environ, TMPDIR=top)
    pf = os.path.join(top, "port")
    os.unlink(pf)
    p = subprocess.Popen([PERI, "mcp", "workspace", "--root", root, "--listen", "127.0.0.1:0",
                          "--port-file", pf], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    t0 = time.monotonic()
    while not os.path.exists(pf) and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    port = int(open(pf).read())
    found = [os.path.join(top, d, "token") for d in os.listdir(top) if d.startswith("peri-mcp-")]
    check(len(found) == 1, "generated token file %r" % found)
    if found:
        gen = open(found[0]).read().strip()
        check(os.stat(found[0]).st_mode & 0o777 == 0o600 and len(gen) == 64, "token file mode")
        st, _, _ = req(port, "POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                      "params": {"protocolVersion": "2025-06-18"}}, token=gen)
        check(st == 200, "generated token works: %r" % st)
    err = stop(p)
    check(found and found[0] in err and "Authorization: Bearer" in err, "stderr: " + err[-600:])
    check(found and not os.path.exists(found[0]), "generated token file removed at exit")


def case_inspector():
    npm = os.environ.get("PERI_NPM_DIR", os.path.expanduser("~/.cache/peri-c/npm"))
    insp = os.path.join(npm, "node_modules", "@modelcontextprotocol", "inspector-cli", "build",
                        "index.js")
    if not shutil.which("node") or not os.path.exists(insp):
        sys.exit(missing_dependency("the MCP Inspector CLI (scripts/deps.sh) is missing"))
    p, port = start()
    url = "http://127.0.0.1:%d/mcp" % port

    def inspector(*args):
        r = subprocess.run(["node", insp, url, "--transport", "http", "--header",
                            "Authorization: Bearer " + TOKEN] + list(args),
                           capture_output=True, text=True, timeout=90,
                           cwd=os.path.dirname(insp))
        check(r.returncode == 0, "inspector %r: %s %s" % (args, r.stdout[-400:], r.stderr[-800:]))
        try:
            return json.loads(r.stdout)
        except ValueError:
            return {}
    names = [t["name"] for t in inspector("--method", "tools/list").get("tools", [])]
    for t in ("read", "write", "edit", "list", "glob", "grep", "shell"):
        check(t in names, "inspector: tool %s missing from %r" % (t, names))
    w = inspector("--method", "tools/call", "--tool-name", "write", "--tool-arg",
                  "path=insp.txt", "content=via inspector over http")
    check(not w.get("isError"), "write %r" % w)
    r = inspector("--method", "tools/call", "--tool-name", "read", "--tool-arg", "path=insp.txt")
    check("via inspector over http" in json.dumps(r), "read %r" % r)
    stop(p)


def case_client():
    probe_bin = sys.argv[3]
    with open(os.path.join(root, "f.txt"), "w") as f:
        f.write("probe-read-ok\n")
    p, port = start()
    url = "http://127.0.0.1:%d/mcp" % port

    def probe(pre, *actions):
        r = subprocess.run([probe_bin] + pre + ["--http", url] + list(actions),
                           capture_output=True, text=True, timeout=90)
        return [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")], r.stderr
    out, err = probe(["--header", "Authorization", "Bearer " + TOKEN], "list", "ping",
                     "call", "read", '{"path":"f.txt"}', "call", "read", '{"path":"../tok"}')
    text = json.dumps(out)
    check(out and out[0].get("connect") and out[-1].get("closed"), "probe: %s %s" % (text, err))
    check(len(out) > 1 and "shell" in out[1].get("tools", []), "list: " + text[:300])
    check("probe-read-ok" in text, "read: " + text[:600])
    check(TOKEN not in text and "escapes the workspace" in text, "escape: " + text[:600])
    out, err = probe([], "ping")
    check(out and out[0].get("connect") is False and "401" in out[0].get("error", ""),
          "no token: %r" % out)
    stop(p)


try:
    {"protocol": case_protocol, "attacks": case_attacks, "inspector": case_inspector,
     "client": case_client}[CASE]()
finally:
    shutil.rmtree(top, ignore_errors=True)
print("%d passed, %d failed" % (checks[0] - len(fails), len(fails)))
sys.exit(1 if fails else 0)
