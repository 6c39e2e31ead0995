"""Is a recorded transcript still evidence for a suite? Checked, never assumed.

A transcript answers a chain of requests: the opening request (messages, tools offered, model
and parameters: the plan item's content id) and, after each tool call, the same conversation
with the tool's output appended. It counts for a suite only if every one of those requests is
the suite's: the content id must be the suite's, and each tool output the model saw must be
what the suite's tools answer now (simulated response rules, StableToolBench caches, the LLM
simulator's cache). Nothing here sends a request: an answer only the LLM simulator could give,
and its cache lacks, cannot be checked and makes the case "re-run needed".

An imported transcript (`source: import:...`) carries the answers of the world it came from;
its tool outputs are checked only where the suite itself says what a tool answers (a response
rule or a cache entry for those arguments), since elsewhere the suite makes no claim.

`diff` and `review` count an answer that cannot be checked as stale (they must not pass on
evidence nobody verified); `run --resume` and `score` act on `differences`, the requests that
are known to have changed (they re-run or name those transcripts).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalspec._plan import Plan, compile_plan
from evalspec._suite.model import Case, ModelSpec, Suite, Tool
from evalspec._tools.faults import raised, reached_tool
from evalspec._tools.result import ToolResult
from evalspec._transcript import ToolCall, Transcript, world_order
from evalspec._util.json_values import difference

if TYPE_CHECKING:
    from evalspec._tools.environment import Conversation
    from evalspec._tools.simulated import ToolSimulator

MAX_SHOWN = 120
CHECKED_SOURCES = frozenset({"rule", "cache", "llm", "state"})
"""Where an imported transcript's tool outputs are compared: the suite's own answers."""
REQUEST_CHANGED = (
    "the request to the model changed (messages, tools offered, model, parameters, run "
    "settings or the faults its tools meet)"
)


@dataclass(frozen=True)
class StaleReason:
    """One reason a transcript may no longer be evidence for a suite."""

    tool: str | None
    """The tool whose output differs, or None for the opening request."""
    text: str
    known: bool
    """True: the request is known to differ now; False: nothing offline can say (a live tool
    with no cache)."""


@dataclass(frozen=True)
class StaleTranscript:
    """A transcript that answers requests the suite no longer makes, and why."""

    transcript: Transcript
    why: tuple[str, ...]

    @property
    def label(self) -> str:
        t = self.transcript
        return f"{t.case!r} · {t.model}" + (f" · trial {t.trial + 1}" if t.trial else "")


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _observation(value: Any) -> str:
    """What the model read in the tool message, in a form two versions can compare."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class EvidenceCheck:
    """Checks transcripts against one suite version, offline."""

    def __init__(self, suite: Suite, plan: Plan | None = None):
        """`plan` (of this suite) when its items are not the suite's default ones (a run with
        --trials or a case selection); by default the suite's whole plan."""
        from evalspec._tools.simulated import ToolSimulator

        self.suite = suite
        self._base_dir = Path(suite.path).resolve().parent
        self._simulator = ToolSimulator(suite.tools, self._base_dir)
        self._cases: dict[str, Case] = {c.name: c for c in suite.cases}
        self._tools = {t.name: t for t in suite.tools}
        self._ids: dict[tuple[str, str, int], str] = {}
        self._offered: dict[tuple[str, str], frozenset[str]] = {}
        self._added: dict[tuple[str, str], list[frozenset[str]]] = {}
        """Cases whose turns add tools: the tools offered in each user turn."""
        self._pairs: dict[tuple[str, str], ModelSpec] = {}
        for it in (plan or compile_plan(suite)).items:
            self._ids[(it.case.name, it.model.name, it.trial)] = it.id
            self._pairs[(it.case.name, it.model.name)] = it.model
            self._cases[it.case.name] = it.case
            pair = (it.case.name, it.model.name)  # a tool variant may offer other tools
            self._offered[pair] = it.offered_names
            if any(turn.add_tools for turn in it.case.turns):
                self._added[pair] = _offered_by_turn(it.case, self._offered[pair])

    def problems(self, t: Transcript) -> list[str]:
        """Why `t` is not evidence for this suite; empty when it is."""
        return [f.text for f in self.reasons(t)]

    def problems_by_tool(self, t: Transcript) -> list[tuple[str | None, str]]:
        """(tool whose output differs, or None for the opening request; why), in call order."""
        return [(f.tool, f.text) for f in self.reasons(t)]

    def differences(self, t: Transcript) -> list[str]:
        """What is known to differ between the requests `t` answers and the suite's now."""
        return [f.text for f in self.reasons(t) if f.known]

    def reasons(self, t: Transcript) -> list[StaleReason]:
        """Every reason `t` may not be evidence for this suite, in call order.

        Imported transcripts (`source: import:...`) carry no content id, so only their tool
        outputs are checked, and only where the suite says what the tool answers.
        """
        head_id = self._id(t)
        if head_id is None:
            return []
        imported = t.source.startswith("import:")
        out: list[StaleReason] = []
        if not imported and t.item_id != head_id:
            why = conversation_change(self._cases[t.case], t) if t.user_turns else None
            out.append(StaleReason(None, why or REQUEST_CHANGED, known=True))
        offered = self._offered.get((t.case, t.model), frozenset())
        added = self._added.get((t.case, t.model))
        # A stateful suite's calls are replayed in order through a fresh environment: an
        # output differs when an effect, a precondition or the initial state moved it.
        tools = self._conversation(t.case)
        held = self._cases[t.case].user_tools if t.case in self._cases else frozenset()
        model = offered
        for call, by_user in world_order(t) if held else ((c, False) for c in t.tool_calls):
            if added is not None:  # a case whose turns add tools offers more turn by turn
                model = added[min(call.user_turn or 0, len(added) - 1)]
            offered = held if by_user else model  # the user's calls meet the user's tools
            finding = self._call_finding(call, offered, tools, imported=imported)
            if finding is not None:
                out.append(finding)
        return out

    def _id(self, t: Transcript) -> str | None:
        """The suite's id for `t`'s item: a trial beyond the suite's own (a run with --trials)
        is checked against that trial's request, never waved through; None for a case or
        model the suite does not have."""
        key = (t.case, t.model, t.trial)
        if key not in self._ids and (t.case, t.model) in self._pairs and t.trial >= 0:
            from evalspec._plan import trial_id

            self._ids[key] = trial_id(
                self.suite, self._cases[t.case], self._pairs[t.case, t.model], t.trial
            )
        return self._ids.get(key)

    def _conversation(self, case: str) -> ToolSimulator | Conversation:
        if not self.suite.stateful:
            return self._simulator
        from evalspec._tools.environment import conversations

        return conversations(self.suite, self._simulator).open(self._cases.get(case))

    def _call_finding(
        self,
        call: ToolCall,
        offered: frozenset[str],
        tools: ToolSimulator | Conversation,
        *,
        imported: bool,
    ) -> StaleReason | None:
        # Declared faults are in the item's id; a call a fault stopped never ran, one that ran
        # still moves the state. A fault the environment raised is its answer, checked below.
        if call.fault is not None and not raised(call.fault):
            if reached_tool(call.fault):
                self._answer(call, offered, tools)
            return None
        now = self._answer(call, offered, tools)
        if now is None:
            if imported:
                return None
            return StaleReason(
                call.name,
                f"{self._label(call)}: only a live tool (the LLM simulator or an MCP server) "
                "answers these arguments and no cache holds its answer; re-run to see what the "
                "model does",
                known=False,
            )
        if imported and now.source not in CHECKED_SOURCES:
            return None
        recorded = {"error": call.error} if call.error is not None else call.output
        current = now.observation()
        if _observation(recorded) == _observation(current):
            return None
        return StaleReason(
            call.name,
            f"{self._label(call)}: the tool answers differently from what the model saw: "
            f"{difference(recorded, current)}",
            True,
        )

    @staticmethod
    def _label(call: ToolCall) -> str:
        args = call.arguments if call.arguments is not None else call.raw_arguments
        return f"{call.name} {_shown(args)}"

    def _answer(
        self, call: ToolCall, offered: frozenset[str], tools: ToolSimulator | Conversation
    ) -> ToolResult | None:
        """The tool's answer under this suite, as the runner would give it, without requests."""
        if call.name not in offered:
            available = ", ".join(sorted(offered))
            return ToolResult(
                None, f"unknown tool '{call.name}'; available tools: {available}", "error"
            )
        result = tools.answer_without_llm(call.name, call.arguments, call.raw_arguments)
        if result is not None:
            return result
        tool = self._tools[call.name]
        if tool.simulate is None:  # a live MCP tool whose output is not in its cache
            return None
        return self._simulator_cache(tool, call.arguments or {})

    def _simulator_cache(self, tool: Tool, arguments: dict[str, Any]) -> ToolResult | None:
        from evalspec._tools.llm_sim import LLMSimulatorBackend, entry_to_result
        from evalspec._tools.stb_cache import ResponseCache

        path = LLMSimulatorBackend(self._base_dir).cache_path(tool)
        if not path.is_file():
            return None
        entry = ResponseCache(path).get(arguments)
        return entry_to_result(entry) if entry is not None else None


def _offered_by_turn(case: Case, first: frozenset[str]) -> list[frozenset[str]]:
    out, offered = [], first
    for k, turn in enumerate(case.turns):
        if k > 0:
            offered = offered | set(turn.add_tools)
        out.append(offered)
    return out


def conversation_change(case: Case, t: Transcript) -> str | None:
    """What changed in a multi-turn case's conversation since `t` was recorded, by place:
    the first user turn whose text differs, or the simulated user; None if neither."""
    if case.turns:
        for k, (turn, said) in enumerate(zip(case.turns, t.user_turns, strict=False)):
            if turn.user != said.user:
                return f"user turn {k + 1} now says {_shown(turn.user)} (was {_shown(said.user)})"
        if len(case.turns) != len(t.user_turns) and not t.error:
            return f"the case now has {len(case.turns)} user turns (was {len(t.user_turns)})"
    elif case.simulated_user is not None:
        return "the simulated user's settings or its model changed"
    return None


def stale_transcripts(
    suite: Suite, transcripts: Sequence[Transcript], *, plan: Plan | None = None
) -> list[StaleTranscript]:
    """The transcripts that answer requests this suite no longer makes (a changed user message,
    a tool that answers differently now), each with why; offline, nothing is sent."""
    if not transcripts:
        return []
    check = EvidenceCheck(suite, plan)
    out = []
    for t in transcripts:
        why = check.differences(t)
        if why:
            out.append(StaleTranscript(t, tuple(why)))
    return out
