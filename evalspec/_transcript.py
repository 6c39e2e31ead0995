"""Transcripts: what a model did for one plan item.

The transcript is the seam between running and scoring. Scoring reads nothing else, so a
transcript can come from a live run, a recording, or an imported trace, and be re-scored any
number of times without paying for the model again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from evalspec._suite.limits import MAX_CALLS_PER_CASE
from evalspec._util.files import atomic_write, dumps_line
from evalspec._util.reading import (
    MAX_VALUE_DEPTH,
    display_name,
    input_error,
    jsonl_lines,
    loads_untrusted,
    parse_json,
    read_text,
)
from evalspec._util.records import Count, RecordError, Seconds, convert, decode

TRANSCRIPT_VERSION = 1


class ToolCall(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One tool call the model made, with what the (simulated) tool answered."""

    name: str
    """Tool name as the model wrote it (may be a tool the suite does not have)."""
    arguments: dict[str, Any] | None = None
    """Parsed arguments; null when raw_arguments is not a JSON object (malformed JSON)."""
    raw_arguments: str = ""
    """The arguments exactly as the model sent them."""
    id: str = ""
    """The call id the model gave (or one evalspec made up)."""
    output: Any = None
    """JSON value the simulated tool returned; null when error is set."""
    error: str | None = None
    """Error observation given back to the model instead of an output (unknown tool, arguments
    breaking the schema, no simulated response)."""
    turn: Count = 0
    """Index of the model answer that made the call (0 = first)."""
    user_turn: Count | None = None
    """In a multi-turn conversation, the index of the user turn the call answers (absent for a
    single request)."""
    fault: dict[str, Any] | None = None
    """The fault the suite declared for this call (`faults:`), or a Python tool environment
    raised (`ToolFault`, then with `raised: true`): its kind and what it did (status, seconds,
    retry_after, form, keep, applied); absent for an ordinary answer."""

    def to_dict(self) -> dict[str, Any]:
        data = msgspec.structs.asdict(self)  # shallow, in field order: a fifth of a dictcomp
        if self.user_turn is None:
            del data["user_turn"]
        if self.fault is None:
            del data["fault"]
        return data


def world_order(
    t: Transcript, calls: Sequence[ToolCall] | None = None, last: int | None = None
) -> list[tuple[ToolCall, bool]]:
    """Every call on the shared world in the order it ran, with whether the user made it: in
    each user turn (up to `last`), the user's own calls, then the model's (`calls`, by default
    the transcript's), then the user's closing ones; the user's tagged with their turn."""
    by_turn: dict[int, list[ToolCall]] = {}
    for c in t.tool_calls if calls is None else calls:
        by_turn.setdefault(c.user_turn or 0, []).append(c)
    out: list[tuple[ToolCall, bool]] = []
    turns = t.user_turns if last is None else t.user_turns[: last + 1]
    for k, u in enumerate(turns):
        out += [(msgspec.structs.replace(c, user_turn=k), True) for c in u.calls]
        out += [(c, False) for c in by_turn.pop(k, [])]
        out += [(msgspec.structs.replace(c, user_turn=k), True) for c in u.calls_after]
    for rest in by_turn.values():
        out += [(c, False) for c in rest]
    return out


def tool_output_chars(messages: Sequence[dict[str, Any]]) -> int:
    """Characters the tools answered in these messages: what a conversation's output budget
    (`max_tool_output_chars`) counts."""
    return sum(
        len(m["content"])
        for m in messages
        if m.get("role") == "tool" and isinstance(m.get("content"), str)
    )


def call_arguments(raw: str) -> dict[str, Any] | None:
    """A call's arguments as every call's are read (the model's and a user's alike): an
    object, or None for text that is not one (NaN, too deep...: the call is refused)."""
    if not raw.strip():
        return {}
    try:
        value = loads_untrusted(raw, MAX_VALUE_DEPTH)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class UserTurn(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One user turn of a multi-turn conversation, as it went."""

    user: str
    """What the user said."""
    source: Literal["scripted", "simulated"] = "scripted"
    """A turn written in the suite, or a message of the simulated user."""
    final_answer: str | None = None
    """The model's answer that ended this turn."""
    changes: list[dict[str, Any]] | None = None
    """When the tools keep a state: what this turn changed in it, as a JSON Patch (RFC 6902)
    from the state before the turn (for the first turn, the case's initial state) to the state
    after it; [] when it changed nothing. The state after the last turn is the transcript's
    `state`."""
    stop: str | None = None
    """On the last turn: why the conversation ended (stop_signal, empty_message, max_turns,
    error)."""
    calls: tuple[ToolCall, ...] = ()
    """The user's own tool calls in this turn, made on the shared world before it spoke (dual
    control); never among the transcript's `tool_calls`, which are the model's."""
    calls_after: tuple[ToolCall, ...] = ()
    """On the last turn: the user's calls after the model's answer, before it ended the
    conversation without a word more."""

    def to_dict(self) -> dict[str, Any]:
        out = {f: getattr(self, f) for f in self.__struct_fields__ if getattr(self, f) is not None}
        for key in ("calls", "calls_after"):
            if out[key]:
                out[key] = [c.to_dict() for c in out[key]]
            else:
                del out[key]
        return out


class Usage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Tokens summed over every model answer of the item."""

    prompt_tokens: Count = 0
    """Input tokens."""
    completion_tokens: Count = 0
    """Output tokens."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class UserUsage(Usage, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Tokens of the simulated user's answers in one conversation: kept apart from `usage`,
    which counts the model under test only (its budgets and pass figures are the model's)."""

    model: str
    """The entry of the suite's `models:` that played the user (priced at its `price:`)."""


class Transcript(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Everything scoring needs to know about one (case, model, trial) execution: one line of
    transcripts.jsonl. Unknown keys are refused: a transcript is scored as it is, so a field
    this version cannot read must not be dropped silently."""

    item_id: str
    """Content id of the plan item: a hash of the model, its parameters, the opening messages,
    the tools, the run mode and the trial index. Resume and merge key on it."""
    case: str
    """Name of the suite case this transcript answers; scoring finds the case by this name."""
    model: str
    """Name (report label) of the model under test, as in the suite's models list."""
    trial: Count = 0
    """Trial index, from 0."""
    messages: tuple[dict[str, Any], ...] = ()
    """The whole conversation in OpenAI chat format: opening messages, each assistant answer
    (with its tool_calls) and each tool result."""
    tool_calls: Annotated[tuple[ToolCall, ...], msgspec.Meta(max_length=MAX_CALLS_PER_CASE)] = ()
    """Every tool call across all turns, in the order the model made them, with what the
    simulated tool answered."""
    final_answer: str | None = None
    """The assistant's last text answer; null when it never answered in text (max_turns,
    single_turn with calls, or an error)."""
    finish_reason: str | None = None
    """Why the conversation ended: the endpoint's finish_reason of the last answer (stop,
    tool_calls, length, ...), or max_turns when the turn limit cut it off, or error."""
    usage: Usage = msgspec.field(default_factory=Usage)
    """Tokens summed over every model answer of the item."""
    latency_s: Seconds = 0.0
    """Seconds spent waiting for model answers (successful attempts only; retries and
    rate-limit waits excluded); 0 for replays of old recordings without timing."""
    turns: Count = 0
    """Number of model answers received."""
    error: str | None = None
    """Why the item could not be run (retries exhausted, a refused request, a missing
    recording); null when it ran. An errored item scores as status error and runs again on
    --resume. Never contains an API key."""
    source: str = "live"
    """Where the transcript came from: live, replay (recorded answers), or import:<format> for
    imported traces."""
    state: Any = None
    """The state the conversation ended in (stateful suites only; absent from the file else)."""
    user_turns: tuple[UserTurn, ...] = ()
    """A multi-turn conversation's user turns, in order (absent for a single request, so
    single-turn transcripts keep their format)."""
    user_usage: UserUsage | None = None
    """Tokens the simulated user spent (absent when no simulated user took part)."""
    version: int = TRANSCRIPT_VERSION
    """Transcript format version."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, without copying messages (a deep copy was a run's largest cost)."""
        data = msgspec.structs.asdict(self)
        if self.state is None:
            del data["state"]
        data["messages"] = list(self.messages)
        data["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        data["usage"] = msgspec.structs.asdict(self.usage)
        if self.user_turns:
            data["user_turns"] = [u.to_dict() for u in self.user_turns]
        else:
            del data["user_turns"]
        if self.user_usage is None:
            del data["user_usage"]
        else:
            data["user_usage"] = {
                f: getattr(self.user_usage, f) for f in UserUsage.__struct_fields__
            }
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Transcript:
        """A transcript from parsed JSON; RecordError naming the first field it cannot hold."""
        return convert(data, cls)


def write_transcripts(path: Path, transcripts: list[Transcript]) -> None:
    """Write transcripts as JSONL, atomically (a reader never sees half a file); UsageError,
    and no file, when they would pass the size `read_transcripts` reads."""
    from evalspec._suite.limits import MAX_TRANSCRIPTS_BYTES_ENV, max_transcripts_bytes
    from evalspec._util.errors import UsageError

    limit, size = max_transcripts_bytes(), 0
    with atomic_write(path) as fh:
        for t in transcripts:
            line = dumps_line(t.to_dict(), path.name) + "\n"
            size += len(line.encode("utf-8", "backslashreplace"))
            if size > limit:
                raise UsageError(
                    f"the transcripts would make {display_name(path)} larger than {limit} "
                    f"bytes, the most evalspec reads back; write fewer (or raise "
                    f"{MAX_TRANSCRIPTS_BYTES_ENV})"
                )
            fh.write(line)


_HOW = "each line must be one transcript, as `evalspec run` writes it"


def read_transcripts(path: Path) -> list[Transcript]:
    """Read a JSONL transcript file, or a JSON list of transcripts; InputError with the line of
    the first value that is not a transcript."""
    from evalspec._suite.limits import MAX_TRANSCRIPTS_BYTES_ENV, max_transcripts_bytes

    name = display_name(path)
    fix = f"split it, or raise {MAX_TRANSCRIPTS_BYTES_ENV} (a run stops before writing more)"
    text = read_text(path, name, limit=max_transcripts_bytes(), too_big=fix)
    if text.lstrip().startswith("["):
        data = parse_json(text, name)
        if not isinstance(data, list):
            raise input_error(name, "expected a list of transcripts", _HOW)
        out = []
        for i, item in enumerate(data):
            try:
                out.append(convert(item, Transcript, root=f"[{i}]"))
            except RecordError as exc:
                raise input_error(name, f"not a transcript: {exc}", _HOW) from None
        return out
    return [
        read_line(line, name, number)
        for number, line in enumerate(jsonl_lines(text), start=1)
        if line.strip()
    ]


def read_line(line: str | bytes, name: str, number: int) -> Transcript:
    """One line of a transcripts file; InputError at that line when it is not a transcript."""
    try:
        return decode(line, Transcript, name, number, root="the line")
    except RecordError as exc:
        raise input_error(name, f"not a transcript: {exc}", _HOW, number) from None


def load_transcripts(path: Path) -> list[Transcript]:
    """Transcripts from a run directory (its transcripts.jsonl) or a file; UsageError if not."""
    from evalspec._util.errors import UsageError
    from evalspec._util.project import kind, named

    file = path / "transcripts.jsonl" if path.is_dir() else path
    file = named(file, kind("run file"))  # no link in its place inside the working directory
    if not file.exists() and not file.is_symlink():
        raise UsageError(f"no transcripts at {file}; pass a run directory or a transcripts.jsonl")
    return read_transcripts(file)
