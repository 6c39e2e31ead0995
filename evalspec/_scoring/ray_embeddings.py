"""Embed a `--ray` run's texts on the cluster with Ray Data, into the local embedding cache.

Scoring embeds the texts similarity critics compare (expected and actual argument values, final
answers) a chunk of transcripts at a time. For a run on a Ray cluster, the distinct texts of a
chunk that the embedding cache lacks are embedded by Ray Data `map_batches` over a pool of model
replicas on the cluster: one per GPU (`num_gpus=1` each) when the cluster has GPUs, CPU workers
otherwise. The vectors come back to the driver and are written to the same cache a local run
uses, so the scorer then finds every text there: the model, its settings and the float32 rows
are those of a local run, and so are the scores.

Only `evalspec run --ray` imports this module (and with it Ray); a local run never does.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import ray

from evalspec._runner.ray_cluster import join
from evalspec._scoring.embeddings import (
    EmbeddingStore,
    load_sentence_transformer,
    model_text,
    suite_cache_dir,
)
from evalspec._suite.model import Suite
from evalspec._util.errors import RunError
from evalspec._util.ray_batches import RAY_EMBED_BATCH

DEFAULT_BATCH = RAY_EMBED_BATCH
SCORING_CHUNK = 10_000
"""Transcripts a Ray run scores together: the texts one chunk lacks are one Ray Data step, whose
replicas each load the model (seconds), so a Ray run scores in fewer, larger chunks than a local
one (1,000); the driver holds up to this many transcripts."""
STEP_RETRIES = 3
"""How often an embedding step runs again after the process driving it died."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterEmbedOptions:
    batch_size: int = DEFAULT_BATCH
    replicas: int | None = None
    """Model replicas (Ray Data actors); default one per GPU, else one per CPU the texts fill."""


class SentenceEmbedder:
    """The `map_batches` callable: one model replica, loaded once per Ray Data actor."""

    def __init__(self, model: str | None, batch_size: int) -> None:
        self.model = load_sentence_transformer(model)  # on the GPU Ray gave it, if any
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        # Texts travel as UTF-8 bytes (surrogatepass): Arrow refuses lone surrogates, which a
        # model's answer may hold; the model reads them as the local store's model does.
        texts = [model_text(bytes(b).decode("utf-8", "surrogatepass")) for b in batch["text"]]
        vectors = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return {"row": batch["row"], "vector": np.asarray(vectors, dtype=np.float32)}


@dataclass(frozen=True)
class Replicas:
    """Where the model replicas run: how many, and the device each takes."""

    count: int
    device: str
    """``GPU`` (each replica takes one) or ``CPU`` (one core each)."""


def replicas_for(texts: int, options: ClusterEmbedOptions, resources: dict[str, float]) -> Replicas:
    """A replica per GPU when the cluster has GPUs, else per CPU; no more than there are
    batches to fill them (each replica loads the model once, seconds of work)."""
    gpus = int(resources.get("GPU", 0))
    batches = max(1, math.ceil(texts / options.batch_size))
    if gpus:
        return Replicas(options.replicas or min(gpus, batches), "GPU")
    cpus = max(1, int(resources.get("CPU", 1)))
    return Replicas(options.replicas or min(cpus, batches), "CPU")


def embed_on_cluster(
    texts: list[str], model: str | None, options: ClusterEmbedOptions
) -> np.ndarray:
    """The normalised embedding of every text, one row each in order, computed by Ray Data."""
    replicas = replicas_for(len(texts), options, ray.cluster_resources())
    rows = [{"row": i, "text": t.encode("utf-8", "surrogatepass")} for i, t in enumerate(texts)]
    try:
        vectors: np.ndarray = ray.get(
            _embedding_step.remote(rows, model, options.batch_size, replicas)
        )
    except ray.exceptions.RayError as exc:
        raise RunError(f"embedding on the Ray cluster failed: {_cause(exc)}") from None
    _log.info(
        "embedded %d texts on the Ray cluster (Ray Data map_batches, %d %s replica(s), batch %d)",
        len(texts),
        replicas.count,
        replicas.device,
        options.batch_size,
    )
    return vectors


@ray.remote(num_cpus=0, max_retries=STEP_RETRIES)  # type: ignore[untyped-decorator]  # Ray is read as Any (follow_imports=skip)
def _embedding_step(
    rows: list[dict[str, Any]], model: str | None, batch_size: int, replicas: Replicas
) -> np.ndarray:
    """Drive the Ray Data pipeline from a worker, not from the run's process: Ray Data's
    notes and its actors' logs then go to the cluster's log files, not the run's console.

    Ray Data restarts a replica that dies (killed, out of memory, node lost) and runs its
    batches again; this task runs again if its own process dies."""
    try:
        from ray import data
    except ImportError as exc:  # Ray installed without its data extra (pandas, pyarrow)
        raise RunError(
            f"ray= embeds texts with Ray Data, which cannot load here ({exc}): "
            "pip install 'evalspec-yaml[ray]' on every node",
            params=["ray"],
        ) from None
    context = data.DataContext.get_current()
    context.enable_progress_bars = False
    device = {"num_gpus": 1} if replicas.device == "GPU" else {"num_cpus": 1}
    batches = (
        data.from_items(rows)
        .map_batches(
            SentenceEmbedder,
            fn_constructor_args=(model, batch_size),
            batch_size=batch_size,
            batch_format="numpy",
            compute=data.ActorPoolStrategy(size=replicas.count),
            **device,
        )
        .iter_batches(batch_format="numpy", batch_size=None)
    )
    out = np.empty((len(rows), 0), dtype=np.float32)
    for batch in batches:
        if not out.shape[1]:
            out = np.empty((len(rows), batch["vector"].shape[1]), dtype=np.float32)
        out[batch["row"]] = batch["vector"]
    return out


def _cause(exc: BaseException) -> str:
    """Why the step failed: a RunError's message (the model could not load), else the
    innermost exception's type and last line."""
    seen: BaseException | None = exc
    last = exc
    while seen is not None:
        if isinstance(seen, RunError):
            return str(seen)
        last = seen
        seen = getattr(seen, "cause", None) or seen.__cause__
    lines = str(last).strip().splitlines()
    return f"{type(last).__name__}: {lines[-1] if lines else ''}"


class ClusterEmbedder:
    """The scorer's `Embedder` for a `--ray` run: texts the cache lacks are embedded on the
    cluster and cached; every similarity is then answered by the local store from the cache."""

    def __init__(
        self,
        store: EmbeddingStore,
        options: ClusterEmbedOptions | None = None,
        suite: Suite | None = None,
        address: str = "auto",
    ) -> None:
        """`suite` and `address`: the cluster to join when scoring starts before the run does
        (a resumed run scores its finished transcripts first)."""
        self.store = store
        self.options = options or ClusterEmbedOptions()
        self.suite = suite
        self.address = address
        self.embedded = 0
        """Texts embedded on the cluster."""
        self.jobs = 0

    @classmethod
    def for_suite(
        cls, suite: Suite, address: str, options: ClusterEmbedOptions | None = None
    ) -> ClusterEmbedder:
        """The embedder of a `--ray` run of `suite`: its model, its cache."""
        store = EmbeddingStore(suite.embeddings.model, suite_cache_dir(suite))
        return cls(store, options, suite, address)

    def prefetch(self, texts: list[str]) -> None:
        missing = self.store.uncached(texts)
        if missing:
            if not ray.is_initialized() and self.suite is not None:
                join(self.suite, self.address)
            vectors = embed_on_cluster(missing, self.store.model_name, self.options)
            self.store.add(missing, vectors)
            self.embedded += len(missing)
            self.jobs += 1
        self.store.prefetch(texts)

    def similarity(self, a: str, b: str) -> float:
        return self.store.similarity(a, b)
