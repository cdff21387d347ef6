"""collector.py: an OTLP/HTTP collector on loopback for the telemetry tests (the agent
host's spans, docs/wasm-host.md and docs/agent-host.md)."""
import http.server
import json
import socketserver
import threading
import time


class Collector:
    """An OTLP/HTTP collector on loopback: records each POST (path, headers, JSON body);
    answers 200, or `status` when set; `hang` keeps a request open until stop()."""

    def __init__(self):
        col = self
        self.posts, self.status, self.hang = [], 200, False
        self.release = threading.Event()

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                col.posts.append((self.path, dict(self.headers), json.loads(body)))
                if col.hang:
                    col.release.wait(20)
                try:
                    self.send_response(col.status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                except OSError:
                    pass  # the exporter gave up (a close cancels what is in flight)

            def log_message(self, *a):
                pass

        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
        self.srv = S(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def wait_posts(self, n, timeout=10):
        """Waits until n POSTs arrived (or the timeout); the number that did."""
        deadline = time.monotonic() + timeout
        while len(self.posts) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        return len(self.posts)

    def span(self, i):
        """POST i as (path, headers with lowercase names, resource attributes, the span,
        the span's attributes); an attribute's value is its one OTLP value."""
        path, headers, body = self.posts[i]
        rs = body["resourceSpans"][0]
        res = {x["key"]: x["value"] for x in rs["resource"]["attributes"]}
        span = rs["scopeSpans"][0]["spans"][0]
        attrs = {x["key"]: list(x["value"].values())[0] for x in span["attributes"]}
        return path, {k.lower(): v for k, v in headers.items()}, res, span, attrs

    def stop(self):
        self.release.set()
        self.srv.shutdown()
        self.srv.server_close()
