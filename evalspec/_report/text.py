"""Values as one short line of text, the way every report shows them."""

from __future__ import annotations

import json
from typing import Any


def value_text(value: Any, limit: int = 80) -> str:
    """A row value on one line: strings as they are, None as `-`, everything else as JSON."""
    if value is None:
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
