"""`$where` selections and `contains` checks on long lists: the same records as a scan.

A list a call leaves alone is the same object in every later state and conversation, so the
state engine indexes it on its second scan; these tests hold the index to what `values_match`
would pick, record by record, through the kinds JSON equality tells apart.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evalspec._suite.state_spec import compile_behavior
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


@settings(max_examples=150, deadline=None)
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
