"""Recorded model answers: a reviewable JSONL file beside the suite, keyed by content id.

One JSON object per line, keys sorted, so a pull request that re-records shows a readable diff.
Each answer is appended and flushed as soon as it arrives, so a crash loses nothing finished;
a line cut short by a crash is ignored and cut off before the next write. When a key appears
more than once the last line wins, and closing the provider rewrites the file with one line per
key. Lines holding only ``_comment`` are notes for readers and are skipped. Recordings never
contain API keys or request headers: only the model id, messages, tools, params and the answer.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

from evalspec.errors import Problem, RunError, SpecError
from evalspec.files import atomic_write
from evalspec.providers.base import ChatRequest, ChatResponse, Provider, RecordingMissing

_log = logging.getLogger(__name__)

RecordMode = Literal["auto", "offline", "record"]
RECORD_MODES: tuple[RecordMode, ...] = ("auto", "offline", "record")

HEADER_COMMENT = (
    "evalspec recorded model answers: one JSON object per line, keyed by request content id. "
    "Review like code; holds no API keys."
)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, default=str)


class Recordings:
    """The answers recorded in one JSONL file, loaded at once and appended to as they come."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._entries: dict[str, str] = {}
        """Each key's line as written (JSON text): a third of the memory of the parsed entry,
        which is rebuilt only for the answers a run asks for."""
        self._comments: list[str] = []
        self._superseded = 0
        self._good_size = 0
        """Byte length of the file up to its last intact line."""
        self._needs_newline = False
        self._fh: IO[str] | None = None
        self._load()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def keys(self) -> list[str]:
        return list(self._entries)

    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        *lines, tail = data.split(b"\n")
        self._good_size = len(data) - len(tail)
        for number, raw in enumerate(lines, start=1):
            self._take(raw, number, strict=True)
        if tail.strip() and self._take(tail, len(lines) + 1, strict=False):
            # A complete last line without its newline (e.g. saved by an editor): keep it.
            self._good_size = len(data)
            self._needs_newline = True

    def _take(self, raw: bytes, number: int, *, strict: bool) -> bool:
        """Index one line; a bad line is an error unless it is the unfinished last one."""
        if not raw.strip():
            return True
        try:
            entry = json.loads(raw)
            if not isinstance(entry, dict):
                raise ValueError("a line must be a JSON object")
            if set(entry) == {"_comment"}:
                self._comments.append(str(entry["_comment"]))
                return True
            if not isinstance(entry.get("key"), str):
                raise ValueError('missing "key"')
            response = entry.get("response")
            if not isinstance(response, dict) or not isinstance(response.get("message"), dict):
                raise ValueError('missing "response.message"')
        except ValueError as exc:
            if not strict:
                return False
            raise SpecError(
                [
                    Problem(
                        file=str(self.path),
                        line=number,
                        column=1,
                        path="",
                        message=f"not a recorded answer: {exc}",
                        hint="fix or delete this line, or re-record with --record record",
                    )
                ]
            ) from None
        if entry["key"] in self._entries:
            self._superseded += 1
        self._entries[entry["key"]] = raw.decode("utf-8").strip()
        return True

    def get(self, key: str) -> ChatResponse | None:
        """The recorded answer for a request content id, or None."""
        line = self._entries.get(key)
        if line is None:
            return None
        response = json.loads(line)["response"]
        return ChatResponse(
            message=response["message"],
            finish_reason=response.get("finish_reason"),
            usage=dict(response.get("usage") or {}),
            latency_s=float(response.get("latency_s") or 0.0),
            from_recording=True,
        )

    def put(self, request: ChatRequest, response: ChatResponse) -> None:
        """Record an answer: appended and flushed now, replacing any earlier one for that key."""
        entry = {
            "key": request.key,
            "model": request.model,
            "label": request.label,
            "request": {
                "messages": list(request.messages),
                "tools": list(request.tools),
                "params": dict(request.params),
            },
            "response": {
                "message": response.message,
                "finish_reason": response.finish_reason,
                "usage": dict(response.usage),
                "latency_s": round(response.latency_s, 3),
            },
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        line = _dumps(entry)
        fh = self._open_for_append()
        fh.write(line + "\n")
        fh.flush()
        if request.key in self._entries:
            self._superseded += 1
        self._entries[request.key] = line

    def _open_for_append(self) -> IO[str]:
        if self._fh is not None:
            return self._fh
        self.path.parent.mkdir(parents=True, exist_ok=True)
        exists = self.path.exists()
        if exists and self.path.stat().st_size > self._good_size:
            with self.path.open("r+b") as raw:  # drop a line cut short by a crash
                raw.truncate(self._good_size)
        self._fh = self.path.open("a", encoding="utf-8", newline="\n")
        if self._needs_newline:
            self._fh.write("\n")
            self._needs_newline = False
        if self._good_size == 0:
            self._comments = self._comments or [HEADER_COMMENT]
            for comment in self._comments:
                self._fh.write(_dumps({"_comment": comment}) + "\n")
        return self._fh

    def compact(self) -> None:
        """Rewrite the file atomically with one line per key (the latest), comments first."""
        self.close()
        if not self._superseded:
            return
        with atomic_write(self.path) as fh:
            for comment in self._comments or [HEADER_COMMENT]:
                fh.write(_dumps({"_comment": comment}) + "\n")
            for line in self._entries.values():
                fh.write(line + "\n")
        self._superseded = 0
        self._good_size = self.path.stat().st_size
        self._needs_newline = False

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


ProviderSource = Provider | Callable[[], Provider] | None


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
        recordings: Recordings,
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
        self.counts = {"replayed": 0, "called": 0, "missing": 0}

    def __repr__(self) -> str:
        return f"RecordingProvider(path={str(self.recordings.path)!r}, mode={self.mode!r})"

    def _live(self) -> Provider | None:
        if self._inner is None and self._source is not None:
            source = self._source
            self._inner = source if hasattr(source, "complete") else source()  # type: ignore[operator]
        return self._inner

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self.mode != "record":
            hit = self.recordings.get(request.key)
            if hit is not None:
                self.counts["replayed"] += 1
                _log.debug("replayed %s from %s", request.describe(), self.recordings.path)
                return hit
            _log.info("no recording of %s in %s", request.describe(), self.recordings.path)
        live = None if self.mode == "offline" else self._live()
        if live is None:
            if self.mode == "record":
                raise RunError("--record record needs a model endpoint to call, and none is set")
            self.counts["missing"] += 1
            self.missing.append(request.describe())
            raise RecordingMissing(
                f"no recorded answer for {request.describe()} in {self.recordings.path}; "
                "run with --record auto to call the model for missing answers (needs its API "
                "key), or --record record to refresh every answer",
                label=request.label,
                attempts=0,
            )
        response = await live.complete(request)
        self.recordings.put(request, response)
        self.counts["called"] += 1
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
