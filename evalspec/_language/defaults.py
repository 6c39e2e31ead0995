"""The defaults code outside the suite model relies on, read from the declarations.

A suite that leaves a key out gets the `default` its declaration gives; code that needs one
(a provider's time-out, a critic's threshold) reads it here instead of repeating it, so the
docs, the editor hints and the behaviour cannot disagree.
"""

from __future__ import annotations

from evalspec._language.critics import CRITIC
from evalspec._language.models import MODEL
from evalspec._language.suite import SUITE
from evalspec._language.vocabulary import default_of

DEFAULT_TIMEOUT_S: float = float(default_of(SUITE, "run", "timeout"))
"""Seconds one model request (or MCP refresh) may take when the suite does not say."""
DEFAULT_RETRIES: int = default_of(SUITE, "run", "retries")
"""Retries of one model request after a 429/5xx/timeout when the suite does not say."""

DEFAULT_API_KEY_ENV: str = default_of(MODEL, "api_key_env")
"""Where a model's (or judge's, or simulator's) key is read from when the suite does not say."""
ANTHROPIC_API_KEY_ENV = "ANTHROPIC_API_KEY"


def default_api_key_env(provider: str) -> str:
    """Where a model's key is read from when the suite does not say: its provider's usual one."""
    return ANTHROPIC_API_KEY_ENV if provider == "anthropic" else DEFAULT_API_KEY_ENV


DEFAULT_SIMILARITY_THRESHOLD: float = default_of(CRITIC, "similarity", "threshold")
"""Similarity at or above which texts count as matching, for critics and final answers."""
