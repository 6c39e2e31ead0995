"""Keep secrets out of everything evalspec writes or prints."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

MIN_SECRET_LENGTH = 4
"""Shorter values are not treated as secrets: replacing them would garble ordinary text."""


def secrets_from_env(variables: Iterable[str]) -> list[str]:
    """The values of these environment variables, longest first (so no secret is half-replaced)."""
    values = {os.environ.get(name, "").strip() for name in variables}
    return sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret replaced by `***`."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
