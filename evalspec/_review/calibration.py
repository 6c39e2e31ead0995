"""Review's word on a judge's calibration: a change to a judge's model or criteria makes the
agreement measured with people stale; the agreement before and after, when both sides' judge
verdicts are cached for the labelled answers.

A suite's labels are the file beside it, `<suite>.labels.jsonl` (see `evalspec calibrate`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from evalspec._scoring.calibration import Calibration, calibrate_judges, labels_name
from evalspec._scoring.labels import labels_of, read_labels
from evalspec._suite.model import Suite
from evalspec._suite.walk import judge_checks
from evalspec._transcript import Transcript

Identity = tuple[str, str, str, str, str]
"""A judge as (model, criteria, rubric, what it sees, settings)."""
_PARTS = ("model", "criteria", "rubric", "sees", "settings")


def judge_identity(suite: Suite) -> set[Identity]:
    """Each judge the suite asks, as (model, criteria, rubric, sees, settings): what its
    verdicts depend on (settings: its rounds and temperature)."""
    return {
        (
            str(check.params.get("model", "")),
            str(check.params.get("criteria", "")),
            json.dumps(check.params.get("rubric"), sort_keys=True),
            json.dumps(check.params.get("sees"), sort_keys=True),
            f"rounds {check.params.get('rounds', 1)}, temperature "
            f"{check.params.get('temperature', 0)}",
        )
        for _, check in judge_checks(suite)
    }


def calibration_review(
    base: Suite | None,
    head: Suite,
    base_transcripts: Sequence[Transcript],
    head_transcripts: Sequence[Transcript],
    rel: str,
) -> tuple[str, ...]:
    """Lines for the review: empty unless the suite has labels and its judge changed."""
    head_labels = labels_of(head)
    if base is None or not head_labels.is_file():
        return ()
    before_ids, after_ids = judge_identity(base), judge_identity(head)
    if before_ids == after_ids or not after_ids:
        return ()
    what = _what_changed(before_ids, after_ids)
    labels_rel = (Path(rel).parent / labels_name(head, head_labels)).as_posix()
    lines = [
        f"calibration stale: {what} changed, and its agreement with the people "
        f"who labelled {labels_rel} was measured with the judge before the change"
    ]
    after = calibrate_judges(head, head_transcripts, read_labels(head_labels))
    base_labels = labels_of(base)
    before = (
        calibrate_judges(base, base_transcripts, read_labels(base_labels))
        if base_labels.is_file()
        else None
    )
    if after.unjudged:
        n = len(after.unjudged)
        lines.append(
            f"agreement after the change cannot be shown without a run: {n} labelled answer"
            f"{'s have' if n != 1 else ' has'} no verdict from the changed judge in its cache "
            f"(evalspec judge {rel} -t RUN asks for them, then evalspec calibrate)"
        )
    lines += _before_after(before, after)
    return tuple(lines)


_SAID: dict[str, str] = {
    "model": "the judge's model",
    "criteria": "the judge's criteria",
    "rubric": "the judge's rubric",
    "sees": "what the judge sees",
    "settings": "the judge's settings",
}
"""Each part of a judge as a reader names it (`sees:` is what the judge is shown)."""


def _what_changed(before: set[Identity], after: set[Identity]) -> str:
    """`the judge's model (a → b)`, `the judge's criteria`, `what the judge sees (conversation,
    calls → conversation)`, or several joined with `and`."""
    changed = []
    for i, word in enumerate(_PARTS):
        old, new = sorted({j[i] for j in before}), sorted({j[i] for j in after})
        if old != new:
            if word == "sees":
                old, new = [_seen(x) for x in old], [_seen(x) for x in new]
            shown = (
                f" ({'; '.join(old)} → {'; '.join(new)})"
                if word in ("model", "settings", "sees")
                else ""
            )
            changed.append(_SAID[word] + shown)
    return " and ".join(changed)


def _seen(held: str) -> str:
    """A judge's `sees:` list as written (`conversation, calls`), from its JSON."""
    value = json.loads(held)
    return ", ".join(map(str, value)) if isinstance(value, list) else "its default"


def _before_after(before: Calibration | None, after: Calibration) -> list[str]:
    """`judge vs ana: agreement 0.800 → 0.900, kappa 0.583 → 0.800` per check and labeller,
    for what both sides could measure."""
    if before is None or after.unjudged:
        return []

    def table(c: Calibration) -> dict[tuple[str, str], tuple[float, float | None]]:
        return {
            (j.check, each.labeller): (
                each.agreement.agreement,
                each.agreement.kappa.estimate if each.agreement.kappa else None,
            )
            for j in c.judges
            for each in j.labellers
        }

    old, new = table(before), table(after)
    out = []
    for key in sorted(set(old) & set(new)):
        (a0, k0), (a1, k1) = old[key], new[key]
        out.append(
            f"{key[0]} vs {key[1]}: agreement {a0:.3f} → {a1:.3f}, Cohen's kappa "
            f"{_num(k0)} → {_num(k1)}"
        )
    return out


def _num(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
