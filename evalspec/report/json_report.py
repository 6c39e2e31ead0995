"""results.json: every result with its explanation rows, and the summaries."""

from __future__ import annotations

import json
from pathlib import Path

from evalspec.files import atomic_write
from evalspec.report.records import Report


def write_json(report: Report, path: Path) -> None:
    """Write atomically: a reader never sees half a results file."""
    with atomic_write(path) as fh:  # streamed: no second copy as one big string
        json.dump(report.to_dict(), fh, indent=2, ensure_ascii=False, default=str)
        fh.write("\n")
