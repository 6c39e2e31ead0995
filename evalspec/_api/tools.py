"""A suite's tools called by hand, without a model: what a conversation's calls get back and the
state they leave, for writing stateful tools and tool environments a call at a time."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalspec._util.errors import UsageError

if TYPE_CHECKING:
    from evalspec._suite.model import Case, Suite
    from evalspec._tools.environment import Conversation, Conversations


@dataclass(frozen=True)
class ToolAnswer:
    """What one call got back: the output the model reads, or the error in its place."""

    output: Any
    """The JSON value the model reads (None when `error` is set)."""
    error: str | None
    """The error the model reads instead (arguments that break the schema, an unknown tool,
    a precondition the state does not meet, a fault)."""
    source: str
    """What answered: `rule` (a `responses:` entry), `state` (a behaviour or the suite's tool
    environment), `cache`, `fault`, or the refusal: `error:schema`, `error:unknown_tool`,
    `error:no_response`."""


class ToolSession:
    """The tools of one conversation of a suite, called as a model's calls are in an offline
    run: arguments checked against the tool's schema, `responses:` rules, behaviours on the
    suite's (or the case's) state, or the suite's tool environment. Nothing is sent anywhere:
    a call only a request could answer (`simulate:`, a live MCP server) is a UsageError."""

    def __init__(self, opener: Conversations, case: Case | None) -> None:
        self._conversation: Conversation = opener.open(case)

    def call(self, name: str, arguments: Any, raw: str | None = None) -> ToolAnswer:
        """Call tool `name` with `arguments` (a JSON object, as the model's call decoded);
        `raw` is the text the model wrote, when it did not decode to an object."""
        text = raw if raw is not None else json.dumps(arguments, default=str)
        decoded = arguments if isinstance(arguments, dict) else None
        found = self._conversation.answer_without_llm(name, decoded, text)
        if found is None:
            raise UsageError(
                f"name={name!r}: that tool is answered by a request (simulate: or a live MCP "
                "server), which a tool session never sends; give it responses: or a behavior",
                params=["name"],
            )
        return ToolAnswer(found.output, found.error, found.source)

    @property
    def state(self) -> Any:
        """The state the calls so far leave (the suite's, or the case's, before any), as a
        copy later calls cannot change. ValueError when a tool environment's state is no JSON
        value evalspec can copy (it refers back to itself, or passes the copy budget)."""
        return self._conversation.snapshot()


def tool_session(suite: Suite, case: str | None = None) -> ToolSession:
    """A conversation's tools to call by hand, without a model: see what each call answers and
    the state it leaves. `case` names the case whose `state:` starts it (by default the
    suite's); each session is a new conversation, from that state."""
    from evalspec._tools.environment import Conversations
    from evalspec._tools.simulated import ToolSimulator

    chosen = None
    if case is not None:
        chosen = next((c for c in suite.cases if c.name == case), None)
        if chosen is None:
            names = ", ".join(c.name for c in suite.cases[:10])
            raise UsageError(
                f"case={case!r}: the suite has no such case; it has {names}", params=["case"]
            )
    opener = _LAST[0] if _LAST and _LAST[0].suite is suite else None
    if opener is None:
        base = Path(suite.path).resolve().parent if suite.path else Path.cwd()
        opener = Conversations(suite, ToolSimulator(suite.tools, base))
        _LAST[:] = [opener]
    return ToolSession(opener, chosen)


_LAST: list[Conversations] = []
"""The last suite's tools: a script opening session after session of one suite (a task each)
checks arguments with schemas compiled once."""
