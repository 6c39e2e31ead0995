"""Read a finished run's transcripts back, for the conversations the HTML report shows.

results.json is read by evalspec._review.results_file (the CLI passes it in).
"""

from __future__ import annotations

from pathlib import Path

from evalspec._report.html_data import HtmlRun
from evalspec._scoring.results_file import ResultsFile
from evalspec._transcript import Transcript, read_line
from evalspec._util.errors import InputError
from evalspec._util.records import RecordError


def load_transcripts_beside(path: Path) -> dict[str, Transcript]:
    """transcripts.jsonl beside a results.json, by item id; empty when there is none.

    A line that is not a transcript is skipped: the report then shows that item's scores
    without its conversation rather than refusing to open.
    """
    file = path / "transcripts.jsonl" if path.is_dir() else path.with_name("transcripts.jsonl")
    if not file.is_file():
        return {}
    out: dict[str, Transcript] = {}
    with file.open("rb") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                t = read_line(line, str(file), number)
            except (InputError, RecordError, UnicodeDecodeError):
                continue
            out[t.item_id] = t
    return out


def html_run(label: str, results: ResultsFile, path: Path) -> HtmlRun:
    """A run as the HTML report reads it: results already loaded (and checked), transcripts
    from beside them."""
    return HtmlRun(label, results, load_transcripts_beside(path))
