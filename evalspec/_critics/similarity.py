"""similarity: embedding cosine by default, or Arcade's TF-IDF cosine on request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from evalspec._critics.base import (
    Critic,
    CriticOutcome,
    Embedder,
    EmbedderRequired,
    Params,
    as_text,
    outcome,
    show,
)
from evalspec._language.defaults import DEFAULT_SIMILARITY_THRESHOLD
from evalspec._util.registry import register


def tfidf_similarity(expected: str, actual: str) -> float:
    """Arcade's SimilarityCritic: TF-IDF (sklearn defaults) fit on both texts, cosine of rows."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    matrix = TfidfVectorizer().fit_transform([expected, actual])
    return float(cosine_similarity(matrix[0], matrix[1])[0][0])


@register("critic")
@dataclass(frozen=True)
class SimilarityCritic(Critic):
    """Meaning (embedding cosine) or word overlap (TF-IDF cosine) between two texts."""

    kind: ClassVar[str] = "similarity"
    threshold: float = DEFAULT_SIMILARITY_THRESHOLD
    metric: str = "embedding"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> SimilarityCritic:
        p = Params(cls.kind, params, {"similarity_threshold": "threshold"})
        threshold = p.number("threshold", DEFAULT_SIMILARITY_THRESHOLD, -1.0, 1.0)
        metric = p.choice("metric", "embedding", ("embedding", "tfidf"))
        p.finish()
        assert threshold is not None
        return cls(threshold=threshold, metric=metric)

    def texts(self, expected: Any, actual: Any) -> list[str]:
        if self.metric != "embedding" or actual is None or expected is None:
            return []
        exp, act = as_text(expected), as_text(actual)
        return [] if exp == act else [exp, act]

    def evaluate(
        self, expected: Any, actual: Any, *, present: bool, embedder: Embedder | None = None
    ) -> CriticOutcome:
        if present and self.metric == "embedding" and embedder is None:
            exp, act = as_text(expected), as_text(actual)
            if actual is not None and expected is not None and exp != act:
                raise EmbedderRequired(
                    "the similarity critic (metric: embedding) needs an embedding model, "
                    "but none was provided; use metric: tfidf to judge without one"
                )
        return super().evaluate(expected, actual, present=present, embedder=embedder)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        if actual is None:
            return outcome(0.0, False, f"Expected text like {show(expected)} but got null.")
        if expected is None:
            return outcome(0.0, False, f"Expected null but got {show(actual)}.")
        exp, act = as_text(expected), as_text(actual)
        if exp == act:
            return outcome(1.0, True, f"Got {show(actual)}, exactly as expected.")
        if self.metric == "tfidf":
            if not exp.strip() or not act.strip():  # as Arcade: blank matches only blank
                same = exp.strip() == act.strip()
                return outcome(
                    float(same),
                    same,
                    f"Got {show(actual)}, expected {show(expected)}: "
                    + ("both blank." if same else "one of them is blank."),
                )
            try:
                sim = tfidf_similarity(exp, act)
            except ValueError:  # no word in either text: nothing to compare
                sim = 0.0
        else:
            assert embedder is not None
            sim = float(embedder.similarity(exp, act))
        match = sim >= self.threshold
        verdict = "similar enough" if match else "not similar enough"
        return outcome(
            sim,
            match,
            f"Got {show(actual)}, expected {show(expected)}: {self.metric} similarity "
            f"{sim:.2f} {'≥' if match else '<'} {self.threshold:g}, {verdict}.",
        )
