"""StableToolBench response caches: read them, find them, and append to them.

A cache file is one JSON object per API. Its keys are the call arguments as Python prints a dict
(``str({'player_id': 'messi'})``, the argument order the model used) and its values are
``{"error": "", "response": ...}``. That is exactly what StableToolBench's virtual API server
reads and writes, so caches move between the two systems unchanged.

Lookup is exact on ``str(arguments)`` first, then on a canonical form (keys sorted at every depth)
so that ``{"a": 1, "b": 2}`` finds an entry stored as ``"{'b': 2, 'a': 1}"``.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

from evalspec._tools.toolbench_names import function_name, standardize
from evalspec._util.errors import SpecError
from evalspec._util.files import read_json_object, update_json_object
from evalspec._util.project import kind

CACHE_WHAT = "a tool response cache (one JSON object of call -> answer)"
TOOL_CACHE = kind("tool response cache")
"""A tool's `cache.file`, a file of its `cache.dir`, an MCP tool's recorded outputs."""
TOOL_CACHE_DIR = kind("tool response cache folder", directory=True)


def standardize_category(category: str) -> str:
    """Directory name StableToolBench's server uses for a category."""
    out = category.replace(" ", "_").replace(",", "_").replace("/", "_")
    while "__" in out:
        out = out.replace("__", "_")
    return out


def cache_key(arguments: dict[str, Any]) -> str:
    """The key StableToolBench uses: the Python repr of the arguments dict."""
    return str(arguments)


def canonical_key(arguments: Any) -> str:
    """Order-independent form of arguments, used as the second lookup."""
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def _parse_key(key: str) -> Any:
    """Recover the arguments from a stored key (a Python literal); None if it is not one."""
    try:
        return ast.literal_eval(key)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        try:
            return json.loads(key)
        except ValueError:
            return None


class ResponseCache:
    """One cache file, loaded once, with exact and order-independent lookup."""

    def __init__(self, path: Path):
        self.path = path
        self._entries: dict[str, Any] | None = None
        self._canonical: dict[str, str] = {}

    def _load(self) -> dict[str, Any]:
        if self._entries is None:
            self._entries = self._read_disk()
            self._canonical = {}
            for key in self._entries:
                self._index(key)
        return self._entries

    def _read_disk(self) -> dict[str, Any]:
        """What the file holds; a file that is not a cache reads as empty (see `check`)."""
        try:
            return read_json_object(self.path, CACHE_WHAT)
        except (OSError, SpecError):
            return {}

    def check(self) -> None:
        """A SpecError if the file exists but is not a cache, so a run refuses it up front."""
        read_json_object(self.path, CACHE_WHAT)

    def _index(self, key: str) -> None:
        parsed = _parse_key(key)
        if parsed is not None:
            self._canonical.setdefault(canonical_key(parsed), key)

    def entries(self) -> dict[str, Any]:
        """All stored entries, key -> {"error", "response"} (read-only view)."""
        return dict(self._load())

    def get(self, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The stored entry for these arguments, or None."""
        entries = self._load()
        entry = entries.get(cache_key(arguments))
        if entry is None:
            key = self._canonical.get(canonical_key(arguments))
            entry = entries.get(key) if key is not None else None
        return entry if isinstance(entry, dict) else None

    def put(self, arguments: dict[str, Any], entry: dict[str, Any]) -> None:
        """Store an entry: merged, under a lock, with what is on disk now (other writers'
        entries stay), and the file replaced atomically. A file that is not a cache is refused."""
        key = cache_key(arguments)
        merged = update_json_object(self.path, {key: entry}, CACHE_WHAT, indent=2, sort_keys=False)
        merged = {**self._load(), **merged}
        self._entries = merged
        for k in merged:
            self._index(k)


def _tool_dir_names(tool_dir: str, category: str) -> set[str]:
    """Standardized tool names a cache tool directory may stand for.

    StableToolBench's server names it ``<tool>_for_<category>``; hand-made caches often use the
    plain tool name. Both are accepted.
    """
    names = {standardize(tool_dir)}
    suffix = f"_for_{standardize_category(category)}"
    if tool_dir.endswith(suffix):
        names.add(standardize(tool_dir[: -len(suffix)]))
    low_suffix = f"_for_{standardize(category)}"
    std = standardize(tool_dir)
    if std.endswith(low_suffix):
        names.add(std[: -len(low_suffix)])
    return names


def index_cache_dir(cache_dir: Path) -> dict[str, Path]:
    """Map function name -> cache file for every file in a cache directory.

    Files three levels down, ``<dir>/<category>/<tool>/<api>.json`` (StableToolBench's layout),
    are known by the function name :func:`function_name` derives from the tool directory and the
    file stem. Files at any other depth (``<dir>/<name>.json``, ``<dir>/x/<name>.json``) are known
    by their stem, which is the evalspec tool name as written.
    """
    found: dict[str, Path] = {}
    if not cache_dir.is_dir():
        return found
    for path in sorted(_json_files(cache_dir)):
        rel = path.relative_to(cache_dir).parts
        if len(rel) == 3:
            category, tool_dir, _ = rel
            for tool in sorted(_tool_dir_names(tool_dir, category)):
                found.setdefault(function_name(tool, path.stem), path)
        else:
            found.setdefault(path.stem, path)
    return found


def _json_files(folder: Path) -> list[Path]:
    """The `.json` files under `folder`, never looking inside a linked folder; a linked file
    is listed, and refused where it is used (see evalspec._util.project)."""
    return [
        Path(top, name)
        for top, _, files in os.walk(folder)
        for name in files
        if name.endswith(".json")
    ]
