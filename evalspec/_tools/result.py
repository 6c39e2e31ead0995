"""What a simulated tool call gives back: the record every tool backend returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolResult:
    """What the simulated tool gave back, and which mechanism produced it."""

    output: Any
    """JSON value given back to the model (None when ``error`` is set)."""
    error: str | None
    """Error observation text."""
    source: str
    """rule, cache, llm, error:unknown_tool, error:schema (also for arguments that are not a JSON
    object), error:no_response, error:simulator (the LLM simulator failed), fault."""
    text: str | None = None
    """The exact text the model reads, when it is not the JSON of `observation()` (a fault's
    cut or empty body, an error with its status)."""
    fault: dict[str, Any] | None = None
    """The fault this answer met (`faults:`), as the transcript records it."""

    def observation(self) -> Any:
        """The value to put in the tool message: the output, or ``{"error": ...}``."""
        return {"error": self.error} if self.error is not None else self.output
