"""Writing files so that a reader never sees half of one, and a crash never leaves one torn.

Every file evalspec writes whole (results, reports, manifests, caches, generated suites) goes
through `atomic_write`: the content goes to a uniquely named temporary file in the same
directory, is flushed and fsynced, then renamed over the target, and the directory is fsynced so
the rename itself survives a power cut. Two writers never share a temporary name.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


FILE_MODE = 0o666 & ~_umask()
"""What a plain `open(path, "w")` would give: temporary files are private until renamed."""


@contextlib.contextmanager
def atomic_write(path: Path, *, binary: bool = False) -> Iterator[IO]:
    """Open a temporary file beside `path`; on success it replaces `path`, else it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, FILE_MODE)
        text_args = {} if binary else {"encoding": "utf-8", "newline": "\n"}
        with os.fdopen(fd, "wb" if binary else "w", **text_args) as fh:
            yield fh
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
