"""results.json: every result with its explanation rows, and the summaries.

Written as it is encoded: the summaries indented, then one case and one result per line, each
encoded by json's C encoder (an indented dump runs json's pure-Python encoder, ten times
slower), so a 50,000-case report is written in a second without a second copy in memory.
The file is plain JSON either way; readers parse it as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from evalspec._report.records import Report, case_dict, case_tags, result_dict
from evalspec._util.files import atomic_write

_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


def write_json(report: Report, path: Path) -> None:
    """Write atomically: a reader never sees half a results file."""
    head = report.to_dict(summaries_only=True)
    tags = case_tags(report.suite)
    with atomic_write(path) as fh:
        fh.write("{\n")
        for key, value in head.items():
            text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
            fh.write(f"  {json.dumps(key)}: {text.replace(chr(10), chr(10) + '  ')},\n")
        _write_list(fh, "cases", (case_dict(c, tags) for c in report.cases), last=False)
        _write_list(fh, "results", (result_dict(r) for r in report.results), last=True)
        fh.write("}\n")


def _write_list(fh: IO[str], key: str, items: Iterable[Any], *, last: bool) -> None:
    fh.write(f'  "{key}": [')
    first = True
    for item in items:
        fh.write("\n    " if first else ",\n    ")
        fh.write(_ENCODER.encode(item))
        first = False
    fh.write("]" if first else "\n  ]")
    fh.write("\n" if last else ",\n")
