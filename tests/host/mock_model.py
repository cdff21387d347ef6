#!/usr/bin/env python3
"""mock_model.py: a scriptable fake model server for Peri-C tests (Python 3 stdlib only).

It serves the OpenAI Chat Completions API and the Anthropic Messages API on 127.0.0.1,
streaming (SSE) and not, and answers from a queue of scripted responses.

Command line
------------
  python3 mock_model.py [--script FILE] [--port N] [--port-file FILE]
                        [--timeout SEC] [--quiet]

  --script FILE     JSON script (format below) loaded at start. Optional.
  --port N          port to bind (default 0: the OS picks one).
  --port-file FILE  write the chosen port (decimal, then "\\n") to FILE, atomically
                    (written to FILE.tmp then renamed), once the server is listening.
  --timeout SEC     exit on its own after SEC seconds (default 300).
  --parent-pid N    exit when process N is gone (default: watch our own parent).
  --quiet           do not log requests to stderr.

Once listening it prints "PORT <n>" on a line of its own to stdout and flushes.
It exits on SIGTERM/SIGINT, after --timeout, and when its parent process dies (polled
every 200 ms: --parent-pid if given, else a change of our parent pid; pass --parent-pid
when the parent may exit before this script has started). It only ever binds 127.0.0.1.

Endpoints
---------
  POST /v1/chat/completions, /chat/completions     OpenAI format
  POST /v1/messages, /messages                     Anthropic format
       The request's "stream" field chooses SSE or a single JSON answer. The same script
       entry renders in whichever format the request used.
  POST /_script     body = a script (format below): REPLACES the queue and the default.
                    With query ?append=1 the responses are appended instead.
  GET  /_requests   JSON array of every model request received so far, oldest first:
                    {"path": "/v1/messages", "headers": {lower-case name: value},
                     "body": <parsed JSON body, or the raw text if it did not parse>}
  POST /_reset      forget recorded requests (the queue is kept).
  GET  /_health     {"ok": true, "pending": <responses left in the queue>}

Script format
-------------
Either a JSON array of responses, or an object {"responses": [...], "default": {...}}.
Each model request pops the next response; when the queue is empty "default" is used
(if no default is given: a plain text answer "ok" with small usage).

A response object (every field optional):
  "status": 200            HTTP status. Non-2xx: an error answer in the provider's format
                           (body "error_body" if given, else a standard error object).
  "error_body": {...}|"s"  body for an error status (object sent as JSON, string as is).
  "retry_after": "1"       Retry-After header value (useful with 429/503).
  "text": "s" | ["s", ...] assistant text; a list is sent as several deltas.
  "thinking": "s" | [...]  reasoning text (Anthropic thinking block; OpenAI
                           "reasoning_content" deltas), sent before the text.
  "tool_calls": [{"id": "call_1", "name": "read",
                  "arguments": "{...}" | {...},   object is JSON-encoded
                  "chunks": 3 | ["{\\"pa", ...]}]  split the arguments into N deltas or
                           send exactly these pieces (default: 1 delta). Sent after text.
  "usage": {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0}
  "stop": "end_turn" | "tool_use" | "max_tokens" | "refusal"  neutral stop reason; default
                           tool_use when tool_calls is present, else end_turn. Mapped to
                           the provider's names (OpenAI: stop/tool_calls/length/
                           content_filter).
  "delay_ms": 0            sleep between SSE events (streaming) ...
  "first_delay_ms": 0      ... and before the first event (after headers); non-streaming
                           answers sleep first_delay_ms + delay_ms before answering.
  "hang": true             streaming: send headers and the first "hang_after" SSE events,
                           then nothing until the client goes away (or exit). Every SSE
                           event counts: OpenAI's first event is the role chunk (so
                           hang_after 2 = role chunk + first text chunk); Anthropic's first
                           two are message_start and ping (hang_after 4 = + block start +
                           first text delta).
                           Non-streaming: never answer.
  "hang_after": 0
  "stream_error": "msg"    streaming: after the content, send an in-stream error event
                           (Anthropic "event: error"; OpenAI data: {"error": {...}})
                           instead of the normal ending.
  "malformed": true        send a body that is not valid JSON (SSE: a bad data line).
  "repeat": 1              serve this entry N times before popping it.
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

# Taken first thing: the parent may already be gone by the time the server is listening.
START_PPID = os.getppid()

DEFAULT_RESPONSE = {"text": "ok", "usage": {"input": 1, "output": 1}}


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.queue = []
        self.default = dict(DEFAULT_RESPONSE)
        self.requests = []
        self.counter = 0
        self.stopping = threading.Event()

    def load(self, script, append=False):
        if isinstance(script, list):
            responses, default = script, None
        elif isinstance(script, dict):
            responses = script.get("responses", [])
            default = script.get("default")
        else:
            raise ValueError("script must be a JSON array or object")
        if not isinstance(responses, list) or not all(isinstance(r, dict) for r in responses):
            raise ValueError("responses must be an array of objects")
        with self.lock:
            if not append:
                self.queue = []
                self.default = dict(DEFAULT_RESPONSE)
            for r in responses:
                self.queue.append(dict(r))
            if default is not None:
                self.default = dict(default)

    def next_response(self):
        with self.lock:
            self.counter += 1
            if not self.queue:
                return dict(self.default), self.counter
            r = self.queue[0]
            left = int(r.get("repeat", 1)) - 1
            if left > 0:
                r["repeat"] = left
                return dict(r), self.counter
            self.queue.pop(0)
            return r, self.counter


def as_list(v):
    if v is None:
        return []
    if isinstance(v, list):
        return [str(x) for x in v]
    return [str(v)]


def split_args(tc):
    args = tc.get("arguments", "{}")
    if not isinstance(args, str):
        args = json.dumps(args)
    chunks = tc.get("chunks", 1)
    if isinstance(chunks, list):
        return args, [str(c) for c in chunks]
    n = max(1, int(chunks))
    if n == 1 or len(args) == 0:
        return args, [args]
    size = max(1, (len(args) + n - 1) // n)
    return args, [args[i:i + size] for i in range(0, len(args), size)]


OPENAI_STOP = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
               "refusal": "content_filter"}


def stop_of(resp):
    s = resp.get("stop")
    if s:
        return s
    return "tool_use" if resp.get("tool_calls") else "end_turn"


def usage_of(resp):
    u = resp.get("usage") or {}
    return (int(u.get("input", 0)), int(u.get("output", 0)), int(u.get("cache_read", 0)),
            int(u.get("cache_write", 0)))


# ------------------------------------------------------------------ OpenAI rendering

def openai_events(resp, model, rid):
    """Yields the JSON strings of each data: line (without [DONE])."""
    base = {"id": rid, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model}

    def chunk(delta, finish=None):
        d = dict(base)
        d["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return json.dumps(d)

    yield chunk({"role": "assistant", "content": ""})
    for t in as_list(resp.get("thinking")):
        yield chunk({"reasoning_content": t})
    for t in as_list(resp.get("text")):
        yield chunk({"content": t})
    for i, tc in enumerate(resp.get("tool_calls") or []):
        _, pieces = split_args(tc)
        yield chunk({"tool_calls": [{"index": i, "id": tc.get("id", "call_%d" % i),
                                     "type": "function",
                                     "function": {"name": tc.get("name", ""),
                                                  "arguments": ""}}]})
        for p in pieces:
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
    yield chunk({}, OPENAI_STOP.get(stop_of(resp), stop_of(resp)))


def openai_usage_event(resp, model, rid):
    i, o, cr, _ = usage_of(resp)
    return json.dumps({"id": rid, "object": "chat.completion.chunk", "model": model,
                       "choices": [],
                       "usage": {"prompt_tokens": i, "completion_tokens": o,
                                 "total_tokens": i + o,
                                 "prompt_tokens_details": {"cached_tokens": cr}}})


def openai_full(resp, model, rid):
    msg = {"role": "assistant", "content": "".join(as_list(resp.get("text"))) or None}
    if resp.get("thinking"):
        msg["reasoning_content"] = "".join(as_list(resp.get("thinking")))
    tcs = []
    for i, tc in enumerate(resp.get("tool_calls") or []):
        args, _ = split_args(tc)
        tcs.append({"id": tc.get("id", "call_%d" % i), "type": "function",
                    "function": {"name": tc.get("name", ""), "arguments": args}})
    if tcs:
        msg["tool_calls"] = tcs
    i, o, cr, _ = usage_of(resp)
    return {"id": rid, "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": msg,
                         "finish_reason": OPENAI_STOP.get(stop_of(resp), stop_of(resp))}],
            "usage": {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o,
                      "prompt_tokens_details": {"cached_tokens": cr}}}


def openai_error(status, message):
    kind = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "code": kind}}


# ------------------------------------------------------------------ Anthropic rendering

def anthropic_events(resp, model, rid):
    """Yields (event name, JSON string) pairs up to the content_block_stop of the last block."""
    i, o, cr, cw = usage_of(resp)
    yield "message_start", json.dumps({"type": "message_start", "message": {
        "id": rid, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": i, "output_tokens": 1, "cache_read_input_tokens": cr,
                  "cache_creation_input_tokens": cw}}})
    yield "ping", json.dumps({"type": "ping"})
    idx = 0
    thinking = as_list(resp.get("thinking"))
    if thinking:
        yield "content_block_start", json.dumps({"type": "content_block_start", "index": idx,
                                                 "content_block": {"type": "thinking",
                                                                   "thinking": ""}})
        for t in thinking:
            yield "content_block_delta", json.dumps({"type": "content_block_delta", "index": idx,
                                                     "delta": {"type": "thinking_delta",
                                                               "thinking": t}})
        yield "content_block_delta", json.dumps({"type": "content_block_delta", "index": idx,
                                                 "delta": {"type": "signature_delta",
                                                           "signature": "sig-mock"}})
        yield "content_block_stop", json.dumps({"type": "content_block_stop", "index": idx})
        idx += 1
    text = as_list(resp.get("text"))
    if text:
        yield "content_block_start", json.dumps({"type": "content_block_start", "index": idx,
                                                 "content_block": {"type": "text", "text": ""}})
        for t in text:
            yield "content_block_delta", json.dumps({"type": "content_block_delta", "index": idx,
                                                     "delta": {"type": "text_delta", "text": t}})
        yield "content_block_stop", json.dumps({"type": "content_block_stop", "index": idx})
        idx += 1
    for n, tc in enumerate(resp.get("tool_calls") or []):
        _, pieces = split_args(tc)
        yield "content_block_start", json.dumps({
            "type": "content_block_start", "index": idx,
            "content_block": {"type": "tool_use", "id": tc.get("id", "toolu_%d" % n),
                              "name": tc.get("name", ""), "input": {}}})
        for p in pieces:
            yield "content_block_delta", json.dumps({"type": "content_block_delta", "index": idx,
                                                     "delta": {"type": "input_json_delta",
                                                               "partial_json": p}})
        yield "content_block_stop", json.dumps({"type": "content_block_stop", "index": idx})
        idx += 1


def anthropic_tail(resp):
    _, o, _, _ = usage_of(resp)
    yield "message_delta", json.dumps({"type": "message_delta",
                                       "delta": {"stop_reason": stop_of(resp),
                                                 "stop_sequence": None},
                                       "usage": {"output_tokens": o}})
    yield "message_stop", json.dumps({"type": "message_stop"})


def anthropic_full(resp, model, rid):
    content = []
    if resp.get("thinking"):
        content.append({"type": "thinking", "thinking": "".join(as_list(resp.get("thinking"))),
                        "signature": "sig-mock"})
    if resp.get("text"):
        content.append({"type": "text", "text": "".join(as_list(resp.get("text")))})
    for n, tc in enumerate(resp.get("tool_calls") or []):
        args, _ = split_args(tc)
        try:
            inp = json.loads(args) if args else {}
        except ValueError:
            inp = {}
        content.append({"type": "tool_use", "id": tc.get("id", "toolu_%d" % n),
                        "name": tc.get("name", ""), "input": inp})
    i, o, cr, cw = usage_of(resp)
    return {"id": rid, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_of(resp), "stop_sequence": None,
            "usage": {"input_tokens": i, "output_tokens": o, "cache_read_input_tokens": cr,
                      "cache_creation_input_tokens": cw}}


def anthropic_error(status, message):
    kind = {400: "invalid_request_error", 401: "authentication_error",
            403: "permission_error", 429: "rate_limit_error",
            529: "overloaded_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


# ------------------------------------------------------------------ HTTP handler

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "peri-mock-model/1"

    def log_message(self, fmt, *args):
        if not self.server.quiet:
            sys.stderr.write("mock_model: " + (fmt % args) + "\n")

    # -- helpers
    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def send_json(self, status, obj, extra=None):
        data = obj if isinstance(obj, (bytes, bytearray)) else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def sleep_ms(self, ms):
        if ms and ms > 0:
            self.server.state.stopping.wait(ms / 1000.0)

    # -- routes
    def do_GET(self):
        path = urlparse(self.path).path
        st = self.server.state
        if path == "/_requests":
            with st.lock:
                data = list(st.requests)
            self.send_json(200, data)
        elif path == "/_health":
            with st.lock:
                n = len(st.queue)
            self.send_json(200, {"ok": True, "pending": n})
        else:
            self.send_json(404, {"error": {"message": "not found: " + path}})

    def do_POST(self):
        url = urlparse(self.path)
        path = url.path
        st = self.server.state
        raw = self.read_body()
        if path == "/_script":
            try:
                script = json.loads(raw.decode("utf-8"))
                append = parse_qs(url.query).get("append", ["0"])[0] not in ("0", "")
                st.load(script, append=append)
            except (ValueError, UnicodeDecodeError) as e:
                self.send_json(400, {"error": str(e)})
                return
            self.send_json(200, {"ok": True})
            return
        if path == "/_reset":
            with st.lock:
                st.requests = []
            self.send_json(200, {"ok": True})
            return
        if path in ("/v1/chat/completions", "/chat/completions"):
            flavour = "openai"
        elif path in ("/v1/messages", "/messages"):
            flavour = "anthropic"
        else:
            self.send_json(404, {"error": {"message": "not found: " + path}})
            return
        try:
            body = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            body = raw.decode("utf-8", "replace")
        with st.lock:
            st.requests.append({"path": path,
                                "headers": {k.lower(): v for k, v in self.headers.items()},
                                "body": body})
        resp, n = st.next_response()
        model = body.get("model", "mock") if isinstance(body, dict) else "mock"
        stream = bool(body.get("stream")) if isinstance(body, dict) else False
        rid = ("chatcmpl-%d" if flavour == "openai" else "msg_%d") % n
        self.answer(flavour, resp, model, rid, stream, body)

    def answer(self, flavour, resp, model, rid, stream, body):
        status = int(resp.get("status", 200))
        extra = {}
        if resp.get("retry_after") is not None:
            extra["Retry-After"] = str(resp["retry_after"])
        if status < 200 or status >= 300:
            self.sleep_ms(resp.get("first_delay_ms", 0))
            eb = resp.get("error_body")
            if eb is None:
                msg = "mock error %d" % status
                eb = openai_error(status, msg) if flavour == "openai" else \
                    anthropic_error(status, msg)
            data = eb.encode() if isinstance(eb, str) else json.dumps(eb).encode()
            self.send_json(status, data, extra)
            return
        if not stream:
            self.sleep_ms(int(resp.get("first_delay_ms", 0)) + int(resp.get("delay_ms", 0)))
            if resp.get("hang"):
                self.hang()
                return
            if resp.get("malformed"):
                self.send_json(200, b"{not json", extra)
                return
            obj = openai_full(resp, model, rid) if flavour == "openai" else \
                anthropic_full(resp, model, rid)
            self.send_json(200, obj, extra)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        try:
            self.stream(flavour, resp, model, rid, body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def emit(self, text):
        self.wfile.write(text.encode("utf-8"))
        self.wfile.flush()

    def stream(self, flavour, resp, model, rid, body):
        delay = int(resp.get("delay_ms", 0))
        self.sleep_ms(resp.get("first_delay_ms", 0))
        hang = bool(resp.get("hang"))
        hang_after = int(resp.get("hang_after", 0))
        sent = 0
        if flavour == "openai":
            events = [("", e) for e in openai_events(resp, model, rid)]
        else:
            events = list(anthropic_events(resp, model, rid))
        if resp.get("stream_error") is not None or resp.get("malformed"):
            # the finishing chunk of OpenAI carries finish_reason; drop it on error paths
            if flavour == "openai":
                events = events[:-1]
        for name, data in events:
            if hang and sent >= hang_after:
                self.hang()
                return
            if sent > 0:
                self.sleep_ms(delay)
            if name:
                self.emit("event: %s\ndata: %s\n\n" % (name, data))
            else:
                self.emit("data: %s\n\n" % data)
            sent += 1
        if hang:
            self.hang()
            return
        if resp.get("malformed"):
            self.emit("data: {this is not json\n\n")
            return
        if resp.get("stream_error") is not None:
            msg = str(resp["stream_error"])
            if flavour == "openai":
                self.emit("data: %s\n\n" % json.dumps(
                    {"error": {"message": msg, "type": "server_error"}}))
            else:
                self.emit("event: error\ndata: %s\n\n" % json.dumps(
                    {"type": "error", "error": {"type": "overloaded_error", "message": msg}}))
            return
        if flavour == "openai":
            opts = body.get("stream_options") if isinstance(body, dict) else None
            if isinstance(opts, dict) and opts.get("include_usage"):
                self.sleep_ms(delay)
                self.emit("data: %s\n\n" % openai_usage_event(resp, model, rid))
            self.sleep_ms(delay)
            self.emit("data: [DONE]\n\n")
        else:
            for name, data in anthropic_tail(resp):
                self.sleep_ms(delay)
                self.emit("event: %s\ndata: %s\n\n" % (name, data))

    def hang(self):
        # Keep the connection open without sending anything until the client closes it
        # or the server stops. A readable socket with no data pending means EOF.
        import select
        sock = self.connection
        while not self.server.state.stopping.is_set():
            try:
                r, _, _ = select.select([sock], [], [], 0.1)
                if r and not sock.recv(1, 0):
                    return
            except OSError:
                return
        self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description="Scriptable fake OpenAI/Anthropic server")
    ap.add_argument("--script")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--parent-pid", type=int, default=0)
    args = ap.parse_args()

    state = State()
    if args.script:
        with open(args.script, "r", encoding="utf-8") as f:
            state.load(json.load(f))

    srv = Server(("127.0.0.1", args.port), Handler)
    srv.state = state
    srv.quiet = args.quiet
    port = srv.server_address[1]

    def stop(*_):
        state.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    sys.stdout.write("PORT %d\n" % port)
    sys.stdout.flush()

    def orphaned():
        if args.parent_pid > 0:
            try:
                os.kill(args.parent_pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                pass
            return False
        return START_PPID != 1 and os.getppid() != START_PPID

    deadline = time.monotonic() + args.timeout
    while not state.stopping.is_set():
        if time.monotonic() > deadline or orphaned():
            break
        state.stopping.wait(0.2)
    state.stopping.set()
    srv.shutdown()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
