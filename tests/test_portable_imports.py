"""evalspec imports where POSIX-only modules do not exist (Windows, for which the README gives
set-up steps): every module is imported in a child process in which evalspec's own code cannot
import fcntl, pwd, grp, termios, tty, pty, resource, syslog or crypt. Third-party packages may
still import them (they do their own platform checks); evalspec may use them only behind a
check of its own, never at a module's top.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "evalspec"

POSIX_ONLY = ("fcntl", "pwd", "grp", "termios", "tty", "pty", "resource", "syslog", "crypt")

CHILD = r"""
import builtins, importlib, importlib.abc, json, sys, traceback

POSIX_ONLY = set(json.loads(sys.argv[1]))
MODULES = json.loads(sys.argv[2])


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
failed = {}
for module in MODULES:
    try:
        importlib.import_module(module)
    except Exception:
        failed[module] = traceback.format_exc(limit=-3)
print(json.dumps(failed))
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


def _import_all(modules: list[str], refused: tuple[str, ...]) -> dict[str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(refused), json.dumps(modules)],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_module_imports_without_posix_only_modules():
    modules = _modules()
    assert len(modules) > 100 and "evalspec._util.files" in modules
    failed = _import_all(modules, POSIX_ONLY)
    assert not failed, "\n".join(f"{name}:\n{trace}" for name, trace in failed.items())


def test_the_child_refuses_a_posix_only_import_in_evalspec_code():
    """The check itself can fail: refusing a module evalspec imports at the top (json here, as
    a stand-in) breaks exactly the modules that import it, and not third-party code using it."""
    failed = _import_all(["evalspec._util.files", "jsonschema"], ("json",))
    assert "No module named 'json'" in failed["evalspec._util.files"]
    assert "jsonschema" not in failed


def test_review_budget_holds_without_a_timer_signal(monkeypatch):
    """Windows has no SIGALRM: review's time budget still ends a review that runs too long."""
    import signal
    import threading

    import pytest

    from evalspec._suite.limits import ReviewTimeUp, review_budget

    monkeypatch.delattr(signal, "SIGALRM")
    monkeypatch.setenv("EVALSPEC_REVIEW_SECONDS", "0.05")
    never = threading.Event()
    with pytest.raises(ReviewTimeUp, match=r"time budget of 0\.05 s"), review_budget("review"):
        while not never.wait(0.01):
            pass
    monkeypatch.setenv("EVALSPEC_REVIEW_SECONDS", "600")
    with review_budget("review"):
        done = "in time"
    assert done == "in time"
