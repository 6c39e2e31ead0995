"""Read a finished run back: its results.json, and the transcripts the report shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalspec.errors import UsageError
from evalspec.report.html_data import HtmlRun


def load_results(path: Path) -> dict[str, Any]:
    """A results.json (or a run directory holding one); UsageError when it is not one."""
    file = path / "results.json" if path.is_dir() else path
    if not file.exists():
        raise UsageError(f"no results at {file}; pass a run directory or a results.json")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{file} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise UsageError(f"{file} is not an evalspec results.json (no `cases` list)")
    return data


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


def load_run(path: Path) -> HtmlRun:
    """A run directory (or results.json) as the HTML report reads it."""
    return HtmlRun(path.as_posix(), load_results(path), load_transcript_dicts(path))
