"""What every critic shares: the Critic base class, parameter reading, value helpers."""

from __future__ import annotations

import json
import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeGuard

from evalspec._util.finite import finite_number


@dataclass(frozen=True)
class CriticOutcome:
    """What one critic thinks of one value. `score` is unweighted, in [0, 1]."""

    score: float
    match: bool
    reason: str


class Embedder(Protocol):
    """Text similarity for the similarity critic; batched and cached by the implementation."""

    def prefetch(self, texts: list[str]) -> None:
        """Embed every text not yet known, in as few batches as possible."""

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts' embeddings, in [-1, 1]."""


MISSING = "argument missing"

_READABLE = json.JSONEncoder(ensure_ascii=False, default=str)
"""`json.dumps(value, ensure_ascii=False, default=str)`, without building an encoder per call
(critics write a reason for every argument they judge)."""
_ESCAPED = re.compile(r'[\x00-\x1f"\\]')
"""What that encoder escapes in a string (ensure_ascii=False): a string without any is shown
as it is, not encoded (most arguments a critic shows)."""


class EmbedderRequired(RuntimeError):
    """The embedding similarity critic was asked to judge without an embedder."""


# Small helpers shared by several critics


def show(value: Any, limit: int = 60) -> str:
    """A short, readable rendering of a value for reasons: JSON-like, truncated."""
    if isinstance(value, str) and not _ESCAPED.search(value):
        text = f"'{value}'"  # what the encoder would write, without its quotes
    else:
        try:
            text = _READABLE.encode(value)
        except (TypeError, ValueError, RecursionError):
            text = repr(value)
        if isinstance(value, str):
            text = "'" + text[1:-1].replace('\\"', '"') + "'"
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def kind_of(value: Any) -> str:
    """JSON-ish kind of a value; bool is its own kind, never a number."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "other"


KIND_WORDS = {
    "null": "null",
    "bool": "true/false",
    "int": "a whole number",
    "float": "a decimal number",
    "str": "text",
    "list": "a list",
    "dict": "an object",
    "other": "an unsupported value",
}


def is_number(value: object) -> TypeGuard[int | float]:
    return kind_of(value) in ("int", "float")


_NUMBER_TEXT = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")


def number_from_text(text: str) -> int | float | None:
    """The number a string spells in JSON number syntax, exactly; None otherwise."""
    m = _NUMBER_TEXT.fullmatch(text)
    if not m:
        return None
    if m.group(1) is None and m.group(2) is None:
        return int(text)
    value = float(text)
    return value if math.isfinite(value) else None


def as_number(value: Any) -> int | float | None:
    """A number, or a string that spells one exactly; never a bool."""
    if is_number(value):
        return value
    if isinstance(value, str):
        return number_from_text(value.strip())
    return None


def as_text(value: Any) -> str:
    """Text form of a value for text critics: strings as is, JSON for everything else."""
    if isinstance(value, str):
        return value
    try:
        return _READABLE.encode(value)
    except (TypeError, ValueError, RecursionError):
        return str(value)


class Params:
    """Reads a critic's parameters and rejects unknown ones, with messages for YAML authors."""

    def __init__(
        self, kind: str, params: dict[str, Any] | None, aliases: dict[str, str] | None = None
    ):
        aliases = aliases or {}
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise ValueError(f"critic '{kind}': parameters must be a mapping, got {show(params)}")
        self.kind = kind
        self.values: dict[str, Any] = {}
        for key, value in params.items():
            name = aliases.get(key, key)
            if name in self.values:
                raise ValueError(f"critic '{kind}': '{key}' is given twice (under another name)")
            self.values[name] = value
        self.used: set[str] = set()

    def raw(self, name: str, default: Any = None) -> Any:
        self.used.add(name)
        return self.values.get(name, default)

    def number(
        self, name: str, default: float | None, lo: float | None = None, hi: float | None = None
    ) -> float | None:
        value = self.raw(name, default)
        if value is None:
            return None
        if not is_number(value) or not finite_number(value):
            raise ValueError(f"critic '{self.kind}': '{name}' must be a number, got {show(value)}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
            raise ValueError(f"critic '{self.kind}': '{name}' must be {bounds}, got {value}")
        return float(value)

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw(name, default)
        if not isinstance(value, bool):
            raise ValueError(
                f"critic '{self.kind}': '{name}' must be true or false, got {show(value)}"
            )
        return value

    def choice(self, name: str, default: str, allowed: tuple[str, ...]) -> str:
        value: str = self.raw(name, default)  # one of `allowed` once past the check below
        if value not in allowed:
            raise ValueError(
                f"critic '{self.kind}': '{name}' must be one of {', '.join(allowed)}, "
                f"got {show(value)}"
            )
        return value

    def finish(self) -> None:
        unknown = sorted(set(self.values) - self.used)
        if unknown:
            allowed = ", ".join(sorted(self.used)) or "none"
            raise ValueError(
                f"critic '{self.kind}': unknown parameter {', '.join(repr(u) for u in unknown)}; "
                f"allowed: {allowed}"
            )


def outcome(score: float, match: bool, reason: str) -> CriticOutcome:
    """A critic's verdict with its score clamped to [0, 1] (NaN or infinity count as 0)."""
    if not math.isfinite(score):
        score = 0.0
    return CriticOutcome(score=max(0.0, min(1.0, float(score))), match=bool(match), reason=reason)


# Base class


class Critic(ABC):
    """Judges one argument. Subclasses implement `_judge` for a present argument."""

    kind: ClassVar[str]

    @classmethod
    @abstractmethod
    def from_params(cls, params: dict[str, Any]) -> Critic:
        """Build the critic from its YAML parameters; ValueError says what to fix."""

    def texts(self, expected: Any, actual: Any) -> list[str]:
        """Texts needing embeddings, so the scorer can embed a whole run in a few batches."""
        return []

    def evaluate(
        self, expected: Any, actual: Any, *, present: bool, embedder: Embedder | None = None
    ) -> CriticOutcome:
        """Score `actual` against `expected`; `present=False` means the call left it out."""
        if not present:
            return self._missing(expected)
        try:
            return self._judge(expected, actual, embedder)
        except (TypeError, ValueError, ArithmeticError, RecursionError) as exc:
            return outcome(0.0, False, f"Could not compare {show(actual)}: {exc}.")

    def _missing(self, expected: Any) -> CriticOutcome:
        return outcome(0.0, False, f"{MISSING} (expected {show(expected)}).")

    @abstractmethod
    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        """Score a present argument."""
