"""Fixtures every test module may use; plain helpers are in support.py."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, free_port


@pytest.fixture
def write_suite(tmp_path: Path):
    """Write YAML text (dedented) to a suite file and return its path."""

    def write(text: str, name: str = "suite.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture
def no_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only evalspec's own critics and checks, whatever plugins are installed (exact messages
    list every known name)."""
    from evalspec._util import registry

    for kind in registry.KINDS:
        registry.builtin_names(kind)  # evalspec's own are registered before the others hide
    builtins_only = {
        kind: {name: e for name, e in entries.items() if e.builtin}
        for kind, entries in registry._REGISTRY.items()
    }
    monkeypatch.setattr(registry, "_entry_points_loaded", True)
    monkeypatch.setattr(registry, "_REGISTRY", builtins_only)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    """tests/mcp_server.py serving MCP over streamable HTTP; its URL once it accepts connections.
    Its calls are logged to tmp_path/calls.jsonl."""
    port = free_port()
    server = ROOT / "tests" / "mcp_server.py"
    log = tmp_path / "calls.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(server), "--http", str(port), "--log", str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Wait for the event (the port accepts), giving up after 30 s: a start-up bound, not a
        # measurement.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, f"the MCP server exited ({proc.returncode})"
                time.sleep(0.1)
        else:
            pytest.fail("the MCP server did not listen within 30 s")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


CHROMIUM = os.environ.get("EVALSPEC_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's chromium (the system browser, by its path) driven by Playwright, one per module;
    the test is skipped, saying why, when either is missing or the browser cannot start here."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except Exception as exc:  # a browser that cannot start here: say why, do not fail
            pytest.skip(f"chromium would not start: {exc}")
        yield b
        b.close()
