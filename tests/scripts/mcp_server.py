"""The reference MCP server wrl's MCP tools are tested against (tests/scripts/mcp-check.sh),
built on the official MCP Python SDK: `run_code` (Python's `exec`, its printed output),
`add` (two integers) and `fail` (raises, so the SDK answers `isError`).

    python mcp_server.py stdio              # over stdin and stdout
    python mcp_server.py http PORT          # streamable HTTP at http://127.0.0.1:PORT/mcp
"""

import contextlib
import io
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("wrl-reference")


@server.tool()
def run_code(code: str) -> str:
    """Runs Python code and answers what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code, {})
    return out.getvalue()


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def fail(message: str) -> str:
    """Always fails with `message`."""
    raise ValueError(message)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "http":
        import anyio

        port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
        anyio.run(lambda: server.run_streamable_http_async(host="127.0.0.1", port=port))
    else:
        server.run("stdio")
