"""Untrusted text in Markdown: cells, code spans and tables that render as the text they are.

GitHub renders HTML inside Markdown, so a case name or a model answer holding `<script>` or `|`
must not become markup or break a table; a run's report and a comparison's both write through
these.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from evalspec._util.terminal import plain

GITHUB_COMMENT_LIMIT = 65_000
"""GitHub rejects comments over 65,536 characters; keep a margin."""


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]#!~|])")
"""Characters that make links, images, emphasis, code or table cells: shown, not obeyed."""

_ACTIVE = re.compile(r"@(?=\w)|:(?=//)|\bwww(?=\.)", re.IGNORECASE)
"""Where GitHub would make a mention (`@user`) or an autolink (`https://`, `www.`)."""


_INERT = re.compile(r"[A-Za-z0-9,\-]+(?: [A-Za-z0-9,\-]+)*")
"""Text that every step of `cell` leaves as it is: words, digits, commas and dashes, single
spaces (a run's case names, most values); no `.` (`www.`), `:` (`://`) or `@`."""


def cell(value: Any, limit: int = 120) -> str:
    """One table cell from untrusted text: a single line that renders as the text it is.

    HTML, links, images, mentions and autolinks are neutralised (a zero-width space keeps
    `@team` from notifying anyone and `https://` from becoming a link); control characters are
    shown as escapes; long text is shortened.
    """
    if value is None:
        return "-"
    if isinstance(value, str) and len(value) <= limit and _INERT.fullmatch(value):
        return value  # a report of 50,000 cases: the common name skips six passes over it
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(plain(text, single_line=True).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = html.escape(text, quote=False)
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", text)
    return _ACTIVE.sub(lambda m: m.group() + "&#8203;", text)


def code(value: Any, limit: int = 120, *, in_table: bool = False) -> str:
    """Untrusted text as an inline code span: shown literally, so nothing in it is escaped
    (`suites/my_math.yaml`, not `suites/my\\_math.yaml`). The fence is longer than any run of
    backticks inside; a table cell's `|` is escaped, which GitHub removes before it renders."""
    text = value if isinstance(value, str) else str(value)
    text = " ".join(plain(text, single_line=True).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    if in_table:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    return list(table_lines(header, rows))


def table_lines(header: list[str], rows: Iterable[list[str]]) -> Iterator[str]:
    """A table's lines, each row made when it is reached."""
    yield "| " + " | ".join(header) + " |"
    yield "|" + "---|" * len(header)
    for r in rows:
        yield "| " + " | ".join(r) + " |"
