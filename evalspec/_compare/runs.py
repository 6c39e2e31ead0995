"""Compare results files: pair runs by case, whatever their models are called.

Columns are (run, model) pairs (`columns.py`); which pairs are before and after is
`columns.before_after_pairs`. No suite is read: an old run can be compared without it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import msgspec

from evalspec._compare.classify import case_change, ordered
from evalspec._compare.columns import before_after_pairs, build_columns
from evalspec._compare.noise import model_noise
from evalspec._compare.records import CaseChange, Column, Comparison, RunData, Spend, case_order
from evalspec._scoring.confusion import ConfusionCell
from evalspec._suite.model import Gate


def compare_runs(runs: Sequence[RunData], *, gate: Gate | None = None) -> Comparison:
    """Pair runs by case, whatever the models are called; the matrix of every column.

    The gate is `gate`, else the one the earliest run's suite had (its results file records
    it), else the default.

    Which columns are before and after: see `before_after_pairs`. A change's `model` is the
    model both sides share, or `before → after` when their labels differ.
    """
    columns = build_columns(runs)
    pairs = before_after_pairs(runs, columns)
    cases = case_order(columns)
    changes: list[CaseChange] = []
    for i, j in pairs:
        b_col, a_col = columns[i], columns[j]
        label = _pair_label(runs, b_col, a_col)
        for case in cases:
            before, after = b_col.cells.get(case), a_col.cells.get(case)
            if before is not None or after is not None:
                changes.append(case_change(case, label, before, after))
    suites = list(dict.fromkeys(r.data.suite or "" for r in runs))
    notes = []
    if len(suites) > 1:
        notes.append(f"different suites: {', '.join(suites)}")
    if pairs:
        shown = "; ".join(f"{columns[i].label} → {columns[j].label}" for i, j in pairs)
        notes.append(f"compared {shown}")
    before_label = runs[0].label if runs else ""
    after_label = runs[-1].label if runs else ""
    if len(runs) == 1 and len(columns) > 1:
        before_label, after_label = (
            ", ".join(dict.fromkeys(columns[p[side]].label for p in pairs)) for side in (0, 1)
        )
    if differ := simulator_note(runs):
        notes.append(differ)
    policy, gate_note = _runs_gate(runs, gate)
    if gate_note:
        notes.append(gate_note)
    in_order = ordered(changes)
    noise = tuple(
        model_noise(
            label,
            [c for c in in_order if c.model == label],
            policy,
            spend=_column_spend(columns[i], columns[j]),
            confusion=_variant_confusion(columns[i], columns[j]),
        )
        for label, (i, j) in _pair_labels(runs, columns, pairs).items()
    )
    return Comparison(
        title=f"evalspec compare: {suites[-1] if suites else ''}".rstrip(": "),
        before_label=before_label,
        after_label=after_label,
        changes=in_order,
        notes=tuple(notes),
        added_label=f"only in {after_label}",
        removed_label=f"only in {before_label}",
        columns=tuple(columns),
        gate=policy,
        noise=noise,
    )


def simulator_note(runs: Sequence[RunData]) -> str:
    """A note when the runs' simulated users are not the same model with the same settings
    (results.json's model_specs of the entries that played a user): their conversations are
    different experiments, so a change in them may be the simulator's, not the model's."""
    seen: list[str] = []
    for run in runs:
        players = sorted(
            {
                name
                for m in run.data.models
                if not isinstance(m.simulated_user, msgspec.UnsetType)
                for name in m.simulated_user.models
            }
        )
        specs = {s.name: s for s in run.data.model_specs}
        text = ", ".join(
            f"{n} ({specs[n].model} {json.dumps(specs[n].params, sort_keys=True)})"
            if n in specs
            else n
            for n in players
        )
        seen.append(text or "none")
    if len(set(seen)) < 2:
        return ""
    return (
        "different simulated users: "
        + " → ".join(dict.fromkeys(seen))
        + "; a change in a simulated conversation may be the simulator's, not the model's"
    )


def recorded_gate(runs: Sequence[RunData]) -> Gate | None:
    """The gate the earliest run was judged under, as its results file records it (None: a
    file written before results carried their gate). The earliest, as review takes the
    base's: the run being compared cannot loosen the gate it is judged by."""
    for run in runs[:1]:
        if not isinstance(run.data.gate, msgspec.UnsetType):
            return Gate(**msgspec.structs.asdict(run.data.gate))
    return None


def recorded_gates(runs: Sequence[RunData]) -> set[Gate]:
    return {
        Gate(**msgspec.structs.asdict(r.data.gate))
        for r in runs
        if not isinstance(r.data.gate, msgspec.UnsetType)
    }


def _runs_gate(runs: Sequence[RunData], given: Gate | None) -> tuple[Gate, str]:
    """The gate that applies (`given`, else the earliest run's) and a note when the runs were
    judged under different gates or the earliest records none."""
    if given is not None:
        return given, ""
    recorded = recorded_gate(runs)
    if recorded is None:
        return Gate(), "the earliest run records no gate (written before results carried it): " + (
            f"gate {Gate().mode}"
        )
    others = recorded_gates(runs[1:]) - {recorded}
    note = "later runs were judged under another gate; this is the earliest's" if others else ""
    return recorded, note


def _pair_label(runs: Sequence[RunData], b_col: Column, a_col: Column) -> str:
    """A change's model: the one both columns share, or `before → after`."""
    if b_col.model == a_col.model and len(runs) > 1:
        return a_col.model
    return a_col.label if b_col.label == a_col.label else f"{b_col.label} → {a_col.label}"


def _pair_labels(
    runs: Sequence[RunData], columns: Sequence[Column], pairs: Sequence[tuple[int, int]]
) -> dict[str, tuple[int, int]]:
    return {_pair_label(runs, columns[i], columns[j]): (i, j) for i, j in pairs}


def _column_spend(before: Column, after: Column) -> tuple[Spend, Spend] | None:
    """Whole-run tokens and cost of two columns, from their results.json summaries."""

    def spend(col: Column) -> Spend | None:
        m = col.summary
        return None if m is None else Spend(m.tokens, m.cost)

    b, a = spend(before), spend(after)
    return (b, a) if b is not None and a is not None else None


def _variant_confusion(
    before: Column, after: Column
) -> tuple[tuple[ConfusionCell, ...], tuple[ConfusionCell, ...]] | None:
    """Both columns' tool confusion when they are two tool variants of one model: what the
    tool owner compares (None otherwise: another model's picks say nothing of the tools)."""
    b, a = before.summary, after.summary
    if b is None or a is None or isinstance(b.variant_of, msgspec.UnsetType):
        return None
    if b.variant_of != a.variant_of:
        return None
    return b.tool_confusion, a.tool_confusion
