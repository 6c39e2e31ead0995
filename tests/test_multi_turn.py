"""Multi-turn cases and a simulated user, end to end against a real HTTP server on loopback.

One fake endpoint plays both the model under test (`fake-good`, `fake-bad`) and the simulated
user (`fake-user`); conversations are recorded live, then replayed offline with the network
shut, and scored turn by turn.
"""

from __future__ import annotations

import json
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from fake_openai import FakeOpenAI, text_reply, tool_call_reply
from hypothesis import given, settings
from hypothesis import strategies as st
from support import console_report, evalspec_cli, examples, refused_suite

from evalspec import api, plugins, records
from evalspec.errors import SpecError, UsageError
from evalspec.records import RunOptions, Transcript

KEY_ENV = "EVALSPEC_TEST_KEY"
STOP_SIGNAL = "###STOP###"
"""What a simulated user says to end the conversation (docs/reference/language.md)."""

SUITE = """\
suite: turns
models:
  - {{name: good, model: fake-good, base_url: "{url}", api_key_env: {key}}}
  - {{name: bad, model: fake-bad, base_url: "{url}", api_key_env: {key}}}
  - {{name: player, model: fake-user, base_url: "{url}", api_key_env: {key}}}
run: {{retries: 0, timeout: 10, recordings: rec.jsonl}}
critics: {{a: binary, b: binary}}
tools:
  - name: add
    description: Add two numbers.
    parameters:
      type: object
      properties: {{a: {{type: integer}}, b: {{type: integer}}}}
      required: [a, b]
    responses:
      - {{when: {{a: 1, b: 2}}, output: 3}}
      - {{when: {{a: 2, b: 2}}, output: 4}}
      - {{output: 5}}
cases:
  - name: three turns
    turn_rule: {rule}
    turns:
      - user: add 1 and 2
        expect: {{tool_calls: [{{add: {{a: 1, b: 2}}}}]}}
      - user: thanks
      - user: now add 2 and 2
        expect:
          tool_calls: [{{add: {{a: 2, b: 2}}}}]
          final_answer: {{contains: "4"}}
  - name: single
    user: add 1 and 2
    expect: {{tool_calls: [{{add: {{a: 1, b: 2}}}}]}}
  - name: user answers back
    user:
      simulate:
        persona: A terse accountant.
        goal: Get 1 plus 2 computed.
        stop_when: the assistant gives the sum
        max_turns: {max_turns}
        model: player
    expect: {{tool_calls: [{{add: {{a: 1, b: 2}}}}], final_answer: {{contains: "3"}}}}
"""


def last(body: dict[str, Any], role: str) -> dict[str, Any] | None:
    return next((m for m in reversed(body["messages"]) if m["role"] == role), None)


class Script:
    """The fake endpoint's answers: the model under test, and the simulated user."""

    def __init__(self) -> None:
        self.user_lines = ["Please add 1 and 2.", STOP_SIGNAL]

    def __call__(self, body: dict[str, Any]) -> Any:
        if body["model"] == "fake-user":
            said = sum(m["role"] == "assistant" for m in body["messages"])
            return text_reply(self.user_lines[min(said, len(self.user_lines) - 1)])
        if body["messages"][-1]["role"] == "tool":
            return text_reply("The sum is " + body["messages"][-1]["content"])
        text = (last(body, "user") or {}).get("content", "")
        if "2 and 2" in text:
            b = 3 if body["model"] == "fake-bad" else 2
            return tool_call_reply("add", {"a": 2, "b": b})
        if "1 and 2" in text:
            return tool_call_reply("add", {"a": 1, "b": 2})
        return text_reply("You're welcome.")


@pytest.fixture
def script() -> Script:
    return Script()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, script: Script) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv(KEY_ENV, "sk-test-turns-000000")
    with FakeOpenAI(script) as fake:
        yield fake


def write(tmp_path: Path, url: str, *, rule: str = "partial", max_turns: int = 4) -> Path:
    path = tmp_path / "turns.yaml"
    path.write_text(
        SUITE.format(url=url, key=KEY_ENV, rule=rule, max_turns=max_turns), encoding="utf-8"
    )
    return path


def run(path: Path, record: str = "auto", **kw: Any) -> tuple[records.Report, list[Transcript]]:
    suite = api.load_suite(path)
    outcome = api.run_plan(api.compile_plan(suite, **kw), RunOptions(record=record))
    return api.score(suite, outcome.transcripts), outcome.transcripts


def by_case(transcripts: list[Transcript], model: str = "good") -> dict[str, Transcript]:
    return {t.case: t for t in transcripts if t.model == model}


def test_turns_go_over_one_conversation_and_each_call_knows_its_turn(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    _, transcripts = run(write(tmp_path, server.base_url), models=["good"])
    t = by_case(transcripts)["three turns"]
    assert [u.user for u in t.user_turns] == ["add 1 and 2", "thanks", "now add 2 and 2"]
    assert {u.source for u in t.user_turns} == {"scripted"}
    assert [u.final_answer for u in t.user_turns] == [
        "The sum is 3",
        "You're welcome.",
        "The sum is 4",
    ]
    assert [(c.arguments, c.user_turn) for c in t.tool_calls] == [
        ({"a": 1, "b": 2}, 0),
        ({"a": 2, "b": 2}, 2),
    ]
    # The third turn's request carries the whole conversation: earlier answers, tool traffic.
    third = next(r.body for r in server.requests if "now add 2 and 2" in json.dumps(r.body))
    roles = [m["role"] for m in third["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant", "user"]
    assert third["messages"][2]["content"] == "3"


def test_single_turn_transcripts_keep_their_format(server: FakeOpenAI, tmp_path: Path) -> None:
    _, transcripts = run(write(tmp_path, server.base_url), models=["good"])
    single = by_case(transcripts)["single"].to_dict()
    assert "user_turns" not in single
    assert all("user_turn" not in c for c in single["tool_calls"])
    assert set(single) == {
        "item_id", "case", "model", "trial", "messages", "tool_calls", "final_answer",
        "finish_reason", "usage", "latency_s", "turns", "error", "source", "version",
    }  # fmt: skip


def test_turns_are_scored_each_on_its_own_calls_with_partial_credit(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    report, _ = run(write(tmp_path, server.base_url), cases=["three turns"])
    good = next(r for r in report.results if r.model == "good")
    bad = next(r for r in report.results if r.model == "bad")
    assert (good.score, good.status) == (1.0, "pass")
    turns = bad.details["turns"]
    assert [(e["turn"], e.get("status")) for e in turns] == [(1, "pass"), (2, None), (3, "fail")]
    assert turns[0]["score"] == 1.0 and 0 < turns[2]["score"] < 1
    assert bad.score == pytest.approx((1.0 + turns[2]["score"]) / 2)
    assert "turn 3 failed" in bad.reason
    # Turn 1's add(1, 2) is never offered to turn 3's expectation: turn 3 sees only its call.
    assert any(r.field.startswith("turn 3: ") and not r.match for r in bad.rows)


def test_all_or_nothing_fails_the_case_on_one_failed_turn(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    report, _ = run(write(tmp_path, server.base_url, rule="all_or_nothing"), cases=["three"])
    bad = next(r for r in report.results if r.model == "bad")
    good = next(r for r in report.results if r.model == "good")
    assert (bad.score, bad.status) == (0.0, "fail")
    assert bad.reason.startswith("all or nothing") and "turn 3 failed" in bad.reason
    assert 0.5 < bad.details["mean_of_turns"] < 1
    assert (good.score, good.status) == (1.0, "pass")


def test_the_simulated_user_sees_roles_swapped_and_no_tool_traffic(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    report, transcripts = run(write(tmp_path, server.base_url), models=["good"], cases=["user"])
    t = by_case(transcripts)["user answers back"]
    assert [(u.user, u.source, u.stop) for u in t.user_turns] == [
        ("Please add 1 and 2.", "simulated", "stop_signal")
    ]
    assert t.final_answer == "The sum is 3"
    assert report.results[0].status == "pass"
    asked = [r.body for r in server.requests if r.body["model"] == "fake-user"]
    assert len(asked) == 2  # its first line, then the stop signal
    system = asked[1]["messages"][0]["content"]
    assert "Get 1 plus 2 computed." in system and "A terse accountant." in system
    seen = asked[1]["messages"][1:]
    assert [m["role"] for m in seen] == ["user", "assistant", "user"]
    assert seen[1:] == [
        {"role": "assistant", "content": "Please add 1 and 2."},
        {"role": "user", "content": "The sum is 3"},
    ]
    assert "tools" not in asked[1] or not asked[1]["tools"]
    assert not any("tool_calls" in m for r in asked for m in r["messages"])
    # The model under test never sees the simulator's settings.
    model_side = [r.body for r in server.requests if r.body["model"] == "fake-good"]
    assert "Get 1 plus 2" not in json.dumps(model_side)


@pytest.mark.parametrize(
    ("lines", "stop", "said"),
    [
        (["", "never sent"], None, 0),
        (["Please add 1 and 2.", "  "], "empty_message", 1),
        (["Please add 1 and 2.", "Again please add 1 and 2.", "More?", "x"], "max_turns", 3),
    ],
)
def test_the_simulated_user_stops_on_an_empty_message_or_at_max_turns(
    server: FakeOpenAI, script: Script, tmp_path: Path, lines: list[str], stop: str, said: int
) -> None:
    script.user_lines = lines
    path = write(tmp_path, server.base_url, max_turns=3)
    _, transcripts = run(path, models=["good"], cases=["user"])
    t = by_case(transcripts)["user answers back"]
    assert len(t.user_turns) == said
    if said:
        assert t.user_turns[-1].stop == stop and t.error is None
    else:
        assert t.error == "the simulated user ended the conversation before saying anything"


def test_recorded_conversations_replay_offline_with_no_call(
    server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "single" opens exactly as "three turns" does, and both run at once: they share one
    # answer, so the replay gives each conversation what it got live.
    path = write(tmp_path, server.base_url)
    report, live = run(path)
    assert (tmp_path / "rec.jsonl").exists()
    monkeypatch.setattr(socket.socket, "connect", _refuse)
    replay_report, replayed = run(path, record="offline")
    assert {t.source for t in replayed} == {"replay"}
    strip = ["source", "latency_s"]
    assert [_without(t, strip) for t in replayed] == [_without(t, strip) for t in live]
    assert [(r.case, r.model, r.score, r.status) for r in replay_report.results] == [
        (r.case, r.model, r.score, r.status) for r in report.results
    ]


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a socket was opened during an offline replay")


def _without(t: Transcript, keys: list[str]) -> dict[str, Any]:
    data = t.to_dict()
    for k in keys:
        data.pop(k, None)
    return data


def test_an_edited_turn_or_simulator_setting_makes_exactly_that_case_stale(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path, server.base_url)
    _, transcripts = run(path, models=["good"])
    text = path.read_text(encoding="utf-8")
    for old, new, changed in [
        ("user: thanks", "user: thank you", "three turns"),
        ("persona: A terse accountant.", "persona: A chatty accountant.", "user answers back"),
        ("max_turns: 4", "max_turns: 5", "user answers back"),
        ("name: player, model: fake-user", "name: player, model: fake-user-2", "user answers"),
    ]:
        path.write_text(text.replace(old, new), encoding="utf-8")
        stale = api.stale_transcripts(api.load_suite(path), transcripts)
        assert [s.transcript.case for s in stale] == [
            c for c in ("three turns", "user answers back") if c.startswith(changed)
        ], old
        why = stale[0].why[0]
        if changed == "three turns":
            assert why == 'user turn 2 now says "thank you" (was "thanks")'
        else:
            assert why == "the simulated user's settings or its model changed"
    path.write_text(text.replace('contains: "4"', 'contains: "5"'), encoding="utf-8")
    assert api.stale_transcripts(api.load_suite(path), transcripts) == []


def test_the_simulated_users_tokens_are_kept_apart_and_priced_at_its_own_entry(
    server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, server.base_url)
    text = path.read_text(encoding="utf-8")
    text = text.replace(
        "model: fake-user,", "model: fake-user, price: {input: 500000, output: 1000000},"
    )
    path.write_text(text, encoding="utf-8")
    report, transcripts = run(path, models=["good"])
    t = by_case(transcripts)["user answers back"]
    # Two answers of the user (its line, then the stop signal) at 10 + 5 tokens each; the
    # model under test answered twice too (a call, then the sum).
    assert t.user_usage is not None
    assert (t.user_usage.model, t.user_usage.total_tokens) == ("player", 30)
    assert t.usage.total_tokens == 30
    assert by_case(transcripts)["three turns"].user_usage is None
    (good,) = report.models
    assert good.tokens == sum(x.usage.total_tokens for x in transcripts)
    sim = good.simulated_user
    assert not isinstance(sim, msgspec.UnsetType)
    assert (sim.models, sim.prompt_tokens, sim.completion_tokens) == (("player",), 20, 10)
    assert sim.cost == pytest.approx(20 * 0.5 + 10 * 1.0)
    shown = console_report(path, transcripts, width=200)
    assert "simulated user (player): 30 tokens, cost 20.0000, not counted" in shown
    # Replayed from the recordings, and estimated before a run, with nothing called.
    monkeypatch.setattr(socket.socket, "connect", _refuse)
    _, replayed = run(path, record="offline", models=["good"])
    assert by_case(replayed)["user answers back"].user_usage == t.user_usage
    estimates = {e.model: e for e in api.estimate_cost(api.compile_plan(api.load_suite(path)))}
    player = estimates["player (simulated user)"]
    assert (player.items, player.recorded, player.tokens) == (2, 1, 60)
    assert player.total_cost == pytest.approx(40.0)


def test_the_model_playing_the_user_is_not_evaluated(server: FakeOpenAI, tmp_path: Path) -> None:
    _, transcripts = run(write(tmp_path, server.base_url))
    assert {t.model for t in transcripts} == {"good", "bad"}
    with pytest.raises(UsageError) as err:
        api.compile_plan(api.load_suite(write(tmp_path, server.base_url)), models=["player"])
    assert "plays the simulated user" in str(err.value)


BROKEN = """\
suite: broken
models: [m, {name: player, model: x}]
tools:
  - name: add
    parameters: {type: object, properties: {a: {type: integer}}}
cases:
  - name: both
    user: hi
    turns:
      - user: add 1
        expect: {tool_calls: [{add: {a: 1}}]}
  - name: nobody judged
    turns:
      - user: hello
      - user: bye
  - name: unknown player
    user: {simulate: {goal: add things, model: playr}}
    expect: {tool_calls: [{add: {a: 1}}]}
  - name: bad turn
    turns:
      - {user: add, expected: {}}
"""


def test_broken_turns_are_reported_with_places_and_fixes(tmp_path: Path) -> None:
    out = refused_suite(tmp_path / "broken.yaml", BROKEN)
    assert "broken.yaml:8:5" in out and "cannot also have `user:`" in out
    assert "broken.yaml:14:7" in out and "no turn says what a good model does" in out
    assert "'playr' is not a model of this suite" in out and "player" in out
    assert "broken.yaml:21:" in out and "expected" in out


@pytest.mark.slow
def test_score_diff_and_reports_work_on_multi_turn_runs_without_any_call(
    server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    path = write(tmp_path, server.base_url)
    md, page = tmp_path / "report.md", tmp_path / "report.html"
    args = ["--markdown", str(md), "--html", str(page)]
    first = evalspec_cli(["run", str(path), "--out", str(tmp_path / "run"), *args])
    assert first.exit_code == 1, first.output  # "bad" fails turn 3
    monkeypatch.setattr(socket.socket, "connect", _refuse)
    head = tmp_path / "head.yaml"
    head.write_text(
        path.read_text(encoding="utf-8").replace('contains: "4"', 'contains: "four"'),
        encoding="utf-8",
    )
    run_dir = str(tmp_path / "run")
    scored = evalspec_cli(["score", str(path), "-t", run_dir, "--json"])
    diffed = evalspec_cli(["diff", str(path), str(head), "-t", run_dir, "--json"])
    offline = evalspec_cli(
        ["run", str(path), "--record", "offline", "--model", "bad", "--out", run_dir + "2", "-v"],
        env={"COLUMNS": "200"},
    )
    for proc in (scored, diffed, offline):
        assert proc.exception is None or isinstance(proc.exception, SystemExit), proc.output
    results = {(r["case"], r["model"]): r for r in json.loads(scored.stdout)["results"]}
    turns = results[("three turns", "bad")]["details"]["turns"]
    assert [e.get("status") for e in turns] == ["pass", None, "fail"]
    # The head's turn-3 check no longer holds for the good model: the diff says so, offline.
    changed = json.loads(diffed.stdout)
    assert changed["counts"]["worse"] == 1 and changed["counts"]["rerun"] == 0, diffed.output
    assert "turn 3 final_answer.contains" in json.dumps(changed)  # the change, by turn
    assert "turn 1: Please add 1 and 2." not in offline.output
    # the conversations below the table (every one with -v), a line per role
    assert "conversation ended: the user said ###STOP###" in offline.output
    assert "model answered: The sum is 3" in offline.output
    assert "user said: now add 2 and 2" in offline.output
    assert "simulated user (player) said: Please add 1 and 2." in offline.output
    report_md = md.read_text(encoding="utf-8")
    assert "| turn 3 | user said | now add 2 and 2 | FAIL |" in report_md
    assert "|  | model answered | The sum is 5 |" in report_md
    assert "now add 2 and 2" in page.read_text(encoding="utf-8")
    # The simulated user's tokens, apart from the model's: Markdown and the page's trial.
    assert "simulated user (player): 30 tokens, not counted" in md.read_text(encoding="utf-8")
    assert '"utok":30' in page.read_text(encoding="utf-8")


class Counting:
    """A plugin environment that keeps a running total across user turns."""

    def __init__(self, state: Any, params: dict[str, Any]) -> None:
        self.total = 0

    def call(self, name: str, arguments: dict[str, Any]) -> plugins.ToolOutcome:
        self.total += sum(arguments.values())
        return plugins.ToolOutcome(self.total)

    def snapshot(self) -> dict[str, int]:
        return {"total": self.total}


def test_one_tool_object_answers_every_turn_and_its_state_is_recorded_after_each(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path, server.base_url)
    text = path.read_text(encoding="utf-8")
    text = text.replace("critics:", "environment: {kind: counting}\nstate: {total: 0}\ncritics:", 1)
    path.write_text(text, encoding="utf-8")
    plugins.register("environment", "counting")(Counting)
    try:
        plan = api.compile_plan(api.load_suite(path), models=["good"], cases=["three turns"])
        (t,) = api.run_plan(plan, RunOptions(run_dir=tmp_path / "run")).transcripts
    finally:
        plugins.unregister("environment", "counting")
    assert [u.changes for u in t.user_turns] == [  # against the state before: {"total": 0}
        [{"op": "replace", "path": "/total", "value": 3}],
        [],
        [{"op": "replace", "path": "/total", "value": 7}],
    ]
    assert [c.output for c in t.tool_calls] == [3, 7]  # the state carried into turn 3


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_TURN_KEYS = st.sampled_from(["user", "expect", "turns", "turn_rule", "simulate", "model", "x"])


_VALID_TURN = st.fixed_dictionaries(
    {"user": st.text(max_size=8)}, optional={"expect": st.just({"no_tool_calls": True})}
)
_MISSING = object()


@pytest.mark.slow
@settings(max_examples=examples(200), derandomize=True, database=None, deadline=None)
@given(
    turns=st.just(_MISSING)
    | st.lists(_VALID_TURN | st.dictionaries(_TURN_KEYS, _JSON, max_size=3), max_size=3)
    | _JSON,
    user=st.just(_MISSING) | st.just({"goal": "g", "model": "p"}) | _JSON,
    rule=st.just(_MISSING) | st.sampled_from(["partial", "all_or_nothing"]) | _JSON,
    expect=st.just(_MISSING) | st.just({"no_tool_calls": True}) | _JSON,
)
def test_any_turns_or_simulated_user_loads_or_is_a_placed_problem(
    turns: Any, user: Any, rule: Any, expect: Any
) -> None:
    case: dict[str, Any] = {"name": "c"}
    for key, value in (("turns", turns), ("turn_rule", rule), ("expect", expect)):
        if value is not _MISSING:
            case[key] = value
    if user is not _MISSING:
        case["user"] = {"simulate": user} if isinstance(user, dict) else user
    doc = {
        "suite": "f",
        "models": ["m", {"name": "p", "model": "x"}],
        "tools": [_ADD],
        "cases": [case],
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.yaml"
        path.write_text(json.dumps(doc), encoding="utf-8")
        try:
            suite = api.load_suite(path)
        except SpecError as exc:
            assert exc.problems
            for p in exc.problems:
                assert p.line >= 1 and p.column >= 1 and p.message, p
            return
    (built,) = suite.cases
    assert bool(built.turns) == ("turns" in case)
    assert (built.simulated_user is not None) == isinstance(case.get("user"), dict)
    if built.turns:
        assert [t.user for t in built.turns] == [t["user"] for t in case["turns"]]
        assert built.messages[-1].content == case["turns"][0]["user"]


_ADD = {
    "name": "add",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
}


STATEFUL = """\
suite: stateful turns
models: [{{name: good, model: fake-good, base_url: "{url}", api_key_env: {key}}}]
run: {{retries: 0, timeout: 10}}
state: {{total: 0}}
tools:
  - name: add
    description: Add two numbers to the running total.
    parameters:
      type: object
      properties: {{a: {{type: integer}}, b: {{type: integer}}}}
      required: [a, b]
    behavior:
      effects:
        - increment: /total
          by: ${{args.a}}
      response: {{total: "${{state/total}}"}}
cases:
  - name: a running total
    turns:
      - user: add 1 and 2
        expect:
          tool_calls: [{{add: {{a: 1, b: 2}}}}]
          state: {{/total: 1}}
      - user: now add 2 and 2
        expect:
          tool_calls: [{{add: {{a: 2, b: 2}}}}]
          state: {{/total: 3}}
"""


def test_a_stateful_conversation_keeps_one_state_and_judges_each_turn_on_its_own(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    path = tmp_path / "stateful.yaml"
    path.write_text(STATEFUL.format(url=server.base_url, key=KEY_ENV), encoding="utf-8")
    report, (t,) = run(path)
    assert [u.changes for u in t.user_turns] == [
        [{"op": "replace", "path": "/total", "value": 1}],
        [{"op": "replace", "path": "/total", "value": 3}],
    ]
    assert t.state == {"total": 3}
    (result,) = report.results
    assert [e["status"] for e in result.details["turns"]] == ["pass", "pass"], result.reason
    # Each turn shows its own change: the state before the turn against the state after it.
    shown = [(r.field, r.reason) for r in result.rows if r.critic == "state_change"]
    assert shown == [
        ("turn 1: state change", "/total: 0 -> 1"),
        ("turn 2: state change", "/total: 1 -> 3"),
    ]
    # The second turn's state check sees the state after turn 2, not after turn 1 or the end.
    edited = path.read_text(encoding="utf-8").replace("{/total: 1}", "{/total: 3}")
    path.write_text(edited, encoding="utf-8")
    (rescored,) = api.score(api.load_suite(path), [t]).results
    assert [e["status"] for e in rescored.details["turns"]][1] == "pass"
    assert rescored.details["turns"][0]["status"] == "fail"


def test_evaluators_of_a_multi_turn_case_judge_the_whole_conversation(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    path = write(tmp_path, server.base_url)
    _, transcripts = run(path, models=["good"], cases=["three turns"])
    text = path.read_text(encoding="utf-8")

    def rescore(evaluators: str, rule: str = "partial") -> Any:
        edited = text.replace(
            "    turn_rule: partial\n", f"    turn_rule: {rule}\n    evaluators: {evaluators}\n"
        )
        path.write_text(edited, encoding="utf-8")
        (result,) = api.score(api.load_suite(path), transcripts).results
        return result

    # Every call of every turn, against the calls all the turns expect (add, then add).
    ok = rescore("[{tool_call_order: {strict: true}}, {tool_call_count: {counts: {add: '==2'}}}]")
    assert ok.status == "pass" and ok.score == 1.0, ok.reason
    assert [r.field for r in ok.rows if r.field.startswith("conversation")] == [
        "conversation: tool_call_order",
        "conversation: tool_call_count",
    ]
    assert ok.details["conversation"]["status"] == "pass"
    # Partial credit: the conversation is one more part beside the two judged turns.
    one_add = rescore("[{tool_call_count: {counts: {add: '==1'}}}]")
    assert one_add.score == pytest.approx((1 + 1 + 0) / 3)
    assert "the conversation failed: " in one_add.reason
    # All or nothing: a failed conversation evaluator fails the case, score 0.
    strict = rescore("[{tool_call_count: {counts: {add: '==1'}}}]", rule="all_or_nothing")
    assert (strict.status, strict.score) == ("fail", 0.0)
    assert strict.reason.startswith("all or nothing: the conversation failed")
    # A required evaluator gates the case whatever the mean, as in a single-turn case.
    gate = rescore("[{tool_call_count: {counts: {add: '==1'}}, required: true}]")
    assert gate.status == "fail" and gate.score == pytest.approx(2 / 3)
    assert "the conversation's required evaluator tool_call_count" in gate.reason
    # The evaluators read no request: editing them leaves the evidence fresh.
    assert api.stale_transcripts(api.load_suite(path), transcripts) == []


def test_a_judged_turn_the_conversation_never_reached_fails(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    import msgspec

    path = write(tmp_path, server.base_url)
    _, transcripts = run(path, models=["good"], cases=["three turns"])
    (t,) = transcripts
    cut = msgspec.structs.replace(t, user_turns=t.user_turns[:1], tool_calls=t.tool_calls[:1])
    (result,) = api.score(api.load_suite(path), [cut]).results
    turns = result.details["turns"]
    assert [(e["turn"], e["user"], e.get("status")) for e in turns] == [
        (1, "add 1 and 2", "pass"),
        (2, "thanks", None),
        (3, "now add 2 and 2", "fail"),
    ]
    assert turns[2]["reason"] == "the conversation ended before turn 3"
    assert result.score == pytest.approx(0.5)


class _CountingEmbedder:
    """Says which texts were embedded in batches, and refuses one that was not."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def prefetch(self, texts: list[str]) -> None:
        self.batches.append(list(texts))

    def similarity(self, a: str, b: str) -> float:
        known = {t for batch in self.batches for t in batch}
        assert a == b or {a, b} <= known, f"embedded one by one: {a!r}, {b!r}"
        return 1.0 if a == b else 0.9


EMBEDDED_TURNS = """\
suite: embedded turns
models: [{name: m, model: x, api_key_env: K}]
tools:
  - name: note
    description: Take a note.
    parameters: {type: object, properties: {text: {type: string}}, required: [text]}
    responses: [{output: ok}]
cases:
  - name: two turns
    critics: {text: {similarity: 0.5}}
    turns:
      - user: Note that the meeting moved.
        expect:
          tool_calls: [{note: {text: the meeting moved}}]
      - user: Thanks, anything else?
        expect:
          final_answer: {similarity: {value: nothing else for now, threshold: 0.5}}
  - name: plain turns
    turns:
      - user: Note lunch.
        expect: {tool_calls: [{note: {text: lunch}}]}
"""


def test_similarity_texts_of_every_turn_are_embedded_in_one_batch(tmp_path: Path) -> None:
    """A conversation's similarity critics and checks, in any turn, are embedded together
    before scoring; a conversation without any asks the embedder for nothing."""
    path = tmp_path / "suite.yaml"
    path.write_text(EMBEDDED_TURNS)
    suite = api.load_suite(path)
    from evalspec.records import ToolCall, UserTurn

    def conversation(case: str, text: str, answers: list[str]) -> Transcript:
        return Transcript(
            item_id=case,
            case=case,
            model="m",
            trial=0,
            tool_calls=(ToolCall(name="note", arguments={"text": text}, user_turn=0),),
            final_answer=answers[-1],
            user_turns=tuple(UserTurn(user=f"u{k}", final_answer=a) for k, a in enumerate(answers)),
        )

    embedder = _CountingEmbedder()

    def score_all(transcripts: list[Transcript]) -> list[Any]:
        return list(api.score(suite, transcripts, embedder=embedder).results)

    [plain] = score_all([conversation("plain turns", "lunch", ["Noted."])])
    assert plain.status == "pass"
    assert embedder.batches == []  # nothing to embed: no batch at all
    [both] = score_all([conversation("two turns", "meeting moved", ["Done.", "No."])])
    texts = ["the meeting moved", "meeting moved", "nothing else for now", "No."]
    assert embedder.batches[0] == texts  # the first batch, before any turn is judged
    assert both.status == "pass", both.reason
