"""evalspec's state language against tau-bench's airline domain, whole.

The same calls go (a) through tau-bench's own Python tools and (b) through the same tools
written in YAML (tests/data/tau_airline/tools.yaml, using `let:`, `$calc`, `$if`, `$each`,
`for_each` and `when`) in a suite whose `state:` is a slice of tau-bench's data; the answers and
the worlds after every call are compared. tau-bench's side is recorded in
tests/data/tau_airline/oracle.json by make_oracle.py from a tau-bench checkout (the commit is in
the file). The calls are the gold action sequences of all 50 airline test tasks.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from support import fresh_session
from tau_airline_calls import DATA, NOT_EXPRESSED, WORLD, Action, answer_digest, gold_sequences

from evalspec.api import load_suite
from evalspec.records import Suite, ToolSession

ORACLE: dict[str, Any] = json.loads((DATA / "oracle.json").read_text(encoding="utf-8"))
WORLD_TEXT = json.dumps(WORLD)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    folder = tmp_path_factory.mktemp("tau_airline")
    shutil.copy(DATA / "tools.yaml", folder / "tools.yaml")
    text = (
        "suite: tau-airline\n"
        "models: [gpt-4o-mini]\n"
        f"state: {WORLD_TEXT}\n"
        "tools: [{include: tools.yaml}]\n"
        "cases: [{name: any, user: Hello., expect: {no_tool_calls: true}}]\n"
    )
    (folder / "suite.yaml").write_text(text, encoding="utf-8")
    return load_suite(folder / "suite.yaml")


def test_the_yaml_has_every_tool_but_the_one_it_names(suite: Suite) -> None:
    assert sorted(t.name for t in suite.tools) == sorted(set(ORACLE["tools"]) - set(NOT_EXPRESSED))


def declared_call(conversation: ToolSession, name: str, kwargs: dict[str, Any]) -> tuple[str, Any]:
    result = conversation.call(name, copy.deepcopy(kwargs), json.dumps(kwargs))
    assert result.source not in ("rule", "cache", "error:no_response"), f"{name} has no behavior"
    return ("error", result.error) if result.error is not None else ("ok", result.output)


def compare(suite: Suite, tmp: Path, actions: list[Action], steps: list[Any]) -> str | None:
    """Both sides, call by call; None when every answer and world agree, else the first
    difference."""
    assert len(steps) == len(actions), "oracle.json is not of these calls: remake it"
    data = json.loads(WORLD_TEXT)  # a fresh copy, faster than deepcopy
    conversation = fresh_session(suite)
    for i, ((name, kwargs), (digest, patch)) in enumerate(zip(actions, steps, strict=True)):
        data = jsonpatch.apply_patch(data, patch, in_place=True) if patch else data
        ours = declared_call(conversation, name, kwargs)
        if answer_digest(ours) != digest:
            return f"call {i} {name}: the answers differ; ours: {str(ours)[:300]}"
        if conversation.state != data:
            return f"call {i} {name}: the worlds after it differ"
    return None


@pytest.mark.timeout(600)
def disagreements(suite: Suite, tmp_path: Path, tasks: int) -> dict[str, str]:
    """The first `tasks` gold sequences, each task's first difference from tau-bench."""
    pairs = list(zip(gold_sequences(), ORACLE["gold"], strict=True))[:tasks]
    outcomes = {task: compare(suite, tmp_path, actions, steps) for (task, actions), steps in pairs}
    assert len(outcomes) == tasks
    return {t: why for t, why in outcomes.items() if why is not None}


def test_the_first_gold_action_sequences_reach_tau_benchs_world_after_every_call(
    suite: Suite, tmp_path: Path
) -> None:
    """Ten of the 50, with a booking, a flight change and a cancellation among them: the
    default lane's share of the differential below."""
    assert disagreements(suite, tmp_path, 10) == {}
    calls = {name for _, actions in gold_sequences()[:10] for name, _ in actions}
    assert {"book_reservation", "update_reservation_flights", "cancel_reservation"} <= calls


@pytest.mark.slow  # all 50 on the whole world; ten of them run in the default lane
def test_all_50_gold_action_sequences_reach_tau_benchs_world_after_every_call(
    suite: Suite, tmp_path: Path
) -> None:
    assert disagreements(suite, tmp_path, 50) == {}
    calls = [name for _, actions in gold_sequences() for name, _ in actions]
    changing = {"book_reservation", "update_reservation_flights", "cancel_reservation"}
    assert changing <= set(calls)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_refund_left_positive_is_caught_at_the_first_cancellation(tmp_path: Path) -> None:
    """The differential has teeth: the same tools with cancel_reservation's refund not negated
    disagree with τ-bench at the first gold call that cancels, and only there."""
    text = (DATA / "tools.yaml").read_text(encoding="utf-8")
    assert text.count('amount: {$calc: "-${each/amount}"}') == 1
    (tmp_path / "tools.yaml").write_text(
        text.replace('amount: {$calc: "-${each/amount}"}', 'amount: "${each/amount}"'),
        encoding="utf-8",
    )
    (tmp_path / "suite.yaml").write_text(
        "suite: broken\nmodels: [m]\n"
        f"state: {WORLD_TEXT}\n"
        "tools: [{include: tools.yaml}]\n"
        "cases: [{name: any, user: Hello., expect: {no_tool_calls: true}}]\n",
        encoding="utf-8",
    )
    broken = load_suite(tmp_path / "suite.yaml")
    outcomes = {
        task: compare(broken, tmp_path, actions, steps)
        for (task, actions), steps in zip(gold_sequences(), ORACLE["gold"], strict=True)
    }
    cancelling = {t for t, actions in gold_sequences() if "cancel_reservation" in dict(actions)}
    assert {t for t, why in outcomes.items() if why is not None} == cancelling
    assert all("cancel_reservation: the answers differ" in outcomes[t] for t in cancelling)
