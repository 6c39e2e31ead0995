"""results.json: every result with its explanation rows, and the summaries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalspec.api import Report

RESULTS_VERSION = 1


def report_to_dict(report: Report) -> dict[str, Any]:
    """JSON-ready data. Shallow: the values are already plain, and json.dump only reads them."""
    return {
        "version": RESULTS_VERSION,
        "suite": report.suite.name,
        "path": report.suite.path,
        "models": [dict(vars(m)) for m in report.models],
        "cases": [{k: v for k, v in vars(c).items() if k != "results"} for c in report.cases],
        "results": [_result(r) for r in report.results],
    }


def _result(result: Any) -> dict[str, Any]:
    data = dict(vars(result))
    data["rows"] = [dict(vars(row)) for row in result.rows]
    return data


def write_json(report: Report, path: Path) -> None:
    """Write atomically: a reader never sees half a results file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:  # streamed: no second copy as one big string
        json.dump(report_to_dict(report), fh, indent=2, ensure_ascii=False, default=str)
        fh.write("\n")
    tmp.replace(path)
