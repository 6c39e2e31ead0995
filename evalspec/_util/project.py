"""Files evalspec keeps inside a project: one policy for every one it reads or writes.

A pull request can commit symbolic links. A committed `suites/.evalspec-cache -> /elsewhere`
would have a run write its judge cache outside the project; a committed `judge.json ->
/proc/self/environ` would have review read the machine's environment. So every file evalspec
keeps beside a suite (recordings, caches, the tool lock) or under the working directory (run
directories, reports) is reached through `checked`: no component of its path inside the project
may be a symbolic link, the path may not lead outside the project, and what is there must be of
the kind expected (a regular file, or a directory). A refusal names the path as it was given,
never where a link points, and reads nothing through it.

Each kind of file is declared once with `kind`; `KINDS` lists them all, so the tests attack
every kind the code declares.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from evalspec._util.errors import InputError, Problem
from evalspec._util.reading import file_kind


@dataclass(frozen=True)
class FileKind:
    """One kind of file evalspec keeps in a project (its name is used in messages)."""

    name: str
    directory: bool = False
    """A folder evalspec fills (a run directory, a cache folder), not one file."""


KINDS: dict[str, FileKind] = {}
"""Every kind declared, by name."""


def kind(name: str, *, directory: bool = False) -> FileKind:
    """Declare a kind of project file (once, where the code that keeps it lives)."""
    declared = KINDS.setdefault(name, FileKind(name, directory))
    assert declared.directory == directory, f"{name} declared twice, differently"
    return declared


def checked(path: str | os.PathLike[str], root: str | os.PathLike[str], what: FileKind) -> Path:
    """`path` (relative to `root`, or absolute inside it) held to the policy: the path to use,
    with `..` taken out. InputError (exit 2) when it leads outside `root`, when a component of
    it below `root` is a symbolic link, or when what is there is not of the kind expected.
    What does not exist yet is fine: evalspec creates it as a plain file or folder."""
    base = Path(root).resolve()
    full = Path(os.path.normpath(base / path))
    name = shown(full)
    try:
        parts = full.relative_to(base).parts
    except ValueError:
        raise _refused(name, what, "it leads outside the folder it belongs in") from None
    current = base
    for depth, part in enumerate(parts, start=1):
        current = current / part
        try:
            info = os.lstat(current)
        except (FileNotFoundError, NotADirectoryError):  # writing it fails on its own
            return full
        except OSError as exc:
            raise _refused(name, what, f"it cannot be read ({exc.strerror or exc})") from None
        last = depth == len(parts)
        if stat.S_ISLNK(info.st_mode):
            at = "it" if last else shown(current)
            raise _refused(
                name,
                what,
                f"{at} is a symbolic link; evalspec never reads or writes a project's files "
                "through a link",
                "replace the link with the file or folder itself",
            )
        if not last and not stat.S_ISDIR(info.st_mode):
            raise _refused(name, what, f"{shown(current)} is {file_kind(info.st_mode)}")
        if last and what.directory and not stat.S_ISDIR(info.st_mode):
            raise _refused(name, what, "it is a file, not a directory", "name a directory")
        if last and not what.directory and not stat.S_ISREG(info.st_mode):
            why = file_kind(info.st_mode)
            hint = "name a file inside it" if why == "a directory" else "name a regular file"
            raise InputError([Problem(name, 1, 1, "", f"is {why}, not a regular file", hint)])
    return full


def named(path: str | os.PathLike[str], what: FileKind) -> Path:
    """A path given on the command line: held to the policy from the working directory down
    when it lies inside it; a path outside it is the caller's own choice, taken as given."""
    here = Path.cwd()
    full = Path(os.path.normpath(here / path))
    if full != here and here not in full.parents:
        return Path(path)
    checked(full, here, what)
    return full if Path(path).is_absolute() else Path(os.path.normpath(path))


def shown(path: Path) -> str:
    """A path as messages show it: relative to the working directory when inside it, as given
    otherwise; never resolved, so never where a link points."""
    here = Path.cwd()
    full = Path(os.path.normpath(here / path))
    if here in full.parents:
        return full.relative_to(here).as_posix()
    return str(full)


def _refused(name: str, what: FileKind, why: str, hint: str = "") -> InputError:
    return InputError(
        [Problem(name, 1, 1, "", f"{what.name}: {why}", hint or "check the path and the folder")]
    )
