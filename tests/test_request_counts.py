"""The run summary's request counts against what a real HTTP server on loopback received.

Every model request is counted once by how it ended (replayed, called, failed, shared with an
identical request in flight), and the HTTP requests the live ones took are counted apart, retries
included: a request given up after 5 tries is 1 failed and 5 sent, never `0 called`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, status_fault
from support import KEY_ENV, evalspec_cli, scripted, user_text, write_e2e_suite

COUNTS = re.compile(
    r"model requests: (\d+) replayed, (\d+) called, (\d+) failed"
    r"(?:, (\d+) shared with an identical request in flight)? · (\d+) sent \(retries included\)"
)


def counts(stdout: str) -> dict[str, int]:
    """The summary line's numbers, by name."""
    found = COUNTS.search(stdout)
    assert found, stdout
    replayed, called, failed, shared, sent = found.groups()
    return {
        "replayed": int(replayed),
        "called": int(called),
        "failed": int(failed),
        "shared": int(shared or 0),
        "sent": int(sent),
    }


def run(suite: Path, out: Path, record: str) -> dict[str, int]:
    """`evalspec run` in this process (the retries' back-off on the test's fake clock)."""
    args = ["run", str(suite), "--record", record, "--out", str(out)]
    done = evalspec_cli(args, env={KEY_ENV: "sk-test", "COLUMNS": None})
    assert done.exit_code in (0, 1), done.output
    return counts(done.stdout)


def adds_on_fake_2(body: dict) -> bool:
    """fake-2's first request of the case that adds numbers: the one the server always fails."""
    return body.get("model") == "fake-2" and "Add 2 and 3" in user_text(body)


@pytest.mark.timeout(120)
@pytest.mark.usefixtures("fake_clock")
def test_counts_match_the_servers_in_every_mode(tmp_path: Path) -> None:
    with FakeOpenAI(responder=scripted) as server:
        server.when(adds_on_fake_2, status_fault(500, message="overloaded"))
        suite = write_e2e_suite(tmp_path, server.base_url, retries=4)
        live = run(suite, tmp_path / "auto", "auto")
        received = len(server.requests)
        failed_attempts = sum(adds_on_fake_2(r.body) for r in server.requests)
        # the 500 exhausted the retries: 5 requests reached the server for that one request
        assert failed_attempts == 5
        assert live["failed"] == 1
        assert live["sent"] == received
        assert live["called"] == received - failed_attempts
        assert live["replayed"] == 0

        recorded = run(suite, tmp_path / "record", "record")
        assert recorded["replayed"] == 0, "--record record replays nothing"
        assert recorded["sent"] == len(server.requests) - received
        assert recorded["called"] + recorded["shared"] == live["called"]
        assert recorded["failed"] == 1

        before = len(server.requests)
        again = run(suite, tmp_path / "again", "auto")
        assert len(server.requests) - before == again["sent"] == 5  # the failed one, again
        assert again["replayed"] == live["called"]
        assert again["called"] == 0 and again["failed"] == 1
