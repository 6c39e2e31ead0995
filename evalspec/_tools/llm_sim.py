"""A model that pretends to be the API, for calls no rule or cache answers (MirrorAPI-like).

Modelled on StableToolBench's virtual API server: the model gets the API's documentation, a few
example calls with their answers, and the call, and must reply with one JSON object
``{"error": "", "response": ...}``. Every answer is written to a cache file in StableToolBench's
format, so the same call always gets the same answer, offline, in later runs.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from evalspec._providers.base import ProviderError, RecordingMissing
from evalspec._providers.calls import Endpoint, ModelCalls
from evalspec._suite.model import Tool
from evalspec._tools.result import ToolResult
from evalspec._tools.stb_cache import ResponseCache, cache_key, canonical_key
from evalspec._util import redaction
from evalspec._util.errors import RunError, SpecError
from evalspec._util.project import checked, kind
from evalspec._util.reading import MAX_VALUE_DEPTH, loads_untrusted

_log = logging.getLogger(__name__)

DEFAULT_CACHE_DIR = Path(".evalspec-cache") / "sim"
SIMULATOR_CACHE = kind("simulator cache")
MAX_EXAMPLES = 5
MAX_EXAMPLE_CHARS = 2048
MAX_TOKENS = 1024

SYSTEM_PROMPT = """\
You are the server behind one API of a software tool. You are given the API's documentation, \
some earlier calls with the answers the API gave, and a new call. Work out what the API does \
and what this call asks for, and answer it the way the real API would.

Reply with exactly one JSON object and nothing else, in this form:
{"error": "", "response": <the API's answer>}

Rules:
- "response" holds the answer: a JSON object, list or string shaped like the API's real output \
(follow the examples and the response template when there are any).
- Leave "error" empty unless the call itself is wrong (for example an identifier in a format \
the API cannot accept); then put a short error message in "error" and "" in "response".
- Give concrete, plausible content that fits the arguments. Keep it short: at most about \
200 words of text.
- If the examples are errors or empty, ignore them and answer from the documentation.
- No prose, no Markdown, no code fences: the reply must parse with a JSON parser."""


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def build_messages(
    tool: Tool, arguments: dict[str, Any], examples: list[tuple[str, Any]]
) -> list[dict[str, str]]:
    """The chat request for one simulated call."""
    doc = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    shown: list[str] = []
    used = 0
    for key, entry in examples[:MAX_EXAMPLES]:
        line = f"Input: {key}\nOutput: {json.dumps(entry, ensure_ascii=False, default=str)}"
        if shown and used + len(line) > MAX_EXAMPLE_CHARS:
            break
        line = _truncate(line, MAX_EXAMPLE_CHARS)
        shown.append(line)
        used += len(line)
    user = (
        "API documentation:\n"
        + json.dumps(doc, ensure_ascii=False, indent=2)
        + "\n\nAPI examples:\n"
        + ("\n\n".join(shown) if shown else "(none)")
        + "\n\nAPI input:\n"
        + json.dumps(arguments, ensure_ascii=False)
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_reply(text: str | None) -> dict[str, Any] | None:
    """The ``{"error", "response"}`` entry in a model reply, or None if there is none."""
    if not text:
        return None
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").strip()
        if body.lower().startswith("json"):
            body = body[4:]
    try:
        value = loads_untrusted(body, MAX_VALUE_DEPTH)
    except ValueError:
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            return None
        try:
            value = loads_untrusted(body[start : end + 1], MAX_VALUE_DEPTH)
        except ValueError:
            return None
    if not isinstance(value, dict) or not ({"error", "response"} & value.keys()):
        return None
    error = value.get("error") or ""
    return {
        "error": error if isinstance(error, str) else json.dumps(error),
        "response": value.get("response", ""),
    }


def entry_to_result(entry: dict[str, Any]) -> ToolResult:
    if entry.get("error"):
        return ToolResult(output=None, error=str(entry["error"]), source="llm")
    return ToolResult(output=entry.get("response"), error=None, source="llm")


class SimulatorMissing(RecordingMissing):
    """No cached answer for a simulated call, and this run may not call the simulator."""


class LLMSimulatorBackend:
    """Simulates calls with any OpenAI-compatible chat model; one instance per run.

    With ``calls`` (the run's :class:`ModelCalls`) a cache miss asks the model through the same
    provider layer as the models under test. Without it (review, ``run --record offline``) the
    cache is the only source, and a miss is :class:`SimulatorMissing`: the item needs a run.
    """

    def __init__(self, base_dir: Path, calls: ModelCalls | None = None):
        self._base_dir = Path(base_dir)
        self._calls = calls
        self._caches: dict[Path, ResponseCache] = {}
        self._locks: dict[tuple[Path, str], asyncio.Lock] = {}
        self.requests = 0
        """How many chat requests this backend sent (cache hits send none)."""

    def cache_path(self, tool: Tool) -> Path:
        """Where this tool's simulated answers are kept, held to the project's policy."""
        spec = tool.simulate
        given = spec.cache if spec is not None and spec.cache else None
        path = Path(given) if given else DEFAULT_CACHE_DIR / f"{tool.name}.json"
        return checked(path, self._base_dir, SIMULATOR_CACHE)

    def _cache(self, path: Path) -> ResponseCache:
        if path not in self._caches:
            self._caches[path] = ResponseCache(path)
        return self._caches[path]

    def _examples(self, tool: Tool, cache: ResponseCache) -> list[tuple[str, Any]]:
        """Earlier answers to show the model: the tool's own rules, then cached answers."""
        examples: list[tuple[str, Any]] = [
            (cache_key(rule.when), {"error": rule.error or "", "response": rule.output})
            for rule in tool.responses
            if rule.when is not None
        ]
        examples += [(key, entry) for key, entry in cache.entries().items()]
        return examples

    async def simulate(self, tool: Tool, arguments: dict[str, Any]) -> ToolResult:
        """Answer from the cache, or ask the model once and cache what it says."""
        spec = tool.simulate
        if spec is None:
            return ToolResult(
                None, "no simulated response for these arguments", "error:no_response"
            )
        cache = self._cache(self.cache_path(tool))
        lock = self._locks.setdefault((cache.path, canonical_key(arguments)), asyncio.Lock())
        async with lock:
            entry = cache.get(arguments)
            if entry is not None:
                _log.debug("simulated %s answered from %s", tool.name, cache.path)
                return entry_to_result(entry)
            if self._calls is None:
                raise SimulatorMissing(
                    f"simulated tool '{tool.name}': no cached answer for {canonical_key(arguments)}"
                    f" in {cache.path}, and this command calls no model; it needs a run "
                    "(evalspec run, with the simulator's key) to fill the cache",
                    attempts=0,
                )
            _log.info("simulated %s: not in %s, asking %s", tool.name, cache.path, spec.model)
            try:
                self.requests += 1
                reply = await self._calls.ask(
                    Endpoint(spec.base_url, spec.api_key_env),
                    spec.model,
                    build_messages(tool, arguments, self._examples(tool, cache)),
                    params={"temperature": 0, "max_tokens": MAX_TOKENS},
                    label=f"simulated tool '{tool.name}'",
                )
                text = reply.message.get("content")
            except (ProviderError, RunError) as exc:  # any failure is this call's observation
                return ToolResult(None, f"tool simulator failed: {exc}", "error:simulator")
            except Exception as exc:  # whatever else the transport raises, still one failure
                problem = redaction.scrub(f"{type(exc).__name__}: {exc}")
                return ToolResult(None, f"tool simulator failed: {problem}", "error:simulator")
            entry = parse_reply(text if isinstance(text, str) else None)
            if entry is None:
                shown = _truncate(text or "", 200)
                return ToolResult(
                    None,
                    f"tool simulator returned no JSON object with error/response: {shown!r}",
                    "error:simulator",
                )
            try:
                cache.put(arguments, entry)
            except (OSError, SpecError) as exc:  # an unwritable cache costs a repeat request
                _log.warning("could not save the simulated answer to %s: %s", cache.path, exc)
            return entry_to_result(entry)
