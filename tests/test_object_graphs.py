"""Object graphs evalspec does not own (a Python environment's state and answers) are copied
within a budget: sharing counted each time it is reached, cycles refused, never a hang.

The BFCL environment's graphs are attacked in tests/test_hostile_state.py (where bfcl-eval is
installed); these use a plugin environment of plain Python objects, its answers recorded from a
scripted model and replayed. The copy itself is unit-tested in tests/test_graph_copies.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from evalspec import plugins
from evalspec.api import compile_plan, load_suite, record_answers, run_plan, score
from evalspec.plugins import ToolOutcome
from evalspec.records import RunOptions

ROOT = Path(__file__).resolve().parents[1]


class Doubling:
    """A plugin environment whose state and answers share their parts (each `grow` nests
    the tree twice), or hold themselves (`loop`)."""

    def __init__(self, state: Any, params: dict[str, Any]):
        self.tree: Any = {"n": 1}

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if name == "loop":
            self.tree = [self.tree]
            self.tree.append(self.tree)
            return ToolOutcome("looped")
        self.tree = {"left": self.tree, "right": self.tree}
        return ToolOutcome(self.tree)

    def snapshot(self) -> Any:
        return {"tree": self.tree}


SUITE = """\
suite: graphs
models: [m]
environment: {kind: doubling}
state: {}
tools:
  - {name: grow, parameters: {type: object, properties: {}}}
  - {name: loop, parameters: {type: object, properties: {}}}
cases:
  - name: grow
    user: Grow it.
    expect: {state: {/tree/left/left/n: 1}}
"""


def run_script(tmp_path: Path, calls: list[str]) -> Any:
    sys.path.insert(0, str(ROOT / "examples"))
    from scripted_model import ScriptedProvider

    path = tmp_path / "graphs.yaml"
    path.write_text(SUITE, encoding="utf-8")
    script = {"grow": [{"calls": [[name, {}] for name in calls]}, {"text": "Done."}]}
    plugins.register("environment", "doubling")(Doubling)
    try:
        suite = load_suite(path)
        record_answers(suite, ScriptedProvider(script))
        outcome = run_plan(compile_plan(suite), RunOptions(record="offline"))
        (t,) = outcome.transcripts
        (result,) = score(suite, [t]).results
    finally:
        plugins.unregister("environment", "doubling")
    return t, result


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_plugin_environments_shared_graph_is_the_calls_and_the_items_error(
    tmp_path: Path,
) -> None:
    """Before: each state and answer was deep-copied (sharing kept) and then written out as a
    tree: 24 calls made a transcript line of 2**24 values (1 GB), and the run never ended."""
    t, result = run_script(tmp_path, ["grow"] * 24)
    assert t.tool_calls[0].output == {"left": {"n": 1}, "right": {"n": 1}}
    assert t.tool_calls[-1].error == (
        "the tool environment's answer: it holds more than 100000 values"
    )
    assert t.finish_reason == "state_too_large" and t.state is None
    assert "the final state: it holds more than 100000 values" in (t.error or "")
    assert result.status == "error"


@pytest.mark.timeout(60)
def test_a_plugin_environments_cycle_is_the_items_error(tmp_path: Path) -> None:
    """Before: the state was deep-copied with its cycle, and writing it raised `Circular
    reference detected` out of the run."""
    t, result = run_script(tmp_path, ["grow", "loop"])
    assert t.tool_calls[1].output == "looped"
    assert "the final state: it refers back to itself at /tree/1" in (t.error or "")
    assert result.status == "error"


def test_a_plugin_environments_small_state_is_a_copy_later_calls_leave_alone(
    tmp_path: Path,
) -> None:
    t, result = run_script(tmp_path, ["grow", "grow"])
    assert t.state == {
        "tree": {"left": {"left": {"n": 1}, "right": {"n": 1}}}
        | {"right": {"left": {"n": 1}, "right": {"n": 1}}}
    }
    assert result.status == "pass", result.reason
