"""Public modules that load each name on first use, from one list of names.

A public module (`evalspec`, `evalspec.api`, `evalspec.records`, `evalspec.errors`) lists its
names once, as the imports of its ``if TYPE_CHECKING:`` block (``from m import x as x``), which
type checkers and the documentation read. At run time those imports never run: the first name
asked for reads the block back (a few hundred lines of source, parsed once) and imports that
name's module alone, so `import evalspec` stays cheap and no table repeats the names.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import Any


@cache
def exports(source: str) -> dict[str, tuple[str, str]]:
    """Each public name of the module at `source`, in the order written, and where it comes
    from: a module and the name there."""
    import ast  # only once a name is asked for: `import evalspec` reads no source

    tree = ast.parse(Path(source).read_text(encoding="utf-8"))
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.module:
                    found.update({a.asname or a.name: (imp.module, a.name) for a in imp.names})
    return found


def lazy_names(
    module: str, source: str, namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of a public module: `__all__` is its list of names, and
    each name is imported from its own module when first asked for, then kept."""

    def getattr_(name: str) -> Any:
        if name == "__all__":
            return list(exports(source))
        where = exports(source).get(name)
        if where is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(import_module(where[0]), where[1])
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted({*namespace, *exports(source)})

    return getattr_, dir_
