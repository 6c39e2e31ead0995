"""BFCL's multi-turn result files as transcripts of the suite `evalspec import bfcl` made.

A record is `{"id", "result"}` where `result` holds the model's answers turn by turn and, in each
turn, step by step (one model answer each): a list of `{name: "JSON arguments"}` for a
function-calling model, text for the others (call text, or JSON call objects for the
handlers that ask for them). Each step is decoded as BFCL decodes it
(never run; a step that does not decode, or decodes to no call, is skipped, as BFCL skips it);
each call is answered by the suite's own tools as its turn offers them (a tool a later turn adds
is unknown before), so the transcript shows the outputs the model saw and `evalspec score` finds
it current. BFCL's two verdicts without a check become
transcripts that fail: a `result` that is not a list (its inference failed) is an errored run,
and fewer turns than the conversation has (BFCL stopped the model: `force_terminated`) leaves
the later turns unreached.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalspec._interop.bfcl import RESULTS, errored_transcript, lacks
from evalspec._interop.bfcl_decode import DecodeError, ResultFormat, decode, text_kind
from evalspec._interop.records import (
    RecordFault,
    Refusal,
    numbered_json,
    refused_all,
    what_it_is,
)
from evalspec._suite.limits import MAX_CALLS_PER_CASE
from evalspec._suite.model import REFUSED_TAG, Case, Suite
from evalspec._transcript import ToolCall, Transcript, UserTurn
from evalspec._util.reading import display_name, input_error

SOURCE = "import:bfcl"
_SHOWN = 200
"""Characters of a failed inference's text kept in the transcript's error."""


def numbered_records(path: Path, refused: list[Refusal]) -> list[tuple[int, dict[str, Any]]]:
    """(line, record) of a BFCL result file: JSON Lines, or one JSON list (every record on line
    1); a line that is no record with a text id is refused on its own (appended to `refused`)."""
    name = display_name(path)
    numbered, bad = numbered_json(path, "BFCL results", "name a BFCL result file")
    refused.extend(bad)
    out = []
    for entry in numbered:
        record = entry.value
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            got = what_it_is(record)
            why = f"every BFCL result must be a JSON object with a text 'id', got {got}"
            refused.append(Refusal(entry.place, name, entry.line, why))
        else:
            out.append((entry.line, record))
    return out


def result_kind(records: list[tuple[int, dict[str, Any]]]) -> ResultFormat:
    """Function-calling results hold each step as a list of calls; the others hold text, read
    by the decoder its form asks for (`text_kind`: JSON call objects or call text)."""
    texts: list[str] = []
    for _, record in records:
        turns = record.get("result")
        for turn in turns if isinstance(turns, list) else ():
            if not isinstance(turn, list):
                continue
            if any(isinstance(step, list) for step in turn):
                return "fc"
            texts.extend(step for step in turn if isinstance(step, str))
    return text_kind(texts)


def multi_turn_transcripts(
    path: Path, suite: Suite, *, model: str, kind: ResultFormat | None, refused: list[Refusal]
) -> tuple[list[Transcript], list[str]]:
    """Transcripts of the records that are cases of `suite`, and the ids of those that are not.

    A record that cannot be read is refused (appended to `refused`); one of a case gives an
    errored transcript, as does a case the suite holds for a record refused at import."""
    from evalspec._tools.environment import Conversations
    from evalspec._tools.simulated import ToolSimulator

    name = display_name(path)
    records = numbered_records(path, refused)
    if not records:
        raise refused_all(refused, "a BFCL multi-turn result file ({id, result} lines)")
    kind = kind or result_kind(records)
    cases = {c.name: c for c in suite.cases}
    tools = Conversations(suite, ToolSimulator(suite.tools, Path(suite.path).resolve().parent))
    every_tool = frozenset(t.name for t in suite.tools)
    out: list[Transcript] = []
    skipped: list[str] = []
    for line, record in records:
        case = cases.get(record["id"])
        if case is None:
            skipped.append(record["id"])
            continue
        if REFUSED_TAG in case.tags:  # the record was refused at import: it fails here too
            out.append(errored_transcript(case.name, model, case.description or REFUSED_TAG))
            continue
        if not case.turns:
            raise input_error(
                name,
                f"{record['id']} is a multi-turn result, but case {case.name!r} of the suite "
                "has one user message",
                "import the results into the suite `evalspec import bfcl` made of the same "
                "multi-turn category",
                line,
            )
        try:
            if "result" not in record:
                raise lacks(record, "result", RESULTS)
            steps = _steps(record, case, kind)
        except RecordFault as fault:
            refused.append(Refusal(case.name, name, line, fault.reason))
            out.append(errored_transcript(case.name, model, fault.reason))
            continue
        offered = [
            frozenset(o) if (o := case.offered_in_turn(k)) is not None else every_tool
            for k in range(len(case.turns))
        ]
        out.append(_transcript(record, case, steps, model, tools.open(case), offered))
    return out, skipped


def _steps(
    record: Mapping[str, Any], case: Case, kind: ResultFormat
) -> list[list[list[tuple[str, dict[str, Any]]]]] | str:
    """Each turn's steps that decode to calls; the text of a failed inference instead."""
    result = record["result"]
    if not isinstance(result, list):
        return result if isinstance(result, str) else json.dumps(result)[:_SHOWN]
    if len(result) > len(case.turns):
        raise RecordFault(
            f"it answers {len(result)} turns; the suite's case has {len(case.turns)} (import "
            "results of the same BFCL version as the questions the suite was made from)",
            RESULTS,
        )
    turns = []
    for k, turn in enumerate(result):
        if not isinstance(turn, list):
            raise RecordFault(
                f"its turn {k + 1} is not a list of steps (each turn of a multi-turn result is "
                "a list of the model's answers)",
                RESULTS,
            )
        decoded = []
        for step in turn:
            try:
                calls = decode(step, kind, multi_turn=True)
            except DecodeError:
                continue  # BFCL ignores an answer that is no call (text, broken arguments)
            if calls:
                decoded.append(calls)
        turns.append(decoded)
    return turns


def _transcript(
    record: Mapping[str, Any],
    case: Case,
    steps: list[list[list[tuple[str, dict[str, Any]]]]] | str,
    model: str,
    conversation: Any,
    offered: list[frozenset[str]],
) -> Transcript:
    """`offered`: the tools each user turn offers (a turn may add some: `add_tools`)."""
    rid = str(record["id"])
    item_id = f"bfcl:{model}:{rid}"
    if isinstance(steps, str):
        why = f"BFCL's inference gave no list of turns: {steps[:_SHOWN]}"
        return Transcript(
            item_id=item_id, case=rid, model=model, finish_reason="error", error=why, source=SOURCE
        )
    calls: list[ToolCall] = []
    answers = 0
    error = None
    made = [(k, step) for k, turn in enumerate(steps) for step in turn]
    for k, step in made:
        if len(calls) + len(step) > MAX_CALLS_PER_CASE:
            error = (
                f"the model made more than {MAX_CALLS_PER_CASE} tool calls in one "
                f"conversation; evalspec scores at most {MAX_CALLS_PER_CASE}, so the "
                "transcript stops there"
            )
            break
        for name, args in step:
            raw = json.dumps(args, ensure_ascii=False, default=str)
            output, failed = _answer(conversation, name, args, raw, offered[k])
            calls.append(
                ToolCall(name, args, raw, f"call_{len(calls)}", output, failed, answers, k)
            )
        answers += 1
    cut = len(steps) < len(case.turns)
    return Transcript(
        item_id=item_id,
        case=rid,
        model=model,
        tool_calls=tuple(calls),
        finish_reason="error" if error else "max_turns" if cut else "stop",
        turns=answers,
        error=error,
        source=SOURCE,
        user_turns=tuple(UserTurn(case.turns[k].user) for k in range(len(steps))),
    )


def _answer(
    conversation: Any, name: str, args: dict[str, Any], raw: str, offered: frozenset[str]
) -> tuple[Any, str | None]:
    """What the suite's tools answer, as a run would give it (output, error)."""
    if name not in offered:
        return None, f"unknown tool '{name}'; available tools: {', '.join(sorted(offered))}"
    result = conversation.answer_without_llm(name, args, raw)
    if result is None:
        return None, f"no answer for {name} without a model"
    return result.output, result.error
