"""`evalspec run --ray`: the same results as a local run, on a local two-CPU Ray cluster.

The cluster is started once for the module (`ray.init(num_cpus=2)`); its workers are separate
processes that talk real HTTP to fake servers on 127.0.0.1. Drivers run as child processes
(`evalspec run --ray ADDRESS`), as a user would run them, so one can be killed.

The cluster embedder's own tests (`evalspec._scoring.ray_embeddings`) import it: its
replica placement and batching are checked on the cluster directly, below a run.
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
from rate_checks import assert_held_to
from support import RPM_KEY_ENV, add_answer, assert_each_held_to_its_own_rate, write_two_model_suite

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


def write_ray_suite(directory: Path, url: str, cases: int, rpm: int | None = None) -> Path:
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
        suite = write_ray_suite(tmp_path, fake.base_url, 40)
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
        suite = write_ray_suite(tmp_path, fake.base_url, 16, rpm=150)  # one request per 0.4 s
        # Batches of 4 items: four batches spread over both worker processes.
        began = time.monotonic()
        done = run_cli("run", suite, "--ray", cluster, "--ray-batch", "4", "--out", tmp_path / "r")
    assert done.returncode == 1, done.stderr[-3000:]
    assert len(comparable(tmp_path / "r")["scores"]) == 16
    assert len(arrivals) == 16
    # The k-th request no sooner than k slots of 0.4 s after the run began (6 s for the last);
    # a limiter per worker would let the two workers finish in half that.
    assert_held_to(150, began, arrivals)


def test_each_models_own_limit_holds_across_workers(cluster: str, tmp_path: Path) -> None:
    with FakeOpenAI(add_answer) as fast, FakeOpenAI(add_answer) as slow:
        suite = write_two_model_suite(tmp_path, fast.base_url, slow.base_url)
        # Batches of 2 items: eight batches, over both worker processes.
        began = time.monotonic()
        done = subprocess.run(
            evalspec("run", suite, "--ray", cluster, "--ray-batch", "2", "--out", tmp_path / "r"),
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
            cwd=ROOT,
            env={**os.environ, RPM_KEY_ENV: KEY},
            check=False,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert_each_held_to_its_own_rate(fast, slow, began)


def _batch_workers() -> list[int]:
    """Pids of Ray worker processes running a batch (their title is ray::run_batch)."""
    return _processes(b"ray::run_batch")


def _processes(title: bytes) -> list[int]:
    """Pids of processes whose command line starts with `title`."""
    return list(_titles(title))


def _titles(prefix: bytes) -> dict[int, bytes]:
    """Process titles starting with `prefix`, by pid (Ray names a worker after what it runs)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(prefix):
            found[int(entry.name)] = cmdline.split(b"\0")[0].rstrip()
    return found


def _wait_for(predicate: Any, what: str, within_s: float = DEADLINE_S) -> Any:
    deadline = time.monotonic() + within_s
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
        suite = write_ray_suite(tmp_path, fake.base_url, 40)
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
        suite = write_ray_suite(tmp_path, fake.base_url, 60)
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
    suite = write_ray_suite(tmp_path, "http://127.0.0.1:9/v1", 2)
    address = f"127.0.0.1:{port}"
    done = run_cli("run", suite, "--ray", address, "--out", tmp_path / "run", timeout=60)
    assert done.returncode == 3
    assert f"--ray 127.0.0.1:{port}: nothing answers there" in done.stderr
    assert "Traceback" not in done.stderr


NOTES = [
    "meeting moved to Friday at 3pm",
    "the quarterly report is ready for review",
    "lunch with the design team tomorrow",
    "server maintenance tonight from 10 to 11",
]
PARAPHRASES = [
    "the meeting is now on Friday, 3 pm",
    "the Q3 report can be reviewed now",
    "bananas are yellow",
    "maintenance window for the servers this evening",
]


def write_similarity_suite(directory: Path, url: str, cases: int) -> Path:
    lines = [
        "suite: ray-embed",
        f"models: [{{name: m, model: fake-model, base_url: {json.dumps(url)}, "
        f"api_key_env: {KEY_ENV}}}]",
        "run: {mode: single_turn, concurrency: 4, retries: 0}",
        "critics: {text: {similarity: {threshold: 0.7}}}",
        "tools: [{name: note, parameters: {type: object, properties: {text: {type: string}}}}]",
        "cases:",
    ]
    for i in range(cases):
        lines.append(
            f"  - {{name: c{i}, user: 'note {i}', "
            f"expect: {{tool_calls: [{{note: {{text: {json.dumps(f'{NOTES[i % 4]} ({i})')}}}}}]}}}}"
        )
    path = directory / "embed.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def paraphrase(body: dict[str, Any]) -> Any:
    """Answers case i with a paraphrase of its note (an unrelated text for every fourth)."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    i = int(user.removeprefix("note "))
    return tool_call_reply("note", {"text": f"{PARAPHRASES[i % 4]} ({i})"})


def test_a_ray_run_embeds_on_the_cluster_and_scores_as_a_local_run(
    cluster: str, tmp_path: Path
) -> None:
    def scored(run_dir: Path) -> dict[str, tuple[float, str]]:
        results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
        return {r["case"]: (r["score"], r["status"]) for r in results["results"]}

    def run(*args: str | Path, cache: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            evalspec("run", suite, "--recordings", tmp_path / "rec.jsonl", "-v", *args),
            capture_output=True,
            text=True,
            timeout=DEADLINE_S * 2,
            cwd=ROOT,
            env={**os.environ, KEY_ENV: KEY, "EVALSPEC_CACHE_DIR": str(cache)},
            check=False,
        )

    with FakeOpenAI(paraphrase) as fake:
        suite = write_similarity_suite(tmp_path, fake.base_url, 12)
        local = run("--out", tmp_path / "local", cache=tmp_path / "local-cache")
        on_ray = run(
            "--ray", cluster, "--ray-embed-batch", "8", "--out", tmp_path / "ray",
            cache=tmp_path / "ray-cache",
        )  # fmt: skip
        again = run("--ray", cluster, "--out", tmp_path / "again", cache=tmp_path / "ray-cache")
    for done in (local, on_ray, again):
        assert done.returncode == 1, done.stderr[-3000:]  # the unrelated answers fail
    a, b = scored(tmp_path / "local"), scored(tmp_path / "ray")
    assert a.keys() == b.keys() and len(a) == 12
    for item, (score, status) in a.items():
        assert b[item][1] == status
        assert b[item][0] == pytest.approx(score, abs=1e-5)
    failed = {case for case, (_, status) in b.items() if status == "fail"}
    assert {"c2", "c6", "c10"} <= failed < set(b)  # the unrelated answers fail, not all
    # 12 expected and 12 actual texts, none alike: embedded by Ray Data replicas, in batches
    # of 8 (two CPU replicas for three batches), into the cache the local scorer reads.
    assert "embedded 24 texts on the Ray cluster" in on_ray.stderr
    assert "2 CPU replica(s), batch 8" in on_ray.stderr
    assert "embedded" not in local.stderr
    assert list((tmp_path / "ray-cache" / "embeddings").rglob("*.npz"))
    # A second run finds every text in the cache: nothing is embedded again.
    assert "texts on the Ray cluster" not in again.stderr
    assert scored(tmp_path / "again") == b


def test_cluster_embedding_fills_the_local_cache_with_the_local_vectors(
    cluster: str, tmp_path: Path
) -> None:
    import numpy as np

    from evalspec._scoring.embeddings import EmbeddingStore
    from evalspec._scoring.ray_embeddings import ClusterEmbedder, ClusterEmbedOptions

    texts = [f"{note} #{i}" for i in range(40) for note in NOTES[i % 4 : i % 4 + 1]]
    store = EmbeddingStore(cache_dir=tmp_path / "cache")
    embedder = ClusterEmbedder(store, ClusterEmbedOptions(batch_size=16))
    embedder.prefetch(texts + texts[:5])
    assert embedder.embedded == 40 and embedder.jobs == 1
    assert store.stats["encoded"] == 0  # the driver never ran the model
    embedder.prefetch(texts)
    assert embedder.jobs == 1  # all cached now
    local = EmbeddingStore(cache_dir=tmp_path / "local")
    local.prefetch(texts)
    got = np.stack([store.vector(t) for t in texts])
    want = np.stack([local.vector(t) for t in texts])
    assert np.allclose(got, want, atol=1e-5)
    # Another store on the same cache (the next run's scorer) embeds nothing.
    reader = EmbeddingStore(cache_dir=tmp_path / "cache")
    assert reader.uncached(texts) == []
    assert reader.similarity(texts[0], texts[1]) == pytest.approx(
        float(want[0] @ want[1]), abs=1e-5
    )
    assert reader.stats["encoded"] == 0


REPLICA = b"ray::MapWorker(MapBatches(SentenceEmbedder))"
"""The title of an embedding replica's process: `REPLICA.__init__` while it loads the model,
`REPLICA.submit` while it embeds a batch, `REPLICA` between batches."""


def _replicas() -> list[int]:
    """Pids of Ray Data's embedding replicas."""
    return _processes(REPLICA)


def test_a_replica_killed_mid_embedding_loses_no_text(cluster: str, tmp_path: Path) -> None:
    import numpy as np

    from evalspec._scoring.embeddings import EmbeddingStore
    from evalspec._scoring.ray_embeddings import ClusterEmbedder, ClusterEmbedOptions

    texts = [f"{NOTES[i % 4]}, take {i}" for i in range(4000)]
    store = EmbeddingStore(cache_dir=tmp_path / "cache")
    embedder = ClusterEmbedder(store, ClusterEmbedOptions(batch_size=32))
    failure: list[BaseException] = []

    def embed() -> None:
        try:
            embedder.prefetch(texts)
        except BaseException as exc:
            failure.append(exc)

    seen: set[int] = set()

    def embedding() -> int | None:
        """A replica embedding a batch, once both replicas of the pool have been seen."""
        assert worker.is_alive(), f"the embedding ended before a replica was killed: {failure}"
        replicas = _titles(REPLICA)
        seen.update(replicas)
        busy = [pid for pid, title in replicas.items() if title.endswith(b".submit")]
        return busy[0] if len(seen) >= 2 and busy else None

    worker = threading.Thread(target=embed)
    worker.start()
    victim = _wait_for(embedding, "two replicas, one embedding a batch", DEADLINE_S * 2)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + DEADLINE_S * 2
    while worker.is_alive() and time.monotonic() < deadline:
        seen.update(_replicas())
        time.sleep(0.1)
    worker.join(1)
    assert not worker.is_alive() and not failure, failure
    assert embedder.embedded == len(texts) and store.stats["encoded"] == 0
    assert len(seen) > 2  # two replicas (two CPUs), and one that took the dead one's place
    check = [texts[0], texts[777], texts[-1]]
    local = EmbeddingStore(cache_dir=tmp_path / "local")
    local.prefetch(check)
    for text in check:
        assert np.allclose(store.vector(text), local.vector(text), atol=1e-5)


def test_replicas_take_a_gpu_each_when_the_cluster_has_gpus() -> None:
    from evalspec._scoring.ray_embeddings import ClusterEmbedOptions, Replicas, replicas_for

    options = ClusterEmbedOptions(batch_size=100)
    assert replicas_for(1000, options, {"CPU": 16, "GPU": 4}) == Replicas(4, "GPU")
    assert replicas_for(150, options, {"CPU": 16, "GPU": 4}) == Replicas(2, "GPU")
    assert replicas_for(1000, options, {"CPU": 2}) == Replicas(2, "CPU")
    assert replicas_for(10, options, {"CPU": 2}) == Replicas(1, "CPU")
    fixed = ClusterEmbedOptions(batch_size=100, replicas=3)
    assert replicas_for(10, fixed, {"CPU": 2, "GPU": 8}) == Replicas(3, "GPU")


GPU_CLUSTER = """
import logging, sys, tempfile
import ray
from evalspec._scoring.embeddings import EmbeddingStore
from evalspec._scoring.ray_embeddings import ClusterEmbedder, ClusterEmbedOptions

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
# A cluster that says it has a GPU: the replica is scheduled on it (num_gpus=1) and, as torch
# finds no CUDA device on this machine, runs on the CPU.
ray.init(address="local", num_cpus=1, num_gpus=1, include_dashboard=False,
         log_to_driver=False, logging_level="ERROR")
store = EmbeddingStore(cache_dir=tempfile.mkdtemp())
embedder = ClusterEmbedder(store, ClusterEmbedOptions(batch_size=4))
embedder.prefetch(["lunch at noon", "a meeting on Friday", "the report is ready"])
print("encoded on the driver:", store.stats["encoded"])
"""


def test_a_cluster_with_gpus_embeds_on_them(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", GPU_CLUSTER],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "embedded 3 texts on the Ray cluster" in done.stdout
    assert "1 GPU replica(s), batch 4" in done.stdout
    assert "encoded on the driver: 0" in done.stdout
