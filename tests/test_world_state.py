"""World state: tools with behavior, expect.state, tool environments, replay and review.

The calendar suite (suites/calendar.yaml and its example recordings) is the fixture of most
tests: what a user sees from `evalspec run`, `score` and `review` on it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import call_tool, evalspec_cli, git, tools_on

from evalspec import plugins
from evalspec.api import (
    compile_plan,
    load_suite,
    load_transcripts,
    record_answers,
    run_plan,
    score,
    tool_session,
)
from evalspec.plugins import ToolOutcome
from evalspec.records import RunOptions

ROOT = Path(__file__).resolve().parent.parent
CALENDAR = ROOT / "suites" / "calendar.yaml"


def cli(*args: Any):
    return evalspec_cli([str(a) for a in args])


def calendar_tools() -> dict[str, dict[str, Any]]:
    """The calendar suite's tools as it writes them."""
    return {t["name"]: t for t in yaml.safe_load(CALENDAR.read_text(encoding="utf-8"))["tools"]}


STATE = {"contacts": [{"name": "Jane Doe"}], "events": []}


# ---------------------------------------------------------------- the engine


def test_a_failing_precondition_is_the_error_observation_and_changes_nothing():
    tools = tools_on([calendar_tools()["create_event"]], STATE)
    before = tools.state
    out = tools.call("create_event", {"title": "x", "date": "2026-03-05", "attendee": "Jane"})
    assert out.error == "no contact named Jane"
    assert tools.state is before
    booked = tools.call(
        "create_event", {"title": "Lunch", "date": "2026-03-05", "attendee": "Jane Doe"}
    )
    assert booked.error is None
    assert booked.output["attendee"] == "Jane Doe" and booked.output["id"] == 0
    assert before["events"] == []  # the state a call found is never changed in place
    again = tools.call("create_event", {"title": "x", "date": "2026-03-05", "attendee": "Jane Doe"})
    assert again.error == "you already have a confirmed event on 2026-03-05"


def test_effects_apply_all_or_nothing():
    behavior = {
        "effects": [
            {"append": "/log", "value": "${args.note}"},
            {"increment": "/counters/${args.name}"},
        ]
    }
    state = {"log": [], "counters": {"a": 1}}
    ok = call_tool({"behavior": behavior}, state, {"note": "n", "name": "a"})
    assert ok.state == {"log": ["n"], "counters": {"a": 2}}
    failed = call_tool({"behavior": behavior}, state, {"note": "n", "name": "missing"})
    assert failed.error == "the state has nothing at /counters/missing"
    assert failed.state == state == {"log": [], "counters": {"a": 1}}


@pytest.mark.parametrize("name", ["../secret", "/secret", "a/../../secret", "~1secret"])
def test_an_argument_names_one_key_and_never_moves_elsewhere_in_the_state(name: str):
    behavior = {"effects": [{"set": "/users/${args.name}", "value": "x"}]}
    out = call_tool({"behavior": behavior}, {"users": {}, "secret": "pin"}, {"name": name})
    assert out.error is None
    assert out.state == {"users": {name: "x"}, "secret": "pin"}


def test_where_and_at_change_only_matching_records():
    state = {
        "events": [
            {"id": 0, "status": "confirmed"},
            {"id": 1, "status": "confirmed"},
        ]
    }
    tools = tools_on([calendar_tools()["cancel_event"]], state)
    before = tools.state
    assert tools.call("cancel_event", {"id": 1}).error is None
    assert tools.state["events"] == [
        {"id": 0, "status": "confirmed"},
        {"id": 1, "status": "cancelled"},
    ]
    assert tools.state["events"][0] is before["events"][0]  # untouched records are shared
    assert tools.call("cancel_event", {"id": 1}).error == "no confirmed event with id 1"


MAX_RENDERED_VALUES = 10_000
"""Values one rendered value may hold (docs/security.md)."""


def test_limits_are_errors_not_crashes():
    grow = {"behavior": {"effects": [{"append": "/items", "value": "${args.v}"}]}}
    big = list(range(MAX_RENDERED_VALUES + 5))
    out = call_tool(grow, {"items": []}, {"v": big})
    assert "more than 10000 values" in (out.error or "")
    deep: Any = 0
    for _ in range(70):
        deep = [deep]
    assert "nested" in (call_tool(grow, {"items": []}, {"v": deep}).error or "")
    text = {"behavior": {"response": "${args.a}${args.a}"}}
    long = "x" * 60_000
    assert "longer than 100000" in (call_tool(text, {}, {"a": long}).error or "")


# ---------------------------------------------------------------- validation


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return path


BASE = """\
suite: s
models: [m]
state: {contacts: [], events: []}
tools:
  - name: book
    parameters: {type: object, properties: {attendee: {type: string}, date: {type: string}}}
    behavior:
%s
cases:
  - name: c
    user: hi
    expect:
%s
"""


@pytest.mark.parametrize(
    ("behavior", "expect", "where", "message"),
    [
        (
            "      effects: [{append: /events, value: {who: '${args.atendee}'}}]",
            "      tool_calls: [{book: {}}]",
            "s.yaml:8:48:",
            "tools[0].behavior.effects[0].value.who: ${args.atendee}: 'book' has no argument "
            "'atendee'; did you mean 'attendee'?",
        ),
        (
            "      effects: [{apend: /events, value: 1}]",
            "      tool_calls: [{book: {}}]",
            "s.yaml:8:18:",
            "unknown effect op 'apend'; did you mean 'append'?",
        ),
        (
            "      preconditions: [{path: contacts, exists: true}]",
            "      tool_calls: [{book: {}}]",
            "s.yaml:8:24:",
            "'contacts' is not a JSON Pointer; start it with '/', e.g. /contacts",
        ),
        (
            "      response: '${state.events}'",
            "      tool_calls: [{book: {}}]",
            "s.yaml:8:7:",
            "${state.events} is not a reference",
        ),
        (
            "      response: ok",
            "      state: {events: {value: {}}, contacts/x: 1}",
            "s.yaml:13:36:",
            "'contacts/x' is not a JSON Pointer",
        ),
        (
            "      response: ok",
            "      state: {/events: {valu: []}}",
            "s.yaml:13:24:",
            "unknown key 'valu' in a state check; did you mean 'value'?",
        ),
    ],
)
def test_bad_behaviors_and_state_checks_are_placed_with_a_fix(
    tmp_path, behavior, expect, where, message
):
    path = write(tmp_path, BASE % (behavior, expect))
    done = cli("validate", path)
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output
    text = " ".join(done.output.split())
    assert message in text, text
    assert where in text


def test_state_checks_need_a_stateful_suite(tmp_path):
    path = write(
        tmp_path,
        "suite: s\nmodels: [m]\ntools: [{name: t}]\ncases:\n"
        "  - {name: c, user: hi, expect: {state: {/a: 1}}}\n",
    )
    done = cli("validate", path)
    assert done.exit_code == 2
    assert "s.yaml:5:" in done.output and "no tool of the suite keeps state" in done.output


def test_an_unknown_environment_is_named_with_the_installed_ones(tmp_path, counter_env):
    path = write(
        tmp_path,
        "suite: s\nmodels: [m]\nenvironment: {kind: countr}\ntools: [{name: bump}]\n"
        "cases: [{name: c, user: hi, expect: {state: {/n: 1}}}]\n",
    )
    done = cli("validate", path)
    assert done.exit_code == 2
    text = " ".join(done.output.split())
    assert "s.yaml:3:21: environment.kind: no tool environment named 'countr'" in text
    assert "did you mean 'counter'?" in text


# ---------------------------------------------------------------- run, score, replay


@pytest.fixture(scope="module")
def calendar_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("calendar") / "run"
    done = cli("run", CALENDAR, "--record", "offline", "--out", out)
    assert done.exit_code == 1, done.output  # "double booking" fails by design
    return out


def test_the_calendar_runs_offline_and_records_each_final_state(calendar_run):
    by_case = {t.case: t for t in load_transcripts(calendar_run)}
    assert by_case["book lunch with jane"].state["events"] == [
        {
            "id": 0,
            "title": "Lunch with Jane Doe",
            "date": "2026-03-05",
            "attendee": "Jane Doe",
            "status": "confirmed",
        }
    ]
    bob = by_case["unknown contact"]
    assert bob.tool_calls[0].error == "no contact named Bob Stone"
    assert bob.state["events"] == []
    results = json.loads((calendar_run / "results.json").read_text(encoding="utf-8"))
    status = {r["case"]: r["status"] for r in results["results"]}
    assert status == {
        "book lunch with jane": "pass",
        "unknown contact": "pass",
        "double booking": "fail",
        "cancel by date, any path": "pass",
    }
    double = next(r for r in results["results"] if r["case"] == "double booking")
    assert double["details"]["state"]["changes"][0] == (
        '/events/0/status: "confirmed" -> "cancelled"'
    )
    assert double["reason"].startswith("required state /events/0/status: Expected 'confirmed'")


def test_stateful_transcripts_fit_the_transcript_schema(calendar_run):
    from jsonschema import Draft202012Validator

    schema = json.loads((ROOT / "schemas" / "transcript.schema.json").read_text(encoding="utf-8"))
    lines = (calendar_run / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    for line in lines:
        data = json.loads(line)
        assert "state" in data
        Draft202012Validator(schema).validate(data)


def test_stateless_transcripts_carry_no_state_key(tmp_path):
    out = tmp_path / "run"
    assert cli(
        "run", ROOT / "suites" / "slack.yaml", "--record", "offline", "--out", out
    ).exit_code in (0, 1)
    lines = (out / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines and all('"state"' not in line.split('"tool_calls"')[0][-200:] for line in lines)
    assert all("state" not in json.loads(line) for line in lines)


def test_a_changed_expect_state_rescores_without_a_run(tmp_path, calendar_run):
    suite = tmp_path / "calendar.yaml"
    shutil.copy(CALENDAR, suite)
    text = suite.read_text(encoding="utf-8")
    old = "        /events/1/status: cancelled\n"
    assert text.count(old) == 1
    suite.write_text(text.replace(old, "        /events/1/status: confirmed\n"), encoding="utf-8")
    out = tmp_path / "results.json"
    done = cli("score", suite, "-t", calendar_run, "--out", out)
    assert done.exit_code == 1, done.output  # a case fails; nothing is stale, nothing was run
    assert "stale" not in done.output
    results = json.loads(out.read_text(encoding="utf-8"))["results"]
    (cancel,) = [r for r in results if r["case"] == "cancel by date, any path"]
    assert cancel["status"] == "fail"
    assert "state /events/1/status: Expected 'confirmed' but got 'cancelled'" in cancel["reason"]


def test_a_case_expecting_only_a_state_accepts_any_calls_that_reach_it(calendar_run):
    suite = load_suite(CALENDAR)
    (t,) = [t for t in load_transcripts(calendar_run) if t.case == "cancel by date, any path"]
    direct = [c for c in t.tool_calls if c.name == "cancel_event"]  # skip the look-up
    from msgspec.structs import replace

    (result,) = score(suite, [replace(t, tool_calls=tuple(direct))]).results
    assert result.status == "pass" and result.score == 1.0
    (wrong,) = score(suite, [replace(t, tool_calls=())]).results
    assert wrong.status == "fail"
    assert "state /events/1/status: Expected 'cancelled' but got 'confirmed'" in wrong.reason


# ---------------------------------------------------------------- a Python environment


class Counter:
    """A counter: `bump` adds `step`, `fail` raises (the call's observation says so)."""

    def __init__(self, state: Any, params: dict[str, Any]):
        self.n = int(state.get("n", 0))
        self.step = int(params.get("step", 1))

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if name == "bump":
            self.n += self.step
            return ToolOutcome({"n": self.n})
        raise RuntimeError("the counter broke")

    def snapshot(self) -> Any:
        return {"n": self.n}


@pytest.fixture
def counter_env():
    plugins.register(
        "environment",
        "counter",
        options={"type": "object", "properties": {"step": {"type": "integer"}}},
    )(Counter)
    yield
    plugins.unregister("environment", "counter")


COUNTER_SUITE = """\
suite: counting
models: [m]
environment: {kind: counter, params: {step: 2}}
state: {n: 1}
tools:
  - {name: bump, parameters: {type: object, properties: {}}}
  - {name: fail, parameters: {type: object, properties: {}}}
cases:
  - name: bump twice
    user: Bump it twice.
    expect: {state: {/n: 5}}
"""


def test_a_python_environment_from_the_registry_answers_and_keeps_state(tmp_path, counter_env):
    sys.path.insert(0, str(ROOT / "examples"))
    from scripted_model import ScriptedProvider

    path = write(tmp_path, COUNTER_SUITE)
    suite = load_suite(path)
    script = {
        "bump twice": [
            {"calls": [["bump", {}], ["fail", {}]]},
            {"calls": [["bump", {}]]},
            {"text": "Done."},
        ]
    }
    record_answers(suite, ScriptedProvider(script))  # the model's answers, then replayed
    outcome = run_plan(compile_plan(suite), RunOptions(record="offline"))
    (t,) = outcome.transcripts
    assert [c.output for c in t.tool_calls] == [{"n": 3}, None, {"n": 5}]
    assert t.tool_calls[1].error == "the tool environment failed: RuntimeError: the counter broke"
    assert t.state == {"n": 5}
    (result,) = score(suite, [t]).results
    assert result.status == "pass", result.reason


class LiveCounter(Counter):
    """A counter whose snapshot is its own live state, changed in place by later calls."""

    def __init__(self, state: Any, params: dict[str, Any]):
        super().__init__(state, params)
        self.live = {"n": self.n}

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        outcome = super().call(name, arguments)
        self.live["n"] = self.n
        return outcome

    def snapshot(self) -> Any:
        return self.live


def test_each_turn_records_what_it_changed_even_when_a_plugin_gives_its_live_state(tmp_path):
    sys.path.insert(0, str(ROOT / "examples"))
    from scripted_model import ScriptedProvider

    plugins.register("environment", "live counter")(LiveCounter)
    try:
        text = COUNTER_SUITE.replace("kind: counter", "kind: live counter").replace(
            "    user: Bump it twice.\n    expect: {state: {/n: 5}}\n",
            "    turns:\n      - user: Bump it.\n      - user: Again.\n"
            "        expect: {state: {/n: 5}}\n",
        )
        suite = load_suite(write(tmp_path, text))
        bump = {"calls": [["bump", {}]]}
        script = {"bump twice": [bump, {"text": "Done."}, bump, {"text": "Done."}]}
        record_answers(suite, ScriptedProvider(script))  # the model's answers, then replayed
        outcome = run_plan(compile_plan(suite), RunOptions(record="offline"))
    finally:
        plugins.unregister("environment", "live counter")
    (t,) = outcome.transcripts
    assert [u.changes for u in t.user_turns] == [
        [{"op": "replace", "path": "/n", "value": 3}],
        [{"op": "replace", "path": "/n", "value": 5}],
    ]
    assert t.state == {"n": 5}


# ---------------------------------------------------------------- review


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    for name in ("calendar.yaml", "calendar.recordings.jsonl"):
        shutil.copy(ROOT / "suites" / name, repo / "suites" / name)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


def review(repo: Path) -> dict[str, Any]:
    """`evalspec review --json` as a workflow runs it: a process of its own, in the checkout."""
    done = subprocess.run(
        [sys.executable, "-m", "evalspec", "review", "--base-ref", "main", "--json"],
        capture_output=True,
        text=True,
        cwd=repo,
        timeout=300,
    )
    assert done.returncode in (0, 1, 3), done.stderr
    return json.loads(done.stdout)


def stale_cases(data: dict[str, Any]) -> set[str]:
    (suite,) = data["suites"]
    return {c["case"] for c in suite["changes"] if c["stale"]}


@pytest.mark.slow
def test_review_of_a_changed_effect_flags_exactly_the_transcripts_whose_outputs_move(repo):
    suite = repo / "suites" / "calendar.yaml"
    text = suite.read_text(encoding="utf-8")
    assert text.count("          value: cancelled\n") == 1
    suite.write_text(text.replace("          value: cancelled\n", "          value: canceled\n"))
    git(repo, "commit", "-q", "-am", "spell canceled the American way")
    data = review(repo)
    # double booking books again after cancelling: create_event's answer shows the status.
    assert stale_cases(data) == {"double booking"}
    (s,) = data["suites"]
    kinds = {c["case"]: c["kind"] for c in s["changes"]}
    # No output of "cancel by date" moved, but its replayed state did: re-scored, a regression.
    assert kinds["cancel by date, any path"] == "regression"
    assert kinds["book lunch with jane"] == "unchanged"
    assert kinds["unknown contact"] == "unchanged"
    # The change is named on the cases whose recorded calls reach the tool, the regression
    # included, not as a change "no recorded call reaches".
    named = {c["case"]: c["named"] for c in s["changes"]}
    assert named["cancel by date, any path"] == [
        'tool cancel_event · effect 1 (set /events ... /status) · value: "cancelled" -> "canceled"'
    ]
    assert named["book lunch with jane"] == []
    assert s["suite_changes"] == []


@pytest.mark.slow
def test_review_of_a_changed_initial_state_flags_only_what_it_moves(repo):
    suite = repo / "suites" / "calendar.yaml"
    text = suite.read_text(encoding="utf-8")
    suite.write_text(
        text.replace(
            "    - {name: Robert Smith, email: robert@example.com}",
            "    - {name: Rob Smith, email: robert@example.com}",
        )
    )
    git(repo, "commit", "-q", "-am", "Robert goes by Rob")
    data = review(repo)
    assert stale_cases(data) == {"double booking"}
    assert data["suites"][0]["suite_wide"] == [
        'initial state /contacts/1/name: "Robert Smith" -> "Rob Smith"'
    ]


def test_limits_in_a_behavior_are_placed(tmp_path):
    effects = ", ".join(["{increment: /n}"] * 33)
    path = write(tmp_path, BASE % (f"      effects: [{effects}]", "      tool_calls: [{book: {}}]"))
    done = cli("validate", path)
    assert done.exit_code == 2
    assert "s.yaml:8:7: tools[0].behavior.effects: 33 effects; the limit is 32 per tool" in (
        " ".join(done.output.split())
    )


def test_templates_fill_load_time_values_and_leave_run_time_references_alone(tmp_path):
    path = write(
        tmp_path,
        "suite: s\nmodels: [m]\nvars: {field: who}\nstate: {log: []}\ntools:\n"
        "  - name: note\n"
        "    parameters: {type: object, properties: {text: {type: string}}}\n"
        "    behavior:\n"
        "      effects: [{append: /log, value: {who: '${args.text}', kind: '{{ field }}'}}]\n"
        "cases:\n"
        "  - name: note {{ n }}\n    matrix: {n: [1, 2]}\n    user: Note {{ n }}.\n"
        "    expect: {state: {/log/0/who: '{{ n }}'}}\n",
    )
    suite = load_suite(path)
    tools = tool_session(suite)
    assert tools.call("note", {"text": "hi"}).error is None
    assert tools.state == {"log": [{"who": "hi", "kind": "who"}]}
    assert [c.expect.state[0].expected for c in suite.cases] == [1, 2]


def test_every_report_shows_the_state_checks_and_changes(tmp_path, calendar_run):
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    done = cli("score", CALENDAR, "-t", calendar_run, "--markdown", md, "--html", html)
    assert done.exit_code == 1, done.output
    markdown = md.read_text(encoding="utf-8")
    assert "state /events/0/status" in markdown
    assert (
        '| state change | - | - | 1.00 | 0 | /events/0/status: "confirmed" -&gt; "cancelled" |'
        in (markdown)
    )
    page = html.read_text(encoding="utf-8")
    assert "state /events/0/status" in page and "state change" in page
