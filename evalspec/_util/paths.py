"""Names and paths from untrusted text: made safe before they touch the file system.

A suite from a pull request names its run directory (through `suite:`) and the files it writes
(recordings, caches). Names become a single safe path component; paths must stay inside the
suite's own directory tree, so no suite can write to `/tmp/x`, `~/.ssh` or `../../elsewhere`.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path, PurePosixPath, PureWindowsPath

from evalspec._util.errors import UsageError

MAX_NAME_LENGTH = 80
"""Characters kept of a name used as a directory name (file systems allow 255 bytes)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str, fallback: str = "suite") -> str:
    """`name` as one path component: letters, digits, `.`, `_`, `-`; never `.`, `..` or empty.

    `../../X` becomes `X`, `/tmp/x` becomes `tmp-x`, `x [/nope]` becomes `x-nope`.
    """
    text = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii")
    text = _UNSAFE.sub("-", text).strip("-.")
    text = re.sub(r"\.{2,}", ".", text)[:MAX_NAME_LENGTH].strip("-.")
    return text or fallback


def escape_reason(base: Path, value: str) -> str:
    """Why the relative path `value` would leave `base` ("" when it stays inside)."""
    text = str(value)
    if not text.strip():
        return "the path is empty"
    if "\x00" in text:
        return "the path holds a NUL character"
    if text[:1] == "~":
        return "it starts with ~ (a home directory)"
    if PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute():
        return "it is an absolute path"
    if PureWindowsPath(text).drive:
        return "it names a drive"
    root = base.resolve()
    target = Path(os.path.normpath(root / text))
    if target != root and root not in target.parents:
        return "it leads outside the suite's directory"
    link = first_link(root, target)
    if link is not None:
        return f"it goes through a symbolic link ({link.relative_to(root).as_posix()})"
    return ""


def folder_label(path: Path, fallback: str) -> str:
    """The name of the folder `path` is in (`virtual_chatgpt_cot` for
    `virtual_chatgpt_cot/G1.json`), as a model label: taken from the absolute path, so a file
    in the current folder is labelled by that folder, never by ''; `fallback` at the root."""
    return Path(os.path.abspath(path)).parent.name or fallback


def model_label(model: str | None, path: Path, fallback: str) -> str:
    """The label of an imported file's answers: `model` when given (never empty), else the
    name of the folder the file is in (`folder_label`)."""
    if model is None:
        return folder_label(path, fallback)
    if not model.strip():
        raise UsageError("model= is empty: name the model the answers are from", params=["model"])
    return model


def first_link(root: Path, target: Path) -> Path | None:
    """The first component of `target` below `root` that is a symbolic link, if any."""
    current = root
    for part in target.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            return current
        if not current.exists():
            return None
    return None
