"""Read suite files into plain data that remembers where every value came from.

Every way a file can be unreadable (missing, a directory, binary, not UTF-8, too large, a YAML
syntax error) becomes a Problem with a position. The tree itself is built by yaml_tree.py.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml
import yaml.cyaml

from evalspec._suite.limits import env_limit
from evalspec._suite.tree import LDict, LList, Pos, ldict, llist
from evalspec._suite.yaml_hints import explain
from evalspec._suite.yaml_tree import MAX_DEPTH, MAX_NODES, CaseSink, TreeBuilder
from evalspec._util.errors import Problem, SpecError
from evalspec._util.reading import byte_position, decode_utf8, display_name, read_bytes

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "LDict",
    "LList",
    "Pos",
    "ldict",
    "llist",
    "load_list_streaming",
    "load_yaml",
    "load_yaml_at",
    "load_yaml_streaming",
    "read_text",
]

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_FILE_BYTES_ENV = "EVALSPEC_MAX_SUITE_BYTES"


def max_file_bytes() -> int:
    """The largest suite file read: 16 MiB unless EVALSPEC_MAX_SUITE_BYTES says otherwise."""
    return env_limit(MAX_FILE_BYTES_ENV, MAX_FILE_BYTES)


def _display_name(path: Path) -> str:
    return display_name(path)


def read_text(path: Path, display: str | None = None) -> str:
    """Read a suite file, turning every way it can be unreadable into a Problem."""
    name = display or _display_name(path)

    def fail(message: str, hint: str) -> SpecError:
        return SpecError([Problem(name, 1, 1, "", message, hint)])

    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is None and not path.is_symlink():
        raise fail("file not found", "check the path; run `evalspec init` to create a suite")
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise fail("is a directory, not a YAML file", "name a .yaml file inside it")
    raw = read_bytes(
        path,
        name,
        limit=max_file_bytes(),
        too_big=f"split it into several suites, or raise the limit with {MAX_FILE_BYTES_ENV}",
    )
    if b"\x00" in raw:
        line, col = byte_position(raw, raw.index(b"\x00"))
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
    return decode_utf8(raw, name)


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
            built = _build(_fast_parser, text, name)
        except yaml.YAMLError:
            # libyaml words some syntax errors tersely: read the file again with PyYAML's
            # parser for its messages (only ever for a file that is invalid anyway).
            built = _build(yaml.SafeLoader, text, name)
    except yaml.MarkedYAMLError as exc:
        raise SpecError([_syntax_problem(name, exc, text)]) from None
    except yaml.YAMLError as exc:
        raise SpecError([Problem(name, 1, 1, "", f"YAML error: {exc}", "")]) from None
    if built is None:
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
    return built


def load_yaml_streaming(text: str, name: str, sink: CaseSink) -> tuple[Any, Pos] | None:
    """Parse a suite, handing each item of its top-level `cases:` to `sink` as it completes.

    Errors are raised as they are (no second reading with PyYAML's parser for better words): a
    caller that streams loads the file again, whole, whenever anything goes wrong."""
    return _build(_fast_parser, text, name, sink)


def load_list_streaming(text: str, name: str, sink: CaseSink) -> tuple[Any, Pos] | None:
    """Parse an included file, handing each item of the list at its root to `sink.case` as it
    completes (a file whose root is a mapping is returned whole). Errors as in
    `load_yaml_streaming`."""
    return _build(_fast_parser, text, name, sink, root_list=True)


def _build(
    parser_class: Any,
    text: str,
    name: str,
    sink: CaseSink | None = None,
    root_list: bool = False,
) -> tuple[Any, Pos] | None:
    parser = parser_class(text)
    try:
        return TreeBuilder(parser, name, sink, root_list).build()
    finally:
        parser.dispose()


_fast_parser: Any = (
    # types-PyYAML does not re-export CParser from yaml.cyaml, where PyYAML defines its name.
    yaml.cyaml.CParser  # type: ignore[attr-defined]
    if getattr(yaml, "__with_libyaml__", False)
    else yaml.SafeLoader
)
"""libyaml parses four times faster than PyYAML's Python parser; both feed the same builder."""


def _syntax_problem(name: str, exc: yaml.MarkedYAMLError, text: str) -> Problem:
    """A YAML syntax error, pointed at the character that causes it, in plain words."""
    problem = exc.problem or ""
    context = exc.context or ""
    mark = exc.problem_mark or exc.context_mark
    ctx = exc.context_mark
    hint = explain(text, mark.line + 1, mark.column + 1) if mark is not None else None
    if hint is not None:
        return Problem(
            name, hint.line, hint.column, "", f"YAML syntax error: {hint.message}", hint.fix
        )
    if mark is not None and ("'\\t'" in problem or "\t" in problem):
        return Problem(
            name,
            mark.line + 1,
            mark.column + 1,
            "",
            "YAML syntax error: a tab character is used for indentation",
            "indent with spaces, not tabs",
        )
    if ctx is not None and "quoted scalar" in context:
        quote = ctx.buffer[ctx.pointer] if ctx.buffer else '"'
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


def is_include_file(path: Path) -> bool:
    """Whether the file's top level is a YAML list: what `- include:` pulls into a suite's
    tools or cases, never a suite of its own. A pattern such as `suites/*.yaml` matches such
    files beside the suites that include them; they are read with those suites, not alone.
    Only the first events are read; a file that cannot be read is no include file (loading it
    as a suite then says why)."""
    try:
        with path.open("rb") as stream:
            for event in yaml.parse(stream, Loader=yaml.cyaml.CSafeLoader):
                if isinstance(event, yaml.SequenceStartEvent):
                    return True
                if isinstance(event, yaml.MappingStartEvent | yaml.ScalarEvent):
                    return False
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return False
    return False
