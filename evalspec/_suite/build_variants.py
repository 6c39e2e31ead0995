"""`variants:` of a suite's tools: each a version of the definitions the model reads.

A variant starts from the suite's tools, takes each MCP tool's definition from another lock
file of the same servers (`lock:`), then applies edits of single tools (`tools:`). Cases and
the tools' answers keep the base names, so a variant never changes what is expected, only
what the model reads; each model then runs every case once per variant.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from evalspec._suite.build_base import Reporter, make_loc, plain
from evalspec._suite.build_mcp import McpPart
from evalspec._suite.load import LDict, LList, Pos
from evalspec._suite.mcp_lock import read_lock
from evalspec._suite.model import ModelSpec, Tool, ToolVariant
from evalspec._util.paths import escape_reason

Edits = dict[str, dict[str, Any]]
"""Base tool name -> the function definition offered in its place."""


class VariantsPart(Reporter):
    """Builds `variants:` into ToolVariant objects, each problem at its place."""

    def variants(self, raw: LList | None, tools: list[Tool]) -> tuple[ToolVariant, ...]:
        if not raw:
            return ()
        out: list[ToolVariant] = []
        seen: set[str] = set()
        for i, item in enumerate(raw):
            path, pos = f"variants[{i}]", raw.item_pos[i]
            name = str(item["name"])
            if name in seen:
                self.problem(
                    self.vpos(item, "name"),
                    f"{path}.name",
                    f"two variants are named {name!r}",
                    "give each variant a distinct name",
                )
            seen.add(name)
            out.append(self._variant(item, name, tools, path, pos))
        return tuple(out)

    def _variant(
        self, item: LDict, name: str, tools: list[Tool], path: str, pos: Pos
    ) -> ToolVariant:
        base = {t.name: t.to_openai()["function"] for t in tools}
        edits: Edits = {}
        dropped: set[str] = set()
        if "lock" in item:
            self._from_lock(item, tools, edits, dropped, path)
        raw_edits = item.get("tools")
        if isinstance(raw_edits, LDict):
            for tool, edit in raw_edits.items():
                where = f"{path}.tools.{tool}"
                if tool not in base:
                    self.problem(
                        raw_edits.key_pos.get(tool, pos),
                        where,
                        f"{tool!r} is not a tool of this suite",
                        "name a base tool; tools: " + ", ".join(base),
                    )
                    continue
                self._edit(edit, tool, edits.get(tool, base[tool]), edits, dropped, where)
        self._check_names(item, base, edits, dropped, path, pos)
        changed = tuple((k, v) for k, v in edits.items() if v != base[k] and k not in dropped)
        return ToolVariant(name, changed, frozenset(dropped), make_loc(pos, path))

    def _from_lock(
        self, item: LDict, tools: list[Tool], edits: Edits, dropped: set[str], path: str
    ) -> None:
        """Each MCP tool's definition as the variant's lock file lists it (absent: dropped)."""
        lpos = self.vpos(item, "lock")
        value = str(item["lock"])
        why = escape_reason(self.base, value)
        if why:
            self.problem(
                lpos,
                f"{path}.lock",
                f"{value!r} cannot be read: {why}",
                "give a lock file beside the suite, e.g. calc.v2.tools.lock.json",
            )
            return
        lock = read_lock(self.base / value)
        if lock is None:
            self.problem(
                lpos,
                f"{path}.lock",
                f"there is no lock file {value!r} beside the suite",
                "write it with `evalspec tools refresh` against the other version of the "
                "server, then rename it",
            )
            return
        servers = {t.mcp.key for t in tools if t.mcp is not None}
        for key in sorted(servers - set(lock)) if not _one_each(servers, lock) else ():
            self.problem(
                lpos,
                f"{path}.lock",
                f"{value!r} lists no tools of MCP server {key!r}",
                "servers in it: " + (", ".join(sorted(lock)) or "none"),
            )
        by_name = {key: {d["name"]: d for d in listed} for key, listed in lock.items()}
        for tool in tools:
            listed = _listed(by_name, tool, servers)
            if listed is None:
                continue
            definition = listed.get(tool.name)
            if definition is None:
                dropped.add(tool.name)
                continue
            params = definition.get("inputSchema")
            if self._schema_problem(params, lpos, f"{path}.lock", tool.name):
                continue
            edits[tool.name] = {
                "name": tool.name,
                "description": str(definition.get("description") or ""),
                "parameters": plain(params),
            }

    def _edit(
        self,
        edit: LDict,
        tool: str,
        current: dict[str, Any],
        edits: Edits,
        dropped: set[str],
        where: str,
    ) -> None:
        """One tool's edit over its definition so far."""
        if edit.get("drop"):
            dropped.add(tool)
            return
        new = dict(current)
        if "name" in edit:
            new["name"] = str(edit["name"])
        if "description" in edit:
            new["description"] = str(edit["description"])
        if "input_schema" in edit:
            params = edit["input_schema"]
            spos = self.vpos(edit, "input_schema")
            if not self._schema_problem(params, spos, f"{where}.input_schema", tool):
                new["parameters"] = plain(params)
        edits[tool] = new

    def _schema_problem(self, params: Any, pos: Pos, where: str, tool: str) -> bool:
        """Report why `params` cannot be a tool's input schema; True when it cannot."""
        if not isinstance(params, dict) or params.get("type", "object") != "object":
            self.problem(
                pos,
                where,
                f"the input schema of {tool!r} is not a JSON Schema object",
                "give an object schema: {type: object, properties: {a: {type: number}}}",
            )
            return True
        whys = McpPart.schema_problems(plain(params))
        for why in whys:
            self.problem(
                pos,
                where,
                f"the input schema of {tool!r} is not usable: {why}",
                "fix the schema (JSON Schema, draft 2020-12)",
            )
        return bool(whys)

    def _check_names(
        self,
        item: LDict,
        base: dict[str, Any],
        edits: Edits,
        dropped: set[str],
        path: str,
        pos: Pos,
    ) -> None:
        """Two tools offered under one name would make the model's calls ambiguous: the
        renamed one is at fault, at its `name:`."""
        owners: dict[str, list[str]] = {}
        for tool in base:
            if tool not in dropped:
                owners.setdefault(edits.get(tool, base[tool])["name"], []).append(tool)
        node = item.get("tools")
        for offered, tools in owners.items():
            for tool in tools if len(tools) > 1 else ():
                if offered == tool:
                    continue
                edit = node.get(tool) if isinstance(node, LDict) else None
                other = next(t for t in tools if t != tool)
                self.problem(
                    self.vpos(edit, "name") if isinstance(edit, LDict) else pos,
                    f"{path}.tools.{tool}.name",
                    f"{tool!r} is renamed to {offered!r}, which {other!r} is offered as too",
                    "rename it to a name no other tool of the variant has, or drop the other "
                    f"(`{other}: {{drop: true}}`)",
                )


def _listed(
    lock: dict[str, dict[str, dict[str, Any]]], tool: Tool, servers: set[str]
) -> dict[str, dict[str, Any]] | None:
    """The definitions the variant's lock lists for `tool`'s server, by name (None: the tool
    is not an MCP tool, or its server is not in the lock)."""
    if tool.mcp is None:
        return None
    return next(iter(lock.values())) if _one_each(servers, lock) else lock.get(tool.mcp.key)


def _one_each(servers: set[str], lock: dict[str, Any]) -> bool:
    """One server in the suite and one in the lock: the lock's stands for the suite's, under
    whatever command the other version was listed with (`--descriptions v2`)."""
    return len(servers) == 1 and len(lock) == 1


def variant_models(
    models: tuple[ModelSpec, ...], variants: tuple[ToolVariant, ...], players: set[str]
) -> tuple[ModelSpec, ...]:
    """Each evaluated model once per variant, named `<model>@<variant>`, variants in order
    under each model; a model playing a simulated user stays as it is."""
    if not variants:
        return models
    out: list[ModelSpec] = []
    for m in models:
        if m.name in players:
            out.append(m)
            continue
        out.extend(
            replace(m, name=f"{m.name}@{v.name}", variant=v, base_name=m.name) for v in variants
        )
    return tuple(out)
