"""JSON-value comparison: a dict and the same JSON text are one value.

Tool outputs and arguments reach scoring in whatever shape the source gave them: parsed objects
from a live run, JSON strings from a recording or an imported trace. Comparing them as values
(not as Python objects, not as text) makes the score independent of that accident.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from evalspec._util.reading import finite_float


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json_value(value: Any, *, containers_only: bool = False) -> Any:
    """Return the JSON value a string holds, or `value` unchanged.

    Only strings are parsed, and only when the whole (stripped) string is a JSON document;
    `NaN`, `Infinity` and numbers that overflow a float (`1e400`) are not JSON evalspec
    holds: those stay strings. `containers_only` parses objects and
    arrays only, so the text `"5"` stays text (critics compare `"5"` and `5` as different).
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or (containers_only and text[0] not in "{["):
        return value
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=finite_float)
    except ValueError:
        return value


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: 5 == 5.0, True is not 1, key order is free, lists are ordered.

    Tuples count as lists. Values that are not JSON types compare with ``==``.
    """
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if len(a) != len(b):
            return False
        return all(k in b and json_equal(v, b[k]) for k, v in a.items())
    if _is_array(a) and _is_array(b):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if _is_array(a) or _is_array(b) or isinstance(a, Mapping) or isinstance(b, Mapping):
        return False
    if isinstance(a, int | float) != isinstance(b, int | float):
        return False
    return bool(a == b)


def _is_array(x: Any) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, str | bytes | bytearray)


MAX_SHORT = 80
"""Characters of a value shown in a one-line description of a change."""


def short(value: Any, limit: int = MAX_SHORT) -> str:
    """A value as a reviewer reads it: strings quoted, everything else compact JSON."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = f"{value:g}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def difference(before: Any, after: Any, limit: int = MAX_SHORT) -> str:
    """`temperature 21 -> 30` for two mappings that differ in a few keys; else both whole."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = list(after) + [k for k in before if k not in after]
        moved = [k for k in keys if (k in before, before.get(k)) != (k in after, after.get(k))]
        if moved and len(moved) <= 3:
            return "; ".join(
                f"{k} {short(before[k], limit) if k in before else '(none)'} -> "
                f"{short(after[k], limit) if k in after else '(none)'}"
                for k in moved
            )
    return f"{short(before, limit)} -> {short(after, limit)}"


def dumps_indented(value: Any) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False, default=str)`, byte for byte, fast.

    An indented dump runs json's pure-Python encoder (~10x slower than its C encoder; 20% of a
    multi-turn replay printing `--json`). The C encoder writes the compact text and msgspec
    re-indents it, copying every token verbatim. NaN and Infinity are not JSON, so msgspec
    refuses that text; the slow path then writes them as json always has.
    """
    import msgspec

    compact = json.dumps(value, ensure_ascii=False, default=str)
    try:
        return msgspec.json.format(compact.encode(), indent=2).decode()
    except msgspec.DecodeError:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
