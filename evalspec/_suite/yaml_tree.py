"""Build positioned plain data straight from YAML parser events, in one iterative pass.

No PyYAML node graph is composed and nothing recurses, so a 5,000-case suite reads in half the
time and no nesting depth can exhaust a stack (libyaml's own composer crashes the process at
~100,000 levels). On the way it enforces what a suite may hold:
- only the safe core tags (nothing is ever constructed from a tag);
- duplicate keys are errors, keys are text;
- at most MAX_DEPTH levels, and at most MAX_NODES values and MAX_ALIAS_CHARS characters of text
  added by expanding aliases: an alias reuses the anchored value (no copy), so a "billion laughs"
  document, or one long text repeated across thousands of rows, is refused at the first
  collection whose expanded size is too large, having allocated almost nothing;
- at most `max_values()` values written out (2,000,000 unless EVALSPEC_MAX_SUITE_VALUES says
  otherwise), so a 50,000-case suite loads while memory stays bounded by the file.

Each container keeps the parser's marks of what it holds; positions are made from them only
when read (tree.py), as most never are.

Given a `CaseSink`, the builder hands each item of the top-level `cases:` list (or, for an
included file of cases, of the list at its root) to it as soon as the item is complete instead
of keeping it, so a large suite is checked one case at a time.
"""

from __future__ import annotations

import math
import re
from typing import Any, Protocol

import yaml

from evalspec._suite.limits import MAX_TOOLS_ENV, env_limit, max_tools
from evalspec._suite.tree import LDict, LList, Pos, mark_pos
from evalspec._util.errors import Problem, SpecError

MAX_DEPTH = 64
MAX_NODES = 200_000
MAX_ALIAS_CHARS = 16 * 1024 * 1024
"""Characters of text aliases may add beyond what the file writes out: as much as the largest
suite file holds. Counting values alone let one 1 MB text aliased 10,000 times through (66 s to
validate: every later stage handles each copy)."""
DEFAULT_MAX_VALUES = 2_000_000
_new_tuple = tuple.__new__
MAX_VALUES_ENV = "EVALSPEC_MAX_SUITE_VALUES"


def max_values() -> int:
    """How many values a suite may write out: the default, or the environment's setting."""
    return env_limit(MAX_VALUES_ENV, DEFAULT_MAX_VALUES)


_CORE = "tag:yaml.org,2002:"
_SEQ_TAG = _CORE + "seq"
_MAP_TAG = _CORE + "map"
_MERGE_TAG = _CORE + "merge"
_STR_TAG = _CORE + "str"
_TEXT_TAGS = {_STR_TAG, _CORE + "timestamp"}
_SURROGATE = re.compile("[\ud800-\udfff]")

_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_SCALARS = {
    _CORE + "int": yaml.constructor.SafeConstructor.construct_yaml_int,
    _CORE + "float": yaml.constructor.SafeConstructor.construct_yaml_float,
    _CORE + "bool": yaml.constructor.SafeConstructor.construct_yaml_bool,
    _CORE + "null": yaml.constructor.SafeConstructor.construct_yaml_null,
}
_RESOLVER = yaml.resolver.Resolver()
_MAY_RESOLVE = frozenset(_RESOLVER.yaml_implicit_resolvers)
"""First characters (and "", for the empty text) of plain scalars that may be read as
something other than text: a plain scalar starting with any other character, and any quoted
one, is text without asking the resolver (there are no path or wildcard resolvers)."""
_WORDS = frozenset(
    word
    for base in ("yes", "no", "true", "false", "on", "off", "null")
    for word in (base, base.title(), base.upper())
)
"""Every plain text starting with a letter that the resolver reads as a boolean or null."""
_WORD_STARTS = frozenset(
    first
    for first, resolvers in _RESOLVER.yaml_implicit_resolvers.items()
    if first.isalpha() and {tag for tag, _ in resolvers} <= {_CORE + "bool", _CORE + "null"}
)
"""First letters after which only `_WORDS` are read as anything but text (`name`, `tool_0`,
`note` are text without asking the resolver's regular expressions)."""
_ScalarEvent, _AliasEvent = yaml.ScalarEvent, yaml.AliasEvent
_SequenceStartEvent, _MappingStartEvent = yaml.SequenceStartEvent, yaml.MappingStartEvent
_NO_KEY = object()
_MERGE = object()


class CaseSink(Protocol):
    """Takes the top-level `cases:` items one at a time, as the parser completes them."""

    def start(self, root: LDict) -> None:
        """`cases:` begins; `root` holds every top-level key written before it."""

    def case(self, item: Any, pos: Pos, braces: bool) -> None:
        """One complete item of `cases:` (the builder keeps no reference to it). `braces` is
        False when no text in it holds a `{` and it uses no *alias: it has no template."""

    def key_after_cases(self, key: str) -> None:
        """A top-level key written after `cases:` (the sink may refuse to go on)."""


class DocPath:
    """A document path, turned into text only when an error needs it."""

    __slots__ = ("key", "parent")

    def __init__(self, parent: DocPath | None, key: str | int):
        self.parent = parent
        self.key = key

    def __str__(self) -> str:
        head = str(self.parent) if self.parent is not None else ""
        if isinstance(self.key, int):
            return f"{head}[{self.key}]"
        return f"{head}.{self.key}" if head else self.key


class _Frame:
    """A mapping or sequence under construction."""

    __slots__ = (
        "anchor",
        "at",
        "chars",
        "key",
        "key_mark",
        "mark",
        "marks",
        "max_items",
        "merges",
        "size",
        "streamed",
        "up",
        "value",
    )

    def __init__(
        self, value: LDict | LList, mark: Any, anchor: str | None, up: _Frame | None, at: Any
    ):
        self.value = value
        self.marks: list[Any] = []
        """The value's own list of marks (LDict.marks, LList.marks): appended to inline."""
        self.mark = mark
        self.anchor = anchor
        self.up = up
        self.at = at
        """Its key or index in `up`; None for a `<<:` source (which has its parent's path)."""
        self.size = 1
        self.chars = 0
        """Characters of text in the value once every alias in it is expanded."""
        self.key: Any = _NO_KEY
        self.key_mark: Any = None
        self.merges: list[tuple[LDict, int]] | None = None
        self.max_items = -1
        """-1, or (for the top-level `tools:` list) how many items it may hold."""
        self.streamed = -1
        """-1, or (for the `cases:` list handed to a sink) how many items went to the sink."""

    @property
    def path(self) -> DocPath | None:
        """The value's document path, made only for an error message."""
        up = self.up
        if up is None:
            return None
        return up.path if self.at is None else DocPath(up.path, self.at)


_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}
"""Tags of short plain texts already resolved: keys like `name:` recur in every case."""


def _tag_of(event: Any) -> str:
    """The scalar's tag as written, or the one its plain text implies (5 → int, yes → str)."""
    tag: str | None = event.tag
    if tag is None or tag == "!":
        value, implicit = event.value, event.implicit
        # types-PyYAML leaves Resolver.resolve unannotated; it returns the tag, a str.
        if len(value) > 24:
            tag_of_text: str = _RESOLVER.resolve(yaml.ScalarNode, value, implicit)  # type: ignore[no-untyped-call]
            return tag_of_text
        key = (value, implicit)
        found = _RESOLVED.get(key)
        if found is None:
            resolved: str = _RESOLVER.resolve(yaml.ScalarNode, value, implicit)  # type: ignore[no-untyped-call]
            if len(_RESOLVED) < 4096:
                _RESOLVED[key] = resolved
            return resolved
        return found
    return tag


_PLAIN_TEXT: dict[str, bool] = {}
"""Whether a plain scalar's short text is surely ASCII text, by text: keys recur in every case."""


def _plain_text(text: str) -> bool:
    """Whether the plain scalar `text` is surely ASCII text, without the resolver."""
    sure = (
        text[:1] not in _MAY_RESOLVE
        or (text[:1] in _WORD_STARTS and text not in _WORDS and "\n" not in text)
    ) and text.isascii()
    if len(text) <= 32 and len(_PLAIN_TEXT) < 4096:
        _PLAIN_TEXT[text] = sure
    return sure


class TreeBuilder:
    """Consumes the events of one YAML stream (from libyaml's or PyYAML's parser)."""

    def __init__(
        self, parser: Any, file: str, sink: CaseSink | None = None, root_list: bool = False
    ):
        self.parser = parser
        self.file = file
        self.root_list = root_list
        """With a sink: stream the items of a list at the document's root (an included file of
        cases) instead of the top-level `cases:` list of a suite."""
        self.count = 0
        self.written = 0
        """Characters of text the file writes out (keys aside)."""
        self.limit = max_values()
        self.anchors: dict[str, tuple[Any, int, int, Pos]] = {}
        """By name: the anchored value, its size in values and in characters, its place."""
        self.merge_chars: dict[int, int] = {}
        """Characters of each anchored mapping, by id: what a `<<:` merge of it adds."""
        self.sink = sink
        self.cases_done = False
        self.braces = 0
        """Texts holding `{`, and aliases, seen so far: a case during which it did not grow
        holds no template, and nobody needs to look for one."""
        self.braces_before = 0

    def pos(self, mark: Any) -> Pos:
        return mark_pos(self.file, mark)

    def fail(self, mark: Any, message: str, hint: str, path: DocPath | None = None) -> SpecError:
        return SpecError(
            [
                Problem(
                    self.file,
                    mark.line + 1,
                    mark.column + 1,
                    str(path) if path is not None else "",
                    message,
                    hint,
                )
            ]
        )

    def build(self) -> tuple[Any, Pos] | None:
        """The single document's value and where it starts; None for an empty stream."""
        p = self.parser
        p.get_event()  # stream start
        if p.check_event(yaml.StreamEndEvent):
            return None
        p.get_event()  # document start
        result = self._document()
        p.get_event()  # document end
        if not p.check_event(yaml.StreamEndEvent):
            extra = p.get_event()
            raise self.fail(
                extra.start_mark,
                "the file holds more than one YAML document",
                "remove the `---` line: a suite is one document",
            )
        return result

    def _document(self) -> tuple[Any, Pos]:
        get_event = self.parser.get_event
        file = self.file
        stack: list[_Frame] = []
        parent: _Frame | None = None
        """The innermost open container (the top of `stack`), kept as the stack changes."""
        while True:
            event = get_event()
            kind = type(event)
            if kind is _ScalarEvent:
                if len(stack) >= MAX_DEPTH:
                    raise self._too_deep(event.start_mark)
                text = event.value
                # Surely ASCII text (what _tag_of would say, without asking it).
                if event.tag is not None:
                    simple = False
                elif event.implicit[0]:
                    known = _PLAIN_TEXT.get(text)
                    simple = _plain_text(text) if known is None else known
                else:
                    simple = text.isascii()
                if parent is not None and parent.key is _NO_KEY and type(parent.value) is LDict:
                    key = text
                    if (
                        (
                            simple
                            or (
                                event.tag is None
                                and _RESOLVED.get((key, event.implicit)) == _STR_TAG
                                and key.isascii()
                            )
                        )
                        and not self.cases_done
                        and key not in parent.value
                    ):
                        # The common key, inline: plain ASCII text, seen before, not repeated.
                        if "{" in key:
                            self.braces += 1
                        parent.key = key
                        parent.key_mark = event.start_mark
                        continue
                    self._key(parent, event)
                    continue
                self.count += 1
                if self.count > self.limit:
                    raise self._too_many(event.start_mark, self._child_path(parent))
                tag = _STR_TAG if simple else _tag_of(event)
                mark = event.start_mark
                chars = len(text)
                self.written += chars
                if (simple or (tag in _TEXT_TAGS and text.isascii())) and parent is not None:
                    # The common case, inline: plain ASCII text into a mapping or a list.
                    if "{" in text:
                        self.braces += 1
                    if event.anchor:
                        self.anchors[event.anchor] = (text, 1, chars, self.pos(mark))
                    container = parent.value
                    if parent.streamed >= 0:
                        self._stream(parent, text, 1, chars, mark)
                        continue
                    if type(container) is LList:
                        container.append(text)
                        parent.marks.append(mark)
                        parent.size += 1
                        parent.chars += chars
                        continue
                    key = parent.key
                    if key is not _MERGE:
                        container[key] = text
                        marks = parent.marks
                        marks.append(parent.key_mark)
                        marks.append(mark)
                        parent.size += 1
                        parent.chars += chars
                        parent.key = _NO_KEY
                        continue
                value = self._value(event, tag, parent, False)
                size = 1
                if event.anchor:
                    self.anchors[event.anchor] = (value, 1, chars, self.pos(mark))
            elif kind is _AliasEvent:
                if parent is not None and parent.key is _NO_KEY and type(parent.value) is LDict:
                    raise self.fail(
                        event.start_mark,
                        "a key must be plain text, not an *alias",
                        "write keys as plain words, like `name:`",
                        parent.path,
                    )
                if event.anchor not in self.anchors:
                    raise self.fail(
                        event.start_mark,
                        f"*{event.anchor} refers to no &{event.anchor} defined before it",
                        f"define `&{event.anchor}` on a value above this line",
                        stack[-1].path if stack else None,
                    )
                value, size, chars, _ = self.anchors[event.anchor]
                mark = event.start_mark
                self.braces += 1
            elif kind is _SequenceStartEvent or kind is _MappingStartEvent:
                # The common container, inline: inside another one below the top level, no
                # tag, under a key or in a list; `_open` takes every other.
                depth = len(stack)
                if (
                    depth >= 2
                    and depth < MAX_DEPTH
                    and event.tag is None
                    and self.count < self.limit
                    and parent is not None
                ):
                    up = parent.value
                    if type(up) is LList:
                        at: Any = len(up) + (parent.streamed if parent.streamed > 0 else 0)
                    else:
                        at = parent.key
                    if at is not _NO_KEY and at is not _MERGE:
                        self.count += 1
                        mark = event.start_mark
                        value = LList() if kind is _SequenceStartEvent else LDict()
                        frame = _Frame(value, mark, event.anchor, parent, at)
                        value.marks = frame.marks
                        value.file = file
                        value.start = mark
                        stack.append(frame)
                        parent = frame
                        continue
                parent = self._open(event, stack)
                stack.append(parent)
                continue
            else:  # the end of a sequence or mapping
                frame = stack.pop()
                parent = frame.up
                if (
                    parent is not None
                    and frame.streamed < 0
                    and not frame.anchor
                    and frame.merges is None
                ):
                    # Attached inline, as `_close` and `_attach` would, when nothing is special
                    # about it or its parent (no `<<:`, &anchor, limit, stream or `tools:`).
                    size, chars = frame.size, frame.chars
                    container = parent.value
                    held = container.marks
                    if (
                        held is not None
                        and parent.streamed < 0
                        and size <= MAX_NODES + self.count
                        and chars <= MAX_ALIAS_CHARS + self.written
                    ):
                        if type(container) is LList:
                            if parent.max_items < 0:
                                container.append(frame.value)
                                held.append(frame.mark)
                                parent.size += size
                                parent.chars += chars
                                continue
                        else:
                            key = parent.key
                            if key is not _NO_KEY and key is not _MERGE:
                                container[key] = frame.value
                                held.append(parent.key_mark)
                                held.append(frame.mark)
                                parent.key = _NO_KEY
                                parent.size += size
                                parent.chars += chars
                                continue
                value, size, mark = self._close(frame), frame.size, frame.mark
                chars = frame.chars
            if parent is None:
                return value, self.pos(mark)
            self._attach(parent, value, size, chars, mark)

    def _too_many(self, mark: Any, path: DocPath | None) -> SpecError:
        return self.fail(
            mark,
            f"the document holds more than {self.limit} values",
            f"split it into several suites, or raise the limit with {MAX_VALUES_ENV}",
            path,
        )

    def _open(self, event: Any, stack: list[_Frame]) -> _Frame:
        mark = event.start_mark
        parent = stack[-1] if stack else None
        at: Any = None
        if parent is not None:
            if type(parent.value) is LList:
                at = len(parent.value) + (parent.streamed if parent.streamed > 0 else 0)
            elif parent.key is _NO_KEY:
                raise self.fail(
                    mark,
                    "a key must be plain text, not a list or mapping",
                    "write keys as plain words, like `name:`",
                    parent.path,
                )
            elif parent.key is not _MERGE:
                at = parent.key
        if len(stack) >= MAX_DEPTH:
            raise self._too_deep(mark)
        self.count += 1
        if self.count > self.limit:
            raise self._too_many(mark, self._child_path(parent))
        is_seq = type(event) is _SequenceStartEvent
        tag = event.tag
        if tag is not None and tag != "!" and tag != (_SEQ_TAG if is_seq else _MAP_TAG):
            raise self._bad_tag(mark, tag, self._child_path(parent))
        value: LDict | LList = LList() if is_seq else LDict()
        frame = _Frame(value, mark, event.anchor, parent, at)
        value.marks = frame.marks
        value.file = self.file
        value.start = mark
        if is_seq and len(stack) == 1 and parent is not None:
            self._top_level_list(parent, frame)
        elif is_seq and parent is None and self.root_list and self.sink is not None:
            frame.streamed = 0
            self.braces_before = self.braces
        return frame

    def _top_level_list(self, parent: _Frame, frame: _Frame) -> None:
        """`tools:` is bounded while it is read; `cases:` goes to the sink, if there is one."""
        if parent.key == "tools":
            frame.max_items = max_tools()  # refused while parsing: no tree of 100,000 tools
        if (
            self.sink is not None
            and not self.root_list
            and parent.key == "cases"
            and isinstance(parent.value, LDict)  # always: only a mapping has keys
            and not parent.merges  # `<<:` keys arrive only when the root closes
        ):
            self.sink.start(parent.value)
            frame.streamed = 0
            self.braces_before = self.braces

    def _close(self, frame: _Frame) -> Any:
        value = frame.value
        if frame.streamed >= 0:
            self.cases_done = True
        if frame.merges:
            self._merge(frame)
        self._check_expansion(frame)
        if frame.anchor:
            self.anchors[frame.anchor] = (value, frame.size, frame.chars, value.pos)
            if isinstance(value, LDict):
                self.merge_chars[id(value)] = frame.chars
        return value

    def _check_expansion(self, frame: _Frame) -> None:
        """Refuse a value whose aliases add more than MAX_NODES values or MAX_ALIAS_CHARS
        characters to what the file writes out."""
        if frame.size > MAX_NODES + self.count:
            raise self.fail(
                frame.mark,
                "this value repeats *aliases so often that it expands to more than "
                f"{MAX_NODES} values",
                "write the data out, or repeat an &anchor only a few times",
            )
        if frame.chars > MAX_ALIAS_CHARS + self.written:
            raise self.fail(
                frame.mark,
                "this value repeats *aliases so often that it expands to "
                f"{frame.chars - self.written} more characters of text than the file writes "
                f"out; the limit is {MAX_ALIAS_CHARS}",
                "repeat a long text through a template variable in fewer places, or write it "
                "out once per use",
            )

    @staticmethod
    def _child_path(parent: _Frame | None) -> DocPath | None:
        if parent is None:
            return None
        if isinstance(parent.value, LList):
            return DocPath(parent.path, len(parent.value) + max(parent.streamed, 0))
        key = parent.key
        return DocPath(parent.path, key) if isinstance(key, str) else parent.path

    def _attach(self, parent: _Frame, value: Any, size: int, chars: int, mark: Any) -> None:
        container = parent.value
        if isinstance(container, LList):
            if parent.streamed >= 0:
                self._stream(parent, value, size, chars, mark)
                return
            if len(container) == parent.max_items:
                raise self.fail(
                    mark,
                    f"the suite defines more than {parent.max_items} tools",
                    f"split the suite, or raise the limit with {MAX_TOOLS_ENV}",
                    parent.path,
                )
            container.append(value)
            if container.marks is None:  # its positions were read while it was open
                container.item_pos.append(self.pos(mark))
            else:
                container.marks.append(mark)
            parent.size += size
            parent.chars += chars
            return
        if parent.key is _NO_KEY:
            return  # keys are taken in _scalar, which sees them first
        if parent.key is _MERGE:
            self._take_merge_sources(parent, value, mark)
        else:
            key = parent.key
            container[key] = value
            if container.marks is None:  # the root, read by the sink when `cases:` began
                container.key_pos[key] = self.pos(parent.key_mark)
                container.value_pos[key] = self.pos(mark)
            else:
                container.marks.append(parent.key_mark)
                container.marks.append(mark)
            parent.size += size
            parent.chars += chars
        parent.key = _NO_KEY

    def _stream(self, frame: _Frame, value: Any, size: int, chars: int, mark: Any) -> None:
        """Hand one `cases:` item to the sink, keeping the alias-expansion bound of the list."""
        frame.size += size
        frame.chars += chars
        self._check_expansion(frame)
        frame.streamed += 1
        braces, self.braces_before = self.braces != self.braces_before, self.braces
        assert self.sink is not None  # a frame streams only when there is a sink
        self.sink.case(value, self.pos(mark), braces)

    # ------------------------------------------------------------------ scalars and keys

    def _scalar(self, event: Any, parent: _Frame | None) -> Any:
        # The value's document path is worked out only if it is wrong (it is rarely needed).
        self.count += 1
        if self.count > self.limit:
            raise self._too_many(event.start_mark, self._child_path(parent))
        return self._value(event, _tag_of(event), parent, False)

    def _value(self, event: Any, tag: str, parent: _Frame | None, is_key: bool) -> Any:
        """A scalar's value; `parent` and `is_key` say where it stands, for error messages."""
        mark = event.start_mark
        if tag in _TEXT_TAGS:
            text = event.value
            if "{" in text:
                self.braces += 1
            bad = None if text.isascii() else _SURROGATE.search(text)
            if bad:
                raise self.fail(
                    mark,
                    f"the text holds a lone surrogate escape \\u{ord(bad.group()):04x}, "
                    "which is not a character",
                    "write the character itself, or escape it as \\UXXXXXXXX",
                    self._where(parent, is_key),
                )
            # Dates stay text: critics and templates compare them as the user wrote them.
            return text
        construct = _SCALARS.get(tag)
        if construct is None:
            raise self._bad_tag(mark, tag, self._where(parent, is_key))
        try:
            value = construct(_CONSTRUCTOR, yaml.ScalarNode(tag, event.value, mark, mark))
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            raise self.fail(
                mark,
                f"cannot read the value {event.value!r}: {exc}",
                "quote it as text",
                self._where(parent, is_key),
            ) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(
                mark,
                f"{event.value} is not a finite number (NaN and infinities are refused)",
                "write a finite number, or quote it if it is meant as text",
                self._where(parent, is_key),
            )
        return value

    def _key(self, frame: _Frame, event: Any) -> None:
        mark = event.start_mark
        if self.cases_done and frame.path is None and self.sink is not None:
            self.sink.key_after_cases(str(event.value))
        tag = _tag_of(event)
        if tag == _MERGE_TAG:
            frame.key = _MERGE
            return
        key = self._value(event, tag, frame, True)
        if key is None or isinstance(key, bool | float):
            raise self.fail(
                mark,
                f"the key {event.value or '(empty)'} must be text",
                f'put it in quotes: "{event.value}"',
                frame.path,
            )
        key = str(key)
        mapping = frame.value
        assert isinstance(mapping, LDict)  # a key is read only inside a mapping
        if key in mapping:
            first = mapping.key_pos[key]
            raise self.fail(
                mark,
                f"duplicate key {key!r} (first given on line {first.line})",
                "remove one of them; the later one would silently replace the first",
                DocPath(frame.path, key),
            )
        frame.key = key
        frame.key_mark = mark

    def _where(self, parent: _Frame | None, is_key: bool) -> DocPath | None:
        if is_key:
            return parent.path if parent is not None else None
        return self._child_path(parent)

    def _too_deep(self, mark: Any) -> SpecError:
        return self.fail(
            mark,
            f"the data nests deeper than {MAX_DEPTH} levels",
            "flatten it: a suite never needs this much nesting",
        )

    def _bad_tag(self, mark: Any, tag: str, path: DocPath | None) -> SpecError:
        shown = "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag
        return self.fail(
            mark,
            f"the tag {shown} is not allowed (nothing in a suite is run or constructed)",
            "suites hold plain data only: remove the tag",
            path,
        )

    # ------------------------------------------------------------------ merge keys

    def _take_merge_sources(self, frame: _Frame, value: Any, mark: Any) -> None:
        sources = value if isinstance(value, LList) else [value]
        for src in sources:
            if not isinstance(src, LDict):
                raise self.fail(
                    mark,
                    "`<<` merges only mappings",
                    "write `<<: *anchor_of_a_mapping`",
                    frame.path,
                )
            if frame.merges is None:
                frame.merges = []
            frame.merges.append((src, len(src)))
            frame.chars += self.merge_chars.get(id(src), 0)

    def _merge(self, frame: _Frame) -> None:
        """`<<: *defaults` copies keys the mapping does not set itself (the first source wins)."""
        mapping = frame.value
        assert isinstance(mapping, LDict) and frame.merges  # only a mapping has `<<:` sources
        for src, size in frame.merges:
            frame.size += size
            for key, value in src.items():
                if key not in mapping:
                    mapping[key] = value
                    mapping.key_pos[key] = src.key_pos[key]
                    mapping.value_pos[key] = src.value_pos[key]
