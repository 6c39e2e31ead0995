"""The base version of a suite, read from git: never a checkout of the working tree.

Ref names come from CI configuration and pull requests, so they are untrusted: a ref is
resolved once to a commit id (`--end-of-options`, never as an option), and only that id is used
afterwards. Files are read with `git show` / `git archive` into a temporary directory.
"""

from __future__ import annotations

import io
import posixpath
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from evalspec.errors import UsageError
from evalspec.suite.model import Suite


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    except FileNotFoundError:
        raise UsageError("--base-ref needs git, and git is not installed") from None


def repo_root(path: Path) -> Path:
    """The top of the git repository holding `path`; UsageError outside one."""
    start = path.resolve()
    start = start if start.is_dir() else start.parent
    while not start.exists():
        start = start.parent
    top = _git(start, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise UsageError(f"{path} is not inside a git repository")
    return Path(top.stdout.decode().strip()).resolve()


def resolve_commit(root: Path, ref: str) -> str:
    """The commit id `ref` names; UsageError for anything else (including option-like text)."""
    if not ref or ref.startswith("-") or any(ch in ref for ch in "\0\n\r"):
        raise UsageError(f"--base-ref {ref!r}: not a git ref name")
    found = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise UsageError(f"--base-ref {ref}: no such commit; fetch it first (git fetch origin)")
    return found.stdout.decode().strip()


def export_tree(root: Path, commit: str, dest: Path) -> None:
    """Write every file of `commit` under `dest` (git archive; no path may leave `dest`)."""
    archived = _git(root, "archive", "--format=tar", commit)
    if archived.returncode != 0:
        raise UsageError(f"git archive {commit} failed: {archived.stderr.decode()[:200]}")
    with tarfile.open(fileobj=io.BytesIO(archived.stdout)) as tar:
        tar.extractall(dest, filter="data")


def suite_from_git(ref: str, path: Path) -> Suite | None:
    """Load the suite at `path` as it is at git `ref`, with its includes from the same ref.

    The file and every file it includes are copied from the ref into a temporary tree that
    mirrors the repository, so relative includes resolve as they would in a checkout. Returns
    None when the file does not exist at that ref (a new suite).
    """
    from evalspec.suite.validate import load_suite

    try:
        root = repo_root(path.parent)
    except UsageError:
        raise UsageError(f"--base-ref: {path} is not inside a git repository") from None
    commit = resolve_commit(root, ref)
    try:
        rel = path.resolve().relative_to(root).as_posix()
    except ValueError:
        raise UsageError(f"--base-ref: {path} is outside the repository at {root}") from None
    if _git(root, "cat-file", "-e", f"{commit}:{rel}").returncode != 0:
        return None
    with tempfile.TemporaryDirectory(prefix="evalspec-base-") as tmp:
        _materialise(root, commit, rel, Path(tmp), set(), ref)
        return load_suite(Path(tmp) / rel)


def _materialise(root: Path, commit: str, rel: str, dest: Path, done: set[str], ref: str) -> None:
    """Copy `commit:rel` into `dest/rel`, then every file it includes, recursively."""
    if rel in done:
        return
    done.add(rel)
    shown = _git(root, "show", f"{commit}:{rel}")
    if shown.returncode != 0:
        raise UsageError(
            f"--base-ref {ref}: {rel} is included but does not exist at {ref}; "
            f"check out {ref} and pass both suite files instead"
        )
    target = dest / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(shown.stdout)
    for inc in _includes(shown.stdout):
        if posixpath.isabs(inc):
            raise UsageError(
                f"--base-ref {ref}: {rel} includes the absolute path {inc}, which cannot be "
                f"read from git; check out {ref} and pass both suite files instead"
            )
        inc_rel = posixpath.normpath(posixpath.join(posixpath.dirname(rel), inc))
        if inc_rel.startswith("../"):
            raise UsageError(
                f"--base-ref {ref}: {rel} includes {inc}, outside the repository; "
                f"check out {ref} and pass both suite files instead"
            )
        _materialise(root, commit, inc_rel, dest, done, ref)


def _includes(text: bytes) -> list[str]:
    """`include:` targets in a suite or an included file (tools and cases lists)."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return []  # load_suite reports the syntax error with its position
    lists: list[Any] = []
    if isinstance(doc, dict):
        lists = [doc.get("tools"), doc.get("cases")]
    elif isinstance(doc, list):
        lists = [doc]
    out: list[str] = []
    for items in lists:
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and isinstance(item.get("include"), str):
                out.append(item["include"])
    return out
