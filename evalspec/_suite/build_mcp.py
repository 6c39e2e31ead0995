"""`tools: [{mcp: ...}]` entries: the tools an MCP server listed, read from the suite's lock file.

Nothing here starts a server or imports ``mcp``: the definitions come from
``<suite>.tools.lock.json`` (see ``suite/mcp_lock.py``), written by ``evalspec tools refresh``.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evalspec._suite.build_base import Reporter, make_loc, plain
from evalspec._suite.load import LDict, LList, Pos
from evalspec._suite.mcp_lock import LockedTools, lock_path, read_lock, server_key
from evalspec._suite.model import McpServer, SimulatedResponse, Tool, default
from evalspec._tool_schema import pattern_problems, schema_error
from evalspec._util.errors import SpecError

_UNSAFE_FILE = re.compile(r"[^A-Za-z0-9_.-]")
CACHE_SUFFIX = ".mcp_cache"
CACHE_CATEGORY = "mcp"
"""StableToolBench's <cache>/<category>/<tool>/<api>.json is <cache>/mcp/<server>/<tool>.json."""


def file_slug(name: str) -> str:
    """A name safe as one path component (no separators, never `.` or `..`)."""
    return _UNSAFE_FILE.sub("_", name).strip(".") or "_"


def default_server_name(command: list[str] | None, url: str | None) -> str:
    """`python -m my_server` -> my_server; `node server.js --x` -> server;
    `http://127.0.0.1:8000/mcp` -> 127.0.0.1_8000."""
    if command:
        args = command[1:]
        if "-m" in args[:-1]:
            name = args[args.index("-m") + 1]
        else:
            name = next((Path(a).stem for a in args if not a.startswith("-")), command[0])
        return file_slug(Path(name).name)[:64]
    parts = urlsplit(url or "")
    return file_slug(f"{parts.hostname or 'server'}_{parts.port or ''}".rstrip("_"))[:64]


def source_problem(source: dict[str, Any]) -> str | None:
    """What is wrong with how an `mcp:` tool source names its server, if anything."""
    if ("command" in source) == ("url" in source):
        return (
            "an mcp tool source names its server with exactly one of `command` (stdio) "
            "or `url` (HTTP)"
        )
    return None


def server_of(source: dict[str, Any], base: Path) -> McpServer:
    """The server an `mcp:` tool source names (schema-valid), commands run in `base`."""
    command = list(source["command"]) if "command" in source else None
    return McpServer(
        key=server_key(command, source.get("url")),
        command=tuple(command or ()),
        url=source.get("url"),
        headers={str(k): str(v) for k, v in (source.get("headers") or {}).items()},
        cwd=str(base),
        execute=bool(source.get("execute", default(McpServer, "execute"))),
    )


def matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


class McpPart(Reporter):
    """Builds the Tool objects of `mcp:` tool sources from the lock file."""

    path: Path
    _lock: LockedTools | bool | None = False
    """The lock file's content once read; False before the first read, None if absent."""
    _unlocked = False

    responses: Callable[[LList, str, str, set[str]], tuple[SimulatedResponse, ...]]
    """A tool's simulated answers, read by the tools part (ToolsPart, a subclass)."""

    def stop_if_unlocked(self) -> None:
        """Without its tools, every case naming them would add a problem: report the cause only."""
        if self._unlocked:
            raise SpecError(self.problems)

    def mcp_tools(self, item: LDict, path: str, pos: Pos, seen: dict[str, Pos]) -> list[Tool]:
        source = item["mcp"]
        where = f"{path}.mcp"
        spos = self.vpos(item, "mcp")
        extra = sorted(k for k in item if k != "mcp")
        if extra:
            self.problem(
                pos,
                path,
                f"an mcp tool source cannot also have {extra}",
                "give simulated answers under `mcp: {responses: {tool name: [...]}}`",
            )
        problem = source_problem(source)
        if problem:
            self.problem(spos, where, problem, "command: [python, -m, my_server]")
            return []
        server = server_of(source, self.base)
        key = server.key
        lock_file = lock_path(self.path)
        if self._lock is False:
            self._lock = read_lock(lock_file)
        listed = self._lock.get(key) if isinstance(self._lock, dict) else None
        if listed is None:
            self.problem(
                spos,
                where,
                f"no tool definitions of MCP server {key!r} are locked in {lock_file.name}",
                f"list them with `evalspec tools refresh {self.path}` and commit the lock file",
            )
            self._unlocked = True
            return []
        include = [str(p) for p in source.get("include") or ()]
        exclude = [str(p) for p in source.get("exclude") or ()]
        self._check_patterns(source, where, spos, listed)
        folder = self._cache_folder(source, server, where)
        rules = source.get("responses") or {}
        chosen = [
            t
            for t in listed
            if (not include or matches(t["name"], include)) and not matches(t["name"], exclude)
        ]
        self._check_rules(rules, chosen, where, spos)
        out = []
        for definition in chosen:
            name = definition["name"]
            if name in seen:
                self.problem(
                    spos,
                    where,
                    f"tool {name!r} is defined twice (first on line {seen[name].line})",
                    "leave one of them out with `exclude:`",
                )
            seen.setdefault(name, spos)
            out.append(self._mcp_tool(definition, server, folder, rules.get(name), where, spos))
        return out

    def _check_patterns(
        self, source: LDict, where: str, pos: Pos, listed: list[dict[str, Any]]
    ) -> None:
        """An include or exclude pattern that matches nothing is most likely a typo."""
        for field_name in ("include", "exclude"):
            node = source.get(field_name) or ()
            for j, pattern in enumerate(node):
                if not any(matches(t["name"], [str(pattern)]) for t in listed):
                    self.problem(
                        node.item_pos[j] if isinstance(node, LList) else pos,
                        f"{where}.{field_name}[{j}]",
                        f"{str(pattern)!r} matches no tool the server listed",
                        "tools: " + ", ".join(t["name"] for t in listed),
                    )

    def _check_rules(self, rules: Any, chosen: list[dict[str, Any]], where: str, pos: Pos) -> None:
        names = [t["name"] for t in chosen]
        for name in rules:
            if name not in names:
                self.problem(
                    rules.key_pos.get(name, pos) if isinstance(rules, LDict) else pos,
                    f"{where}.responses.{name}",
                    f"the server offers no tool {name!r} here",
                    "tools: " + ", ".join(names),
                )

    def _cache_folder(self, source: LDict, server: McpServer, where: str) -> Path:
        """<cache>/mcp/<server>/, inside the suite's folder: live runs write there."""
        given = self.written_path(source, "cache", where)
        cache = Path(given) if given else self.base / (self.path.stem + CACHE_SUFFIX)
        name = source.get("name") or default_server_name(list(server.command), server.url)
        return cache / CACHE_CATEGORY / file_slug(name)

    @staticmethod
    def schema_problems(params: dict[str, Any]) -> list[str]:
        """Why a locked schema cannot be used: not JSON Schema, or a pattern RE2 refuses."""
        if (error := schema_error(params)) is not None:
            where = "/".join(str(p) for p in error.path)
            return [f"{where or 'the schema'}: {error.message}"]
        return pattern_problems(params)

    def _mcp_tool(
        self,
        definition: dict[str, Any],
        server: McpServer,
        folder: Path,
        rules: Any,
        where: str,
        pos: Pos,
    ) -> Tool:
        name = definition["name"]
        params = definition.get("inputSchema")
        if not isinstance(params, dict) or params.get("type", "object") != "object":
            self.problem(
                pos,
                where,
                f"the locked inputSchema of {name!r} is not a JSON Schema object",
                "fix the server, then `evalspec tools refresh`",
            )
            params = {"type": "object"}
        for why in self.schema_problems(params):
            self.problem(
                pos,
                where,
                f"the locked inputSchema of {name!r} is not usable: {why}",
                "fix the server, then `evalspec tools refresh`",
            )
            params = {"type": "object"}
        props = set((params.get("properties") or {}).keys())
        responses: tuple[SimulatedResponse, ...] = ()
        if isinstance(rules, LList):
            responses = self.responses(rules, f"{where}.responses.{name}", name, props)
        return Tool(
            name=name,
            description=str(definition.get("description") or ""),
            parameters=plain(params),
            responses=responses,
            cache_file=os.path.normpath(folder / (file_slug(name) + ".json")),
            mcp=server,
            loc=make_loc(pos, where),
        )
