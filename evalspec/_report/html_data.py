"""The data an HTML report carries: columns, cases, explanation rows and conversations, compact.

The page renders rows lazily from this payload, so its size is what matters at scale: cells are
short lists, and long texts that repeat (a system prompt, a tool's answer) are stored once and
referred to by index. Every value is a string or a number: the page shows it as text, never as
markup.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import msgspec

from evalspec._compare.columns import before_after_pairs, build_columns, case_change_details
from evalspec._compare.records import Column, RunData, Side, case_order
from evalspec._report.conversation import conversation, role_label
from evalspec._scoring.results_file import CaseRecord, ResultsFile
from evalspec._scoring.types import CaseResult, Row, Status
from evalspec._tools.faults import fault_text
from evalspec._transcript import Transcript
from evalspec._util import finite, terminal
from evalspec._util.collector import collector_paused

MAX_TEXT = 4000
"""Longest text kept per value; a model's 1 MB answer would make the page slow to open."""

INTERN_MIN = 48
"""Texts at least this long are stored once when they repeat."""

Text = str | int
"""A text as the page holds it: itself, or its index in `Payload.strings` when long."""


class CallShown(msgspec.Struct, array_like=True, frozen=True):
    """[tool, arguments] of one call an assistant message made."""

    name: str
    arguments: Text


class MessageShown(msgspec.Struct, array_like=True, frozen=True):
    """[role, content, calls]: one message as the model saw the conversation."""

    role: str
    content: Text
    calls: tuple[CallShown, ...]


class RowShown(msgspec.Struct, array_like=True, frozen=True):
    """[where, expected, actual, score, weight, reason, match] of one explanation row."""

    where: str
    expected: Text
    actual: Text
    score: float
    weight: float
    reason: Text
    match: int
    """1 when the row matched, 0 when not (the page marks the difference)."""


class LineShown(msgspec.Struct, array_like=True, frozen=True):
    """[role, text] of one line of a conversation's turn: `user said`, `model called`..."""

    role: str
    text: Text


class TurnShown(msgspec.Struct, array_like=True, frozen=True):
    """[turn, status, score, reason, lines]: one user turn; status "" and score -1 when the
    turn is not judged."""

    number: int
    status: str
    score: float
    reason: Text
    lines: tuple[LineShown, ...]


class TrialShown(
    msgspec.Struct,
    frozen=True,
    omit_defaults=True,
    rename={
        "trial": "i",
        "status": "s",
        "score": "x",
        "reason": "r",
        "messages": "m",
        "final_answer": "f",
        "error": "e",
        "tokens": "tok",
        "latency_s": "lat",
        "user_tokens": "utok",
        "turns": "tu",
    },
):
    """One trial: its result and, when the run kept its transcript, its conversation."""

    trial: int
    status: Status
    score: float
    reason: Text
    rows: tuple[RowShown, ...]
    messages: tuple[MessageShown, ...] | None = None
    final_answer: Text | None = None
    error: Text | None = None
    tokens: int | None = None
    latency_s: float | None = None
    user_tokens: int | None = None
    """The simulated user's tokens, apart from the model's."""
    turns: tuple[TurnShown, ...] = ()
    """A conversation's user turns, a line per role (none for a single-turn case)."""


class CellShown(msgspec.Struct, array_like=True, frozen=True):
    """[status, score, reason, passed/trials text, trials]: one case in one column."""

    status: Status
    score: float
    reason: Text
    tally: str
    trials: tuple[TrialShown, ...]


class CaseShown(
    msgspec.Struct,
    frozen=True,
    omit_defaults=True,
    rename={"name": "n", "tags": "t", "cells": "c", "kind": "k", "delta": "d"},
):
    """One case: a cell per column (null where a column lacks the case), and its most
    pressing change between columns."""

    name: str
    tags: tuple[str, ...]
    cells: tuple[CellShown | None, ...]
    kind: str | None = None
    delta: float | None = None


class Payload(msgspec.Struct, frozen=True):
    """What the page reads (schemas/html-payload.schema.json): the short keys and lists keep a
    10,000-case page small, and long texts that repeat are stored once in `strings`."""

    columns: tuple[str, ...]
    change: str
    strings: tuple[str, ...]
    cases: tuple[CaseShown, ...]


@dataclass(frozen=True)
class HtmlRun:
    """One run to show: its results file and its transcripts (by item id)."""

    label: str
    results: ResultsFile
    transcripts: dict[str, Transcript] = field(default_factory=dict)


class _Strings:
    """Interns long texts: the first use is stored in the table, every use is its index."""

    def __init__(self) -> None:
        self.table: list[str] = []
        self.index: dict[str, int] = {}

    def __call__(self, value: Any) -> str | int:
        if type(value) is str and len(value) < INTERN_MIN:
            return value  # the common case, first
        text = shown(value)
        if len(text) < INTERN_MIN:
            return text
        if text not in self.index:
            self.index[text] = len(self.table)
            self.table.append(text)
        return self.index[text]


def shown(value: Any) -> str:
    """A value as the page shows it: strings as they are, anything else as JSON; capped."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


STATUSES = ("pass", "warn", "fail", "error", "user_fault", "captured")


def _messages(t: Transcript, s: _Strings) -> tuple[MessageShown, ...]:
    """Each message as the model saw the conversation. Messages are the provider's own chat
    format, which the transcript keeps as it came (not a declared record): read leniently."""
    out = []
    faults = {c.id: c.fault for c in t.tool_calls if c.fault is not None}
    for m in t.messages:
        calls = m.get("tool_calls")
        shown_calls = tuple(
            CallShown(shown(fn.get("name")), s(fn.get("arguments")))
            for c in (calls if isinstance(calls, list) else ())
            if isinstance(c, dict) and isinstance(fn := c.get("function", {}), dict)
        )
        role = shown(m.get("role"))
        if role == "tool" and m.get("name"):
            role = f"tool · {shown(m.get('name'))}"
        fault = faults.get(str(m.get("tool_call_id"))) if role.startswith("tool") else None
        if fault is not None:  # what the model read here is a declared fault, not an answer
            role = f"{role} · fault: {fault_text(fault)}"
        out.append(MessageShown(role, s(m.get("content")), shown_calls))
    return tuple(out)


def _where(row: Row) -> str:
    return row.field + (f" (call {row.call + 1})" if row.call is not None else "")


def _turns(r: CaseResult, t: Transcript | None, s: _Strings) -> tuple[TurnShown, ...]:
    """A conversation's turns, a line per role (what the user said is never an expected
    value); the calls and the tools' answers when the run kept the transcript."""
    calls = [c.to_dict() for c in t.tool_calls] if t is not None else []
    player = t.user_usage.model if t is not None and t.user_usage is not None else None
    return tuple(
        TurnShown(
            turn.number,
            turn.status or "",
            round(turn.score, 3) if turn.score is not None else -1.0,
            s(turn.reason),
            tuple(LineShown(role_label(line.role, player), s(line.text)) for line in turn.lines),
        )
        for turn in conversation(r.details, calls)
    )


def _trial(r: CaseResult, t: Transcript | None, s: _Strings) -> TrialShown:
    rows = tuple(
        RowShown(
            _where(row),
            s(row.expected),
            s(row.actual),
            round(row.score, 3),
            row.weight,
            s(row.reason),
            1 if row.match else 0,
        )
        for row in r.rows
    )
    turns = _turns(r, t, s) if r.details.get("turns") else ()
    if t is None:
        return TrialShown(r.trial, r.status, round(r.score, 4), s(r.reason), rows, turns=turns)
    return TrialShown(
        r.trial,
        r.status,
        round(r.score, 4),
        s(r.reason),
        rows,
        turns=turns,
        messages=_messages(t, s),
        final_answer=s(t.final_answer),
        error=s(t.error),
        tokens=t.usage.total_tokens,
        latency_s=round(t.latency_s, 3),
        user_tokens=t.user_usage.total_tokens if t.user_usage is not None else None,
    )


def _cell(
    side: Side,
    results: list[CaseResult],
    summary: CaseRecord | None,
    transcripts: dict[str, Transcript],
    s: _Strings,
) -> CellShown:
    trials = tuple(
        _trial(r, transcripts.get(r.item_id), s) for r in sorted(results, key=lambda r: r.trial)
    )
    n = summary.trials if summary is not None else len(trials)
    passed = (
        summary.passed if summary is not None else sum(t.status in ("pass", "warn") for t in trials)
    )
    tally = f"{passed}/{n}" if n > 1 else ""
    return CellShown(side.status, round(side.score, 4), s(side.reason), tally, trials)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a report is built.

    A page is hundreds of thousands of small lists and dicts that hold no cycles; each
    collection pass rescanned the whole run, which took longer than building them (10,000
    cases: 2 s of 2.5).
    """
    with collector_paused():
        yield


def build_payload(runs: Sequence[HtmlRun]) -> tuple[Payload, list[Column]]:
    data = [RunData(r.label, r.results) for r in runs]
    columns = build_columns(data, with_results=False)
    changes = case_change_details(data, columns) if len(columns) > 1 else {}
    s = _Strings()
    tags: dict[str, tuple[str, ...]] = {}
    summaries: dict[tuple[int, str, str], CaseRecord] = {}
    results: dict[tuple[int, str, str], list[CaseResult]] = defaultdict(list)
    for index, run in enumerate(runs):
        for r in run.results.results:
            results[(index, r.case, r.model)].append(r)
        for c in run.results.cases:
            tags.setdefault(c.case, c.tags)
            summaries[(index, c.case, c.model)] = c
    cases = []
    for name in case_order(columns):
        cells = []
        for col in columns:
            side = col.cells.get(name)
            key = (col.run_index, name, col.model)
            transcripts = runs[col.run_index].transcripts
            cells.append(
                None
                if side is None
                else _cell(side, results[key], summaries.get(key), transcripts, s)
            )
        change = changes.get(name)
        kind = None if change is None else change.kind
        delta = None if change is None or change.delta is None else round(change.delta, 4)
        cases.append(CaseShown(name, tags.get(name, ()), tuple(cells), kind, delta))
    payload = Payload(
        columns=tuple(c.label for c in columns),
        change=change_label(data, columns),
        strings=tuple(s.table),
        cases=tuple(cases),
    )
    return payload, columns


def change_label(runs: Sequence[RunData], columns: Sequence[Column]) -> str:
    """What the change column compares, said in its header: `change vs gpt-4o` for the models
    of one run, `change, first run → last` for runs side by side; empty with one column."""
    pairs = before_after_pairs(runs, columns)
    if not pairs:
        return ""
    if len(runs) == 1:
        return f"change vs {columns[pairs[0][0]].label}"
    return "change, first run → last"


def script_json(payload: Payload) -> str:
    """JSON safe inside <script type="application/json">: no `<`, `>` or `&` can end the block."""
    try:
        text = msgspec.json.encode(payload).decode("utf-8")
    except UnicodeEncodeError:  # half an emoji in a live answer: json writes it as an escape
        plain = msgspec.to_builtins(payload)
        text = finite.dumps(
            plain, "the HTML report's data", ensure_ascii=False, separators=(",", ":"), default=str
        )
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    # The encoder leaves C1 controls and bidirectional overrides as they are: a state value or
    # a model's answer holding U+202E showed its row reversed. The page shows them as escapes
    # (an escaped backslash: after parsing, the text `\u202e`), as the console does.
    return _SHOWN_AS_ESCAPE.sub(lambda m: f"\\\\u{ord(m.group()):04x}", text)


_SHOWN_AS_ESCAPE = re.compile(f"[{terminal.BEYOND_C0}]")
"""What the console escapes beyond the C0 controls, which JSON text escapes itself."""
