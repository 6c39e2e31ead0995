"""The run directory: transcripts.jsonl (one line per finished item) and run.json (what ran).

A run directory is how a run survives a crash: finished items are read back on `--resume`, and
run.json lets shards of one run be recognised and merged.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from evalspec.files import write_text_atomic
from evalspec.paths import safe_name
from evalspec.suite.model import Suite
from evalspec.transcript import Transcript

TRANSCRIPTS_FILE = "transcripts.jsonl"
MANIFEST_FILE = "run.json"


def recordings_path(suite: Suite, override: Path | None = None) -> Path:
    """Recordings live beside the suite: <suite>.recordings.jsonl unless the suite says where."""
    if override:
        return override
    base = Path(suite.path).resolve().parent
    if suite.run.recordings:
        return base / suite.run.recordings
    return base / f"{Path(suite.path).stem}.recordings.jsonl"


def read_finished(run_dir: Path) -> dict[str, Transcript]:
    """Transcripts already in a run directory, by item id (a torn last line is ignored)."""
    path = run_dir / TRANSCRIPTS_FILE
    done: dict[str, Transcript] = {}
    if not path.exists():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            t = Transcript.from_dict(json.loads(line))
        except (ValueError, KeyError, TypeError):
            continue  # a line torn by a crash: that item simply runs again
        done[t.item_id] = t
    return done


def completed(run_dir: Path) -> dict[str, Transcript]:
    """Transcripts that need no re-run on resume: finished without a run error."""
    return {k: t for k, t in read_finished(run_dir).items() if not t.error}


def write_manifest(run_dir: Path, suite: Suite, selection: dict[str, Any]) -> None:
    """run.json: which suite and selection this run directory belongs to (atomic write)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    data = {
        "suite": suite.name,
        "path": str(Path(suite.path).resolve()),
        "selection": selection,
    }
    write_text_atomic(
        run_dir / MANIFEST_FILE, json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    )


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """The run.json of a run directory, or None when it has none (or an unreadable one)."""
    try:
        data = json.loads((run_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def default_run_dir(suite: Suite) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path("runs") / safe_name(suite.name) / stamp
