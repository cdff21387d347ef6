#!/usr/bin/env python3
"""elicit_server.py: a scripted stdio MCP server for the elicitation tests.

Its tool `greet` asks the user for a name with elicitation/create (form mode) when the
client declared the elicitation capability in initialize, waits for the answer and
returns "hello NAME", or "answer: ACTION" for a decline or a cancel; without the
capability it returns "no elicitation capability". Its tool `guard` is a hook: given a
PreToolUse event whose tool_input.command contains "rm ", it answers with a tool error
("guard: no rm"); otherwise with {"additionalContext": "guard saw NAME"}. One JSON-RPC
frame per line.
"""
import json
import sys

CAPS = {}


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def greet(rid):
    if "elicitation" not in CAPS:
        return {"content": [{"type": "text", "text": "no elicitation capability"}]}
    send({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": {
        "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "title": "Name"}}, "required": ["name"]}}})
    for line in sys.stdin:
        m = json.loads(line)
        if m.get("id") == "e1" and "method" not in m:
            r = m.get("result") or {}
            if r.get("action") == "accept":
                text = "hello " + r.get("content", {}).get("name", "?")
            else:
                text = "answer: " + str(r.get("action"))
            return {"content": [{"type": "text", "text": text}]}
    sys.exit(0)


for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if "id" not in m or "method" not in m:
        continue
    meth, rid = m["method"], m["id"]
    if meth == "initialize":
        CAPS = m["params"].get("capabilities", {})
        res = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
               "serverInfo": {"name": "elicit", "version": "1"}}
    elif meth == "tools/list":
        res = {"tools": [{"name": "greet", "description": "asks the user's name",
                          "inputSchema": {"type": "object", "properties": {}}},
                         {"name": "guard", "description": "a PreToolUse hook",
                          "inputSchema": {"type": "object"}}]}
    elif meth == "tools/call" and m["params"]["name"] == "guard":
        ev = m["params"].get("arguments") or {}
        cmd = (ev.get("tool_input") or {}).get("command", "")
        if "rm " in cmd:
            res = {"isError": True, "content": [{"type": "text", "text": "guard: no rm"}]}
        else:
            res = {"content": [{"type": "text", "text": json.dumps(
                {"additionalContext": "guard saw " + ev.get("tool_name", "?")})}]}
    elif meth == "tools/call":
        res = greet(rid)
    elif meth == "ping":
        res = {}
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
        continue
    send({"jsonrpc": "2.0", "id": rid, "result": res})
