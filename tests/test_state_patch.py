"""The JSON Patch (RFC 6902) a transcript keeps of what each user turn changed in the state:
applied with an RFC 6902 library of its own (`jsonpatch`), it makes the state before into the
state after, on random states and on states edited as the state engine edits them, and it
names only what moved. A unit test of `evalspec._tools.state_patch.changes` (and of the JSON
equality `evalspec._tools.state.same` it is checked with), which it imports; a real run's
patches are checked in tests/test_long_conversations.py."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples

from evalspec._tools.state import same
from evalspec._tools.state_patch import changes

LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
KEYS = st.sampled_from(["a", "b", "~", "/", "a/b", "~1", "", "0"])
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=25,
)


def applied(before: Any, patch: list[dict[str, Any]]) -> Any:
    return jsonpatch.apply_patch(copy.deepcopy(before), patch)


@pytest.mark.slow
@settings(max_examples=examples(400), deadline=None)
@given(VALUES, VALUES)
def test_the_patch_between_any_two_states_makes_one_the_other(before: Any, after: Any) -> None:
    patch = changes(before, after)
    assert same(applied(before, patch), after)
    assert (patch == []) == same(before, after)


def _edited(value: Any, draw: Any, depth: int = 0) -> Any:
    """`value` after a few edits made as the state engine makes them: containers on the way
    copied, everything else the very same object."""
    if depth > 3 or not isinstance(value, dict | list) or not value or draw(st.booleans()):
        return draw(VALUES) if draw(st.booleans()) else value
    if isinstance(value, dict):
        out = dict(value)
        key = draw(st.sampled_from(sorted(out)))
        if draw(st.integers(0, 3)) == 0:
            del out[key]
        else:
            out[key] = _edited(out[key], draw, depth + 1)
        return out
    items = list(value)
    i = draw(st.integers(0, len(items) - 1))
    match draw(st.integers(0, 3)):
        case 0:
            del items[i]
        case 1:
            items.insert(i, draw(VALUES))
        case 2:
            items.append(draw(VALUES))
        case _:
            items[i] = _edited(items[i], draw, depth + 1)
    return items


@pytest.mark.slow
@settings(max_examples=examples(400), deadline=None)
@given(VALUES, st.data())
def test_a_state_edited_in_place_of_copies_patches_only_what_moved(
    before: Any, data: st.DataObject
) -> None:
    after = _edited(before, data.draw)
    patch = changes(before, after)
    assert same(applied(before, patch), after)


def test_a_record_changed_in_a_long_list_is_one_replace_not_the_list() -> None:
    records = [{"id": i, "total": 1} for i in range(1000)]
    moved = [*records[:500], {**records[500], "total": 2}, *records[501:]]
    assert changes({"records": records}, {"records": moved}) == [
        {"op": "replace", "path": "/records/500/total", "value": 2}
    ]
    dropped = records[:10] + records[11:]
    assert changes(records, dropped) == [{"op": "remove", "path": "/10"}]
    assert changes(records, [*records, {"id": 1000}]) == [
        {"op": "add", "path": "/1000", "value": {"id": 1000}}
    ]


def test_true_is_not_1_and_1_is_1_point_0() -> None:
    assert changes({"x": 1}, {"x": True}) == [{"op": "replace", "path": "/x", "value": True}]
    assert changes({"x": 1}, {"x": 1.0}) == []
