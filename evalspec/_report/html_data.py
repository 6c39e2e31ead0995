"""The data an HTML report carries: columns, cases, explanation rows and conversations, compact.

The page renders rows lazily from this payload, so its size is what matters at scale: cells are
short lists, and long texts that repeat (a system prompt, a tool's answer) are stored once and
referred to by index. Every value is a string or a number: the page shows it as text, never as
markup.
"""

from __future__ import annotations

import gc
import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from evalspec._report.columns import (
    Column,
    RunData,
    Side,
    before_after_pairs,
    build_columns,
    case_change_details,
    case_order,
)

MAX_TEXT = 4000
"""Longest text kept per value; a model's 1 MB answer would make the page slow to open."""

INTERN_MIN = 48
"""Texts at least this long are stored once when they repeat."""


@dataclass(frozen=True)
class HtmlRun:
    """One run to show: its results.json content and its transcripts (plain dicts, by item id)."""

    label: str
    results: dict[str, Any]
    transcripts: dict[str, dict[str, Any]] = field(default_factory=dict)


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


STATUSES = ("pass", "warn", "fail", "error")


def number(value: Any, default: float = 0.0) -> float:
    """A number from a results or transcripts file, which may have been edited by hand."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value)


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list | tuple) else []


def _status(value: Any) -> str:
    return value if value in STATUSES else "error"


def _messages(t: dict[str, Any], s: _Strings) -> list[list[Any]]:
    """[role, content, [[tool, arguments], ...]] per message, as the model saw the conversation."""
    out: list[list[Any]] = []
    for m in _items(t.get("messages")):
        if not isinstance(m, dict):
            continue
        calls = []
        for c in _items(m.get("tool_calls")):
            fn = c.get("function", {}) if isinstance(c, dict) else {}
            if isinstance(fn, dict):
                calls.append([shown(fn.get("name")), s(fn.get("arguments"))])
        role = shown(m.get("role"))
        if role == "tool" and m.get("name"):
            role = f"tool · {shown(m.get('name'))}"
        out.append([role, s(m.get("content")), calls])
    return out


def _where(row: dict[str, Any]) -> str:
    call = row.get("call")
    return shown(row.get("field")) + (f" (call {call + 1})" if isinstance(call, int) else "")


def _turn_rows(details: dict[str, Any], s: _Strings) -> list[list[Any]]:
    """A multi-turn case's user turns as the first explanation rows: who said what, and the
    turn's score and verdict when it is judged."""
    out: list[list[Any]] = []
    for e in _items(details.get("turns")):
        if not isinstance(e, dict):
            continue
        who = "simulated user" if e.get("source") == "simulated" else f"turn {e.get('turn')}"
        judged = "score" in e
        out.append(
            [
                who,
                s(e.get("user")),
                s(e.get("final_answer")),
                round(number(e.get("score"), 1.0), 3),
                1.0 if judged else 0.0,
                s(e.get("reason") or ("not judged" if not judged else "")),
                1 if e.get("status") in (None, "pass", "warn") else 0,
            ]
        )
    return out


def _trial(r: dict[str, Any], t: dict[str, Any] | None, s: _Strings) -> dict[str, Any]:
    rows = [
        [
            _where(row),
            s(row.get("expected")),
            s(row.get("actual")),
            round(number(row.get("score")), 3),
            number(row.get("weight"), 1.0),
            s(row.get("reason")),
            1 if row.get("match", True) else 0,
        ]
        for row in _items(r.get("rows"))
        if isinstance(row, dict)
    ]
    details = r.get("details")
    if isinstance(details, dict) and details.get("turns"):
        rows = [*_turn_rows(details, s), *rows]
    out: dict[str, Any] = {
        "i": int(number(r.get("trial"))),
        "s": _status(r.get("status")),
        "x": round(number(r.get("score")), 4),
        "r": s(r.get("reason")),
        "rows": rows,
    }
    if t is not None:
        usage = t.get("usage") if isinstance(t.get("usage"), dict) else {}
        out["m"] = _messages(t, s)
        out["f"] = s(t.get("final_answer"))
        out["e"] = s(t.get("error"))
        tokens = number(usage.get("prompt_tokens")) + number(usage.get("completion_tokens"))
        out["tok"] = int(tokens)
        out["lat"] = round(number(t.get("latency_s")), 3)
    return out


def _cell(
    side: Side,
    results: list[dict[str, Any]],
    summary: dict[str, Any],
    transcripts: dict[str, dict[str, Any]],
    s: _Strings,
) -> list[Any]:
    """[status, score, reason, passed/trials text, trials]."""
    trials = [
        _trial(r, transcripts.get(r.get("item_id", "")), s)
        for r in sorted(results, key=lambda r: number(r.get("trial")))
    ]
    n = int(number(summary.get("trials"), len(trials)))
    passed = int(number(summary.get("passed"), sum(t["s"] in ("pass", "warn") for t in trials)))
    tally = f"{passed}/{n}" if n > 1 else ""
    return [_status(side.status), round(number(side.score), 4), s(side.reason), tally, trials]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a report is built.

    A page is hundreds of thousands of small lists and dicts that hold no cycles; each
    collection pass rescanned the whole run, which took longer than building them (10,000
    cases: 2 s of 2.5).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_payload(runs: Sequence[HtmlRun]) -> tuple[dict[str, Any], list[Column]]:
    data = [RunData(r.label, r.results) for r in runs]
    columns = build_columns(data, with_results=False)
    changes = case_change_details(data, columns) if len(columns) > 1 else {}
    s = _Strings()
    tags: dict[str, list[str]] = {}
    summaries: dict[tuple[int, str, str], dict[str, Any]] = {}
    results: dict[tuple[int, str, str], list[dict[str, Any]]] = defaultdict(list)
    for index, run in enumerate(runs):
        for r in run.results.get("results", ()):
            if isinstance(r, dict):
                results[(index, r.get("case", ""), r.get("model", ""))].append(r)
        for c in run.results.get("cases", ()):
            if isinstance(c, dict):
                tags.setdefault(c.get("case", ""), [shown(t) for t in _items(c.get("tags"))])
                summaries[(index, c.get("case", ""), c.get("model", ""))] = c
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
                else _cell(side, results[key], summaries.get(key, {}), transcripts, s)
            )
        change = changes.get(name)
        case: dict[str, Any] = {"n": name, "t": tags.get(name, []), "c": cells}
        if change is not None:
            case["k"] = change.kind
            case["d"] = None if change.delta is None else round(change.delta, 4)
        cases.append(case)
    payload = {
        "columns": [c.label for c in columns],
        "change": change_label(data, columns),
        "strings": s.table,
        "cases": cases,
    }
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


def script_json(payload: Any) -> str:
    """JSON safe inside <script type="application/json">: no `<`, `>` or `&` can end the block."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
