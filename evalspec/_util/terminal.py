"""Text for the terminal from untrusted data: never read as markup, never a control sequence.

Case names, suite names, model output and reasons quoting it reach the console. Rich reads
`[...]` as markup (`[/INST]` in a model's argument would crash the report), and a terminal obeys
escape sequences (colours, clearing the screen, changing the window title). Everything printed
from data goes through `plain` or `text` here: a Rich Text object, with control characters shown
as visible escapes (`\\x1b`) rather than sent.
"""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text

BEYOND_C0 = "\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff"
"""DEL, the C1 controls and the bidirectional marks and overrides that can make text read
differently from what it is (the body of a character class)."""
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f{BEYOND_C0}]")
"""C0 controls (newline and tab kept) and everything in BEYOND_C0."""

STYLES = {
    "pass": "green",
    "warn": "yellow",
    "fail": "red",
    "error": "magenta",
    "captured": "cyan",
    "user_fault": "blue",
}
"""The console's colour for each status, in a run's report and in a comparison alike."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def plain(value: Any, *, single_line: bool = False) -> str:
    """`value` as text with every control character shown as an escape, not sent."""
    text = _CONTROL.sub(_escape, value if isinstance(value, str) else str(value))
    if single_line:
        text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", " ")
    return text


def text(value: Any, style: str = "", *, single_line: bool = False) -> Text:
    """A Rich Text of `value`: printed as is, never read as markup."""
    return Text(plain(value, single_line=single_line), style=style)
