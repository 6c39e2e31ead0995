"""Judge where a conversation left the state: `expect.state`, `expect.unchanged`, and the diff.

The final state is not read from the transcript: the recorded calls are replayed through the
suite's environment as it is now, so a changed `expect.state` (or effect) re-scores without a
run, and what is judged is always what the suite's tools do today. Each place is judged by the
same critics as arguments; `unchanged` compares a place before and after.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalspec._critics import make_critic
from evalspec._critics.base import MISSING, Critic, Embedder
from evalspec._scoring.turns import offered_calls, turn_cases, turn_world
from evalspec._scoring.types import Row
from evalspec._suite.model import Case, StateCheck, Suite
from evalspec._tools.state import lookup, pointer_text, same
from evalspec._transcript import Transcript

MAX_CHANGES = 20
"""Lines of the before -> after diff kept for a case."""
_MISSING = lookup({}, ("x",))  # the engine's marker for "nothing there"
_SHOWN = 100


@dataclass
class StateJudgement:
    rows: list[Row] = field(default_factory=list)
    required_failures: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        weight = sum(r.weight for r in self.rows)
        if weight <= 0:
            return 1.0
        return sum(r.score * r.weight for r in self.rows) / weight

    def details(self) -> dict[str, Any]:
        return {
            "score": round(self.score, 6),
            "checks": [
                {"path": r.field.removeprefix("state "), "match": r.match, "reason": r.reason}
                for r in self.rows
            ],
            "changes": self.changes,
        }


class StateJudge:
    """Replays transcripts through the suite's environment and judges the state they reach."""

    def __init__(self, suite: Suite):
        from evalspec._tools.environment import Conversations
        from evalspec._tools.simulated import ToolSimulator

        self.suite = suite
        base = Path(suite.path).resolve().parent
        self._conversations = Conversations(suite, ToolSimulator(suite.tools, base))
        self._critics: dict[tuple[str, str], Critic] = {}
        self._all_tools = frozenset(t.name for t in suite.tools)

    def final_state(
        self, case: Case, t: Transcript, start: int = 0, also: frozenset[str] = frozenset()
    ) -> tuple[Any, Any, Any]:
        """(initial, start, final) states of the case's conversation, replayed from `t`'s
        calls: before any call, after the first `start` calls, after all of them. `also`:
        the user's own tools (dual control), whose calls `t` holds among the model's."""
        offered = frozenset(case.tools) if case.tools is not None else self._all_tools
        offered |= also
        calls = t.tool_calls
        if any(turn.add_tools for turn in case.turns):  # offered turn by turn
            offered = offered.union(*(turn.add_tools for turn in case.turns))
            calls = offered_calls(case, calls, len(case.turns))
        initial = self._conversations.open(case).snapshot()
        began, final = self._conversations.replay_from(case, calls, offered, start)
        return initial, began, final

    def judge(
        self,
        case: Case,
        t: Transcript,
        embedder: Callable[[], Embedder | None],
        *,
        start: int = 0,
        also: frozenset[str] = frozenset(),
    ) -> StateJudgement:
        """`start`: the calls before the judged part (a turn's earlier turns), so the changes
        shown are the part's own; `unchanged` compares with the initial state."""
        initial, began, final = self.final_state(case, t, start, also)
        out = StateJudgement(changes=changes(began, final))
        for check in case.expect.state:
            row = self._check(check, final, embedder)
            out.rows.append(row)
            if check.spec.required and not row.match:
                out.required_failures.append(f"required state {check.pointer}: {row.reason}")
        for parts in case.expect.unchanged:
            before, after = lookup(initial, parts), lookup(final, parts)
            ok = _same(before, after)
            where = pointer_text(parts)
            why = "unchanged" if ok else "changed: " + "; ".join(changes(before, after, 5, parts))
            out.rows.append(
                Row(
                    f"state {where}",
                    "unchanged",
                    _plain(after),
                    float(ok),
                    1.0,
                    why,
                    "unchanged",
                    None,
                    ok,
                )
            )
        return out

    def _check(self, check: StateCheck, final: Any, embedder: Callable[[], Embedder | None]) -> Row:
        found = lookup(final, check.parts)
        name = f"state {check.pointer}"
        weight = check.spec.weight
        if check.absent:
            ok = found is _MISSING
            why = "nothing there, as expected" if ok else f"expected nothing, found {_show(found)}"
            return Row(name, None, _plain(found), float(ok), weight, why, "exists", None, ok)
        critic = self._critic(check)
        present = found is not _MISSING
        actual = found if present else None
        emb = embedder() if critic.texts(check.expected, actual) else None
        result = critic.evaluate(check.expected, actual, present=present, embedder=emb)
        reason = result.reason
        if not present:  # critics word a missing value as an argument the call left out
            reason = reason.replace(MISSING, f"the state has nothing at {check.pointer}", 1)
        return Row(
            name,
            check.expected,
            actual,
            result.score,
            weight,
            reason,
            check.spec.kind,
            None,
            result.match,
        )

    def _critic(self, check: StateCheck) -> Critic:
        key = (check.spec.kind, json.dumps(check.spec.params, sort_keys=True, default=str))
        if key not in self._critics:
            self._critics[key] = make_critic(check.spec.kind, check.spec.params)
        return self._critics[key]


def turn_states(suite: Suite, case: Case, t: Transcript, turn: int) -> tuple[Any, Any]:
    """The shared world's state at user turn `turn`'s start and at its end (from 0): the
    calls of the turns before it and of the turn itself, both sides', replayed through a fresh
    environment, as the turn's `expect.state` is judged."""
    import msgspec

    single = dict(turn_cases(case)).get(turn, case)
    done, start = turn_world(case, t, turn)
    replayed = msgspec.structs.replace(t, tool_calls=done)
    _, began, final = StateJudge(suite).final_state(single, replayed, start, case.user_tools)
    return began, final


def _same(a: Any, b: Any) -> bool:
    if a is _MISSING or b is _MISSING:
        return a is b
    return same(a, b)


def _plain(value: Any) -> Any:
    return None if value is _MISSING else value


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(nothing)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def changes(
    before: Any, after: Any, limit: int = MAX_CHANGES, at: tuple[str, ...] = ()
) -> list[str]:
    """What moved between two states (or the values at path `at` of two states), one line per
    place, at most `limit` lines."""
    out: list[str] = []
    stack: list[tuple[tuple[str, ...], Any, Any]] = [(at, before, after)]
    while stack and len(out) <= limit:
        parts, a, b = stack.pop()
        if a is b:
            continue  # shared by the copy-on-write engine: nothing below it moved
        where = pointer_text(parts)
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), reverse=True):
                stack.append(((*parts, key), a.get(key, _MISSING), b.get(key, _MISSING)))
        elif isinstance(a, list) and isinstance(b, list):
            n = max(len(a), len(b))
            for i in reversed(range(n)):
                stack.append(
                    (
                        (*parts, str(i)),
                        a[i] if i < len(a) else _MISSING,
                        b[i] if i < len(b) else _MISSING,
                    )
                )
        elif a is _MISSING:
            out.append(f"{where} added: {_show(b)}")
        elif b is _MISSING:
            out.append(f"{where} removed: {_show(a)}")
        elif not same(a, b):
            out.append(f"{where}: {_show(a)} -> {_show(b)}")
    if len(out) > limit:
        out = [*out[:limit], "... (more changes)"]
    return out
