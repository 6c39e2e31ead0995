"""Score a run while it runs: transcripts are scored in chunks as they finish, then dropped.

What stays is what the report aggregates (one result per item, tokens and latency per model),
so a 50,000-item run never holds 50,000 transcripts. Each chunk embeds all of its texts in one
batch, as scoring a whole run at once does, so similarity critics cost the same.

A run that calls models scores in the background (`background=True`): a chunk is handed to one
scoring thread and the run goes on making requests while its texts are embedded (the encoder
releases the GIL), so recording is bound by the slower of the two, not by their sum. At most
`AHEAD` chunks wait, so memory stays flat; a scoring error is raised at the next chunk.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from evalspec._critics.base import Embedder
from evalspec._scoring.scorer import Scorer
from evalspec._scoring.types import CaseResult
from evalspec._scoring.usage import UsageTally
from evalspec._suite.model import Suite
from evalspec._transcript import Transcript

if TYPE_CHECKING:
    from evalspec._providers.calls import ModelCalls
    from evalspec._scoring.protocols import Judge

CHUNK = 1000
"""Transcripts scored together: large enough to batch embeddings, small enough to forget."""
AHEAD = 2
"""Chunks handed to the scoring thread and not yet scored, at most: the run waits beyond."""


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
        background: bool = False,
    ) -> None:
        """`calls` (the run's ModelCalls) lets an LLM judge ask on a cache miss; `background`
        scores chunks on a thread of their own (results in the same order)."""
        self.scorer = Scorer(suite, embedder=embedder, judge=judge, calls=calls)
        self.order = order or {}
        """Item id -> position in the plan: results are reported in plan order."""
        self.chunk = chunk
        self.pending: list[Transcript] = []
        self.results: list[CaseResult] = []
        self.tally = UsageTally()
        """Tokens and seconds per model, seconds per case: what reports add up."""
        self.count = 0
        self._worker = ThreadPoolExecutor(1, "evalspec-scoring") if background else None
        self._ahead: deque[Future[None]] = deque()

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
        if not self.pending:
            return
        chunk, self.pending = self.pending, []
        if self._worker is None:
            self._score(chunk)
            return
        self._settle(keep=AHEAD - 1)
        self._ahead.append(self._worker.submit(self._score, chunk))

    def _score(self, chunk: list[Transcript]) -> None:
        """One chunk's results, appended in the order chunks were handed over."""
        self.results.extend(self.scorer.score_all(chunk))

    def _settle(self, keep: int) -> None:
        """Wait until at most `keep` chunks are still being scored; raise a chunk's error.
        Chunks run one at a time in order, so the oldest is always the next to finish."""
        while len(self._ahead) > keep or (self._ahead and self._ahead[0].done()):
            self._ahead.popleft().result()

    def finish(self) -> list[CaseResult]:
        """Every result, in plan order (items the plan does not know go last)."""
        self.flush()
        if self._worker is not None:
            self._settle(keep=0)
            self._worker.shutdown()
        last = len(self.order)
        self.results.sort(key=lambda r: self.order.get(r.item_id, last))
        return self.results
