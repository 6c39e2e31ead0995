"""Load YAML into plain data that remembers where every node came from.

PyYAML composes a node graph with marks; we construct plain dicts, lists and scalars ourselves
(never PyYAML's constructors for collections), so that:
- every mapping and list knows its file, line and column, and the position of each key and item;
- duplicate keys are errors instead of silently overwritten values;
- only the safe core tags are accepted (no object construction, ever);
- aliases cannot blow memory up (a budget of constructed nodes) and deep nesting is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

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
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"


@dataclass(frozen=True)
class Pos:
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
        raise fail("is a binary file, not YAML text", "name a .yaml suite file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(
            [Problem(name, line, 1, "", "is not valid UTF-8 text", "save the file as UTF-8")]
        ) from None


def load_yaml(path: Path, text: str | None = None, display: str | None = None) -> Any:
    """Parse one YAML file into LDict/LList/scalars. Raises SpecError with positions."""
    name = display or _display_name(path)
    if text is None:
        text = read_text(path, name)
    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = exc.problem or exc.context or "invalid YAML"
        raise SpecError(
            [Problem(name, line, col, "", f"YAML syntax error: {what}", _syntax_hint(what))]
        ) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem(name, 1, 1, "", f"YAML error: {exc}", "")]) from None
    except RecursionError:
        raise SpecError(
            [Problem(name, 1, 1, "", "nesting is too deep to read", f"keep under {MAX_DEPTH}")]
        ) from None
    if node is None:
        raise SpecError(
            [Problem(name, 1, 1, "", "the file is empty", "run `evalspec init` for a starter")]
        )
    return _Builder(name).build(node)


def _syntax_hint(what: str) -> str:
    if "tab" in what:
        return "indent with spaces, not tabs"
    if "mapping values are not allowed" in what:
        return "put quotes around text that contains ': '"
    if "found character '@'" in what or "found character '`'" in what:
        return "quote values that start with @ or `"
    return "check indentation and quoting near this position"


class _Builder:
    def __init__(self, file: str):
        self.file = file
        self.count = 0

    def pos(self, node: yaml.Node) -> Pos:
        m = node.start_mark
        return Pos(self.file, m.line + 1, m.column + 1)

    def fail(self, node: yaml.Node, msg: str, hint: str = "") -> SpecError:
        p = self.pos(node)
        return SpecError([Problem(self.file, p.line, p.column, "", msg, hint)])

    def build(self, root: yaml.Node) -> Any:
        # Iterative construction: deep documents cannot exhaust the Python stack here.
        return self._node(root, 0)

    def _node(self, node: yaml.Node, depth: int) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(
                node,
                f"the document expands to more than {MAX_NODES} values (aliases repeating data?)",
                "remove repeated &anchor/*alias references",
            )
        if depth > MAX_DEPTH:
            raise self.fail(node, f"nesting deeper than {MAX_DEPTH} levels", "flatten the data")
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ_TAG:
                raise self._bad_tag(node)
            items = [self._node(child, depth + 1) for child in node.value]
            return llist(self.pos(node), items, [self.pos(c) for c in node.value])
        if isinstance(node, yaml.MappingNode):
            if node.tag != _MAP_TAG:
                raise self._bad_tag(node)
            return self._mapping(node, depth)
        raise self.fail(node, "unsupported YAML node")  # pragma: no cover

    def _bad_tag(self, node: yaml.Node) -> SpecError:
        return self.fail(
            node,
            f"the tag {node.tag!r} is not allowed",
            "suites hold plain data only: remove the !tag",
        )

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        tag = node.tag
        if tag not in _SAFE_SCALAR_TAGS:
            raise self._bad_tag(node)
        if tag in ("tag:yaml.org,2002:str", "tag:yaml.org,2002:timestamp"):
            # Dates stay text: critics and templates compare them as the user wrote them.
            return node.value
        loader = yaml.SafeLoader("")
        try:
            value = loader.construct_object(node, deep=False)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            raise self.fail(node, f"cannot read value {node.value!r}: {exc}") from None
        finally:
            loader.dispose()
        return value

    def _mapping(self, node: yaml.MappingNode, depth: int) -> LDict:
        result = LDict()
        result.pos = self.pos(node)
        result.key_pos = {}
        result.value_pos = {}
        self._flatten_merge(node)
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node, "keys must be plain text", "remove the nested key")
            key = self._scalar(key_node)
            if key is None or isinstance(key, bool | float):
                raise self.fail(key_node, f"key {key_node.value!r} must be text", "quote the key")
            key = str(key)
            if key in result:
                first = result.key_pos[key]
                raise self.fail(
                    key_node,
                    f"duplicate key {key!r} (first defined on line {first.line})",
                    "remove one of them; later ones would silently replace the first",
                )
            result.key_pos[key] = self.pos(key_node)
            result.value_pos[key] = self.pos(value_node)
            result[key] = self._node(value_node, depth + 1)
        return result

    def _flatten_merge(self, node: yaml.MappingNode) -> None:
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
                        raise self.fail(src, "`<<` merges only mappings")
                    self.count += len(src.value)
                    if self.count > MAX_NODES:
                        raise self.fail(src, "too many merged values (aliases repeating data?)")
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
