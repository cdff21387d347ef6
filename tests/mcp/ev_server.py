#!/usr/bin/env python3
"""ev_server.py: a streamable-HTTP MCP server for the event-driven client's tests
(tests/mcp/test_mcp_ev.c), honest and hostile by path.

usage: ev_server.py LOGFILE   (prints the port it listens on, on 127.0.0.1, then serves)

POST /mcp/<mode>. Honest modes: `json` answers application/json, `sse` answers
text/event-stream and puts into every answer stream, before the answer, a progress
notification, a ping request, a roots/list request and a notifications/message. Both
assign an Mcp-Session-Id at initialize and refuse (400) a later message without it or
without MCP-Protocol-Version; tools/list has two pages (cursor "p2"); the tools are
echo, fail (isError), boom (a JSON-RPC error) and slow (sleeps until cancelled).

Hostile modes: drop (closes without answering), hang (reads the request, never answers),
hangcall (honest until tools/call, which never answers), garbage (bytes that are not
HTTP), badjson (200 application/json that is not JSON), badsession (a session id with a
space), version (protocolVersion 1999-01-01), status500, big (a 3 MiB tools/list),
manytools (2000 tools), endless (a nextCursor forever), badtype (text/html), sseeof (an
event stream that ends without the answer), ssegarbage (an event stream of bytes that
are not JSON-RPC, then the stream ends).

Every message is logged to LOGFILE as one JSON line: {"mode", "verb", "method", "id",
"session", "protocol", "params"} (DELETE: verb "DELETE"), so the test can see what the
client sent.
"""
import http.server
import json
import select
import socket
import sys
import threading
import time
import uuid

LOG = sys.argv[1]
LOCK = threading.RLock()
SESSIONS = set()
CANCELLED = set()  # (session, request id)

TOOLS = [
    {"name": "echo", "description": "Echoes", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": True}},
    {"name": "fail", "description": "Fails", "inputSchema": {"type": "object"}},
    {"name": "boom", "description": "JSON-RPC error", "inputSchema": {"type": "object"}},
    {"name": "slow", "title": "Slow", "inputSchema": {"type": "object"}},
]


def log(entry):
    with LOCK, open(LOG, "a") as f:
        f.write(json.dumps(entry) + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def mode(self):
        parts = self.path.split("/")
        return parts[2] if len(parts) > 2 else "json"

    def send_json(self, obj, status=200, ctype="application/json", headers=()):
        body = json.dumps(obj).encode() if not isinstance(obj, bytes) else obj
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def send_events(self, messages, headers=()):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        for m in messages:
            data = m if isinstance(m, bytes) else ("data: %s\n\n" % json.dumps(m)).encode()
            self.wfile.write(data)
            self.wfile.flush()
            time.sleep(0.01)
        self.close_connection = True

    def wait_for_close(self, limit=20.0):
        end = time.monotonic() + limit
        while time.monotonic() < end:
            r, _, _ = select.select([self.connection], [], [], 0.1)
            if r:
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        return
                except OSError:
                    return

    def do_DELETE(self):
        log({"mode": self.mode(), "verb": "DELETE",
             "session": self.headers.get("Mcp-Session-Id"),
             "protocol": self.headers.get("MCP-Protocol-Version")})
        self.send_json(b"", status=200, ctype="text/plain")

    def do_POST(self):
        mode = self.mode()
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        try:
            msg = json.loads(raw)
        except ValueError:
            msg = {}
        method = msg.get("method")
        rid = msg.get("id")
        session = self.headers.get("Mcp-Session-Id")
        log({"mode": mode, "verb": "POST", "method": method, "id": rid, "session": session,
             "protocol": self.headers.get("MCP-Protocol-Version"),
             "accept": self.headers.get("Accept"), "auth": self.headers.get("Authorization"),
             "params": msg.get("params"), "result": msg.get("result"),
             "error": msg.get("error")})
        if mode == "drop":
            self.close_connection = True
            return
        if mode == "hang":
            self.wait_for_close()
            self.close_connection = True
            return
        if mode == "garbage":
            self.wfile.write(b"\x00\xffTHIS IS NOT HTTP\r\n\r\n")
            self.close_connection = True
            return
        if method == "initialize":
            return self.initialize(mode, rid)
        if method is None or rid is None:  # a notification or an answer of ours
            if method == "notifications/cancelled":
                with LOCK:
                    CANCELLED.add((session, msg["params"]["requestId"]))
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.close_connection = True
            return
        if session not in SESSIONS or not self.headers.get("MCP-Protocol-Version"):
            return self.send_json({"error": "no session"}, status=400)
        if method == "tools/list":
            return self.tools_list(mode, rid, msg.get("params") or {})
        if method == "tools/call":
            return self.tools_call(mode, rid, session, msg.get("params") or {})
        self.answer(mode, {"jsonrpc": "2.0", "id": rid,
                           "error": {"code": -32601, "message": "Method not found"}})

    def answer(self, mode, frame, headers=()):
        if mode == "sse":
            self.send_events([
                {"jsonrpc": "2.0", "method": "notifications/progress",
                 "params": {"progressToken": 1, "progress": 1}},
                {"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"},
                {"jsonrpc": "2.0", "id": 77, "method": "roots/list"},
                {"jsonrpc": "2.0", "method": "notifications/message",
                 "params": {"level": "info", "data": "hello from the server"}},
                frame], headers)
        else:
            self.send_json(frame, headers=headers)

    def initialize(self, mode, rid):
        session = "sess-" + uuid.uuid4().hex
        version = "1999-01-01" if mode == "version" else "2025-06-18"
        if mode == "badsession":
            session = "bad session"
        with LOCK:
            SESSIONS.add(session)
        frame = {"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": version, "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "ev-test", "version": "1"}}}
        hdrs = [("Mcp-Session-Id", session)]
        if mode == "status500":
            return self.send_json(b"internal trouble\r\nwith\x01 control bytes", status=500,
                                  ctype="text/plain")
        if mode == "badjson":
            return self.send_json(b'{"jsonrpc": "2.0", "id": ', headers=hdrs)
        if mode == "badtype":
            return self.send_json(b"<html></html>", ctype="text/html", headers=hdrs)
        if mode == "sseeof":
            return self.send_events([{"jsonrpc": "2.0", "method": "notifications/message",
                                      "params": {"level": "info", "data": "x"}}], hdrs)
        if mode == "ssegarbage":
            return self.send_events([b"data: {not json\n\n", b"data: \xff\xfe\n\n",
                                     b"event: message\ndata: [1,2]\n\n", b": comment\n\n"],
                                    hdrs)
        self.answer(mode, frame, hdrs)

    def tools_list(self, mode, rid, params):
        cursor = params.get("cursor")
        if mode == "big":
            tools = [{"name": "t%d" % i, "description": "x" * 3000} for i in range(1000)]
            return self.send_json({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        if mode == "manytools":
            tools = [{"name": "t%d" % i} for i in range(2000)]
            return self.send_json({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        if mode == "endless":
            return self.send_json({"jsonrpc": "2.0", "id": rid, "result": {
                "tools": [{"name": "t"}], "nextCursor": "more"}})
        if cursor is None:
            res = {"tools": TOOLS[:2] + [{"name": "n" * 200}, {"description": "no name"}],
                   "nextCursor": "p2"}
        elif cursor == "p2":
            res = {"tools": TOOLS[2:]}
        else:
            return self.answer(mode, {"jsonrpc": "2.0", "id": rid,
                                      "error": {"code": -32602, "message": "bad cursor"}})
        self.answer(mode, {"jsonrpc": "2.0", "id": rid, "result": res})

    def tools_call(self, mode, rid, session, params):
        name = params.get("name")
        args = params.get("arguments") or {}
        if mode == "hangcall":
            self.wait_for_close()
            self.close_connection = True
            return
        if name == "echo":
            res = {"content": [{"type": "text", "text": "Echo: %s" % args.get("message")}],
                   "structuredContent": {"echoed": args.get("message")}}
        elif name == "fail":
            res = {"content": [{"type": "text", "text": "it failed"}], "isError": True}
        elif name == "boom":
            return self.answer(mode, {"jsonrpc": "2.0", "id": rid,
                                      "error": {"code": -32000, "message": "kaboom"}})
        elif name == "slow":
            end = time.monotonic() + 20
            while time.monotonic() < end:
                with LOCK:
                    if (session, rid) in CANCELLED:
                        log({"mode": mode, "verb": "SEEN", "method": "cancelled", "id": rid})
                        break
                time.sleep(0.05)
            res = {"content": [{"type": "text", "text": "slept"}]}
        else:
            return self.answer(mode, {"jsonrpc": "2.0", "id": rid,
                                      "error": {"code": -32602, "message": "unknown tool"}})
        self.answer(mode, {"jsonrpc": "2.0", "id": rid, "result": res})


class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # the client hangs up on purpose in several modes


def main():
    srv = Server(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
