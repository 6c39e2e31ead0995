"""`evalspec tools refresh SUITE`: list the tools of every MCP server a suite names, into its lock.

The suite is read only as far as its `tools:` (includes resolved, schema checked), because a
suite whose lock file is missing or stale does not validate yet: refreshing is how it gets there.
The lock is rewritten whole and atomically, only after every server answered; a check
(`--check`) compares instead and never writes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalspec._language.defaults import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT
from evalspec._suite.build_mcp import server_of, source_problem
from evalspec._suite.load import LDict, LList, load_yaml_at
from evalspec._suite.mcp_drift import ServerDrift, tool_drift
from evalspec._suite.mcp_lock import LockedTools, lock_path, read_lock, write_lock
from evalspec._suite.model import McpServer
from evalspec._suite.render import resolve_includes
from evalspec._suite.schema import schema_problems
from evalspec._util.errors import Problem, SpecError


@dataclass
class RefreshOutcome:
    """The lock file written (or checked), the tools each MCP server listed, and what changed."""

    lock_file: Path
    written: bool = False
    """False for a check, and for a suite with no MCP server: the lock was left as it was."""
    servers: dict[str, list[str]] = field(default_factory=dict)
    """Server key -> names of the tools it listed."""
    changed: list[str] = field(default_factory=list)
    """Tools added, removed or redefined since the previous lock, as `+name`, `-name`, `~name`."""
    drift: list[ServerDrift] = field(default_factory=list)
    """Per server whose tool list differs from the lock: exactly what (renames, descriptions,
    input schemas by JSON pointer)."""


def mcp_servers(suite_path: Path) -> tuple[list[McpServer], float]:
    """The MCP servers named by a suite's tool sources, in file order, each once, and how long
    to wait for one answer (the suite's `run.timeout`)."""
    doc, pos = load_yaml_at(suite_path)
    if not isinstance(doc, LDict):
        raise SpecError([Problem.at(pos, "", "a suite must be a mapping of keys")])
    problems: list[Problem] = []
    resolve_includes(doc, suite_path.resolve().parent, problems, chain=(suite_path.resolve(),))
    problems.extend(schema_problems(doc))
    if problems:
        raise SpecError(problems)
    found: dict[str, McpServer] = {}
    for i, item in enumerate(doc.get("tools") or LList()):
        if isinstance(item, LDict) and "mcp" in item:
            problem = source_problem(item["mcp"])
            if problem:
                where = item.value_pos.get("mcp", item.pos)
                problems.append(Problem.at(where, f"tools[{i}].mcp", problem))
                continue
            server = server_of(item["mcp"], suite_path.resolve().parent)
            found.setdefault(server.key, server)
    if problems:
        raise SpecError(problems)
    run = doc.get("run")
    timeout = run.get("timeout") if isinstance(run, LDict) else None  # the schema checked it
    return list(found.values()), float(timeout if timeout is not None else DEFAULT_TIMEOUT)


def _changes(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    before = {t["name"]: t for t in old}
    after = {t["name"]: t for t in new}
    out = [f"+{n}" for n in after if n not in before]
    out += [f"-{n}" for n in before if n not in after]
    out += [f"~{n}" for n in after if n in before and before[n] != after[n]]
    return out


async def _list_all(servers: list[McpServer], timeout_s: float) -> LockedTools:
    from evalspec._tools.mcp_client import list_server_tools

    listed = await asyncio.gather(*(list_server_tools(s, timeout_s) for s in servers))
    return {s.key: tools for s, tools in zip(servers, listed, strict=True)}


def refresh_lock(
    suite_path: str | Path, *, timeout_s: float | None = None, check: bool = False
) -> RefreshOutcome:
    """List every MCP server's tools now and rewrite the suite's lock file with them (with
    `check`, only compare them with it); a server gets `timeout_s` (by default the suite's
    `run.timeout`) to start and to answer."""
    path = Path(suite_path)
    servers, suite_timeout = mcp_servers(path)
    timeout_s = suite_timeout if timeout_s is None else timeout_s
    lock_file = lock_path(path)
    outcome = RefreshOutcome(lock_file)
    if not servers:
        return outcome
    from evalspec._tools.mcp_client import require_mcp

    require_mcp()
    previous = read_lock(lock_file) or {}
    fresh = asyncio.run(_list_all(servers, timeout_s))
    for key, tools in fresh.items():
        outcome.servers[key] = [t["name"] for t in tools]
        outcome.changed += _changes(previous.get(key, []), tools)
    outcome.drift = tool_drift(previous, fresh)
    if not check:
        write_lock(lock_file, fresh)
        outcome.written = True
    return outcome
