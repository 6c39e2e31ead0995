"""Talk to one MCP server with the official ``mcp`` SDK: list its tools, call them.

Only `evalspec tools refresh` and live runs with `execute: true` come here; ``mcp`` is imported
inside this module's functions, so nothing else pays for it or needs it installed.

The SDK's transports are anyio context managers that must be entered and left in one task, while
a run calls tools from many tasks. So each connection lives in its own task, which holds the
session open until :meth:`McpConnection.close`; calls from any task go through that session.

A server is untrusted: its process gets only the SDK's minimal environment (no API keys), only
the last lines of its stderr are kept (shown, control codes escaped, when it fails to start:
that is where a server says why), every request has a time limit, and outputs longer than
:data:`MAX_OUTPUT_CHARS` are cut.
"""

from __future__ import annotations

import asyncio
import functools
import textwrap
from contextlib import AbstractAsyncContextManager
from typing import Any, TextIO

from evalspec._providers.http_policy import client_options, refuse_clear_text
from evalspec._providers.openai_chat import expand_header_values, header_secrets
from evalspec._suite.model import McpServer
from evalspec._tools.stderr_tail import StderrTail
from evalspec._util import redaction
from evalspec._util.errors import RunError
from evalspec._util.reading import MAX_VALUE_DEPTH, loads_untrusted
from evalspec._util.redaction import redact

MAX_OUTPUT_CHARS = 100_000
CLOSE_GRACE_S = 10.0
"""How long a server may take to shut down before its connection is cancelled."""


def require_mcp() -> None:
    """A clear error, not a traceback, when the optional `mcp` package is missing."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise RunError(
            "talking to MCP servers needs the `mcp` package: pip install 'evalspec-yaml[mcp]'"
        ) from None


@functools.cache
def _sdk_major() -> int:
    """The installed SDK's major version: 1.x and 2.x differ in names and argument types."""
    from importlib.metadata import version

    return int(version("mcp").split(".")[0])


def _field(obj: Any, snake: str, camel: str) -> Any:
    """A result field under its 2.x name or its 1.x name."""
    return getattr(obj, snake, getattr(obj, camel, None))


def _transport(
    server: McpServer, timeout_s: float, errlog: TextIO
) -> AbstractAsyncContextManager[Any]:
    if server.command:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=server.command[0], args=list(server.command[1:]), cwd=server.cwd
        )
        return stdio_client(params, errlog=errlog)
    from mcp.client.streamable_http import streamable_http_client

    if _sdk_major() >= 2:
        import httpx2 as http
    else:
        import httpx as http  # type: ignore[no-redef]  # the same client under its 1.x name
    # The SDK's own client follows redirects, which would carry the headers to another host.
    client = http.AsyncClient(
        headers=expand_header_values(server.headers),
        timeout=http.Timeout(timeout_s),
        **client_options(server.url, http),
    )
    return streamable_http_client(str(server.url), http_client=client)


def result_to_output(result: Any) -> tuple[Any, str | None]:
    """(output, error) of a CallToolResult: JSON text as its value, else structured content,
    else the text itself; ``isError`` results give their text as the error."""
    texts = [getattr(block, "text", "") for block in result.content or ()]
    text = "".join(t for t in texts if isinstance(t, str))[:MAX_OUTPUT_CHARS]
    if _field(result, "is_error", "isError"):
        return None, text or "the tool reported an error"
    if len(texts) == 1:
        try:
            return loads_untrusted(text, MAX_VALUE_DEPTH), None
        except ValueError:
            pass
    structured = _field(result, "structured_content", "structuredContent")
    if structured is not None:
        return structured, None
    return text, None


def tool_definition(tool: Any) -> dict[str, Any]:
    """What the lock file keeps of a listed tool."""
    return {
        "name": tool.name,
        "description": tool.description or "",
        "inputSchema": _field(tool, "input_schema", "inputSchema") or {"type": "object"},
    }


class McpConnection:
    """One open session with one server, usable from any task of the event loop."""

    def __init__(self, server: McpServer, timeout_s: float = 30.0) -> None:
        if server.url:
            refuse_clear_text(
                server.url, header_secrets(server.headers), f"MCP server {server.url}"
            )
        self.server = server
        self.timeout_s = timeout_s
        self._session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._error: BaseException | None = None
        self._lock = asyncio.Lock()
        self._stderr: StderrTail | None = None

    async def _hold(self) -> None:
        self._stderr = StderrTail()  # the server's stderr: its last lines, kept for errors
        try:
            await self._serve(self._stderr.file)
        except Exception as exc:  # reported to the caller waiting for the session
            self._error = exc
        finally:
            self._stderr.close()
            self._ready.set()

    async def _serve(self, errlog: TextIO) -> None:
        from mcp import ClientSession

        async with (
            _transport(self.server, self.timeout_s, errlog) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            self._session = session
            self._ready.set()
            await self._stop.wait()

    async def session(self) -> Any:
        async with self._lock:
            if self._task is None:
                self._task = asyncio.create_task(self._hold())
            try:
                await asyncio.wait_for(self._ready.wait(), self.timeout_s)
            except TimeoutError:
                self._error = TimeoutError(f"no answer within {self.timeout_s:g} s")
        if self._session is None or self._error is not None:
            said = self._stderr.text() if self._stderr and self.server.command else ""
            said = redact(said, header_secrets(self.server.headers))
            raise RunError(
                f"cannot start or reach the MCP server {self.server.key!r} "
                f"({_describe(self._error, self.server)}); check the command or url in the suite"
                + (
                    f"\nthe server's stderr ended with:\n{textwrap.indent(said, '  | ')}"
                    if said
                    else ""
                )
            )
        return self._session

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server lists, following pagination."""
        from mcp.types import PaginatedRequestParams

        session = await self.session()
        out: list[dict[str, Any]] = []
        cursor = None
        for _ in range(1000):  # a server that pages forever must not hang us
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            listed = await asyncio.wait_for(session.list_tools(params=params), self.timeout_s)
            out.extend(tool_definition(t) for t in listed.tools)
            cursor = _field(listed, "next_cursor", "nextCursor")
            if not cursor:
                break
        return out

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[Any, str | None, bool]:
        """(output, error, answered) of one call. A tool's own error is answered; a protocol
        failure or timeout is not (the caller must not record it as the tool's output)."""
        session = await self.session()
        limit: Any = self.timeout_s
        if _sdk_major() < 2:
            from datetime import timedelta

            limit = timedelta(seconds=self.timeout_s)
        try:
            result = await session.call_tool(name, arguments, read_timeout_seconds=limit)
        except Exception as exc:  # the server's failure is the model's observation
            return None, f"the MCP server failed: {_describe(exc, self.server)}", False
        return (*result_to_output(result), True)

    async def close(self) -> None:
        """Leave the session; a server that never finished starting is abandoned at once."""
        self._stop.set()
        if self._task is None:
            return
        grace = CLOSE_GRACE_S if self._session is not None else 0
        done, _ = await asyncio.wait({self._task}, timeout=grace)
        if not done:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def _describe(exc: BaseException | None, server: McpServer) -> str:
    text = f"{type(exc).__name__}: {exc}" if exc is not None else "unknown error"
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        text = _describe(exc.exceptions[0], server)
    return redaction.scrub(redact(text, header_secrets(server.headers)))[:300]


async def list_server_tools(server: McpServer, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Start or connect to a server, list its tools, and close it again."""
    connection = McpConnection(server, timeout_s)
    try:
        return await connection.list_tools()
    finally:
        await connection.close()
