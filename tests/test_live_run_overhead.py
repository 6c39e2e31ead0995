"""What a live `evalspec run` costs beyond its HTTP calls: no embedding model on a warm cache,
and a garbage-collector schedule that is the caller's again once the run is over."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, tool_call_reply

from evalspec.api import run
from evalspec.errors import UsageError
from evalspec.records import RunRequest

REPO = Path(__file__).resolve().parents[1]
KEY_ENV = "EVALSPEC_TEST_KEY"
HEAVY = ("torch", "sentence_transformers", "transformers")

SUITE = """\
suite: warm
models: [{{name: m, model: fake, base_url: "{url}", api_key_env: EVALSPEC_TEST_KEY}}]
run: {{mode: single_turn, concurrency: 4, retries: 0}}
critics: {{city: binary, note: similarity}}
tools:
  - name: get_weather
    description: Current weather for a city.
    parameters:
      type: object
      properties: {{city: {{type: string}}, note: {{type: string}}}}
      required: [city]
cases:
  - name: paris
    user: Weather in Paris?
    expect: {{tool_calls: [{{get_weather: {{city: Paris, note: the weather in Paris}}}}]}}
  - name: oslo
    user: Weather in Oslo?
    expect: {{tool_calls: [{{get_weather: {{city: Oslo, note: current conditions in Oslo}}}}]}}
  - name: rome
    user: Weather in Rome?
    expect: {{tool_calls: [{{get_weather: {{city: Rome, note: is it raining in Rome}}}}]}}
"""

NOTES = {
    "Paris": "weather for Paris",
    "Oslo": "a sandwich recipe",
    "Rome": "is it raining in Rome",
}

# Runs `evalspec ARGS` in this process, then prints which of the modules named first it loaded.
_PROBE = """
import json, sys
from evalspec._cli import app
code = 0
try:
    app(sys.argv[2:], prog_name="evalspec")
except SystemExit as exc:
    code = exc.code
heavy = [m for m in sys.argv[1].split(",") if m in sys.modules]
print(json.dumps({"code": code, "heavy": heavy}))
"""


def answer(body: dict[str, Any]) -> Any:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    city = next(c for c in NOTES if c in user)
    return tool_call_reply("get_weather", {"city": city, "note": NOTES[city]})


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(answer) as fake:
        yield fake


def run_probed(suite: Path, run_dir: Path, cache: Path) -> dict[str, Any]:
    env = {KEY_ENV: "sk-test-warm-000000", "EVALSPEC_CACHE_DIR": str(cache)}
    args = [str(suite), "--recordings", str(run_dir) + ".rec.jsonl", "--out", str(run_dir)]
    done = python("-c", _PROBE, ",".join(HEAVY), "run", *args, env=env, timeout=240)
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["code"] in (0, 1), done.stderr[-2000:]
    return probe


def scores(run_dir: Path) -> dict[str, tuple[str, float, list[Any]]]:
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))["results"]
    return {
        r["case"]: (r["status"], r["score"], [(row["field"], row["score"]) for row in r["rows"]])
        for r in results
    }


def python(
    *args: str, env: dict[str, str] | None = None, cwd: Path = REPO, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """This interpreter in a child process with this checkout importable; output captured."""
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env={**base, "PYTHONPATH": str(REPO), **(env or {})},
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


@pytest.mark.slow
def test_a_warm_cache_run_loads_no_model_and_scores_as_the_cold_one(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = tmp_path / "warm.yaml"
    suite.write_text(SUITE.format(url=server.base_url), encoding="utf-8")
    cache = tmp_path / "cache"

    cold = run_probed(suite, tmp_path / "cold", cache)
    warm = run_probed(suite, tmp_path / "warm", cache)

    assert "torch" in cold["heavy"]  # the first run had to embed the notes
    assert warm["heavy"] == []
    assert len(server.requests) == 6  # both runs called the model for every case
    cold_scores, warm_scores = scores(tmp_path / "cold"), scores(tmp_path / "warm")
    assert warm_scores == cold_scores
    # The similarity critic really judged: the unrelated note scored below the close ones.
    note = {case: dict(rows)["note"] for case, (_, _, rows) in warm_scores.items()}
    assert note["oslo"] < note["paris"] < 1.0
    assert note["rome"] == pytest.approx(1.0, abs=1e-6)


def test_a_run_gives_the_collector_back_as_it_found_it(server: FakeOpenAI, tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE.format(url=server.base_url).replace("note: similarity", "note: ignore"))
    before = gc.get_threshold()
    os.environ[KEY_ENV] = "sk-test-warm-000000"
    try:
        code = run(RunRequest(suite=suite, out=tmp_path / "run")).exit_code
    finally:
        del os.environ[KEY_ENV]
    assert code == 0
    assert gc.isenabled()
    assert gc.get_threshold() == before
    # Also when the run stops on bad usage.
    with pytest.raises(UsageError):
        run(RunRequest(suite=suite, resume=tmp_path / "no-such-run"))
    assert gc.isenabled()
    assert gc.get_threshold() == before


_ENDING = """
import atexit, sys
from evalspec._cli.teardown import skipped_on_exit

class Noisy:
    def __del__(self):
        print("torn down", flush=True)

kept = Noisy()  # freed only when the interpreter tears its modules down
with skipped_on_exit():
    atexit.register(print, "handler ran")
    print("output", end="")  # unflushed: must still reach the pipe
    how = sys.argv[1]
    if how == "status":
        raise SystemExit(3)
    if how == "message":
        raise SystemExit("stopped: a message")
    raise RuntimeError("boom")
"""


@pytest.mark.parametrize(
    ("how", "code", "torn_down"),
    [("status", 3, False), ("message", 1, True), ("crash", 1, True)],
)
def test_the_console_script_skips_teardown_only_after_an_exit_status(
    how: str, code: int, torn_down: bool
) -> None:
    done = python("-c", _ENDING, how)
    assert done.returncode == code
    assert done.stdout.startswith("output")
    assert "handler ran" in done.stdout  # at-exit handlers run either way
    assert ("torn down" in done.stdout) is torn_down
    if how == "message":
        assert "stopped: a message" in done.stderr
    if how == "crash":
        assert "RuntimeError: boom" in done.stderr


@pytest.mark.slow
def test_a_piped_run_exits_with_its_status_and_whole_report(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE.format(url=server.base_url).replace("note: similarity", "note: ignore"))
    run_dir = tmp_path / "run"
    env = {KEY_ENV: "sk-test-warm-000000"}
    done = python("-m", "evalspec", "run", str(suite), "--out", str(run_dir), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.rstrip().endswith(str(run_dir / "results.json"))
    assert json.loads((run_dir / "results.json").read_text())["models"][0]["passed"] == 3


_THREADS = """
import json, os, sys
if sys.argv[1] == "store":
    import evalspec._scoring.embeddings
else:
    import numpy
print(json.dumps({
    "threads": len(os.listdir("/proc/self/task")),
    "env": os.environ.get("OPENBLAS_NUM_THREADS"),
}))
"""


def threads_after_import(what: str, **env: str) -> dict[str, Any]:
    done = python("-c", _THREADS, what, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_the_embedding_store_starts_numpy_with_one_blas_thread() -> None:
    ours = threads_after_import("store")
    assert ours == {"threads": 1, "env": None}  # and the variable is not left for children
    if (os.cpu_count() or 1) > 1:
        assert threads_after_import("numpy")["threads"] > 1  # what numpy alone would start
        # A number the user chose is kept.
        assert threads_after_import("store", OPENBLAS_NUM_THREADS="2") == {
            "threads": 2,
            "env": "2",
        }
