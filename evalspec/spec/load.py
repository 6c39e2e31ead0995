"""Load YAML into plain data that remembers where every node came from.

PyYAML composes a node graph with marks; we construct plain dicts, lists and scalars ourselves
(never PyYAML's constructors for collections), so that:
- every mapping and list knows its file, line and column, and the position of each key and item;
- duplicate keys are errors instead of silently overwritten values;
- only the safe core tags are accepted (no object construction, ever);
- aliases cannot blow memory up (a budget of constructed nodes) and deep nesting is refused.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

import yaml
import yaml.cyaml

from evalspec.errors import Problem, SpecError

MAX_DEPTH = 64
MAX_NODES = 200_000
MAX_FILE_BYTES = 16 * 1024 * 1024

_SAFE_SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
}
_CORE = "tag:yaml.org,2002:"
_SURROGATE = re.compile("[\ud800-\udfff]")
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"


class Pos(NamedTuple):
    """Where a node stands (a tuple: a large suite has a hundred thousand of them)."""

    file: str
    line: int
    """1-based."""
    column: int
    """1-based."""


class LDict(dict):
    """A mapping from YAML that knows where it and each of its keys and values stand."""

    pos: Pos
    key_pos: dict[str, Pos]
    value_pos: dict[str, Pos]


class LList(list):
    """A sequence from YAML that knows where it and each of its items stand."""

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


def position_of(node: Any, default: Pos) -> Pos:
    return getattr(node, "pos", default)


def _display_name(path: Path) -> str:
    """Paths relative to the working directory read best in messages, absolute ones otherwise."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def read_text(path: Path, display: str | None = None) -> str:
    """Read a suite file, turning every way it can be unreadable into a Problem."""
    name = display or _display_name(path)
    fail = lambda msg, hint: SpecError([Problem(name, 1, 1, "", msg, hint)])  # noqa: E731
    if not path.exists():
        raise fail("file not found", "check the path; run `evalspec init` to create a suite")
    if path.is_dir():
        raise fail("is a directory, not a YAML file", "name a .yaml file inside it")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise fail(f"file is {size} bytes; suites are limited to {MAX_FILE_BYTES}", "split it")
        raw = path.read_bytes()
    except OSError as exc:
        raise fail(
            f"cannot read the file: {exc.strerror or exc}", "check its permissions"
        ) from None
    if b"\x00" in raw:
        line, col = _byte_position(raw, raw.index(b"\x00"))
        raise SpecError(
            [
                Problem(
                    name,
                    line,
                    col,
                    "",
                    "is a binary file, not YAML text (it holds a NUL byte)",
                    "name a .yaml suite file",
                )
            ]
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, col = _byte_position(raw, exc.start)
        raise SpecError(
            [
                Problem(
                    name,
                    line,
                    col,
                    "",
                    f"is not valid UTF-8 text (byte 0x{raw[exc.start]:02x})",
                    "save the file as UTF-8",
                )
            ]
        ) from None


def _byte_position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of a byte offset (columns count characters where they decode)."""
    line_start = raw.rfind(b"\n", 0, offset) + 1
    before = raw[line_start:offset].decode("utf-8", errors="replace")
    return raw.count(b"\n", 0, offset) + 1, len(before) + 1


def load_yaml(path: Path, text: str | None = None, display: str | None = None) -> Any:
    """Parse one YAML file into LDict/LList/scalars. Raises SpecError with positions."""
    return load_yaml_at(path, text, display)[0]


def load_yaml_at(
    path: Path, text: str | None = None, display: str | None = None
) -> tuple[Any, Pos]:
    """Like `load_yaml`, also returning where the document starts (scalars carry no position)."""
    name = display or _display_name(path)
    if text is None:
        text = read_text(path, name)
    try:
        try:
            node = _compose(_SafeComposer, text, name)
        except _LimitError:
            raise
        except yaml.YAMLError:
            node = _compose(_PythonComposer, text, name)  # raises with PyYAML's wording
    except _LimitError as exc:
        raise SpecError([exc.problem]) from None
    except yaml.MarkedYAMLError as exc:
        raise SpecError([_syntax_problem(name, exc)]) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem(name, 1, 1, "", f"YAML error: {exc}", "")]) from None
    except RecursionError:  # pragma: no cover - the composer refuses deep nesting first
        raise SpecError(
            [
                Problem(
                    name, 1, 1, "", "nesting is too deep to read", f"use under {MAX_DEPTH} levels"
                )
            ]
        ) from None
    if node is None:
        blank = not any(
            line.strip() and not line.lstrip().startswith("#") for line in text.splitlines()
        )
        what = "the file holds only comments" if text.strip() and blank else "the file is empty"
        raise SpecError(
            [
                Problem(
                    name, 1, 1, "", what, "a suite needs `suite:` and `cases:`; see `evalspec init`"
                )
            ]
        )
    builder = _Builder(name)
    return builder.build(node), builder.pos(node)


def _compose(loader_class: type, text: str, name: str) -> Any:
    loader = loader_class(text, name)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


if getattr(yaml, "__with_libyaml__", False):

    class _FastLoader(
        yaml.composer.Composer,
        yaml.cyaml.CParser,
        yaml.constructor.SafeConstructor,
        yaml.resolver.Resolver,
    ):
        """libyaml scans and parses (4x faster than PyYAML's Python parser); Python composes."""

        def __init__(self, text: str):
            yaml.cyaml.CParser.__init__(self, text)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    _Base: type = _FastLoader
else:  # pragma: no cover - PyYAML built without libyaml
    _Base = yaml.SafeLoader


class _Limits:
    """A composer mixin that refuses deep nesting and alias bombs as it reads.

    Both are checked while the node graph is composed, before any value is constructed: a
    billion-laughs document is refused at the first collection whose expansion is too large,
    and a 1,000-deep document at the first node past the depth limit, with their positions.
    """

    def __init__(self, text: str, name: str):
        super().__init__(text)  # type: ignore[call-arg]
        self._name = name
        self._depth = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            return super().compose_node(parent, index)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise _LimitError(
                    Problem(
                        self._name,
                        mark.line + 1,
                        mark.column + 1,
                        "",
                        f"the data nests deeper than {MAX_DEPTH} levels",
                        "flatten it: a suite never needs this much nesting",
                    )
                )
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if self.anchors:  # without an &anchor nothing repeats: the file's size bounds the data
            self._check_size(node)
        return node

    def _check_size(self, node: yaml.Node) -> None:
        if isinstance(node, yaml.ScalarNode):
            return
        children = (
            node.value
            if isinstance(node, yaml.SequenceNode)
            else [n for pair in node.value for n in pair]
        )
        size = 1 + sum(self._sizes.get(id(c), 1) for c in children)
        self._sizes[id(node)] = size
        if size > MAX_NODES:
            m = node.start_mark
            raise _LimitError(
                Problem(
                    self._name,
                    m.line + 1,
                    m.column + 1,
                    "",
                    f"this value repeats *aliases so often that it expands to more than "
                    f"{MAX_NODES} values",
                    "write the data out, or repeat an &anchor only a few times",
                )
            )


class _SafeComposer(_Limits, _Base):  # type: ignore[misc, valid-type]
    """The fast reader: libyaml's parser with the limits above."""


class _PythonComposer(_Limits, yaml.SafeLoader):  # type: ignore[misc]
    """PyYAML's own parser: re-reads a file with a syntax error for its clearer messages."""


_CONSTRUCTOR = yaml.constructor.SafeConstructor()
"""One constructor for every plain scalar: building a loader per value was a third of load time."""
_SCALARS = {
    "tag:yaml.org,2002:int": yaml.constructor.SafeConstructor.construct_yaml_int,
    "tag:yaml.org,2002:float": yaml.constructor.SafeConstructor.construct_yaml_float,
    "tag:yaml.org,2002:bool": yaml.constructor.SafeConstructor.construct_yaml_bool,
    "tag:yaml.org,2002:null": yaml.constructor.SafeConstructor.construct_yaml_null,
}


class _LimitError(yaml.YAMLError):
    """A limit of the composer was hit; carries the finished Problem."""

    def __init__(self, problem: Problem):
        super().__init__(problem.message)
        self.problem = problem


def _syntax_problem(name: str, exc: yaml.MarkedYAMLError) -> Problem:
    """A YAML syntax error, pointed at the character that causes it, in plain words."""
    problem = exc.problem or ""
    context = exc.context or ""
    mark = exc.problem_mark or exc.context_mark
    ctx = exc.context_mark
    if "'\\t'" in problem or "\t" in problem:
        return Problem(
            name,
            mark.line + 1,
            mark.column + 1,
            "",
            "YAML syntax error: a tab character is used for indentation",
            "indent with spaces, not tabs",
        )
    if ctx is not None and "quoted scalar" in context:
        quote = exc.context_mark.buffer[ctx.pointer] if ctx.buffer else '"'
        return Problem(
            name,
            ctx.line + 1,
            ctx.column + 1,
            "",
            f"YAML syntax error: the quote {quote} opened here is never closed",
            f"end the text with {quote}",
        )
    if ctx is not None and ("flow sequence" in context or "flow mapping" in context):
        opener, closer = ("[", "]") if "sequence" in context else ("{", "}")
        found = problem.split("but got ")[-1] if "but got " in problem else "something else"
        where = f"line {mark.line + 1}" if mark else "the end"
        return Problem(
            name,
            ctx.line + 1,
            ctx.column + 1,
            "",
            f"YAML syntax error: the {opener} opened here is not closed "
            f"(found {found} on {where} first)",
            f"close it with {closer}, or separate items with commas",
        )
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    what = problem or context or "invalid YAML"
    return Problem(name, line, col, "", f"YAML syntax error: {what}", _syntax_hint(what))


def _syntax_hint(what: str) -> str:
    if "mapping values are not allowed" in what:
        return "put quotes around text that contains ': '"
    if "found character '@'" in what or "found character '`'" in what:
        return "quote values that start with @ or `"
    return "check indentation and quoting near this position"


class _Path:
    """A document path built only when an error needs it (a suite has ~100k nodes)."""

    __slots__ = ("key", "parent")

    def __init__(self, parent: Any, key: str | int):
        self.parent = parent
        self.key = key

    def __str__(self) -> str:
        head = str(self.parent) if self.parent != "" else ""
        if isinstance(self.key, int):
            return f"{head}[{self.key}]"
        return f"{head}.{self.key}" if head else self.key


class _Builder:
    def __init__(self, file: str):
        self.file = file
        self.count = 0

    def pos(self, node: yaml.Node) -> Pos:
        m = node.start_mark
        return Pos(self.file, m.line + 1, m.column + 1)

    def fail(self, node: yaml.Node, msg: str, hint: str = "", path: Any = "") -> SpecError:
        p = self.pos(node)
        return SpecError([Problem(self.file, p.line, p.column, str(path), msg, hint)])

    def build(self, root: yaml.Node) -> Any:
        # The composer has already refused deep nesting, so recursion here stays shallow.
        return self._node(root, 0, "")

    def _node(self, node: yaml.Node, depth: int, path: str | _Path) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(
                node,
                f"the document expands to more than {MAX_NODES} values (aliases repeating data?)",
                "write the data out, or repeat an &anchor only a few times",
                path,
            )
        if depth > MAX_DEPTH:
            raise self.fail(
                node, f"the data nests deeper than {MAX_DEPTH} levels", "flatten it", path
            )
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ_TAG:
                raise self._bad_tag(node, path)
            lst = LList()
            lst.pos = self.pos(node)
            lst.item_pos = []
            for i, child in enumerate(node.value):
                lst.item_pos.append(self.pos(child))
                lst.append(self._node(child, depth + 1, _Path(path, i)))
            return lst
        if isinstance(node, yaml.MappingNode):
            if node.tag != _MAP_TAG:
                raise self._bad_tag(node, path)
            return self._mapping(node, depth, path)
        raise self.fail(node, "unsupported YAML node", "", path)  # pragma: no cover

    def _bad_tag(self, node: yaml.Node, path: str | _Path) -> SpecError:
        tag = node.tag
        shown = "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag
        return self.fail(
            node,
            f"the tag {shown} is not allowed (nothing in a suite is run or constructed)",
            "suites hold plain data only: remove the tag",
            path,
        )

    def _scalar(self, node: yaml.ScalarNode, path: str | _Path) -> Any:
        tag = node.tag
        if tag not in _SAFE_SCALAR_TAGS:
            raise self._bad_tag(node, path)
        if tag in ("tag:yaml.org,2002:str", "tag:yaml.org,2002:timestamp"):
            bad = _SURROGATE.search(node.value)
            if bad:
                raise self.fail(
                    node,
                    f"the text holds a lone surrogate escape \\u{ord(bad.group()):04x}, "
                    "which is not a character",
                    "write the character itself, or escape it as \\UXXXXXXXX",
                    path,
                )
            # Dates stay text: critics and templates compare them as the user wrote them.
            return node.value
        try:
            return _SCALARS[tag](_CONSTRUCTOR, node)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            raise self.fail(
                node, f"cannot read the value {node.value!r}: {exc}", "quote it as text", path
            ) from None

    def _mapping(self, node: yaml.MappingNode, depth: int, path: str | _Path) -> LDict:
        result = LDict()
        result.pos = self.pos(node)
        result.key_pos = {}
        result.value_pos = {}
        self._flatten_merge(node, path)
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(
                    key_node,
                    "a key must be plain text, not a list or mapping",
                    "write keys as plain words, like `name:`",
                    path,
                )
            key = self._scalar(key_node, path)
            if key is None or isinstance(key, bool | float):
                raise self.fail(
                    key_node,
                    f"the key {key_node.value or '(empty)'} must be text",
                    f'put it in quotes: "{key_node.value}"',
                    path,
                )
            key = str(key)
            kpath = _Path(path, key)
            if key in result:
                first = result.key_pos[key]
                raise self.fail(
                    key_node,
                    f"duplicate key {key!r} (first given on line {first.line})",
                    "remove one of them; the later one would silently replace the first",
                    kpath,
                )
            result.key_pos[key] = self.pos(key_node)
            result.value_pos[key] = self.pos(value_node)
            result[key] = self._node(value_node, depth + 1, kpath)
        return result

    def _flatten_merge(self, node: yaml.MappingNode, path: str | _Path) -> None:
        """Support YAML merge keys (`<<: *defaults`) as plain key copies."""
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        rest: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                sources = (
                    value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                )
                for src in sources:
                    if not isinstance(src, yaml.MappingNode):
                        raise self.fail(
                            src,
                            "`<<` merges only mappings",
                            "write `<<: *anchor_of_a_mapping`",
                            path,
                        )
                    self.count += len(src.value)
                    if self.count > MAX_NODES:
                        raise self.fail(
                            src,
                            "too many merged values",
                            "repeat an &anchor only a few times",
                            path,
                        )
                    merged.extend(src.value)
            else:
                rest.append((key_node, value_node))
        if merged:
            explicit = {k.value for k, _ in rest if isinstance(k, yaml.ScalarNode)}
            seen: set[str] = set()
            kept = []
            for k, v in merged:
                if k.value not in explicit and k.value not in seen:
                    seen.add(k.value)
                    kept.append((k, v))
            node.value = kept + rest
