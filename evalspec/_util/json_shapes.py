"""Checking the shape of JSON read from files someone else wrote, field by field.

Transcripts and results files arrive from other runs, other machines and pull requests. Before a
value reaches a dataclass, its type is checked here, so `"case": 5` or `"prompt_tokens": "x"`
is reported as `case: must be text, got a number (5)` rather than failing deep inside scoring.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any


class ShapeError(ValueError):
    """A JSON value of the wrong type; `where` is its path, e.g. `tool_calls[0].name`."""

    def __init__(self, where: str, message: str):
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


def kind(value: Any) -> str:
    """A JSON value's type in words, with a short sample."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"true/false ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r:.20})"
    if isinstance(value, str):
        return f"text ({value!r:.30})"
    if isinstance(value, list):
        return "a list"
    return "an object"


def obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ShapeError(where, f"must be a JSON object, got {kind(value)}")
    return value


def text(data: dict[str, Any], key: str, where: str, *, required: bool = False) -> None:
    if key not in data and not required:
        return
    value = data.get(key)
    if not isinstance(value, str):
        raise ShapeError(_at(where, key), f"must be text, got {kind(value)}")


def optional_text(data: dict[str, Any], key: str, where: str) -> None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ShapeError(_at(where, key), f"must be text or null, got {kind(value)}")


def count(data: dict[str, Any], key: str, where: str, *, optional: bool = False) -> None:
    """A whole number of at least 0, if present."""
    if key not in data or (optional and data[key] is None):
        return
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ShapeError(_at(where, key), f"must be a whole number of 0 or more, got {kind(value)}")


def number(data: dict[str, Any], key: str, where: str, *, required: bool = False) -> None:
    """A finite number, if present (or always, when required)."""
    if key not in data and not required:
        return
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ShapeError(_at(where, key), f"must be a number, got {kind(value)}")


def flag(data: dict[str, Any], key: str, where: str) -> None:
    if key in data and not isinstance(data[key], bool):
        raise ShapeError(_at(where, key), f"must be true or false, got {kind(data[key])}")


def one_of(data: dict[str, Any], key: str, where: str, allowed: Collection[str]) -> None:
    value = data.get(key)
    if value not in allowed:
        raise ShapeError(
            _at(where, key), f"must be one of {', '.join(sorted(allowed))}, got {kind(value)}"
        )


def items(data: dict[str, Any], key: str, where: str) -> list[Any]:
    """The list at `key` (empty when absent)."""
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ShapeError(_at(where, key), f"must be a list, got {kind(value)}")
    return value


def mapping(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key) or {}
    return obj(value, _at(where, key))


def _at(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
