"""Which change moved a verdict: one change alone, an interaction of two, a re-recorded answer,
or past the bound "not computed"; and every edit between two suites, applied to the base one at
a time, rebuilds the head.

A unit test of the comparison's attribution (evalspec._compare.attribution, with the edits of
evalspec._compare.edits it applies and the Side records it compares), which it imports: a fake
scorer decides each verdict, so each rule is shown on its own. What review prints of it, end to
end, is in tests/test_review_attribution.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples

from evalspec import api
from evalspec._compare.attribution import MAX_SINGLE, Budget, attribute
from evalspec._compare.edits import MISSING, Edit, apply, edits
from evalspec._compare.records import Side

ROOT = Path(__file__).resolve().parent.parent


def _side(status: str, score: float) -> Side:
    return Side(status, score, "")  # type: ignore[arg-type]


def _fake_score(rule):
    """A scorer that sees which of the edits below the suite has (keys of a model's params)."""

    def score(suite, _transcripts):
        return rule(set(suite.models[0].params) - {"temperature", "seed"})

    return score


def _keyed(*names: str) -> list[Edit]:
    """Edits that each add a key to the model's params, so they compose like real edits."""
    return [Edit(("models", 0, "params", name), ("change", name), MISSING, True) for name in names]


def _base():
    return api.load_suite(ROOT / "suites" / "calendar.yaml")


def test_an_interaction_of_two_changes_is_named_as_such():
    # The verdict moves only when a and b are both applied.
    rule = _fake_score(lambda on: _side("fail", 0.5) if {"a", "b"} <= on else _side("pass", 1))
    found = attribute(
        _base(),
        "book lunch with jane",
        _side("pass", 1),
        _side("fail", 0.5),
        [],
        _keyed("a", "b", "c"),
        rule,
        Budget(),
        new_evidence=False,
    )
    assert found.causes == (
        "interaction of change · a: (none) -> true and change · b: (none) -> true "
        "(neither alone moves it)",
    )
    assert ("change · a: (none) -> true", "PASS 1.000") in found.counterfactuals


def test_past_the_bound_it_says_so_instead_of_guessing():
    many = _keyed(*[f"e{i}" for i in range(MAX_SINGLE + 1)])
    rule = _fake_score(lambda on: _side("fail", 0.0))
    found = attribute(
        _base(),
        "book lunch with jane",
        _side("pass", 1),
        _side("fail", 0.0),
        [],
        many,
        rule,
        Budget(),
        new_evidence=False,
    )
    assert not found.proven and found.tried == 0
    assert found.causes[0].startswith(f"cause not computed: {MAX_SINGLE + 1} changes")


def test_a_re_recorded_answer_that_alone_explains_is_the_cause():
    rule = _fake_score(lambda on: _side("fail", 0.2))  # the new recording fails whatever
    found = attribute(
        _base(),
        "book lunch with jane",
        _side("pass", 1),
        _side("fail", 0.2),
        [],
        _keyed("a"),
        rule,
        Budget(),
        new_evidence=True,
    )
    assert found.causes == ("re-recorded answer (the base suite scores it FAIL 0.200)",)


# ---------------------------------------------------------------- edits apply one at a time


@settings(max_examples=examples(40), deadline=None)
@given(
    threshold=st.floats(0, 1),
    title=st.text(max_size=20),
    case_index=st.integers(0, 3),
    tool_index=st.integers(0, 2),
    value=st.one_of(st.text(max_size=10), st.integers(), st.none()),
)
def test_applying_every_edit_to_the_base_rebuilds_the_head(
    threshold, title, case_index, tool_index, value
):
    """Whatever differs (a case's rubric, an expected argument, a tool's effect or
    description), the edits name it and applying them all to the base gives the head."""
    base = api.load_suite(ROOT / "suites" / "calendar.yaml")
    case = base.cases[case_index]
    head_case = replace(case, rubric=replace(case.rubric, fail_threshold=threshold))
    if case.expect.tool_calls:
        call = case.expect.tool_calls[0]
        moved = replace(call, args={**call.args, "title": title})
        head_case = replace(
            head_case, expect=replace(case.expect, tool_calls=(moved, *case.expect.tool_calls[1:]))
        )
    tool = base.tools[tool_index]
    head_tool = replace(tool, description=tool.description + "!")
    if tool.behavior is not None and tool.behavior.effects:
        effect = replace(tool.behavior.effects[0], value=value)
        head_tool = replace(
            head_tool,
            behavior=replace(tool.behavior, effects=(effect, *tool.behavior.effects[1:])),
        )
    cases = (*base.cases[:case_index], head_case, *base.cases[case_index + 1 :])
    tools = (*base.tools[:tool_index], head_tool, *base.tools[tool_index + 1 :])
    head = replace(base, cases=cases, tools=tools)
    found = edits(base, head)
    rebuilt = base
    for e in found:
        rebuilt = apply(rebuilt, e)
        assert e.where and ": " in e.text  # named by place and content
    assert rebuilt == head


@pytest.mark.parametrize("edit", ["add", "remove", "reword"])
def test_a_judge_rubrics_criteria_are_edited_by_name_and_stay_a_list(edit):
    """A rubric judge's criteria are a list of mappings: each is named by its name, and
    applying the edits keeps them a list (a tuple there would be another judge's cache key)."""
    base = api.load_suite(ROOT / "suites" / "support_conversation.yaml")
    case = base.cases[0]
    judge = case.expect.final_answer[0]
    criteria = judge.params["rubric"]["criteria"]
    changed = {
        "add": [*criteria, {"name": "brief", "ask": "Is it brief?"}],
        "remove": criteria[1:],
        "reword": [{**criteria[0], "ask": "Done?"}, *criteria[1:]],
    }[edit]
    params = {**judge.params, "rubric": {**judge.params["rubric"], "criteria": changed}}
    head_case = replace(
        case, expect=replace(case.expect, final_answer=(replace(judge, params=params),))
    )
    head = replace(base, cases=(head_case, *base.cases[1:]))
    found = edits(base, head)
    said = {
        "add": "criterion brief added",
        "remove": "criterion resolved removed",
        "reword": "criterion resolved · ask: ",
    }[edit]
    assert [e for e in found if said in e.text], [e.text for e in found]
    rebuilt = base
    for e in found:
        rebuilt = apply(rebuilt, e)
    assert rebuilt == head
    assert isinstance(rebuilt.cases[0].expect.final_answer[0].params["rubric"]["criteria"], list)
