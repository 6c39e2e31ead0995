"""One registry for critics, evaluators and final-answer checks that do not ship with evalspec.

A plugin is a Python module that registers with the `register` decorator; an installed package
makes its module known through the entry-point group ``evalspec.plugins``::

    [project.entry-points."evalspec.plugins"]
    my_checks = "my_checks"

so `pip install my-checks` makes `my_date: {...}` valid in suites: the schema, `validate` (with
did-you-mean) and scoring all read this registry. What each kind registers:

- ``critic``: a `evalspec._critics.Critic` subclass with ``kind`` and ``from_params(params)``
  (raise ValueError for bad options), exactly like the built-in critics.
- ``evaluator``: ``fn(transcript, expected_calls, params) -> score`` or ``(score, details)``,
  score in [0, 1]; raise ValueError for bad params.
- ``final_answer``: ``fn(answer, params) -> score`` or ``(score, reason)``; raise ValueError for
  bad params. A missing answer scores 0 before the function is called.

`options` is the JSON Schema of the plugin's options in YAML (default: any mapping, or `true`).
Plugins are code the user chose to install; nothing here loads a module a suite names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from evalspec._util.errors import UsageError

ENTRY_POINT_GROUP = "evalspec.plugins"
DISABLE_ENV = "EVALSPEC_NO_PLUGINS"
"""Set (to anything) to ignore installed plugins, e.g. to tell a broken plugin from a bad suite."""
KINDS = ("critic", "evaluator", "final_answer", "environment")


@dataclass(frozen=True)
class Plugin:
    """One registered check: its kind, the name suites use, and its implementation."""

    kind: str
    name: str
    impl: Any
    options: dict[str, Any] = field(default_factory=dict)
    description: str = ""


_REGISTRY: dict[str, dict[str, Plugin]] = {kind: {} for kind in KINDS}
_entry_points_loaded = False
_loaded_names: set[str] = set()
"""Entry points imported in this process (each imports once)."""
_skipped_names: set[str] = set()
"""Entry points passed over while `allow_only` hid them: they load once it ends."""
_origin: dict[tuple[str, str], str] = {}
"""(kind, name) -> the entry point whose import registered it."""
_allowed: frozenset[str] | None = None
"""Entry-point names that may load (None: every installed one); see `allow_only`."""


def register(
    kind: str,
    name: str | None = None,
    *,
    options: dict[str, Any] | None = None,
    description: str = "",
) -> Callable[[Any], Any]:
    """Decorator: make a critic class, evaluator or final-answer function usable in suites."""
    if kind not in KINDS:
        raise ValueError(f"plugin kind {kind!r} is not one of {', '.join(KINDS)}")

    def add(impl: Any) -> Any:
        plugin_name = name or getattr(impl, "kind", None) or impl.__name__
        if kind == "critic" and getattr(impl, "kind", plugin_name) != plugin_name:
            raise ValueError(f"critic class {impl.__name__} has kind {impl.kind!r}, not {name!r}")
        doc = description or (impl.__doc__ or "").strip().split("\n")[0]
        schema = options if options is not None else {"type": "object"}
        _REGISTRY[kind][plugin_name] = Plugin(kind, plugin_name, impl, schema, doc)
        return impl

    return add


def unregister(kind: str, name: str) -> None:
    """Remove a registration (tests, or a plugin replacing another)."""
    _REGISTRY[kind].pop(name, None)


def load_entry_points() -> None:
    """Import every installed plugin module once; a broken plugin is a clear usage error."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    if os.environ.get(DISABLE_ENV):
        return
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _loaded_names:
            continue
        if _allowed is not None and ep.name not in _allowed:
            _skipped_names.add(ep.name)
            continue
        _loaded_names.add(ep.name)
        before = {(kind, name) for kind in KINDS for name in _REGISTRY[kind]}
        try:
            ep.load()
        except Exception as exc:  # a plugin's own import failure, whatever it is
            raise UsageError(
                f"evalspec plugin {ep.name!r} ({ep.value}) failed to load: "
                f"{type(exc).__name__}: {exc}; reinstall or uninstall that package"
            ) from None
        for key in {(kind, name) for kind in KINDS for name in _REGISTRY[kind]} - before:
            _origin[key] = ep.name


@contextmanager
def allow_only(names: Iterable[str]) -> Iterator[None]:
    """Within the block, load only the installed plugins of these entry-point names, and hide
    the others; after it, the process is as it was.

    Review runs nothing a pull request could have put there: the workflow of the base branch
    names the plugins it trusts (`evalspec review --plugin NAME`), by default none.
    """
    global _allowed, _entry_points_loaded
    before = _allowed
    _allowed = frozenset(names)
    try:
        yield
    finally:
        _allowed = before
        if _skipped_names:  # passed over only because they were hidden: load on next lookup
            _skipped_names.clear()
            _entry_points_loaded = False


def _shown(kind: str, name: str) -> bool:
    origin = _origin.get((kind, name))
    return _allowed is None or origin is None or origin in _allowed


def registered(kind: str) -> dict[str, Plugin]:
    """Plugins of one kind by name, installed ones included."""
    load_entry_points()
    return {name: p for name, p in _REGISTRY[kind].items() if _shown(kind, name)}
