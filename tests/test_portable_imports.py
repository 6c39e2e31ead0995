"""evalspec imports where POSIX-only modules do not exist (Windows, for which the README gives
set-up steps): every module is imported in a child process in which evalspec's own code cannot
import fcntl, pwd, grp, termios, tty, pty, resource, syslog or crypt. Third-party packages may
still import them (they do their own platform checks); evalspec may use them only behind a
check of its own, never at a module's top.

A module that needs an optional extra's package (Ray) is checked where that extra is installed
(CI's checks environment); without it, its check skips, naming the extra.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "evalspec"

POSIX_ONLY = ("fcntl", "pwd", "grp", "termios", "tty", "pty", "resource", "syslog", "crypt")

OPTIONAL = {"ray": "ray"}
"""Packages evalspec modules may import at their top that only an extra installs: the extra."""

CHILD = r"""
import builtins, importlib, importlib.abc, json, sys, traceback

POSIX_ONLY = set(json.loads(sys.argv[1]))
MODULES = json.loads(sys.argv[2])
OPTIONAL = set(json.loads(sys.argv[3]))


def from_evalspec(frame):
    # The first frame outside the import machinery is the importing module's.
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not name.startswith(("importlib", "_frozen_importlib")) and name != __name__:
            return name == "evalspec" or name.startswith("evalspec.")
        frame = frame.f_back
    return False


class RefusePosixOnly(importlib.abc.MetaPathFinder):
    # Refuses a POSIX-only module to evalspec's code when it is found for the first time.
    def find_spec(self, fullname, path, target=None):
        if fullname.partition(".")[0] in POSIX_ONLY and from_evalspec(sys._getframe(1)):
            raise ImportError(f"No module named {fullname!r} (as on Windows)")
        return None


sys.meta_path.insert(0, RefusePosixOnly())
plain_import = builtins.__import__


def refusing_import(name, globals=None, locals=None, fromlist=(), level=0):
    # An already imported module never reaches a finder: refuse those by the importer's name.
    importer = (globals or {}).get("__name__", "")
    if level == 0 and name.partition(".")[0] in POSIX_ONLY and (
        importer == "evalspec" or importer.startswith("evalspec.")
    ):
        raise ImportError(f"No module named {name!r} (as on Windows)")
    return plain_import(name, globals, locals, fromlist, level)


builtins.__import__ = refusing_import
failed, absent = {}, {}
for module in MODULES:
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        package = (exc.name or "").partition(".")[0]
        if package in OPTIONAL and importlib.util.find_spec(package) is None:
            absent[module] = package  # an extra not installed here, not a POSIX-only module
        else:
            failed[module] = traceback.format_exc(limit=-3)
    except Exception:
        failed[module] = traceback.format_exc(limit=-3)
print(json.dumps({"failed": failed, "absent": absent}))
"""


def _modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue  # runs the command line when imported
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


@dataclass(frozen=True)
class Imported:
    failed: dict[str, str]
    """Module: the end of its traceback."""
    absent: dict[str, str]
    """Module not imported: the optional package it needs, not installed here."""


def _import_all(
    modules: list[str], refused: tuple[str, ...], optional: tuple[str, ...] = tuple(OPTIONAL)
) -> Imported:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, *map(json.dumps, (refused, modules, optional))],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return Imported(**json.loads(proc.stdout.strip().splitlines()[-1]))


@functools.cache
def _every_module() -> Imported:
    """Every module of evalspec imported once, POSIX-only modules refused (for both tests)."""
    modules = _modules()
    assert len(modules) > 100 and "evalspec._util.files" in modules
    return _import_all(modules, POSIX_ONLY)


@pytest.mark.slow  # a scan of the repository: runs with --all (CI), see CONTRIBUTING
def test_every_module_imports_without_posix_only_modules():
    failed = _every_module().failed
    assert not failed, "\n".join(f"{name}:\n{trace}" for name, trace in failed.items())


@pytest.mark.slow  # a scan of the repository: runs with --all (CI), see CONTRIBUTING
@pytest.mark.parametrize("package", sorted(OPTIONAL))
def test_modules_needing_an_extra_import_without_posix_only_modules(package: str) -> None:
    """Checked by the test above where the extra is installed; skipped, naming it, elsewhere."""
    absent = sorted(m for m, p in _every_module().absent.items() if p == package)
    if absent:
        pytest.skip(
            f"{package} is not installed (the {OPTIONAL[package]!r} extra: pip install -e "
            f"'.[{OPTIONAL[package]}]'): {', '.join(absent)} not imported"
        )
    assert not _every_module().failed


@pytest.mark.slow  # checks the scan above in a child process: runs with --all
def test_the_child_refuses_a_posix_only_import_in_evalspec_code():
    """The check itself can fail: refusing a module evalspec imports at the top (json here, as
    a stand-in) breaks exactly the modules that import it, and not third-party code using it."""
    imported = _import_all(["evalspec._util.files", "jsonschema"], ("json",))
    assert "No module named 'json'" in imported.failed["evalspec._util.files"]
    assert "jsonschema" not in imported.failed and not imported.absent


@pytest.mark.slow  # checks the scan above in a child process: runs with --all
def test_only_an_absent_extra_excuses_a_module(tmp_path: Path, monkeypatch) -> None:
    """A module that needs a package no extra installs fails the check; one that needs an
    extra's package, not installed here, is reported as not imported (and its check skips)."""
    (tmp_path / "needs_it.py").write_text("import no_such_package_here\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    imported = _import_all(["needs_it"], POSIX_ONLY)
    assert "no_such_package_here" in imported.failed["needs_it"] and not imported.absent
    imported = _import_all(["needs_it"], POSIX_ONLY, optional=("no_such_package_here",))
    assert imported.absent == {"needs_it": "no_such_package_here"} and not imported.failed
