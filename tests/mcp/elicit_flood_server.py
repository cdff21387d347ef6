#!/usr/bin/env python3
"""elicit_flood_server.py: a hostile streamable-HTTP MCP server for acp_e2e.py
(scenario elicit_flood), run in the test's process on a loopback port.

It answers tools/list with an SSE stream that first sends N elicitation/create requests
(ids "L0".."L<N-1>") and only then the list (one tool, `ask`). A tools/call of `ask`
streams N more (ids "C0".."C<N-1>"), waits (at most 15 s) until all but one are
answered, sends notifications/cancelled for those still open and then the result, whose
text says how many of them were declined. Every answer the client posts is recorded.
"""
import http.server
import json
import threading

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


class FloodServer:
    def __init__(self, n):
        self.n = n
        self.answers = {}  # request id -> result (or error) the client posted
        self.cv = threading.Condition()
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):  # no server-initiated stream
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_DELETE(self):
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    m = json.loads(body)
                except ValueError:
                    m = {}
                if "method" not in m:  # a notification's or a response's turn: 202
                    if "id" in m:
                        with srv.cv:
                            srv.answers[m["id"]] = m.get("result", m.get("error"))
                            srv.cv.notify_all()
                    self.accepted()
                    return
                if "id" not in m:
                    self.accepted()
                    return
                meth, rid = m["method"], m["id"]
                if meth == "initialize":
                    self.json({"jsonrpc": "2.0", "id": rid, "result": {
                        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "flood", "version": "1"}}})
                elif meth == "tools/list":
                    self.stream_start()
                    for i in range(srv.n):
                        self.event(srv.elicit("L%d" % i))
                    self.event({"jsonrpc": "2.0", "id": rid, "result": {"tools": [{
                        "name": "ask", "description": "asks and asks",
                        "inputSchema": {"type": "object"}}]}})
                elif meth == "tools/call":
                    self.stream_start()
                    ids = ["C%d" % i for i in range(srv.n)]
                    for i in ids:
                        self.event(srv.elicit(i))
                    with srv.cv:
                        srv.cv.wait_for(lambda: sum(i in srv.answers for i in ids) >= srv.n - 1,
                                        15)
                        open_ids = [i for i in ids if i not in srv.answers]
                        declined = sum(1 for i in ids if (srv.answers.get(i) or {}).get(
                            "action") == "decline")
                    for i in open_ids:
                        self.event({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                    "params": {"requestId": i, "reason": "done"}})
                    self.event({"jsonrpc": "2.0", "id": rid, "result": {"content": [{
                        "type": "text", "text": "declined=%d open=%d" % (
                            declined, len(open_ids))}]}})
                else:
                    self.json({"jsonrpc": "2.0", "id": rid,
                               "error": {"code": -32601, "message": "no"}})

            def accepted(self):
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def json(self, obj):
                data = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def stream_start(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()

            def event(self, obj):
                self.wfile.write(("event: message\ndata: %s\n\n" % json.dumps(obj)).encode())
                self.wfile.flush()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d/mcp" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def elicit(self, rid):
        return {"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": {
            "message": "Name? (%s)" % rid, "requestedSchema": SCHEMA}}

    def answered(self, prefix):
        """The answers posted to requests whose id starts with prefix: {id: result}."""
        with self.cv:
            return {k: v for k, v in self.answers.items() if k.startswith(prefix)}

    def stop(self):
        self.httpd.shutdown()
