"""A run killed half-way loses no finished item, and `--resume` runs only what is missing.

The run happens in a child process against a fake server that answers the first few requests
and holds the rest until the test releases them, so exactly those items can finish before the
run is killed (SIGKILL) or interrupted (SIGINT). Every wait polls against a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI
from support import KEY_ENV, ROOT, results_of, run_api, scripted, user_text, write_e2e_suite

from evalspec.api import run
from evalspec.errors import RunInterrupted
from evalspec.records import RunRequest

ITEMS = 12  # 3 cases x 1 model x 4 trials, one request each (single_turn)
DEADLINE_S = 30.0


class Gate:
    """Answers `free` requests at once; every later one waits until `open()`."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.count = 0
        self.lock = threading.Lock()
        self.event = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Any:
        with self.lock:
            self.count += 1
            held = self.count > self.free
        if held:
            self.event.wait(DEADLINE_S)
        return scripted(body)

    def open(self) -> None:
        self.event.set()


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeOpenAI, Gate]]:
    monkeypatch.setenv(KEY_ENV, "sk-test-resume-0000")
    gate = Gate(free=3)
    with FakeOpenAI(gate) as fake:
        try:
            yield fake, gate
        finally:
            gate.open()


def suite_for(tmp_path: Path, url: str, run_label: str) -> Path:
    """The suite, its requests tagged with an X-Run header (headers do not change item ids)."""
    path = write_e2e_suite(tmp_path, url, mode="single_turn", timeout=DEADLINE_S)
    text = path.read_text().replace(
        "api_key_env: EVALSPEC_TEST_KEY}",
        f'api_key_env: EVALSPEC_TEST_KEY, headers: {{X-Run: "{run_label}"}}}}',
    )
    path.write_text(text)
    return path


def start_run(
    suite: Path, run_dir: Path, *extra: str, trials: int = 4, record: str = "record"
) -> subprocess.Popen[str]:
    args = ["run", str(suite), "--model", "m1", "--trials", str(trials), "--concurrency", "2"]
    return subprocess.Popen(
        [sys.executable, "-m", "evalspec", *args, "--record", record, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
        cwd=ROOT,
    )


def wait_for(condition: Callable[[], bool], what: str, deadline_s: float = DEADLINE_S) -> None:
    end = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def recorded_suite(gated: tuple[FakeOpenAI, Gate], tmp_path: Path, trials: int = 4) -> Path:
    """The suite, with the answers to `trials` trials of each case recorded (every call
    answered while it records)."""
    server, gate = gated
    suite = suite_for(tmp_path, server.base_url, "first")
    gate.free = ITEMS
    recorded = start_run(suite, tmp_path / "rec", "--out", str(tmp_path / "rec"), trials=trials)
    _, err = recorded.communicate(timeout=DEADLINE_S)
    assert recorded.returncode == 0, err
    return suite


def interrupt(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C for a run still going (killed if it does not end); what it said on stderr."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=DEADLINE_S)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def lines(run_dir: Path) -> list[str]:
    path = run_dir / "transcripts.jsonl"
    return path.read_text(encoding="utf-8").splitlines(keepends=True) if path.exists() else []


@pytest.mark.slow
def test_resume_after_kill_9_runs_only_the_missing_items(
    gated: tuple[FakeOpenAI, Gate], tmp_path: Path
) -> None:
    server, gate = gated
    run_dir = tmp_path / "run"
    proc = start_run(suite_for(tmp_path, server.base_url, "first"), run_dir, "--out", str(run_dir))
    try:
        # The three answered items must reach the file while the run is still going.
        wait_for(lambda: len(lines(run_dir)) >= 3 or proc.poll() is not None, "3 saved items")
        wait_for(lambda: len(server.requests) >= 5, "two requests held in flight")
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    gate.open()
    saved = lines(run_dir)
    assert all(line.endswith("\n") for line in saved)
    done = {json.loads(line)["item_id"] for line in saved}  # every line is complete JSON
    assert len(done) == 3
    assert not (run_dir / "results.json").exists()

    suite = suite_for(tmp_path, server.base_url, "second")
    resumed = start_run(suite, run_dir, "--resume", str(run_dir))
    out, err = resumed.communicate(timeout=DEADLINE_S)
    assert resumed.returncode == 0, err
    second = [r for r in server.requests if r.headers.get("x-run") == "second"]
    assert len(second) == ITEMS - len(done)
    assert f"{len(done)} resumed" in out
    results = results_of(run_dir)["results"]
    assert len(results) == ITEMS
    assert {json.loads(line)["item_id"] for line in lines(run_dir)} >= done
    assert len({r["item_id"] for r in results}) == ITEMS


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(
    gated: tuple[FakeOpenAI, Gate], tmp_path: Path
) -> None:
    server, _ = gated
    run_dir = tmp_path / "run"
    suite = suite_for(tmp_path, server.base_url, "first")
    proc = start_run(suite, run_dir, "--out", str(run_dir))
    try:
        wait_for(lambda: len(lines(run_dir)) >= 3 or proc.poll() is not None, "3 saved items")
        wait_for(lambda: len(server.requests) >= 5, "two requests held in flight")
        assert proc.poll() is None, "the run ended before it could be interrupted"
    finally:
        err = interrupt(proc)
    assert proc.returncode == 130, err
    assert len(lines(run_dir)) == 3
    assert f"interrupted: 3 of {ITEMS} items finished and saved in {run_dir}" in err
    assert f"--resume {run_dir}" in err
    assert "Traceback" not in err


def test_resume_runs_errored_items_again(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from fake_openai import status_fault

    monkeypatch.setenv(KEY_ENV, "sk-test-resume-0000")
    with FakeOpenAI(scripted) as server:
        server.when(lambda b: "Add" in user_text(b), status_fault(503), times=1)
        suite = write_e2e_suite(tmp_path, server.base_url, retries=0)
        run_dir = tmp_path / "run"
        _, first = run_api(suite, run_dir, models=["m1"])
        assert [t.case for t in first if t.error] == ["add numbers"]
        before = len(server.requests)
        code = run(RunRequest(suite=suite, models=["m1"], resume=run_dir)).exit_code
        assert code == 0
        again = [user_text(r.body) for r in server.requests[before:]]
    assert again == ["Add 2 and 3", "Add 2 and 3"]  # that item's two turns, nothing else
    statuses = {r["case"]: r["status"] for r in results_of(run_dir)["results"]}
    assert statuses == {
        "weather paris": "pass",
        "weather two cities": "pass",
        "add numbers": "pass",
    }


def test_resume_refuses_a_run_directory_of_another_suite(tmp_path: Path) -> None:
    from evalspec.errors import UsageError

    suite = write_e2e_suite(tmp_path, "http://127.0.0.1:9/v1")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text(json.dumps({"suite": "weather", "path": "/x/weather.yaml"}))
    with pytest.raises(UsageError, match="suite 'weather'"):
        run(RunRequest(suite=suite, resume=run_dir))


@pytest.mark.slow
def test_a_run_that_may_call_saves_each_item_the_moment_it_finishes(
    gated: tuple[FakeOpenAI, Gate], tmp_path: Path
) -> None:
    """Replayed or called, every finished item of a run that may call a model is on disk while
    the run goes (a replayed conversation may have called a simulated user or tool); after
    Ctrl-C the count it says is the lines on disk."""
    server, gate = gated
    suite = recorded_suite(gated, tmp_path, trials=2)  # trials 0 and 1 of each case
    gate.count, gate.free = 0, 1  # now one called answer, then every call is held
    run_dir = tmp_path / "run"
    proc = start_run(suite, run_dir, "--out", str(run_dir), record="auto")
    try:
        wait_for(lambda: len(server.requests) >= 9 or proc.poll() is not None, "2 held calls")
        wait_for(lambda: len(lines(run_dir)) >= 5 or proc.poll() is not None, "5 saved items")
        assert proc.poll() is None, "the run ended before it could be interrupted"
        saved = [json.loads(line) for line in lines(run_dir)]
    finally:
        err = interrupt(proc)
    assert proc.returncode == 130, err
    assert sorted(t["source"] for t in saved) == ["live"] + ["replay"] * 4
    assert len(lines(run_dir)) == len(saved)
    assert f"interrupted: {len(saved)} of {ITEMS} items finished and saved" in err


class StopAfter:
    """A caller's progress display that is interrupted (Ctrl-C) once `items` have finished."""

    def __init__(self, items: int) -> None:
        self.items = items
        self.seen = 0

    def start(self, run: Any) -> None:
        pass

    def advance(self, transcript: Any) -> None:
        self.seen += 1
        if self.seen == self.items:
            raise KeyboardInterrupt

    def stop(self) -> None:
        pass


@pytest.mark.slow
def test_an_interrupted_offline_replay_saves_every_finished_item(
    gated: tuple[FakeOpenAI, Gate], tmp_path: Path
) -> None:
    """An offline replay writes its lines in blocks (none cost a call); interrupted, it writes
    every item that finished, and the count it says is the lines on disk."""
    server, _ = gated
    suite = recorded_suite(gated, tmp_path)
    run_dir = tmp_path / "replay"
    request = RunRequest(suite=suite, models=["m1"], trials=4, record="offline", out=run_dir)
    with pytest.raises(RunInterrupted) as stopped:
        run(request, progress=StopAfter(7))
    assert (stopped.value.done, stopped.value.total) == (7, ITEMS)
    saved = [json.loads(line) for line in lines(run_dir)]
    assert len(saved) == 7
    assert {t["source"] for t in saved} == {"replay"}
    assert len(server.requests) == ITEMS  # the replay called nothing


@pytest.mark.slow
def test_a_replay_whose_transcripts_cannot_be_written_says_so_and_what_was_saved(
    gated: tuple[FakeOpenAI, Gate], tmp_path: Path
) -> None:
    """The disk fills while an offline replay writes the lines it held: the run stops with
    that error (no traceback), and the count it says is the complete lines on disk, which a
    resume keeps."""
    suite = recorded_suite(gated, tmp_path)
    run_dir = tmp_path / "full"
    limit = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000))\n"
        "from evalspec._cli import main\n"
        "main()\n"
    )
    args = ["run", str(suite), "--model", "m1", "--trials", "4", "--record", "offline"]
    full = subprocess.run(
        [sys.executable, "-c", limit, *args, "--out", str(run_dir)],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        cwd=ROOT,
        timeout=DEADLINE_S,
    )
    assert full.returncode == 3, full.stderr
    assert "Traceback" not in full.stderr
    assert "cannot save the transcript of" in full.stderr
    assert "File too large" in full.stderr
    complete = [line for line in lines(run_dir) if line.endswith("\n")]
    assert 0 < len(complete) < ITEMS
    assert f"{len(complete)} of {ITEMS} items finished and saved in {run_dir}" in full.stderr
    resumed = start_run(suite, run_dir, "--resume", str(run_dir), record="offline")
    out, err = resumed.communicate(timeout=DEADLINE_S)
    assert resumed.returncode == 0, err
    assert f"{len(complete)} resumed" in out
    assert len(results_of(run_dir)["results"]) == ITEMS
