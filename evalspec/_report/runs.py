"""Read a finished run's transcripts back, for the conversations the HTML report shows.

results.json is read and checked by evalspec._review.results_file (the CLI passes it in).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalspec._report.html_data import HtmlRun


def load_transcript_dicts(path: Path) -> dict[str, dict[str, Any]]:
    """transcripts.jsonl beside a results.json, by item id; empty when there is none.

    A line that is not a transcript is skipped: the report then shows that item's scores
    without its conversation rather than refusing to open.
    """
    file = path / "transcripts.jsonl" if path.is_dir() else path.with_name("transcripts.jsonl")
    if not file.is_file():
        return {}
    out: dict[str, dict[str, Any]] = {}
    with file.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and isinstance(item.get("item_id"), str):
                out[item["item_id"]] = item
    return out


def html_run(label: str, results: dict[str, Any], path: Path) -> HtmlRun:
    """A run as the HTML report reads it: results already loaded (and checked), transcripts
    from beside them."""
    return HtmlRun(label, results, load_transcript_dicts(path))
