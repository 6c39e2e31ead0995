"""What a run cost, added up as its transcripts come: kept apart from the transcripts, so a
streamed run can forget them."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalspec._transcript import Transcript


@dataclass
class UsageTally:
    """Tokens and seconds per model, and seconds per case, added up as transcripts come."""

    usage: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Model -> (tokens, seconds)."""
    split: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Model -> (prompt tokens, completion tokens), for the cost."""
    latency: dict[tuple[str, str], float] = field(default_factory=dict)
    turns: dict[str, int] = field(default_factory=dict)
    """Model -> model answers over the run, for the suite's turn budget."""
    replayed: set[str] = field(default_factory=set)
    """Models with some answer replayed from a recording (its latency is not this run's)."""
    simulated_user: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    """(Model under test, model playing the user) -> the user's (prompt, completion) tokens:
    what simulating the user cost, apart from the model's own figures."""

    def add(self, t: Transcript) -> None:
        self.turns[t.model] = self.turns.get(t.model, 0) + t.turns
        if t.source != "live":
            self.replayed.add(t.model)
        tok, lat = self.usage.get(t.model, (0, 0.0))
        self.usage[t.model] = (tok + t.usage.total_tokens, lat + t.latency_s)
        p, c = self.split.get(t.model, (0, 0))
        self.split[t.model] = (p + t.usage.prompt_tokens, c + t.usage.completion_tokens)
        key = (t.case, t.model)
        self.latency[key] = self.latency.get(key, 0.0) + t.latency_s
        if t.user_usage is not None:
            played = (t.model, t.user_usage.model)
            p, c = self.simulated_user.get(played, (0, 0))
            u = t.user_usage
            self.simulated_user[played] = (p + u.prompt_tokens, c + u.completion_tokens)
