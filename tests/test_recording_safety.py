"""Recordings, caches and run directories never lose a line, and never eat another file.

Real processes: two `evalspec run` recording into one file at once, a run on a full disk
(a 64 KiB tmpfs, where the machine allows mounting one), resume after torn lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_server import FaultServer
from support import FAULT_ENV as ENV
from support import ROOT, ScriptedCalls, fault_cli, in_process, write_fault_suite

from evalspec import api
from evalspec.api import load_suite
from evalspec.records import RunRequest


def evalspec(*args: object) -> subprocess.CompletedProcess[str]:
    """The command with the fault suite's secrets in its environment, in process (a child each
    cost a second; two recording at once, and a resume's logged note, are real processes)."""
    return in_process(*map(str, args), env=ENV)


CASES = 5

SUITE = """\
suite: many
models:
  - {{name: a, model: model-a, base_url: "{url}", api_key_env: FAULT_KEY}}
  - {{name: b, model: model-b, base_url: "{url}", api_key_env: FAULT_KEY}}
run: {{timeout: 5, retries: 1, concurrency: 2, mode: single_turn{extra_run}}}
tools:
  - name: get_weather
    description: Current weather for a city.
    parameters:
      type: object
      properties: {{city: {{type: string}}, note: {{type: string}}}}
      required: [city]
    responses: [{{output: {{temp: 21}}}}]{simulate}
cases:
{cases}
"""


def write_many_suite(
    directory: Path, url: str, *, cases: int = CASES, extra_run: str = "", simulate: str = ""
) -> Path:
    lines = "\n".join(
        f"  - {{name: city {n}, user: 'Weather in city {n}?', "
        f"expect: {{tool_calls: [{{get_weather: {{city: Paris}}}}]}}}}"
        for n in range(cases)
    )
    path = directory / "many.yaml"
    path.write_text(
        SUITE.format(url=url, cases=lines, extra_run=extra_run, simulate=simulate),
        encoding="utf-8",
    )
    return path


def spawn(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "evalspec", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **ENV},
        cwd=ROOT,
    )


def recorded_keys(path: Path) -> set[str]:
    """The request keys a recordings file answers (docs/reference/runs.md: one JSON line per
    answer, the last line for a key winning)."""
    lines = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    return {line["key"] for line in lines if "key" in line}


@pytest.mark.slow
def test_two_processes_recording_into_one_file_keep_every_answer(tmp_path: Path) -> None:
    with FaultServer("ok") as server:
        suite = write_many_suite(tmp_path, server.url, cases=8)
        procs = [
            spawn("run", suite, "--model", name, "--out", tmp_path / f"run-{name}")
            for name in ("a", "b")
        ]
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        assert len(recorded_keys(tmp_path / "many.recordings.jsonl")) == 16
        server.mode = "tripwire"
        replay = evalspec("run", suite, "--record", "offline", "--out", tmp_path / "replay")
    assert replay.returncode == 0, replay.stderr
    assert "16 replayed, 0 called" in replay.stdout


def test_a_file_that_is_not_recordings_is_refused_not_rewritten(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious notes without a final newline", encoding="utf-8")
    with FaultServer("ok") as server:
        suite = write_many_suite(tmp_path, server.url, extra_run=", recordings: victim.txt")
        proc = evalspec("run", suite, "--out", tmp_path / "run")
        assert server.connections == 0
    assert proc.returncode == 2, proc.stderr
    assert f"{victim}:1:1: not a recordings file" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert victim.read_text(encoding="utf-8") == "precious notes without a final newline"


@pytest.mark.parametrize(
    "content",
    ["# README\nNot a cache.\n", '{"_comment": "a recordings file"}\n{"key": "k"}\n', "[1, 2]"],
    ids=["readme", "recordings", "json-list"],
)
def test_a_simulator_cache_that_is_no_cache_is_refused(tmp_path: Path, content: str) -> None:
    cache = tmp_path / "README.md"
    cache.write_text(content, encoding="utf-8")
    with FaultServer("ok") as server:
        simulate = (
            f"\n    simulate: {{model: sim, base_url: '{server.url}', api_key_env: FAULT_KEY, "
            "cache: README.md}"
        )
        suite = write_many_suite(tmp_path, server.url, simulate=simulate)
        suite.write_text(suite.read_text().replace("    responses: [{output: {temp: 21}}]", ""))
        proc = evalspec("run", suite, "--out", tmp_path / "run")
        assert server.connections == 0
    assert proc.returncode == 2, proc.stderr
    assert f"{cache}:1:1: not a tool response cache" in proc.stderr
    assert cache.read_text(encoding="utf-8") == content


def test_a_judge_cache_that_is_no_cache_is_refused_before_any_call(tmp_path: Path) -> None:
    cache = tmp_path / ".evalspec-cache" / "judge.json"
    cache.parent.mkdir()
    cache.write_text("[1, 2]", encoding="utf-8")
    with FaultServer("ok") as server:
        suite = write_fault_suite(tmp_path, server.url, server.url, server.url)
        proc = evalspec("run", suite, "--out", tmp_path / "run")
        assert server.connections == 0
    assert proc.returncode == 2, proc.stderr
    assert (
        f"{cache}:1:1: not a judge verdict cache (one JSON object of prompt hash -> verdict): "
        "it holds a JSON list, not an object; evalspec will not overwrite it" in proc.stderr
    )
    assert cache.read_text(encoding="utf-8") == "[1, 2]"


def test_runs_started_in_the_same_second_get_their_own_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    suite = write_many_suite(tmp_path, "http://127.0.0.1:9/v1", cases=1)
    api.record_answers(load_suite(suite), ScriptedCalls({}))
    monkeypatch.setattr(time, "strftime", lambda *_: "20260101-000000")  # one second for all
    dirs = {api.run(RunRequest(suite, record="offline")).run_dir for _ in range(5)}
    assert len(dirs) == 5 and all(d.is_dir() for d in dirs)
    assert all((d / "results.json").is_file() for d in dirs)  # each run kept its own results


@pytest.mark.slow
def test_a_used_out_directory_is_refused_unless_resumed(tmp_path: Path) -> None:
    with FaultServer("ok") as server:
        suite = write_many_suite(tmp_path, server.url)
        first = evalspec("run", suite, "--out", tmp_path / "run")
        before = (tmp_path / "run" / "transcripts.jsonl").read_bytes()
        again = evalspec("run", suite, "--out", tmp_path / "run")
        resumed = evalspec("run", suite, "--resume", tmp_path / "run")
    assert first.returncode == 0, first.stderr
    assert again.returncode == 2
    assert "already holds files of a run" in again.stderr and "--resume" in again.stderr
    assert (tmp_path / "run" / "transcripts.jsonl").read_bytes() == before
    assert resumed.returncode == 0, resumed.stderr
    assert f"{CASES * 2} resumed" in resumed.stdout


@pytest.mark.slow
def test_torn_and_invalid_utf8_lines_are_skipped_on_resume_with_a_note(tmp_path: Path) -> None:
    with FaultServer("ok") as server:
        suite = write_many_suite(tmp_path, server.url)
        first = fault_cli("run", suite, "--out", tmp_path / "run")
        transcripts = tmp_path / "run" / "transcripts.jsonl"
        lines = transcripts.read_bytes().splitlines(keepends=True)
        # The last item's line cut inside a UTF-8 character, as a full disk leaves it.
        torn = lines[-1].replace(b"Weather", "Wé".encode())[:40] + "é".encode()[:1]
        transcripts.write_bytes(b"".join(lines[:-1]) + torn)
        resumed = fault_cli("run", suite, "--resume", tmp_path / "run")
    assert first.returncode == 0, first.stderr
    assert resumed.returncode == 0, resumed.stderr
    assert "skipped an unreadable line" in resumed.stderr
    assert f"{CASES * 2 - 1} resumed" in resumed.stdout


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@pytest.mark.slow
def test_disk_full_mid_run_loses_nothing_and_resumes(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "64k"):
        pytest.skip("cannot mount a small tmpfs here (needs root): the disk-full test is skipped")
    try:
        with FaultServer("echo") as server:  # echoed headers make each answer ~1 KiB
            suite = write_many_suite(disk, server.url, cases=40)
            full = evalspec("run", suite, "--out", disk / "run")
            subprocess.run(["mount", "-o", "remount,size=4m", str(disk)], check=True)
            resumed = evalspec("run", suite, "--resume", disk / "run")
            server.mode = "tripwire"
            replay = evalspec("run", suite, "--record", "offline", "--out", disk / "replay")
        assert full.returncode == 3, full.stderr
        assert "Traceback" not in full.stderr
        assert "No space left on device" in full.stderr and "--resume" in full.stderr
        assert resumed.returncode == 0, resumed.stderr
        finished = [
            json.loads(line)
            for line in (disk / "run" / "transcripts.jsonl").read_text("utf-8").splitlines()
            if line.startswith("{") and line.endswith("}")
        ]
        assert {t["item_id"] for t in finished if not t.get("error")}.__len__() == 80
        assert replay.returncode == 0, replay.stderr
        assert "80 replayed, 0 called" in replay.stdout
    finally:
        for _ in range(20):
            if subprocess.run(["umount", str(disk)], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        else:  # still busy: detached now, freed once closed (left mounted, it made every later
            # session's clean-up of old temporary folders warn, three times a leaked mount)
            subprocess.run(["umount", "--lazy", str(disk)], capture_output=True)
