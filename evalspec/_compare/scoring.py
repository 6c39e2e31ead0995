"""Scoring one side of a diff: recorded transcripts under one suite version, and its embedder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalspec._compare.records import Side
from evalspec._suite.model import Suite
from evalspec._transcript import Transcript

if TYPE_CHECKING:
    from evalspec._scoring.protocols import Judge


def score_sides(
    suite: Suite, transcripts: Sequence[Transcript], embedder: Any, judge: Judge | None
) -> dict[tuple[str, str], Side]:
    """Score the transcripts this suite has a case and model for; Side per (case, model)."""
    from evalspec._scoring.scorer import score_transcripts
    from evalspec._scoring.trials import summarize

    cases = {c.name for c in suite.cases}
    models = {m.name for m in suite.models}
    kept = [t for t in transcripts if t.case in cases and t.model in models]
    if not kept:
        return {}
    results = score_transcripts(suite, kept, embedder=embedder, judge=judge)
    summaries, _models = summarize(suite, results)
    return {
        (c.case, c.model): Side(c.status, c.score, c.reason, tuple(c.results)) for c in summaries
    }


def review_embedder(base: Suite | None, root: Path | None = None) -> Any:
    """The embedder that scores both sides: the base's model and cache, else the bundled default.

    Never the head's: a model directory's `modules.json` names Python code that loading it
    imports, so a pull request naming a model it ships would run that code in review (a changed
    model is listed as a security-relevant change instead). A relative path is the base's file
    under `root`, never the checkout's file of that name.
    """
    from evalspec._scoring.embeddings import EmbeddingStore

    if base is None:
        return EmbeddingStore()
    model, cache = base.embeddings.model, base.embeddings.cache_dir
    if root is not None:
        if (
            model
            and not Path(model).is_absolute()
            and (Path(model).exists() or (root / model).exists())
        ):
            model = str(root / model)
        if cache and not Path(cache).is_absolute():
            cache = str(root / cache)
    return EmbeddingStore(model=model, cache_dir=Path(cache) if cache else None)
