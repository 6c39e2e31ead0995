"""One registry for everything a suite names by kind: critics, evaluators, final-answer checks,
tool environments.

evalspec's own checks and an installed plugin's are the same kind of thing: both register with
`register(kind)`, both are found with `find(kind, name)`, and `evalspec schema`, `validate` and
scoring read them from here alike. Each entry records where it came from (`origin`): "evalspec"
for a built-in, the entry point's name for a plugin.

Built-ins are loaded the way plugins are, by module name: each kind names the module whose
import registers its built-ins, imported on the kind's first lookup (so the lowest layer of the
package names modules above it only as text, as an entry point does). Installed plugins make
their module known through the entry-point group ``evalspec.plugins``; they load on the first
lookup of a name that is not built in. A plugin may not take a built-in's name.
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from evalspec._util.errors import UsageError

ENTRY_POINT_GROUP = "evalspec.plugins"
DISABLE_ENV = "EVALSPEC_NO_PLUGINS"
"""Set (to anything) to ignore installed plugins, e.g. to tell a broken plugin from a bad suite."""
BUILTIN = "evalspec"
"""The origin of evalspec's own entries."""


@dataclass(frozen=True)
class PluginKind:
    """One kind of thing a suite names: what it is called in messages, and where its built-ins
    are registered."""

    name: str
    label: str
    builtins: str = ""
    """The module whose import registers the built-ins of this kind ("" for none)."""
    call_arity: int = 1
    """Positional parameters of the current call form; an implementation taking more is an old
    positional plugin (`legacy`)."""


KINDS: dict[str, PluginKind] = {
    kind.name: kind
    for kind in (
        PluginKind("critic", "critic", "evalspec._critics", call_arity=0),
        PluginKind("evaluator", "evaluator", "evalspec._scoring.evaluators"),
        PluginKind("final_answer", "final-answer check", "evalspec._scoring.final_answer"),
        PluginKind(
            "environment", "tool environment", "evalspec._interop.bfcl_environment", call_arity=0
        ),
    )
}
"""Adding a kind is one line here."""


@dataclass(frozen=True)
class Plugin:
    """One registered critic, evaluator or check: its kind, the name suites use, its
    implementation, the JSON Schema of its options, and where it came from."""

    kind: str
    name: str
    impl: Any
    options: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    origin: str = BUILTIN
    """"evalspec" for a built-in; the entry point's name for an installed plugin; the module's
    name for one registered directly by code (a test, a notebook)."""
    from_entry_point: bool = False
    legacy: bool = False
    """An old positional plugin: ``fn(transcript, expected_calls, params)`` for an evaluator,
    ``fn(answer, params)`` for a final-answer check."""
    asynchronous: bool = False
    """An `async def` (a check that needs an event loop, as the LLM judge does)."""
    builtin: bool = field(init=False)
    """evalspec's own (worked out once: lookups read it on every check)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "builtin", self.origin == BUILTIN and not self.from_entry_point)


_REGISTRY: dict[str, dict[str, Plugin]] = {kind: {} for kind in KINDS}
_builtins_loaded: set[str] = set()
_entry_points_loaded = False
_loading: Any = None
"""The entry point being imported, while it is (its registrations carry its name)."""
_loaded_names: set[str] = set()
"""Plugin points imported in this process (each imports once)."""
_skipped_names: set[str] = set()
"""Plugin points passed over while `allow_only` hid them: they load once it ends."""
_allowed: frozenset[str] | None = None
"""Plugin-point names that may load (None: every installed one); see `allow_only`."""


def register(
    kind: str,
    name: str | None = None,
    *,
    options: dict[str, Any] | None = None,
    description: str = "",
) -> Callable[[Any], Any]:
    """Decorator: make a critic class, evaluator or final-answer check usable in suites.

    `options` is the JSON Schema of its options in YAML (default: any mapping). A plugin that
    takes the name of one of evalspec's own is refused, naming both."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")

    def add(impl: Any) -> Any:
        entry_name = name or getattr(impl, "kind", None) or impl.__name__
        if kind == "critic" and getattr(impl, "kind", entry_name) != entry_name:
            raise ValueError(f"critic class {impl.__name__} has kind {impl.kind!r}, not {name!r}")
        origin, from_entry_point = _origin_of(impl)
        existing = _REGISTRY[kind].get(entry_name)
        if existing is not None and existing.builtin and (origin != BUILTIN or from_entry_point):
            where = f"plugin {origin!r}" if from_entry_point else f"{origin}"
            raise UsageError(
                f"{where} registers the {KINDS[kind].label} {entry_name!r}, which is evalspec's "
                f"own {KINDS[kind].label} {entry_name!r} ({_qualname(existing.impl)}); a plugin "
                "may not replace a built-in: rename it in that plugin"
            )
        doc = description or (impl.__doc__ or "").strip().split("\n")[0]
        _REGISTRY[kind][entry_name] = Plugin(
            kind,
            entry_name,
            impl,
            options if options is not None else {"type": "object"},
            doc,
            origin,
            from_entry_point,
            _legacy(kind, impl),
            inspect.iscoroutinefunction(impl),
        )
        return impl

    return add


def _origin_of(impl: Any) -> tuple[str, bool]:
    module = getattr(impl, "__module__", "") or ""
    if _loading is not None:
        package = _loading.module.partition(":")[0]
        if module == package or module.startswith(package + ".") or not _is_evalspec(module):
            return _loading.name, True
    if _is_evalspec(module):
        return BUILTIN, False
    return module or "__main__", False


def _is_evalspec(module: str) -> bool:
    return module == "evalspec" or module.startswith("evalspec.")


def _qualname(impl: Any) -> str:
    return f"{getattr(impl, '__module__', '?')}.{getattr(impl, '__qualname__', impl)}"


def _legacy(kind: str, impl: Any) -> bool:
    """Does `impl` take the old positional arguments instead of one input record?"""
    arity = KINDS[kind].call_arity
    if not arity or inspect.isclass(impl):
        return False
    try:
        params = inspect.signature(impl).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) > arity


def unregister(kind: str, name: str) -> None:
    """Remove a registration (tests, or a plugin replacing another)."""
    _REGISTRY[kind].pop(name, None)


def _load_builtins(kind: str) -> None:
    if kind in _builtins_loaded:
        return
    _builtins_loaded.add(kind)
    if KINDS[kind].builtins:
        importlib.import_module(KINDS[kind].builtins)


def load_entry_points() -> None:
    """Import every installed plugin module once (after evalspec's own entries, so a plugin
    taking a built-in's name is caught); a broken plugin is a clear usage error."""
    global _entry_points_loaded, _loading
    if _entry_points_loaded:
        return
    for kind in KINDS:
        _load_builtins(kind)
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
        _loading = ep
        try:
            ep.load()
        except UsageError:
            raise
        except Exception as exc:  # a plugin's own import failure, whatever it is
            raise UsageError(
                f"evalspec plugin {ep.name!r} ({ep.value}) failed to load: "
                f"{type(exc).__name__}: {exc}; reinstall or uninstall that package"
            ) from None
        finally:
            _loading = None


@contextmanager
def allow_only(names: Iterable[str]) -> Iterator[None]:
    """Within the block, load only the installed plugins of these entry-point names, and hide
    the others; evalspec's own entries stay. After it, the process is as it was.

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


def _shown(entry: Plugin) -> bool:
    return not entry.from_entry_point or _allowed is None or entry.origin in _allowed


def find(kind: str, name: str) -> Plugin | None:
    """The entry a suite means by `name` of this kind, built-in or installed; None if unknown.

    A built-in is found without looking at installed plugins."""
    entry = _REGISTRY[kind].get(name)
    if entry is not None and entry.builtin:
        return entry  # the path every check of a suite takes: two dict lookups
    _load_builtins(kind)
    entry = _REGISTRY[kind].get(name)
    if entry is None or not entry.builtin:
        load_entry_points()
        entry = _REGISTRY[kind].get(name)
    return entry if entry is not None and _shown(entry) else None


def registered(kind: str, *, builtins: bool = True) -> dict[str, Plugin]:
    """Every entry of one kind by name, installed plugins included (built-ins too unless
    `builtins` is false)."""
    load_entry_points()
    return {
        name: entry
        for name, entry in _REGISTRY[kind].items()
        if _shown(entry) and (builtins or not entry.builtin)
    }


def builtin_names(kind: str) -> frozenset[str]:
    """The names evalspec itself registers for a kind; loads no plugin."""
    _load_builtins(kind)
    return frozenset(name for name, entry in _REGISTRY[kind].items() if entry.builtin)
