"""Reading a results.json written by another run: checked field by field before it is used.

`compare` reads two results files, often from CI artifacts or a pull request. Each is read with
the limits of evalspec._util.reading, and every case and row is checked for the types scoring wrote,
so a hand-edited or hostile file gives `results.json:1:1: not a results file: cases[3].status:
must be one of error, fail, pass, warn, got text ('bogus')` instead of a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec._util import json_shapes as shape
from evalspec._util.errors import UsageError
from evalspec._util.json_shapes import ShapeError
from evalspec._util.reading import display_name, input_error, read_json

STATUSES = ("pass", "warn", "fail", "error")
RESULTS_FILE = "results.json"
_HOW = "pass a results.json written by evalspec run or score"


def load_results(path: Path) -> dict[str, Any]:
    """A results.json (or a run directory holding one), checked; UsageError or InputError."""
    file = path / RESULTS_FILE if path.is_dir() else path
    if not file.exists() and not file.is_symlink():
        raise UsageError(f"no results at {file}; pass a run directory or a results.json")
    name = display_name(file)
    data = read_json(file, name)
    try:
        check_results(data)
    except ShapeError as exc:
        raise input_error(name, f"not an evalspec results file: {exc}", _HOW) from None
    results: dict[str, Any] = data  # a results object: check_results passed
    return results


def check_results(data: Any) -> None:
    """ShapeError naming the first value a results file cannot hold."""
    shape.obj(data, "the file")
    if "cases" not in data:
        raise ShapeError("", "it has no `cases` list")
    shape.optional_text(data, "suite", "")
    for i, case in enumerate(shape.items(data, "cases", "")):
        at = f"cases[{i}]"
        shape.obj(case, at)
        shape.text(case, "case", at, required=True)
        shape.text(case, "model", at, required=True)
        shape.one_of(case, "status", at, STATUSES)
        shape.number(case, "score", at, required=True)
        shape.text(case, "reason", at)
    for i, result in enumerate(shape.items(data, "results", "")):
        _check_result(result, f"results[{i}]")


def _check_result(result: Any, at: str) -> None:
    shape.obj(result, at)
    shape.text(result, "case", at, required=True)
    shape.text(result, "model", at, required=True)
    shape.text(result, "item_id", at)
    shape.text(result, "reason", at)
    shape.count(result, "trial", at)
    shape.one_of(result, "status", at, STATUSES)
    shape.number(result, "score", at, required=True)
    for name, value in shape.mapping(result, "evaluators", at).items():
        shape.number({name: value}, name, f"{at}.evaluators")
    shape.mapping(result, "details", at)
    for j, row in enumerate(shape.items(result, "rows", at)):
        _check_row(row, f"{at}.rows[{j}]")


_ROW_KEYS = {"field", "expected", "actual", "score", "weight", "reason", "critic", "call", "match"}


def _check_row(row: Any, at: str) -> None:
    shape.obj(row, at)
    unknown = sorted(set(row) - _ROW_KEYS)
    if unknown:
        raise ShapeError(at, f"unknown key {unknown[0]!r}")
    shape.text(row, "field", at, required=True)
    shape.text(row, "reason", at, required=True)
    shape.text(row, "critic", at)
    shape.number(row, "score", at, required=True)
    shape.number(row, "weight", at, required=True)
    shape.count(row, "call", at, optional=True)
    shape.flag(row, "match", at)
    for key in ("expected", "actual"):
        if key not in row:
            raise ShapeError(f"{at}.{key}", "is missing")
