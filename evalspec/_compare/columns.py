"""Runs as columns: one column per (run, model), cells keyed by case name.

Comparing models means pairing their results by case whatever each model is called: two models
of one run, one model in two runs, or several runs. Compare and the HTML report both read runs
this way, from results files read back as records, so an old run can be shown without its suite.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from evalspec._compare.classify import classify
from evalspec._compare.records import KIND_ORDER, Column, Kind, RunData, Side, case_order
from evalspec._scoring.results_file import ResultsFile
from evalspec._scoring.types import CaseResult


def sides_from_results(
    data: ResultsFile, *, with_results: bool = True
) -> dict[tuple[str, str], Side]:
    """Side per (case, model) of a results file.

    `with_results` False leaves each side's trial results out (the HTML report reads them
    separately).
    """
    results: dict[tuple[str, str], list[CaseResult]] = defaultdict(list)
    for r in data.results if with_results else ():
        results[(r.case, r.model)].append(r)
    return {
        (c.case, c.model): Side(
            c.status, c.score, c.reason, tuple(results.get((c.case, c.model), ()))
        )
        for c in data.cases
    }


def run_name(label: str) -> str:
    """`runs/slack/1121` for `runs/slack/1121/results.json`: the part that tells runs apart."""
    text = label.rstrip("/")
    return text.removesuffix("/results.json") if text.endswith("/results.json") else text


def model_order(data: ResultsFile, sides: dict[tuple[str, str], Side]) -> list[str]:
    names = [m.model for m in data.models]
    for _case, model in sides:
        if model not in names:
            names.append(model)
    return names


def build_columns(runs: Sequence[RunData], *, with_results: bool = True) -> list[Column]:
    """A column per (run, model), labelled by model when that is unambiguous."""
    raw: list[tuple[int, RunData, str, dict[str, Side]]] = []
    for index, run in enumerate(runs):
        sides = sides_from_results(run.data, with_results=with_results)
        for model in model_order(run.data, sides):
            cells = {case: side for (case, m), side in sides.items() if m == model}
            raw.append((index, run, model, cells))
    models = [model for _, _, model, _ in raw]
    unique = len(set(models)) == len(models)
    columns = []
    for index, run, model, cells in raw:
        label = model if unique else f"{model} @ {run_name(run.label)}"
        columns.append(Column(label, run.label, model, index, cells, run.data.model(model)))
    return columns


def before_after_pairs(runs: Sequence[RunData], columns: Sequence[Column]) -> list[tuple[int, int]]:
    """Which columns to compare, as (before, after) indexes.

    Several runs: the first run against the last, model by model when both have the same
    models, otherwise column by column in order (one model each: whatever their labels). One
    run: every other model against the first (the baseline).
    """
    if not columns:
        return []
    if len(runs) == 1:
        return variant_pairs(columns) or [(0, i) for i in range(1, len(columns))]
    first = [i for i, c in enumerate(columns) if c.run_index == 0]
    last = [i for i, c in enumerate(columns) if c.run_index == len(runs) - 1]
    by_model = {columns[i].model: i for i in last}
    if {columns[i].model for i in first} == set(by_model):
        return [(i, by_model[columns[i].model]) for i in first]
    return list(zip(first, last, strict=False))


def variant_pairs(columns: Sequence[Column]) -> list[tuple[int, int]]:
    """Per model run with tool variants, its first variant's column against each other
    variant's: the same model, cases and trials, only the tools' definitions differ."""
    first: dict[str, int] = {}
    pairs = []
    for i, col in enumerate(columns):
        summary = col.summary
        if summary is None or isinstance(summary.variant_of, msgspec.UnsetType):
            continue
        if summary.variant_of in first:
            pairs.append((first[summary.variant_of], i))
        else:
            first[summary.variant_of] = i
    return pairs


@dataclass(frozen=True)
class Change:
    """A case's most pressing change, and the score difference of the pair it comes from."""

    kind: Kind
    delta: float | None
    """after - before of that pair; None when a side is missing."""


def case_change_details(runs: Sequence[RunData], columns: Sequence[Column]) -> dict[str, Change]:
    """Per case, the most pressing change over the before/after pairs (regression first), with
    the score difference of that very pair, so a label and its number always agree. Among pairs
    of the same kind, the largest difference is the one shown."""
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    out: dict[str, Change] = {}
    for i, j in before_after_pairs(runs, columns):
        for case in case_order(columns):
            before, after = columns[i].cells.get(case), columns[j].cells.get(case)
            kind = classify(before, after)
            delta = after.score - before.score if before and after else None
            seen = out.get(case)
            if (
                seen is None
                or rank[kind] < rank[seen.kind]
                or (rank[kind] == rank[seen.kind] and abs(delta or 0) > abs(seen.delta or 0))
            ):
                out[case] = Change(kind, delta)
    return out
