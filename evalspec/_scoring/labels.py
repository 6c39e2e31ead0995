"""A labels file: the verdicts people gave recorded answers, to hold a judge against.

JSON Lines, one verdict of one labeller on one answer per line (the file arrives in pull
requests, so every line is checked and a mistake is `file:line:col: what; how to fix`):

    {"case": "paypal", "labeller": "ana", "verdict": "Solved"}
    {"case": "refund", "turn": 3, "model": "gpt-4o-mini", "trial": 0, "labeller": "ben",
     "verdict": "Unsure", "check": "final_answer.judge"}

`model` may be left out when the transcripts hold one model; `trial` defaults to 0; `turn` is
the judged turn of a multi-turn case (1-based); `check` names the judge check when a case has
several (its `name:`, default `final_answer.judge`). A rubric judge's criteria are labelled one
by one, `"check": "final_answer.judge.resolved"` with the verdict `pass` or `fail`. A line whose
only key is `_comment` is a note.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from evalspec._suite.model import Suite
from evalspec._util.errors import InputError, Problem
from evalspec._util.project import checked, kind, named
from evalspec._util.reading import display_name, jsonl_lines, parse_json, read_text

VERDICT_NAMES = ("Solved", "Unsure", "Unsolved")
LABELS_SUFFIX = ".labels.jsonl"
CRITERION_VERDICTS = ("pass", "fail")
"""The verdicts on one criterion of a rubric judge."""
LABELS_FILE = kind("labels file")
MAX_LABELS_BYTES = 16 * 1024 * 1024
MAX_NAME_CHARS = 500
"""The longest case, labeller, model or check name a label may give (messages quote them)."""
_KEYS = {"case", "turn", "model", "trial", "check", "labeller", "verdict"}


class LabelLine(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One line of a labels file: one labeller's verdict on one judged answer (the declaration
    schemas/labels-line.schema.json is generated from; `read_labels` checks the same rules)."""

    case: Annotated[str, msgspec.Meta(min_length=1)]
    """The case's name."""
    labeller: Annotated[str, msgspec.Meta(min_length=1)]
    """Who gave the verdict."""
    verdict: Literal["Solved", "Unsure", "Unsolved", "pass", "fail"]
    """The labeller's verdict, on the judge's own scale (pass or fail for a rubric's
    criterion)."""
    model: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    """The model whose answer it is; may be left out when one model answered the case."""
    trial: Annotated[int, msgspec.Meta(ge=0, lt=10**6)] = 0
    """The trial, from 0."""
    turn: Annotated[int, msgspec.Meta(ge=1, lt=10**6)] | None = None
    """The judged turn of a multi-turn case, from 1."""
    check: Annotated[str, msgspec.Meta(min_length=1)] = "final_answer.judge"
    """The judge check's `name:`, when a case has several."""


class LabelsComment(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A note line: its only key is `_comment`."""

    comment: str = msgspec.field(name="_comment")
    """Free text for the people who read the file."""


@dataclass(frozen=True)
class Label:
    """One labeller's verdict on one judged answer."""

    case: str
    model: str | None
    trial: int
    check: str
    """As `evalspec judge` names it: `final_answer.judge`, or `turn 2 final_answer.judge`."""
    labeller: str
    verdict: str
    line: int


def labels_beside(suite_path: Path) -> Path:
    """The labels file of a suite: `helpdesk.yaml` → `helpdesk.labels.jsonl`."""
    return suite_path.with_name(suite_path.stem + LABELS_SUFFIX)


def labels_of(suite: Suite) -> Path:
    """The labels file a suite's judges are held against: `--labels`, else its `labels:`,
    else the one beside it. Held to the project's policy: a committed link in its place would
    have every report read wherever it points."""
    if suite.labels and suite.labels_named:
        return named(suite.labels, LABELS_FILE)
    given = suite.labels or labels_beside(Path(suite.path)).name
    return checked(given, Path(suite.path).resolve().parent, LABELS_FILE)


def with_labels(suite: Suite, labels: Path | None) -> Suite:
    """The suite with `--labels` in place of its own labels file (None: as it is)."""
    if labels is None:
        return suite
    return replace(suite, labels=str(named(labels, LABELS_FILE)), labels_named=True)


def read_labels(path: Path) -> tuple[Label, ...]:
    """Every label of the file; InputError listing each bad line (all of them, in order)."""
    name = display_name(path)
    text = read_text(path, name, limit=MAX_LABELS_BYTES, too_big="split the labels file")
    labels: list[Label] = []
    problems: list[Problem] = []
    seen: dict[tuple[str, str | None, int, str, str], int] = {}
    for number, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        try:
            data = parse_json(line, name, number)
            label = _label(data, name, number)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if label is None:
            continue
        key = (label.case, label.model, label.trial, label.check, label.labeller)
        if key in seen:
            problems.append(
                _problem(
                    name,
                    number,
                    f"{label.labeller!r} already labelled this answer on line {seen[key]}",
                    "keep one verdict per labeller and answer",
                )
            )
            continue
        seen[key] = number
        labels.append(label)
    if problems:
        raise InputError(problems[:50])
    if not labels:
        raise InputError(
            [_problem(name, 1, "the labels file holds no label", "add one JSON object a line")]
        )
    return tuple(labels)


def _label(data: Any, name: str, line: int) -> Label | None:
    if not isinstance(data, dict):
        raise _error(name, line, "a label is a JSON object", '{"case": ..., "verdict": ...}')
    if set(data) == {"_comment"}:
        return None
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise _error(
            name,
            line,
            f"unknown key {_short(unknown[0])}",
            f"allowed keys: {', '.join(sorted(_KEYS))}",
        )
    case, labeller = data.get("case"), data.get("labeller")
    for key, value in (("case", case), ("labeller", labeller)):
        if not isinstance(value, str) or not value.strip():
            raise _error(name, line, f"`{key}` must be non-empty text", f"give the {key}'s name")
    for key in ("case", "labeller", "model", "check"):
        value = data.get(key)
        if isinstance(value, str) and len(value) > MAX_NAME_CHARS:
            raise _error(
                name, line, f"`{key}` is longer than {MAX_NAME_CHARS} characters", "shorten it"
            )
    verdict = data.get("verdict")
    if verdict not in VERDICT_NAMES + CRITERION_VERDICTS:
        raise _error(
            name,
            line,
            f"`verdict` {_short(verdict)} is not a verdict",
            f"one of {', '.join(VERDICT_NAMES)}; pass or fail for a rubric's criterion",
        )
    model = data.get("model")
    if model is not None and (not isinstance(model, str) or not model):
        raise _error(name, line, "`model` must be text", "the model's name in the suite")
    trial = data.get("trial", 0)
    turn = data.get("turn")
    for key, value, low in (("trial", trial, 0), ("turn", turn, 1)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value < 10**6:
            raise _error(name, line, f"`{key}` must be a whole number from {low}", f"e.g. {low}")
    check = data.get("check", "final_answer.judge")
    if not isinstance(check, str) or not check:
        raise _error(name, line, "`check` must be text", "the judge check's `name:`")
    prefix = f"turn {turn} " if turn is not None else ""
    assert isinstance(case, str) and isinstance(labeller, str)
    return Label(case, model, trial, prefix + check, labeller, verdict, line)


def _short(value: Any) -> str:
    """A value as the message quotes it, cut short: a labels file may hold anything."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _problem(name: str, line: int, message: str, hint: str) -> Problem:
    return Problem(name, line, 1, "", message, hint)


def _error(name: str, line: int, message: str, hint: str) -> InputError:
    return InputError([_problem(name, line, message, hint)])
