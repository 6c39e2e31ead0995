"""`$where` selections and `contains` checks on long lists: the same records as a scan.

A list a call leaves alone is the same object in every later state and conversation, so the
state engine indexes it on its second scan; these tests hold the index to what `values_match`
would pick, record by record, through the kinds JSON equality tells apart.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples

from evalspec._suite.state.spec import compile_behavior
from evalspec._tools.simulated import values_match
from evalspec._tools.state import matching, run_behavior

SCALARS = st.one_of(
    st.sampled_from([0, 1, 1.0, 2, True, False, None, "1", "a", "", 1.5]),
    st.floats(allow_nan=True, allow_infinity=False, width=16),
)
RECORDS = st.lists(
    st.one_of(
        st.dictionaries(st.sampled_from(["id", "kind"]), SCALARS, max_size=2),
        st.dictionaries(st.sampled_from(["id"]), st.lists(SCALARS, max_size=2), max_size=1),
        SCALARS,
    ),
    min_size=16,
    max_size=40,
)
PATTERNS = st.dictionaries(st.sampled_from(["id", "kind"]), SCALARS, min_size=1, max_size=2)


@pytest.mark.slow
@settings(max_examples=examples(150), deadline=None)
@given(RECORDS, st.lists(PATTERNS, min_size=1, max_size=4))
def test_an_indexed_list_selects_what_a_scan_selects(records: list[Any], patterns: list[Any]):
    for _ in range(3):  # the first scan is linear, later ones use the index
        for pattern in patterns:
            want = [r for r in records if values_match(pattern, r)]
            assert matching(records, pattern) == want
            assert matching(records, pattern, first=True) == want[:1]


def test_true_is_not_one_and_a_text_is_not_a_number_in_an_indexed_list():
    records = [{"id": i} for i in range(20)] + [{"id": True}, {"id": "1"}, {"id": 1.0}]
    for _ in range(3):
        assert matching(records, {"id": 1}) == [{"id": 1}, {"id": 1.0}]
        assert matching(records, {"id": True}) == [{"id": True}]
        assert matching(records, {"id": "1"}) == [{"id": "1"}]
        assert matching(records, {"id": float("nan")}) == []


def test_a_selection_after_an_append_sees_the_new_record():
    behavior = compile_behavior(
        {
            "effects": [{"append": "/records", "value": {"id": "${args.id}"}}],
            "response": {"$select": "/records", "$where": {"id": "${args.id}"}},
        }
    )
    state: Any = {"records": [{"id": i} for i in range(50)]}
    for new in (100, 101, 100):
        outcome = run_behavior(behavior, state, 51, {"id": new})
        assert outcome.error is None
        assert outcome.output == [r for r in outcome.state["records"] if r["id"] == new]
        state = outcome.state
    assert len(state["records"]) == 53


HASH_MODULUS = 2**61 - 1
"""Python hashes a whole number n as n mod this: every multiple of it hashes as 0."""


def five_selections(ids: list[Any]) -> float:
    """Seconds (the best of three) for five `$where` calls on records with these ids."""
    import time

    behavior = compile_behavior(
        {"response": {"$select": "/records", "$where": {"id": "${args.id}"}}}
    )
    best = float("inf")
    for _ in range(3):
        state = {"records": [{"id": i} for i in ids]}  # a new list: indexed afresh
        began = time.perf_counter()
        for j in range(5):
            wanted = ids[j * len(ids) // 5]
            outcome = run_behavior(behavior, state, len(ids) + 2, {"id": wanted})
            assert outcome.output == [{"id": wanted}]
        best = min(best, time.perf_counter() - began)
    return best


def test_ids_that_collide_in_pythons_hash_are_selected_as_fast_as_others():
    """Before: 5,000 records whose ids are multiples of 2**61-1 made the index quadratic (over
    50x the time of ids 1..5,000; 20,000 records took a run 25x longer)."""
    n = 5_000
    colliding = five_selections([k * HASH_MODULUS for k in range(1, n + 1)])
    control = five_selections(list(range(1, n + 1)))
    assert colliding < 5 * control + 0.01, (colliding, control)


def test_numbers_equal_in_python_share_a_key_and_true_and_text_stay_apart():
    big = HASH_MODULUS * 3
    records = [{"id": i} for i in range(20)]
    records += [{"id": big}, {"id": float(2**70)}, {"id": -0.0}, {"id": True}, {"id": "0"}]
    for _ in range(3):
        assert matching(records, {"id": big}) == [{"id": big}]
        assert matching(records, {"id": 2**70}) == [{"id": float(2**70)}]
        assert matching(records, {"id": 0.0}) == [{"id": 0}, {"id": -0.0}]
        assert matching(records, {"id": 1}) == [{"id": 1}]
        assert matching(records, {"id": 2.5}) == []
