"""Every model call (model under test, LLM judge, LLM tool simulator) against a hostile server.

Each fault of tests/fault_server.py is sent by each of the three endpoints in turn, through the
real `evalspec run` command. Handled cleanly means: no traceback, results.json written and valid
JSON, every transcript line readable, the run within its time budget, and no secret anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_server import MODES, FaultServer
from rate_checks import assert_held_to
from support import FAULT_ENV as ENV
from support import FAULT_HEADER_SECRET as HEADER_SECRET
from support import FAULT_JUDGE_KEY as JUDGE_KEY
from support import FAULT_KEY as KEY
from support import FAULT_SIM_KEY as SIM_KEY
from support import FAULT_URL_PASSWORD as URL_PASSWORD
from support import FAULT_URL_USER as URL_USER
from support import ROOT, write_fault_suite
from support import fault_cli as evalspec

FAULTS = tuple(mode for mode in MODES if mode not in ("ok", "tripwire"))


def with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://{URL_USER}:{URL_PASSWORD}@")


def secret_forms() -> list[str]:
    import base64

    forms = [KEY, SIM_KEY, JUDGE_KEY, HEADER_SECRET, URL_PASSWORD]
    forms.append(base64.b64encode(f"{URL_USER}:{URL_PASSWORD}".encode()).decode())
    return forms


def assert_no_secret(directory: Path, *streams: str, skip: tuple[Path, ...] = ()) -> int:
    """No form of any secret in any file under `directory` or any stream; files scanned."""
    scanned = 0
    for path in directory.rglob("*"):
        if not path.is_file() or path in skip:
            continue
        data = path.read_bytes()
        scanned += 1
        for secret in secret_forms():
            assert secret.encode() not in data, f"{secret!r} leaked into {path.name}"
    for text in streams:
        for secret in secret_forms():
            assert secret not in text, f"{secret!r} leaked into the output"
    return scanned


def assert_handled(proc: subprocess.CompletedProcess[str], run_dir: Path) -> dict:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    for line in (run_dir / "transcripts.jsonl").read_bytes().splitlines():
        json.loads(line.decode("utf-8"))
    return results


def statuses(results: dict) -> list[str]:
    return [r["status"] for r in results["results"]]


@pytest.mark.parametrize("fault", FAULTS)
def test_model_endpoint_faults_are_item_errors(fault: str, tmp_path: Path) -> None:
    with FaultServer("ok") as good, FaultServer(fault, drip_s=0.4) as bad:
        suite = write_fault_suite(tmp_path, with_userinfo(bad.url), good.url, good.url)
        proc = evalspec("run", suite, "--out", tmp_path / "run", "-v")
        attempts = len(bad.requests)
    results = assert_handled(proc, tmp_path / "run")
    # timeout 2 s, 1 retry: at most two attempts for each of the model's requests (a drip or
    # a storm cannot stretch that; a run that hung would end at evalspec()'s own timeout)
    assert attempts <= 2 * 3, f"{fault}: {attempts} attempts"
    if fault in ("echo", "surrogate", "invalid_utf8"):
        assert statuses(results) == ["pass"], results
    else:
        assert statuses(results) == ["error"], results
    assert_no_secret(tmp_path, proc.stdout, proc.stderr, skip=(suite,))


@pytest.mark.parametrize("fault", FAULTS)
def test_judge_faults_are_that_cases_error(fault: str, tmp_path: Path) -> None:
    with FaultServer("ok") as good, FaultServer(fault, drip_s=0.4) as bad:
        suite = write_fault_suite(tmp_path, good.url, with_userinfo(bad.url), good.url)
        proc = evalspec("run", suite, "--out", tmp_path / "run")
        attempts = len(bad.requests)
    assert attempts <= 2, f"{fault}: {attempts} attempts"  # one judge request, one retry
    results = assert_handled(proc, tmp_path / "run")
    [result] = results["results"]
    if fault in ("echo", "surrogate", "invalid_utf8"):
        assert result["status"] == "pass" or "no verdict" in json.dumps(result), result
    else:
        assert result["status"] in ("error", "fail"), result
        assert "judge" in result["reason"], result
    assert_no_secret(tmp_path, proc.stdout, proc.stderr, skip=(suite,))


@pytest.mark.parametrize("fault", FAULTS)
def test_simulator_faults_are_that_calls_error(fault: str, tmp_path: Path) -> None:
    with FaultServer("ok") as good, FaultServer(fault, drip_s=0.4) as bad:
        suite = write_fault_suite(tmp_path, good.url, good.url, with_userinfo(bad.url))
        proc = evalspec("run", suite, "--out", tmp_path / "run")
        attempts = len(bad.requests)
    assert attempts <= 2, f"{fault}: {attempts} attempts"  # one simulator request, one retry
    assert_handled(proc, tmp_path / "run")
    [line] = (tmp_path / "run" / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    [call] = json.loads(line)["tool_calls"]
    if fault in ("echo", "surrogate", "invalid_utf8"):
        assert call["error"] is None or "no JSON object" in call["error"], call
    else:
        assert call["error"].startswith("tool simulator"), call
    assert_no_secret(tmp_path, proc.stdout, proc.stderr, skip=(suite,))


def test_echoed_secrets_reach_no_file_and_no_stream(tmp_path: Path) -> None:
    """Every secret, sent to endpoints that echo headers into 200 answers and into errors."""
    with FaultServer("echo") as echo:
        suite = write_fault_suite(tmp_path, with_userinfo(echo.url), echo.url, echo.url)
        run = evalspec(
            "run", suite, "--out", tmp_path / "run", "-v",
            "--junit", tmp_path / "j.xml", "--html", tmp_path / "r.html",
            "--markdown", tmp_path / "r.md",
        )  # fmt: skip
        echo.mode = "echo_error"  # now the userinfo is the judge's, the model sends its key
        write_fault_suite(tmp_path, echo.url, with_userinfo(echo.url), echo.url)
        failed = evalspec("run", suite, "--record", "record", "--out", tmp_path / "run2", "-v")
        sent = [r["headers"] for r in echo.requests]
    rescored = evalspec("score", suite, "-t", tmp_path / "run", "-v", "--json")
    assert run.returncode == 0, run.stderr
    assert failed.returncode == 1, failed.stderr
    # The secrets were really sent, and really echoed back ...
    basic = "Basic " + secret_forms()[-1]
    assert any(h.get("authorization") == basic for h in sent)  # user:password in base_url
    assert any(h.get("authorization") == f"Bearer {KEY}" for h in sent)
    assert any(h.get("authorization") == f"Bearer {JUDGE_KEY}" for h in sent)
    assert any(h.get("authorization") == f"Bearer {SIM_KEY}" for h in sent)
    assert any(h.get("x-token") == HEADER_SECRET for h in sent)
    assert "***" in (tmp_path / "faults.recordings.jsonl").read_text(encoding="utf-8")
    # ... and are nowhere: transcripts, recordings, caches, results, reports, output.
    streams = (run.stdout, run.stderr, failed.stdout, failed.stderr, rescored.stdout)
    scanned = assert_no_secret(tmp_path, *streams, rescored.stderr, skip=(suite,))
    assert scanned >= 10


def test_a_slow_drip_cannot_outlive_the_timeout(tmp_path: Path) -> None:
    """One byte a second: each attempt ends at the 1 s timeout (the results say so; a drip that
    outlived it would have produced an answer or hung until evalspec()'s own timeout)."""
    with FaultServer("drip", drip_s=1.0) as drip:
        suite = write_fault_suite(tmp_path, drip.url, drip.url, drip.url, timeout=1)
        proc = evalspec("run", suite, "--out", tmp_path / "run")
        attempts = len(drip.requests)
    assert_handled(proc, tmp_path / "run")
    assert attempts <= 2, attempts  # the model's request and its one retry: nothing after
    assert "1 s timeout" in (tmp_path / "run" / "results.json").read_text(encoding="utf-8")


def test_retry_after_storm_gives_up_within_the_budget(tmp_path: Path) -> None:
    with FaultServer("storm") as storm:
        suite = write_fault_suite(tmp_path, storm.url, storm.url, storm.url)
        proc = evalspec("run", suite, "--out", tmp_path / "run", timeout=90)
        attempts = len(storm.requests)
    results = assert_handled(proc, tmp_path / "run")
    # Given up at once, not after waiting the 120 s asked for (evalspec() would time out first).
    assert attempts == 1, attempts
    assert "past the request's budget" in json.dumps(results)


def test_huge_answer_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    with FaultServer("huge", huge_mb=200) as huge:
        suite = write_fault_suite(tmp_path, huge.url, huge.url, huge.url)
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                "import resource, subprocess, sys; "
                "p = subprocess.run(sys.argv[1:]); "
                "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
                "sys.exit(p.returncode)",
                sys.executable, "-m", "evalspec", "run", str(suite), "--out", str(tmp_path / "run"),
            ],
            capture_output=True, text=True, env={**os.environ, **ENV}, cwd=ROOT, timeout=120,
        )  # fmt: skip
    peak_mb = int(proc.stdout.strip().splitlines()[-1]) / 1024
    results = assert_handled(proc, tmp_path / "run")
    assert statuses(results) == ["error"]
    assert "larger than 16 MiB" in json.dumps(results)
    assert peak_mb < 400, f"peak RSS {peak_mb:.0f} MiB for a 200 MB answer"
    assert (tmp_path / "run" / "transcripts.jsonl").stat().st_size < 100_000


def test_lone_surrogate_is_stored_escaped_and_resumes(tmp_path: Path) -> None:
    with FaultServer("surrogate") as server:
        suite = write_fault_suite(tmp_path, server.url, server.url, server.url)
        proc = evalspec("run", suite, "--out", tmp_path / "run")
        again = evalspec("run", suite, "--resume", tmp_path / "run")
    assert_handled(proc, tmp_path / "run")
    assert again.returncode == 0, again.stderr
    assert "\\ud83d" in (tmp_path / "run" / "transcripts.jsonl").read_text(encoding="utf-8")
    assert "\\ud83d" in (tmp_path / "faults.recordings.jsonl").read_text(encoding="utf-8")


def test_judge_and_simulator_share_the_runs_rate_limit(tmp_path: Path) -> None:
    """requests_per_minute 60: the model's two turns, the simulator and the judge, one a second
    (one limiter for all four: a limiter each would let them go as fast as they answer)."""
    with FaultServer("ok") as server:
        suite = write_fault_suite(
            tmp_path, server.url, server.url, server.url, run_extra=", requests_per_minute: 60"
        )
        began = time.monotonic()
        proc = evalspec("run", suite, "--out", tmp_path / "run")
        arrivals = [r["at"] for r in server.requests]
        systems = [r["body"]["messages"][0]["content"][:10] for r in server.requests]
    assert proc.returncode == 0, proc.stderr
    assert len(arrivals) == 4, systems  # model, simulator, model, judge
    assert_held_to(60, began, arrivals)
