"""Records, not files: one record's fault refuses that record, never the file it came from.

An importer reads a file of records (BFCL questions and answers, results, StableToolBench
queries, spans). A record that cannot be read or converted (a line that is not JSON, an answer
that is no function, a turn both adding functions and asking something) is refused: named by
its id (or line), with the reason and the file that holds the fault (the answer file, not the
question file, when the answer is wrong). The rest import. A refused record still counts, as
BFCL counts an errored record: it becomes a case that fails whatever the model does (tagged
`import-refused`, the reason in its description), and a result for it an errored transcript.
Only a file whose every record is refused is refused as a whole (exit 2, nothing written).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalspec._suite.model import REFUSED_TAG
from evalspec._suite.yaml_tree import MAX_DEPTH
from evalspec._util.errors import InputError, UsageError
from evalspec._util.reading import (
    display_name,
    input_error,
    jsonl_lines,
    nests_deeper,
    parse_json,
    read_text,
)

if TYPE_CHECKING:
    from evalspec._transcript import Transcript

REFUSED_PREFIX = "refused at import: "
"""How a refused record's case description begins (and the error of a result for it)."""

MALFORMED = (
    KeyError,
    TypeError,
    ValueError,
    AttributeError,
    IndexError,
    RecursionError,
    StopIteration,
    ArithmeticError,
)
"""What converting a record of the right syntax but the wrong content raises (evalspec's own
errors are not among them: a missing package is no record's fault)."""


def why(exc: BaseException) -> str:
    """One line saying what was wrong, from what converting a record raised."""
    if isinstance(exc, KeyError):
        return f"a record lacks the key {exc.args[0]!r}" if exc.args else "a key is missing"
    if isinstance(exc, StopIteration):
        return "an entry that must name something is empty"
    if isinstance(exc, TypeError | AttributeError):
        return f"a value has the wrong type ({exc})"
    text = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    return text


class RecordFault(Exception):
    """One record's fault; `role` says which file holds it ("questions", "answers", ...)."""

    def __init__(self, reason: str, role: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.role = role


@contextlib.contextmanager
def blame(role: str) -> Iterator[None]:
    """A fault raised inside is in the file of `role` (one already blamed keeps its file)."""
    try:
        yield
    except RecordFault:
        raise
    except MALFORMED as exc:
        raise RecordFault(why(exc), role) from None


@dataclass(frozen=True)
class Refusal:
    """A record the importer refused: which, where, why."""

    record: str
    file: str
    line: int
    reason: str
    column: int = 1

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        return f"{where}: record {self.record} refused: {self.reason}"


@dataclass(frozen=True)
class Sources:
    """The files records come from, by role, and each record's line in them (for messages)."""

    files: dict[str, str]
    lines: dict[str, dict[str, int]]

    def refusal(self, record: str, fault: RecordFault) -> Refusal:
        file = self.files.get(fault.role, fault.role)
        line = self.lines.get(fault.role, {}).get(record, 1)
        return Refusal(record, file, line, fault.reason)


CASE_DEPTH = MAX_DEPTH - 2
"""How deep a case or tool an importer makes may nest: a suite holds each two levels down
(`cases:` or `tools:`, then the list), and refuses a file nesting deeper than MAX_DEPTH."""


def holdable(built: Any, what: str, role: str) -> None:
    """A RecordFault when `built` (a case or a tool) nests deeper than a suite holds it: the
    suite written would not load."""
    if nests_deeper(built, CASE_DEPTH):
        raise RecordFault(
            f"its {what} nests deeper than {CASE_DEPTH} levels, more than a suite holds", role
        )


def screen_tool(tool: Mapping[str, Any], role: str) -> None:
    """A RecordFault when a tool an importer made from a record would not load in a suite: a
    name the language refuses, a description that is no text, parameters that are no JSON
    Schema, or nesting deeper than a suite holds."""
    from evalspec._language.tools import TOOL_NAME_PATTERN
    from evalspec._tool_schema import schema_error

    name = tool.get("name")
    if not isinstance(name, str) or not re.fullmatch(TOOL_NAME_PATTERN, name):
        raise RecordFault(
            f"a function's name {str(name)[:80]!r} is no tool name (1 to 64 letters, digits, "
            "'_', '.' or '-')",
            role,
        )
    if not isinstance(tool.get("description", ""), str):
        got = what_it_is(tool["description"])
        raise RecordFault(f"function {name!r}: its description is {got}, not a text", role)
    error = schema_error(tool.get("parameters", {}))
    if error is not None:
        raise RecordFault(
            f"function {name!r}: its parameters are no JSON Schema ({error.message[:120]})", role
        )
    holdable(tool, f"function {name!r}", role)


def refused_case(refusal: Refusal, tags: Sequence[str] = ()) -> dict[str, Any]:
    """A case that stands for a refused record and fails whatever the model does: it offers no
    tool and asks for a call (`min_calls`), and any call fails `no_tool_calls`."""
    text = f"{REFUSED_PREFIX}{refusal}"
    return {
        "name": refusal.record,
        "description": text,
        "tags": [*tags, REFUSED_TAG],
        "user": f"({text})",
        "tools": [],
        "expect": {"min_calls": 1},
        "evaluators": ["no_tool_calls"],
    }


def refused_all(refusals: Sequence[Refusal], what: str) -> UsageError:
    """The error when no record of a file could be imported: the file is wrong, not a record."""
    shown = "; ".join(str(r) for r in refusals[:3])
    more = f" (and {len(refusals) - 3} more)" if len(refusals) > 3 else ""
    return UsageError(
        f"every record was refused, nothing written: {shown}{more}; check that it is {what}"
    )


def what_it_is(value: Any) -> str:
    """A JSON value in words, for a message saying what an entry is instead of a record: its
    type and, for an object, its first keys (shown with `repr`, so no control character of the
    file reaches a terminal)."""
    if isinstance(value, Mapping):
        keys = ", ".join(repr(str(k))[:40] for k in list(value)[:5])
        more = ", ..." if len(value) > 5 else ""
        return f"an object with keys {keys}{more}" if keys else "an empty object"
    if isinstance(value, list):
        return "an empty list" if not value else f"a list of {len(value)}"
    kinds = {bool: "true or false", int: "a number", float: "a number", str: "a string"}
    return kinds.get(type(value), "null")


@dataclass(frozen=True)
class Entry:
    """One entry of a file of records: its place (`line-N` in JSON Lines, `entry-K` in a JSON
    list, which names it in messages and as a refused case), its line and its value."""

    place: str
    line: int
    value: Any


def numbered_json(path: Path, what: str, hint: str) -> tuple[list[Entry], list[Refusal]]:
    """Each record of a JSON Lines file, or of a JSON list (every record on line 1, named by
    its place in the list); a line that is not JSON is refused on its own. The whole file is
    refused only when it cannot be read at all (size, encoding, a JSON list that does not
    parse) or holds no record (empty, an empty list)."""
    name = display_name(path)
    text = read_text(path, name)
    refused: list[Refusal] = []
    numbered: list[Entry] = []
    data = _json_list(text, name)
    if data is not None:
        if not data:
            raise input_error(name, f"the file is an empty JSON list: it holds no {what}", hint)
        numbered = [Entry(f"entry-{k}", 1, r) for k, r in enumerate(data, 1)]
    else:
        for n, line in enumerate(jsonl_lines(text), 1):
            if not line.strip():
                continue
            try:  # the limits of untrusted input hold for each line
                numbered.append(Entry(f"line-{n}", n, parse_json(line, name, n)))
            except InputError as exc:
                at = exc.problems[0] if exc.problems else None
                message, column = (at.message, at.column) if at else (str(exc), 1)
                refused.append(Refusal(f"line-{n}", name, at.line if at else n, message, column))
    if not numbered and not refused:
        raise input_error(name, f"the file is empty: it holds no {what}", hint)
    if not numbered:
        _one_document(text, name, what, hint)
    return numbered, refused


def _json_list(text: str, name: str) -> list[Any] | None:
    """The records of a file that is one JSON list; None for JSON Lines, even when its first
    line is a list (a record that is no object, refused on its own line)."""
    if not text.lstrip().startswith("["):
        return None
    try:
        data: list[Any] = parse_json(text, name)
    except InputError:
        if _parses(text.lstrip().split("\n", 1)[0], name):
            return None
        raise  # not JSON Lines either: the list's own error stands
    return data


def _parses(text: str, name: str) -> bool:
    try:
        parse_json(text, name)
    except InputError:
        return False
    return True


def _one_document(text: str, name: str, what: str, hint: str) -> None:
    """When no line of a file is JSON but the whole file is (a JSON object over several lines:
    another tool's file), the file is wrong, not its lines: say what it is instead."""
    try:
        data = parse_json(text, name)
    except InputError:
        return
    raise input_error(
        name,
        f"the file is one JSON document ({what_it_is(data)}), not {what} "
        "(one JSON object per line, or a JSON list of them)",
        hint,
    )


def read_document(path: Path, what: str, hint: str) -> Any:
    """The one JSON document of a file (StableToolBench's, τ-bench's); a file of JSON Lines
    (BFCL's form: a record per line) is said to be one, not called invalid at its line 2."""
    name = display_name(path)
    text = read_text(path, name)
    if not text.strip():  # not "invalid JSON: Expecting value"
        raise input_error(name, f"the file is empty, not {what}", hint)
    try:
        return parse_json(text, name)
    except InputError:
        lines = [line for line in jsonl_lines(text) if line.strip()]
        if len(lines) < 2 or not _parses(lines[0], name):
            raise
        first = parse_json(lines[0], name)
    raise input_error(
        name,
        f"the file holds a JSON document per line (JSON Lines, line 1 {what_it_is(first)}), "
        f"not {what}",
        hint,
    )


def errored_transcript(item_id: str, case: str, model: str, why: str, source: str) -> Transcript:
    """The transcript of a record that could not be read or whose case was refused: an errored
    run, which fails, as BFCL fails an errored record."""
    from evalspec._transcript import Transcript

    return Transcript(
        item_id=item_id, case=case, model=model, finish_reason="error", error=why, source=source
    )
