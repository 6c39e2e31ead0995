"""Review makes no network request, ever: `diff`, `score`, `compare`, `merge` and
`run --record offline` read judge verdicts and simulator answers only from their caches.

Every endpoint of the suite (model, judge, simulator) points at a server in `tripwire` mode
after a first recording run; any connection it accepts fails the test. A cache miss is that
case's "needs a run", never a call.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fault_server import FaultServer
from support import FAULT_JUDGE_KEY as JUDGE_KEY
from support import FAULT_KEY as KEY
from support import FAULT_SIM_KEY as SIM_KEY
from support import fault_cli as evalspec
from support import write_fault_suite

pytestmark = pytest.mark.slow


@pytest.fixture
def recorded(tmp_path: Path):
    """A suite recorded once against a good server, which then turns into a tripwire."""
    with FaultServer("ok") as server:
        suite = write_fault_suite(tmp_path, server.url, server.url, server.url)
        first = evalspec("run", suite, "--out", tmp_path / "run")
        assert first.returncode == 0, first.stderr
        assert (tmp_path / ".evalspec-cache" / "judge.json").exists()
        assert (tmp_path / ".evalspec-cache" / "sim" / "get_weather.json").exists()
        server.mode = "tripwire"
        before = server.connections
        yield tmp_path, suite, server
        assert server.connections == before, "a review command connected to an endpoint"
        assert {r["headers"].get("authorization") for r in server.requests} <= {
            f"Bearer {KEY}",
            f"Bearer {JUDGE_KEY}",
            f"Bearer {SIM_KEY}",
        }


def drop_caches(directory: Path) -> None:
    shutil.rmtree(directory / ".evalspec-cache" / "sim")
    (directory / ".evalspec-cache" / "judge.json").unlink()


def test_review_commands_with_warm_caches_call_nothing(recorded) -> None:
    tmp_path, suite, _ = recorded
    head = tmp_path / "head.yaml"
    head.write_text(suite.read_text(encoding="utf-8").replace("retries: 1", "retries: 2"))
    offline = evalspec("run", suite, "--record", "offline", "--out", tmp_path / "offline")
    scored = evalspec("score", suite, "-t", tmp_path / "run", "--json")
    diffed = evalspec("diff", suite, head, "-t", tmp_path / "run")
    compared = evalspec("compare", tmp_path / "run", tmp_path / "offline")
    merged = evalspec("merge", tmp_path / "run", "--out", tmp_path / "merged")
    assert offline.returncode == 0, offline.stderr
    assert "2 replayed, 0 called" in offline.stdout  # two turns: the call, then the answer
    assert scored.returncode == 0 and json.loads(scored.stdout)["results"][0]["status"] == "pass"
    for proc in (diffed, compared, merged):
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr


def test_cache_misses_are_needs_a_run_never_a_call(recorded) -> None:
    tmp_path, suite, _ = recorded
    drop_caches(tmp_path)
    head = tmp_path / "head.yaml"
    head.write_text(suite.read_text(encoding="utf-8").replace("retries: 1", "retries: 2"))
    offline = evalspec("run", suite, "--record", "offline", "--out", tmp_path / "offline")
    scored = evalspec("score", suite, "-t", tmp_path / "run", "--json")
    diffed = evalspec("diff", suite, head, "-t", tmp_path / "run", "--json")
    merged = evalspec("merge", tmp_path / "run", "--out", tmp_path / "merged", "--json")
    compared = evalspec("compare", tmp_path / "run", tmp_path / "merged")
    # The simulator's answer is missing: the offline run cannot replay and says what to do.
    assert offline.returncode == 3, offline.stderr
    assert "needs a run" in offline.stderr
    # The judge's verdict is missing: that case is an error that needs a run, not a call.
    [result] = json.loads(scored.stdout)["results"]
    assert result["status"] == "error" and "needs a run" in result["reason"]
    assert scored.returncode == 1
    assert json.loads(diffed.stdout)["counts"]["needs_run"] == 1, diffed.stdout
    [merged_result] = json.loads(merged.stdout)["results"]
    assert merged_result["status"] == "error" and "needs a run" in merged_result["reason"]
    for proc in (offline, scored, diffed, merged, compared):
        assert "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / ".evalspec-cache" / "judge.json").exists()
