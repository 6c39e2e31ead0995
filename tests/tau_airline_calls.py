"""The calls the tau-bench airline differential makes, shared by tests/test_tau_airline.py and
by tests/data/tau_airline/make_oracle.py, which records what tau-bench's own tools answer.

The gold action sequences of all 50 of tau-bench's airline test tasks (gold.json), on the slice
of its data in world.json.gz (every flight; the tasks' users and their reservations). Both
sides make exactly these calls: the oracle holds tau-bench's answers by position.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tau_retail_calls import answer_digest

DATA = Path(__file__).resolve().parent / "data" / "tau_airline"
WORLD: dict[str, Any] = json.loads(gzip.decompress((DATA / "world.json.gz").read_bytes()))
GOLD: list[dict[str, Any]] = json.loads((DATA / "gold.json").read_text(encoding="utf-8"))
Action = tuple[str, dict[str, Any]]

NOT_EXPRESSED = ("search_onestop_flight",)
"""tau-bench's airline tools the YAML leaves out (no gold action calls it)."""

__all__ = ["DATA", "GOLD", "NOT_EXPRESSED", "WORLD", "Action", "answer_digest", "sequences"]


def gold_sequences() -> list[tuple[int, list[Action]]]:
    """(task index, its gold actions), every task."""
    return [(t["task"], [(a["name"], a["kwargs"]) for a in t["actions"]]) for t in GOLD]


def sequences() -> dict[str, list[list[Action]]]:
    """Every sequence the differential runs, by set."""
    return {"gold": [actions for _, actions in gold_sequences()]}
