"""results.json: every result with its explanation rows, and the summaries.

Written as it is encoded: the summaries indented, then one case and one result per line, each
encoded by json's C encoder (an indented dump runs json's pure-Python encoder, ten times
slower), so a 50,000-case report is written in a second without a second copy in memory.
The file is plain JSON either way; readers parse it as before. The layout is that of
evalspec 1.0, byte for byte (tests/data/records_v1).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import islice
from pathlib import Path
from typing import IO, Any

import msgspec

from evalspec._report.records import Report, case_records
from evalspec._scoring.results_file import HEAD, ResultsFile, plain
from evalspec._scoring.spool import LINE, SpooledResults
from evalspec._util import finite
from evalspec._util.files import atomic_write


def write_json(report: Report, path: Path) -> None:
    """Write atomically: a reader never sees half a results file. A run's results are on
    disk already as their lines of this file (`_scoring/spool.py`): they are copied."""
    head = report.results_file(with_lists=False)
    results = report.results
    lines = results.lines() if isinstance(results, SpooledResults) else None
    _write(path, head, case_records(report), results, lines)


def _write(
    path: Path,
    head: ResultsFile,
    cases: Iterable[Any],
    results: Iterable[Any],
    lines: Iterable[bytes] | None = None,
) -> None:
    with atomic_write(path) as fh:
        fh.write("{\n")
        for key in HEAD:
            if getattr(head, key) is msgspec.UNSET:  # a file read back keeps what it lacked
                continue
            value = plain(getattr(head, key))
            text = finite.dumps(value, path.name, key, indent=2, ensure_ascii=False, default=str)
            fh.write(f"  {json.dumps(key)}: {text.replace(chr(10), chr(10) + '  ')},\n")
        _write_list(fh, path.name, "cases", (plain(c) for c in cases), last=False)
        if lines is None:
            _write_list(fh, path.name, "results", (plain(r) for r in results), last=True)
        else:
            _write_lines(fh, "results", (line.decode("utf-8") for line in lines))
        fh.write("}\n")


def _write_list(fh: IO[str], name: str, key: str, items: Iterable[Any], *, last: bool) -> None:
    encoded = (finite.encode(LINE, item, name, f"{key}[{i}]") for i, item in enumerate(items))
    _write_lines(fh, key, encoded, last=last)


def _write_lines(fh: IO[str], key: str, lines: Iterable[str], *, last: bool = True) -> None:
    """A list of the file, one encoded item a line, written a thousand lines at a time (two
    writes a line were a tenth of writing 50,000 results)."""
    fh.write(f'  "{key}": [')
    lines = iter(lines)
    first = True
    while chunk := list(islice(lines, 1000)):
        fh.write(("\n    " if first else ",\n    ") + ",\n    ".join(chunk))
        first = False
    fh.write("]" if first else "\n  ]")
    fh.write("\n" if last else ",\n")
