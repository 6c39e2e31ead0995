"""Recorded model answers: a reviewable JSONL file beside the suite, keyed by content id.

One JSON object per line, keys sorted, so a pull request that re-records shows a readable diff.
Each answer is appended and flushed as soon as it arrives, so a crash loses nothing finished.
Several processes may record into one file at once: every append and the final compaction
hold a lock on the file (``flock``), and compaction rewrites from what is on disk at that
moment, so no writer drops another's lines. A line cut short by a crash or a full disk is
skipped with a note and cut off, under the lock, before the next write. When a key appears more
than once the last line wins, and closing the provider rewrites the file with one line per key.
Lines holding only ``_comment`` are notes for readers and are skipped. A file that is not a
recordings file (its first line is no recorded answer) is refused, never rewritten.
Recordings never contain API keys or request headers: only the model id, messages, tools,
params and the answer, with any echoed secret scrubbed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from evalspec._providers.base import (
    RECORD_MODES,
    ChatRequest,
    ChatResponse,
    Provider,
    ProviderError,
    RecordingMissing,
    RecordingStore,
    RecordMode,
)
from evalspec._util import redaction
from evalspec._util.errors import Problem, RunError, SpecError
from evalspec._util.files import atomic_write, dumps_line, locked, not_this_kind, pread
from evalspec._util.reading import (
    MAX_LOG_BYTES,
    input_error,
    open_regular,
    without_lone_surrogates,
)
from evalspec._util.records import AnswerSeconds, Count, RecordError, convert

_log = logging.getLogger(__name__)


HEADER_COMMENT = (
    "evalspec recorded model answers: one JSON object per line, keyed by request content id. "
    "Review like code; holds no API keys."
)

WHAT = "a recordings file (JSON lines of recorded answers)"


def _dumps(obj: Any) -> str:
    return redaction.scrub(dumps_line(obj, "a recordings line"))


class RecordedRequest(msgspec.Struct, frozen=True):
    """What was asked: the model id aside, everything that makes the request's content id.

    For people reviewing the file; replay reads only the key. A request that continues an
    earlier one of its conversation names that one's key in `after` and holds only the
    messages sent after that one's, and `tools` only when they differ from that one's (lines
    recorded before `after` existed hold everything)."""

    messages: list[dict[str, Any]] = msgspec.field(default_factory=list)
    tools: list[dict[str, Any]] | msgspec.UnsetType = msgspec.UNSET
    """Absent: the tools of the request `after` names."""
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    after: str | msgspec.UnsetType = msgspec.UNSET
    """The key of the request this one continues: its messages come before these (absent
    from a conversation's first request, so such lines read and write as before)."""


class RecordedResponse(msgspec.Struct, frozen=True):
    """The answer, as the provider returned it (see ChatResponse)."""

    message: dict[str, Any]
    finish_reason: str | None = None
    usage: dict[str, Count] = msgspec.field(default_factory=dict)
    """Token counts by name (prompt_tokens, completion_tokens): whole numbers of 0 or more, so
    a hand-edited or hostile line is refused where it stands, not at replay."""
    latency_s: AnswerSeconds = 0.0


class RecordedAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """One line of a recordings file: a request's content id and its recorded answer.

    Unknown keys are ignored, not refused: a recordings file written by a newer evalspec
    still replays (compaction copies lines as they are, so the keys are kept)."""

    key: str
    label: str = ""
    model: str = ""
    recorded_at: str = ""
    """When it was recorded, ISO 8601 in UTC."""
    request: RecordedRequest | None = None
    response: RecordedResponse


class RecordingsComment(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A line holding only ``_comment``: a note for readers, skipped on replay."""

    comment: str = msgspec.field(name="_comment")


class _SkimmedRequest(msgspec.Struct, frozen=True):
    """`RecordedRequest` as the index checks it: the same shape, each message, tool and
    parameter an object whose values are checked as JSON and not built (replay never reads
    them; building a request's tool schemas was three quarters of indexing a line)."""

    messages: list[dict[str, msgspec.Raw]] = msgspec.field(default_factory=list)
    tools: list[dict[str, msgspec.Raw]] | msgspec.UnsetType = msgspec.UNSET
    params: dict[str, msgspec.Raw] = msgspec.field(default_factory=dict)
    after: str | msgspec.UnsetType = msgspec.UNSET


class _Skimmed(RecordedAnswer, frozen=True, kw_only=True):
    """`RecordedAnswer` as the index checks it (the response built and checked whole)."""

    request: _SkimmedRequest | None = None  # type: ignore[assignment]


_ANSWER = msgspec.json.Decoder(RecordedAnswer)
_SKIM = msgspec.json.Decoder(_Skimmed)
_COMMENT = msgspec.json.Decoder(RecordingsComment)
_RESPONSE = msgspec.json.Decoder(RecordedResponse)


def _parse_line(raw: bytes) -> RecordedAnswer | RecordingsComment | str:
    """The recorded answer (or comment) on one line, or why it is not one."""
    try:
        return _ANSWER.decode(raw)
    except msgspec.ValidationError as exc:
        if b"_comment" in raw:
            with contextlib.suppress(msgspec.MsgspecError, UnicodeDecodeError):
                return _COMMENT.decode(raw)
        return _why(raw, exc)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError) as exc:
        # msgspec reads the text of strings as UTF-8, and says so with Python's own error
        return _why(raw, exc)


def _indexed(raw: bytes) -> _Skimmed | RecordedAnswer | RecordingsComment | str:
    """`_parse_line`'s verdict on a line, without building its request: a line the skim
    passes, valid UTF-8 throughout, `_parse_line` passes too; any other goes to it, for its
    verdict and its words."""
    try:
        skimmed = _SKIM.decode(raw)
    except (msgspec.MsgspecError, RecursionError):
        return _parse_line(raw)
    if raw.isascii():
        return skimmed
    try:
        raw.decode("utf-8")  # the skim does not decode the text it skips
    except UnicodeDecodeError:
        return _parse_line(raw)
    return skimmed


def _why(raw: bytes, exc: Exception) -> RecordedAnswer | RecordingsComment | str:
    """A line msgspec refused, read by evalspec's JSON reader (which mends lone surrogates),
    or said in words."""
    try:
        data = without_lone_surrogates(json.loads(raw.decode("utf-8")))
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except (ValueError, RecursionError) as error:
        return f"not JSON ({error})"
    if isinstance(data, dict) and set(data) == {"_comment"} and isinstance(data["_comment"], str):
        return RecordingsComment(data["_comment"])
    try:
        return convert(data, RecordedAnswer, root="the line")
    except RecordError as error:
        return str(error)


class _Index:
    """Where each key's answer is in a recordings file: its line's offset and length (the last
    line of a key wins), the comments, the file's state, and the file itself, kept open.

    The file is read line by line and every line is parsed as before, so a file that is not
    recordings or a corrupt line in the middle is refused at once and a torn last line is
    skipped; but only the place of each line is kept, not its text: a 50,000-answer file is
    80 MB of JSON, its index a few MB. An answer is read again (one `pread` of its line, from
    this very file even if another process has since compacted the path) when a run asks for
    it."""

    def __init__(self, path: Path) -> None:
        self.entries: dict[str, tuple[int, int]] = {}
        self.comments: list[str] = []
        self.lines = 0
        self.torn_at: int | None = None
        """Byte offset of a last line cut short (a crash, a full disk), if there is one."""
        self.fd: int | None = None
        self._ahead = b""
        """The bytes read ahead of the last line read in file order, from `_ahead_at`."""
        self._ahead_at = 0
        self._next = 0
        """Where the line after the last one read starts."""
        if not os.path.lexists(path):
            return
        with open_regular(path, limit=MAX_LOG_BYTES) as fh:
            self.fd = os.dup(fh.fileno())
            self._release = weakref.finalize(self, _close_quietly, self.fd)
            try:
                self._scan(path, fh)
            except BaseException:
                self.close()
                raise

    def _scan(self, path: Path, fh: BinaryIO) -> None:
        offset = 0
        suspect: tuple[int, int, str] | None = None
        """A complete line that is no recorded answer: torn if only blanks follow it."""
        for number, line in enumerate(fh, start=1):
            ended = line.endswith(b"\n")
            raw = line[:-1] if ended else line
            if suspect is not None:
                if ended or (raw and not raw.isspace()):
                    raise _corrupt(path, suspect[0], suspect[2])
                break  # only blanks after it: it was the last line, cut short
            if raw and not raw.isspace():
                parsed = _indexed(raw)
                if isinstance(parsed, str):
                    if not self.lines and not self.comments:
                        raise not_this_kind(
                            path,
                            WHAT,
                            f"line {number} is {parsed}",
                            "point run.recordings (or recordings=) at a new file",
                            params=["recordings"],
                        )
                    if not ended:  # the last line, without its newline: cut short
                        suspect = (number, offset, parsed)
                        break
                    suspect = (number, offset, parsed)
                elif isinstance(parsed, RecordingsComment):
                    self.comments.append(parsed.comment)
                else:
                    self.lines += 1
                    self.entries[parsed.key] = (offset, len(raw))
            offset += len(line)
            if offset > MAX_LOG_BYTES:  # grown by another writer since it was opened
                raise input_error(
                    str(path),
                    f"the file is larger than the limit of {MAX_LOG_BYTES} bytes",
                    "split it into smaller files",
                )
        if suspect is not None:
            number, self.torn_at, parsed = suspect
            _log.warning(
                "%s:%d: skipped a line cut short (%s); it is removed before the next answer "
                "is recorded",
                path,
                number,
                parsed,
            )

    def line(self, place: tuple[int, int]) -> str:
        """The text of the line at `place` (offset, length), read from the file indexed.

        A replay asks for its answers in about the order a recording run wrote them: a line
        that starts where the last one read ended is read with the next `READ_AHEAD` bytes,
        and the lines after it come from those (one `pread` a line was 3% of a 50,000-case
        replay). A line asked out of order is read alone."""
        assert self.fd is not None, "an index with entries has its file open"
        offset, length = place
        start = offset - self._ahead_at
        if start >= 0 and start + length <= len(self._ahead):
            raw = self._ahead[start : start + length]
        else:
            ahead = offset == self._next
            raw = pread(self.fd, max(length, READ_AHEAD) if ahead else length, offset)
            if len(raw) < length:
                raise RunError(
                    "the recordings file was cut short while this run read it; run again"
                )
            if ahead:
                self._ahead, self._ahead_at = raw, offset
                raw = raw[:length]
        self._next = offset + length + 1  # its newline
        return raw.decode("utf-8").strip()

    def close(self) -> None:
        if self.fd is not None:
            self._release()  # closes the descriptor once: never a number reused since
            self.fd = None


READ_AHEAD = 64 * 1024
"""Bytes of recordings read past a line read in file order (the next answers, most likely)."""


def _corrupt(path: Path, number: int, why: str) -> SpecError:
    return SpecError(
        [
            Problem(
                str(path),
                number,
                1,
                "",
                f"not a recorded answer: {why}",
                "fix or delete this line, or re-record with record=record",
            )
        ],
        params=["record"],
    )


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


class Recordings:
    """The answers recorded in one JSONL file, indexed at once and appended to as they come.

    Answers on disk are parsed when asked for; answers recorded by this process stay in memory
    as their line's text."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_file():
            raise not_this_kind(
                self.path, WHAT, "it is a directory or device", "name a file for the recordings"
            )
        self._index = _Index(self.path)
        self._recorded: dict[str, str] = {}
        """Lines this process appended, by key: they win over the index."""
        self._appended = 0

    def __len__(self) -> int:
        return len(self._index.entries.keys() | self._recorded.keys())

    def __contains__(self, key: object) -> bool:
        return key in self._recorded or key in self._index.entries

    def keys(self) -> list[str]:
        return list({**self._index.entries, **self._recorded})

    def get(self, key: str) -> ChatResponse | None:
        """The recorded answer for a request content id, or None."""
        line = self._recorded.get(key)
        if line is None:
            place = self._index.entries.get(key)
            if place is None:
                return None
            if self._index.fd is None:  # closed, then asked again: read the file as it is now
                self._index = _Index(self.path)
                return self.get(key)
            line = self._index.line(place)
        response = _response_of(line)
        return ChatResponse(
            message=response.message,
            finish_reason=response.finish_reason,
            usage=dict(response.usage),
            latency_s=response.latency_s,
            from_recording=True,
            attempts=0,
        )

    def put(self, request: ChatRequest, response: ChatResponse) -> None:
        """Record an answer: appended under the file lock and flushed now."""
        earlier = request.continues
        messages = list(request.messages)
        tools: list[dict[str, Any]] | msgspec.UnsetType = list(request.tools)
        after: str | msgspec.UnsetType = msgspec.UNSET
        if earlier is not None:
            del messages[: earlier.sent]
            after = earlier.key
            if earlier.tools == request.tools:
                tools = msgspec.UNSET  # as the request it continues
        entry = RecordedAnswer(
            key=request.key,
            model=request.model,
            label=request.label,
            request=RecordedRequest(messages, tools, dict(request.params), after),
            response=RecordedResponse(
                response.message,
                response.finish_reason,
                dict(response.usage),
                round(response.latency_s, 3),
            ),
            recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        line = _dumps(msgspec.to_builtins(entry, enc_hook=str)) + "\n"
        try:
            with locked(self.path) as fd:
                size = os.fstat(fd).st_size
                prefix = ""
                if size == 0:
                    comments = self._index.comments or [HEADER_COMMENT]
                    prefix = "".join(_dumps({"_comment": c}) + "\n" for c in comments)
                elif pread(fd, 1, size - 1) != b"\n":
                    prefix = self._mend_tail(fd)
                _write_all(fd, (prefix + line).encode("utf-8"))
        except OSError as exc:
            raise RunError(
                f"cannot save a recorded answer to {self.path} ({exc.strerror or exc}); "
                "every answer recorded before is intact"
            ) from None
        self._appended += 1
        self._recorded[request.key] = line.rstrip("\n")

    def _mend_tail(self, fd: int) -> str:
        """Under the lock: cut a torn last line (read now, never from a stale length), or end
        a complete one that lacks its newline. Returns what to write before the next line."""
        index = _Index(self.path)
        index.close()
        if index.torn_at is not None:
            os.ftruncate(fd, index.torn_at)
            return ""
        return "\n"

    def compact(self) -> None:
        """Rewrite the file with one line per key (the latest), comments first.

        Done under the lock from what is on disk now, so answers other processes appended
        since this one loaded the file are kept."""
        if not self._appended:
            return
        try:
            with locked(self.path):
                index = _Index(self.path)
                if index.lines > len(index.entries) or index.torn_at is not None:
                    with atomic_write(self.path) as fh:
                        for comment in index.comments or [HEADER_COMMENT]:
                            fh.write(_dumps({"_comment": comment}) + "\n")
                        for place in index.entries.values():
                            fh.write(index.line(place) + "\n")
        except OSError as exc:
            _log.warning("could not compact %s (%s); it stays as written", self.path, exc)
            return
        self._index.close()
        self._index = index  # the file it read stays open: its offsets hold even if replaced
        self._recorded = {}
        self._appended = 0

    def close(self) -> None:
        """Let go of the file read at load; an answer asked for later indexes it again."""
        self._index.close()


_LAST_KEY = ', "response": '


def _response_of(line: str) -> RecordedResponse:
    """The "response" of a line that was checked whole when the file was indexed.

    Lines evalspec writes have their keys sorted, so "response" comes last: only its value is
    decoded, a quarter of the line (the request's messages and tools are the rest). The text
    from it to the line's closing brace counts only if it is one JSON value, which no
    "response" key nested deeper can satisfy (its object would close before the line's), nor
    text inside a string, where every quote is escaped; any other line is decoded whole."""
    start = line.rfind(_LAST_KEY)
    if start >= 0 and line.endswith("}"):
        with contextlib.suppress(msgspec.MsgspecError, RecursionError):
            return _RESPONSE.decode(line[start + len(_LAST_KEY) : -1])
    parsed = _parse_line(line.encode("utf-8", "surrogatepass"))
    if not isinstance(parsed, RecordedAnswer):
        raise RunError("a recorded answer changed on disk while this run read it; run again")
    return parsed.response


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    while written < len(data):
        written += os.write(fd, data[written:])


ProviderSource = Provider | Callable[[], Provider] | None


REQUEST_COUNTS = ("replayed", "called", "shared", "failed", "missing")
"""How a model request ended: replayed from a recording, answered by a live call, answered by
an identical request in flight, failed for good (retries used up), or missing offline."""


class RecordingProvider:
    """Answers from recordings where it can, from the live provider where the mode allows.

    ``auto`` replays what is recorded and calls the model for the rest (recording it);
    ``offline`` only replays, and a miss is a :class:`RecordingMissing` for that item;
    ``record`` always calls the model and overwrites what was recorded.

    ``inner`` may be a provider, a zero-argument factory for one (called at the first miss, so a
    fully recorded run needs no API key), or None (nothing can be called).
    """

    def __init__(
        self,
        recordings: RecordingStore,
        inner: ProviderSource = None,
        mode: RecordMode = "auto",
    ) -> None:
        if mode not in RECORD_MODES:
            raise ValueError(f"record mode must be one of {', '.join(RECORD_MODES)}, not {mode!r}")
        self.recordings = recordings
        self.mode = mode
        self._source = inner
        self._inner: Provider | None = None
        self.missing: list[str] = []
        """Labels of requests that had no recording and could not be called."""
        self.counts = dict.fromkeys((*REQUEST_COUNTS, "sent"), 0)
        """Each request once by how it ended (REQUEST_COUNTS), and `sent`: the HTTP requests
        the live calls took, retries included."""
        self._flying: dict[str, asyncio.Future[ChatResponse]] = {}
        """Requests being asked now, by key: two conversations that send the same request at
        once (two cases opening alike) get one answer, so a replay gives each what it got."""

    def __repr__(self) -> str:
        return f"RecordingProvider(path={str(self.recordings.path)!r}, mode={self.mode!r})"

    def _live(self) -> Provider | None:
        if self._inner is None and self._source is not None:
            source = self._source
            # hasattr tells a provider from its factory at run time; mypy does not narrow on it.
            self._inner = source if hasattr(source, "complete") else source()  # type: ignore[assignment]
        return self._inner

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self.mode != "record":
            hit = self.recordings.get(request.key)
            if hit is not None:
                self.counts["replayed"] += 1
                if _log.isEnabledFor(logging.DEBUG):  # not describing 50,000 requests unasked
                    _log.debug("replayed %s from %s", request.describe(), self.recordings.path)
                return hit
            _log.info("no recording of %s in %s", request.describe(), self.recordings.path)
        live = None if self.mode == "offline" else self._live()
        if live is None:
            if self.mode == "record":
                raise RunError(
                    "record=record needs a model endpoint to call, and none is set",
                    params=["record"],
                )
            self.counts["missing"] += 1
            self.missing.append(request.describe())
            raise RecordingMissing(
                f"no recorded answer for {request.describe()} in {self.recordings.path}; "
                "run with --record auto to call the model for missing answers (needs its API "
                "key), or --record record to refresh every answer",
                label=request.label,
                attempts=0,
            )
        flying = self._flying.get(request.key)
        if flying is not None:  # the same request is being asked: share its answer
            try:
                response = await asyncio.shield(flying)
            except ProviderError:
                self.counts["failed"] += 1
                raise
            self.counts["shared"] += 1
            return response
        self._flying[request.key] = answer = asyncio.get_running_loop().create_future()
        try:
            response = await self._call(live, request)
        except BaseException as exc:
            answer.set_exception(exc)
            answer.exception()  # retrieved: a request nobody else asked is not an error
            raise
        finally:
            del self._flying[request.key]
        answer.set_result(response)
        self.recordings.put(request, response)
        self.counts["called"] += 1
        return response

    async def _call(self, live: Provider, request: ChatRequest) -> ChatResponse:
        """One live request, its HTTP attempts counted whether it is answered or given up."""
        try:
            response = await live.complete(request)
        except ProviderError as exc:
            self.counts["failed"] += 1
            self.counts["sent"] += exc.attempts
            raise
        self.counts["sent"] += response.attempts
        return response

    async def aclose(self) -> None:
        try:
            if self._inner is not None:
                await self._inner.aclose()
        finally:
            if self.counts["called"]:
                self.recordings.compact()  # replay-only runs never rewrite the file
            else:
                self.recordings.close()
