"""Output paths refused before any work: a run should not spend its budget and then find that
its report cannot be written."""

from __future__ import annotations

from pathlib import Path

from evalspec._util.errors import UsageError
from evalspec._util.project import kind, named

OUTPUT_FILE = kind("output file")
"""A file named on the command line to write: a report, results, an import's output."""
OUTPUT_DIRECTORY = kind("output directory", directory=True)


def _blocking_ancestor(path: Path) -> Path | None:
    """The nearest existing ancestor of `path` when it is not a directory (nothing fits inside)."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def check_output_file(path: Path | None, option: str) -> None:
    """Refuse a file option that cannot be written as a regular file, or that would be
    written through a link inside the working directory (see evalspec._util.project)."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(
            f"{option} {path} is a directory; name a file to write (in it or elsewhere)"
        )
    if path.exists() and not path.is_file():
        raise UsageError(f"{option} {path} is not a regular file; name a file to write")
    blocking = _blocking_ancestor(path)
    if blocking is not None:
        raise UsageError(f"{option} {path}: {blocking} is a file, so nothing can be written in it")
    named(path, OUTPUT_FILE)


def check_output_dir(path: Path | None, option: str) -> None:
    """Refuse a directory option that names an existing file, or a link."""
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path} is a file, not a directory; name a directory")
    blocking = _blocking_ancestor(path)
    if blocking is not None:
        raise UsageError(f"{option} {path}: {blocking} is a file, so nothing can be written in it")
    named(path, OUTPUT_DIRECTORY)
