"""Answer a model's tool calls with simulated outputs, never with an exception (but one: where
no model may be called, an LLM-simulated answer missing from its cache is `SimulatorMissing`).

Everything that can go wrong with a call (unknown tool, bad JSON, arguments that break the
schema, nothing to answer with) becomes an error observation the model sees, because how a model
recovers from a bad call is part of what an evaluation measures.

Order of answers for a valid call: the tool's ``responses`` rules with a ``when`` (first match in
file order), then its fallback rule (the first rule without ``when``), then its StableToolBench
cache (``cache_file``, then ``cache_dir``), then the tool's MCP server when its source says
``execute: true`` (the answer is recorded in the cache, so the next run replays it), then the LLM
simulator (``simulate``), else the observation "no simulated response for these arguments".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalspec._suite.model import SimulatedResponse, Tool
from evalspec._tools.result import ToolResult
from evalspec._tools.stb_cache import (
    TOOL_CACHE,
    TOOL_CACHE_DIR,
    ResponseCache,
    canonical_key,
    index_cache_dir,
)
from evalspec._util.project import checked
from evalspec._util.reading import MAX_VALUE_DEPTH, loads_untrusted
from evalspec._util.schemas import fast_validator, plain_schema

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

    from evalspec._providers.calls import ModelCalls
    from evalspec._tools.llm_sim import LLMSimulatorBackend
    from evalspec._tools.mcp_exec import McpExecutor

MAX_SCHEMA_ERRORS = 3


def values_match(pattern: Any, actual: Any, fold: bool = False) -> bool:
    """Does a call's value satisfy a rule's value?

    Numbers compare by value (5 == 5.0) but booleans are not numbers; strings compare exactly
    (with `fold`, lowercased: the pattern's texts must be lowercase already); a dict pattern
    matches any dict that has its keys with matching values (subset, at every depth); lists
    match element-wise and must have the same length.
    """
    if type(pattern) is str:  # the commonest pattern first, as the last lines judge it
        return type(actual) is str and pattern == (actual.lower() if fold else actual)
    if isinstance(pattern, bool) or isinstance(actual, bool):
        return isinstance(pattern, bool) and isinstance(actual, bool) and pattern == actual
    if isinstance(pattern, int | float) and isinstance(actual, int | float):
        return pattern == actual
    if isinstance(pattern, dict):
        return isinstance(actual, dict) and all(
            key in actual and values_match(value, actual[key], fold)
            for key, value in pattern.items()
        )
    if isinstance(pattern, list):
        return (
            isinstance(actual, list)
            and len(pattern) == len(actual)
            and all(values_match(p, a, fold) for p, a in zip(pattern, actual, strict=True))
        )
    if fold and type(pattern) is str and type(actual) is str:
        return pattern == actual.lower()
    return type(pattern) is type(actual) and pattern == actual


def find_rule(
    rules: Sequence[SimulatedResponse], arguments: dict[str, Any]
) -> SimulatedResponse | None:
    """The first rule whose ``when`` matches; else the first rule without ``when``."""
    for rule in rules:
        if rule.when is not None and values_match(rule.when, arguments):
            return rule
    return next((rule for rule in rules if rule.when is None), None)


def _arguments_problem(raw_arguments: str) -> str:
    """Explain why raw arguments did not parse to a JSON object."""
    try:
        value = loads_untrusted(raw_arguments, MAX_VALUE_DEPTH)
    except ValueError as exc:
        msg = getattr(exc, "msg", str(exc))
        pos = getattr(exc, "pos", None)
        where = f" at character {pos}" if pos is not None else ""
        return f"arguments are not valid JSON: {msg}{where}"
    except TypeError:
        return "arguments are not valid JSON: no arguments were given"
    kind = type(value).__name__ if value is not None else "null"
    return f"arguments are not valid JSON: expected an object, got {kind}"


def _error_path(error: Any) -> str:
    parts = [str(p) for p in error.absolute_path]
    return "/".join(parts) if parts else "(arguments)"


def _cache_entry_result(entry: dict[str, Any]) -> ToolResult:
    error = entry.get("error")
    if error:
        return ToolResult(output=None, error=str(error), source="cache")
    return ToolResult(output=entry.get("response"), error=None, source="cache")


class ToolSimulator:
    """Answers tool calls for one suite; safe to share between concurrent calls."""

    def __init__(
        self,
        tools: Sequence[Tool],
        base_dir: Path,
        llm: LLMSimulatorBackend | None = None,
        *,
        calls: ModelCalls | None = None,
        mcp: McpExecutor | None = None,
    ):
        self._tools = {tool.name: tool for tool in tools}
        self._base_dir = Path(base_dir)
        self._llm = llm
        self._calls = calls
        self._mcp = mcp
        """Live MCP calls; None in offline runs, where only recorded outputs answer."""
        self._running: dict[tuple[str, str], asyncio.Future[ToolResult]] = {}
        self._validators: dict[str, Validator | None] = {}
        self._fast_checks: dict[str, Callable[[Any], Any] | None] = {}
        self._caches: dict[Path, ResponseCache] = {}
        self._dir_index: dict[Path, dict[str, Path]] = {}

    @property
    def tools(self) -> dict[str, Tool]:
        return self._tools

    async def call(
        self, name: str, arguments: dict[str, Any] | None, raw_arguments: str
    ) -> ToolResult:
        """Answer one call; errors come back as observations, never raised, except
        :class:`SimulatorMissing` when only the cache may answer and it has nothing."""
        result = self.answer_without_llm(name, arguments, raw_arguments)
        if result is not None:
            return result
        tool = self._tools[name]
        if tool.mcp is not None and tool.mcp.execute:
            return await self._execute(tool, arguments or {})
        return await self._llm_backend().simulate(tool, arguments or {})

    def answer_without_llm(
        self, name: str, arguments: dict[str, Any] | None, raw_arguments: str
    ) -> ToolResult | None:
        """What `call` answers, when something other than the LLM simulator answers it.

        None means only a request can answer these arguments (the LLM simulator, or a live MCP
        server); review uses this to re-derive recorded tool outputs without any request.
        """
        refused = self.refusal(name, arguments, raw_arguments)
        if refused is not None:
            return refused
        tool = self._tools[name]
        assert isinstance(arguments, dict)
        rule = find_rule(tool.responses, arguments)
        if rule is not None:
            if rule.error is not None:
                return ToolResult(None, rule.error, "rule")
            return ToolResult(rule.output, None, "rule")

        entry = self._cached(tool, arguments)
        if entry is not None:
            return _cache_entry_result(entry)

        if tool.simulate is not None or (tool.mcp is not None and tool.mcp.execute):
            return None

        return ToolResult(None, "no simulated response for these arguments", "error:no_response")

    def refusal(
        self, name: str, arguments: dict[str, Any] | None, raw_arguments: str
    ) -> ToolResult | None:
        """The error observation for a call no tool may answer (an unknown tool, arguments that
        are not a JSON object or break the tool's schema); None when the call may go ahead."""
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(sorted(self._tools)) or "(none)"
            return ToolResult(
                None,
                f"unknown tool '{name}'; available tools: {available}",
                "error:unknown_tool",
            )
        if not isinstance(arguments, dict):
            return ToolResult(None, _arguments_problem(raw_arguments), "error:schema")
        problem = self._schema_problem(tool, arguments)
        if problem is not None:
            return ToolResult(None, problem, "error:schema")
        return None

    async def _execute(self, tool: Tool, arguments: dict[str, Any]) -> ToolResult:
        if self._mcp is None:
            return ToolResult(
                None,
                "no recorded output of this MCP tool for these arguments (offline run)",
                "error:no_response",
            )
        # Concurrent items making the same call share one execution, so each distinct call
        # reaches the server once per run and its recorded output is the one every item saw.
        key = (tool.name, canonical_key(arguments))
        running = self._running.get(key)
        if running is None:
            running = asyncio.ensure_future(self._mcp.call(tool, arguments))
            self._running[key] = running
        try:
            result = await asyncio.shield(running)
        finally:
            if running.done():
                self._running.pop(key, None)
        if result.source == "mcp" and tool.cache_file:
            entry = {"error": result.error or "", "response": result.output}
            self._cache(self._base_dir / tool.cache_file).put(arguments, entry)
        return result

    async def aclose(self) -> None:
        """Close the MCP connections this run opened."""
        if self._mcp is not None:
            await self._mcp.aclose()

    def _llm_backend(self) -> LLMSimulatorBackend:
        if self._llm is None:
            from evalspec._tools.llm_sim import LLMSimulatorBackend

            self._llm = LLMSimulatorBackend(self._base_dir, self._calls)
        return self._llm

    def _validator(self, tool: Tool) -> Validator | None:
        if tool.name not in self._validators:
            from evalspec._tool_schema import pattern_problems, schema_error, tool_validator

            # The suite validator reports bad schemas; a run does not fail on them.
            usable = schema_error(tool.parameters) is None and not pattern_problems(tool.parameters)
            self._validators[tool.name] = tool_validator(tool.parameters) if usable else None
        return self._validators[tool.name]

    def _fast_check(self, tool: Tool) -> Callable[[Any], Any] | None:
        """A compiled validator for a plain parameters schema: raises on invalid arguments,
        at a tenth of jsonschema's cost per call. None when the schema is not plain."""
        if tool.name not in self._fast_checks:
            check = None
            # jsonschema's own schema check first: a plain schema is then well formed.
            if self._validator(tool) is not None and plain_schema(tool.parameters):
                import fastjsonschema

                try:
                    check = fast_validator(tool.parameters)
                except fastjsonschema.JsonSchemaDefinitionException:
                    check = None
            self._fast_checks[tool.name] = check
        return self._fast_checks[tool.name]

    def _schema_problem(self, tool: Tool, arguments: dict[str, Any]) -> str | None:
        validator = self._validator(tool)
        if validator is None:
            return None
        fast = self._fast_check(tool)
        if fast is not None:
            import fastjsonschema

            try:
                fast(arguments)
                return None
            except fastjsonschema.JsonSchemaException:
                pass  # jsonschema says what is wrong, in its words
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if not errors:
            return None
        shown = "; ".join(f"{_error_path(e)}: {e.message}" for e in errors[:MAX_SCHEMA_ERRORS])
        more = len(errors) - MAX_SCHEMA_ERRORS
        extra = f" (and {more} more)" if more > 0 else ""
        return f"arguments do not match the parameters of '{tool.name}': {shown}{extra}"

    def _cache(self, path: Path) -> ResponseCache:
        if path not in self._caches:
            self._caches[path] = ResponseCache(checked(path, self._base_dir, TOOL_CACHE))
        return self._caches[path]

    def _cache_files(self, tool: Tool) -> list[Path]:
        files: list[Path] = []
        if tool.cache_file:
            files.append(self._base_dir / tool.cache_file)
        if tool.cache_dir:
            directory = self._base_dir / tool.cache_dir
            if directory not in self._dir_index:
                folder = checked(directory, self._base_dir, TOOL_CACHE_DIR)
                self._dir_index[directory] = index_cache_dir(folder)
            found = self._dir_index[directory].get(tool.name)
            if found is not None:
                files.append(found)
        return files

    def _cached(self, tool: Tool, arguments: dict[str, Any]) -> dict[str, Any] | None:
        for path in self._cache_files(tool):
            entry = self._cache(path).get(arguments)
            if entry is not None:
                return entry
        return None
