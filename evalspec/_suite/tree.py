"""Plain data that remembers where it came from: what the loader produces for every stage."""

from __future__ import annotations

from typing import Any, NamedTuple


class Pos(NamedTuple):
    """Where a node stands (a tuple: a large suite has a hundred thousand of them)."""

    file: str
    line: int
    """1-based."""
    column: int
    """1-based."""


class LDict(dict[str, Any]):
    """A mapping from YAML that knows where it and each of its keys and values stand."""

    __slots__ = ("key_pos", "pos", "value_pos")  # no per-instance __dict__: 50,000 cases
    pos: Pos
    key_pos: dict[str, Pos]
    value_pos: dict[str, Pos]


class LList(list[Any]):
    """A sequence from YAML that knows where it and each of its items stand."""

    __slots__ = ("item_pos", "pos")
    pos: Pos
    item_pos: list[Pos]


def ldict(pos: Pos, items: dict[str, Any] | None = None) -> LDict:
    d = LDict(items or {})
    d.pos = pos
    d.key_pos = {}
    d.value_pos = {}
    for k in d:
        d.key_pos[k] = pos
        d.value_pos[k] = getattr(d[k], "pos", pos)
    return d


def llist(pos: Pos, items: list[Any] | None = None, item_pos: list[Pos] | None = None) -> LList:
    lst = LList(items or [])
    lst.pos = pos
    lst.item_pos = item_pos if item_pos is not None else [getattr(i, "pos", pos) for i in lst]
    return lst
