"""An example MCP server with calculator tools, written with the official `mcp` SDK.

suites/calc.yaml takes its tools from it (`tools: [{mcp: {command: [...]}}]`). Run it yourself
over stdio with `python examples/mcp_calc_server.py`, or over streamable HTTP with
`python examples/mcp_calc_server.py --http 8000` (then `url: http://127.0.0.1:8000/mcp`).
"""

from __future__ import annotations

import argparse
import math

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    SDK_1 = False
except ImportError:  # mcp 1.x: the same server under its old name
    from mcp.server.fastmcp import FastMCP as MCPServer
    from mcp.server.fastmcp.exceptions import ToolError

    SDK_1 = True

server = MCPServer("calc")


@server.tool(name="Math.Add", description="Add two numbers: a + b.")
def add(a: float, b: float) -> float:
    return a + b


@server.tool(name="Math.Multiply", description="Multiply two numbers: a * b.")
def multiply(a: float, b: float) -> float:
    return a * b


@server.tool(name="Math.Divide", description="Divide a by b.")
def divide(a: float, b: float) -> float:
    if b == 0:
        raise ToolError("division by zero")
    return a / b


@server.tool(name="Math.Sqrt", description="Square root of a non-negative number.")
def sqrt(a: float) -> float:
    return math.sqrt(a)


def serve_http(app: MCPServer, port: int) -> None:
    """Serve `app` over streamable HTTP on 127.0.0.1:port (1.x takes them as settings)."""
    if SDK_1:
        app.settings.host, app.settings.port = "127.0.0.1", port
        app.run("streamable-http")
    else:
        app.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--http", type=int, help="serve streamable HTTP on 127.0.0.1:PORT")
    port = parser.parse_args().http
    if port:
        serve_http(server, port)
    else:
        server.run()
