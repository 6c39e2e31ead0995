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


def check_output_file(path: Path | None, param: str) -> None:
    """Refuse a file to write (the parameter `param`) that cannot be written as a regular
    file, or that would be written through a link inside the working directory (see
    evalspec._util.project)."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(
            f"{param}={path} is a directory; name a file to write (in it or elsewhere)",
            params=[param],
        )
    if path.exists() and not path.is_file():
        raise UsageError(
            f"{param}={path} is not a regular file; name a file to write", params=[param]
        )
    blocking = _blocking_ancestor(path)
    if blocking is not None:
        raise UsageError(
            f"{param}={path}: {blocking} is a file, so nothing can be written in it", params=[param]
        )
    named(path, OUTPUT_FILE)


def check_output_dir(path: Path | None, param: str) -> None:
    """Refuse a directory to write (the parameter `param`) that names an existing file, or a
    link."""
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise UsageError(
            f"{param}={path} is a file, not a directory; name a directory", params=[param]
        )
    blocking = _blocking_ancestor(path)
    if blocking is not None:
        raise UsageError(
            f"{param}={path}: {blocking} is a file, so nothing can be written in it", params=[param]
        )
    named(path, OUTPUT_DIRECTORY)
