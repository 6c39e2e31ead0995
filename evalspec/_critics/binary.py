"""binary: exact equality after sensible typing (Arcade's BinaryCritic, with its casting fixed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from evalspec._critics.base import (
    KIND_WORDS,
    Critic,
    CriticOutcome,
    Embedder,
    Params,
    kind_of,
    number_from_text,
    outcome,
    show,
)
from evalspec._util.json_values import parse_json_value
from evalspec._util.registry import register


def _binary_equal(expected: Any, actual: Any, cast: bool) -> bool:
    """Deep equality with one numeric rule: 5 == 5.0, bools are never numbers."""
    ke, ka = kind_of(expected), kind_of(actual)
    if ke == "bool" or ka == "bool":
        if ke == ka:
            return expected == actual
        if cast and {ke, ka} == {"bool", "str"}:
            flag, word = (expected, actual) if ke == "bool" else (actual, expected)
            return word == ("true" if flag else "false")
        return False
    if ke in ("int", "float") and ka in ("int", "float"):
        return expected == actual
    if ke == "str" and ka == "str":
        return expected == actual
    if cast and {ke, ka} <= {"int", "float", "str"} and "str" in {ke, ka}:
        number, text = (expected, actual) if ka == "str" else (actual, expected)
        parsed = number_from_text(text)
        return parsed is not None and parsed == number
    if ke == "null" or ka == "null":
        return ke == ka
    if ke == "list" and ka == "list":
        return len(expected) == len(actual) and all(
            _binary_equal(e, a, cast) for e, a in zip(expected, actual, strict=True)
        )
    if ke == "dict" and ka == "dict":
        return set(expected) == set(actual) and all(
            _binary_equal(expected[k], actual[k], cast) for k in expected
        )
    if cast and {ke, ka} & {"list", "dict"} and "str" in {ke, ka}:
        e2, a2 = (
            parse_json_value(expected, containers_only=True),
            parse_json_value(actual, containers_only=True),
        )
        if kind_of(e2) == kind_of(a2) and (e2 is not expected or a2 is not actual):
            return _binary_equal(e2, a2, cast)
        return False
    if ke == "other" and ka == "other":
        return expected == actual
    return False


@register("critic")
@dataclass(frozen=True)
class BinaryCritic(Critic):
    """Exact equality after casting, as Arcade's BinaryCritic, with sane typing."""

    kind: ClassVar[str] = "binary"
    cast: bool = True

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> BinaryCritic:
        p = Params(cls.kind, params)
        critic = cls(cast=p.flag("cast", True))
        p.finish()
        return critic

    def _missing(self, expected: Any) -> CriticOutcome:
        if expected is None:
            return outcome(1.0, True, "Left out, and null was expected.")
        return super()._missing(expected)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        if _binary_equal(expected, actual, self.cast):
            return outcome(1.0, True, f"Got {show(actual)}, as expected.")
        ke, ka = kind_of(expected), kind_of(actual)
        why = ""
        if ke != ka and not ({ke, ka} <= {"int", "float"}):
            why = f", which is {KIND_WORDS[ka]}, not {KIND_WORDS[ke]}"
        return outcome(0.0, False, f"Expected {show(expected)} but got {show(actual)}{why}.")
