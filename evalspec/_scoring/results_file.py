"""results.json, declared once: what a scored run writes, and what every reader gets back.

compare, view, merge, review and the HTML report read a results file as these records (never
as raw dicts), so a field is named and typed in one place. Its results are scoring's own
`CaseResult` and `Row`, its model summaries scoring's `ModelSummary`. Unknown keys are refused:
a results file is evidence, and a field this version cannot read must not vanish silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec

from evalspec._scoring.trials import ModelSummary
from evalspec._scoring.types import CaseResult, Status
from evalspec._suite.model import Price
from evalspec._util.errors import UsageError
from evalspec._util.reading import display_name, input_error, read_text
from evalspec._util.records import Count, RecordError, decode

RESULTS_VERSION = 1
"""Version of results.json's layout."""


class Thresholds(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The suite's score bands: below `fail_threshold` fails, below `warn_threshold` warns."""

    fail_threshold: float
    warn_threshold: float


class GateRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The suite's `gate:` the run was judged under, so `compare` applies it to the run."""

    mode: Literal["any_regression", "significant_drop", "none"]
    min_pass_rate: float | None = None
    max_drop: float | None = None
    confidence: float
    power: float


class ModelSpecRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a model was run with: never its endpoint, headers or key variable."""

    name: str
    model: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    price: Price | None = None


class CaseRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One case on one model, its trials combined by the case's pass rule."""

    case: str
    model: str
    status: Status
    score: float
    """Mean score over trials."""
    std: float = 0.0
    trials: Count = 1
    passed: Count = 0
    pass_at_k: float = 0.0
    pass_hat_k: float = 0.0
    reason: str = ""
    flaky: bool = False
    tags: tuple[str, ...] = ()


class ResultsFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A whole results.json: the summaries, then every case and every trial's result."""

    version: int = RESULTS_VERSION
    suite: str | None = None
    path: str | None = None
    description: str | None = None
    created: str = ""
    """When it was scored, ISO 8601 in UTC."""
    rubric: Thresholds | None = None
    gate: GateRecord | msgspec.UnsetType = msgspec.UNSET
    """The suite's gate (absent from files written before it was recorded)."""
    model_specs: tuple[ModelSpecRecord, ...] = ()
    models: tuple[ModelSummary, ...] = ()
    calibration: tuple[str, ...] | msgspec.UnsetType = msgspec.UNSET
    """How often the suite's judges agree with people, per judge check (per criterion for a
    rubric) and labeller, or that they are uncalibrated; absent when no check is a judge."""
    cases: tuple[CaseRecord, ...]
    results: tuple[CaseResult, ...] = ()

    def model(self, name: str) -> ModelSummary | None:
        """The summary of the model called `name`, if the file has one."""
        return next((m for m in self.models if m.model == name), None)


HEAD = (
    "version",
    "suite",
    "path",
    "description",
    "created",
    "rubric",
    "gate",
    "model_specs",
    "models",
    "calibration",
)
"""The keys written before the per-case lists, in this order."""


def plain(record: Any) -> Any:
    """A record as JSON-ready builtins, fields in declared order (so files keep their layout);
    anything JSON cannot hold is written as its text, as 1.0 did."""
    return msgspec.to_builtins(record, enc_hook=str)


RESULTS_FILE = "results.json"
_HOW = "pass a results.json written by evalspec run or score"


def load_results(path: Path) -> ResultsFile:
    """A results.json (or a run directory holding one), read; UsageError or InputError.

    A hand-edited or hostile file gives `results.json:1:1: not an evalspec results file:
    cases[3].status: expected one of error, fail, pass, warn, got text ('bogus')`."""
    file = path / RESULTS_FILE if path.is_dir() else path
    if not file.exists() and not file.is_symlink():
        raise UsageError(f"no results at {file}; pass a run directory or a results.json")
    name = display_name(file)
    try:
        return decode(read_text(file, name), ResultsFile, name, root="the file")
    except RecordError as exc:
        raise input_error(name, f"not an evalspec results file: {exc}", _HOW) from None
