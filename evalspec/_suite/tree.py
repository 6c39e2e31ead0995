"""Plain data that remembers where it came from: what the loader produces for every stage."""

from __future__ import annotations

from typing import Any, Generic, NamedTuple, TypeVar, overload

T = TypeVar("T")


class Pos(NamedTuple):
    """Where a node stands (a tuple: a large suite has a hundred thousand of them)."""

    file: str
    line: int
    """1-based."""
    column: int
    """1-based."""


_new_tuple = tuple.__new__


def mark_pos(file: str, mark: Any) -> Pos:
    """The position of a parser's mark (0-based line and column) in `file`."""
    return _new_tuple(Pos, (file, mark.line + 1, mark.column + 1))


class _Unpacked(Generic[T]):
    """A table of positions made from the container's marks when first read (then kept)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    @overload
    def __get__(self, obj: None, owner: type) -> _Unpacked[T]: ...
    @overload
    def __get__(self, obj: LDict | LList, owner: type) -> T: ...
    def __get__(self, obj: LDict | LList | None, owner: type) -> T | _Unpacked[T]:
        if obj is None:
            return self
        try:
            found: T = getattr(obj, self.slot)
        except AttributeError:
            obj.unpack()
            found = getattr(obj, self.slot)
        return found

    def __set__(self, obj: LDict | LList, value: T) -> None:
        setattr(obj, self.slot, value)


class _Start:
    """`pos`: where the container starts, made from the parser's mark in `start` when first
    read (most containers' never is), or as set."""

    @overload
    def __get__(self, obj: None, owner: type) -> _Start: ...
    @overload
    def __get__(self, obj: LDict | LList, owner: type) -> Pos: ...
    def __get__(self, obj: LDict | LList | None, owner: type) -> Pos | _Start:
        if obj is None:
            return self
        start = obj.start  # AttributeError when never given, as for any unset slot
        if isinstance(start, tuple):
            return start  # type: ignore[return-value]  # a Pos: tuples are never marks
        pos = obj.start = mark_pos(obj.file, start)
        return pos

    def __set__(self, obj: LDict | LList, value: Pos) -> None:
        obj.start = value


class LDict(dict[str, Any]):
    """A mapping from YAML that knows where it and each of its keys and values stand.

    The YAML tree builder leaves the parser's marks of each key and value in `marks`, in the
    order written; `key_pos` and `value_pos` are made from them when first read: most are
    never read (a valid case needs a few), and a 50,000-case suite writes 1.4 million."""

    __slots__ = ("_key_pos", "_value_pos", "file", "marks", "start")  # no __dict__
    pos = _Start()
    start: Any
    """Its Pos, or the parser's mark of its start until `pos` is first read."""
    file: str
    marks: list[Any] | None
    """Marks of key, value, key, value, ... (None once read into positions)."""
    key_pos = _Unpacked[dict[str, Pos]]()
    value_pos = _Unpacked[dict[str, Pos]]()

    def unpack(self) -> None:
        """Positions from the marks; keys added since (by `<<:`) come with their own."""
        file, marks, keys = self.file, self.marks or [], list(self)
        self._key_pos = {k: mark_pos(file, m) for k, m in zip(keys, marks[0::2], strict=False)}
        self._value_pos = {k: mark_pos(file, m) for k, m in zip(keys, marks[1::2], strict=False)}
        self.marks = None


class LList(list[Any]):
    """A sequence from YAML that knows where it and each of its items stand (made from the
    parser's marks when first read, as LDict's)."""

    __slots__ = ("_item_pos", "file", "marks", "start")
    pos = _Start()
    start: Any
    file: str
    marks: list[Any] | None
    item_pos = _Unpacked[list[Pos]]()

    def unpack(self) -> None:
        file = self.file
        self._item_pos = [mark_pos(file, m) for m in self.marks or ()]
        self.marks = None


def item_pos(items: LList, i: int) -> Pos:
    """`items.item_pos[i]`, without making the positions of the whole list when they are
    still the parser's marks (a valid case reads one or two of them)."""
    marks = getattr(items, "marks", None)
    if marks is not None:
        return mark_pos(items.file, marks[i])
    found: Pos = items.item_pos[i]
    return found


def share_positions(target: LDict, source: LDict) -> None:
    """Give `target`, which holds some of `source`'s keys, `source`'s positions: its marks when
    they are unread and the keys are the same (most cases: nothing is made from them)."""
    target.pos = source.pos
    marks = getattr(source, "marks", None)
    if marks is not None and len(target) == len(source):
        target.file, target.marks = source.file, marks
    else:
        target.key_pos, target.value_pos = source.key_pos, source.value_pos


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
