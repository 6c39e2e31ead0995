"""Tool variants side by side in a diff or review: the head's variants of each model paired.

A suite with `variants:` runs each model once per version of its tools. Besides what a change
does to each `MODEL@VARIANT` (base → head), a reviewer asks which version of the tools the
head says is better: each model's first variant against each other, on the head's results,
with the same paired test as any comparison and the tool confusion of both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from evalspec._compare.classify import case_change, ordered
from evalspec._compare.noise import model_noise
from evalspec._compare.records import CaseChange, ModelNoise, Side
from evalspec._scoring.confusion import ConfusionCell, confusion
from evalspec._suite.model import Gate, Suite

MOVED = ("regression", "worse", "better")
"""The kinds of change a reader of two variants wants named."""


def variant_noise(
    head: Suite, changes: Sequence[CaseChange], gate: Gate, known_flaky: frozenset[str]
) -> tuple[ModelNoise, ...]:
    """Per model and variant after its first: the head's paired change between them, over
    the cases whose head evidence still answers the head's requests."""
    after = {
        (c.case, c.model): c.after for c in changes if c.after is not None and not c.unverified
    }
    by_model: dict[str, list[str]] = {}
    for m in head.models:
        if m.variant is not None:
            by_model.setdefault(m.base_name, []).append(m.name)
    out = []
    for names in by_model.values():
        first = names[0]
        for other in names[1:]:
            label = f"{first} → {other}"
            pairs = [
                case_change(c.name, label, after.get((c.name, first)), after.get((c.name, other)))
                for c in head.cases
                if (c.name, first) in after and (c.name, other) in after
            ]
            sides = (_confusion(after, head, first), _confusion(after, head, other))
            noise = model_noise(label, pairs, gate, known_flaky=known_flaky, confusion=sides)
            moved = tuple((c.kind, c.case) for c in ordered(pairs) if c.kind in MOVED)
            out.append(replace(noise, moved=moved))
    return tuple(out)


def _confusion(
    after: dict[tuple[str, str], Side], head: Suite, model: str
) -> tuple[ConfusionCell, ...]:
    """The tool confusion of one model and variant over its trials in the head."""
    sides = (after.get((c.name, model)) for c in head.cases)
    return confusion(r for side in sides if side is not None for r in side.results)
