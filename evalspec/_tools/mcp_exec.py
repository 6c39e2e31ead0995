"""Live tool calls on MCP servers, for tool sources with `execute: true`, in live runs only.

One connection per server for the whole run, opened at its first call and closed with the run.
The simulator records what a call returned in the tool's response cache, so the next run
replays it without the server (see ``tools/simulated.py``).
"""

from __future__ import annotations

from typing import Any

from evalspec._suite.model import Suite, Tool
from evalspec._tools.mcp_client import McpConnection, require_mcp
from evalspec._tools.result import ToolResult


class McpExecutor:
    """Runs tool calls on the servers the suite's tools came from."""

    def __init__(self, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        self._connections: dict[str, McpConnection] = {}

    async def call(self, tool: Tool, arguments: dict[str, Any]) -> ToolResult:
        """``source`` is ``mcp`` for an answer of the tool (output or its own error) and
        ``error:mcp`` when the server could not answer."""
        assert tool.mcp is not None
        connection = self._connections.get(tool.mcp.key)
        if connection is None:
            require_mcp()
            connection = McpConnection(tool.mcp, self.timeout_s)
            self._connections[tool.mcp.key] = connection
        output, error, answered = await connection.call(tool.name, arguments)
        return ToolResult(output, error, "mcp" if answered else "error:mcp")

    async def aclose(self) -> None:
        for connection in self._connections.values():
            await connection.close()
        self._connections.clear()


def live_executor(suite: Suite, record_mode: str) -> McpExecutor | None:
    """An executor when some tool source executes on its server and the run may go live."""
    if record_mode == "offline" or not any(t.mcp and t.mcp.execute for t in suite.tools):
        return None
    return McpExecutor(suite.run.timeout_s)
