"""Every model call (model under test, LLM judge, LLM tool simulator) against a hostile server.

Each fault of tests/fault_server.py is sent once, in this process and on a fake clock, through
the call path the three endpoints share (`ModelCalls`): an answer or one request's error, within
its retries, with no secret in it. Then, through the real `evalspec run` command (slow), one
fault per endpoint kind, and the faults whose handling is the run's own (echoed secrets in every
file, a huge answer's memory, a lone surrogate resumed). Handled cleanly means: no traceback,
results.json written and valid JSON, every transcript line readable, and no secret anywhere.

Its in-process half is a unit test of evalspec._providers.calls (`ModelCalls`, `Endpoint`,
with the provider's error type and the secret registry it scrubs with): one call path, every
fault, on a fake clock; the command-line half goes through `evalspec run`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
from support import ROOT, FakeClock, write_fault_suite
from support import fault_cli as evalspec

from evalspec import api, records
from evalspec._providers.base import ProviderError
from evalspec._providers.calls import Endpoint, ModelCalls
from evalspec._util import redaction
from evalspec.plugins import ChatResponse

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


ANSWERS = ("echo", "surrogate", "invalid_utf8")
"""Faults that still answer 200 with a completion (a strange one): the caller gets it."""


def ask_once(server_url: str, timeout_s: float = 2) -> ChatResponse | ProviderError:
    """One request through the call layer every endpoint uses (model, judge, simulator), with
    the fault suite's secrets and policy (timeout 2 s, 1 retry): its answer or its error."""
    endpoint = Endpoint(with_userinfo(server_url), "FAULT_KEY", {"X-Token": "${FAULT_HDR}"})
    calls = ModelCalls(timeout_s=timeout_s, retries=1)
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    try:
        return asyncio.run(calls.ask(endpoint, "m", messages, label="the request"))
    except ProviderError as exc:
        return exc


@pytest.fixture(autouse=True)
def fault_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fault suite's secrets in the environment, each registered as a run registers them."""
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    redaction.register(HEADER_SECRET)  # as register_suite_secrets does for a suite's headers


@pytest.mark.parametrize("fault", FAULTS)
def test_every_fault_is_one_requests_error(fault: str, fault_server: Callable[..., Any]) -> None:
    """The fault matrix, once, against the call path the model, judge and simulator share: an
    answer or a ProviderError (what each caller turns into its item's, case's or call's error),
    at most one retry, and no secret in the message."""
    bad = fault_server(fault, drip_s=0.4, huge_mb=20)
    outcome = ask_once(bad.url)
    assert len(bad.requests) <= 2, f"{fault}: {len(bad.requests)} attempts"
    if fault in ANSWERS:
        assert isinstance(outcome, ChatResponse), outcome
        json.dumps(outcome.message)  # text a transcript can hold
        return
    assert isinstance(outcome, ProviderError), outcome
    assert outcome.attempts == len(bad.requests)
    assert_no_secret_in(str(outcome))


def test_a_slow_drip_cannot_outlive_the_timeout(fault_server: Callable[..., Any]) -> None:
    """One byte a second: each attempt ends at the 1 s timeout (a drip that outlived it would
    have produced an answer)."""
    drip = fault_server("drip", drip_s=1.0)
    outcome = ask_once(drip.url, timeout_s=1)
    assert isinstance(outcome, ProviderError), outcome
    assert len(drip.requests) <= 2  # the request and its one retry: nothing after
    assert "1 s timeout" in outcome.message


def test_retry_after_storm_gives_up_within_the_budget(
    fault_server: Callable[..., Any], fake_clock: FakeClock
) -> None:
    storm = fault_server("storm")
    outcome = ask_once(storm.url)
    # Given up at once: waiting the 120 s asked for would pass the request's 4 s budget.
    assert isinstance(outcome, ProviderError), outcome
    assert len(storm.requests) == outcome.attempts == 1
    assert "past the request's budget" in outcome.message
    assert fake_clock.slept == []


def test_a_huge_answer_is_refused(fault_server: Callable[..., Any]) -> None:
    huge = fault_server("huge", huge_mb=20)
    outcome = ask_once(huge.url)
    assert isinstance(outcome, ProviderError), outcome
    assert "larger than 16 MiB" in outcome.message


def assert_no_secret_in(text: str) -> None:
    for secret in secret_forms():
        assert secret not in text, f"{secret!r} leaked into {text[:200]!r}"


ENDPOINTS = ("model", "judge", "simulator")


def endpoint_urls(kind: str, good: str, bad: str) -> tuple[str, str, str]:
    """The fault suite's model, judge and simulator URLs, with `kind` sent to the bad server."""
    urls = {k: with_userinfo(bad) if k == kind else good for k in ENDPOINTS}
    return urls["model"], urls["judge"], urls["simulator"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ENDPOINTS)
def test_a_faulty_endpoint_is_its_callers_error(kind: str, tmp_path: Path) -> None:
    """End to end, once per endpoint kind (child process, real 2 s timeout): a failing model is
    its item's error, a failing judge its case's, a failing simulator its call's; no secret is
    written anywhere."""
    with FaultServer("ok") as good, FaultServer("html") as bad:
        suite = write_fault_suite(tmp_path, *endpoint_urls(kind, good.url, bad.url))
        proc = evalspec("run", suite, "--out", tmp_path / "run", "-v")
        attempts = len(bad.requests)
    results = assert_handled(proc, tmp_path / "run")
    [result] = results["results"]
    if kind == "model":
        assert attempts <= 2 * 3, attempts  # at most two attempts for each of its requests
        assert result["status"] == "error", result
    else:
        assert attempts <= 2, attempts  # one request, one retry
    if kind == "judge":
        assert result["status"] in ("error", "fail"), result
        assert "judge" in result["reason"], result
    if kind == "simulator":
        [line] = (tmp_path / "run" / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
        [call] = json.loads(line)["tool_calls"]
        assert call["error"].startswith("tool simulator"), call
    assert_no_secret(tmp_path, proc.stdout, proc.stderr, skip=(suite,))


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_lone_surrogate_is_stored_escaped_and_resumes(tmp_path: Path) -> None:
    with FaultServer("surrogate") as server:
        suite = write_fault_suite(tmp_path, server.url, server.url, server.url)
        proc = evalspec("run", suite, "--out", tmp_path / "run")
        again = evalspec("run", suite, "--resume", tmp_path / "run")
    assert_handled(proc, tmp_path / "run")
    assert again.returncode == 0, again.stderr
    assert "\\ud83d" in (tmp_path / "run" / "transcripts.jsonl").read_text(encoding="utf-8")
    assert "\\ud83d" in (tmp_path / "faults.recordings.jsonl").read_text(encoding="utf-8")


def test_judge_and_simulator_share_the_runs_rate_limit(
    tmp_path: Path, fault_server: Callable[..., Any], fake_clock: FakeClock
) -> None:
    """requests_per_minute 60: the model's two turns, the simulator and the judge, one a second
    on the calls' clock (one limiter for all four: a limiter each would let them go at once)."""
    server = fault_server("ok")
    suite = write_fault_suite(
        tmp_path, server.url, server.url, server.url, run_extra=", requests_per_minute: 60"
    )
    began = fake_clock.now
    done = api.run(records.RunRequest(suite, out=tmp_path / "run"))
    arrivals = [r["at"] for r in server.requests]
    systems = [r["body"]["messages"][0]["content"][:10] for r in server.requests]
    assert done.exit_code == 0, done.note
    assert len(arrivals) == 4, systems  # model, simulator, model, judge
    assert_held_to(60, began, arrivals)
