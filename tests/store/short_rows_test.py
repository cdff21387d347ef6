#!/usr/bin/env python3
"""store.short_rows — a PostgreSQL server that answers every query with rows of one
column (a hostile or mismatched database) makes the store's statements fail with a typed
error; `peri acp` answers the request with an error and keeps running, where reading
the columns it expected crashed it.

usage: short_rows_test.py PERI
A fake server speaking the wire protocol (trust login, simple and extended queries) on a
loopback port; no PostgreSQL is needed.
"""
import os, socket, struct, sys, tempfile, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from acp_harness import Agent, base_env  # noqa: E402

peri = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def msg(t, body):
    return t + struct.pack("!I", len(body) + 4) + body


def rowdesc():
    return msg(b"T", struct.pack("!H", 1) + b"c\0" + struct.pack("!IhIhih", 0, 0, 25, -1, -1, 0))


def datarow(v):
    return msg(b"D", struct.pack("!H", 1) + struct.pack("!I", len(v)) + v)


def done():
    return msg(b"C", b"SELECT 1\0")


def serve(c):
    def recvn(n):
        b = b""
        while len(b) < n:
            x = c.recv(n - len(b))
            if not x:
                raise EOFError
            b += x
        return b
    try:
        n = struct.unpack("!I", recvn(4))[0]
        body = recvn(n - 4)
        if body[:4] == struct.pack("!I", 80877103):  # SSLRequest: no TLS here
            c.sendall(b"N")
            n = struct.unpack("!I", recvn(4))[0]
            recvn(n - 4)
        c.sendall(msg(b"R", struct.pack("!I", 0)) + msg(b"K", struct.pack("!II", 1, 2)) +
                  msg(b"Z", b"I"))
        pending = b""
        while True:
            t = recvn(1)
            n = struct.unpack("!I", recvn(4))[0]
            body = recvn(n - 4)
            if t == b"Q":
                out = b""
                for s in [x.strip() for x in body.rstrip(b"\0").decode().split(";") if x.strip()]:
                    out += (rowdesc() + datarow(b"1") + done() if s.upper().startswith("SELECT")
                            else msg(b"C", s.split()[0].upper().encode() + b"\0"))
                c.sendall(out + msg(b"Z", b"I"))
            elif t == b"P":
                pending += msg(b"1", b"")
            elif t == b"B":
                pending += msg(b"2", b"")
            elif t == b"D":
                pending += rowdesc()
            elif t == b"E":
                pending += datarow(b"x") + done()
            elif t == b"S":
                c.sendall(pending + msg(b"Z", b"I"))
                pending = b""
            elif t == b"X":
                break
    except (EOFError, OSError):
        pass
    finally:
        c.close()


ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(8)
port = ls.getsockname()[1]


def accept_loop():
    while True:
        try:
            c, _ = ls.accept()
        except OSError:
            return
        threading.Thread(target=serve, args=(c,), daemon=True).start()


threading.Thread(target=accept_loop, daemon=True).start()

home = tempfile.mkdtemp(prefix="peri-shortrows-")
os.makedirs(os.path.join(home, ".peri"))
env = base_env(home)
env.update({"PERI_MODEL": "openai:mock-model", "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "PERI_MACHINE_ID": "m1"})
url = "postgresql://u@127.0.0.1:%d/db?sslmode=disable&gssencmode=disable" % port
a = Agent(peri, env, "/dev/null", ["--store", url])
try:
    a.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    r = a.call("session/list", {})
    check("error" in r and "columns" in r["error"].get("message", "") + str(r["error"].get("data", "")),
          f"session/list: not the typed error: {r}")
    r = a.call("session/load", {"sessionId": "0190a000-0000-7000-8000-000000000001",
                                "cwd": home, "mcpServers": []})
    check("error" in r, f"session/load: {r}")
    time.sleep(0.2)
    check(a.proc.poll() is None, f"the agent died: rc {a.proc.poll()}: {''.join(a.stderr)[-800:]}")
except Exception as e:  # a crash shows as a closed stream
    check(False, f"the agent stopped answering: {e}: rc {a.proc.poll()}: "
                 f"{''.join(a.stderr)[-800:]}")
finally:
    try:
        a.proc.stdin.close()
        a.proc.wait(timeout=20)
    except Exception:
        a.proc.kill()
    ls.close()
check(a.proc.returncode == 0, f"exit status {a.proc.returncode}: {''.join(a.stderr)[-800:]}")
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
