"""`evalspec run --ray`: the same results as a local run, on a local two-CPU Ray cluster.

The cluster is started once for the module (`ray.init(num_cpus=2)`); its workers are separate
processes that talk real HTTP to fake servers on 127.0.0.1. Drivers run as child processes
(`evalspec run --ray ADDRESS`), as a user would run them, so one can be killed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, tool_call_reply

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install .[ray])")

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
KEY_ENV = "EVALSPEC_RAY_TEST_KEY"
KEY = "sk-test-ray-0000000000"
DEADLINE_S = 120.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local cluster of 2 CPUs; its address for drivers in other processes."""
    os.environ[KEY_ENV] = KEY  # workers inherit the cluster's environment, as on a real node
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        os.environ.pop(KEY_ENV, None)


def answer(body: dict[str, Any]) -> Any:
    """A model that adds the two numbers of "What is A plus B?", except when B is 7."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    a, b = (int(x) for x in user.removeprefix("What is ").removesuffix("?").split(" plus "))
    return tool_call_reply("add", {"a": a, "b": b if b != 7 else b + 1})


def write_suite(directory: Path, url: str, cases: int, rpm: int | None = None) -> Path:
    limit = f", requests_per_minute: {rpm}" if rpm else ""
    run = f"{{mode: single_turn, concurrency: 4, retries: 0{limit}}}"
    lines = [
        "suite: ray-test",
        f"models: [{{name: m, model: fake-model, base_url: {json.dumps(url)}, "
        f"api_key_env: {KEY_ENV}}}]",
        f"run: {run}",
        "critics: {a: binary, b: binary}",
        "tools: [{name: add, parameters: {type: object, properties: {a: {type: number}, "
        "b: {type: number}}}}]",
        "cases:",
    ]
    for i in range(cases):
        b = i % 10
        lines.append(
            f"  - {{name: c{i}, user: 'What is {i} plus {b}?', "
            f"expect: {{tool_calls: [{{add: {{a: {i}, b: {b}}}}}]}}}}"
        )
    path = directory / "ray.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def evalspec(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "evalspec", *(str(a) for a in args)]


def run_cli(*args: str | Path, timeout: float = DEADLINE_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        evalspec(*args),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, KEY_ENV: KEY},
        check=False,
    )


def comparable(run_dir: Path) -> dict[str, Any]:
    """What a run decided, per item: the calls made and the scores (no timings)."""
    lines = (run_dir / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    transcripts = {}
    for line in lines:
        t = json.loads(line)
        transcripts[t["item_id"]] = ([c["arguments"] for c in t["tool_calls"]], t["error"])
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    scores = {r["item_id"]: (r["score"], r["status"]) for r in results["results"]}
    return {"transcripts": transcripts, "scores": scores, "lines": len(lines)}


def test_a_ray_run_decides_exactly_what_a_local_run_does(cluster: str, tmp_path: Path) -> None:
    with FakeOpenAI(answer) as fake:
        suite = write_suite(tmp_path, fake.base_url, 40)
        local = run_cli("run", suite, "--out", tmp_path / "local", "--recordings", tmp_path / "a")
        on_ray = run_cli(
            "run", suite, "--ray", cluster, "--out", tmp_path / "ray",
            "--recordings", tmp_path / "b",
        )  # fmt: skip
    assert local.returncode == 1, local.stderr  # the b=7 cases fail
    assert on_ray.returncode == 1, on_ray.stderr
    a, b = comparable(tmp_path / "local"), comparable(tmp_path / "ray")
    assert a == b
    assert b["lines"] == 40
    assert sum(1 for _, status in b["scores"].values() if status == "fail") == 4
    assert len(fake.requests) == 80  # every item called the model once in each run
    # The answers the workers got were recorded by the driver: a replay needs no server.
    replay = run_cli(
        "run", suite, "--ray", cluster, "--record", "offline", "--recordings", tmp_path / "b",
        "--out", tmp_path / "replay",
    )  # fmt: skip
    assert replay.returncode == 1, replay.stderr
    assert comparable(tmp_path / "replay") == b


def test_requests_per_minute_holds_across_workers(cluster: str, tmp_path: Path) -> None:
    arrivals: list[float] = []
    lock = threading.Lock()

    def timed(body: dict[str, Any]) -> Any:
        with lock:
            arrivals.append(time.monotonic())
        return answer(body)

    with FakeOpenAI(timed) as fake:
        suite = write_suite(tmp_path, fake.base_url, 16, rpm=300)  # one request per 0.2 s
        # Batches of 4 items: four batches spread over both worker processes.
        done = run_cli("run", suite, "--ray", cluster, "--ray-batch", "4", "--out", tmp_path / "r")
    assert done.returncode == 1, done.stderr[-3000:]
    assert len(comparable(tmp_path / "r")["scores"]) == 16
    assert len(arrivals) == 16
    # 16 requests in slots 0.2 s apart span 3 s, less what delays the first one's arrival
    # (connection set-up on a loaded machine); a limiter per worker would let the two
    # workers finish in half that, one per batch (four) in a quarter.
    assert arrivals[-1] - arrivals[0] >= 2.4


def test_each_models_own_limit_holds_across_workers(cluster: str, tmp_path: Path) -> None:
    import test_model_rate_limits as limits

    with FakeOpenAI(limits.answer) as fast, FakeOpenAI(limits.answer) as slow:
        suite = limits.write_two_model_suite(tmp_path, fast.base_url, slow.base_url)
        # Batches of 2 items: eight batches, over both worker processes.
        done = subprocess.run(
            evalspec("run", suite, "--ray", cluster, "--ray-batch", "2", "--out", tmp_path / "r"),
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
            cwd=ROOT,
            env={**os.environ, limits.KEY_ENV: KEY},
            check=False,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    limits.assert_each_held_to_its_own_rate(fast, slow)


def _batch_workers() -> list[int]:
    """Pids of Ray worker processes running a batch (their title is ray::run_batch)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(b"ray::run_batch"):
            pids.append(int(entry.name))
    return pids


def _wait_for(predicate: Any, what: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _lines(path: Path) -> int:
    try:
        return len(path.read_text(encoding="utf-8").splitlines())
    except OSError:
        return 0


def test_a_worker_killed_mid_run_loses_no_item(cluster: str, tmp_path: Path) -> None:
    with FakeOpenAI(answer, latency_s=0.15) as fake:
        suite = write_suite(tmp_path, fake.base_url, 40)
        driver = subprocess.Popen(
            evalspec("run", suite, "--ray", cluster, "--ray-batch", "8", "--out", tmp_path / "run"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, KEY_ENV: KEY},
        )
        try:
            _wait_for(lambda: len(fake.requests) >= 4, "the first requests")
            victim = _wait_for(_batch_workers, "a worker running a batch")[0]
            os.kill(victim, signal.SIGKILL)
            _, err = driver.communicate(timeout=DEADLINE_S)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
    assert driver.returncode == 1, err[-3000:]
    got = comparable(tmp_path / "run")
    assert len(got["transcripts"]) == 40
    assert len(got["scores"]) == 40
    assert all(error is None for _, error in got["transcripts"].values())
    assert sum(1 for _, status in got["scores"].values() if status == "fail") == 4


def test_resume_after_the_driver_is_killed(cluster: str, tmp_path: Path) -> None:
    with FakeOpenAI(answer, latency_s=0.1) as fake:
        suite = write_suite(tmp_path, fake.base_url, 60)
        run_dir = tmp_path / "run"
        driver = subprocess.Popen(
            evalspec("run", suite, "--ray", cluster, "--ray-batch", "4", "--out", run_dir),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            env={**os.environ, KEY_ENV: KEY},
        )
        try:
            _wait_for(lambda: _lines(run_dir / "transcripts.jsonl") >= 4, "a finished batch")
            driver.send_signal(signal.SIGKILL)
            driver.wait(timeout=30)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
        saved = _lines(run_dir / "transcripts.jsonl")
        assert 4 <= saved < 60
        resumed = run_cli("run", suite, "--ray", cluster, "--resume", run_dir)
    assert resumed.returncode == 1, resumed.stderr[-3000:]
    assert f"{saved} resumed" in resumed.stdout
    got = comparable(run_dir)
    assert len(got["scores"]) == 60
    assert len(got["transcripts"]) == 60


def test_an_unreachable_cluster_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    suite = write_suite(tmp_path, "http://127.0.0.1:9/v1", 2)
    address = f"127.0.0.1:{port}"
    done = run_cli("run", suite, "--ray", address, "--out", tmp_path / "run", timeout=60)
    assert done.returncode == 3
    assert f"--ray 127.0.0.1:{port}: nothing answers there" in done.stderr
    assert "Traceback" not in done.stderr
