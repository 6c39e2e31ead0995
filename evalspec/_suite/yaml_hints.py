"""YAML syntax errors that people who do not program make, said in their words.

The parser reports where it got stuck, in its own terms ("mapping values are not allowed here",
"expected <block end>, but found '<scalar>'"). Two mistakes cause most of them, and each has a
fix the parser's words point away from:
- a line indented by a number of spaces that no line above it uses (five where the keys around
  it have four): the line is not where the parser expects a key, so the message is about
  something else ("put quotes around text that contains ': '" would be the wrong fix);
- a quote inside quoted text (`user: 'What's on...'`): the quote ends the text early.
And, where text is wanted, unquoted values that YAML reads as something else (`no` as false,
`14:00` as 840).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from evalspec._suite.tree import LDict, LList
from evalspec._util.errors import Problem

_BLOCK_SCALAR = re.compile(r"[|>][-+0-9]*\s*(#.*)?$")
_KEY_OR_ITEM = re.compile(r"(-\s|[^\s#'\"][^:#]*:(\s|$)|['\"][^'\"]*['\"]\s*:(\s|$))")


@dataclass(frozen=True)
class Hint:
    """What is wrong (after "YAML syntax error: ") and how to fix it, at a line and column."""

    line: int
    column: int
    message: str
    fix: str


def explain(text: str, line: int, column: int) -> Hint | None:
    """A plainer account of the syntax error the parser reports at (line, column), 1-based;
    None when neither mistake explains it."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    return (
        _quote_inside_quotes(lines, line, column)
        or _odd_indentation(lines, line)
        or _key_under_dash(lines, line)
    )


def _quote_inside_quotes(lines: list[str], line: int, column: int) -> Hint | None:
    """The parser stopped right after a closing quote that is followed by more text."""
    text = lines[line - 1]
    at = column - 1
    if not 1 <= at < len(text) or text[at - 1] not in "'\"" or text[at] in " \t#,]}":
        return None
    quote = text[at - 1]
    opening = text.find(quote)
    if opening < 0 or opening >= at - 1:
        return None
    before, after = re.search(r"\S*$", text[: at - 1]), re.match(r"\S*", text[at:])
    assert before is not None and after is not None  # both patterns match the empty text
    word = before.group() + quote + after.group()
    value = text[opening:].rstrip()
    inner = value[1:-1] if len(value) > 1 and value.endswith(quote) else value[1:]
    if quote == "'":
        doubled = "'" + inner.replace("'", "''") + "'"
        other = '"' + inner.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return Hint(
            line,
            opening + 1,
            f"the text in single quotes ends at the ' in {word!r}, and more text follows it",
            f"inside single quotes write a quote twice: {doubled}; or use double quotes: {other}",
        )
    single = "'" + inner.replace("'", "''") + "'"
    escaped = '"' + inner.replace('"', '\\"') + '"'
    return Hint(
        line,
        opening + 1,
        f'the text in double quotes ends at the " in {word!r}, and more text follows it',
        f'put the text in single quotes: {single}; or write each inner quote as \\": {escaped}',
    )


def _odd_indentation(lines: list[str], line: int) -> Hint | None:
    """The line is indented by a number of spaces that no enclosing key or item above uses."""
    text = lines[line - 1]
    body = text.lstrip(" ")
    if not body or not _KEY_OR_ITEM.match(body):
        return None
    indent = len(text) - len(body)
    levels = _open_levels(lines[: line - 1])
    if not levels or indent in levels:
        return None
    depth, where = min(levels.items(), key=lambda kv: (abs(kv[0] - indent), -kv[1]))
    other = lines[where - 1].strip()
    first = other.split(":", 1)[0] + ":" if ":" in other and not other.startswith("-") else other
    word = "space" if indent == 1 else "spaces"
    return Hint(
        line,
        1,
        f"this line is indented {indent} {word}, which lines it up with nothing above it "
        f"(the keys and items above start at {_levels_text(levels)} spaces)",
        f"line it up with the key it belongs with, e.g. {depth} spaces like `{first[:40]}` "
        f"on line {where}",
    )


def _key_under_dash(lines: list[str], line: int) -> Hint | None:
    """A key lined up with the `-` of the list item above it, inside that list: it is neither
    a key of the item (those start after `- `) nor a new item."""
    text = lines[line - 1]
    body = text.lstrip(" ")
    if not body or body.startswith("-") or not _KEY_OR_ITEM.match(body):
        return None
    indent = len(text) - len(body)
    opener = _open_levels(lines[: line - 1]).get(indent)
    if opener is None:
        return None
    above = lines[opener - 1]
    if len(above) - len(above.lstrip(" ")) != indent or not above.lstrip(" ").startswith("- "):
        return None
    item = above.lstrip(" ")[2:].lstrip(" ")
    inner = len(above) - len(item)
    key = body.split(":", 1)[0]
    first = item.split(":", 1)[0] + ":" if ":" in item else item
    return Hint(
        line,
        indent + 1,
        f"`{key[:40]}:` is lined up with the `-` of the list item on line {opener}, so it belongs "
        "to neither that item nor the list",
        f"indent it {inner} spaces, like `{first[:40]}` on line {opener}, to make it part of "
        f"that item; or start a new item with `- {key[:40]}:`",
    )


def _open_levels(above: list[str]) -> dict[int, int]:
    """Indentation of each key or item still open after these lines -> the line that opens
    it at that depth (the latest); lines inside block scalars (`|`, `>`) do not count."""
    levels: dict[int, int] = {}
    scalar_indent: int | None = None
    for number, text in enumerate(above, start=1):
        body = text.lstrip(" ")
        if not body or body.startswith("#"):
            continue
        indent = len(text) - len(body)
        if scalar_indent is not None:
            if indent > scalar_indent:
                continue
            scalar_indent = None
        for depth in [d for d in levels if d > indent]:
            del levels[depth]
        levels[indent] = number
        rest = body
        while rest.startswith("- "):  # `- name: a` opens the item and its first key
            rest = rest[2:].lstrip(" ")
            levels[len(text) - len(rest)] = number
        if _BLOCK_SCALAR.search(body):
            scalar_indent = indent
    return levels


def _levels_text(levels: dict[int, int]) -> str:
    depths = sorted(levels)
    if len(depths) == 1:
        return str(depths[0])
    return ", ".join(str(d) for d in depths[:-1]) + f" or {depths[-1]}"


_PLAIN_TOKEN = re.compile(r"[^\s,\]}#'\"][^\s,\]}#]*")
_SEXAGESIMAL = re.compile(r"[-+]?\d[\d_]*(:[0-5]?\d)+(\.\d*)?$")


def implicit_reading(file: str, line: int, column: int, value: Any) -> tuple[str, str] | None:
    """How YAML read an unquoted value where text was wanted, and the fix: (`YAML reads 14:00
    as the number 840 (...)`, `put it in quotes ...`); None if the value was not written so.

    YAML 1.1, which PyYAML follows, reads `no`, `off` and `yes` as true/false and `14:00` as
    a number in base 60: what a person wrote as text arrives as something else."""
    if isinstance(value, bool):
        what = "true" if value else "false"
    elif isinstance(value, int | float):
        what = f"the number {value}"
    else:
        return None
    written = _written_at(file, line, column)
    if written is None:
        return None
    if isinstance(value, bool) and written.lower() in ("true", "false"):
        return None  # meant as true/false: nothing was read in a way the writer did not see
    why = ""
    if _SEXAGESIMAL.match(written) and not isinstance(value, bool):
        why = " (YAML counts a:b as minutes and seconds, in base 60)"
    elif isinstance(value, bool):
        why = " (YAML takes yes/no and on/off for true/false)"
    return (
        f"YAML reads {written} as {what}{why}",
        f'put it in quotes to keep it as text: "{written}"',
    )


def _written_at(file: str, line: int, column: int) -> str | None:
    """The unquoted token written at (line, column) of a file, 1-based; None if unreadable."""
    lines = _file_lines(file)
    if lines is None or not 1 <= line <= len(lines):
        return None
    match = _PLAIN_TOKEN.match(lines[line - 1], column - 1)
    return match.group() if match else None


def _file_lines(file: str) -> list[str] | None:
    try:
        info = os.stat(file)
    except OSError:
        return None
    return _read_lines(file, info.st_mtime_ns, info.st_size)


@lru_cache(maxsize=4)
def _read_lines(file: str, mtime_ns: int, size: int) -> list[str] | None:
    """A file's lines, kept while it is unchanged: many problems in one file read it once."""
    del mtime_ns  # part of the cache key only
    if size > 64 * 1024 * 1024:
        return None
    try:
        with open(file, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except OSError:
        return None


_CUT = re.compile(r"#(?<=[ \t]#)(?=[^\s#])")
"""A comment whose first character touches the `#`: in text (`#general`, `#2`) rather than
the `# note` a comment usually is. The `#` comes first so the search skips to each `#`: ten
times faster than a pattern starting with the blank (0.2 s, not 2.8 s, on 22 MiB)."""
_TEXT_KEYS = frozenset({"user", "system", "content", "description"})
_TEXT_SECTIONS = frozenset({"expect", "matrix", "vars"})


def may_cut_text(text: str) -> bool:
    """Whether any line has a ` #x` that may have cut a text short (a quick look first)."""
    return _CUT.search(text) is not None


def cut_text_problems(doc: Any, text: str, file: str) -> list[Problem]:
    """Text that a ` #` cut short without a word: the rest of the line became a comment."""
    lines = text.splitlines()
    return [
        Problem(
            file,
            line,
            column,
            path,
            f"the text ends at ` #`: YAML reads {value!r:.60} and takes the rest of the line "
            "for a comment",
            "put the whole text in quotes: "
            + json.dumps(f"{value} {lines[line - 1][column - 1 :].rstrip()}", ensure_ascii=False)
            + " (or, for a comment, write `# ` with a space after the #)",
        )
        for line, column, path, value in cut_texts(doc, text, file)
    ]


def cut_texts(doc: Any, text: str, file: str) -> list[tuple[int, int, str, str]]:
    """Unquoted text values that a ` #` cut short: (line, column of the #, document path, the
    text as YAML read it). Only text meant for the model or for comparing with its answers
    (messages, descriptions, expected values, matrix and vars values) is looked at."""
    lines = text.splitlines()
    cuts: dict[int, int] = {}
    for match in _CUT.finditer(text):
        at = match.start()  # the #
        line = text.count("\n", 0, at) + 1
        column = at - (text.rfind("\n", 0, at) + 1) + 1
        cuts.setdefault(line, column)
    found = []
    for path, value, pos in _text_values(doc, ""):
        cut = cuts.get(pos.line)
        if cut is None or pos.file != file or pos.column >= cut:
            continue
        written = lines[pos.line - 1][pos.column - 1 : cut - 1].rstrip()
        if written == value and not written.startswith(("'", '"')):
            found.append((pos.line, cut, path, value))
    return found


def _text_values(node: Any, path: str, wanted: bool = False) -> Any:
    """(path, text, position) of every text value under `node` that is meant as text."""
    if isinstance(node, LDict):
        for key, value in node.items():
            where = f"{path}.{key}" if path else key
            inner = wanted or key in _TEXT_SECTIONS
            if isinstance(value, str):
                if inner or key in _TEXT_KEYS:
                    yield where, value, node.value_pos[key]
            else:
                yield from _text_values(value, where, inner)
    elif isinstance(node, LList):
        for i, value in enumerate(node):
            if isinstance(value, str):
                if wanted:
                    yield f"{path}[{i}]", value, node.item_pos[i]
            else:
                yield from _text_values(value, f"{path}[{i}]", wanted)
