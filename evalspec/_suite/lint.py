"""Warnings: suites that are valid but say something their author most likely did not mean.

`evalspec validate` prints them (exit 0); nothing else stops on them. Each is a trap a newcomer
fell into, found by reading what the scorer and the state engine will do with the suite:

- a case that checks the final answer and lists no tool call fails a model that tries a tool
  before answering (a "should refuse" case, where the right answer follows a refused call);
- a tool's response that reads a value of the state which an effect read too, before an effect
  changed it: the two readings differ (the id of the record just added, read again after the
  append, is the next record's id).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalspec._suite.model import Expectation, Rubric
from evalspec._suite.state.types import Behavior, Effect, Ref, references
from evalspec._util.errors import Problem

MAX_WARNINGS = 200
"""Warnings kept with their text; past it they are only counted (a suite of a million cases,
each with the same trap, is still validated in the memory of a few hundred cases)."""


class Warnings(list[Problem]):
    """The warnings found, the first `MAX_WARNINGS` of them kept; `omitted` counts the rest."""

    omitted: int = 0

    def add(self, warning: Problem) -> None:
        if len(self) < MAX_WARNINGS:
            self.append(warning)
        else:
            self.omitted += 1


HOWTO = "docs/how-to/stateful-tools.md"
"""The page that explains both idioms."""


def refusal_trap(expect: Expectation, rubric: Rubric, evaluator_weight: float = 0.0) -> str | None:
    """Why a model that calls a tool and then answers rightly fails this expectation, or None.

    With a final-answer check and no expected call, the calls expected are none: under
    `fail_on_tool_call_quantity` any call fails the case (scorer `_verdict`); without it, under
    `extra_calls: penalize`, each call is a zero row that may pull the score below the fail
    threshold (the best such a model can score is computed here, with one call)."""
    if not expect.final_answer or expect.tool_calls or expect.no_tool_calls:
        return None
    if rubric.fail_on_tool_call_quantity:
        never = (
            f"; with `min_calls: {expect.min_calls}` beside it, no model can pass"
            if expect.min_calls
            else ""
        )
        return (
            "this expectation checks the final answer and lists no tool call, so a model that "
            "calls a tool first (tries the action, is refused, then answers rightly) fails: "
            f"expected 0 calls, the model made 1 (rubric.fail_on_tool_call_quantity){never}"
        )
    if rubric.extra_calls != "penalize":
        return None
    answer = sum(c.weight for c in expect.final_answer) + evaluator_weight
    calls = answer / (answer + rubric.tool_selection_weight) if answer > 0 else 0.0
    best = (1 - rubric.state_weight) * calls + rubric.state_weight if expect.judges_state else calls
    if best >= rubric.fail_threshold:
        return None
    return (
        "this expectation checks the final answer and lists no tool call, so a model that "
        "calls a tool first (tries the action, is refused, then answers rightly) scores at most "
        f"{best:.3f}, below the fail threshold {rubric.fail_threshold:g}: the call counts as an "
        "extra call (rubric.extra_calls: penalize)"
    )


REFUSAL_FIX = (
    "if a good model may try a tool first, give the case `rubric: {fail_on_tool_call_quantity: "
    "false, extra_calls: allow}` and check that nothing changed with `unchanged: [...]`; if it "
    "must not call any tool, add `no_tool_calls: true`; if it must try one, list that call under "
    f"`tool_calls` (see {HOWTO})"
)


_VERBS = {
    "set": "sets",
    "append": "appends to",
    "remove": "removes",
    "increment": "increments",
    "decrement": "decrements",
}


@dataclass(frozen=True, slots=True)
class Reread:
    """A response reading `ref` that effect `read_in` read too, changed since by `changed_by`."""

    ref: Ref
    read_in: int
    changed_by: int

    def message(self, effects: tuple[Effect, ...]) -> str:
        change = effects[self.changed_by]
        what = f"{_VERBS[change.op]} {change.path}"
        when = "before it" if self.changed_by == self.read_in else f"and effects[{self.changed_by}]"
        return (
            f"the response reads {self.ref} after the effects ran, but effects[{self.read_in}] "
            f"read it {when} {what}: the two give different values"
            + (
                " (the response gets the next record's id, not the one just added)"
                if self.ref.kind == "count"
                else ""
            )
        )

    def fix(self) -> str:
        return (
            "keep the value in the state before anything changes it, and read it back in both "
            f'places: a first effect `- {{set: /last_id, value: "{self.ref}"}}`, then '
            f'"${{state/last_id}}" in the record and in the response (see {HOWTO})'
        )


def rereads(behavior: Behavior) -> list[Reread]:
    """The response's state and count references that an effect read before an effect (the
    same one or a later one) changed the place they read. Effects are applied in order, each
    on the state the one before left, and the response is rendered last."""
    found: list[Reread] = []
    effects = behavior.effects
    seen: set[str] = set()
    for ref in references(behavior.response):
        if ref.kind not in ("state", "count") or str(ref) in seen:
            continue
        seen.add(str(ref))
        hit = _first_reread(ref, effects)
        if hit is not None:
            found.append(hit)
    return found


def _first_reread(ref: Ref, effects: tuple[Effect, ...]) -> Reread | None:
    for i, effect in enumerate(effects):
        if not any(str(r) == str(ref) for r in references(effect)):
            continue
        for j in range(i, len(effects)):
            if _changes(effects[j], ref):
                return Reread(ref, i, j)
    return None


_ANY = None
"""A path part a reference fills at run time: it may be any key."""


def _parts(parts: tuple[Any, ...]) -> list[str | None]:
    return [p if isinstance(p, str) else _ANY for p in parts]


def _ref_parts(ref: Ref) -> list[str | None]:
    return _parts(ref.path.parts) if ref.path is not None else list(ref.pointer)


def _effect_parts(effect: Effect) -> list[str | None]:
    """The place an effect changes: its path, and with `where:` any record there (`at` in it)."""
    parts = _parts(effect.path.parts)
    if effect.where is not None:
        parts.append(_ANY)
        if effect.at is not None:
            parts += _parts(effect.at.parts)
    return parts


def _prefix(short: list[str | None], long: list[str | None]) -> bool:
    return len(short) <= len(long) and all(
        a is _ANY or b is _ANY or a == b for a, b in zip(short, long, strict=False)
    )


def _changes(effect: Effect, ref: Ref) -> bool:
    """Can this effect change what the reference reads? (`append` changes only the list it
    adds to, and the places above it.)"""
    changed, read = _effect_parts(effect), _ref_parts(ref)
    if ref.kind == "count":  # the size of the list or mapping at `read`
        if effect.op == "append":
            return _prefix(changed, read) and len(changed) == len(read)
        one_below = len(changed) == len(read) + 1 and effect.op in ("set", "remove")
        return _prefix(changed, read) or (one_below and _prefix(read, changed))
    if effect.op == "append":
        return _prefix(read, changed)
    return _prefix(changed, read) or _prefix(read, changed)
