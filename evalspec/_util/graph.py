"""Object graphs evalspec does not own, copied as JSON within a budget.

A Python tool environment (BFCL's classes, a plugin's) keeps its state as objects that the
model's calls shape: BFCL's file system `cp` of a directory shares its children, so a few
calls make a graph whose tree, walked naively, is exponential in their number, and a link
back (a directory's `parent`, a list holding itself) makes it infinite. Every walk of such a
graph goes through `to_json`: it writes the tree a JSON encoder (and BFCL's own `==`) would
see, counting a shared part each time it is reached, and refuses with `GraphTooLarge` past
`max_nodes` values or `max_chars` characters of text, or at a cycle. It never hangs, and
costs at most the budget whatever the graph.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

MAX_NODES = 100_000
"""Values (every scalar, list, mapping and object, each time it is reached) in one copy: the
state language's own limit (`MAX_STATE_VALUES`)."""
MAX_CHARS = 16 * 1024 * 1024
"""Characters of text (strings and keys) in one copy."""
MAX_DEPTH = 100
"""Nesting of lists, mappings and objects: what a transcript line may hold for `score`."""

_SCALARS = (bool, int, float)


class GraphTooLarge(ValueError):
    """A foreign value past the budget, or one that refers back to itself."""


class _Cycle(GraphTooLarge):
    """A walk reached a container or object it is inside of."""


class _Walk:
    """One copy's budget and the path to where it is (for the message)."""

    def __init__(
        self,
        limits: tuple[int, int, int],
        objects: bool,
        too_deep: Any,
        number: Callable[[Any], Any] | None,
    ):
        self.max_nodes, self.max_chars, self.max_depth = limits
        self.nodes, self.chars = self.max_nodes, self.max_chars
        self.number = number
        self.objects = objects
        self.too_deep = too_deep
        self.path: list[str] = []
        self.open: set[int] = set()
        """Ids of the containers and objects being copied (the current path's)."""

    def where(self) -> str:
        return "/" + "/".join(self.path) if self.path else "the top"

    def spend(self, chars: int) -> None:
        self.nodes -= 1
        self.chars -= chars
        if self.nodes < 0:
            raise GraphTooLarge(f"it holds more than {self.max_nodes} values")
        if self.chars < 0:
            raise GraphTooLarge(f"it holds more than {self.max_chars} characters of text")

    def copy(self, value: Any, depth: int) -> Any:
        if depth > self.max_depth:
            if self.too_deep is not _REFUSE:
                return self.copy(self.too_deep, 0)
            raise GraphTooLarge(f"it nests deeper than {self.max_depth} levels at {self.where()}")
        if value is None:
            self.spend(4)
            return None
        if isinstance(value, str):
            self.spend(len(value) + 2)
            return value
        if isinstance(value, _SCALARS):
            if self.number is not None and not isinstance(value, bool):
                shown = self.number(value)
                if shown is not value:
                    return self.copy(shown, depth)
            self.spend(_digits(value))
            return value
        if id(value) in self.open:
            raise _Cycle(f"it refers back to itself at {self.where()}")
        if isinstance(value, dict | list | tuple | set | frozenset):
            return self._container(value, depth)
        if self.objects and hasattr(value, "__dict__"):
            return self._object(value, depth)
        return self.copy(str(value), depth)

    def _container(self, value: Any, depth: int) -> Any:
        self.spend(2)
        self.open.add(id(value))
        try:
            if isinstance(value, dict):
                out: dict[str, Any] = {}
                for key, item in value.items():
                    name = _key(key)
                    self.spend(len(name) + 3)
                    out[name] = self._step(name, item, depth)
                return out
            if isinstance(value, set | frozenset):
                value = sorted(value, key=repr)
            return [self._step(str(i), item, depth) for i, item in enumerate(value)]
        finally:
            self.open.discard(id(value))

    def _object(self, value: Any, depth: int) -> dict[str, Any]:
        """An object as its public attributes. One that is an object leading back into what is
        being copied (a directory's `parent`, or a stale one's after BFCL's `mv`) is left out:
        BFCL's `==` ignores it, and the copy is the tree."""
        self.spend(2)
        self.open.add(id(value))
        try:
            shown: dict[str, Any] = {"$class": type(value).__name__}
            for key, attr in vars(value).items():
                if key.startswith("_"):
                    continue
                self.spend(len(key) + 3)
                try:
                    shown[key] = self._step(key, attr, depth)
                except _Cycle:
                    if not hasattr(attr, "__dict__"):
                        raise
            return shown
        finally:
            self.open.discard(id(value))

    def _step(self, name: str, item: Any, depth: int) -> Any:
        self.path.append(name)
        try:
            return self.copy(item, depth + 1)
        finally:
            self.path.pop()


_REFUSE = object()


def to_json(
    value: Any,
    *,
    objects: bool = False,
    max_nodes: int = MAX_NODES,
    max_chars: int = MAX_CHARS,
    max_depth: int = MAX_DEPTH,
    too_deep: Any = _REFUSE,
    number: Callable[[Any], Any] | None = None,
) -> Any:
    """A copy of `value` as JSON: mappings (keys as JSON writes them), lists (tuples, and sets
    sorted by repr), scalars; any other object as `str()`, or with `objects` as its public
    attributes under `$class`. `too_deep` stands for what nests past `max_depth` (else refused);
    `number(n)` may give another value for a number. GraphTooLarge past the budget or at a
    cycle."""
    limits = (max_nodes, max_chars, max_depth)
    return _Walk(limits, objects, too_deep, number).copy(value, 0)


def _key(key: Any) -> str:
    """A mapping key as JSON text names it (`json.dumps` writes True as "true")."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return json.dumps(key)
    if isinstance(key, int | float):
        return repr(key) if isinstance(key, float) else int.__repr__(key)
    return str(key)


def _digits(value: bool | int | float) -> int:
    """About the characters a number's JSON text takes (without writing it)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() * 3 // 10 + 2
    return 24
