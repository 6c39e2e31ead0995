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

from evalspec.files import atomic_write

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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, without copying messages (asdict's deep copy was a run's largest cost)."""
        data = dict(vars(self))
        data["version"] = TRANSCRIPT_VERSION
        data["messages"] = list(self.messages)
        data["tool_calls"] = [dict(vars(c)) for c in self.tool_calls]
        data["usage"] = dict(vars(self.usage))
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
            )
            for c in data.get("tool_calls", ())
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
        )


def write_transcripts(path: Path, transcripts: list[Transcript]) -> None:
    """Write transcripts as JSONL, atomically (a reader never sees half a file)."""
    with atomic_write(path) as fh:
        for t in transcripts:
            fh.write(json.dumps(t.to_dict(), ensure_ascii=False, sort_keys=True) + "\n")


def read_transcripts(path: Path) -> list[Transcript]:
    """Read a JSONL transcript file, or a JSON list of transcripts."""
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        return [Transcript.from_dict(d) for d in json.loads(text)]
    return [Transcript.from_dict(json.loads(line)) for line in text.splitlines() if line.strip()]


def load_transcripts(path: Path) -> list[Transcript]:
    """Transcripts from a run directory (its transcripts.jsonl) or a file; UsageError if not."""
    from evalspec.errors import UsageError

    file = path / "transcripts.jsonl" if path.is_dir() else path
    if not file.exists():
        raise UsageError(f"no transcripts at {file}; pass a run directory or a transcripts.jsonl")
    try:
        return read_transcripts(file)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{file} is not a transcripts file: {exc}") from None
