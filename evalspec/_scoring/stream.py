"""Score a run while it runs: transcripts are scored in chunks as they finish, then dropped.

What stays is what the report aggregates: one result per item, on disk (`spool.py`), and tokens
and latency per model, so a 50,000-item run holds neither its transcripts nor its results. Each
chunk embeds all of its texts in one batch, as scoring a whole run at once does, so similarity
critics cost the same.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalspec._critics.base import Embedder
from evalspec._scoring.scorer import Scorer
from evalspec._scoring.spool import ResultSpool, SpooledResults
from evalspec._scoring.usage import UsageTally
from evalspec._suite.model import Suite
from evalspec._transcript import Transcript

if TYPE_CHECKING:
    from evalspec._providers.calls import ModelCalls
    from evalspec._scoring.protocols import Judge

CHUNK = 1000
"""Transcripts scored together: large enough to batch embeddings, small enough to forget."""


class StreamingScorer:
    """Collects results of transcripts given one at a time, in any order."""

    def __init__(
        self,
        suite: Suite,
        *,
        order: dict[str, int] | None = None,
        embedder: Embedder | None = None,
        judge: Judge | None = None,
        calls: ModelCalls | None = None,
        chunk: int = CHUNK,
    ) -> None:
        """`calls` (the run's ModelCalls) lets an LLM judge ask on a cache miss."""
        self.scorer = Scorer(suite, embedder=embedder, judge=judge, calls=calls)
        self.order = order or {}
        """Item id -> position in the plan: results are reported in plan order."""
        self.chunk = chunk
        self.pending: list[Transcript] = []
        captured = [c.name for c in suite.cases if c.capture is not None]
        self.spool = ResultSpool(self.order, captured)
        self.tally = UsageTally()
        """Tokens and seconds per model, seconds per case: what reports add up."""
        self.count = 0

    def add(self, transcript: Transcript) -> None:
        self.pending.append(transcript)
        self.count += 1
        self.tally.add(transcript)
        if len(self.pending) >= self.chunk:
            self.flush()

    @property
    def usage(self) -> dict[str, tuple[int, float]]:
        """Model -> (tokens, seconds)."""
        return self.tally.usage

    def flush(self) -> None:
        if self.pending:
            self.spool.add(self.scorer.score_all(self.pending))
            self.pending = []

    def finish(self) -> SpooledResults:
        """Every result, in plan order (items the plan does not know go last), read from
        disk when read."""
        self.flush()
        return self.spool.finish()
