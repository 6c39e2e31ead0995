"""Output paths refused before any work: a run should not spend its budget and then find that
its report cannot be written."""

from __future__ import annotations

from pathlib import Path

from evalspec._util.errors import UsageError


def _blocking_ancestor(path: Path) -> Path | None:
    """The nearest existing ancestor of `path` when it is not a directory (nothing fits inside)."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def check_output_file(path: Path | None, option: str) -> None:
    """Refuse a file option that cannot be written as a regular file."""
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


def check_output_dir(path: Path | None, option: str) -> None:
    """Refuse a directory option that names an existing file."""
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path} is a file, not a directory; name a directory")
    blocking = _blocking_ancestor(path)
    if blocking is not None:
        raise UsageError(f"{option} {path}: {blocking} is a file, so nothing can be written in it")
