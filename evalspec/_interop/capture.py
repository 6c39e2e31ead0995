"""Capture mode: what models called in a capture case, written back as its expectations.

A case marked `capture: true` has no expectations; running it records each model's calls.
Accepting a run turns them into an `expect:` block, written where `capture: true` stands (a
multi-turn case: one block per turn, the `capture` line removed). The file is edited as text,
so every comment, key order and quoting elsewhere stays as written; the result is validated
before it replaces the suite. What the runs agree on becomes the expected calls; arguments
they disagree on get a `one_of` critic naming every value seen, and calls they disagree on a
comment above the block, for the person who reviews the change.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from evalspec._suite.model import Case, Loc
from evalspec._transcript import ToolCall, Transcript
from evalspec._util.terminal import BEYOND_C0, plain

Calls = tuple[tuple[str, str], ...]
"""One run's calls in a turn: (tool, arguments as canonical JSON), in order."""

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$")
_ID_NAME = re.compile(r"(^|_)(id|ids|uuid|key|code|sku)$|[a-z](Id|ID|Ids)$", re.IGNORECASE)
_CAPTURE_LINE = re.compile(r"capture\s*:\s*[^\s#]+\s*(#.*)?$")
_HIDDEN = re.compile(f"[{BEYOND_C0}]")
FREE_TEXT_WORDS = 3
"""A string of this many words or more is free text (judged by similarity, not equality)."""


@dataclass(frozen=True)
class Run:
    """One finished transcript of a capture case: who ran it, and its calls turn by turn."""

    label: str
    turns: tuple[Calls, ...]


class NotWritable(ValueError):
    """A capture case whose expectations cannot be written into its file as text (why)."""


def runs_of(transcripts: Sequence[Transcript], turns: int) -> list[Run]:
    """Each transcript's calls, split by user turn (one turn for a single-turn case)."""
    out = []
    for t in transcripts:
        per_turn: list[list[tuple[str, str]]] = [[] for _ in range(max(turns, 1))]
        for call in t.tool_calls:
            k = call.user_turn or 0  # absent for a single request
            per_turn[min(k, len(per_turn) - 1)].append((call.name, _canonical(call)))
        out.append(Run(f"{t.model}#{t.trial}", tuple(tuple(c) for c in per_turn)))
    return out


def _canonical(call: ToolCall) -> str:
    arguments = call.arguments if call.arguments is not None else call.raw_arguments
    return json.dumps(arguments, ensure_ascii=False)


def expectation(
    runs: Sequence[Run], turn: int, parameters: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """The `expect:` mapping of one turn and the comments for its reviewer (`parameters`:
    each tool's JSON Schema, by name, for the critics suggested).

    The most common sequence of tools called becomes the expected calls (ties: the first run
    seen); runs that called other tools are named in a comment."""
    shapes = Counter(tuple(name for name, _ in r.turns[turn]) for r in runs)
    shape, _ = shapes.most_common(1)[0]
    agreeing = [r for r in runs if tuple(n for n, _ in r.turns[turn]) == shape]
    comments = [f"captured from {len(runs)} run(s): {', '.join(r.label for r in runs)}"]
    for other, count in shapes.items():
        if other != shape:
            who = [r.label for r in runs if tuple(n for n, _ in r.turns[turn]) == other]
            called = ", ".join(other) if other else "no tool"
            comments.append(f"{count} run(s) called {called} instead ({', '.join(who)})")
    if not shape:
        return {"no_tool_calls": True}, comments
    for i, name in enumerate(shape):
        unread = [r.label for r in agreeing if not _is_object(r.turns[turn][i][1])]
        if unread:
            comments.append(
                f"the arguments {', '.join(unread)} gave {name} (call {i + 1}) are not a JSON "
                "object: left out of the expected ones"
            )
    calls = [
        _expected_call(
            name, [json.loads(r.turns[turn][i][1]) for r in agreeing], parameters.get(name)
        )
        for i, name in enumerate(shape)
    ]
    return {"ordered": True, "tool_calls": calls} if len(calls) > 1 else {
        "tool_calls": calls
    }, comments


def _is_object(canonical: str) -> bool:
    return isinstance(json.loads(canonical), dict)


def _expected_call(name: str, seen: list[Any], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """One expected call from the arguments each agreeing run gave it."""
    properties = (schema or {}).get("properties") or {}
    given = [a for a in seen if isinstance(a, dict)]
    keys = list(dict.fromkeys(k for a in given for k in a))
    args: dict[str, Any] = {}
    critics: dict[str, Any] = {}
    for key in keys:
        values = [a[key] for a in given if key in a]
        distinct = list({json.dumps(v, sort_keys=True): v for v in values}.values())
        args[key] = Counter(json.dumps(v, sort_keys=True) for v in values).most_common(1)[0][0]
        args[key] = json.loads(args[key])
        if len(distinct) > 1 or len(values) < len(given):
            critics[key] = {
                "one_of": {"values": [*distinct, *([""] if len(values) < len(given) else [])]}
            }
        else:
            critic = suggested_critic(key, args[key], properties.get(key))
            if critic is not None:
                critics[key] = critic
    call: dict[str, Any] = {"tool": name, "args": args}
    if critics:
        call["critics"] = critics
    return call


def suggested_critic(name: str, value: Any, schema: Any) -> Any:
    """The critic a reviewer most likely wants for an argument, from its declared type and the
    value seen: exact for enums, booleans and ids, a tolerance for numbers, dates compared as
    dates, similarity for free text. None: the default (equality) fits."""
    schema = schema if isinstance(schema, dict) else {}
    if isinstance(value, bool) or "enum" in schema:
        return "binary"
    if isinstance(value, int | float):
        if _ID_NAME.search(name) or isinstance(value, int):
            return "binary"
        return {"numeric": {"tolerance": round(abs(value) * 0.01, 6) or 1e-6}}
    if not isinstance(value, str):
        return None
    if schema.get("format") in ("date", "date-time") or _DATE.match(value):
        return {"datetime": {"tolerance": "0s", "max_difference": "1d"}}
    if _ID_NAME.search(name) or schema.get("format") == "uuid":
        return "exact"
    if len(value.split()) >= FREE_TEXT_WORDS:
        return {"similarity": {"threshold": 0.8}}
    return {"exact": {"case_sensitive": False}}


# ------------------------------------------------------------------------ writing as text


def block(expect: dict[str, Any], comments: list[str], indent: int) -> list[str]:
    """`expect:` and its body as lines at `indent` (the key's column), comments first inside."""
    inner = " " * (indent + 2)
    value = literal(expect)
    body = yaml.safe_dump(
        value, sort_keys=False, allow_unicode=readable(value), default_flow_style=None, width=96
    )
    lines = ["expect:"]
    lines += [f"{inner}# {comment_text(c)}" for c in comments]
    lines += [inner + line for line in body.splitlines()]
    return lines


def comment_text(text: str) -> str:
    """`text` fit for a YAML comment: one line (a line break would end the comment and start
    suite keys), control codes and bidirectional overrides shown as escapes, not sent to the
    terminal of whoever reads the diff."""
    return plain(" ".join(text.split()))[:300]


def readable(value: Any) -> bool:
    """Whether `value` may be written with its non-ASCII text as it is: not when a text holds
    a character that hides or reorders what is shown (U+202E, a C1 control), which YAML would
    write unescaped; then every non-ASCII character is written as an escape (`\\u202e`)."""
    return not _HIDDEN.search(json.dumps(value, ensure_ascii=False, default=str))


def literal(value: Any) -> Any:
    """Text that would read as a template (`{{ }}`, `{% %}`) kept as written: a model's text
    must not become a template of the suite."""
    if isinstance(value, str) and "{" in value and any(m in value for m in ("{{", "{%", "{#")):
        return "{{ '" + _quoted(value) + "' }}"
    if isinstance(value, dict):
        return {k: literal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [literal(v) for v in value]
    return value


def _quoted(text: str) -> str:
    """`text` as the inside of a Jinja string literal, which Jinja reads back as Python's
    `unicode_escape`: one constant however many `{%` it holds (a `{% raw %}` block ends at
    any spelling of `{%- endraw +%}` in the text, so the text would need one per `{%`)."""
    return text.encode("unicode_escape").decode("ascii").replace("'", "\\'")


@dataclass(frozen=True)
class Edit:
    """Replace the text from (line, column) to the line's end with `lines` (1-based)."""

    line: int
    column: int
    lines: tuple[str, ...]
    to_end: bool = True
    """False: insert before the text at (line, column) instead of replacing the rest."""


def capture_edits(case: Case, text_lines: list[str], blocks: list[list[str]]) -> list[Edit]:
    """Where a case's blocks go: in place of `capture: true` (one turn), or before each turn's
    first key with the `capture` line removed (several)."""
    at = case.capture
    assert at is not None
    _check_capture_line(text_lines, at)
    if not case.turns:
        return [Edit(at.line, at.column, tuple(blocks[0]))]
    edits = [Edit(at.line, at.column, ())]
    for turn, lines in zip(case.turns, blocks, strict=True):
        line = text_lines[turn.loc.line - 1]
        if line[turn.loc.column - 1 : turn.loc.column] in ("{", "["):
            raise NotWritable(f"turn {turn.loc.path} is written in flow style ({{...}})")
        pad = " " * (turn.loc.column - 1)
        edits.append(Edit(turn.loc.line, turn.loc.column, (*lines, pad), to_end=False))
    return edits


def _check_capture_line(text_lines: list[str], at: Loc) -> None:
    line = text_lines[at.line - 1] if 0 < at.line <= len(text_lines) else ""
    if not _CAPTURE_LINE.match(line[at.column - 1 :]):
        raise NotWritable(
            f"{at.file}:{at.line}:{at.column}: `capture: true` is not the last key on its line; "
            "write it on a line of its own"
        )


def apply_edits(text: str, edits: list[Edit]) -> str:
    """`text` with the edits made, last first (so earlier positions stay where they were)."""
    lines = text.split("\n")
    for edit in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        i, col = edit.line - 1, edit.column - 1
        line = lines[i]
        head, tail = line[:col], ("" if edit.to_end else line[col:])
        if not edit.lines:
            lines[i : i + 1] = [] if not head.strip() else [head.rstrip()]
            continue
        new = [head + edit.lines[0], *edit.lines[1:]]
        if edit.to_end:
            pad = " " * col
            new = [new[0], *(pad + rest for rest in new[1:])]
        else:
            pad = " " * col
            new = [new[0], *(pad + rest for rest in new[1:-1]), new[-1] + tail]
        lines[i : i + 1] = new
    return "\n".join(lines)
