"""What a change does to the scores: re-score recorded transcripts under two suite versions.

`diff_suites` scores the same transcripts under a base and a head suite and pairs the results by
(case, model); `compare_runs` pairs results.json files by case, whatever their models are
called (see `evalspec.report.columns`). Both produce a `Comparison`, which the console,
Markdown and JSON renderers read. No model is called: the point
is that a reviewer sees the effect of a spec change without paying for the answers again.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from evalspec.errors import Problem, SpecError, UsageError
from evalspec.report.columns import (
    KIND_ORDER,
    Column,
    Kind,
    RunData,
    Side,
    before_after_pairs,
    build_columns,
    case_order,
    classify,
)
from evalspec.scoring.types import CaseResult, Row
from evalspec.suite.load import MAX_FILE_BYTES
from evalspec.suite.model import Suite
from evalspec.suite.render import MAX_INCLUDES
from evalspec.transcript import Transcript


@dataclass(frozen=True)
class RowChange:
    """One explanation row that differs between the sides (None: the row exists on one side)."""

    trial: int
    field: str
    call: int | None
    before: Row | None
    after: Row | None


@dataclass(frozen=True)
class CaseChange:
    case: str
    model: str
    kind: Kind
    before: Side | None
    after: Side | None
    rows: tuple[RowChange, ...] = ()
    rerun: bool = False
    """The request to the model changed and the recorded answer belongs to the old request."""
    needs_run: bool = False
    """No recorded transcript answers this case yet."""

    @property
    def gating(self) -> bool:
        """A pass became a fail on evidence that still answers the question asked."""
        return self.kind == "regression" and not self.rerun


@dataclass(frozen=True)
class Comparison:
    title: str
    before_label: str
    after_label: str
    changes: tuple[CaseChange, ...]
    notes: tuple[str, ...] = ()
    added_label: str = "added"
    removed_label: str = "removed"
    columns: tuple[Column, ...] = ()
    """compare: every (run, model) column, for the model × case matrix."""

    @property
    def exit_code(self) -> int:
        """1 when any case that passed now fails (re-run-needed cases excepted), else 0."""
        return 1 if any(c.gating for c in self.changes) else 0

    def counts(self) -> dict[str, int]:
        counts = Counter(c.kind for c in self.changes)
        out = {k: counts.get(k, 0) for k in KIND_ORDER}
        out["rerun"] = sum(c.rerun for c in self.changes)
        out["needs_run"] = sum(c.needs_run for c in self.changes)
        return out

    def summary(self) -> str:
        """One line: `1 regression, 2 better, 5 unchanged, 1 re-run needed`."""
        n = self.counts()
        labels = {
            "regression": ("regression", "regressions"),
            "worse": ("worse", "worse"),
            "better": ("better", "better"),
            "added": (self.added_label, self.added_label),
            "missing": ("not run", "not run"),
            "removed": (self.removed_label, self.removed_label),
            "unchanged": ("unchanged", "unchanged"),
        }
        parts = [f"{n[k]} {labels[k][n[k] != 1]}" for k in KIND_ORDER if n[k]]
        if n["needs_run"]:
            parts.append(f"{n['needs_run']} need{'s' if n['needs_run'] == 1 else ''} a run")
        if n["rerun"]:
            parts.append(f"{n['rerun']} re-run needed")
        return ", ".join(parts) or "nothing to compare"

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "before": self.before_label,
            "after": self.after_label,
            "exit_code": self.exit_code,
            "counts": self.counts(),
            "notes": list(self.notes),
            "changes": [_change_dict(c) for c in self.changes],
            **({"matrix": matrix_dict(self)} if self.columns else {}),
        }


def _side_dict(side: Side | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {"status": side.status, "score": side.score, "reason": side.reason}


def _change_dict(c: CaseChange) -> dict[str, Any]:
    return {
        "case": c.case,
        "model": c.model,
        "kind": c.kind,
        "before": _side_dict(c.before),
        "after": _side_dict(c.after),
        "rerun_needed": c.rerun,
        "needs_run": c.needs_run,
        "rows": [
            {
                "trial": r.trial,
                "field": r.field,
                "call": r.call,
                "before": asdict(r.before) if r.before else None,
                "after": asdict(r.after) if r.after else None,
            }
            for r in c.rows
        ],
    }


# ---------------------------------------------------------------- classification


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


def _change(
    case: str, model: str, before: Side | None, after: Side | None, **flags: bool
) -> CaseChange:
    kind = classify(before, after)
    rows: tuple[RowChange, ...] = ()
    if before is not None and after is not None and kind != "unchanged":
        rows = tuple(row_changes(before.results, after.results))
    return CaseChange(case, model, kind, before, after, rows, **flags)


def _ordered(changes: list[CaseChange]) -> tuple[CaseChange, ...]:
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    indexed = sorted(enumerate(changes), key=lambda ic: (rank[ic[1].kind], ic[0]))
    return tuple(c for _, c in indexed)


# ---------------------------------------------------------------- diff of two suites


def _sides(suite: Suite, transcripts: Sequence[Transcript], embedder: Any, judge: Any):
    """Score the transcripts this suite has a case and model for; Side per (case, model)."""
    from evalspec.report.records import build_report

    cases = {c.name for c in suite.cases}
    models = {m.name for m in suite.models}
    kept = [t for t in transcripts if t.case in cases and t.model in models]
    report = build_report(suite, kept, embedder=embedder, judge=judge)
    return {
        (c.case, c.model): Side(c.status, c.score, c.reason, tuple(c.results)) for c in report.cases
    }


def _plan_ids(suite: Suite) -> dict[tuple[str, str], dict[int, str]]:
    from evalspec.plan import compile_plan

    ids: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    for it in compile_plan(suite).items:
        ids[(it.case.name, it.model.name)][it.trial] = it.id
    return ids


def diff_suites(
    base: Suite | None,
    head: Suite,
    transcripts: Sequence[Transcript],
    *,
    base_label: str | None = None,
    head_label: str | None = None,
    source: str = "",
    embedder: Any = None,
    judge: Any = None,
) -> Comparison:
    """Score `transcripts` under `base` and `head`; one CaseChange per (case, model).

    `base` None means the suite is new (every case is added). A case is `rerun` when the
    request to the model differs between the versions (plan ids by case, model and trial) and
    the recorded transcript does not carry the head's id: its score compares an old answer
    with a new question.
    """
    if embedder is None and (base is None or base.embeddings == head.embeddings):
        from evalspec.scoring.embeddings import EmbeddingStore

        settings = head.embeddings
        cache = Path(settings.cache_dir) if settings.cache_dir else None
        embedder = EmbeddingStore(model=settings.model, cache_dir=cache)
    after = _sides(head, transcripts, embedder, judge)
    before = _sides(base, transcripts, embedder, judge) if base is not None else {}
    head_ids = _plan_ids(head)
    base_ids = _plan_ids(base) if base is not None else {}
    recorded: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    for t in transcripts:
        recorded[(t.case, t.model)][t.trial] = t.item_id

    keys = list(head_ids) + [k for k in base_ids if k not in head_ids]
    changes: list[CaseChange] = []
    for key in keys:
        in_base, in_head = key in base_ids, key in head_ids
        b = before.get(key) if in_base else None
        a = after.get(key) if in_head else None
        rerun = (
            in_base
            and in_head
            and base_ids[key] != head_ids[key]
            and any(recorded[key].get(t) != i for t, i in head_ids[key].items())
            and a is not None
        )
        # No transcript, or a judge verdict / simulated answer missing from its cache.
        needs_run = in_head and (a is None or any(r.details.get("needs_run") for r in a.results))
        if a is None and b is None:
            kind: Kind = "added" if not in_base else "removed" if not in_head else "missing"
            change = CaseChange(key[0], key[1], kind, None, None, needs_run=needs_run)
        else:
            change = _change(key[0], key[1], b, a, rerun=bool(rerun), needs_run=needs_run)
        changes.append(change)
    used = sum(
        1 for t in transcripts if (t.case, t.model) in head_ids or (t.case, t.model) in base_ids
    )
    notes = [
        f"scored {used} recorded transcript{'s' if used != 1 else ''}"
        + (f" from {source}" if source else "")
        + "; no model was called"
    ]
    if base is None:
        notes.append("the suite does not exist in the base version: every case is new")
    return Comparison(
        title=f"evalspec diff: {head.name}",
        before_label=base_label or (base.path if base is not None else "(none)"),
        after_label=head_label or head.path,
        changes=_ordered(changes),
        notes=tuple(notes),
    )


# ---------------------------------------------------------------- base suite from git


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    except FileNotFoundError:
        raise UsageError("--base-ref needs git, and git is not installed") from None


def suite_from_git(ref: str, path: Path) -> Suite | None:
    """Load the suite at `path` as it is at git `ref`, with its includes from the same ref.

    The file and every file it includes are copied from the ref into a temporary tree that
    mirrors the repository, so relative includes resolve as they would in a checkout. Returns
    None when the file does not exist at that ref (a new suite).
    """
    from evalspec.suite.validate import load_suite

    start = path.resolve().parent
    while not start.exists():
        start = start.parent
    top = _git(start, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise UsageError(f"--base-ref: {path} is not inside a git repository")
    root = Path(top.stdout.decode().strip()).resolve()
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise UsageError(f"--base-ref {ref}: no such commit; fetch it first (git fetch origin)")
    try:
        rel = path.resolve().relative_to(root).as_posix()
    except ValueError:
        raise UsageError(f"--base-ref: {path} is outside the repository at {root}") from None
    if _git(root, "cat-file", "-e", f"{ref}:{rel}").returncode != 0:
        return None
    with tempfile.TemporaryDirectory(prefix="evalspec-base-") as tmp:
        _materialise(root, ref, rel, Path(tmp), set())
        try:
            return load_suite(Path(tmp) / rel)
        except SpecError as exc:
            # Problems name the files as they are at the ref, not the temporary copy.
            raise SpecError([_at_ref(p, Path(tmp), ref) for p in exc.problems]) from None


def _at_ref(problem: Problem, tmp: Path, ref: str) -> Problem:
    for base in {str(tmp), str(tmp.resolve())}:
        if problem.file.startswith(base + os.sep):
            name = f"{ref}:{Path(problem.file[len(base) + 1 :]).as_posix()}"
            return replace(problem, file=name, message=problem.message.replace(base + os.sep, ""))
    return problem


def _materialise(root: Path, ref: str, rel: str, dest: Path, done: set[str]) -> None:
    """Copy `ref:rel` into `dest/rel`, then every file it includes, recursively."""
    if rel in done:
        return
    done.add(rel)
    if len(done) > MAX_INCLUDES + 1:
        raise UsageError(
            f"--base-ref {ref}: the suite includes more than {MAX_INCLUDES} files in all"
        )
    kind = _git(root, "cat-file", "-t", f"{ref}:{rel}" if rel != "." else f"{ref}^{{tree}}")
    if kind.returncode == 0 and kind.stdout.strip() != b"blob":
        raise UsageError(
            f"--base-ref {ref}: {rel} is included but is a directory at {ref}, not a file; "
            "an include names a .yaml file"
        )
    size = _git(root, "cat-file", "-s", f"{ref}:{rel}")
    if size.returncode == 0 and int(size.stdout.strip() or 0) > MAX_FILE_BYTES:
        raise UsageError(f"--base-ref {ref}: {rel} is larger than {MAX_FILE_BYTES} bytes at {ref}")
    shown = _git(root, "show", f"{ref}:{rel}")
    if shown.returncode != 0:
        raise UsageError(
            f"--base-ref {ref}: {rel} is included but does not exist at {ref}; "
            f"check out {ref} and pass both suite files instead"
        )
    target = dest / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(shown.stdout)
    for inc in _includes(shown.stdout):
        if not inc.strip() or "\x00" in inc:
            continue  # load_suite reports an empty include at its place
        if posixpath.isabs(inc):
            raise UsageError(
                f"--base-ref {ref}: {rel} includes the absolute path {inc}, which cannot be "
                f"read from git; check out {ref} and pass both suite files instead"
            )
        inc_rel = posixpath.normpath(posixpath.join(posixpath.dirname(rel), inc))
        if inc_rel.startswith("../"):
            raise UsageError(
                f"--base-ref {ref}: {rel} includes {inc}, outside the repository; "
                f"check out {ref} and pass both suite files instead"
            )
        _materialise(root, ref, inc_rel, dest, done)


def _includes(text: bytes) -> list[str]:
    """`include:` targets in a suite or an included file (tools and cases lists)."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError):
        return []  # load_suite reports the mistake with its position
    lists: list[Any] = []
    if isinstance(doc, dict):
        lists = [doc.get("tools"), doc.get("cases")]
    elif isinstance(doc, list):
        lists = [doc]
    out: list[str] = []
    for items in lists:
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and isinstance(item.get("include"), str):
                out.append(item["include"])
    return out


# ---------------------------------------------------------------- compare two results files


def compare_results(
    a: dict[str, Any], b: dict[str, Any], *, a_label: str = "A", b_label: str = "B"
) -> Comparison:
    """Two results files, A before and B after."""
    return compare_runs([RunData(a_label, a), RunData(b_label, b)])


def compare_runs(runs: Sequence[RunData]) -> Comparison:
    """Pair runs by case, whatever the models are called; the matrix of every column.

    Which columns are before and after: see `before_after_pairs`. A change's `model` is the
    model both sides share, or `before → after` when their labels differ.
    """
    columns = build_columns(runs)
    pairs = before_after_pairs(runs, columns)
    cases = case_order(columns)
    changes: list[CaseChange] = []
    for i, j in pairs:
        b_col, a_col = columns[i], columns[j]
        label = a_col.label if b_col.label == a_col.label else f"{b_col.label} → {a_col.label}"
        if b_col.model == a_col.model and len(runs) > 1:
            label = a_col.model
        for case in cases:
            before, after = b_col.cells.get(case), a_col.cells.get(case)
            if before is not None or after is not None:
                changes.append(_change(case, label, before, after))
    suites = list(dict.fromkeys(str(r.data.get("suite") or "") for r in runs))
    notes = []
    if len(suites) > 1:
        notes.append(f"different suites: {', '.join(suites)}")
    if pairs:
        shown = "; ".join(f"{columns[i].label} → {columns[j].label}" for i, j in pairs)
        notes.append(f"compared {shown}")
    before_label = runs[0].label if runs else ""
    after_label = runs[-1].label if runs else ""
    if len(runs) == 1 and len(columns) > 1:
        before_label, after_label = columns[0].label, ", ".join(c.label for c in columns[1:])
    return Comparison(
        title=f"evalspec compare: {suites[-1] if suites else ''}".rstrip(": "),
        before_label=before_label,
        after_label=after_label,
        changes=_ordered(changes),
        notes=tuple(notes),
        added_label=f"only in {after_label}",
        removed_label=f"only in {before_label}",
        columns=tuple(columns),
    )


def matrix_rows(comparison: Comparison) -> list[tuple[str, Kind, list[Side | None]]]:
    """The model × case matrix: (case, its most pressing change, a cell per column).

    Ordered as the changes are: regressions first.
    """
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    kind_of: dict[str, Kind] = {}
    for c in comparison.changes:
        if c.case not in kind_of or rank[c.kind] < rank[kind_of[c.case]]:
            kind_of[c.case] = c.kind
    cases = case_order(comparison.columns)
    order = {case: i for i, case in enumerate(cases)}
    cases.sort(key=lambda case: (rank[kind_of.get(case, "unchanged")], order[case]))
    return [
        (case, kind_of.get(case, "unchanged"), [col.cells.get(case) for col in comparison.columns])
        for case in cases
    ]


def matrix_dict(comparison: Comparison) -> dict[str, Any]:
    return {
        "columns": [{"label": c.label, "run": c.run, "model": c.model} for c in comparison.columns],
        "rows": [
            {"case": case, "change": kind, "cells": [_side_dict(s) for s in cells]}
            for case, kind, cells in matrix_rows(comparison)
        ],
    }


# ---------------------------------------------------------------- rendering helpers


def shown_changes(comparison: Comparison, *, show_unchanged: bool) -> list[CaseChange]:
    """Changes worth a line: anything but unchanged, and unchanged ones that need a run."""
    return [
        c
        for c in comparison.changes
        if show_unchanged or c.kind != "unchanged" or c.rerun or c.needs_run
    ]


def side_text(side: Side | None) -> str:
    return "-" if side is None else f"{side.status.upper()} {side.score:.3f}"


def change_text(c: CaseChange, comparison: Comparison) -> str:
    """The change column: what happened, and what to do about it."""
    label = {
        "regression": "REGRESSION",
        "worse": "worse",
        "better": "better",
        "added": comparison.added_label,
        "removed": comparison.removed_label,
        "missing": "not run",
        "unchanged": "unchanged",
    }[c.kind]
    if c.needs_run:
        label += " (needs a run)"
    if c.rerun:
        label += " (re-run needed: the request changed)"
    return label


def row_text(r: RowChange) -> str:
    """`city: 1.00 → 0.00 (Got 'Paris', expected 'Lyon' ...)`."""
    where = r.field + (f" (call {r.call + 1})" if r.call is not None else "")
    b = f"{r.before.score:.2f}×{r.before.weight:g}" if r.before else "-"
    a = f"{r.after.score:.2f}×{r.after.weight:g}" if r.after else "-"
    why = (r.after or r.before).reason if (r.after or r.before) else ""
    return f"{where}: {b} → {a}" + (f": {why}" if why else "")
