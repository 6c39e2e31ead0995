"""Tool names the providers accept, mapped back to the suite's names in every answer.

OpenAI and Anthropic both require tool names matching ``^[a-zA-Z0-9_-]{1,64}$``, while MCP
servers (Arcade's among them) name tools ``Math.Add``. :class:`WireToolNames` wraps a live
provider: requests go out with safe names (``Math_Add``, a numeric suffix when two names would
collide) and answers come back with the suite's names, so transcripts, recordings and scoring
only ever see the names the suite declares.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from evalspec._providers.base import ChatRequest, ChatResponse, Provider

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
MAX_NAME = 64


def safe_name(name: str) -> str:
    """``Math.Add`` -> ``Math_Add``: every character a provider rejects becomes ``_``."""
    return _UNSAFE.sub("_", name)[:MAX_NAME] or "_"


def name_map(names: list[str]) -> dict[str, str]:
    """Suite name -> wire name for every name that needs changing, without collisions."""
    taken = {n for n in names if safe_name(n) == n}
    out: dict[str, str] = {}
    for name in names:
        if name in taken or name in out:
            continue
        wire, n = safe_name(name), 2
        while wire in taken:
            suffix = f"_{n}"
            wire, n = safe_name(name)[: MAX_NAME - len(suffix)] + suffix, n + 1
        taken.add(wire)
        out[name] = wire
    return out


def _rename_calls(message: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if not calls:
        return message
    renamed = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(function, dict) and name in mapping:
            call = {**call, "function": {**function, "name": mapping[name]}}
        renamed.append(call)
    return {**message, "tool_calls": renamed}


class WireToolNames:
    """A provider that sends provider-safe tool names and answers with the suite's names."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner

    async def complete(self, request: ChatRequest) -> ChatResponse:
        names = [t.get("function", {}).get("name", "") for t in request.tools]
        mapping = name_map(names)
        if not mapping:
            return await self.inner.complete(request)
        tools = tuple(
            {**t, "function": {**t["function"], "name": mapping[t["function"]["name"]]}}
            if t.get("function", {}).get("name") in mapping
            else t
            for t in request.tools
        )
        messages = tuple(_rename_calls(m, mapping) for m in request.messages)
        params = dict(request.params)
        choice = params.get("tool_choice")
        if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
            name = choice["function"].get("name")
            if name in mapping:
                params["tool_choice"] = {
                    **choice,
                    "function": {**choice["function"], "name": mapping[name]},
                }
        wire = replace(request, messages=messages, tools=tools, params=params)
        response = await self.inner.complete(wire)
        back = {wire: name for name, wire in mapping.items()}
        return replace(response, message=_rename_calls(response.message, back))

    async def aclose(self) -> None:
        await self.inner.aclose()
