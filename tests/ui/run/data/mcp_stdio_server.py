"""A minimal MCP server over stdio in the standard library alone (newline-delimited JSON-RPC),
for the UI cases of `wrlc run --dry-run`'s MCP preflight, which must run without the MCP SDK:
it lists `run_code(code: string)` and `add(a: integer, b: integer)`. The tests that call tools
run against the official SDK's server instead (tests/scripts/mcp_server.py)."""

import json
import sys

TOOLS = [
    {
        "name": "run_code",
        "description": "Runs Python code.",
        "inputSchema": {
            "type": "object",
            "properties": {"code": {"type": "string"}},
            "required": ["code"],
        },
    },
    {
        "name": "add",
        "description": "Adds two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
]


def answer(msg):
    method = msg.get("method")
    if method == "initialize":
        version = msg.get("params", {}).get("protocolVersion", "2025-06-18")
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "wrl-ui-minimal", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        args = msg.get("params", {}).get("arguments", {})
        if msg["params"]["name"] == "add":
            return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}
        return {"content": [{"type": "text", "text": "ok"}], "isError": False}
    if method == "ping":
        return {}
    return None


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    if "id" not in msg:
        continue
    result = answer(msg)
    if result is None:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no such method"}}
    else:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
