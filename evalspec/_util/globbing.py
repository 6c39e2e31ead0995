"""Globs over suite directories that end: `**` never follows a symbolic link into a directory.

Python's recursive glob follows links to directories, so a link to `.` beside the suites makes
`evalspec validate '**/*.yaml'` walk forever. Here `**` walks real directories only (a link to a
file still matches), and a pattern matching more than MAX_MATCHES files is refused.
"""

from __future__ import annotations

import glob
import os
import re

MAX_MATCHES = 10_000


class TooManyMatches(ValueError):
    """A pattern matched more files than anyone means to validate at once."""


def has_magic(pattern: str) -> bool:
    return glob.has_magic(pattern)


def expand(pattern: str) -> list[str]:
    """The files and directories `pattern` names, sorted; `**` spans real directories only."""
    matches = sorted(glob.glob(pattern)) if "**" not in pattern else sorted(_walk_match(pattern))
    if len(matches) > MAX_MATCHES:
        raise TooManyMatches(f"{pattern!r} matches more than {MAX_MATCHES} files")
    return matches


def _walk_match(pattern: str) -> list[str]:
    parts = pattern.replace(os.sep, "/").split("/")
    fixed = []
    for part in parts:
        if glob.has_magic(part):
            break
        fixed.append(part)
    root = "/".join(fixed) if fixed else "."
    rest = "/".join(parts[len(fixed) :])
    matcher = re.compile(_translate(rest))
    found: list[str] = []
    for directory, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in (*dirs, *files):
            full = os.path.join(directory, name)
            relative = os.path.relpath(full, root).replace(os.sep, "/")
            if matcher.fullmatch(relative):
                found.append(full if fixed else os.path.relpath(full))
                if len(found) > MAX_MATCHES:
                    return found
    return found


def _translate(pattern: str) -> str:
    """A glob (with `**` for any number of directories) as a regular expression on '/' paths.

    Like glob, `*` and `?` do not match a leading dot of a name.
    """
    out = []
    for i, part in enumerate(pattern.split("/")):
        last = i == len(pattern.split("/")) - 1
        if part == "**":
            out.append("(?:[^./][^/]*/)*" if not last else "(?:[^./][^/]*(?:/[^./][^/]*)*)?")
            continue
        piece = "" if part.startswith(".") else "(?!\\.)"
        j = 0
        while j < len(part):
            ch = part[j]
            if ch == "*":
                piece += "[^/]*"
            elif ch == "?":
                piece += "[^/]"
            elif ch == "[":
                end = part.find("]", j + 2)
                if end == -1:
                    piece += "\\["
                else:
                    body = part[j + 1 : end].replace("\\", "\\\\")
                    if body.startswith("!"):
                        body = "^" + body[1:]
                    piece += f"[{body}]"
                    j = end
            else:
                piece += re.escape(ch)
            j += 1
        out.append(piece + ("" if last else "/"))
    return "".join(out)
