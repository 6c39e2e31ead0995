"""Object graphs evalspec does not own (a Python environment's state and answers) are copied
within a budget: sharing counted each time it is reached, cycles refused, never a hang.

The BFCL environment's graphs are attacked in tests/test_hostile_state.py (where bfcl-eval is
installed); these use plain Python objects and a plugin environment.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from evalspec import plugins
from evalspec._runner import run_plan_async
from evalspec._runner.execute import STATE_TOO_LARGE
from evalspec._scoring.scorer import Scorer
from evalspec._util.graph import GraphTooLarge, to_json
from evalspec.api import compile_plan, load_suite
from evalspec.plugins import ToolOutcome
from evalspec.records import RunOptions

ROOT = Path(__file__).resolve().parents[1]


def doubled(levels: int) -> list[Any]:
    """A list whose tree has 2**levels leaves, held in `levels` lists (each shared twice)."""
    tree: list[Any] = ["leaf"]
    for _ in range(levels):
        tree = [tree, tree]
    return tree


class Node:
    def __init__(self, name: str, parent: Node | None = None):
        self.name = name
        self.parent = parent
        self.contents: dict[str, Any] = {}


@pytest.mark.timeout(10)
def test_a_shared_part_is_counted_each_time_it_is_reached() -> None:
    assert to_json(doubled(3)) == [[[["leaf"]] * 2] * 2] * 2  # the tree, as JSON writes it
    with pytest.raises(GraphTooLarge, match="more than 100000 values"):
        to_json(doubled(60))  # 2**60 leaves in 61 lists: refused at the budget
    text = "x" * 1000
    with pytest.raises(GraphTooLarge, match="more than 1000000 characters"):
        to_json([text] * 2000, max_chars=1_000_000)  # one string, reached 2,000 times


@pytest.mark.timeout(10)
@pytest.mark.parametrize("kind", ["list", "dict", "object"])
def test_a_cycle_is_refused_with_where_it_closes(kind: str) -> None:
    value: Any
    if kind == "list":
        value = [1]
        value.append([value])
    elif kind == "dict":
        value = {"a": {}}
        value["a"]["b"] = value
    else:  # an object whose contents hold itself (BFCL's `cp d d`)
        value = Node("d")
        value.contents["d"] = value
    with pytest.raises(GraphTooLarge, match="refers back to itself at /"):
        to_json(value, objects=True)


def test_an_objects_link_back_into_the_copy_is_left_out() -> None:
    root = Node("/")
    child = Node("c", root)
    root.contents["c"] = child
    moved = Node("m", Node("stale"))  # a stale parent whose contents are the copy's own
    moved.parent.contents = root.contents  # type: ignore[union-attr]
    child.contents["m"] = moved
    assert to_json(root, objects=True) == {
        "$class": "Node",
        "name": "/",
        "parent": None,
        "contents": {
            "c": {
                "$class": "Node",
                "name": "c",
                "contents": {"m": {"$class": "Node", "name": "m", "contents": {}}},
            }
        },
    }


def test_keys_sets_tuples_and_objects_are_written_as_json_writes_them() -> None:
    value = {1: (1, 2), None: {3, 2}, 1.5: True, "s": Node("x")}
    assert to_json(value) == {"1": [1, 2], "null": [2, 3], "1.5": True, "s": str(value["s"])}


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
        outcome = asyncio.run(
            run_plan_async(
                compile_plan(suite),
                RunOptions(record="offline"),
                providers={"m": ScriptedProvider(script)},
            )
        )
        (t,) = outcome.transcripts
        (result,) = Scorer(suite).score_all([t])
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
    assert t.finish_reason == STATE_TOO_LARGE and t.state is None
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
