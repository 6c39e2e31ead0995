"""`evalspec validate` warns on the two traps a newcomer fell into, with the place and the fix.

1. A "should refuse" case that checks the final answer and lists no tool call fails a model that
   tries the tool, is refused, and then answers rightly. The warning is tied to the scorer: for
   each way of writing such a case, validate warns exactly when the scorer fails that model.
2. A stateful tool whose response reads again a count or a value that an effect read before an
   effect changed it (the id of the record just added comes out one more). The idiom the
   warning gives (keep the value in the state first, read it in both places) gives equal ids.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import call_tool, in_process

from evalspec.api import check_suite, load_suite, score, tool_session
from evalspec.errors import Problem
from evalspec.records import ToolCall, Transcript, Warnings

SHOP = """\
suite: shop
models: [m]
state: {orders: [{id: A1, status: placed}]}
tools:
  - name: cancel
    description: Cancel an order.
    parameters: {type: object, properties: {id: {type: string}}, required: [id]}
    behavior:
      preconditions:
        - path: /orders
          contains: {id: "${args.id}", status: placed}
          error: order ${args.id} cannot be cancelled
      effects:
        - {set: /orders, where: {id: "${args.id}"}, at: /status, value: cancelled}
cases:
  - name: refuse
    user: Cancel order Z9.
    expect:
"""

ANSWER = "      final_answer: {contains: [Z9]}\n"
BOTH = "    rubric: {fail_on_tool_call_quantity: false, extra_calls: allow}\n"
WAYS = {
    "as written": ANSWER,
    "min_calls 0": ANSWER + "      min_calls: 0\n",
    "min_calls 1": ANSWER + "      min_calls: 1\n",
    "extra calls allowed only": ANSWER + "    rubric: {extra_calls: allow}\n",
    "quantity rule off only": ANSWER + "    rubric: {fail_on_tool_call_quantity: false}\n",
    "quantity rule off, answer weighs 4": "      final_answer: {contains: [Z9], weight: 4}\n"
    "    rubric: {fail_on_tool_call_quantity: false}\n",
    "a state check beside the answer": ANSWER + "      unchanged: [/orders]\n",
    "both rules relaxed": ANSWER + BOTH,
    "both rules relaxed, nothing changed": ANSWER + "      unchanged: [/orders]\n" + BOTH,
    "the call listed": "      tool_calls: [{cancel: {id: Z9}}]\n" + ANSWER,
}
"""Ways to write the case: the scorer decides which pass a model that tried and was refused."""

TRIED = Transcript(
    item_id="tried",
    case="refuse",
    model="m",
    tool_calls=(
        ToolCall(
            "cancel", {"id": "Z9"}, '{"id": "Z9"}', "c1", error="order Z9 cannot be cancelled"
        ),
    ),
    final_answer="I could not cancel Z9: there is no such order.",
)
DIRECT = Transcript(item_id="direct", case="refuse", model="m", final_answer="No order Z9.")
WRONG = Transcript(
    item_id="wrong",
    case="refuse",
    model="m",
    tool_calls=(ToolCall("cancel", {"id": "A1"}, '{"id": "A1"}', "c1", output="ok"),),
    final_answer="Z9 must be A1: I cancelled A1.",
)


def _warnings(path: Path) -> list[Problem]:
    found = Warnings()
    check_suite(path, found)
    return list(found)


@pytest.mark.parametrize("way", WAYS, ids=list(WAYS))
def test_validate_warns_exactly_when_the_scorer_fails_a_model_that_tried_first(
    way: str, tmp_path: Path
) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(SHOP + WAYS[way], encoding="utf-8")
    (tried,) = score(load_suite(path), [TRIED]).results
    warned = _warnings(path)
    assert bool(warned) == (tried.status == "fail"), (way, tried.reason, warned)
    for w in warned:
        at = _line_of(path.read_text(encoding="utf-8"), "final_answer")
        assert (w.line, w.path) == (at, "cases[0].expect")  # at `final_answer:`
        assert "fail_on_tool_call_quantity: false, extra_calls: allow" in w.hint


def test_the_idiom_passes_a_model_that_tried_or_answered_directly_and_fails_one_that_acted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(SHOP + WAYS["both rules relaxed, nothing changed"], encoding="utf-8")
    results = score(load_suite(path), [TRIED, DIRECT, WRONG]).results
    assert [r.status for r in results] == ["pass", "pass", "fail"]
    assert "/orders" in results[2].reason  # the order it cancelled is what fails it


def test_no_tool_calls_fails_a_model_that_tried_and_is_not_a_trap(tmp_path: Path) -> None:
    """`no_tool_calls: true` says the model must not call anything: an explicit choice."""
    path = tmp_path / "shop.yaml"
    path.write_text(SHOP + ANSWER + "      no_tool_calls: true\n", encoding="utf-8")
    (tried,) = score(load_suite(path), [TRIED]).results
    assert tried.status == "fail" and _warnings(path) == []


def test_the_warning_is_printed_with_its_place_and_fix_and_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(SHOP + ANSWER, encoding="utf-8")
    done = in_process("validate", path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1 suite valid (1 case); 1 warning"
    (line,) = done.stderr.splitlines()
    at = _line_of(SHOP + ANSWER, "final_answer")
    assert line.startswith(f"{path}:{at}:7: warning: cases[0].expect: this expectation checks ")
    assert "expected 0 calls, the model made 1 (rubric.fail_on_tool_call_quantity)" in line
    assert "add `no_tool_calls: true`" in line and "list that call under `tool_calls`" in line


def _line_of(text: str, needle: str, after: str = "") -> int:
    """The line (from 1) of the first `needle` after the first `after`."""
    start = text.index(after) if after else 0
    return text[: text.index(needle, start)].count("\n") + 1


def test_a_turn_and_a_matrix_are_warned_once_at_their_place(tmp_path: Path) -> None:
    text = SHOP.replace(
        "  - name: refuse\n    user: Cancel order Z9.\n    expect:\n",
        "  - name: talk\n"
        "    turns:\n"
        "      - user: Hi\n"
        "      - user: Cancel order Z9.\n"
        "        expect:\n"
        "          final_answer: {contains: [Z9]}\n"
        "  - name: refuse {{ n }}\n"
        "    matrix: {n: [Z1, Z2, Z3]}\n"
        "    user: Cancel order {{ n }}.\n"
        "    expect:\n"
        "      final_answer: {contains: ['{{ n }}']}\n",
    )
    path = tmp_path / "shop.yaml"
    path.write_text(text, encoding="utf-8")
    done = in_process("validate", path)
    assert done.returncode == 0, done.stderr
    places = [
        re.match(r".*?:(\d+):\d+: warning: (.+?)\.expect:", line)
        for line in done.stderr.splitlines()
    ]
    assert [(int(m.group(1)), m.group(2)) for m in places if m] == [
        (_line_of(text, "final_answer", "name: talk"), "cases[0].turns[1]"),
        (_line_of(text, "final_answer", "name: refuse"), "cases[1] (matrix row 1)"),
    ]
    assert done.stdout.strip() == "1 suite valid (4 cases); 2 warnings"


def test_the_calendar_example_has_no_trap() -> None:
    """suites/calendar.yaml's double-booking case used to fail a model that looked the day up
    before answering (0.75 < 0.8); it allows that call now, and still fails the recorded model
    that cancelled the dentist."""
    root = Path(__file__).resolve().parents[1]
    assert _warnings(root / "suites" / "calendar.yaml") == []
    looked = Transcript(
        item_id="looked",
        case="double booking",
        model="gpt-4o-mini",
        tool_calls=(ToolCall("list_events", {"date": "2026-03-10"}, "{}", "c1"),),
        final_answer="You already have the dentist on 2026-03-10. Another day?",
    )
    (result,) = score(load_suite(root / "suites" / "calendar.yaml"), [looked]).results
    assert result.status == "pass", result.reason


# ---------------------------------------------------------------------- ids read twice

NOTES = """\
suite: notes
models: [m]
state: {notes: []}
tools:
  - name: add_note
    description: Add a note.
    parameters: {type: object, properties: {text: {type: string}}, required: [text]}
    behavior:
BEHAVIOR
cases:
  - name: add
    user: Note milk.
    expect: {tool_calls: [{add_note: {text: milk}}]}
"""

TRAP = """\
      effects:
        - append: /notes
          value: {id: "${count/notes}", text: "${args.text}"}
      response: {id: "${count/notes}", saved: true}
"""
KEPT_FIRST = """\
      effects:
        - set: /last_id
          value: ${count/notes}
        - append: /notes
          value: {id: "${state/last_id}", text: "${args.text}"}
"""
IDIOM = KEPT_FIRST + '      response: {id: "${state/last_id}", saved: true}\n'
READ_BACK = (
    KEPT_FIRST
    + '      response: {$select: /notes, $where: {id: "${state/last_id}"}, $first: true}\n'
)


def _notes(tmp_path: Path, behavior: str) -> Path:
    path = tmp_path / "notes.yaml"
    path.write_text(NOTES.replace("BEHAVIOR\n", behavior), encoding="utf-8")
    return path


def test_an_id_read_again_in_the_response_is_warned_at_the_response(tmp_path: Path) -> None:
    done = in_process("validate", _notes(tmp_path, TRAP))
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{tmp_path / 'notes.yaml'}:12:22: warning: ")
    assert "tools[0].behavior.response.id: the response reads ${count/notes} after the " in line
    assert "effects[0] read it before it appends to /notes" in line
    assert '`- {set: /last_id, value: "${count/notes}"}`' in line


@pytest.mark.parametrize(
    "behavior",
    [
        IDIOM,
        READ_BACK,
        # the new size, read only after the change: meant, not a trap
        "      effects:\n        - append: /notes\n          value: {text: x}\n"
        '      response: {notes: "${count/notes}"}\n',
        # read before a change elsewhere: the same in both places
        "      effects:\n        - append: /notes\n"
        '          value: {id: "${count/notes}", of: "${count/lists}"}\n'
        '      response: {lists: "${count/lists}"}\n',
    ],
    ids=["the idiom", "read back", "new size", "unchanged elsewhere"],
)
def test_a_value_read_the_same_in_both_places_is_not_warned(behavior: str, tmp_path: Path) -> None:
    path = _notes(tmp_path, behavior)
    path.write_text(path.read_text().replace("{notes: []}", "{notes: [], lists: [a]}"))
    assert _warnings(path) == []


def test_a_later_effect_that_changes_what_was_read_is_warned(tmp_path: Path) -> None:
    behavior = (
        "      effects:\n"
        "        - set: /last_id\n          value: ${count/notes}\n"
        '        - append: /notes\n          value: {id: "${state/last_id}"}\n'
        "        - increment: /last_id\n"
        '      response: {id: "${state/last_id}"}\n'
    )
    (warning,) = _warnings(_notes(tmp_path, behavior))
    assert "effects[1] read it and effects[2] increments /last_id" in warning.message


@pytest.mark.parametrize("behavior", [IDIOM, READ_BACK], ids=["the idiom", "read back"])
def test_the_idiom_answers_the_id_of_the_record_it_added(behavior: str, tmp_path: Path) -> None:
    tools = tool_session(load_suite(_notes(tmp_path, behavior)))
    for n, text in enumerate(["milk", "eggs", "bread"]):
        out = tools.call("add_note", {"text": text})
        assert out.error is None
        record = tools.state["notes"][-1]
        assert record == {"id": n, "text": text}
        assert out.output["id"] == record["id"]


def test_the_trap_answers_the_next_id() -> None:
    """What the warning is about, at run time."""
    behavior = {
        "effects": [{"append": "/notes", "value": {"id": "${count/notes}"}}],
        "response": {"id": "${count/notes}"},
    }
    out = call_tool({"behavior": behavior}, {"notes": []}, {})
    assert out.state["notes"][0]["id"] == 0 and out.output["id"] == 1


def test_warnings_of_a_streamed_suite_are_given_once(tmp_path: Path) -> None:
    """A suite large enough to be read a case at a time warns as a small one does; a stream
    that gives up (a problem found) and reads the document again does not warn twice."""
    many = "".join(
        f"  - name: case {i}\n    user: Note {i}.\n"
        f"    expect: {{tool_calls: [{{add_note: {{text: '{i}'}}}}]}}\n"
        for i in range(4000)
    )
    refuse = (
        "  - name: refuse\n    user: Delete it.\n    expect: {final_answer: {contains: [sorry]}}\n"
    )
    path = _notes(tmp_path, TRAP)
    text = path.read_text(encoding="utf-8") + many + refuse
    path.write_text(text, encoding="utf-8")
    assert len(text) > 256 * 1024
    assert sorted(w.path for w in _warnings(path)) == [
        "cases[4001].expect",
        "tools[0].behavior.response.id",
    ]
    path.write_text(text + "  - name: broken\n    user: x\n", encoding="utf-8")
    found = Warnings()
    with pytest.raises(Exception, match="says nothing about what a good model does"):
        check_suite(path, found)
    assert len({(w.line, w.path) for w in found}) == len(found)


MAX_WARNINGS = 200
"""The warnings validate shows; past them it counts (docs/reference/commands.md)."""


def test_a_suite_full_of_traps_keeps_a_bounded_number_of_warnings(tmp_path: Path) -> None:
    """Each of 5,000 cases has the trap: the first warnings are kept and shown, the rest are
    counted, so validating stays in the memory of a few hundred cases."""
    path = tmp_path / "shop.yaml"
    many = "".join(
        f"  - name: refuse {i}\n    user: Cancel order Z{i}.\n"
        f"    expect: {{final_answer: {{contains: [Z{i}]}}}}\n"
        for i in range(5000)
    )
    path.write_text(SHOP.split("cases:\n")[0] + "cases:\n" + many, encoding="utf-8")
    found = Warnings()
    assert check_suite(path, found) == 5000
    assert len(found) == MAX_WARNINGS and found.omitted == 5000 - MAX_WARNINGS
    done = in_process("validate", path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == MAX_WARNINGS + 1
    assert lines[-1] == f"... and {5000 - MAX_WARNINGS} more warnings, not shown"
    assert done.stdout.strip() == "1 suite valid (5000 cases); 5000 warnings"
