"""The tool lock file: MCP tool definitions as last listed, kept beside the suite and committed.

``suites/calc.yaml`` takes its MCP tools from ``suites/calc.tools.lock.json``. Reading it is
plain JSON, so validate, plan, offline runs and review never start a server nor import ``mcp``;
``evalspec tools refresh`` rewrites it, and a changed definition shows in the pull request's
diff. Keys are sorted and lists kept in the server's order, so refreshing an unchanged server
rewrites the same bytes.

    {"_comment": "...",
     "servers": {"python -m my_server": {"tools": [{"name", "description", "inputSchema"}]}}}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec._util import finite
from evalspec._util.errors import Problem, SpecError
from evalspec._util.files import atomic_write
from evalspec._util.project import checked, kind
from evalspec._util.reading import read_json

LOCK_SUFFIX = ".tools.lock.json"
TOOL_LOCK = kind("tool lock file")
COMMENT = (
    "MCP tool definitions listed by `evalspec tools refresh`; review changes like code. "
    "Validate, plan, offline runs and review read this file instead of starting the servers."
)
LockedTools = dict[str, list[dict[str, Any]]]
"""Server key -> the tool definitions it listed."""


def lock_path(suite_path: str | Path) -> Path:
    """``calc.yaml`` -> ``calc.tools.lock.json`` in the same folder."""
    path = Path(suite_path)
    return path.with_name(path.stem + LOCK_SUFFIX)


def server_key(command: list[str] | tuple[str, ...] | None, url: str | None) -> str:
    """How the lock names a server: its command line, or its url (never its headers)."""
    return " ".join(command) if command else str(url)


def read_lock(path: Path) -> LockedTools | None:
    """The locked definitions, None when there is no lock file; a broken one is a SpecError.
    A link in its place is refused (the lock lies beside its suite, in the project)."""
    path = checked(path.name, path.parent, TOOL_LOCK)
    if not path.exists() and not path.is_symlink():
        return None
    data = read_json(path)  # a file that is not a regular, sized, UTF-8 JSON file: InputError
    servers = data.get("servers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise _broken(path, 'no "servers" object')
    out: LockedTools = {}
    for key, entry in servers.items():
        tools = entry.get("tools") if isinstance(entry, dict) else None
        if not isinstance(tools, list) or not all(
            isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools
        ):
            raise _broken(path, f"server {key!r} has no list of named tools")
        out[key] = tools
    return out


def write_lock(path: Path, servers: LockedTools) -> None:
    """Replace the lock file atomically with these servers' definitions."""
    path = checked(path.name, path.parent, TOOL_LOCK)
    data = {
        "_comment": COMMENT,
        "servers": {key: {"tools": tools} for key, tools in sorted(servers.items())},
    }
    with atomic_write(path) as fh:
        fh.write(finite.dumps(data, path.name, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def _broken(path: Path, what: str) -> SpecError:
    return SpecError(
        [
            Problem(
                str(path),
                1,
                1,
                "",
                f"the tool lock file is broken: {what}",
                "recreate it with `evalspec tools refresh SUITE`",
            )
        ]
    )
