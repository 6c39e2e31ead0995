"""The state engine's internals, unit-tested on what no suite can reach directly.

`$where` selections and `contains` checks on long lists give the same records as a scan: a
list a call leaves alone is the same object in every later state and conversation, so the
state engine indexes it on its second scan; these tests hold the index to what `values_match`
would pick, record by record, through the kinds JSON equality tells apart. And the engine
fuzzed with any arguments on the calendar's tools: it never raises, is atomic, deterministic
and within its size accounting (`measure`), its fast record matcher agrees with the general
one, and any behaviour compiles or is a `SpecProblem`.

A unit test of `evalspec._tools.state` (and the compiler in `evalspec._suite.state.spec`),
which it imports: the index, the matcher and the size accounting have no public name. What a
user sees of the same engine is tested through `evalspec.api.tool_session`
(tests/test_world_state.py, tests/test_state_ops.py, tests/test_state_compute.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples, fuzz_settings

from evalspec._suite.state.spec import (
    MAX_RENDERED_VALUES,
    MAX_STATE_VALUES,
    SpecProblem,
    compile_behavior,
    measure,
)
from evalspec._tools.simulated import values_match
from evalspec._tools.state import matcher, matching, run_behavior
from evalspec.api import load_suite

CALENDAR = Path(__file__).resolve().parent.parent / "suites" / "calendar.yaml"
FUZZ = fuzz_settings()

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


# ------------------------------------------------------------ the engine fuzzed


def calendar_behaviors() -> dict[str, Any]:
    return {t.name: t.behavior for t in load_suite(CALENDAR).tools}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=30,
)
arguments = st.dictionaries(
    st.sampled_from(["title", "date", "attendee", "id", "name", "note", "v", "../x", ""]),
    json_values,
    max_size=5,
)
FUZZED = compile_behavior(
    {
        "preconditions": [{"value": "${args.id}", "not_equals": None}],
        "effects": [
            {"set": "/by/${args.name}", "value": {"v": "${args.v}", "n": "${count/log}"}},
            {"append": "/log", "value": "${args.note}"},
            {"increment": "/n", "by": "${args.id}"},
            {"remove": "/log", "where": {"bad": "${args.v}"}},
        ],
        "response": {"$select": "/log", "$where": {"k": "${args.v}"}, "$first": False},
    }
)


@pytest.mark.slow
@FUZZ
@given(st.lists(arguments, min_size=1, max_size=6))
def test_fuzz_the_engine_never_raises_is_atomic_deterministic_and_bounded(calls):
    behaviors = [*calendar_behaviors().values(), FUZZED]
    state: Any = {"contacts": [{"name": "Jane Doe"}], "events": [], "by": {}, "log": [], "n": 0}
    size = measure(state, MAX_STATE_VALUES)[0]
    for args in calls:
        for behavior in behaviors:
            out = run_behavior(behavior, state, size, args)
            twice = run_behavior(behavior, state, size, args)
            assert (out.output, out.error, out.state, out.size) == (
                twice.output,
                twice.error,
                twice.state,
                twice.size,
            ) or out.output != out.output  # NaN is never equal to itself
            if out.error is not None:
                assert out.state is state and out.size == size
                assert len(out.error) <= 100_000
            else:
                assert measure(out.state, MAX_STATE_VALUES)[0] == out.size <= MAX_STATE_VALUES
                assert measure(out.output, MAX_RENDERED_VALUES)[0] <= MAX_RENDERED_VALUES + 1
            state, size = out.state, out.size


scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.sampled_from("ab")


@pytest.mark.slow
@FUZZ
@given(
    st.dictionaries(st.sampled_from("abc"), scalars, max_size=3) | json_values,
    st.dictionaries(st.sampled_from("abcd"), scalars | json_values, max_size=4) | json_values,
)
def test_fuzz_the_fast_record_matcher_agrees_with_the_general_one(pattern, record):
    assert matcher(pattern)(record) == values_match(pattern, record)


@pytest.mark.slow
@FUZZ
@given(
    json_values
    | st.dictionaries(st.sampled_from(["preconditions", "effects", "response"]), json_values)
)
def test_fuzz_any_behavior_compiles_or_is_a_spec_problem(raw):
    try:
        behavior = compile_behavior(raw)
    except SpecProblem as exc:
        assert isinstance(exc.where, tuple) and exc.message
        return
    out = run_behavior(behavior, {"a": [1, {"b": 2}]}, 4, {"x": 1})
    assert out.error is None or isinstance(out.error, str)
