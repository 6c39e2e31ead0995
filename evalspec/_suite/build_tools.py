"""Tools of a suite: OpenAI function definitions plus how evalspec simulates them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalspec._language.defaults import DEFAULT_API_KEY_ENV
from evalspec._suite.build_base import make_loc, plain
from evalspec._suite.build_faults import FaultsPart
from evalspec._suite.build_mcp import McpPart
from evalspec._suite.limits import MAX_TOOLS_ENV, SuiteTooLarge, max_tools
from evalspec._suite.load import LDict, LList, Pos
from evalspec._suite.model import (
    LLMSimulation,
    SimulatedResponse,
    Tool,
)
from evalspec._suite.schema import (
    JSON_TYPES,
    did_you_mean,
    locate,
    suggest_json_type,
)
from evalspec._tool_schema import pattern_problems, schema_error
from evalspec._util.errors import Problem

if TYPE_CHECKING:
    from evalspec._suite.state.types import Behavior


def refuse_too_many_tools(doc: LDict) -> None:
    """SuiteTooLarge when the suite defines more tools than `max_tools()`: checked as soon as
    the document is read, before any schema (100,000 tools took 151 s to validate)."""
    tools = doc.get("tools")
    limit = max_tools()
    if isinstance(tools, LList) and len(tools) > limit:
        raise SuiteTooLarge(
            [
                Problem.at(
                    tools.pos,
                    "tools",
                    f"the suite defines {len(tools)} tools; the limit is {limit}",
                    f"split the suite, or raise the limit with {MAX_TOOLS_ENV}",
                )
            ]
        )


class ToolsPart(FaultsPart, McpPart):
    """Builds `tools:` entries into Tool objects, checking their schemas and rules."""

    if TYPE_CHECKING:  # build_state.StatePart, beside this part in the builder

        def behavior(
            self, item: LDict, path: str, name: str, props: set[str]
        ) -> Behavior | None: ...

    def tools(self, raw: LList) -> list[Tool]:
        out: list[Tool] = []
        seen: dict[str, Pos] = {}
        for i, item in enumerate(raw):
            path = f"tools[{i}]"
            pos = raw.item_pos[i]
            if "mcp" in item:
                out.extend(self.mcp_tools(item, path, pos, seen))
                continue
            if "name" not in item:
                self.problem(pos, path, "a tool needs a name", "name: get_weather")
                continue
            name = item["name"]
            if name in seen:
                self.problem(
                    self.vpos(item, "name"),
                    f"{path}.name",
                    f"tool {name!r} is defined twice (first on line {seen[name].line})",
                    "remove or rename one of them",
                )
            seen.setdefault(name, self.vpos(item, "name"))
            params = item.get("parameters") or {"type": "object", "properties": {}}
            if (error := schema_error(params)) is not None:
                self.bad_parameters(item, path, error)
                params = {"type": "object"}
            for why in pattern_problems(params):
                self.problem(
                    self.vpos(item, "parameters"),
                    f"{path}.parameters",
                    why,
                    "write the pattern without backreferences or lookarounds",
                )
                params = {"type": "object"}
            if params.get("type", "object") != "object":
                self.problem(
                    self.vpos(item, "parameters"),
                    f"{path}.parameters",
                    "tool parameters must be `type: object`",
                    "wrap arguments in `properties:`",
                )
            props = set((params.get("properties") or {}).keys())
            responses = self.responses(item.get("responses") or LList(), path, name, props)
            cache = item.get("cache") or {}
            sim = item.get("simulate")
            out.append(
                Tool(
                    name=name,
                    description=item.get("description", ""),
                    parameters=plain(params),
                    responses=responses,
                    cache_dir=self.written_path(cache, "dir", f"{path}.cache"),
                    cache_file=self.written_path(cache, "file", f"{path}.cache"),
                    simulate=LLMSimulation(
                        model=sim["model"],
                        base_url=sim.get("base_url"),
                        api_key_env=sim.get("api_key_env", DEFAULT_API_KEY_ENV),
                        cache=self.written_path(sim, "cache", f"{path}.simulate"),
                    )
                    if sim
                    else None,
                    loc=make_loc(pos, path),
                    behavior=self.behavior(item, path, name, props),
                    faults=self.faults(item.get("faults"), path, name, {name: props}),
                    idempotent=item.get("idempotent"),
                )
            )
        self.stop_if_unlocked()
        return out

    def responses(
        self, rules: LList, path: str, name: str, props: set[str]
    ) -> tuple[SimulatedResponse, ...]:
        """A tool's simulated answers, each `when` checked against its arguments."""
        out = []
        for j, r in enumerate(rules):
            rpath = f"{path}.responses[{j}]"
            if "output" in r and "error" in r:
                self.problem(
                    rules.item_pos[j],
                    rpath,
                    "a response gives either `output` or `error`, not both",
                    "split it into two rules",
                )
            when = r.get("when")
            for k in when or {}:
                if props and k not in props:
                    self.problem(
                        when.key_pos.get(k, r.pos)
                        if isinstance(when, LDict)
                        else r.key_pos.get("when", r.pos),
                        f"{rpath}.when.{k}",
                        f"{name!r} has no argument {k!r}",
                        did_you_mean(k, props) or f"arguments: {', '.join(sorted(props))}",
                    )
            out.append(
                SimulatedResponse(
                    when=dict(when) if when is not None else None,
                    output=plain(r.get("output")),
                    error=r.get("error"),
                )
            )
        return tuple(out)

    def bad_parameters(self, item: LDict, path: str, exc: Any) -> None:
        """A tool's parameters that are not JSON Schema, pointed at the offending keyword."""
        parts = list(exc.path)
        node = item.get("parameters")
        pos = locate(node, parts) if parts else self.vpos(item, "parameters")
        where = f"{path}.parameters" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts
        )
        if parts and parts[-1] == "type":
            hint = suggest_json_type(exc.instance)
            self.problem(
                pos,
                where,
                f"{exc.instance!r} is not a JSON Schema type",
                f"{hint} " * bool(hint) + f"types: {', '.join(JSON_TYPES)}",
            )
            return
        self.problem(
            pos,
            where,
            f"not valid JSON Schema: {exc.message}",
            "see https://json-schema.org/understanding-json-schema",
        )

    # ------------------------------------------------------------ rubric & critics
