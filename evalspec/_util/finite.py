"""Numbers evalspec writes are finite: JSON has no NaN or Infinity, and every file evalspec
writes is read back (by `score`, `view`, `compare`, another tool) with a parser that refuses
them.

Numbers are held finite where they enter (a suite's schema bounds prices and weights, imported
and served JSON refuses NaN and overflow), so the sums and ratios made from them stay finite.
This is the guard behind those bounds: every JSON writer encodes with `allow_nan=False`, and a
non-finite number that still got through is one clear error (exit 2) naming where it sits,
never a file or an output that is not JSON.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from evalspec._util.errors import EvalspecError


class NotFiniteError(EvalspecError):
    """A number evalspec was about to write is NaN or infinite."""


def _key(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def non_finite_at(value: Any, root: str = "") -> str | None:
    """Where the first NaN or infinity in `value` sits (`models[0].cost`), or None.

    Walks with a stack, not recursion: the values are as deep as evalspec lets JSON be."""
    stack: list[tuple[Any, str]] = [(value, root)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return f"{path or 'the value'} = {node}"
        if isinstance(node, dict):
            stack.extend((v, _key(path, k)) for k, v in reversed(node.items()))
        elif isinstance(node, list | tuple):
            stack.extend((v, f"{path}[{i}]") for i, v in reversed(list(enumerate(node))))
    return None


def not_finite(what: str, value: Any, root: str = "") -> NotFiniteError:
    """The error for `value` (at `root` in what is written), which JSON cannot hold, about to
    be written as `what`."""
    where = non_finite_at(value, root) or "a number"
    return NotFiniteError(
        f"{what}: {where} is not a finite number, which JSON cannot hold; nothing was written. "
        "A suite's prices, weights and limits, and every imported file, are held to finite "
        "numbers: please report how this one was made"
    )


@contextmanager
def writing(what: str, value: Any, root: str = "") -> Iterator[None]:
    """Encoding `value` (with `allow_nan=False`) inside: the ValueError a NaN or an infinity
    raises becomes a NotFiniteError naming `what` and where in `value` it sits."""
    try:
        yield
    except ValueError:
        if non_finite_at(value) is None:
            raise
        raise not_finite(what, value, root) from None


def dumps(value: Any, what: str, root: str = "", **options: Any) -> str:
    """`json.dumps(value, **options)` with NaN and infinities refused (NotFiniteError)."""
    with writing(what, value, root):
        return json.dumps(value, allow_nan=False, **options)


def encoder(**options: Any) -> json.JSONEncoder:
    """One reusable encoder that refuses NaN and infinities (ValueError; see `encode`)."""
    return json.JSONEncoder(allow_nan=False, **options)


def encode(coder: json.JSONEncoder, value: Any, what: str, root: str = "") -> str:
    """`coder.encode(value)`, a non-finite number a NotFiniteError naming `what` and where.
    (`writing`'s check without its context manager: a run encodes a few lines per item.)"""
    try:
        return coder.encode(value)
    except ValueError:
        if non_finite_at(value) is None:
            raise
        raise not_finite(what, value, root) from None


def finite_number(value: Any) -> bool:
    """Whether `value` is an int or float a float can hold: not NaN, not infinite, and no
    integer past the largest float (whose conversion would raise OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return -sys.float_info.max <= value <= sys.float_info.max
    return math.isfinite(value)


def non_finite_as_text(value: Any) -> Any:
    """`value` with each NaN or infinity in it replaced by its text (`inf`, `-inf`, `nan`),
    and tuples as lists: what an imported file's Python literal (`{'x': 1e400}`) or lenient
    JSON (`NaN`) holds, carried as text as a tool output holding them is, so a transcript made
    of it can be written and read back."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: non_finite_as_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [non_finite_as_text(v) for v in value]
    return value
