"""What a user turn changed in the tools' state, as a JSON Patch (RFC 6902).

A transcript held the whole state after every user turn: a 100-record state and five turns
made six copies per line, and a state near the 100,000-value limit over a few turns made lines
that `score` refused as too large to read. A turn's changes are what a reader of a transcript
wants to see anyway, and applying each turn's patch in order to the case's initial state gives
the state after any turn (any RFC 6902 library does it).

The declared environment never changes a state in place (an effect copies only the containers
on its path), so whatever a turn left alone is the very same object before and after: the
walk stops there, and a turn costs what it changed, not the size of the state. A Python
environment's snapshots may be fresh copies; they are compared by value, as JSON compares them
(a number by value, `true` never equal to 1).
"""

from __future__ import annotations

from typing import Any

from evalspec._suite.state.spec import MAX_DEPTH
from evalspec._suite.state.types import escape
from evalspec._tools.state import same

Patch = list[dict[str, Any]]
"""RFC 6902 operations: `add`, `remove` and `replace`, each with a `path` (RFC 6901)."""


def changes(before: Any, after: Any) -> Patch:
    """The patch that turns `before` into `after` (empty when they are equal). Its values are
    `after`'s own objects, not copies: write them, do not change them."""
    out: Patch = []
    _diff(before, after, "", 0, out)
    return out


def _diff(a: Any, b: Any, path: str, depth: int, out: Patch) -> None:
    if a is b:
        return
    if depth < MAX_DEPTH:
        if type(a) is dict and type(b) is dict:
            _diff_mapping(a, b, path, depth, out)
            return
        if type(a) is list and type(b) is list:
            _diff_list(a, b, path, depth, out)
            return
    if not same(a, b):
        out.append({"op": "replace", "path": path, "value": b})


def _diff_mapping(a: dict[str, Any], b: dict[str, Any], path: str, depth: int, out: Patch) -> None:
    out.extend({"op": "remove", "path": f"{path}/{escape(k)}"} for k in a if k not in b)
    for k, value in b.items():
        at = f"{path}/{escape(k)}"
        if k in a:
            _diff(a[k], value, at, depth + 1, out)
        else:
            out.append({"op": "add", "path": at, "value": value})


def _diff_list(a: list[Any], b: list[Any], path: str, depth: int, out: Patch) -> None:
    """Items both lists start and end with are kept; of the rest, each pair at the same place
    is compared in depth (one record changed: a patch inside it), then what is left of `a` is
    removed (last first, so the indices hold) and what is left of `b` is added."""
    start, end_a, end_b = 0, len(a), len(b)
    while start < end_a and start < end_b and _same_item(a[start], b[start]):
        start += 1
    while end_a > start and end_b > start and _same_item(a[end_a - 1], b[end_b - 1]):
        end_a -= 1
        end_b -= 1
    rest = min(end_a, end_b)  # pairs end here
    for i in range(start, rest):
        _diff(a[i], b[i], f"{path}/{i}", depth + 1, out)
    out.extend({"op": "remove", "path": f"{path}/{i}"} for i in range(end_a - 1, rest - 1, -1))
    out.extend({"op": "add", "path": f"{path}/{i}", "value": b[i]} for i in range(rest, end_b))


def _same_item(x: Any, y: Any) -> bool:
    return x is y or same(x, y)
