"""Object graphs evalspec does not own are copied as JSON within a budget: a shared part is
counted each time it is reached, a cycle is refused with where it closes, never a hang.

A unit test of evalspec._util.graph, which it imports: the copy every environment's state and
answers go through (a plugin environment's graphs, end to end, are in
tests/test_object_graphs.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from evalspec._util.graph import GraphTooLarge, to_json


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
