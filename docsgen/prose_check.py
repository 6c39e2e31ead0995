"""Find paragraphs that a heading cuts in two: the pages must read as prose.

Two signs, each in running text only (code blocks, lists, tables, admonitions, HTML, images
and indented blocks are left out):

- the last line before a heading ends a paragraph without a full stop (`.`, `!`, `?`): a
  sentence stops mid-way, or a colon promises what follows it and a heading follows instead;
- the first line after a heading starts with a small letter: a sentence goes on from above
  (unless its first word is a name written small: `evalspec`, `τ-bench's`).
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^#{1,6} ")
_LIST = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_NOT_PROSE = ("|", "!!!", "???", "<", ":::", "![", ">")
_CLOSING = ")]}*_\"'’”»`"


def cut_paragraphs(markdown: str) -> list[str]:
    """`line N: why` for each heading that cuts a paragraph."""
    lines = markdown.splitlines()
    prose = _prose_lines(lines)
    found: list[str] = []
    for i, line in enumerate(lines):
        if prose[i] is not None or not _HEADING.match(line):
            continue
        before = _last_paragraph(lines, prose, i)
        if before is not None and not _ends_sentence(lines[before]):
            found.append(
                f"line {i + 1}: {line.strip()!r} follows {lines[before].strip()!r}, "
                "which does not end its sentence"
            )
        after = next((j for j in range(i + 1, len(lines)) if lines[j].strip()), None)
        if after is not None and prose[after] == "start" and _goes_on(lines[after]):
            found.append(
                f"line {i + 1}: {line.strip()!r} is followed by {lines[after].strip()!r}, "
                "which goes on from a sentence before it"
            )
    return found


def _prose_lines(lines: list[str]) -> list[str | None]:
    """For each line: "start" (a paragraph of running text starts there), "text" (it goes on
    there), or None (a heading, a blank line, or no running text)."""
    kinds: list[str | None] = []
    in_code = False
    previous: str | None = None
    for line in lines:
        if _FENCE.match(line):
            in_code = not in_code
            kinds.append(None)
            previous = None
            continue
        kind = None if in_code else _kind(line, previous)
        kinds.append(kind)
        other = bool(line.strip()) and not _HEADING.match(line)
        previous = kind if kind is not None else ("other" if other else None)
    return kinds


def _kind(line: str, previous: str | None) -> str | None:
    stripped = line.strip()
    if not stripped or _HEADING.match(line):
        return None
    if previous == "other":  # the rest of a list item, table or admonition
        return None
    if line[:1].isspace() or _LIST.match(line) or stripped.startswith(_NOT_PROSE):
        return None
    return "text" if previous in ("start", "text") else "start"


def _last_paragraph(lines: list[str], prose: list[str | None], heading: int) -> int | None:
    """The line before the heading (blank lines skipped) if it is running text."""
    for j in range(heading - 1, -1, -1):
        if lines[j].strip():
            return j if prose[j] is not None else None
    return None


_NAMES = {"evalspec"}
"""Names the pages write with a small letter, even at the start of a sentence."""


def _goes_on(line: str) -> bool:
    """Does this first line of a paragraph start mid-sentence (a small letter, not a name)?"""
    word = line.split()[0]
    if not word[:1].islower():
        return False
    name = word in _NAMES or "-" in word or word.endswith(("'s", "’s"))
    return not name


def _ends_sentence(line: str) -> bool:
    text = _LINK.sub(r"\1", line).rstrip().rstrip(_CLOSING).rstrip()
    return text.endswith((".", "!", "?"))
