"""Library calls leave the caller's process as they found it: the garbage collector (on/off,
thresholds and frozen objects), the recursion limit, the environment, the working directory,
logging, signal handlers and timers, warnings filters, the standard streams and hooks, and the
secret registry, whether the call returns or raises.

It imports the secret registry (evalspec._util.redaction), the garbage-collector pause
(evalspec._util.collector) and the input error type it may raise: the registry is part of the
process state checked, and the pause is unit-tested here beside what it must restore.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support import evalspec_cli, suites_repo

from evalspec import api, errors, records
from evalspec._util import redaction
from evalspec._util.collector import collector_paused
from evalspec._util.errors import InputError
from evalspec.errors import SpecError, UsageError

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-process-state-0123456789"


def _loggers() -> dict[str, tuple[Any, ...]]:
    """Every logger configured away from the defaults (a logger made by an import, with no
    level or handler of its own, changes nothing; nor does the NullHandler a library puts on
    its own logger as it is imported, which prints nothing)."""
    found = {"": logging.getLogger()} | {
        name: logger
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    state = {}
    for name, logger in found.items():
        handlers = tuple(h for h in logger.handlers if type(h) is not logging.NullHandler)
        if logger.level or handlers or not logger.propagate or logger.disabled:
            state[name] = (logger.level, handlers, logger.propagate, logger.disabled)
    return state


def _timer() -> tuple[bool, float]:
    """Whether a real-time timer is running (a test runner's time-out may be), and its
    interval: what is left of it changes as the test goes."""
    remaining, interval = signal.getitimer(signal.ITIMER_REAL)
    return remaining > 0, interval


def _state() -> tuple[Any, ...]:
    return (
        gc.isenabled(),
        gc.get_threshold(),
        gc.get_freeze_count(),
        sys.getrecursionlimit(),
        dict(os.environ),
        os.getcwd(),
        list(sys.path),
        redaction.registered(),
        _loggers(),
        logging.root.manager.disable,
        {sig: signal.getsignal(sig) for sig in signal.valid_signals()},
        _timer(),
        list(warnings.filters),
        (sys.stdin, sys.stdout, sys.stderr, sys.excepthook, threading.excepthook),
        sys.getswitchinterval(),
        socket.getdefaulttimeout(),
        type(asyncio.get_event_loop_policy()),
        sorted(t.name for t in threading.enumerate() if not t.daemon),
    )


@pytest.fixture(params=[True, False], ids=["collector on", "collector off"])
def unusual_process(request, monkeypatch) -> Iterator[None]:
    """A caller with its own collector settings and a model key in its environment."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.set_threshold(1234, 5, 6)
    (gc.enable if request.param else gc.disable)()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        (gc.enable if enabled else gc.disable)()


def _unchanged(call: Callable[[], Any], raises: type[BaseException] | None = None) -> Any:
    before = _state()
    if raises is None:
        result = call()
    else:
        with pytest.raises(raises):
            call()
        result = None
    assert _state() == before
    return result


@pytest.fixture
def slack(tmp_path: Path) -> Path:
    for name in ("slack.yaml", "slack.recordings.jsonl"):
        shutil.copy(ROOT / "suites" / name, tmp_path / name)
    return tmp_path / "slack.yaml"


BROKEN = """
suite: broken
models: [m]
tools:
  - name: t
    parameters: {type: object, properties: {a: {type: string}}}
cases:
  - name: c
    user: hi
    expect:
      tool_calls: [{t: {a: x}}]
    critics: {a: no_such_critic}
"""


def test_loading_and_checking_suites(unusual_process, slack: Path, tmp_path: Path) -> None:
    assert _unchanged(lambda: api.load_suite(slack)).name == "slack"
    assert _unchanged(lambda: api.check_suite(slack)) == 6
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN, encoding="utf-8")
    _unchanged(lambda: api.load_suite(broken), SpecError)
    _unchanged(lambda: api.check_suite(broken), SpecError)


def test_running_offline_and_scoring(unusual_process, slack: Path, tmp_path: Path) -> None:
    suite = api.load_suite(slack)
    plan = api.compile_plan(suite)
    options = records.RunOptions(record="offline", run_dir=tmp_path / "run")
    outcome = _unchanged(lambda: api.run_plan(plan, options))
    assert len(outcome.transcripts) == 6 and not outcome.missing
    report = _unchanged(lambda: api.score(suite, outcome.transcripts))
    assert len(report.results) == 6


def test_a_run_leaves_nothing_frozen(unusual_process, slack: Path, tmp_path: Path) -> None:
    """`api.run` freezes the suite and the results it keeps while it runs (fewer rescans);
    when it returns, the caller's objects are collected as before, none left frozen."""
    assert gc.get_freeze_count() == 0
    request = records.RunRequest(slack, record="offline", out=tmp_path / "run")
    result = _unchanged(lambda: api.run(request))
    assert len(result.report.results) == 6
    assert gc.get_freeze_count() == 0


def test_a_run_that_raises_leaves_nothing_frozen(unusual_process, slack, tmp_path) -> None:
    (tmp_path / "slack.recordings.jsonl").write_text("", encoding="utf-8")
    request = records.RunRequest(slack, record="offline", out=tmp_path / "run")
    _unchanged(lambda: api.run(request), errors.RecordingsMissing)


class _Kept:
    """An object a caller holds (a class instance: always tracked by the collector)."""


def _frozen(objects: list[_Kept]) -> bool:
    """All of them frozen: tracked, yet in no generation the collector scans."""
    scanned = {id(o) for o in gc.get_objects()}
    return all(gc.is_tracked(o) and id(o) not in scanned for o in objects)


def test_a_callers_frozen_objects_stay_frozen(unusual_process, slack, tmp_path) -> None:
    """A caller that froze objects itself (a pre-fork server, say) finds them frozen still:
    the run freezes nothing of its own then, since unfreezing would thaw the caller's too."""
    kept = [_Kept() for _ in range(100)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert _frozen(kept)
        request = records.RunRequest(slack, record="offline", out=tmp_path / "run")
        result = api.run(request)
        assert len(result.report.results) == 6
        assert _frozen(kept)
        assert gc.get_freeze_count() <= frozen  # nothing of the run's added (some freed)
    finally:
        gc.unfreeze()


def test_a_run_that_may_call_keeps_its_secrets(unusual_process, slack, tmp_path) -> None:
    """Replaying with calls allowed registers the model's key for the run; it is the run's."""
    suite = api.load_suite(slack)
    options = records.RunOptions(record="auto", run_dir=tmp_path / "run")
    outcome = _unchanged(lambda: api.run_plan(api.compile_plan(suite), options))
    assert len(outcome.transcripts) == 6 and outcome.calls is not None
    assert KEY not in redaction.registered()


def test_a_run_that_raises(unusual_process, slack: Path, tmp_path: Path) -> None:
    """An offline run missing recordings stops with an error; the process is as it was."""
    (tmp_path / "slack.recordings.jsonl").write_text("", encoding="utf-8")
    plan = api.compile_plan(api.load_suite(slack))
    options = records.RunOptions(record="offline", run_dir=tmp_path / "run")
    before = _state()
    try:
        outcome = api.run_plan(plan, options)
    except (UsageError, SpecError, InputError):
        outcome = None
    assert outcome is None or outcome.missing
    assert _state() == before


def test_reading_json_too_deep(unusual_process, tmp_path: Path) -> None:
    path = tmp_path / "transcripts.jsonl"
    path.write_text("[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    _unchanged(lambda: api.load_transcripts(path), (InputError, SpecError, UsageError))


def test_the_collector_pause_restores_on_exceptions(unusual_process) -> None:
    before = _state()
    with pytest.raises(KeyError), collector_paused():
        assert not gc.isenabled()
        gc.set_threshold(1, 1, 1)
        raise KeyError("boom")
    assert _state() == before


CHILD = """
import json, os, sys
changed = {}

def check(step, before):
    after = dict(os.environ)
    diff = {k: [before.get(k), after.get(k)] for k in set(before) | set(after)
            if before.get(k) != after.get(k)}
    if diff:
        changed[step] = diff

before = dict(os.environ)
from evalspec._util.numpy_import import import_numpy
import_numpy()
check("numpy", before)
import sentence_transformers  # torch sets variables of its own as it is imported
before = dict(os.environ)
from evalspec._scoring.embeddings import load_sentence_transformer
load_sentence_transformer(None).encode(["one sentence"])
check("embedding model", before)
print(json.dumps(changed))
"""


@pytest.mark.slow
def test_numpy_and_embeddings_leave_the_environment_alone() -> None:
    """numpy is imported with one BLAS thread and the embedding model loaded offline, and the
    environment keeps no trace of either (what torch sets as it is imported is torch's)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {}


def test_a_verbose_command_leaves_no_handler_on_a_closed_stream(tmp_path, capsys):
    """`-v` in one in-process command, then another that logs: no "Logging error" in its
    output (the handler once kept the first command's closed stderr), one handler at most, and
    none after a command without `-v`."""
    import logging

    suite = str(ROOT / "suites" / "calendar.yaml")

    def run(*flags: str) -> Any:
        out = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        return evalspec_cli(["run", suite, "--record", "offline", "--out", str(out), *flags])

    def ours() -> list[logging.Handler]:
        return [
            h
            for h in logging.getLogger("evalspec").handlers
            if type(h).__module__ != "_pytest.logging"
        ]

    first, second = run("-v"), run("-v")
    assert first.exit_code == second.exit_code == 1, second.output  # one case fails by design
    assert len(ours()) == 1
    capsys.readouterr()
    logging.getLogger("evalspec.test").info("logged after the commands")
    err = capsys.readouterr().err
    assert "Logging error" not in err and "logged after the commands" in err
    run()
    assert ours() == []


def test_a_run_leaves_the_process_as_it_was(unusual_process, slack: Path, tmp_path: Path) -> None:
    """`api.run` with every report file: logging, signals, warnings, streams, the working
    directory and the rest are as the caller had them."""
    files = records.ReportFiles(
        junit=tmp_path / "r.xml", markdown=tmp_path / "r.md", html=tmp_path / "r.html"
    )
    request = records.RunRequest(slack, record="offline", out=tmp_path / "run")
    result = _unchanged(lambda: api.run(request, reports=files))
    assert len(result.report.results) == 6 and (tmp_path / "r.html").is_file()


def test_a_review_leaves_the_process_as_it_was(unusual_process, tmp_path: Path) -> None:
    """`api.review` of a pull request (a time budget on a timer signal, untrusted limits,
    plugins held back, git read in children) restores everything it set, on return and when
    it refuses the request."""
    suites = tmp_path / "suites"
    suites.mkdir()
    for name in ("slack.yaml", "slack.recordings.jsonl"):
        shutil.copy(ROOT / "suites" / name, suites / name)
    repo = suites_repo(tmp_path, suites)
    suite = repo / "suites" / "slack.yaml"
    suite.write_text(suite.read_text(encoding="utf-8") + "\n# a comment\n", encoding="utf-8")
    result = _unchanged(lambda: api.review(base_ref="main", cwd=repo))
    assert [s.path for s in result.suites] == ["suites/slack.yaml"], result
    _unchanged(lambda: api.review(base_ref="no-such-ref", cwd=repo), UsageError)
