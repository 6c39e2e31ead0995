"""one_of: BFCL's possible-answer rules for one value.

Follows berkeley-function-call-leaderboard `bfcl_eval/eval_checker/ast_eval/ast_checker.py`
(type_checker, standardize_string, string_checker, list_checker, dict_checker,
list_dict_checker), Python rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from evalspec._critics.base import (
    KIND_WORDS,
    MISSING,
    Critic,
    CriticOutcome,
    Embedder,
    Params,
    is_number,
    kind_of,
    outcome,
    show,
)
from evalspec._util.registry import register

_TYPE_NAMES = {
    "string": "str",
    "integer": "int",
    "float": "float",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "tuple": "list",
    "dict": "dict",
    "object": "dict",
    "null": "null",
    "any": None,
}


NOT_ONE_OF = "not one of the acceptable values"
"""What `_choices_ok` says when a value of the right type matches no choice: the caller names
the choices once (the reason of a one_of row already lists them)."""


def standardize_string(text: str) -> str:
    """BFCL's standardize_string: drop spaces and ,./-_*^, lowercase, ' becomes "."""
    return re.sub(r"[ \,\.\/\-\_\*\^]", "", text).lower().replace("'", '"')


def _compatible(actual: Any, candidate: Any) -> bool:
    """BFCL's Python typing for one value: int is fine for float, not the reverse; bool ≠ int."""
    ka, kc = kind_of(actual), kind_of(candidate)
    if kc == "float":
        return ka in ("int", "float")
    return ka == kc


def _value_ok(actual: Any, candidate: Any, normalize: bool) -> str | None:
    """None if `actual` equals one concrete acceptable value (dicts are {key: [choices]})."""
    if not _compatible(actual, candidate):
        return (
            f"expected {KIND_WORDS[kind_of(candidate)]} but got {show(actual)}, "
            f"which is {KIND_WORDS[kind_of(actual)]}"
        )
    kind = kind_of(candidate)
    if kind == "str":
        same = (
            standardize_string(actual) == standardize_string(candidate)
            if normalize
            else actual == candidate
        )
        return None if same else f"got {show(actual)}, expected {show(candidate)}"
    if kind == "list":
        if len(actual) != len(candidate):
            return f"got {len(actual)} items, expected {len(candidate)}"
        for index, (a, c) in enumerate(zip(actual, candidate, strict=True)):
            problem = (
                _dict_ok(a, c, normalize) if isinstance(c, dict) else _value_ok(a, c, normalize)
            )
            if problem:
                return f"item {index}: {problem}"
        return None
    if kind == "dict":
        return _dict_ok(actual, candidate, normalize)
    return None if actual == candidate else f"got {show(actual)}, expected {show(candidate)}"


def _dict_ok(actual: Any, spec: dict[str, Any], normalize: bool) -> str | None:
    """BFCL dict_checker: every key given must be allowed and acceptable; missing keys need ""."""
    if not isinstance(actual, dict):
        return f"expected an object but got {show(actual)}, which is {KIND_WORDS[kind_of(actual)]}"
    for key, value in actual.items():
        if key not in spec:
            return f"unexpected key {key!r}"
        choices = _as_choices(spec[key])
        problem = _choices_ok(value, True, choices, normalize, None)
        if problem == NOT_ONE_OF:
            problem = f"got {show(value)}, not one of {show(choices)}"
        if problem:
            return f"key {key!r}: {problem}"
    for key, choices in spec.items():
        if key not in actual and "" not in _as_choices(choices):
            return f"key {key!r} is missing"
    return None


def _as_choices(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _items_ok(actual: list[Any], choices: list[Any], items: str) -> str | None:
    """BFCL's nested type check of an array: each item of the declared item type, or of the
    type a listed answer's items have; unlike a top-level value, 1 is not a float here.

    Acceptable answers are tried in order and the first that is not a list (`""`) accepts any
    items, as BFCL's type_checker does."""
    problem = None
    for candidate in choices:
        if not isinstance(candidate, list):
            return None
        listed = [c for c in candidate if not (isinstance(c, str) and c == "")]
        variable = kind_of(listed[0]) if listed else None
        wrong = [(i, a) for i, a in enumerate(actual) if kind_of(a) not in (items, variable)]
        if not wrong:
            return None
        index, item = wrong[0]
        problem = (
            f"item {index}: expected {KIND_WORDS[items]} but got {show(item)}, "
            f"which is {KIND_WORDS[kind_of(item)]}"
        )
    return problem


def _choices_ok(
    actual: Any,
    present: bool,
    choices: list[Any],
    normalize: bool,
    declared: str | None,
    items: str | None = None,
) -> str | None:
    """None if `actual` is acceptable among `choices` ("" = may be left out); else why not."""
    optional = "" in choices
    candidates = [c for c in choices if not (isinstance(c, str) and c == "")]
    if not present:
        return None if optional else MISSING
    if optional and declared == "list" and actual == [] and isinstance(actual, list):
        # BFCL's list_checker reads each "" answer as an empty list: [] is leaving it out.
        return None
    if optional and actual == "" and isinstance(actual, str):
        # BFCL type-checks before it looks at acceptable values: "" passes as text only when
        # text is the declared type or the listed answers' type; else it is a type error.
        types = {declared} if declared else set()
        if candidates:
            types.add(kind_of(candidates[0]))
        if not types or "str" in types:
            return None
        want = declared or kind_of(candidates[0])
        return f"expected {KIND_WORDS[want]} but got {show(actual)}, which is text"
    if not candidates:
        return f"should be left out, but got {show(actual)}"
    # BFCL type_checker: a value of the listed answers' type is accepted even when the declared
    # type differs (BFCL calls that a variable), e.g. None for a float listed as ["", None].
    if declared is not None and kind_of(actual) != kind_of(candidates[0]):
        if declared == "float" and kind_of(actual) == "int":
            actual = float(actual)
        if kind_of(actual) != declared:
            return (
                f"expected {KIND_WORDS[declared]} but got {show(actual)}, "
                f"which is {KIND_WORDS[kind_of(actual)]}"
            )
    if declared == "list" and items is not None and isinstance(actual, list):
        problem = _items_ok(actual, choices, items)
        if problem:
            return problem
    if declared in ("int", "float") and is_number(actual):
        if declared == "float":
            actual = float(actual)
        if any(is_number(c) and c == actual for c in candidates):
            return None
        return NOT_ONE_OF
    problems = [_value_ok(actual, c, normalize) for c in candidates]
    if any(p is None for p in problems):
        return None
    typed = [p for c, p in zip(candidates, problems, strict=True) if _compatible(actual, c)]
    if not typed:
        return problems[0]
    if len(candidates) == 1:
        return problems[0]
    return NOT_ONE_OF


@register("critic")
@dataclass(frozen=True)
class OneOfCritic(Critic):
    """BFCL possible answers: the value must be one of the acceptable values; "" = may omit."""

    kind: ClassVar[str] = "one_of"
    values: tuple[Any, ...] | None = None
    normalize: bool = False
    type: str | None = None
    items: str | None = None

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> OneOfCritic:
        p = Params(cls.kind, params)
        raw = p.raw("values")
        normalize = p.flag("normalize", False)
        type_name = p.raw("type")
        items = p.raw("items")
        p.finish()
        if raw is not None and not isinstance(raw, list | tuple):
            raise ValueError("critic 'one_of': 'values' must be a list of acceptable values")
        for key, name in (("type", type_name), ("items", items)):
            if name is not None and name not in _TYPE_NAMES:
                raise ValueError(
                    f"critic 'one_of': unknown {key} {show(name)}; use one of "
                    + ", ".join(_TYPE_NAMES)
                )
        values = tuple(raw) if raw is not None else None
        return cls(values=values, normalize=normalize, type=type_name, items=items)

    def _choices(self, expected: Any) -> list[Any]:
        return list(self.values) if self.values is not None else _as_choices(expected)

    def evaluate(
        self, expected: Any, actual: Any, *, present: bool, embedder: Embedder | None = None
    ) -> CriticOutcome:
        choices = self._choices(expected)
        shown = show(choices, 120)
        declared = _TYPE_NAMES.get(self.type) if self.type else None
        items = _TYPE_NAMES.get(self.items) if self.items else None
        try:
            problem = _choices_ok(actual, present, choices, self.normalize, declared, items)
        except (TypeError, ValueError, ArithmeticError, RecursionError) as exc:
            problem = f"could not compare {show(actual)}: {exc}"
        if problem is None:
            if not present:
                return outcome(1.0, True, f"Left out, which is allowed (acceptable: {shown}).")
            return outcome(1.0, True, f"Got {show(actual)}, one of the acceptable {shown}.")
        if problem == MISSING:
            return outcome(0.0, False, f"{MISSING} (acceptable: {shown}).")
        if problem == NOT_ONE_OF:
            return outcome(0.0, False, f"Got {show(actual)}, not one of the acceptable {shown}.")
        return outcome(0.0, False, f"{problem[0].upper()}{problem[1:]} (acceptable: {shown}).")

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        return self.evaluate(expected, actual, present=True)
