"""`expect.min_calls` (the model must act) and `contains` counting repeated pieces.

Scored through `evalspec score` on transcripts written as a run or an importer writes them.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import msgspec
import pytest
from support import evalspec_cli

from evalspec import api, plugins
from evalspec.api import write_transcripts
from evalspec.errors import SpecError
from evalspec.records import ToolCall, Transcript, UserTurn

SUITE = """\
suite: acting
models: [m]
state: {total: 0}
tools:
  - name: add
    description: Add a number to the running total.
    parameters:
      type: object
      properties: {a: {type: integer}}
      required: [a]
    behavior:
      effects:
        - increment: /total
          by: ${args.a}
      response: {total: "${state/total}"}
cases:
  - name: two adds
    user: add 1, then add 2
    expect: {min_calls: 2, state: {/total: 3}}
  - name: a conversation
    turn_rule: all_or_nothing
    turns:
      - user: add 1
        expect: {state: {/total: 1}}
      - user: add 2
        expect: {min_calls: 1, state: {/total: 3}}
"""


def _call(a: int, user_turn: int | None = None) -> ToolCall:
    return ToolCall("add", {"a": a}, json.dumps({"a": a}), f"c{a}", user_turn=user_turn)


def _single(*amounts: int) -> Transcript:
    calls = tuple(_call(a) for a in amounts)
    return Transcript(item_id=f"two:{amounts}", case="two adds", model="m", tool_calls=calls)


def _conversation(turns: list[list[int]]) -> Transcript:
    """As an importer writes it (no content id): the case's user turns, each call with the
    output the tool gave."""
    calls, total = [], 0
    for k, amounts in enumerate(turns):
        for a in amounts:
            total += a
            calls.append(msgspec.structs.replace(_call(a, k), output={"total": total}))
    said = ["add 1", "add 2"]
    return Transcript(
        item_id=f"conv:{turns}",
        case="a conversation",
        model="m",
        tool_calls=tuple(calls),
        source="import:example",
        user_turns=tuple(UserTurn(said[k], final_answer="ok") for k in range(len(turns))),
    )


@pytest.fixture
def suite_path(tmp_path: Path) -> Path:
    path = tmp_path / "acting.yaml"
    path.write_text(SUITE, encoding="utf-8")
    return path


def test_fewer_calls_than_min_calls_fail_outright_whatever_the_state(suite_path: Path) -> None:
    suite = api.load_suite(suite_path)
    # One call of 3 reaches the expected state, but min_calls asks for two calls.
    one, two = api.score(suite, [_single(3), _single(1, 2)]).results
    assert one.status == "fail"
    assert "expected at least 2 tool calls, the model made 1 (add)" in one.reason
    row = next(r for r in one.rows if r.field == "min_calls")
    assert (row.expected, row.actual, row.match) == (2, 1, False)
    assert two.status == "pass", two.reason


def test_a_turn_whose_work_an_earlier_turn_did_fails_on_min_calls(suite_path: Path) -> None:
    suite = api.load_suite(suite_path)
    early, right = api.score(
        suite, [_conversation([[1, 2], []]), _conversation([[1], [2]])]
    ).results
    assert right.status == "pass", right.reason
    # Turn 2's state is there already (turn 1 made both calls); the turn made no call.
    assert early.status == "fail"
    assert [e["status"] for e in early.details["turns"]] == ["fail", "fail"]
    assert "turn 2 failed: expected at least 1 tool call, the model made 0" in early.reason
    # Without min_calls, the state alone accepts the silent turn.
    relaxed = suite_path.read_text(encoding="utf-8").replace("min_calls: 1, ", "")
    suite_path.write_text(relaxed, encoding="utf-8")
    (again,) = api.score(api.load_suite(suite_path), [_conversation([[2, 1], []])]).results
    assert again.details["turns"][1]["status"] == "pass"


def test_the_failing_row_shows_in_the_score_report(suite_path: Path, tmp_path: Path) -> None:
    transcripts = tmp_path / "t.jsonl"
    write_transcripts(transcripts, [_conversation([[1], []])])
    done = evalspec_cli(
        ["score", str(suite_path), "-t", str(transcripts), "--case", "a conversation"]
    )
    assert done.exit_code == 1, done.output
    shown = " ".join(done.output.replace("│", " ").split())
    assert (
        "turn 2 FAIL 0.000 user said: add 2 model answered: ok expected: at least 1 tool call; "
        "state /total 3 why: expected at least 1 tool call, the model made 0" in shown
    )


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ("{min_calls: 1, no_tool_calls: true}", "no_tool_calls is true but min_calls"),
        ("{min_calls: -1}", "min_calls"),
        ("{min_calls: many}", "min_calls"),
    ],
)
def test_contradictory_or_malformed_min_calls_is_a_placed_problem(
    tmp_path: Path, expect: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(SUITE.replace("{min_calls: 2, state: {/total: 3}}", expect), encoding="utf-8")
    with pytest.raises(SpecError) as err:
        api.load_suite(path)
    text = str(err.value)
    assert message in text
    assert "bad.yaml:" in text


def test_a_piece_listed_twice_must_be_found_twice() -> None:
    entry = plugins.find("critic", "contains")
    assert entry is not None
    critic = entry.impl.from_params({})
    outputs = ["done", "done", "other"]
    assert critic.evaluate(["done", "done"], outputs, present=True).match
    once = critic.evaluate(["done", "done"], ["done", "other"], present=True)
    assert not once.match
    assert once.score == pytest.approx(0.5)
    assert critic.evaluate(["do", "do"], "do-do", present=True).match
    assert not critic.evaluate(["dodo", "dodo"], "dododo", present=True).match  # no overlap


def test_all_or_nothing_fails_a_conversation_cut_short_before_an_unjudged_turn(
    suite_path: Path,
) -> None:
    text = suite_path.read_text(encoding="utf-8").replace(
        "        expect: {min_calls: 1, state: {/total: 3}}\n",
        "        expect: {min_calls: 1, state: {/total: 3}}\n      - user: thanks\n",
    )
    suite_path.write_text(text, encoding="utf-8")
    suite = api.load_suite(suite_path)
    whole = msgspec.structs.replace(
        _conversation([[1], [2]]),
        user_turns=(*_conversation([[1], [2]]).user_turns, UserTurn("thanks")),
    )
    cut, done = api.score(suite, [_conversation([[1], [2]]), whole]).results
    assert done.status == "pass", done.reason
    assert cut.status == "fail"
    assert "the conversation ended after turn 2 of 3" in cut.reason
    partial = text.replace("turn_rule: all_or_nothing", "turn_rule: partial")
    suite_path.write_text(partial, encoding="utf-8")
    (again,) = api.score(api.load_suite(suite_path), [_conversation([[1], [2]])]).results
    assert again.status == "pass"  # the mean of the judged turns, both reached


def test_an_expect_of_calls_alone_loads_as_one_writing_every_default(tmp_path: Path) -> None:
    """`expect: {tool_calls: [...]}` (most cases) is built by a shorter path; its expectation
    is the one the same calls get with every other key of `expect` written at its default."""
    defaults = "ordered: false, no_tool_calls: false, min_calls: 0, no_duplicates: false"
    path = tmp_path / "suite.yaml"
    path.write_text(
        "suite: defaults\nmodels: [m]\n"
        "tools: [{name: add, description: Add., parameters: {type: object, "
        "properties: {a: {type: integer}}}}]\ncases:\n"
        "  - {name: bare, user: add 1, tools: [add], expect: {tool_calls: [{add: {a: 1}}]}}\n"
        "  - {name: full, user: add 1, tools: [add], expect: {tool_calls: [{add: {a: 1}}], "
        f"{defaults}}}}}\n"
        "  - {name: none, user: hi, expect: {tool_calls: []}}\n"
        "  - {name: none_full, user: hi, expect: {tool_calls: [], " + defaults + "}}\n",
        encoding="utf-8",
    )
    bare, full, none, none_full = api.load_suite(path).cases
    assert bare.expect.tool_calls[0].args == {"a": 1}
    drop_locs = [dataclasses.replace(c, loc=None) for c in full.expect.tool_calls]
    assert [dataclasses.replace(c, loc=None) for c in bare.expect.tool_calls] == drop_locs
    assert dataclasses.replace(bare.expect, tool_calls=()) == dataclasses.replace(
        full.expect, tool_calls=()
    )
    assert none.expect == none_full.expect
