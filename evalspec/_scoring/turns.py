"""Multi-turn cases scored turn by turn.

Each judged turn is scored as a single-turn case of its own: its expectation against only the
calls made in answer to that turn, its final-answer checks against the answer that ended the
turn, under the case's critics and rubric. The case's score is the mean of its judged turns
(`turn_rule: partial`), or, under `all_or_nothing` (BFCL's multi-turn rule), 0 and a failure
as soon as one judged turn fails or the conversation stopped before its last turn. A judged
turn the conversation never reached scores 0 and fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from evalspec._scoring.reasons import clause, join_reasons, with_detail
from evalspec._scoring.types import CaseResult, Row, Status
from evalspec._suite.model import Budget, Case, Expectation, Message, Rubric
from evalspec._transcript import ToolCall, Transcript, world_order

Score = Callable[[Transcript, Case, int], CaseResult]
"""Scores one turn's transcript against its (single-turn) case, given the turn's index: the
scorer's own pipeline (the index tells it which calls the state after the turn comes from)."""


@dataclass(frozen=True)
class TurnView:
    """One judged turn as a single-turn case and the part of the transcript that answers it."""

    index: int
    case: Case
    transcript: Transcript | None
    """None when the conversation ended before this turn."""


def turn_cases(case: Case) -> list[tuple[int, Case]]:
    """Each judged turn of a multi-turn case as a single-turn case: the turn's expectation,
    the case's critics and rubric, the turn's text as what the user asked."""
    out = []
    system = tuple(m for m in case.messages if m.role == "system")
    for k, turn in enumerate(case.turns):
        if turn.expect is not None:
            asked = (*system, Message("user", turn.user))
            single = replace(
                case,
                messages=asked,
                expect=turn.expect,
                turns=(),
                evaluators=(),
                budget=Budget(),
                tools=case.offered_in_turn(k),  # what this turn offers (`add_tools` too)
            )
            out.append((k, single))
    return out


def offered_calls(case: Case, calls: Sequence[ToolCall], last: int) -> tuple[ToolCall, ...]:
    """The calls of user turns 0..last that reached the tools: a call to a tool its turn did
    not offer yet (a later turn's `add_tools`) was refused as unknown and changed nothing."""
    if not any(t.add_tools for t in case.turns):
        return tuple(c for c in calls if (c.user_turn or 0) <= last)
    out = []
    for c in calls:
        k = c.user_turn or 0
        offered = case.offered_in_turn(k)
        if k <= last and (offered is None or c.name in offered):
            out.append(c)
    return tuple(out)


def world_calls(
    t: Transcript, calls: Sequence[ToolCall], held: frozenset[str], last: int | None = None
) -> list[ToolCall]:
    """Every call that ran on the shared world, in order (`world_order`): a model's call of a
    tool the user holds (`held`), or a user's call of any other, was refused and is left out."""
    return [c for c, by_user in world_order(t, calls, last) if (c.name in held) == by_user]


def turn_world(case: Case, t: Transcript, turn: int) -> tuple[tuple[ToolCall, ...], int]:
    """The calls that ran on the shared world up to user turn `turn`'s end, both sides' in the
    order they ran, and how many of them came before the turn: what a turn's state at its
    start and end is replayed from."""
    done = offered_calls(case, t.tool_calls, turn)
    if held := case.user_tools:  # the user's calls changed the world too
        done = tuple(world_calls(t, done, held, turn))
    return done, sum((c.user_turn or 0) < turn for c in done)


def turn_views(
    case: Case, t: Transcript, cases: list[tuple[int, Case]] | None = None
) -> Iterator[TurnView]:
    """The judged turns of a multi-turn case, each with its own slice of the transcript
    (`cases`: the case's `turn_cases`, when the caller keeps them)."""
    for k, single in cases if cases is not None else turn_cases(case):
        if k >= len(t.user_turns):
            yield TurnView(k, single, None)
            continue
        part = msgspec.structs.replace(
            t,
            tool_calls=tuple(c for c in t.tool_calls if c.user_turn == k),
            final_answer=t.user_turns[k].final_answer,
            user_turns=(),
        )
        yield TurnView(k, single, part)


def score_turns(
    case: Case,
    t: Transcript,
    score: Score,
    band: Callable[[float, Rubric], Status],
    cases: list[tuple[int, Case]] | None = None,
    conversation: CaseResult | None = None,
) -> tuple[float, Status, str, list[Row], dict[str, Any]]:
    """Score, status, reason, explanation rows (each field named with its turn) and details
    (`turns`: one entry per user turn) of a multi-turn case.

    `conversation`: the case's evaluators on the whole conversation, one more judged part
    beside the turns (its rows named `conversation: ...`)."""
    judged: dict[int, CaseResult] = {}
    rows: list[Row] = []
    for view in turn_views(case, t, cases):
        if view.transcript is None:
            why = f"the conversation ended before turn {view.index + 1}"
            result = CaseResult(
                item_id=t.item_id,
                case=t.case,
                model=t.model,
                trial=t.trial,
                score=0.0,
                status="fail",
                reason=why,
            )
            rows.append(Row("turn", "a turn", None, 0.0, 1.0, why, "turns", None, False))
        else:
            result = score(view.transcript, view.case, view.index)
            at = f"turn {view.index + 1}: "
            rows.extend(
                Row(
                    at + r.field,
                    r.expected,
                    r.actual,
                    r.score,
                    r.weight,
                    r.reason,
                    r.critic,
                    r.call,
                    r.match,
                )
                for r in result.rows
            )
        judged[view.index] = result
    details: dict[str, Any] = {"turns": turn_details(case, t, judged), "turn_rule": case.turn_rule}
    parts = dict(judged)
    if conversation is not None:
        rows.extend(
            msgspec.structs.replace(r, field="conversation: " + r.field) for r in conversation.rows
        )
        details["conversation"] = {
            "score": conversation.score,
            "status": conversation.status,
            "reason": conversation.reason,
        }
        parts[_CONVERSATION] = conversation
    scores = [r.score for r in parts.values()]
    mean = sum(scores) / len(scores) if scores else 1.0
    failed = [(k, r) for k, r in parts.items() if r.status in ("fail", "error")]
    failures = [f"{_part_name(k)} failed: {clause(r.reason)}" for k, r in failed]
    n = len(judged)
    head = f"mean of {n} turn{'s' if n != 1 else ''}"
    head += f" and the conversation {mean:.3f}" if conversation is not None else f" {mean:.3f}"
    cut = _cut_short(case, t, judged)
    if case.turn_rule == "all_or_nothing" and cut:
        failures.append(cut)
    if case.turn_rule == "all_or_nothing" and failures:
        details["mean_of_turns"] = mean
        return 0.0, "fail", with_detail("all or nothing", join_reasons(failures)), rows, details
    status = band(mean, case.rubric)
    rubric = case.rubric
    if status == "pass":
        reason = f"{head} ≥ warn threshold {rubric.warn_threshold:g}"
        if failures:
            reason += f" ({join_reasons(failures)})"
    elif status == "warn":
        reason = with_detail(
            f"{head} is below the warn threshold {rubric.warn_threshold:g}", join_reasons(failures)
        )
    else:
        reason = with_detail(
            f"{head} is below the fail threshold {rubric.fail_threshold:g}", join_reasons(failures)
        )
    return mean, status, reason, rows, details


_CONVERSATION = -1
"""The key of the whole conversation's part (its evaluators) among the judged turns."""


def _part_name(k: int) -> str:
    return "the conversation" if k == _CONVERSATION else f"turn {k + 1}"


def _cut_short(case: Case, t: Transcript, judged: dict[int, CaseResult]) -> str | None:
    """Why a scripted conversation that stopped before its last turn is not whole, when no
    judged turn says so already (its later turns are not judged): all or nothing asks for the
    whole conversation (BFCL fails a model it stopped, `force_terminated`)."""
    said, scripted = len(t.user_turns), len(case.turns)
    if case.simulated_user is not None or said >= scripted or any(k >= said for k in judged):
        return None
    return f"the conversation ended after turn {said} of {scripted}"


def turn_details(case: Case, t: Transcript, judged: dict[int, CaseResult]) -> list[dict[str, Any]]:
    """One entry per user turn of the conversation (and per judged turn it never reached):
    what the user said, where it came from, and the turn's verdict when it is judged."""
    out: list[dict[str, Any]] = []
    last = max([len(t.user_turns) - 1, *judged])
    for k in range(last + 1):
        entry: dict[str, Any] = {"turn": k + 1}
        if k < len(t.user_turns):
            u = t.user_turns[k]
            entry.update(user=u.user, source=u.source, final_answer=u.final_answer)
            if u.calls:
                entry["user_calls"] = [c.to_dict() for c in u.calls]
            if u.calls_after:
                entry["user_calls_after"] = [c.to_dict() for c in u.calls_after]
            if u.stop:
                entry["stop"] = u.stop
        else:
            text = case.turns[k].user if k < len(case.turns) else None
            entry.update(user=text, source="scripted", final_answer=None)
        r = judged.get(k)
        if r is not None:
            entry.update(score=r.score, status=r.status, reason=r.reason)
            expect = case.turns[k].expect if k < len(case.turns) else None
            if expect is not None:
                entry["expected"] = expected_text(expect)
        out.append(entry)
    return out


def expected_text(expect: Expectation) -> str:
    """What a judged turn expects, as a reader says it: `refund_order {"order_id": "B22"}`,
    `no tool call`, `any calls that leave the state right`."""
    from evalspec._util.json_values import short

    parts = [f"{c.tool} {short(c.args)}" if c.args else c.tool for c in expect.tool_calls]
    if expect.no_tool_calls:
        parts.append("no tool call")
    parts += [_answer_text(c.kind, c.params) for c in expect.final_answer]
    if expect.min_calls:
        parts.append(f"at least {expect.min_calls} tool call{'s' if expect.min_calls != 1 else ''}")
    parts += [
        f"state {c.pointer} {'absent' if c.absent else short(c.expected)}" for c in expect.state
    ]
    parts += [f"state {'/' + '/'.join(p)} unchanged" for p in expect.unchanged]
    return "; ".join(parts) or "nothing checked"


_ANSWER_WORDS = {
    "contains": "an answer containing",
    "not_contains": "an answer without",
    "regex": "an answer matching",
    "equals": "an answer equal to",
    "similarity": "an answer similar to",
}


def _answer_text(kind: str, params: dict[str, Any]) -> str:
    from evalspec._util.json_values import short

    if kind == "judge":
        return "an answer the judge accepts"
    value = next((params[k] for k in ("values", "value", "pattern") if k in params), params)
    return f"{_ANSWER_WORDS.get(kind, f'an answer checked by {kind}:')} {short(value)}"
