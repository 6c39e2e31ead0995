"""A small MCP server for tests, written with the SDK: stdio by default, or streamable HTTP.

    python tests/mcp_server.py [--log FILE] [--http PORT]

Every tool call is appended to FILE (one JSON line), so a test can tell whether a run really
reached the server or replayed recorded outputs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# The example server's SDK 1.x/2.x compatibility, shared.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from mcp_calc_server import MCPServer, ToolError, serve_http

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
        serve_http(server, args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
