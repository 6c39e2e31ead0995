"""Reading files that may be hostile: regular files only, a size cap, JSON without NaN.

Suites, included files, imported files, transcripts and results all arrive from someone else (a
pull request, a benchmark download, a model's answers). Every read goes through here, so that
`/dev/zero`, a FIFO, a directory, a symlink loop, a 10 GB file or JSON nested 5,000 levels deep
becomes one clear `file:line:col: what; how to fix` line instead of a hang or a traceback.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO

from evalspec._util.errors import InputError, Problem

MAX_FILE_BYTES = 64 * 1024 * 1024
"""The largest file evalspec reads whole (imports, transcripts, results); suites have less."""

MAX_LOG_BYTES = 1024 * 1024 * 1024
"""The largest append-only file a run reads back whole (recordings, a run's transcripts)."""

MAX_JSON_DEPTH = 200
"""Deeper JSON is refused before parsing: Python's parser would hit its recursion limit."""


def display_name(path: Path) -> str:
    """Paths relative to the working directory read best in messages, absolute ones otherwise."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):
        return str(path)


def input_error(name: str, message: str, hint: str, line: int = 1, column: int = 1) -> InputError:
    return InputError([Problem(name, line, column, "", message, hint)])


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words a user recognises."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_regular(path: Path, name: str | None = None, *, what: str = "file") -> os.stat_result:
    """The file's stat if it is a regular file; an InputError saying what it is otherwise."""
    name = name or display_name(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise input_error(
                name, "is a symbolic link that loops back on itself", "point the link at a file"
            ) from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            raise input_error(name, f"{what} not found", "check the path") from None
        raise input_error(
            name, f"cannot read the {what}: {exc.strerror or exc}", "check its permissions"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        kind = file_kind(info.st_mode)
        hint = "name a file inside it" if kind == "a directory" else f"name a regular {what}"
        raise input_error(name, f"is {kind}, not a regular file", hint)
    return info


def read_bytes(
    path: Path,
    name: str | None = None,
    *,
    limit: int = MAX_FILE_BYTES,
    too_big: str = "split it into smaller files",
) -> bytes:
    """The bytes of a regular file no larger than `limit` (`too_big`: the fix to suggest)."""
    name = name or display_name(path)
    with open_regular(path, name, limit=limit, too_big=too_big) as fh:
        try:
            # Ask for the file's size (and one byte more, to see it grew), not the limit:
            # reading asks for a buffer of the requested size, up to 1 GiB for transcripts.
            size = os.fstat(fh.fileno()).st_size
            data = fh.read(min(limit, size) + 1)
            if size < len(data) <= limit:  # it grew since: read on, up to the limit
                data += fh.read(limit + 1 - len(data))
        except OSError as exc:
            raise _unreadable(name, exc) from None
    if len(data) > limit:
        raise input_error(name, f"the file is larger than the limit of {limit} bytes", too_big)
    return data


def open_regular(
    path: Path,
    name: str | None = None,
    *,
    limit: int = MAX_FILE_BYTES,
    too_big: str = "split it into smaller files",
) -> BinaryIO:
    """A regular file no larger than `limit`, open for reading in binary (for a caller that
    reads it piece by piece instead of whole); the errors of `read_bytes`."""
    name = name or display_name(path)
    info = check_regular(path, name)
    if info.st_size > limit:
        raise input_error(
            name, f"the file is {info.st_size} bytes; the limit is {limit} bytes", too_big
        )
    try:
        # O_NONBLOCK: should the file be swapped for a FIFO after the check, open cannot block.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _unreadable(name, exc) from None
    fh = os.fdopen(fd, "rb")
    try:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise input_error(name, "is not a regular file", "name a regular file")
    except BaseException:
        fh.close()
        raise
    return fh


def _unreadable(name: str, exc: OSError) -> InputError:
    return input_error(
        name, f"cannot read the file: {exc.strerror or exc}", "check its permissions"
    )


def read_existing(path: Path, *, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of a file evalspec keeps (a cache, recordings, a run's transcripts), or None
    when there is none yet; an InputError when the path holds a FIFO, a device, a directory or
    a file over `limit`, which would otherwise hang or exhaust memory."""
    if not os.path.lexists(path):
        return None
    return read_bytes(path, limit=limit)


def byte_position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of a byte offset (columns count characters where they decode)."""
    line_start = raw.rfind(b"\n", 0, offset) + 1
    before = raw[line_start:offset].decode("utf-8", errors="replace")
    return raw.count(b"\n", 0, offset) + 1, len(before) + 1


def decode_utf8(raw: bytes, name: str) -> str:
    """UTF-8 text (a byte-order mark is dropped); an InputError at the first bad byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line, col = byte_position(raw, exc.start)
        raise input_error(
            name,
            f"is not valid UTF-8 text (byte 0x{raw[exc.start]:02x})",
            "save the file as UTF-8",
            line,
            col,
        ) from None


def read_text(
    path: Path,
    name: str | None = None,
    *,
    limit: int = MAX_FILE_BYTES,
    too_big: str = "split it into smaller files",
) -> str:
    """A regular UTF-8 text file no larger than `limit` (`too_big`: the fix to suggest)."""
    name = name or display_name(path)
    return decode_utf8(read_bytes(path, name, limit=limit, too_big=too_big), name)


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON-lines text, split at newlines only: `str.splitlines` also splits at
    U+2028, U+0085 and other separators, which a JSON string written with `ensure_ascii=False`
    holds as they are (a model's answer can carry one), so it cut such a line in two."""
    return text.split("\n")


def _refuse_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a number JSON allows")


_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def json_depth_error(text: str, limit: int = MAX_JSON_DEPTH) -> int | None:
    """The offset of the first bracket of `text` nested deeper than `limit`, or None.

    Only called once the parser has refused the text as too deep, to point at the place.
    """
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return match.start()
        elif token in "]}":
            depth -= 1
    return None


def _stack_depth() -> int:
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


@contextmanager
def _recursion_limit(limit: int) -> Iterator[None]:
    """The interpreter's recursion limit set to `limit` inside the block only; the caller's
    limit is back after it, by return or by exception."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _loads(text: str) -> Any:
    """json.loads that stops at MAX_JSON_DEPTH levels with RecursionError, at no extra cost.

    The C parser counts nesting against the recursion limit; lowering the limit to just above
    the current stack while it runs makes deeper JSON fail at once. The limit is shared by all
    threads (and from Python 3.12 on no longer governs C code), so with other threads running,
    or on 3.12 and later, the text is scanned first instead.
    """
    kwargs: dict[str, Any] = {"parse_constant": _refuse_constant, "parse_float": finite_float}
    if threading.active_count() > 1 or sys.version_info >= (3, 12):
        if json_depth_error(text) is not None:
            raise RecursionError("too deep")
        return json.loads(text, **kwargs)
    with _recursion_limit(_stack_depth() + MAX_JSON_DEPTH + 3):
        return json.loads(text, **kwargs)


MAX_VALUE_DEPTH = 100
"""Nesting of a value a model, a server or a tool sends (arguments, outputs): well inside
MAX_JSON_DEPTH with the transcript line or results file around it."""


def loads_untrusted(text: str, depth: int = MAX_JSON_DEPTH) -> Any:
    """JSON a model, a server or a tool sent, held to what evalspec's own files may hold, so a
    run never writes a transcript that `score` and `view` then refuse: no NaN or Infinity, no
    number too large for a float, at most `depth` levels. ValueError otherwise."""
    # No text nests deeper than its opening brackets: most (a call's arguments) need no scan.
    if text.count("[") + text.count("{") > depth and json_depth_error(text, depth) is not None:
        raise ValueError(f"the JSON nests deeper than {depth} levels")
    try:
        # json.loads builds a decoder each call; it alone words a leading BOM's refusal.
        if not text.startswith("\ufeff"):
            return _UNTRUSTED.decode(text)
        return json.loads(text, parse_constant=_refuse_constant, parse_float=finite_float)
    except RecursionError:  # pragma: no cover - the scan above refuses it first
        raise ValueError(f"the JSON nests deeper than {depth} levels") from None


def nests_deeper(value: Any, limit: int) -> bool:
    """Whether lists and mappings in `value` nest more than `limit` levels (a value made from
    untrusted text some other way than `loads_untrusted`, held to the same bound)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list | tuple):
            if depth > limit:
                return True
            items = node.values() if isinstance(node, dict) else node
            stack.extend((item, depth + 1) for item in items)
    return False


def parse_json(text: str, name: str, line: int = 1) -> Any:
    """JSON from untrusted text: depth-limited, NaN and Infinity refused; InputError otherwise.

    `line` is the line the text starts on (for JSON Lines).
    """
    try:
        data = _loads(text)
    except RecursionError:
        deep = json_depth_error(text) or 0
        at_line = line + text.count("\n", 0, deep)
        column = deep - text.rfind("\n", 0, deep)
        raise input_error(
            name,
            f"the JSON nests deeper than {MAX_JSON_DEPTH} levels",
            "flatten it: evalspec's files never need this much nesting",
            at_line,
            column,
        ) from None
    except json.JSONDecodeError as exc:
        raise input_error(
            name,
            f"invalid JSON: {exc.msg}",
            "check the file is JSON",
            line + exc.lineno - 1,
            exc.colno,
        ) from None
    except ValueError as exc:
        raise input_error(name, f"invalid JSON: {exc}", "write a finite number", line) from None
    return without_lone_surrogates(data) if _SURROGATE_ESCAPE.search(text) else data


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(value: Any) -> Any:
    """A JSON value with every lone surrogate (half a character: an emoji cut in two, or a
    `\\ud800` escape) replaced by U+FFFD, so that it can be encoded as UTF-8."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list | tuple):
        return [without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    return value


def finite_float(text: str) -> float:
    """A JSON number text as a float; ValueError for one that overflows (`1e400`)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a number")
    return value


_UNTRUSTED = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=finite_float)
"""`json.loads(text, parse_constant=..., parse_float=...)`, made once."""


def read_json(path: Path, name: str | None = None, *, limit: int = MAX_FILE_BYTES) -> Any:
    """A JSON file read with every check of `read_text` and `parse_json`."""
    name = name or display_name(path)
    return parse_json(read_text(path, name, limit=limit), name)
