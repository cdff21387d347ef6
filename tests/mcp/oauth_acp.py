#!/usr/bin/env python3
"""oauth_acp.py: an OAuth-protected remote MCP server in an ACP session, end to end.

tests/mcp/oauth_server.py runs a local authorization server and a protected
streamable-HTTP MCP server. The session names the server in mcpServers; the host sends
_peri/mcp_login with the authorization URL; this test plays the user's browser (follows
the URL through the authorization server's redirect to the host's loopback listener);
the server then comes up and its tool works in a turn. The token is kept in
HOME/.peri/oauth (0600 in 0700), and a second process reuses it without a login.

usage: oauth_acp.py PERI_BINARY MOCK_MODEL_PY SCENARIO
"""
import json
import os
import re
import stat
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import check, end_agents_cleanly, prompt, scenario_main  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def start_servers():
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "oauth_server.py")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    ports = json.loads(p.stdout.readline())
    return p, ports


def no_controls(text):
    """No C0 control but newline and tab, no DEL, no C1 control."""
    return not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)


def status_of(a, sid):
    _, f = a.wait(lambda f: f.get("method") == "_peri/mcp_status" and
                  f["params"]["sessionId"] == sid, 60, "_peri/mcp_status")
    return f["params"]


def s_login(E):
    srv, ports = start_servers()
    try:
        url = "http://127.0.0.1:%d/mcp" % ports["mcp"]
        entry = {"type": "http", "name": "remote", "url": url, "headers": []}
        a = E.agent()
        r = a.result("session/new", {"cwd": E.cwd, "mcpServers": [entry]})
        sid = r["sessionId"]
        _, f = a.wait(lambda f: f.get("method") == "_peri/mcp_login", 30, "_peri/mcp_login")
        p = f["params"]
        check(p["sessionId"] == sid and p["server"] == "remote", "login params %r" % p)
        check(p["url"].startswith("http://127.0.0.1:%d/authorize?" % ports["as"]), p["url"])
        check("code_challenge_method=S256" in p["url"] and "state=" in p["url"], p["url"])
        # the browser: the authorization server redirects to the host's loopback listener
        with urllib.request.urlopen(p["url"], timeout=20) as resp:
            check(resp.status == 200 and b"logged in" in resp.read(), "callback page")
        st = status_of(a, sid)
        check(st["servers"] == [{"name": "remote", "status": "ready"}], "status %r" % st)
        E.mock.script([{"tool_calls": [{"id": "w1", "name": "mcp__remote__whoami",
                                        "arguments": {}}]}, {"text": "done"}])
        r = a.response(prompt(a, sid, "who are you?"))
        check(r.get("result") == {"stopReason": "end_turn"}, "turn %r" % r)
        tool_msgs = [m for m in E.mock.requests()[-1]["body"]["messages"] if m["role"] == "tool"]
        check(tool_msgs and "hello from the protected server" in json.dumps(tool_msgs),
              "tool result %r" % tool_msgs)
        d = os.path.join(E.home, ".peri", "oauth")
        check(stat.S_IMODE(os.stat(d).st_mode) == 0o700, "dir mode")
        files = os.listdir(d)
        check(len(files) == 1 and stat.S_IMODE(os.stat(os.path.join(d, files[0])).st_mode)
              == 0o600, "token file %r" % files)
        check(a.close_stdin() == 0, "exit")
        # a new process uses the stored token: no login
        b = E.agent()
        r = b.result("session/new", {"cwd": E.cwd, "mcpServers": [entry]})
        st = status_of(b, r["sessionId"])
        check(st["servers"] == [{"name": "remote", "status": "ready"}], "reuse %r" % st)
        check(not [f for _, f in b.log if f.get("method") == "_peri/mcp_login"], "asked again")
    finally:
        srv.stdin.close()
        srv.wait(10)


def s_cli(E):
    """`peri mcp login NAME` prints the URL, waits for the browser, stores the token;
    a session then starts the server without a login; `peri mcp logout` forgets it. A
    failed login quotes what a server answered with its control characters shown."""
    srv, ports = start_servers()
    try:
        url = "http://127.0.0.1:%d/mcp" % ports["mcp"]
        E.settings({"maxRetries": 0, "mcpServers": {"remote": {"type": "http", "url": url}}})
        p = subprocess.Popen([E.peri, "mcp", "login", "remote"], env=E.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        login = None
        for line in p.stdout:
            if line.strip().startswith("http://127.0.0.1:%d/authorize?" % ports["as"]):
                login = line.strip()
                break
        check(login, "no login URL printed")
        with urllib.request.urlopen(login, timeout=20) as resp:
            check(resp.status == 200, "callback page")
        out, err = p.communicate(timeout=30)
        check(p.returncode == 0 and "Logged in" in out, "login: %s %s" % (out, err))
        a = E.agent()
        r = a.result("session/new", {"cwd": E.cwd, "mcpServers": []})
        st = status_of(a, r["sessionId"])
        check(st["servers"] == [{"name": "remote", "status": "ready"}], "status %r" % st)
        check(not [f for _, f in a.log if f.get("method") == "_peri/mcp_login"], "asked")
        rc = subprocess.run([E.peri, "mcp", "logout", "remote"], env=E.env(),
                            capture_output=True, timeout=30).returncode
        check(rc == 0 and not os.listdir(os.path.join(E.home, ".peri", "oauth")), "logout")
        # what a server answered is quoted in the error with its control characters shown,
        # not sent to the terminal: the resource its metadata names ...
        r = subprocess.run([E.peri, "mcp", "login", "http://127.0.0.1:%d/escres" % ports["mcp"]],
                           env=E.env(), capture_output=True, timeout=60)
        err = r.stderr.decode("utf-8", "replace")
        check(r.returncode == 1 and "names another resource (\\x1b]0;PWNED\\x07\\x1b[2J"
              "\\x1b[32mLogged in.\\nperi: forged\\xc2\\x9b2J)" in err and no_controls(err),
              "login error with a hostile resource: %d %r" % (r.returncode, err))
        # ... and the error the authorization server sends to the callback
        p = subprocess.Popen([E.peri, "mcp", "login", "remote"], env=E.env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        login = None
        for line in p.stdout:
            if line.strip().startswith(b"http://127.0.0.1:%d/authorize?" % ports["as"]):
                login = line.strip().decode()
                break
        check(login, "no login URL printed (second login)")
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(login or "http://x/?").query)
        cb = "%s?state=%s&error=%s" % (q.get("redirect_uri", [""])[0], q.get("state", [""])[0],
                                       urllib.parse.quote("\x1b]0;PWNED\x07\x1b[2Jdenied\r"))
        try:
            urllib.request.urlopen(cb, timeout=20)
        except urllib.error.HTTPError as e:
            check(e.code == 400, "callback with an error: HTTP %d" % e.code)
        out, err = p.communicate(timeout=30)
        err = err.decode("utf-8", "replace")
        check(p.returncode == 1 and "answered \\x1b]0;PWNED\\x07\\x1b[2Jdenied\\r" in err
              and no_controls(err), "callback error: %d %r" % (p.returncode, err))
    finally:
        srv.stdin.close()
        srv.wait(10)


if __name__ == "__main__":
    sys.exit(scenario_main(__doc__, {"login": s_login, "cli": s_cli},
                           at_end=end_agents_cleanly))
