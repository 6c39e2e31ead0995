"""Shared test helpers: write suites to temp files, build transcripts tersely."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evalspec._transcript import ToolCall, Transcript


@pytest.fixture
def write_suite(tmp_path: Path):
    """Write YAML text (dedented) to a suite file and return its path."""

    def write(text: str, name: str = "suite.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


def transcript(
    case: str,
    *calls: tuple[str, dict | None],
    model: str = "m",
    trial: int = 0,
    final: str | None = None,
    error: str | None = None,
) -> Transcript:
    """A transcript whose model made `calls` (name, arguments) in order."""
    return Transcript(
        item_id=f"{case}-{model}-{trial}",
        case=case,
        model=model,
        trial=trial,
        tool_calls=tuple(
            ToolCall(name=n, arguments=a, raw_arguments="" if a is not None else "{bad")
            for n, a in calls
        ),
        final_answer=final,
        error=error,
    )


@pytest.fixture
def no_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only evalspec's own critics and checks, whatever plugins are installed (exact messages
    list every known name)."""
    from evalspec._util import registry

    for kind in registry.KINDS:
        registry.builtin_names(kind)  # evalspec's own are registered before the others hide
    builtins_only = {
        kind: {name: e for name, e in entries.items() if e.builtin}
        for kind, entries in registry._REGISTRY.items()
    }
    monkeypatch.setattr(registry, "_entry_points_loaded", True)
    monkeypatch.setattr(registry, "_REGISTRY", builtins_only)
