"""`calibrate`: how often a suite's LLM judge agrees with people, on answers they labelled.

It reads the judge's verdicts from its cache only (never calls a model), so the report is
free and the same everywhere; `judge` is the call that fills the cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalspec._util.errors import UsageError

if TYPE_CHECKING:
    from evalspec._scoring.calibration import Calibration


def calibrate(
    suite: str | Path,
    labels: str | Path | None,
    transcripts: str | Path | Sequence[str | Path],
    *,
    seed: int = 0,
) -> Calibration:
    """Each judge check's agreement with the people's verdicts in `labels` (a JSON Lines file),
    on the answers in `transcripts`: per labeller the share agreed, Cohen's kappa with a
    bootstrap interval (seeded by `seed`) and the confusion matrix; with several labellers
    Krippendorff's alpha. `labels` None: the suite's own (`labels:`, else the file beside
    it). InputError (file:line:col) for a bad labels file; UsageError when the
    suite has no judge check."""
    from evalspec._api.rescore import load_every
    from evalspec._scoring.calibration import calibrate_judges
    from evalspec._scoring.labels import labels_of, read_labels, with_labels
    from evalspec._suite.validate import load_suite
    from evalspec._suite.walk import judge_checks

    suite_path = Path(suite)
    loaded = load_suite(suite_path)
    if not judge_checks(loaded):
        raise UsageError(
            f"suite={str(suite_path)!r} has no judge check to calibrate: add `judge: {{model: "
            "..., criteria: ...}}` under a case's or a turn's expect.final_answer",
            params=("suite",),
        )
    read = read_labels(labels_of(with_labels(loaded, Path(labels) if labels else None)))
    return calibrate_judges(loaded, load_every(transcripts), read, seed=seed)
