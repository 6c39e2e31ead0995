"""API keys never leave the process: not in output, recordings, transcripts or results.

The fake server echoes the key back in its error messages, the way careless endpoints do, and
the runs succeed, fail per item (400, 500, a reply that is no completion), are refused (401) or
cannot connect. The key must reach the server, and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, status_fault
from support import KEY_ENV, cli, free_port, scripted, user_text, write_e2e_suite

pytestmark = pytest.mark.slow

KEYS = ["sk-test-SECRET-123456", "plain-SECRET-token-98765"]
"""One shaped like an OpenAI key, one that no pattern would recognise."""


def echoing(key: str):
    """Answers weather questions; echoes the key in every error it gives for the rest."""

    def respond(body: dict[str, Any]) -> Any:
        user = user_text(body)
        if "Paris?" in user:
            return scripted(body)
        if "Oslo" in user:
            return status_fault(500, message=f"overloaded; your key {key} / Bearer {key}")
        return status_fault(400, message=f"bad request from key {key}")

    return respond


@pytest.fixture(params=KEYS)
def key(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv(KEY_ENV, request.param)
    yield request.param


def assert_nowhere(key: str, directory: Path, *texts: str) -> None:
    for text in texts:
        assert key not in text
    files = [p for p in directory.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert key.encode() not in path.read_bytes(), f"the key leaked into {path}"


def test_key_reaches_the_server_and_nothing_else(key: str, tmp_path: Path) -> None:
    with FakeOpenAI(echoing(key)) as server:
        server.when(
            lambda b: "Add" in user_text(b) and b.get("model") == "fake-2",
            {"error": f"not a completion, key={key}"},
        )
        suite = write_e2e_suite(tmp_path, server.base_url, retries=1)
        proc = cli("run", suite, "--verbose", "--out", tmp_path / "run")
        as_json = cli("score", suite, "-t", tmp_path / "run", "--json")
    assert proc.returncode == 1, proc.stderr
    assert {r.headers.get("authorization") for r in server.requests} == {f"Bearer {key}"}
    results = (tmp_path / "run" / "results.json").read_text()
    assert "HTTP 500" in results and "HTTP 400" in results and "not a chat completion" in results
    assert (tmp_path / "e2e.recordings.jsonl").exists()
    assert_nowhere(key, tmp_path, proc.stdout, proc.stderr, as_json.stdout, as_json.stderr)


def test_key_stays_out_of_a_refused_run(key: str, tmp_path: Path) -> None:
    with FakeOpenAI(lambda b: status_fault(401, message=f"invalid api key {key}")) as server:
        suite = write_e2e_suite(tmp_path, server.base_url)
        proc = cli("run", suite, "--out", tmp_path / "run")
    assert proc.returncode == 3, proc.stderr
    assert KEY_ENV in proc.stderr
    assert server.requests and server.requests[0].headers["authorization"] == f"Bearer {key}"
    assert_nowhere(key, tmp_path, proc.stdout, proc.stderr)


def test_key_stays_out_of_an_unreachable_run(key: str, tmp_path: Path) -> None:
    suite = write_e2e_suite(tmp_path, f"http://127.0.0.1:{free_port()}/v1", retries=0)
    proc = cli("run", suite, "--out", tmp_path / "run")
    assert proc.returncode == 3, proc.stderr
    assert "cannot reach" in proc.stderr
    assert_nowhere(key, tmp_path, proc.stdout, proc.stderr)
