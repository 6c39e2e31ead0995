"""results.json: every result with its explanation rows, and the summaries."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalspec.api import Report

RESULTS_VERSION = 1


def report_to_dict(report: Report) -> dict[str, Any]:
    return {
        "version": RESULTS_VERSION,
        "suite": report.suite.name,
        "path": report.suite.path,
        "models": [asdict(m) for m in report.models],
        "cases": [{k: v for k, v in asdict(c).items() if k != "results"} for c in report.cases],
        "results": [asdict(r) for r in report.results],
    }


def write_json(report: Report, path: Path) -> None:
    """Write atomically: a reader never sees half a results file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:  # streamed: no second copy as one big string
        json.dump(report_to_dict(report), fh, indent=2, ensure_ascii=False, default=str)
        fh.write("\n")
    tmp.replace(path)
