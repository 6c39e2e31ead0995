"""Writing files so that a reader never sees half of one, and a crash never leaves one torn.

Every file evalspec writes whole (results, reports, manifests, caches, generated suites) goes
through `atomic_write`: the content goes to a uniquely named temporary file in the same
directory, is flushed and fsynced, then renamed over the target, and the directory is fsynced so
the rename itself survives a power cut. Two writers never share a temporary name.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, cast

from evalspec._util import finite, redaction
from evalspec._util.errors import InputError, Problem, SpecError
from evalspec._util.reading import display_name, parse_json, read_text


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()
"""What a plain `open(path, "w")` would give: temporary files are private until renamed."""


@contextlib.contextmanager
def atomic_write(path: Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary file beside `path`; on success it replaces `path`, else it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, FILE_MODE)
        # A lone surrogate (an emoji cut in half in a model's answer) is written as its \uXXXX
        # escape, which in JSON text reads back as the same character: never an encode error.
        handle: IO[Any] = (
            os.fdopen(fd, "wb")
            if binary
            else os.fdopen(fd, "w", encoding="utf-8", newline="\n", errors="backslashreplace")
        )
        with handle as fh:
            # Text written whole goes through redaction: no writer can put a secret on disk.
            # The scrubbing stream hands every attribute but `write` to the file it wraps.
            yield (
                fh
                if binary or not redaction.registered()
                else cast(IO[Any], redaction.ScrubbingStream(fh))
            )
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_directory(path.parent)


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8) atomically."""
    with atomic_write(path) as fh:
        fh.write(text)


def fsync_directory(directory: Path) -> None:
    """Make a rename in `directory` durable; a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[int]:
    """Hold an exclusive lock on `path` (created empty if missing), shared by every process.

    Yields a descriptor open for appending. A writer that replaces the file (`atomic_write`)
    while others wait is safe: a waiter that wakes up holding the old file's lock notices the
    path now names another file and locks that one instead.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
        try:
            lock_descriptor(fd)
            held = os.fstat(fd)
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
        except BaseException:
            os.close(fd)
            raise
        if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
            break
        os.close(fd)
    try:
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def lock_descriptor(fd: int, *, wait: bool = True) -> bool:
    """Lock an open file exclusively for this process; closing the descriptor releases it.
    Without `wait`, False when another process holds it.

    flock on POSIX; on Windows, filelock's LockFileEx on the first byte (the same primitive
    filelock's own locks use there). Each is imported only where a lock is taken, and only on
    its platform: filelock's import costs a run ~30 ms, fcntl's nothing."""
    if sys.platform == "win32":
        import filelock

        return filelock.lock_descriptor(fd, blocking=wait, poll_interval=0.005)
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
"""Refuse to open through a symbolic link where the platform can say so (not on Windows)."""


def pread(fd: int, length: int, offset: int) -> bytes:
    """Read `length` bytes at `offset` without moving the file position where the platform can
    (os.pread); elsewhere (Windows) seek and read, which only this process's readers share."""
    if hasattr(os, "pread"):
        return os.pread(fd, length, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, length)


def not_this_kind(
    path: Path, what: str, why: str, hint: str, params: Sequence[str] = ()
) -> SpecError:
    """The error for a file that is not what evalspec expected there: it is never rewritten.
    `params` are the parameters the hint names (`name=`)."""
    return SpecError(
        [Problem(str(path), 1, 1, "", f"not {what}: {why}; evalspec will not overwrite it", hint)],
        params=params,
    )


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """A cache file holding one JSON object ({} when missing or empty), else a SpecError.

    Read like any untrusted file (a regular file, a size cap, a depth limit, no NaN)."""
    if not os.path.lexists(path):
        return {}
    name = display_name(Path(path))
    try:
        text = read_text(Path(path), name)
        value = parse_json(text, name) if text.strip() else {}
    except InputError as exc:
        raise not_this_kind(
            path, what, exc.problems[0].message, "point the setting at another file"
        ) from None
    if not isinstance(value, dict):
        raise not_this_kind(
            path,
            what,
            f"it holds a JSON {type(value).__name__}, not an object",
            "point the setting at another file",
        )
    return value


def update_json_object(
    path: Path, changes: dict[str, Any], what: str, *, indent: int = 1, sort_keys: bool = True
) -> dict[str, Any]:
    """Merge `changes` into a JSON-object cache file under a lock; other writers' keys stay."""
    with locked(path):
        merged = read_json_object(path, what)
        merged.update(changes)
        with atomic_write(path) as fh:
            fh.write(
                escape_surrogates(
                    finite.dumps(
                        merged, what, ensure_ascii=False, indent=indent, sort_keys=sort_keys
                    )
                )
            )
    return merged


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """JSON text with lone surrogates (an emoji cut in half) written as \\uXXXX escapes.

    Only valid on JSON text made with ensure_ascii=False: a lone surrogate can only sit inside
    a string there, and the escape reads back as the same character.
    """
    if text.isascii() or not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_LINE = finite.encoder(ensure_ascii=False, sort_keys=True, default=str)
"""One encoder for every line (`json.dumps` with options builds one per call)."""


def dumps_line(value: Any, what: str = "a JSON line") -> str:
    """One JSON line (sorted keys, UTF-8 text kept readable); anything but a non-finite number
    (NotFiniteError) is encodable."""
    return escape_surrogates(finite.encode(_LINE, value, what))
