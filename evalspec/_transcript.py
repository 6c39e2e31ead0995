"""Transcripts: what a model did for one plan item.

The transcript is the seam between running and scoring. Scoring reads nothing else, so a
transcript can come from a live run, a recording, or an imported trace, and be re-scored any
number of times without paying for the model again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalspec._suite.limits import MAX_CALLS_PER_CASE
from evalspec._util import json_shapes as shape
from evalspec._util.files import atomic_write
from evalspec._util.json_shapes import ShapeError
from evalspec._util.reading import display_name, input_error, parse_json, read_text

TRANSCRIPT_VERSION = 1


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model made, with what the (simulated) tool answered."""

    name: str
    arguments: dict[str, Any] | None
    """Parsed arguments; None when `raw_arguments` is not a JSON object."""
    raw_arguments: str = ""
    id: str = ""
    output: Any = None
    error: str | None = None
    turn: int = 0
    """Index of the model turn that made the call (0 = first response)."""
    user_turn: int | None = None
    """In a multi-turn conversation, the index of the user turn the call answers."""


@dataclass(frozen=True)
class UserTurn:
    """One user turn of a multi-turn conversation, as it went."""

    user: str
    """What the user said."""
    source: str = "scripted"
    """scripted (a turn of the suite) or simulated (the simulated user's message)."""
    final_answer: str | None = None
    """The model's answer that ended this turn."""
    state: Any = None
    """The tools' state after the turn, when the tools keep one (`snapshot()`)."""
    stop: str | None = None
    """Why the conversation ended after this turn, on its last turn: stop_signal,
    empty_message, max_turns (simulated) or error."""

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Transcript:
    """Everything scoring needs to know about one (case, model, trial) execution."""

    item_id: str
    case: str
    model: str
    trial: int = 0
    messages: tuple[dict[str, Any], ...] = ()
    """The conversation in OpenAI chat format, including tool results."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Every tool call across all turns, in the order the model made them."""
    final_answer: str | None = None
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    turns: int = 0
    error: str | None = None
    """Set when the item could not be run (endpoint down, retries exhausted, ...)."""
    source: str = "live"
    """Where it came from: live, replay, import:<format>."""
    state: Any = None
    """The state the conversation ended in (stateful suites only; absent from the file else)."""
    user_turns: tuple[UserTurn, ...] = ()
    """A multi-turn conversation's user turns; () for a single request (and then not written,
    so single-turn transcripts keep their format)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, without copying messages (asdict's deep copy was a run's largest cost)."""
        data = dict(vars(self))
        if self.state is None:
            del data["state"]
        data["version"] = TRANSCRIPT_VERSION
        data["messages"] = list(self.messages)
        data["tool_calls"] = [_call_dict(c) for c in self.tool_calls]
        data["usage"] = dict(vars(self.usage))
        if self.user_turns:
            data["user_turns"] = [u.to_dict() for u in self.user_turns]
        else:
            del data["user_turns"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Transcript:
        calls = tuple(
            ToolCall(
                name=c["name"],
                arguments=c.get("arguments"),
                raw_arguments=c.get("raw_arguments", ""),
                id=c.get("id", ""),
                output=c.get("output"),
                error=c.get("error"),
                turn=c.get("turn", 0),
                user_turn=c.get("user_turn"),
            )
            for c in data.get("tool_calls", ())
        )
        user_turns = tuple(
            UserTurn(
                user=u["user"],
                source=u.get("source", "scripted"),
                final_answer=u.get("final_answer"),
                state=u.get("state"),
                stop=u.get("stop"),
            )
            for u in data.get("user_turns", ())
        )
        usage = data.get("usage") or {}
        return cls(
            item_id=data["item_id"],
            case=data["case"],
            model=data["model"],
            trial=data.get("trial", 0),
            messages=tuple(data.get("messages", ())),
            tool_calls=calls,
            final_answer=data.get("final_answer"),
            finish_reason=data.get("finish_reason"),
            usage=Usage(
                prompt_tokens=usage.get("prompt_tokens", 0),
                completion_tokens=usage.get("completion_tokens", 0),
            ),
            latency_s=data.get("latency_s", 0.0),
            turns=data.get("turns", 0),
            error=data.get("error"),
            source=data.get("source", "live"),
            state=data.get("state"),
            user_turns=user_turns,
        )


def _call_dict(call: ToolCall) -> dict[str, Any]:
    data = dict(vars(call))
    if call.user_turn is None:
        del data["user_turn"]
    return data


def write_transcripts(path: Path, transcripts: list[Transcript]) -> None:
    """Write transcripts as JSONL, atomically (a reader never sees half a file)."""
    with atomic_write(path) as fh:
        for t in transcripts:
            fh.write(json.dumps(t.to_dict(), ensure_ascii=False, sort_keys=True) + "\n")


MAX_TRANSCRIPTS_BYTES = 256 * 1024 * 1024
"""The largest transcripts file read: a few thousand items with long conversations."""

_HOW = "each line must be one transcript, as `evalspec run` writes it"


def read_transcripts(path: Path) -> list[Transcript]:
    """Read a JSONL transcript file, or a JSON list of transcripts; InputError with the line of
    the first value that is not a transcript."""
    name = display_name(path)
    text = read_text(path, name, limit=MAX_TRANSCRIPTS_BYTES)
    if text.lstrip().startswith("["):
        data = parse_json(text, name)
        if not isinstance(data, list):
            raise input_error(name, "expected a list of transcripts", _HOW)
        return [_checked(d, name, 1, f"[{i}]") for i, d in enumerate(data)]
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            out.append(_checked(parse_json(line, name, number), name, number, ""))
    return out


def _checked(data: Any, name: str, line: int, where: str) -> Transcript:
    try:
        check_transcript(data, where)
    except ShapeError as exc:
        raise input_error(name, f"not a transcript: {exc}", _HOW, line) from None
    return Transcript.from_dict(data)


def check_transcript(data: Any, where: str = "") -> None:
    """ShapeError naming the first field of `data` that a transcript cannot hold."""
    shape.obj(data, where or "the line")
    for key in ("item_id", "case", "model"):
        shape.text(data, key, where, required=True)
    for key in ("trial", "turns"):
        shape.count(data, key, where)
    shape.number(data, "latency_s", where)
    for key in ("final_answer", "finish_reason", "error"):
        shape.optional_text(data, key, where)
    shape.text(data, "source", where)
    for i, message in enumerate(shape.items(data, "messages", where)):
        shape.obj(message, _field(where, f"messages[{i}]"))
    calls = shape.items(data, "tool_calls", where)
    if len(calls) > MAX_CALLS_PER_CASE:
        raise ShapeError(
            _field(where, "tool_calls"),
            f"{len(calls)} calls; evalspec scores at most {MAX_CALLS_PER_CASE} in one case",
        )
    for i, call in enumerate(calls):
        at = _field(where, f"tool_calls[{i}]")
        shape.obj(call, at)
        shape.text(call, "name", at, required=True)
        if call.get("arguments") is not None:
            shape.obj(call["arguments"], f"{at}.arguments")
        shape.text(call, "raw_arguments", at)
        shape.text(call, "id", at)
        shape.optional_text(call, "error", at)
        shape.count(call, "turn", at)
        shape.count(call, "user_turn", at)
    for i, turn in enumerate(shape.items(data, "user_turns", where)):
        at = _field(where, f"user_turns[{i}]")
        shape.obj(turn, at)
        shape.text(turn, "user", at, required=True)
        shape.text(turn, "source", at)
        for key in ("final_answer", "stop"):
            shape.optional_text(turn, key, at)
    usage = shape.mapping(data, "usage", where)
    for key in ("prompt_tokens", "completion_tokens"):
        shape.count(usage, key, _field(where, "usage"))


def _field(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def load_transcripts(path: Path) -> list[Transcript]:
    """Transcripts from a run directory (its transcripts.jsonl) or a file; UsageError if not."""
    from evalspec._util.errors import UsageError

    file = path / "transcripts.jsonl" if path.is_dir() else path
    if not file.exists() and not file.is_symlink():
        raise UsageError(f"no transcripts at {file}; pass a run directory or a transcripts.jsonl")
    return read_transcripts(file)
