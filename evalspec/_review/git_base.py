"""The base version of a suite, read from git: never a checkout of the working tree.

Ref names come from CI configuration and pull requests, so they are untrusted: a ref is
resolved once to a commit id (`--end-of-options`, never as an option), and only that id is used
afterwards. Files are read with `git show` / `git cat-file` into a temporary directory: regular
files only (links are never created, so never followed), streamed, within a size budget.
"""

from __future__ import annotations

import os
import posixpath
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalspec._suite.load import MAX_FILE_BYTES
from evalspec._suite.mcp_drift import ServerDrift
from evalspec._suite.model import Suite
from evalspec._suite.render import MAX_INCLUDES
from evalspec._util.errors import Problem, SpecError, UsageError


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    except FileNotFoundError:
        raise UsageError(
            "base_ref= needs git, and git is not installed", params=["base_ref"]
        ) from None


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
        raise UsageError(f"base_ref={ref!r}: not a git ref name", params=["base_ref"])
    found = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if found.returncode != 0:
        raise UsageError(
            f"base_ref={ref}: no such commit; fetch it first (git fetch origin)",
            params=["base_ref"],
        )
    return found.stdout.decode().strip()


MAX_BASE_FILE_BYTES = 256 * 1024 * 1024
"""A base file larger than this is left out unread (git never loads it either): review reads
suites, includes, recordings and caches, and a 300 MB asset is none of those. A recording this
large in the base leaves its cases without evidence (exit 3), never a silent pass."""
MAX_BASE_TREE_BYTES = 2 * 1024 * 1024 * 1024
"""Review refuses a base whose regular files (those under MAX_BASE_FILE_BYTES) add up to more."""
_CHUNK = 1024 * 1024
_REGULAR = (b"100644", b"100755")
"""git's modes of plain files; links (120000) and submodules (160000) are never materialised."""


def export_tree(root: Path, commit: str, dest: Path) -> None:
    """Write the regular files of `commit` under `dest`, one at a time from `git cat-file`.

    Symbolic links and submodules are never created (nothing of the base can point outside
    `dest`), files over MAX_BASE_FILE_BYTES are never read, and this process holds one chunk at
    a time, whatever the size of the tree."""
    wanted = _regular_files(root, commit)
    try:
        git = subprocess.Popen(
            ["git", "-C", str(root), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise UsageError(
            "base_ref= needs git, and git is not installed", params=["base_ref"]
        ) from None
    assert git.stdin is not None and git.stdout is not None
    try:
        for oid, path in wanted:
            git.stdin.write(oid + b"\n")
            git.stdin.flush()
            header = git.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise UsageError(f"git cat-file: cannot read {path} of {commit[:12]}")
            _copy(git.stdout, int(header[2]), _safe_target(dest, path, commit))
            git.stdout.read(1)  # the newline after each object
    finally:
        git.stdin.close()
        git.stdout.close()
        git.kill()
        git.wait()


def _regular_files(root: Path, commit: str) -> list[tuple[bytes, str]]:
    """(object id, path) of every regular file of `commit` small enough to read."""
    listed = _git(root, "ls-tree", "-r", "-l", "-z", "--full-tree", commit)
    if listed.returncode != 0:
        raise UsageError(f"git ls-tree {commit[:12]} failed: {listed.stderr.decode()[:200]}")
    out, total = [], 0
    for entry in listed.stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode, kind, oid, size = meta.split()
        if mode not in _REGULAR or kind != b"blob" or int(size) > MAX_BASE_FILE_BYTES:
            continue
        total += int(size)
        if total > MAX_BASE_TREE_BYTES:
            raise UsageError(
                f"the base {commit[:12]} holds more than {MAX_BASE_TREE_BYTES} bytes of files; "
                "review reads the base tree from git, so keep large assets out of the "
                "repository (or in git LFS)"
            )
        out.append((oid, name.decode("utf-8", "surrogateescape")))
    return out


def _copy(stream: Any, size: int, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        while size > 0:
            chunk = stream.read(min(_CHUNK, size))
            if not chunk:
                raise UsageError(f"git cat-file ended early while writing {target.name}")
            out.write(chunk)
            size -= len(chunk)


def _safe_target(dest: Path, name: str, commit: str) -> Path:
    """Where a file of the base goes: inside `dest`, or a UsageError."""
    rel = posixpath.normpath(name)
    if posixpath.isabs(rel) or rel == ".." or rel.startswith("../") or "\0" in rel:
        raise UsageError(f"the base {commit[:12]} holds a file named {name!r}, outside the tree")
    return dest / rel


def suite_from_git(ref: str, path: Path) -> Suite | None:
    """Load the suite at `path` as it is at git `ref`, with its includes from the same ref.

    The file and every file it includes are copied from the ref into a temporary tree that
    mirrors the repository, so relative includes resolve as they would in a checkout. Returns
    None when the file does not exist at that ref (a new suite).
    """
    from evalspec._suite.validate import load_suite

    try:
        root = repo_root(path.parent)
    except UsageError:
        raise UsageError(
            f"base_ref={ref}: {path} is not inside a git repository", params=["base_ref"]
        ) from None
    commit = resolve_commit(root, ref)
    try:
        rel = path.resolve().relative_to(root).as_posix()
    except ValueError:
        raise UsageError(
            f"base_ref={ref}: {path} is outside the repository at {root}", params=["base_ref"]
        ) from None
    if _git(root, "cat-file", "-e", f"{commit}:{rel}").returncode != 0:
        return None
    with tempfile.TemporaryDirectory(prefix="evalspec-base-") as tmp:
        _materialise(root, commit, rel, Path(tmp), set(), ref)
        _materialise_tool_lock(root, commit, rel, Path(tmp))
        try:
            return load_suite(Path(tmp) / rel)
        except SpecError as exc:
            # Problems name the files as they are at the ref, not the temporary copy.
            raise SpecError([at_ref(p, Path(tmp), ref) for p in exc.problems]) from None


def lock_drift_at(ref: str, path: Path) -> list[ServerDrift]:
    """How the lock beside the suite at `path` differs from its lock at git `ref`, as
    `tools refresh --check` says it (nothing when the suite is new at the ref)."""
    from evalspec._suite.mcp_drift import locks_drift

    root = repo_root(path.parent)
    commit = resolve_commit(root, ref)
    rel = path.resolve().relative_to(root).as_posix()
    with tempfile.TemporaryDirectory(prefix="evalspec-base-") as tmp:
        if _git(root, "cat-file", "-e", f"{commit}:{rel}").returncode != 0:
            return []
        from evalspec._suite.mcp_lock import lock_path

        _materialise_lock(root, commit, lock_path(rel).as_posix(), Path(tmp))
        return locks_drift(Path(tmp) / rel, path)


def _materialise_tool_lock(root: Path, commit: str, rel: str, dest: Path) -> None:
    """The suite's MCP tool lock files as they are at `commit`, those it has there: its own,
    and each tool variant's (`variants: [{lock: ...}]`)."""
    from evalspec._suite.mcp_lock import lock_path

    _materialise_lock(root, commit, lock_path(rel).as_posix(), dest)
    for lock in _variant_locks((dest / rel).read_bytes()):
        lock_rel = posixpath.normpath(posixpath.join(posixpath.dirname(rel), lock))
        if not posixpath.isabs(lock) and not lock_rel.startswith("../"):
            _materialise_lock(root, commit, lock_rel, dest)  # others: load_suite refuses them


def _parsed(text: bytes) -> Any:
    """A base file's data, read only to find the files it names (None when it is no YAML:
    load_suite reports the mistake with its position). With libyaml where installed, as
    load_suite reads it: PyYAML's Python parser took seconds on a large base, twice a file, and
    on deep nesting ran to Python's recursion limit where libyaml stops at once."""
    import yaml

    loader = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader
    try:
        return yaml.load(text, Loader=loader)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None


def _variant_locks(text: bytes) -> list[str]:
    """The lock files a suite's tool variants name."""
    doc = _parsed(text)
    variants = doc.get("variants") if isinstance(doc, dict) else None
    listed = variants if isinstance(variants, list) else []
    return [
        v["lock"]
        for v in listed
        if isinstance(v, dict) and isinstance(v.get("lock"), str) and "\x00" not in v["lock"]
    ]


def _materialise_lock(root: Path, commit: str, lock_rel: str, dest: Path) -> None:
    """One lock file as it is at `commit`, when it is there."""
    size = _git(root, "cat-file", "-s", f"{commit}:{lock_rel}")
    if size.returncode == 0 and int(size.stdout.strip() or 0) > MAX_FILE_BYTES:
        raise UsageError(f"{lock_rel} is larger than {MAX_FILE_BYTES} bytes at the base")
    shown = _git(root, "show", f"{commit}:{lock_rel}")
    if shown.returncode == 0:
        (dest / lock_rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / lock_rel).write_bytes(shown.stdout)


def at_ref(problem: Problem, tmp: Path, ref: str) -> Problem:
    """The problem with its file named as at the ref (`main:suites/x.yaml`), not as the
    temporary copy it was read from."""
    for base in {str(tmp), str(tmp.resolve())}:
        if problem.file.startswith(base + os.sep):
            name = f"{ref}:{Path(problem.file[len(base) + 1 :]).as_posix()}"
            return replace(problem, file=name, message=problem.message.replace(base + os.sep, ""))
    return problem


def _materialise(root: Path, commit: str, rel: str, dest: Path, done: set[str], ref: str) -> None:
    """Copy `commit:rel` into `dest/rel`, then every file it includes, recursively."""
    if rel in done:
        return
    done.add(rel)
    if len(done) > MAX_INCLUDES + 1:
        raise UsageError(
            f"base_ref={ref}: the suite includes more than {MAX_INCLUDES} files in all",
            params=["base_ref"],
        )
    kind = _git(root, "cat-file", "-t", f"{commit}:{rel}" if rel != "." else f"{commit}^{{tree}}")
    if kind.returncode == 0 and kind.stdout.strip() != b"blob":
        raise UsageError(
            f"base_ref={ref}: {rel} is included but is a directory at {ref}, not a file; "
            "an include names a .yaml file",
            params=["base_ref"],
        )
    size = _git(root, "cat-file", "-s", f"{commit}:{rel}")
    if size.returncode == 0 and int(size.stdout.strip() or 0) > MAX_FILE_BYTES:
        raise UsageError(
            f"base_ref={ref}: {rel} is larger than {MAX_FILE_BYTES} bytes at {ref}",
            params=["base_ref"],
        )
    shown = _git(root, "show", f"{commit}:{rel}")
    if shown.returncode != 0:
        raise UsageError(
            f"base_ref={ref}: {rel} is included but does not exist at {ref}; "
            f"check out {ref} and pass both suite files instead",
            params=["base_ref"],
        )
    target = dest / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(shown.stdout)
    for inc in _includes(shown.stdout):
        if not inc.strip() or "\x00" in inc:
            continue  # load_suite reports an empty include at its place
        if posixpath.isabs(inc):
            raise UsageError(
                f"base_ref={ref}: {rel} includes the absolute path {inc}, which cannot be "
                f"read from git; check out {ref} and pass both suite files instead",
                params=["base_ref"],
            )
        inc_rel = posixpath.normpath(posixpath.join(posixpath.dirname(rel), inc))
        if inc_rel.startswith("../"):
            raise UsageError(
                f"base_ref={ref}: {rel} includes {inc}, outside the repository; "
                f"check out {ref} and pass both suite files instead",
                params=["base_ref"],
            )
        _materialise(root, commit, inc_rel, dest, done, ref)


def _includes(text: bytes) -> list[str]:
    """`include:` targets in a suite or an included file (tools and cases lists)."""
    doc = _parsed(text)
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
