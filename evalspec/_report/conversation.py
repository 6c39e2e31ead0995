"""A multi-turn case's conversation as lines by role, for the console, Markdown and the page.

What a user (or a simulated user) said is a line of its own, never an "expected" value beside
the model's answer: a reader takes `expected: OK, place the order. | actual: Are you sure?` for
what the model should have said. Only a check's own expected value is called expected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalspec._tools.faults import fault_text

if TYPE_CHECKING:
    from evalspec._suite.model import Suite
    from evalspec._transcript import Transcript

USER = "user said"
SIMULATED = "simulated user said"
CALLED = "model called"
USER_CALLED = "user called"
USER_FAULT = "simulated user at fault"
"""A line naming a check the simulated user failed: its fault, not the model's."""
TOOL = "tool answered"
TOOL_ERROR = "tool refused"
FAULT = "fault injected"
ANSWERED = "model answered"
ENDED = "conversation ended"
EXPECTED = "expected"
ROLES = (
    USER,
    SIMULATED,
    USER_CALLED,
    CALLED,
    FAULT,
    TOOL,
    TOOL_ERROR,
    ANSWERED,
    ENDED,
    EXPECTED,
    USER_FAULT,
)
"""Every role a line can have, in the words the reports show."""

_ENDINGS = {
    "stop_signal": "the user said ###STOP###",
    "empty_message": "the user sent an empty message",
    "max_turns": "the user reached max_turns",
    "error": "the conversation stopped on an error",
}


@dataclass(frozen=True)
class Said:
    """One line of a turn: who, and what."""

    role: str
    text: str


@dataclass(frozen=True)
class Turn:
    """One user turn: its lines in order, and its verdict when the turn is judged."""

    number: int
    lines: tuple[Said, ...]
    status: str | None = None
    score: float | None = None
    reason: str = ""

    @property
    def judged(self) -> bool:
        return self.status is not None


def conversation(details: Mapping[str, Any], calls: Sequence[Mapping[str, Any]] = ()) -> list[Turn]:
    """The turns of a result's `details` (scoring's record of each user turn), with the calls
    of a transcript's `tool_calls` placed in the turn that made them when they are at hand."""
    by_turn: dict[int, list[Mapping[str, Any]]] = {}
    for call in calls:
        if isinstance(call, Mapping) and isinstance(call.get("user_turn"), int):
            by_turn.setdefault(call["user_turn"], []).append(call)
    out = []
    for index, entry in enumerate(details.get("turns") or ()):
        if not isinstance(entry, Mapping):
            continue
        lines = _lines(entry, by_turn.get(index, ()))
        status, score, number = entry.get("status"), entry.get("score"), entry.get("turn")
        out.append(
            Turn(
                number if isinstance(number, int) else index + 1,
                tuple(lines),
                status if isinstance(status, str) else None,
                float(score) if isinstance(score, int | float) else None,
                str(entry.get("reason") or ""),
            )
        )
    return out


def _lines(entry: Mapping[str, Any], calls: Sequence[Mapping[str, Any]]) -> list[Said]:
    said = entry.get("user")
    who = SIMULATED if entry.get("source") == "simulated" else USER
    lines = _call_lines(USER_CALLED, entry.get("user_calls") or ())  # it acts, then speaks
    lines.append(Said(who, "(not reached)" if said is None else str(said)))
    lines += _call_lines(CALLED, calls)
    if entry.get("final_answer"):
        lines.append(Said(ANSWERED, str(entry["final_answer"])))
    lines += _call_lines(USER_CALLED, entry.get("user_calls_after") or ())
    if stop := entry.get("stop"):
        lines.append(Said(ENDED, _ENDINGS.get(str(stop), str(stop))))
    if entry.get("expected"):  # what the suite asked of this turn, after what happened
        lines.append(Said(EXPECTED, str(entry["expected"])))
    lines += [Said(USER_FAULT, str(why)) for why in entry.get("user_faults") or ()]
    return lines


def _call_lines(who: str, calls: Sequence[Mapping[str, Any]]) -> list[Said]:
    """Each call (the model's or the user's own) and what the tool answered it."""
    lines = []
    for call in calls:
        if not isinstance(call, Mapping):
            continue
        lines.append(Said(who, _call_text(call)))
        if isinstance(call.get("fault"), Mapping):
            lines.append(Said(FAULT, fault_text(call["fault"])))
        if call.get("error") is not None:
            lines.append(Said(TOOL_ERROR, _value(call.get("error"))))
        else:
            lines.append(Said(TOOL, _value(call.get("output"))))
    return lines


def _call_text(call: Mapping[str, Any]) -> str:
    """`refund_order {"order_id": "A17"}`: the tool and its arguments as the model sent them."""
    raw = call.get("raw_arguments")
    args = raw if isinstance(raw, str) else _value(call.get("arguments"))
    return f"{call.get('name')} {args}".rstrip()


def _value(value: Any) -> str:
    """A value as the conversation shows it: keys sorted, as transcripts.jsonl stores them, so
    transcripts scored from memory and from their file read the same."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    except TypeError:  # keys of mixed types cannot be sorted: shown as they come
        return json.dumps(value, ensure_ascii=False, default=str)


def role_label(role: str, simulator: str | None) -> str:
    """The role as shown: a simulated user's line names the model that plays it."""
    if role == SIMULATED and simulator:
        return f"simulated user ({simulator}) said"
    return role


def simulator_of(suite: Suite, case: str) -> str | None:
    """The model entry that plays the user of `case`, if a simulated user does."""
    for spec in suite.cases:
        if spec.name == case and spec.simulated_user is not None:
            return spec.simulated_user.model
    return None


def calls_by_item(transcripts: Sequence[Transcript]) -> dict[str, list[dict[str, Any]]]:
    """The calls of each kept transcript, by item id (a streamed run keeps none: its turns
    then say what was said and answered, without the calls)."""
    return {t.item_id: [c.to_dict() for c in t.tool_calls] for t in transcripts}
