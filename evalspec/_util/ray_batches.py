"""Batch sizes of a Ray run, defined once: the CLI's option defaults and the runner's both read
these, so `--help` and a run from the API cannot disagree."""

from __future__ import annotations

RAY_BATCH = 64
"""Plan items per batch sent to one Ray worker."""

RAY_EMBED_BATCH = 256
"""Texts per `map_batches` batch of the cluster's embedding step: large enough to keep a GPU
busy, small enough for a CPU."""
