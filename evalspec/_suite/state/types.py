"""The shapes a compiled behaviour is made of: references, templates, checks, effects.

Plain frozen records and the walk that lists their references, with no parsing and no running,
so that the compiler (`spec`), the computed forms (`computed`) and the engine
(`evalspec._tools.state`) all depend on this one module and never on each other in a circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


class SpecProblem(Exception):
    """Something wrong in a behaviour, at `where` (keys under `behavior:`)."""

    def __init__(self, where: tuple[Any, ...], message: str, hint: str):
        super().__init__(message)
        self.where = where
        self.message = message
        self.hint = hint


@dataclass(frozen=True, slots=True)
class Ref:
    """A run-time reference: an argument, a value of the state or the size of one, a `let:`
    value, an item of a walk."""

    kind: str
    """args | state | count | let (a `let:` value) | each (the item of a `$each`/`for_each`)"""
    name: str = ""
    """The argument's or `let:` value's name (kind args, let); the item's (kind each: a walk's
    `{NAME: LIST}`), "" for the item of a walk of one plain list."""
    pointer: tuple[str, ...] = ()
    """Path parts in the state (kind state / count), when all are written out."""
    path: Path | None = None
    """A pointer whose parts hold references (`${state/orders/${args.id}/status}`), filled
    when the tool is called; `pointer` is then empty."""

    def __str__(self) -> str:
        if self.kind in ("args", "let"):
            return f"${{{self.kind}.{self.name}}}"
        head = f"each.{self.name}" if self.kind == "each" and self.name else self.kind
        if self.path is not None:
            return "${" + head + self.path.source + "}"
        return "${" + head + "".join("/" + escape(p) for p in self.pointer) + "}"

    @property
    def root(self) -> str | None:
        """The first key of the state it reads; None for the whole state or a first key that
        a reference names (or it reads no state: an argument, a `let:` value, an item)."""
        if self.kind not in ("state", "count"):
            return None
        if self.path is not None:
            first = self.path.parts[0] if self.path.parts else None
            return first if isinstance(first, str) else None
        return self.pointer[0] if self.pointer else None


@dataclass(frozen=True, slots=True)
class Text:
    """A text with references in it: parts are literal text or `Ref`s."""

    parts: tuple[str | Ref, ...]


@dataclass(frozen=True, slots=True)
class Select:
    """`{$select: PATH, $where: {...}, $first: true}`: the records of a list that match."""

    path: Path
    where: Any = None
    first: bool = False
    key: bool = False
    """`$key: true`: the keys of the matching values of a mapping (indexes of a list's
    records), not the values: the id of a record kept by id."""
    source: Ref | None = None
    """`$select: "${args.ids}"`: select from a value a reference gives, not from the state
    (`path` is then the whole state, unused)."""
    ignore_case: bool = False
    """`$ignore_case: true`: texts in `$where` match whatever their case (lowercased on both
    sides, as Python's str.lower does)."""


@dataclass(frozen=True, slots=True)
class Tree:
    """A list or mapping holding references somewhere below (constant ones stay plain)."""

    value: Any
    """dict[str, template] or list[template]."""


@dataclass(frozen=True, slots=True)
class Path:
    """A JSON Pointer whose parts may hold references (each fills one part)."""

    parts: tuple[str | Text, ...]
    source: str = ""

    def __str__(self) -> str:
        return self.source or "/"


@dataclass(frozen=True, slots=True)
class Check:
    """One precondition: a subject (a path of the state, or a value) and its tests."""

    path: Path | None
    value: Any
    """A template, when there is no path."""
    tests: tuple[tuple[str, Any], ...]
    """(op, operand template) in written order; `exists` takes a bool."""
    error: Any = None
    """The error observation (a template); None: a generated one."""
    any_of: tuple[Check, ...] = ()
    """`any_of:` alternatives (then no path, value or tests): holds when one of them holds."""
    for_each: Any = None
    """`{for_each: LIST, checks: [...]}` (a `computed.Walk`): `checks` hold for each
    item in turn."""
    checks: tuple[Check, ...] = ()


@dataclass(frozen=True, slots=True)
class Effect:
    op: str
    path: Path
    value: Any = None
    where: Any = None
    """A template mapping: act on each record of the list at `path` that matches."""
    at: Path | None = None
    """With `where`: the place inside each matching record."""
    by: Any = 1
    round: int | None = None
    """increment / decrement: round the result to this many decimal places (money: 2)."""
    when: tuple[Check, ...] = ()
    """Checks that must all hold for the effect to apply; else it is skipped."""
    for_each: Any = None
    """A walk (`computed.Walk`): the effect applies once per item, `${each...}` reading
    it."""
    first: bool = False
    """With `where`: only the first record that matches."""


@dataclass(frozen=True, slots=True)
class Behavior:
    """What a stateful tool does: checks, then effects (all or nothing), then its answer."""

    preconditions: tuple[Check, ...] = ()
    effects: tuple[Effect, ...] = ()
    response: Any = None
    has_response: bool = False
    arguments: frozenset[str] = field(default=frozenset(), compare=False)
    """Every argument a reference names (checked against the tool's parameters); derived from
    the parts above, so not compared: a review names the part that changed, not this."""
    lets: tuple[tuple[str, Any], ...] = ()
    """`let:` values by name, in order: computed when first read, on the state the call
    found."""


def references(template: Any) -> list[Ref]:
    """Every reference in a compiled template or path."""
    out: list[Ref] = []
    stack = [template]
    while stack:
        node = stack.pop()
        if isinstance(node, Ref):
            out.append(node)
            if node.path is not None:
                stack.append(node.path)
        elif isinstance(node, Text):
            stack.extend(node.parts)
        elif isinstance(node, Tree):
            stack.extend(node.value.values() if isinstance(node.value, dict) else node.value)
        elif isinstance(node, Select):
            stack.extend((node.path, node.where, node.source))
        elif isinstance(node, Path):
            stack.extend(node.parts)
        elif isinstance(node, Check):
            stack.extend((node.path, node.value, node.error, *(t[1] for t in node.tests)))
            stack.extend((*node.any_of, node.for_each, *node.checks))
        elif isinstance(node, Effect):
            stack.extend((node.path, node.value, node.where, node.at, node.by))
            stack.extend((*node.when, node.for_each))
    return out
