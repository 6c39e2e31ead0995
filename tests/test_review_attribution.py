"""Review says which change moved each verdict, proven by re-scoring, and names every change by
its content.

The pull request below changes a threshold, a critic and an effect at once; three cases move,
each for one of the three reasons. A case that went WARN -> FAIL at the same score was once
blamed on the effect (its row named every change its case could reach); here each row carries
the cause and the counterfactual that proves it (the base suite with that change alone gives the
head's verdict). Edits apply one at a time: a property test rebuilds a changed suite from its
base by applying them all.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples, git

from evalspec import api
from evalspec._compare.attribution import MAX_SINGLE, Budget, attribute
from evalspec._compare.edits import MISSING, Edit, apply, edits
from evalspec._compare.records import Side

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

MISSPELT = """\
  - name: lunch, the attendee misspelt
    user: Book lunch with Jane Doe on 2026-03-05.
    expect:
      tool_calls:
        - create_event: {title: Lunch with Jane Doe, date: "2026-03-05", attendee: Jane Do}
    critics:
      title: {similarity: {threshold: 0.5, metric: tfidf}}

  - name: unknown contact
"""


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


@pytest.fixture
def three_causes(tmp_path: Path) -> Path:
    """The calendar suite (a case scoring 0.750 added, WARN under a fail threshold of 0.7) on
    `main`; the pull request moves the threshold to 0.8, adds a critic to `unknown contact` and
    writes `canceled` for `cancelled` in cancel_event's effect."""
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    shutil.copy(ROOT / "suites" / "calendar.recordings.jsonl", repo / "suites")
    suite = repo / "suites" / "calendar.yaml"
    text = (ROOT / "suites" / "calendar.yaml").read_text(encoding="utf-8")
    text = _edit(text, "  - name: unknown contact\n", MISSPELT)
    text = _edit(text, "  state_weight: 0.5 ", "  fail_threshold: 0.7\n  state_weight: 0.5 ")
    suite.write_text(text, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    text = _edit(text, "fail_threshold: 0.7", "fail_threshold: 0.8")
    text = _edit(text, "          value: cancelled\n", "          value: canceled\n")
    text = _edit(
        text,
        "      unchanged: [/events]\n\n  - name: double booking",
        '      unchanged: [/events]\n    critics:\n      attendee: {regex: "^Robert"}\n\n'
        "  - name: double booking",
    )
    suite.write_text(text, encoding="utf-8")
    return repo


def _review(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "evalspec"), "review", "--base-ref", "main", "--allow-stale", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_each_moved_verdict_is_attributed_to_its_true_cause(three_causes):
    done = _review(three_causes, "--json")
    assert done.returncode == 1, done.stderr  # a passing case now fails: the gate
    changes = {c["case"]: c for s in json.loads(done.stdout)["suites"] for c in s["changes"]}

    threshold = changes["lunch, the attendee misspelt"]
    assert (threshold["before"]["status"], threshold["after"]["status"]) == ("warn", "fail")
    assert threshold["causes"] == [
        "rubric · fail_threshold: 0.7 -> 0.8 (alone: WARN 0.750 -> FAIL 0.750, score unchanged)"
    ]
    effect = changes["cancel by date, any path"]
    [cause] = effect["causes"]
    assert cause.startswith(
        'tool cancel_event · effect 1 (set /events ... /status) · value: "cancelled" -> '
        '"canceled" (alone: PASS 1.000 -> FAIL'
    )
    assert '/events/1/status: "cancelled" -> "canceled"' in cause
    critic = changes["unknown contact"]
    [cause] = critic["causes"]
    assert cause.startswith('critic of attendee added: {"regex": {"pattern": "^Robert"}} (alone')
    # The proof: each change applied alone to the base, and the verdict it gives.
    proof = {c["applied"]: c["verdict"] for c in threshold["counterfactuals"]}
    assert proof["rubric · fail_threshold: 0.7 -> 0.8"] == "FAIL 0.750"
    # Unmoved cases get no cause; and no change is named by position alone.
    assert changes["book lunch with jane"]["causes"] == []
    named = [n for c in changes.values() for n in c["named"]]
    assert not [n for n in named if "effects[" in n or n.endswith(" changed")], named


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_console_and_markdown_show_the_cause_and_its_proof(three_causes, tmp_path):
    comment = tmp_path / "comment.md"
    done = _review(three_causes, "--markdown", str(comment))
    assert "cause: rubric · fail_threshold: 0.7 -> 0.8" in done.stdout.replace("\n", " ")
    markdown = comment.read_text(encoding="utf-8")
    assert "cause: rubric · fail\\_threshold: 0.7 -&gt; 0.8 (alone: WARN 0.750" in markdown
    assert "- with rubric · fail\\_threshold: 0.7 -&gt; 0.8: FAIL 0.750" in markdown


# ---------------------------------------------------------------- attribution's logic


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
