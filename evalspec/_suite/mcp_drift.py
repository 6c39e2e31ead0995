"""What changed in MCP servers' tool lists between two locks (or a lock and the servers now).

A server's `tools/list` can change under a suite (a tool renamed, a description reworded, a
parameter's type changed), and results stop reproducing. `tools refresh --check` and `review`
both say exactly what: tools added, removed or renamed (the same description and schema under
a new name), description changes, and input-schema changes by JSON pointer. The lists come
from untrusted servers, so every list and value said here is bounded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec._util.errors import EvalspecError
from evalspec._util.json_values import short

ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "(none)"})()
"""The side of a schema change where the key is not there."""

MAX_LISTED = 50
"""Tools, or schema changes of one tool, listed per server; past it, a count says how many more."""
MAX_DEPTH = 32
"""Schema levels walked; deeper, a subtree that differs is one change at its pointer."""
MAX_VALUE = 120
"""Characters of a description or schema value shown; longer ones are cut."""


@dataclass(frozen=True)
class SchemaChange:
    """One place of a tool's input schema whose value differs."""

    pointer: str
    """RFC 6901 JSON pointer into `inputSchema` (`/properties/a/type`; "" for the whole)."""
    before: Any
    after: Any
    """ABSENT where the key is not there on that side."""

    def text(self) -> str:
        def side(value: Any) -> str:
            return "(none)" if value is ABSENT else short(value, MAX_VALUE)

        return f"{self.pointer or '/'}: {side(self.before)} -> {side(self.after)}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pointer": self.pointer}
        if self.before is not ABSENT:
            out["before"] = self.before
        if self.after is not ABSENT:
            out["after"] = self.after
        return out


@dataclass(frozen=True)
class ToolChange:
    """A tool listed on both sides (by name, or renamed) whose definition differs."""

    name: str
    """Its name now."""
    description: tuple[str, str] | None = None
    """(before, after) when the description differs."""
    schema: tuple[SchemaChange, ...] = ()
    more_schema: int = 0
    """Schema changes beyond those listed."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = {"before": self.description[0], "after": self.description[1]}
        if self.schema:
            out["input_schema"] = [c.to_dict() for c in self.schema]
        if self.more_schema:
            out["more_input_schema_changes"] = self.more_schema
        return out


@dataclass(frozen=True)
class ServerDrift:
    """How one server's tool list differs between the lock and now (or two locks)."""

    server: str
    """The server as the lock names it: its command line or url."""
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    """(old name, new name): the same description and schema under another name."""
    changed: tuple[ToolChange, ...] = ()
    more: int = 0
    """Tools added, removed, renamed or changed beyond those listed."""
    listed_before: bool = True
    listed_after: bool = True
    """False: the server is not in that lock at all (new to the suite, or gone from it)."""

    def lines(self) -> list[str]:
        """What changed, one line each: `+Math.Plus`, `Math.Add: description "a" -> "b"`."""
        if not self.listed_before:
            head = [f"server added ({len(self.added)} tools)"]
        elif not self.listed_after:
            head = [f"server removed ({len(self.removed)} tools)"]
        else:
            head = []
        out = [
            *head,
            *(f"+{n} added" for n in self.added),
            *(f"-{n} removed" for n in self.removed),
        ]
        if head:  # a server that came or went: its tools are not worth a line each
            out = head
        out += [f"{old} renamed to {new}" for old, new in self.renamed]
        for tool in self.changed:
            if tool.description is not None:
                before, after = (short(d, MAX_VALUE) for d in tool.description)
                out.append(f"{tool.name}: description {before} -> {after}")
            out += [f"{tool.name}: inputSchema {c.text()}" for c in tool.schema]
            if tool.more_schema:
                out.append(f"{tool.name}: and {tool.more_schema} more inputSchema changes")
        if self.more:
            out.append(f"and {self.more} more tools changed")
        return out

    def counts(self) -> str:
        """`1 added, 2 removed, 1 renamed, 3 changed`."""
        parts = [
            (len(self.added), "added"),
            (len(self.removed), "removed"),
            (len(self.renamed), "renamed"),
            (len(self.changed), "changed"),
        ]
        said = ", ".join(f"{n} {what}" for n, what in parts if n)
        return said + (f", {self.more} more" if self.more else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "listed_before": self.listed_before,
            "listed_after": self.listed_after,
            "added": list(self.added),
            "removed": list(self.removed),
            "renamed": [{"from": old, "to": new} for old, new in self.renamed],
            "changed": [t.to_dict() for t in self.changed],
            "more": self.more,
        }


def tool_drift(
    before: dict[str, list[dict[str, Any]]], after: dict[str, list[dict[str, Any]]]
) -> list[ServerDrift]:
    """Every server whose tool list differs, in the order of `after` then the servers gone."""
    out = []
    for key in [*after, *(k for k in before if k not in after)]:
        found = _server_drift(key, before.get(key), after.get(key))
        if found is not None:
            out.append(found)
    return out


def locks_drift(before_suite: Path, after_suite: Path) -> list[ServerDrift]:
    """How the tool lock beside `after_suite` differs from the one beside `before_suite`
    (review: the base's and the head's). A lock that is missing is empty; one that cannot be
    read says nothing here (loading its suite names the problem)."""
    from evalspec._suite.mcp_lock import lock_path, read_lock

    try:
        before, after = read_lock(lock_path(before_suite)), read_lock(lock_path(after_suite))
    except EvalspecError:
        return []
    return tool_drift(before or {}, after or {})


def _server_drift(
    key: str, old: list[dict[str, Any]] | None, new: list[dict[str, Any]] | None
) -> ServerDrift | None:
    was = {str(t.get("name")): t for t in old or []}
    now = {str(t.get("name")): t for t in new or []}
    added = [n for n in now if n not in was]
    removed = [n for n in was if n not in now]
    renamed: list[tuple[str, str]] = []
    gone_by_body: dict[str, list[str]] = {}
    for name in removed:
        gone_by_body.setdefault(_body(was[name]), []).append(name)
    for name in list(added):
        same = gone_by_body.get(_body(now[name]))
        if same:
            old_name = same.pop(0)
            renamed.append((old_name, name))
            added.remove(name)
            removed.remove(old_name)
    changed = [c for n in now if n in was and (c := _tool_change(n, was[n], now[n])) is not None]
    if not (added or removed or renamed or changed) and (old is None) == (new is None):
        return None
    budget = MAX_LISTED
    kept: list[list[Any]] = []
    for items in (added, removed, renamed, changed):
        kept.append(items[:budget])
        budget -= len(kept[-1])
    total = len(added) + len(removed) + len(renamed) + len(changed)
    return ServerDrift(
        key,
        tuple(kept[0]),
        tuple(kept[1]),
        tuple(kept[2]),
        tuple(kept[3]),
        more=total - sum(len(k) for k in kept),
        listed_before=old is not None,
        listed_after=new is not None,
    )


def _body(tool: dict[str, Any]) -> str:
    """A definition without its name, to find the same tool under another name."""
    rest = {k: v for k, v in tool.items() if k != "name"}
    return json.dumps(rest, sort_keys=True, default=str)


def _tool_change(name: str, old: dict[str, Any], new: dict[str, Any]) -> ToolChange | None:
    description = None
    if old.get("description") != new.get("description"):
        description = (str(old.get("description") or ""), str(new.get("description") or ""))
    schema: list[SchemaChange] = []
    _walk(old.get("inputSchema", ABSENT), new.get("inputSchema", ABSENT), "", 0, schema)
    if description is None and not schema:
        return None
    return ToolChange(
        name, description, tuple(schema[:MAX_LISTED]), max(0, len(schema) - MAX_LISTED)
    )


def _walk(old: Any, new: Any, pointer: str, depth: int, out: list[SchemaChange]) -> None:
    """Append each place where `old` and `new` differ: mappings key by key, anything else
    (lists included: `required`, `enum`) whole at its pointer."""
    if isinstance(old, dict) and isinstance(new, dict) and depth < MAX_DEPTH:
        for key in [*new, *(k for k in old if k not in new)]:
            step = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
            _walk(old.get(key, ABSENT), new.get(key, ABSENT), step, depth + 1, out)
    elif old is ABSENT or new is ABSENT or not _same(old, new):
        out.append(SchemaChange(pointer, old, new))


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (1 and 1.0 alike, True and 1 not)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)
