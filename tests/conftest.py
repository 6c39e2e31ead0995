"""Fixtures every test module may use; plain helpers are in support.py."""

from __future__ import annotations

import gc
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import support
from fault_server import FaultServer
from hypothesis import settings
from support import ROOT, FakeClock, free_port


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any socket opened fails the test: what an offline replay must never do."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a socket was opened")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def write_suite(tmp_path: Path):
    """Write YAML text (dedented) to a suite file and return its path."""

    def write(text: str, name: str = "suite.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


@pytest.fixture(autouse=True)
def evalspec_log_left_as_found() -> Iterator[None]:
    """A CLI run in-process with -v adds a handler on the test's stderr: removed after the test,
    so a later test's log line never goes to a closed stream."""
    logger = logging.getLogger("evalspec")
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all",
        action="store_true",
        help="run the slow tests too (model loads, child processes, browsers, real waits)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Before any test module is imported: the lane's number of property-test examples
    (support.examples), hypothesis's default for tests that ask for none, and where its
    temporary files go."""
    support.LANES.append(bool(config.getoption("--all") or config.getoption("markexpr")))
    _use_lane(support.LANES[-1])
    if not support.LANES[-1] and support.memory_may_hold_temporary_files():
        config.stash[TEMP_BEFORE] = tempfile.tempdir
        tempfile.tempdir = str(support.MEMORY)


def pytest_unconfigure(config: pytest.Config) -> None:
    """A session run inside another (tests/test_lanes.py) gives the outer one its lane back."""
    support.LANES.pop()
    if support.LANES:
        _use_lane(support.LANES[-1])
    if TEMP_BEFORE in config.stash:
        tempfile.tempdir = config.stash[TEMP_BEFORE]


TEMP_BEFORE = pytest.StashKey[str | None]()
"""Where the tempfile module put files before the default lane moved them to memory."""


def _use_lane(every_example: bool) -> None:
    support.EVERY_EXAMPLE = every_example
    settings.register_profile("default-lane", max_examples=support.examples(100))
    settings.load_profile("default" if every_example else "default-lane")


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    """The garbage collector off while the test modules are imported (as `evalspec run` keeps
    it off while it starts): importing and rewriting them makes no cyclic garbage worth finding,
    yet the collector rescanned the growing heap 19 times, 2 s of the default lane's CPU. Its
    state is put back after, inside a session run within a test too."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        if enabled:
            gc.enable()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The default lane does not import a module marked slow as a whole (a file named on the
    command line is collected still, and deselected below)."""
    if config.getoption("--all") or config.getoption("markexpr"):
        return None
    if collection_path.name.startswith("test_") and support.marks_module_slow(collection_path):
        return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The default lane leaves out tests marked slow; `--all` (the README's command, run by CI)
    keeps them, and so does naming them with `-m`."""
    if config.getoption("--all") or config.getoption("markexpr"):
        return
    kept = [item for item in items if "slow" not in item.keywords]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if "slow" in i.keywords])
        items[:] = kept


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The model calls' clock, sleep and attempt deadline replaced by a FakeClock: back-off,
    Retry-After, time-outs and rate limits are kept to exactly, without waiting."""
    from evalspec._providers import openai_chat

    clock = FakeClock()
    monkeypatch.setattr(openai_chat, "monotonic", clock.monotonic)
    monkeypatch.setattr(openai_chat, "sleep", clock.sleep)
    monkeypatch.setattr(openai_chat, "attempt_deadline", clock.deadline)
    return clock


@pytest.fixture
def fault_server(fake_clock: FakeClock) -> Iterator[Callable[..., FaultServer]]:
    """Start tests/fault_server.py's scripted server in this process, on the fake clock:
    `fault_server("drip", drip_s=0.4)`; each is closed after the test."""
    started: list[FaultServer] = []

    def start(mode: str = "ok", **options: Any) -> FaultServer:
        server = FaultServer(mode, clock=fake_clock.monotonic, pause=fake_clock.pause, **options)
        started.append(server.__enter__())
        return server

    yield start
    for server in started:
        server.close()
