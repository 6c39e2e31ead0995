"""Run a plan on a Ray cluster: plan items go to workers in batches, transcripts come back.

The driver (the `evalspec run --ray` process) keeps everything a run directory holds: each
finished batch's transcripts are appended to its transcripts.jsonl as the batch returns, so
`--resume`, `score`, `diff` and the reports work as for a local run. Each worker runs the
same item runner as a local run (`run_one`), on its own event loop, `concurrency` items at
a time.

Shared state lives in actors on the driver's node:
- recordings: one actor owns the recordings file; workers ask it for answers (the first
  request of every item of a batch in one call) and send it the answers they record;
- rate limits: one actor per limit hands out request slots `60/rpm` seconds apart, as the
  limiters of a local run do, so `requests_per_minute` holds across every worker of the
  cluster: one for the run's limit (every call: models, judge, simulator), and one per
  endpoint of the models with their own `requests_per_minute` (their calls only). An endpoint
  is a model id at one base URL with one API key variable (`rate_key`), since that is what a
  provider's quota counts: two suite entries of one model (two temperatures) share its actor.

A worker that dies (killed, out of memory, node lost) takes its batch with it; Ray runs the
batch again on another worker, so its items are not lost, and answers it had recorded are
replayed rather than asked for twice.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from evalspec._plan import Plan, PlanItem, request_key
from evalspec._providers.base import ChatRequest, ChatResponse, Limiter, Provider, RecordMode
from evalspec._providers.calls import (
    ModelCalls,
    model_endpoint,
    own_rate_limits,
    rate_key,
    register_suite_secrets,
)
from evalspec._providers.recordings import RecordingProvider, Recordings
from evalspec._runner.execute import (
    RunOptions,
    RunOutcome,
    Sink,
    live_factory,
    model_calls,
    resume_of,
    run_one,
)
from evalspec._runner.run_dir import (
    ResumeState,
    read_manifest,
    recordings_path,
    write_manifest,
)
from evalspec._suite.endpoints import refuse_keys_in_clear
from evalspec._transcript import Transcript
from evalspec._util.errors import RunError
from evalspec._util.ray_batches import RAY_BATCH
from evalspec._util.redaction import secrets_from_env

DEFAULT_BATCH = RAY_BATCH
TASK_RETRIES = 3
"""How often Ray runs a batch again after its worker died."""


@dataclass(frozen=True)
class ClusterOptions:
    address: str = "auto"
    """`auto` (the cluster this machine belongs to), or a cluster address (ray://host:10001,
    host:6379)."""
    batch_size: int = DEFAULT_BATCH
    in_flight: int | None = None
    """Batches submitted at once; default twice the cluster's CPUs, so memory stays bounded."""


@ray.remote(num_cpus=0)
class RecordingsActor:
    """The run's recordings file, owned by one process on the driver's machine."""

    def __init__(self, path: str, mode: str) -> None:
        self.recordings = Recordings(path)
        self.mode = mode
        self.recorded = 0

    def get_many(self, keys: list[str]) -> dict[str, ChatResponse]:
        found = {}
        for key in keys:
            hit = self.recordings.get(key)
            if hit is not None:
                found[key] = hit
        return found

    def get(self, key: str) -> ChatResponse | None:
        return self.recordings.get(key)

    def put(self, request: ChatRequest, response: ChatResponse) -> None:
        self.recordings.put(request, response)
        self.recorded += 1

    def finish(self) -> None:
        """Close the file; rewrite it with one line per key when anything was recorded."""
        if self.recorded:
            self.recordings.compact()
        else:
            self.recordings.close()


@ray.remote(num_cpus=0)
class RateLimitActor:
    """Request slots of one run, at least 60/rpm seconds apart, cluster-wide."""

    def __init__(self, requests_per_minute: float) -> None:
        self.interval_s = 60.0 / requests_per_minute
        self.next = 0.0

    def reserve(self) -> float:
        """Seconds the caller must wait before its request (its slot is then taken)."""
        now = time.monotonic()
        slot = max(now, self.next)
        self.next = slot + self.interval_s
        return slot - now


class ClusterRateLimiter:
    """The `acquire()` the OpenAI provider awaits, backed by the endpoint's actor."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    async def acquire(self) -> None:
        delay = await self.actor.reserve.remote()
        if delay > 0:
            await asyncio.sleep(delay)


class RemoteRecordings:
    """What `RecordingProvider` needs of `Recordings`, answered by the driver's actor.

    The first request of every item in a batch is looked up in one call beforehand; later
    turns (agent mode) ask one at a time. Answers recorded here are sent to the actor.
    """

    def __init__(
        self, actor: Any, path: str, asked: list[str], prefetched: dict[str, ChatResponse]
    ) -> None:
        self.actor = actor
        self.path = Path(path)
        self.asked = set(asked)
        """Keys looked up beforehand: one not among `prefetched` is not recorded."""
        self.cache = prefetched
        self.pending: list[Any] = []

    def get(self, key: str) -> ChatResponse | None:
        if key in self.asked:
            return self.cache.get(key)
        answer: ChatResponse | None = ray.get(self.actor.get.remote(key))  # asked on its own
        return answer

    def put(self, request: ChatRequest, response: ChatResponse) -> None:
        self.pending.append(self.actor.put.remote(request, response))
        self.asked.add(request.key)
        self.cache[request.key] = replace(response, from_recording=True)

    def flush(self) -> None:
        """Wait until the actor has every answer recorded here."""
        ray.get(self.pending)
        self.pending.clear()

    def compact(self) -> None:  # the driver closes the file once, at the end
        self.flush()

    def close(self) -> None:
        self.flush()


@dataclass
class BatchResult:
    transcripts: list[dict[str, Any]]
    counts: dict[str, int]
    missing: list[str]


@dataclass(frozen=True)
class RunShared:
    """What every batch of a run shares: its settings and the driver's actors."""

    record: RecordMode
    concurrency: int
    recordings: Any
    """The RecordingsActor."""
    recordings_file: str
    limiter: Any
    """The RateLimitActor, or None without requests_per_minute."""
    own_limiters: dict[str, Any]
    """Model name -> the RateLimitActor of its endpoint, for models with their own limit."""


@ray.remote(max_retries=TASK_RETRIES)  # type: ignore[untyped-decorator]  # Ray is read as Any (follow_imports=skip)
def run_batch(base: Plan, items: list[PlanItem], shared: RunShared) -> BatchResult:
    """Run some of the plan's items on this worker; transcripts come back as plain dicts.

    `base` is the plan without items and its suite without cases (each item brings its own
    case), so a batch of a 50,000-item plan ships its own items, not the whole plan."""
    plan = replace(base, items=tuple(items))
    return _worker_loop().run_until_complete(_run_batch(plan, shared))


_LOOP: asyncio.AbstractEventLoop | None = None
_CLIENTS: dict[tuple[str, ...], Provider] = {}
_CALLS: dict[tuple[str, ...], ModelCalls] = {}
"""Per worker process: one event loop and one HTTP client per model for every batch it runs
(a client per batch cost milliseconds per item in connection and client set-up)."""


def _worker_loop() -> asyncio.AbstractEventLoop:
    global _LOOP
    if _LOOP is None or _LOOP.is_closed():
        _LOOP = asyncio.new_event_loop()
        asyncio.set_event_loop(_LOOP)
    return _LOOP


class _Kept:
    """A live provider shared by the batches of one worker: a batch's end does not close it."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        return None


def _limiters_key(shared: RunShared) -> str:
    """Names the run's rate-limit actors (an actor's repr holds its id)."""
    return repr((shared.limiter, sorted(shared.own_limiters.items())))


def _worker_calls(suite: Any, shared: RunShared) -> ModelCalls | None:
    """The run's call policy on this worker, its rate limits kept by the cluster's actors."""
    if shared.record == "offline":
        return None
    key = (suite.path, repr(suite.run), _limiters_key(shared))
    if key not in _CALLS:
        limiter = ClusterRateLimiter(shared.limiter) if shared.limiter is not None else None
        # Keyed here as the provider will look them up, on this worker's environment.
        own: dict[str, Limiter] = {
            rate_key(model_endpoint(m), m.model): ClusterRateLimiter(shared.own_limiters[m.name])
            for m in suite.models
            if m.name in shared.own_limiters
        }
        run = suite.run
        _CALLS[key] = ModelCalls(
            run.timeout_s,
            run.retries,
            None,
            limiter=limiter,
            own_limiters=own,
        )
    return _CALLS[key]


def _shared_live(
    suite: Any, model: Any, calls: ModelCalls | None, shared: RunShared
) -> Callable[[], Provider] | None:
    if calls is None:
        return None
    key = (suite.path, repr(model), repr(suite.run), _limiters_key(shared))

    def build() -> Provider:
        if key not in _CLIENTS:
            _CLIENTS[key] = live_factory(model, calls)()
        return _Kept(_CLIENTS[key])

    return build


async def _run_batch(plan: Plan, shared: RunShared) -> BatchResult:
    from evalspec._tools.mcp_exec import live_executor
    from evalspec._tools.simulated import ToolSimulator

    record, recordings = shared.record, shared.recordings

    suite = plan.suite
    items = plan.items
    keys = [request_key(it.model, list(it.messages), list(it.tools), it.trial) for it in items]
    prefetched = ray.get(recordings.get_many.remote(keys)) if record != "record" else {}
    store = RemoteRecordings(recordings, shared.recordings_file, keys, prefetched)
    cases = {id(it.case): it.case for it in items}  # the suite shipped without its cases
    register_suite_secrets(replace(suite, cases=tuple(cases.values())))
    calls = _worker_calls(suite, shared)
    providers = {
        model.name: RecordingProvider(
            store,
            _shared_live(suite, model, calls, shared),
            mode=record,
        )
        for model in suite.models
    }
    base_dir = Path(suite.path).resolve().parent
    simulator = ToolSimulator(suite.tools, base_dir, calls=calls, mcp=live_executor(suite, record))
    secrets = secrets_from_env(m.api_key_env for m in suite.models)
    gate = asyncio.Semaphore(shared.concurrency)
    missing: list[str] = []

    async def one(index: int) -> Transcript:
        item = items[index]
        async with gate:
            provider = providers[item.model.name]
            player = item.case.simulated_user
            user = providers.get(player.model) if player is not None else None
            return await run_one(item, plan, provider, simulator, secrets, missing, user)

    try:
        done = await asyncio.gather(*(one(i) for i in range(len(items))))
    finally:
        await simulator.aclose()
        for provider in providers.values():
            await provider.aclose()
    counts: dict[str, int] = {}
    for provider in providers.values():
        for k, v in provider.counts.items():
            counts[k] = counts.get(k, 0) + v
        missing.extend(provider.missing)
    return BatchResult([t.to_dict() for t in done], counts, missing)


def _check_reachable(address: str) -> None:
    """Fail in seconds when HOST:PORT does not answer (Ray itself retries for minutes)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise RunError(
            f"ray={address}: nothing answers there ({exc.strerror or exc}); start a cluster "
            "with `ray start --head`, or give its address",
            params=["ray"],
        ) from None


def connect(address: str, env_names: list[str]) -> None:
    """Join the cluster; workers get the suite's API key variables (and nothing else)."""
    env = {n: os.environ[n] for n in env_names if n in os.environ}
    if not ray.is_initialized():
        if address != "auto":
            _check_reachable(address)
        try:
            ray.init(
                address=address,
                runtime_env={"env_vars": env} if env else None,
                log_to_driver=False,
                logging_level="ERROR",
            )
        except ConnectionError as exc:
            raise RunError(
                f"ray={address}: cannot reach a Ray cluster ({exc}); start one with "
                "`ray start --head`, or give its address",
                params=["ray"],
            ) from None


def join(suite: Any, address: str) -> None:
    """Connect to the cluster for a run of this suite (no-op when connected)."""
    keys = {m.api_key_env for m in suite.models if m.api_key_env}
    connect(address, sorted(keys | {"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"}))


def _rate_limit_actors(suite: Any, here: Any) -> tuple[Any, dict[str, Any]]:
    """The run's limit's actor (None without one), and each model's own limit's actor.

    Each is named for the run and its endpoint's key (`ray list actors` shows them) and lives
    as long as this driver: a killed driver leaves no limiter behind on the cluster."""
    token = uuid.uuid4().hex[:8]
    limiter = None
    if suite.run.requests_per_minute:
        # @ray.remote turns each actor class into Ray's ActorClass, whose `options` mypy cannot see.
        limiter = RateLimitActor.options(  # type: ignore[attr-defined]
            name=f"evalspec-rpm-{token}-run", scheduling_strategy=here
        ).remote(suite.run.requests_per_minute)
    by_key = {
        key: RateLimitActor.options(  # type: ignore[attr-defined]  # an ActorClass, as above
            name=f"evalspec-rpm-{token}-{key}", scheduling_strategy=here
        ).remote(rpm)
        for key, rpm in own_rate_limits(suite.models).items()
    }
    own = {
        m.name: by_key[rate_key(model_endpoint(m), m.model)]
        for m in suite.models
        if m.requests_per_minute
    }
    return limiter, own


def _batches(items: list[PlanItem], size: int) -> Iterator[list[PlanItem]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def run_plan_on_ray(
    plan: Plan,
    options: RunOptions,
    cluster: ClusterOptions,
    *,
    on_done: Callable[[Transcript], None] | None = None,
    resumed: ResumeState | None = None,
) -> RunOutcome:
    """Run every item not yet finished in the run directory on the cluster (`resumed`: what
    the caller already read of it, see `run_plan_async`)."""
    suite = plan.suite
    join(suite, cluster.address)
    resumed = resumed or resume_of(plan, options)
    finished = resumed.kept
    todo = [it for it in plan.items if it.id not in finished]
    if options.record != "offline":
        refuse_keys_in_clear(suite, os.environ)
    register_suite_secrets(suite)  # the driver's writers scrub them too
    if options.run_dir is not None and not (options.resume and read_manifest(options.run_dir)):
        write_manifest(options.run_dir, suite, options.selection)
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    rec_file = str(recordings_path(suite, options.recordings))
    recordings = RecordingsActor.options(  # type: ignore[attr-defined]  # an ActorClass, as above
        scheduling_strategy=here
    ).remote(rec_file, options.record)
    limiter, own_limiters = _rate_limit_actors(suite, here)
    concurrency = options.concurrency or suite.run.concurrency
    in_flight = cluster.in_flight or max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
    base = ray.put(replace(plan, suite=replace(suite, cases=()), items=()))
    shared = RunShared(options.record, concurrency, recordings, rec_file, limiter, own_limiters)
    sink = Sink(options.run_dir)
    outcome = RunOutcome(
        [],
        options.run_dir,
        resumed=len(finished),
        rerun=len(resumed.stale),
        calls=model_calls(suite, options),
    )
    keep = options.keep_transcripts
    results: dict[str, Transcript] = dict(finished) if keep else {}
    pending: list[Any] = []
    batches = _batches(todo, max(1, cluster.batch_size))
    try:
        while True:
            while len(pending) < in_flight:
                batch = next(batches, None)
                if batch is None:
                    break
                pending.append(run_batch.remote(base, batch, shared))
            if not pending:
                break
            ready, pending = ray.wait(pending, num_returns=1)
            result: BatchResult = _unwrap(ready[0])
            for data in result.transcripts:
                t = Transcript.from_dict(data)
                if keep:
                    results[t.item_id] = t
                sink.write(t)
                if on_done:
                    on_done(t)
            for k, v in result.counts.items():
                outcome.counts[k] = outcome.counts.get(k, 0) + v
            outcome.missing.extend(result.missing)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        sink.close()
        ray.get(recordings.finish.remote())
    outcome.transcripts = [results[it.id] for it in plan.items if it.id in results]
    return outcome


def _unwrap(ref: Any) -> BatchResult:
    """A batch's result; a run error raised in a worker is raised here as itself."""
    try:
        result: BatchResult = ray.get(ref)
        return result
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause
        if isinstance(cause, RunError):
            raise RunError(str(cause)) from None
        raise RunError(f"a batch failed on the cluster: {cause or exc}") from None
