#!/usr/bin/env python3
"""listchanged_server.py: a scripted stdio MCP server for the list_changed test.

It offers one tool, `first`. Calling `first` adds a second tool, `second`, and sends
notifications/tools/list_changed BEFORE answering the call, so a client that refreshes
between model requests sees the new tool deterministically. `second` answers
"second-ran". One JSON-RPC frame per line on stdin/stdout.
"""
import json
import sys

TOOLS = [{"name": "first", "description": "adds a tool",
          "inputSchema": {"type": "object", "properties": {}}}]
SECOND = {"name": "second", "description": "the added tool",
          "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if "id" not in m or "method" not in m:
        continue
    meth, rid = m["method"], m["id"]
    if meth == "initialize":
        res = {"protocolVersion": "2025-06-18",
               "capabilities": {"tools": {"listChanged": True}},
               "serverInfo": {"name": "listchanged", "version": "1"}}
    elif meth == "tools/list":
        res = {"tools": TOOLS}
    elif meth == "tools/call":
        name = m["params"]["name"]
        if name == "first":
            if SECOND not in TOOLS:
                TOOLS.append(SECOND)
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            res = {"content": [{"type": "text", "text": "first-ran"}]}
        elif name == "second":
            res = {"content": [{"type": "text", "text": "second-ran"}]}
        else:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32602, "message": "Unknown tool: " + name}})
            continue
    elif meth == "ping":
        res = {}
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
        continue
    send({"jsonrpc": "2.0", "id": rid, "result": res})
