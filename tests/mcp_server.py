"""A small MCP server for tests, written with the SDK: stdio by default, or streamable HTTP.

    python tests/mcp_server.py [--log FILE] [--http PORT]

Every tool call is appended to FILE (one JSON line), so a test can tell whether a run really
reached the server or replayed recorded outputs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    SDK_1 = False
except ImportError:  # mcp 1.x: the same server under its old name
    from mcp.server.fastmcp import FastMCP as MCPServer
    from mcp.server.fastmcp.exceptions import ToolError

    SDK_1 = True

server = MCPServer("evalspec-test-tools")
_log: Path | None = None


def _note(tool: str, **arguments: object) -> None:
    if _log is not None:
        with _log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


@server.tool(name="Math.Add", description="Add two numbers.")
def add(a: float, b: float) -> float:
    _note("Math.Add", a=a, b=b)
    return a + b


@server.tool(name="Math.Multiply", description="Multiply two numbers.")
def multiply(a: float, b: float) -> float:
    _note("Math.Multiply", a=a, b=b)
    return a * b


@server.tool(name="Text.Upper", description="Upper-case a text.")
def upper(text: str) -> dict[str, str]:
    _note("Text.Upper", text=text)
    return {"text": text.upper()}


@server.tool(name="Files.Delete", description="Delete a file (always refused).")
def delete(path: str) -> str:
    _note("Files.Delete", path=path)
    raise ToolError(f"permission denied: {path}")


def main() -> None:
    global _log
    parser = argparse.ArgumentParser()
    parser.add_argument("--log")
    parser.add_argument("--http", type=int)
    args = parser.parse_args()
    _log = Path(args.log) if args.log else None
    if args.http:
        serve_http(args.http)
    else:
        server.run()


def serve_http(port: int) -> None:
    """Streamable HTTP on 127.0.0.1:port (1.x takes host and port as settings)."""
    if SDK_1:
        server.settings.host, server.settings.port = "127.0.0.1", port
        server.run("streamable-http")
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
