"""Text critics: regex, exact, contains, and ignore."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from evalspec._critics.base import (
    KIND_WORDS,
    Critic,
    CriticOutcome,
    Embedder,
    Params,
    as_text,
    is_number,
    kind_of,
    outcome,
    show,
)
from evalspec._critics.patterns import PatternError, compile_pattern
from evalspec._util.registry import register


def _scalar_text(value: Any) -> str | None:
    """Text a pattern can be matched against: strings and numbers; None for anything else."""
    if isinstance(value, str):
        return value
    if is_number(value):
        return str(value)
    return None


@register("critic")
@dataclass(frozen=True)
class RegexCritic(Critic):
    """The actual value matches a pattern (searched anywhere, or the whole value with full)."""

    kind: ClassVar[str] = "regex"
    pattern: str = ""
    full: bool = False
    ignore_case: bool = False

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> RegexCritic:
        p = Params(cls.kind, params)
        pattern = p.raw("pattern")
        full, ignore_case = p.flag("full", False), p.flag("ignore_case", False)
        p.finish()
        if not isinstance(pattern, str):
            raise ValueError("critic 'regex' needs a 'pattern' (a regular expression as text)")
        try:
            compile_pattern(pattern, ignore_case)
        except PatternError as exc:
            raise ValueError(f"critic 'regex': the pattern {pattern!r} is invalid: {exc}") from None
        return cls(pattern=pattern, full=full, ignore_case=ignore_case)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        text = _scalar_text(actual)
        if text is None:
            return outcome(
                0.0,
                False,
                f"Expected text matching /{self.pattern}/ but got "
                f"{show(actual)} ({KIND_WORDS[kind_of(actual)]}).",
            )
        compiled = compile_pattern(self.pattern, self.ignore_case)
        found = (compiled.fullmatch if self.full else compiled.search)(text)
        how = "wholly " if self.full else ""
        if found:
            return outcome(1.0, True, f"Got {show(actual)}, which {how}matches /{self.pattern}/.")
        return outcome(
            0.0, False, f"Got {show(actual)}, which does not {how}match /{self.pattern}/."
        )


def _fold(text: str, case_sensitive: bool, strip: bool) -> str:
    if strip:
        text = text.strip()
    return text if case_sensitive else text.casefold()


@register("critic")
@dataclass(frozen=True)
class ExactCritic(Critic):
    """Text equality with options; non-text values compare by their JSON text (5 vs "5" match)."""

    kind: ClassVar[str] = "exact"
    case_sensitive: bool = True
    strip: bool = True

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> ExactCritic:
        p = Params(cls.kind, params)
        critic = cls(case_sensitive=p.flag("case_sensitive", True), strip=p.flag("strip", True))
        p.finish()
        return critic

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        exp = _fold(as_text(expected), self.case_sensitive, self.strip)
        act = _fold(as_text(actual), self.case_sensitive, self.strip)
        if exp == act:
            return outcome(1.0, True, f"Got {show(actual)}, as expected.")
        case = "" if self.case_sensitive else " (ignoring case)"
        return outcome(0.0, False, f"Expected {show(expected)}{case} but got {show(actual)}.")


@register("critic")
@dataclass(frozen=True)
class ContainsCritic(Critic):
    """The actual text contains the expected piece(s); score = share of pieces found. A piece
    listed several times must occur that many times."""

    kind: ClassVar[str] = "contains"
    values: tuple[str, ...] | None = None
    case_sensitive: bool = True

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> ContainsCritic:
        p = Params(cls.kind, params, {"value": "values"})
        raw = p.raw("values")
        case_sensitive = p.flag("case_sensitive", True)
        p.finish()
        values: tuple[str, ...] | None = None
        if raw is not None:
            items = raw if isinstance(raw, list | tuple) else [raw]
            if not items or not all(isinstance(v, str | int | float) for v in items):
                raise ValueError("critic 'contains': 'values' must be text or a list of texts")
            values = tuple(as_text(v) for v in items)
        return cls(values=values, case_sensitive=case_sensitive)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        if self.values is not None:
            pieces = list(self.values)
        elif isinstance(expected, list | tuple):
            pieces = [as_text(v) for v in expected]
        else:
            pieces = [as_text(expected)]
        if not pieces:
            return outcome(1.0, True, "Nothing to look for.")
        if actual is None:
            return outcome(0.0, False, f"Expected text containing {show(pieces)} but got null.")
        text = _fold(as_text(actual), self.case_sensitive, False)
        missing = _missing(pieces, text, self.case_sensitive)
        found = len(pieces) - len(missing)
        if not missing:
            return outcome(1.0, True, f"Got {show(actual)}, which contains {show(pieces)}.")
        return outcome(
            found / len(pieces),
            False,
            f"Got {show(actual)}, which lacks {show(missing)} ({found} of {len(pieces)} found).",
        )


def _missing(pieces: list[str], text: str, case_sensitive: bool) -> list[str]:
    """The pieces not found in `text`; a piece listed n times must be there n times (counted
    without overlap), so `[ok, ok]` asks for two `ok`s."""
    wanted: dict[str, int] = {}
    missing = []
    for piece in pieces:
        folded = _fold(piece, case_sensitive, False)
        n = wanted[folded] = wanted.get(folded, 0) + 1
        if (folded not in text) if n == 1 else text.count(folded) < n:
            missing.append(piece)
    return missing


@register("critic")
@dataclass(frozen=True)
class IgnoreCritic(Critic):
    """Excludes an argument from judgement: always a full match."""

    kind: ClassVar[str] = "ignore"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> IgnoreCritic:
        Params(cls.kind, params).finish()
        return cls()

    def evaluate(
        self, expected: Any, actual: Any, *, present: bool, embedder: Embedder | None = None
    ) -> CriticOutcome:
        return outcome(1.0, True, "not checked")

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        return outcome(1.0, True, "not checked")
