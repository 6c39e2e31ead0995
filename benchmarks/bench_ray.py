"""Items per second of a run on a local Ray cluster against one process, and the overhead.

Run: ``.venv/bin/python benchmarks/bench_ray.py [--cases 640] [--repeat 3] [--batch 32]
[--embed-texts 2000] [--embed-batch 256]`` (needs the ray extra:
``pip install -c constraints.txt -e ".[ray]"``).

One fake OpenAI-compatible server in its own process answers every request after 50 ms. The
same single-turn plan (fresh recordings each time, so every item calls the server) runs:
  - in this process with `run_plan`, concurrency 16 and concurrency 32;
  - on a local Ray cluster of 1 and then 2 CPUs (so 1 and 2 worker processes), each worker
    running batches at concurrency 16 (`run_plan_on_ray`).
Suite loading and scoring are left out: this is the run stage only. Each Ray cluster gets a
warm-up run first, so worker start-up is not counted. On a 2-core machine shared with the
server the point is correctness and overhead, not speed-up; the overhead per item is
(ray seconds - local seconds at the same total concurrency) / items.

Then the embedding step of a `--ray` run's scoring: `--embed-texts` distinct texts into an empty
cache, (a) by the local store in this process (the model loaded first, as a local run does once)
and (b) by Ray Data on a local cluster of 2 CPUs (`ClusterEmbedder`, whose replicas load the
model in every step: a step runs per 10,000 scored transcripts). Both end with every vector
in the cache; the figure is the Ray step's overhead over the local one, not a speed-up.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, machine
from bench_embeddings import make_texts
from bench_run import ENV, Server, suite_yaml

sys.path.insert(0, str(REPO))


def _timed(fn, repeat: int) -> list[float]:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=640)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32, help="items per Ray batch")
    parser.add_argument("--embed-texts", type=int, default=2000, help="0: skip the embedding step")
    parser.add_argument("--embed-batch", type=int, default=256, help="texts per map_batches batch")
    parser.add_argument("--skip-items", action="store_true", help="only the embedding step")
    args = parser.parse_args()
    try:
        import ray  # noqa: F401
    except ImportError:
        sys.exit('ray is not installed: pip install -c constraints.txt -e ".[ray]"')
    print(f"machine: {machine()}")
    if not args.skip_items:
        run_stage(args)
    if args.embed_texts:
        embedding_step(args)


def run_stage(args: argparse.Namespace) -> None:
    import os

    import ray

    from evalspec._plan import compile_plan
    from evalspec._runner.execute import RunOptions, run_plan
    from evalspec._runner.ray_cluster import ClusterOptions, run_plan_on_ray
    from evalspec._suite.validate import load_suite

    os.environ.update(ENV)
    print(f"{args.cases} single-turn items, server latency 50 ms")
    server = Server(latency_s=0.05)
    rows: list[tuple[str, float]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp_name:
            tmp = Path(tmp_name)
            path = tmp / "suite.yaml"
            path.write_text(suite_yaml(server.base_url, args.cases, 16), encoding="utf-8")
            plan = compile_plan(load_suite(path))
            counter = iter(range(10_000))

            def options(concurrency: int) -> RunOptions:
                n = next(counter)
                return RunOptions(
                    concurrency=concurrency,
                    run_dir=tmp / f"run{n}",
                    recordings=tmp / f"rec{n}.jsonl",
                )

            for concurrency in (16, 32):
                times = _timed(lambda c=concurrency: run_plan(plan, options(c)), args.repeat)
                rows.append((f"one process, concurrency {concurrency}", statistics.median(times)))
            for cpus in (1, 2):
                ray.init(num_cpus=cpus, include_dashboard=False, logging_level="ERROR")
                cluster = ClusterOptions(address="auto", batch_size=args.batch)
                warm = compile_plan(load_suite(path), cases=["c1"])
                run_plan_on_ray(warm, options(16), cluster)
                times = _timed(lambda c=cluster: run_plan_on_ray(plan, options(16), c), args.repeat)
                rows.append(
                    (
                        f"Ray, {cpus} worker process{'es' if cpus > 1 else ''} x 16",
                        statistics.median(times),
                    )
                )
                ray.shutdown()
    finally:
        server.close()
    floor = {16: args.cases / 16 * 0.05, 32: args.cases / 32 * 0.05}
    print(f"floor at concurrency 16: {floor[16]:.2f} s; at 32: {floor[32]:.2f} s")
    for label, seconds in rows:
        print(f"  {label:<36} {seconds:6.2f} s  {args.cases / seconds:7.1f} items/s")
    local = dict(rows)
    one = local["Ray, 1 worker process x 16"] - local["one process, concurrency 16"]
    two = local["Ray, 2 worker processes x 16"] - local["one process, concurrency 32"]
    print(
        f"overhead per item: 1 worker vs one process at 16: {one / args.cases * 1000:.2f} ms; "
        f"2 workers vs one process at 32: {two / args.cases * 1000:.2f} ms"
    )


def embedding_step(args: argparse.Namespace) -> None:
    """Local store and Ray Data step, interleaved `--repeat` times, each into an empty cache."""
    import numpy as np
    import ray

    from evalspec._scoring.embeddings import EmbeddingStore
    from evalspec._scoring.ray_embeddings import ClusterEmbedder, ClusterEmbedOptions

    texts = make_texts(args.embed_texts, seed=13)
    print(f"embedding step: {len(texts)} distinct texts, empty cache, batch {args.embed_batch}")
    options = ClusterEmbedOptions(batch_size=args.embed_batch)
    local_s: list[float] = []
    ray_s: list[float] = []
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ray-embed-") as tmp_name:
            tmp = Path(tmp_name)
            ClusterEmbedder(EmbeddingStore(cache_dir=tmp / "warm"), options).prefetch(texts[:8])
            for n in range(args.repeat):
                start = time.perf_counter()
                local = EmbeddingStore(cache_dir=tmp / f"local{n}")
                local.prefetch(texts)  # the model loaded on the first miss, as in a local run
                local_s.append(time.perf_counter() - start)
                start = time.perf_counter()
                store = EmbeddingStore(cache_dir=tmp / f"ray{n}")
                ClusterEmbedder(store, options).prefetch(texts)
                ray_s.append(time.perf_counter() - start)
            diff = max(float(np.abs(store.vector(t) - local.vector(t)).max()) for t in texts)
    finally:
        ray.shutdown()
    a, b = statistics.median(local_s), statistics.median(ray_s)
    print(
        f"  local store, model load included      median {a:6.2f} s  {len(texts) / a:7.1f} texts/s"
    )
    print(
        f"  Ray Data, 2 CPU replicas, loads incl. median {b:6.2f} s  {len(texts) / b:7.1f} texts/s"
    )
    print(
        f"  Ray step / local: {b / a:.2f}x ({b - a:+.2f} s per step); largest difference of a "
        f"vector component {diff:.1e}; the driver encoded {store.stats['encoded']} texts"
    )


if __name__ == "__main__":
    main()
