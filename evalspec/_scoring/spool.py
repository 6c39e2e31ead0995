"""A run's scored results kept on disk as they finish, read back in plan order.

A 50,000-item run held every `CaseResult` (its rows and reasons: ~60 MiB) until the report
was written. Each result is now encoded once, as its line of results.json, into an unnamed
temporary file; memory keeps two numbers per item (where its line starts, how long it is).
results.json copies the lines in plan order; summaries and reports decode a result when they
read it (`SpooledResults` is a sequence like any other).
"""

from __future__ import annotations

import json
import os
import tempfile
from array import array
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import IO, Any, overload

import msgspec

from evalspec._scoring.confusion import count_picks
from evalspec._scoring.types import CaseResult, Status
from evalspec._util import finite
from evalspec._util.errors import RunError

LINE = finite.encoder(ensure_ascii=False, default=str)
"""How a result is written as its line of results.json (and of the spool)."""
_DECODER = msgspec.json.Decoder(CaseResult)
_NOT_YET = -1


def result_line(result: CaseResult, root: str) -> str:
    """The result as results.json writes it; a NaN or an infinity is a NotFiniteError."""
    # results_file.plain's builtins (that module reads summaries, which read this one)
    return finite.encode(LINE, msgspec.to_builtins(result, enc_hook=str), "results.json", root)


class _Head(msgspec.Struct, kw_only=True):
    """A result as its summary reads it: the rows and evaluators are skipped, not built."""

    item_id: str = ""
    case: str
    model: str
    trial: int = 0
    score: float
    status: Status
    reason: str = ""
    rows: msgspec.Raw = msgspec.Raw(b"[]")
    evaluators: msgspec.Raw = msgspec.Raw(b"{}")
    details: dict[str, Any] = msgspec.field(default_factory=dict)


_HEADS = msgspec.json.Decoder(_Head)


def _head(line: bytes) -> CaseResult:
    """The result without its rows and evaluators (what summaries read of 50,000 results)."""
    try:
        h = _HEADS.decode(line)
    except msgspec.DecodeError:
        return msgspec.structs.replace(_decode(line), rows=(), evaluators={})
    return CaseResult(**{f: getattr(h, f) for f in _KEPT})


_KEPT = ("item_id", "case", "model", "trial", "score", "status", "reason", "details")
"""The fields of a result its summary reads."""


def _decode(line: bytes) -> CaseResult:
    """A result from its line; msgspec refuses the escape of a lone surrogate (half an emoji in
    a model's answer), which json reads back as the character it was."""
    try:
        return _DECODER.decode(line)
    except msgspec.DecodeError:
        return msgspec.convert(json.loads(line), CaseResult)


def _unusable(exc: OSError) -> RunError:
    """The run cannot keep its results aside: say where, and what to do."""
    return RunError(
        f"cannot keep the scored results in a temporary file in {tempfile.gettempdir()} "
        f"({exc.strerror or exc}); free space there or point TMPDIR at a directory with room "
        "(about the size of results.json)"
    )


class ResultSpool:
    """Results given in any order, kept on disk by their item's place in the plan."""

    def __init__(self, order: Mapping[str, int], captured: Collection[str] = ()) -> None:
        """`order`: item id -> place in the plan; items it lacks go last, as they came.
        `captured`: the names of capture cases (their calls are recorded, not judged)."""
        self._order = order
        self.captured = frozenset(captured)
        self.picks: dict[str, Counter[tuple[str, str]]] = {}
        """Model -> which tool was called where which was expected, over its judged trials
        (a user's fault and a capture case's aside), counted as results come."""
        # Unnamed: nothing is left behind, however the process ends; closed with the last
        # reader of the results (the report), not at the end of a block.
        try:
            self._file: IO[bytes] = tempfile.TemporaryFile(prefix="evalspec-results-")  # noqa: SIM115
        except OSError as exc:
            raise _unusable(exc) from None
        places = max(order.values(), default=-1) + 1
        self._start = array("q", [_NOT_YET]) * places
        self._size = array("q", [0]) * places
        self._again: dict[int, list[tuple[int, int]]] = {}
        """Place -> later results of an item scored twice, in the order they came."""
        self._extra: list[tuple[int, int]] = []
        self._end = 0
        self.judge_tokens: dict[str, int] = {}
        """Model -> tokens its answers' judges spent (a run's budget counts them)."""

    def add(self, results: Iterable[CaseResult]) -> None:
        """Encode and write a batch of results (one write for the batch)."""
        chunk: list[bytes] = []
        for r in results:
            place = self._order.get(r.item_id, _NOT_YET)
            root = f"results[{place if place >= 0 else len(self._start) + len(self._extra)}]"
            # A lone surrogate becomes its \\uXXXX escape, as results.json writes it.
            data = result_line(r, root).encode("utf-8", "backslashreplace")
            if place < 0:
                self._extra.append((self._end, len(data)))
            elif self._start[place] == _NOT_YET:
                self._start[place], self._size[place] = self._end, len(data)
            else:
                self._again.setdefault(place, []).append((self._end, len(data)))
            self._end += len(data)
            chunk.append(data)
            if r.status != "user_fault" and r.case not in self.captured:
                picks = self.picks.get(r.model)
                if picks is None:  # not `setdefault(model, Counter())`: a Counter per result
                    picks = self.picks[r.model] = Counter()
                count_picks((r,), picks)
            if spent := r.details.get("judge_tokens"):  # summed as the report sums them
                self.judge_tokens[r.model] = self.judge_tokens.get(r.model, 0) + spent
        try:
            self._file.seek(0, os.SEEK_END)
            self._file.write(b"".join(chunk))
        except OSError as exc:
            raise _unusable(exc) from None

    def finish(self) -> SpooledResults:
        """Every result written so far, in plan order (items the plan lacks last)."""
        self._file.flush()
        start, size = array("q"), array("q")
        for place, (s, n) in enumerate(zip(self._start, self._size, strict=True)):
            if s != _NOT_YET:
                start.append(s)
                size.append(n)
                for s2, n2 in self._again.get(place, ()):
                    start.append(s2)
                    size.append(n2)
        for s, n in self._extra:
            start.append(s)
            size.append(n)
        return SpooledResults(self._file, start, size, dict(self.judge_tokens), self)


class _Lines:
    """The spool's file and where each result's line is in it, in plan order."""

    __slots__ = ("file", "size", "start")

    def __init__(self, file: IO[bytes], start: array[int], size: array[int]) -> None:
        self.file = file
        self.start = start
        self.size = size

    def __getitem__(self, i: int) -> bytes:
        return os.pread(self.file.fileno(), self.size[i], self.start[i])

    def many(self, places: Sequence[int]) -> Iterator[bytes]:
        """The lines at `places`, in order: a block of them read with one `pread` where they
        lie close together in the file (results are written as they finish, near plan order),
        not one each (summaries and results.json each read every line)."""
        for k in range(0, len(places), _BLOCK):
            block = places[k : k + _BLOCK]
            low = min(self.start[i] for i in block)
            high = max(self.start[i] + self.size[i] for i in block)
            if high - low > 2 * sum(self.size[i] for i in block) + _BLOCK_SLACK:
                yield from (self[i] for i in block)  # scattered: one read each
                continue
            data = os.pread(self.file.fileno(), high - low, low)
            for i in block:
                at = self.start[i] - low
                yield data[at : at + self.size[i]]


_BLOCK = 1_000
"""Lines read together: ~1 MB of results at a time, however many the run has."""
_BLOCK_SLACK = 1 << 16


class ResultsAt(Sequence[CaseResult]):
    """Some of a spool's results (a case's trials), decoded each time they are read."""

    __slots__ = ("_lines", "_places")

    def __init__(self, lines: _Lines, places: Sequence[int]) -> None:
        self._lines = lines
        self._places = places

    def __len__(self) -> int:
        return len(self._places)

    @overload
    def __getitem__(self, i: int) -> CaseResult: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[CaseResult]: ...

    def __getitem__(self, i: int | slice) -> CaseResult | Sequence[CaseResult]:
        if isinstance(i, slice):
            return ResultsAt(self._lines, self._places[i])
        return _decode(self._lines[self._places[i]])

    def __iter__(self) -> Iterator[CaseResult]:
        return (_decode(line) for line in self.lines())

    def lines(self) -> Iterator[bytes]:
        """The results' lines of results.json, encoded (UTF-8), in order."""
        return self._lines.many(self._places)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))


class SpooledResults(ResultsAt):
    """Every result of a run, on disk, decoded when read; their lines are results.json's, byte
    for byte."""

    __slots__ = ("captured", "judge_tokens", "picks")

    def __init__(
        self,
        file: IO[bytes],
        start: array[int],
        size: array[int],
        judge_tokens: dict[str, int],
        spool: ResultSpool,
    ) -> None:
        super().__init__(_Lines(file, start, size), range(len(start)))
        self.judge_tokens = judge_tokens
        self.picks = {model: Counter(counts) for model, counts in spool.picks.items()}
        """Model -> (expected, called) counts over its trials, but a capture case's."""
        self.captured = spool.captured

    def heads(self) -> Iterator[CaseResult]:
        """Every result without its rows and evaluators, in order: what summaries read."""
        return (_head(line) for line in self.lines())

    def view(self, places: Sequence[int]) -> ResultsAt:
        """The results at these places, read when iterated (a case summary's trials)."""
        return ResultsAt(self._lines, places)
