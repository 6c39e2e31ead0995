"""How one case moved: the kind of change, the rows that explain it, and the reviewer's order.

Each step reads two sides (`records.Side`) and says what a reviewer would: a pass that now fails
is a regression, an unmoved score whose rows or suite definition changed is `changed`, and two
sides that ran different trials are not compared at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TypedDict, Unpack

from evalspec._compare.records import (
    EPS,
    KIND_ORDER,
    PASSING,
    STATUS_RANK,
    CaseChange,
    Kind,
    RowChange,
    Side,
)
from evalspec._compare.words import count
from evalspec._scoring.types import CaseResult, Row


def classify(before: Side | None, after: Side | None) -> Kind:
    """How the after side compares with the before side, from a reviewer's point of view."""
    if before is None and after is None:
        return "missing"
    if before is None:
        return "added"
    if after is None:
        return "removed"
    if "user_fault" in (before.status, after.status) and before.status != after.status:
        return "changed"  # the simulated user's doing, not the model's: never a regression
    if before.status in PASSING and after.status not in PASSING:
        return "regression"
    rank = STATUS_RANK[after.status] - STATUS_RANK[before.status]
    if rank < 0 or (rank == 0 and after.score < before.score - EPS):
        return "worse"
    if rank > 0 or after.score > before.score + EPS:
        return "better"
    return "unchanged"


def row_changes(before: Sequence[CaseResult], after: Sequence[CaseResult]) -> list[RowChange]:
    """Rows whose score, weight, verdict or expected value differ, trial by trial.

    Rows pair by (expected call, field, occurrence), so a renamed critic keeps its row.
    """
    out: list[RowChange] = []
    b_by_trial = {r.trial: r for r in before}
    a_by_trial = {r.trial: r for r in after}
    for trial in sorted(set(b_by_trial) | set(a_by_trial)):
        b_rows = _keyed(b_by_trial[trial].rows if trial in b_by_trial else ())
        a_rows = _keyed(a_by_trial[trial].rows if trial in a_by_trial else ())
        keys = list(a_rows) + [k for k in b_rows if k not in a_rows]
        for key in keys:
            b, a = b_rows.get(key), a_rows.get(key)
            if _differs(b, a):
                out.append(RowChange(trial, key[1], key[0], b, a))
    return out


def _differs(b: Row | None, a: Row | None) -> bool:
    """A row explains a change when its score, weight or verdict moved (not just its wording)."""
    if b is None or a is None:
        return b is not a
    return (b.score, b.weight, b.match) != (a.score, a.weight, a.match) or b.expected != a.expected


def _keyed(rows: Sequence[Row]) -> dict[tuple[int | None, str, int], Row]:
    seen: Counter[tuple[int | None, str]] = Counter()
    out: dict[tuple[int | None, str, int], Row] = {}
    for r in rows:
        seen[(r.call, r.field)] += 1
        out[(r.call, r.field, seen[(r.call, r.field)])] = r
    return out


class Flags(TypedDict, total=False):
    """What a CaseChange says besides its two sides (see its fields)."""

    rerun: bool
    needs_run: bool
    stale: tuple[str, ...]
    named: tuple[str, ...]
    rerecorded: bool
    known_flaky: bool
    trials_differ: str


def case_change(
    case: str, model: str, before: Side | None, after: Side | None, **flags: Unpack[Flags]
) -> CaseChange:
    """Classify one pair; an unmoved score whose rows or suite definition changed is `changed`,
    and so is a pair whose sides hold different trials (they are not compared)."""
    kind = classify(before, after)
    rows: tuple[RowChange, ...] = ()
    if before is not None and after is not None:
        rows = tuple(row_changes(before.results, after.results))
        if kind == "unchanged" and (rows or flags.get("named")):
            kind = "changed"
        differ = trials_differ(before, after)
        if differ:
            kind, flags["trials_differ"] = "changed", differ
    return CaseChange(case, model, kind, before, after, rows, **flags)


def trials_differ(before: Side, after: Side) -> str:
    """Why two sides cannot be compared trial for trial, or empty: a case passing 2 of 3
    trials and one passing 1 of 1 are not better or worse than each other."""
    if not before.results or not after.results:
        return ""
    b, a = ({r.trial for r in s.results} for s in (before, after))
    if b == a:
        return ""
    shown = f"{count(len(b), 'trial')} → {count(len(a), 'trial')}"
    if len(b) == len(a):
        shown = f"trials {_trial_list(b)} → {_trial_list(a)}"
    return (
        f"not compared: the sides ran different trials ({shown}); run both with the same --trials"
    )


def _trial_list(trials: set[int]) -> str:
    return ", ".join(str(t + 1) for t in sorted(trials)[:5]) + (", ..." if len(trials) > 5 else "")


def ordered(changes: list[CaseChange]) -> tuple[CaseChange, ...]:
    """By severity: gating regressions, then cases without evidence, then by kind."""
    indexed = sorted(enumerate(changes), key=lambda ic: (severity(ic[1]), ic[0]))
    return tuple(c for _, c in indexed)


def severity(c: CaseChange) -> tuple[int, int]:
    """Sort key, lower first: what a reviewer must act on comes first."""
    group = 0 if c.gating else 1 if c.unverified else 2
    return group, KIND_ORDER.index(c.kind)
