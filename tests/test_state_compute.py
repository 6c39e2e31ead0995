"""Computed values in the state language: `let:`, `$calc`, `$if`, `$each`, `for_each` and
`when`, from what a suite author writes and from what a hostile model or pull request sends.

A model's arguments reach `$calc` (a calculator parses them) and `$each` (a list it sends):
whatever they hold, the call ends as an error observation with the state unchanged, never a
traceback or a hang. A suite that misuses the forms is refused by `validate` at its line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply, text_reply, tool_call_reply
from support import Called, call_tool, in_process, review_offline

from evalspec import api
from evalspec.errors import SpecError

KEY_ENV = "EVALSPEC_TEST_KEY"

BOOKING = {
    "let": {
        "passengers": {"$calc": "len(${args.passengers})"},
        "fares": {
            "$each": "${args.flights}",
            "$do": {"$calc": "${state/fares/${each}} * ${let.passengers}"},
        },
        "total": {"$calc": "sum(${let.fares}) + 50 * ${args.bags}"},
    },
    "preconditions": [
        {
            "for_each": "${args.flights}",
            "checks": [
                {"path": "/fares/${each}", "exists": True, "error": "flight ${each} not found"},
                {"path": "/seats/${each}", "min": "${let.passengers}", "error": "${each} is full"},
            ],
        },
        {"value": "${args.paid}", "equals": "${let.total}", "error": "the total is ${let.total}"},
    ],
    "effects": [
        {"append": "/bookings", "value": {"flights": "${args.flights}", "paid": "${let.total}"}},
        {
            "decrement": "/seats/${each}",
            "for_each": "${args.flights}",
            "by": "${let.passengers}",
        },
        {
            "append": "/log",
            "value": "free bags",
            "when": {"value": "${args.bags}", "equals": 0},
        },
    ],
    "response": {"$if": {"value": "${let.total}", "min": 1000}, "$then": "big", "$else": "ok"},
}
WORLD = {"fares": {"A1": 100, "B2": 250.5}, "seats": {"A1": 2, "B2": 9}, "bookings": [], "log": []}


def behaving(behavior: dict[str, Any]) -> dict[str, Any]:
    """A tool that does what `behavior` says (its arguments are those the behaviour reads)."""
    return {"behavior": behavior}


def run(tool: dict[str, Any], state: Any, arguments: dict[str, Any]) -> Called:
    """`tool` called once by hand on `state`, as a model's call is answered in a run."""
    return call_tool(tool, state, arguments)


def book(**arguments: Any) -> Any:
    return run(behaving(BOOKING), WORLD, arguments)


def test_a_booking_is_priced_from_its_flights_and_changes_each_flights_seats() -> None:
    out = book(flights=["A1", "B2"], passengers=["x", "y"], bags=1, paid=751.0)
    assert out.error is None
    assert out.state["bookings"] == [{"flights": ["A1", "B2"], "paid": 751.0}]
    assert out.state["seats"] == {"A1": 0, "B2": 7}
    assert out.state["log"] == []  # `when` failed: the effect was skipped, no error
    assert out.output == "ok"
    free = book(flights=["B2"], passengers=["x"] * 4, bags=0, paid=1002)
    assert (free.error, free.output, free.state["log"]) == (None, "big", ["free bags"])


def test_items_are_checked_in_order_each_fully_and_the_first_failure_names_its_item() -> None:
    # A1 is full for 3 before C3 is found missing: the first item's checks come first.
    out = book(flights=["A1", "C3"], passengers=["x"] * 3, bags=0, paid=0)
    assert out.error == "A1 is full"
    out = book(flights=["C3", "A1"], passengers=["x"] * 3, bags=0, paid=0)
    assert out.error == "flight C3 not found"
    out = book(flights=["A1"], passengers=["x"], bags=2, paid=150)
    assert out.error == "the total is 200"
    assert out.state == WORLD  # nothing changed


def test_a_let_value_reads_the_state_the_call_found_and_only_when_read(tmp_path: Path) -> None:
    behavior = {
        "let": {"old": "${state/n}"},
        "preconditions": [{"path": "/n", "exists": True, "error": "no n"}],
        "effects": [{"increment": "/n", "by": 5}, {"set": "/was", "value": "${let.old}"}],
        "response": {"$calc": "${state/n} - ${let.old}"},
    }
    out = run(behaving(behavior), {"n": 1}, {})
    assert (out.error, out.output, out.state) == (None, 5, {"n": 6, "was": 1})
    # The let would fail on a state without it, but the precondition speaks first (a case
    # whose state replaces the box holding n with nothing).
    boxed = json.loads(json.dumps(behavior).replace("/n", "/box/n"))
    tool = {"name": "t", "parameters": {"type": "object"}, "behavior": boxed}
    case = {"name": "no n", "state": {"box": None}, "user": "hi", "expect": {"no_tool_calls": True}}
    suite = {"suite": "s", "models": ["m"], "state": {"box": {"n": 1}}, "tools": [tool]}
    path = tmp_path / "s.yaml"
    path.write_text(json.dumps({**suite, "cases": [case]}), encoding="utf-8")
    session = api.tool_session(api.load_suite(path), "no n")
    assert session.call("t", {}).error == "no n"
    assert session.state == {"box": None}


def test_refunds_for_every_payment_append_one_record_per_item_as_the_list_was() -> None:
    behavior = behaving(
        {
            "effects": [
                {
                    "append": "/history",
                    "for_each": "${state/history}",
                    "value": {"id": "${each/id}", "amount": {"$calc": "-${each/amount}"}},
                }
            ]
        }
    )
    history = [{"id": "a", "amount": 10}, {"id": "b", "amount": 2.5}]
    out = run(behavior, {"history": history}, {})
    assert out.state["history"] == [
        *history,
        {"id": "a", "amount": -10},
        {"id": "b", "amount": -2.5},
    ]


CALCULATOR = behaving(
    {"let": {"v": {"$calc": "${args.expression}"}}, "response": {"$calc": "round(${let.v}, 2)"}}
)


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("expression", "answer"),
    [
        ("(3 + 4) * 2 / 3", 4.67),
        ("2 ** 10", 1024),
        ("1 / 0", "division by zero"),
        ("1.5 / 0", "float division by zero"),
        ("9 ** 9 ** 9", "the result has more than 4300 digits"),
        ("10 ** 5000", "the result has more than 4300 digits"),
        ("__import__('os').system('true')", "invalid characters in expression"),
        ("().__class__", "invalid characters in expression"),
        ("1e308 * 10", "invalid characters in expression"),
        ("7 % 2", "invalid characters in expression"),
        ("1 +", "not an arithmetic expression"),
        ("-(" * 5000 + "1" + ")" * 5000, "longer than 2000 characters"),
        ("10.0 ** 400", "the result is not a finite number"),
        ("+".join(["1"] * 150), "more than 200 operations and operands"),
    ],
)
def test_a_calculator_given_any_text_answers_a_number_or_an_error(
    expression: str, answer: Any
) -> None:
    """A calculator's text holds a calculator's keys (digits, + - * / ( ) . and spaces: what
    τ-bench's calculate accepts); it is then parsed as any `$calc`, never run."""
    out = run(CALCULATOR, {}, {"expression": expression})
    if isinstance(answer, str):
        assert out.output is None and out.error is not None and answer in out.error, out.error
    else:
        assert (out.error, out.output) == (None, answer)


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("__import__('os').system('true')", "only len, sum, min, max, abs, round, float, int"),
        ("().__class__", "Attribute is not arithmetic"),
        ("'a' * 3", "'a' is not a number"),
        ("1 if 1 else 2", "IfExp is not arithmetic"),
        ("x + 1", "'x' is not a number or a reference"),
    ],
)
def test_an_expression_outside_the_arithmetic_is_refused_by_its_node(
    expression: str, why: str
) -> None:
    with pytest.raises(SpecError, match=re.escape(why)):  # refused as the suite is read
        run(behaving({"response": {"$calc": expression}}), {}, {})


@pytest.mark.timeout(20)
def test_each_over_a_huge_list_a_model_sends_stops_at_the_rendering_limit() -> None:
    behavior = behaving(
        {"response": {"$each": "${args.items}", "$do": {"n": "${each}", "twice": "${each}"}}}
    )
    out = run(behavior, {}, {"items": list(range(50_000))})
    assert out.error == "the value would hold more than 10000 values"
    listed = behaving(
        {"preconditions": [{"for_each": "${args.items}", "checks": [{"value": 1, "equals": 1}]}]}
    )
    out = run(listed, {}, {"items": "not a list"})
    assert out.error == 'for_each needs a list, not "not a list"'
    nested = behaving({"response": {"$calc": "sum(${args.items})"}})
    out = run(nested, {}, {"items": [1, "2"]})
    assert out.error == "'2' is not a number"


SUITE = """\
suite: calc
models: [m]
state: {n: 1}
tools:
  - name: t
    parameters: {type: object, properties: {v: {type: number}}}
    behavior:
%s
cases:
  - {name: c, user: hi, expect: {tool_calls: [{t: {v: 1}}]}}
"""


@pytest.mark.parametrize(
    ("behavior", "place", "words"),
    [
        ('      response: {$calc: "open(1)"}', "8:18", "only len, sum, min, max"),
        ('      response: {$calc: "${args.v} +* 2"}', "8:18", "not an arithmetic expression"),
        ('      response: "${let.total}"', "8:7", "${let.total} names no let value"),
        (
            '      let: {a: "${let.b}", b: 1}\n      response: "${let.a}"',
            "8:13",
            "${let.b} is read before it is defined",
        ),
        (
            "      preconditions: [{for_each: '${args.v}'}]",
            "8:23",
            "for_each needs checks",
        ),
        ("      response: {$each: [1, 2]}", "8:7", "$each needs $do"),
        (
            "      effects: [{set: /n, value: '${each}'}]",
            "8:17",
            "${each} reads an item, but no $each or for_each gives one here",
        ),
        (
            "      response: {$if: {value: 1, equals: 1}, $then: 1, $otherwise: 2}",
            "8:56",
            "unknown key '$otherwise' in a $if",
        ),
        (
            "      effects: [{set: /n, value: 2, when: [], for_each: []}]",
            "8:37",
            "an empty list of conditions",
        ),
    ],
)
def test_a_misused_form_is_refused_at_its_line_with_the_fix(
    tmp_path: Path, behavior: str, place: str, words: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SUITE % behavior, encoding="utf-8")
    done = in_process("validate", path)
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    text = done.stdout + done.stderr
    assert f"s.yaml:{place}:" in text and words in text, text


@pytest.mark.timeout(120)
def test_a_run_whose_model_sends_a_hostile_expression_reports_it_and_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-calc-0000")

    def answer(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return text_reply("done")
        return tool_call_reply("calculate", {"expression": "9 ** 9 ** 9 ** 9"})

    with FakeOpenAI(answer) as server:
        path = tmp_path / "s.yaml"
        path.write_text(
            "suite: calc\n"
            f"models: [{{name: m, model: fake, base_url: '{server.base_url}', "
            f"api_key_env: {KEY_ENV}}}]\n"
            "run: {retries: 0, timeout: 10, max_turns: 3}\n"
            "state: {}\n"
            "tools:\n"
            "  - name: calculate\n"
            "    parameters: {type: object, properties: {expression: {type: string}}}\n"
            "    behavior: {response: {$calc: '${args.expression}'}}\n"
            "cases: [{name: c, user: hi, expect: {final_answer: {contains: done}, "
            "tool_calls: [{calculate: {}}]}}]\n",
            encoding="utf-8",
        )
        done = in_process("run", path, "--out", tmp_path / "run")
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = (tmp_path / "run" / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    tool = [m["content"] for m in json.loads(line)["messages"] if m["role"] == "tool"]
    assert tool and "more than 4300 digits" in tool[0], tool


# ------------------------------------------------ a pull request that changes a computed fee

BAGS_SUITE = """\
suite: bags
models: [{{name: m, model: fake, base_url: "{url}", api_key_env: {key}}}]
run: {{retries: 0, timeout: 10, max_turns: 4, recordings: bags.recordings.jsonl}}
state: {{res: {{r1: {{bags: 1, paid: []}}, r2: {{bags: 0, paid: []}}}}}}
tools:
  - name: add_bags
    parameters:
      type: object
      properties: {{id: {{type: string}}, bags: {{type: integer}}}}
      required: [id, bags]
    behavior:
      let:
        fee: {{$calc: "50 * max(0, ${{args.bags}} - ${{state/res/${{args.id}}/bags}})"}}
      preconditions:
        - {{path: "/res/${{args.id}}", exists: true, error: no such reservation}}
      effects:
        - {{set: "/res/${{args.id}}/bags", value: "${{args.bags}}"}}
        - append: /res/${{args.id}}/paid
          value: ${{let.fee}}
          when: {{value: "${{let.fee}}", not_equals: 0}}
      response: {{fee: "${{let.fee}}"}}
  - name: look
    parameters: {{type: object, properties: {{id: {{type: string}}}}, required: [id]}}
    behavior:
      response: ${{state/res/${{args.id}}}}
cases:
  - name: three bags
    user: add bags to r1
    expect: {{state: {{/res/r1/paid: [100]}}}}
  - name: no new bag
    user: add bags to r2
    expect: {{state: {{/res/r2/paid: []}}}}
  - name: just look
    user: show r1
    expect: {{tool_calls: [{{look: {{id: r1}}}}]}}
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_review_of_a_changed_fee_flags_exactly_the_conversations_it_charges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pull request raising the fee inside a `$calc`: replayed offline from the recordings,
    only the conversation the fee charged is stale, and its verdict moves; one where the fee
    is 0 (`when` skips the payment) and one that never adds bags are untouched."""
    from support import git

    monkeypatch.setenv(KEY_ENV, "sk-test-bags-0000")
    calls = {
        "add bags to r1": ("add_bags", {"id": "r1", "bags": 3}),
        "add bags to r2": ("add_bags", {"id": "r2", "bags": 0}),
        "show r1": ("look", {"id": "r1"}),
    }

    def answer(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return text_reply("done")
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return tool_call_reply(*calls[user])

    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    with FakeOpenAI(answer) as server:
        suite = repo / "suites" / "bags.yaml"
        suite.write_text(BAGS_SUITE.format(url=server.base_url, key=KEY_ENV), encoding="utf-8")
        done = in_process("run", suite, "--out", tmp_path / "run", "--record", "record")
    assert done.returncode == 0, done.stdout + done.stderr
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    text = suite.read_text(encoding="utf-8")
    suite.write_text(text.replace('$calc: "50 * max', '$calc: "75 * max'), encoding="utf-8")
    git(repo, "commit", "-q", "-am", "bags cost 75")
    reviewed = review_offline(repo, KEY_ENV)
    assert "Traceback" not in reviewed.stderr
    assert reviewed.stdout, reviewed.stderr
    (result,) = json.loads(reviewed.stdout)["suites"]
    stale = {c["case"] for c in result["changes"] if c["stale"]}
    assert stale == {"three bags"}
    moved = next(c for c in result["changes"] if c["case"] == "three bags")
    assert (moved["before"]["status"], moved["after"]["status"]) == ("pass", "fail")
