"""What a run cost, added up as its transcripts come: kept apart from the transcripts, so a
streamed run can forget them."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalspec.transcript import Transcript


@dataclass
class UsageTally:
    """Tokens and seconds per model, and seconds per case, added up as transcripts come."""

    usage: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Model -> (tokens, seconds)."""
    split: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Model -> (prompt tokens, completion tokens), for the cost."""
    latency: dict[tuple[str, str], float] = field(default_factory=dict)

    def add(self, t: Transcript) -> None:
        tok, lat = self.usage.get(t.model, (0, 0.0))
        self.usage[t.model] = (tok + t.usage.total_tokens, lat + t.latency_s)
        p, c = self.split.get(t.model, (0, 0))
        self.split[t.model] = (p + t.usage.prompt_tokens, c + t.usage.completion_tokens)
        key = (t.case, t.model)
        self.latency[key] = self.latency.get(key, 0.0) + t.latency_s
