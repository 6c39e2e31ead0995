"""evalspec's state language against a world nobody here wrote: tau-bench's retail domain.

The same calls go (a) through tau-bench's own Python tools and (b) through the same tools
written in YAML (tests/data/tau_retail/tools.yaml) in a suite whose `state:` is tau-bench's
data; the answers, errors and worlds after every call are compared. tau-bench's side is
recorded by make_oracle.py and make_whole.py from a tau-bench checkout (its answer's digest and
what it changed, per call; the commit is in the file), so the test needs no tau-bench code.
The calls are the gold action sequences of all 115 test tasks on the whole world
(oracle_whole.json), and, on a slice of it (world.json: 10 users, their orders and every product
those hold), the gold sequences of the slice's users and seeded random sequences over the same
ids (tests/tau_retail_calls.py). Where the YAML does not do what the Python does, the first
difference of a sequence must be one of the limits docs/differences.md lists ("tau-bench's
retail tools"); anything else fails.
"""

from __future__ import annotations

import copy
import gzip
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from fake_openai import FakeOpenAI, text_reply, tool_call_reply
from support import KEY_ENV, fresh_session, git, review_offline
from tau_retail_calls import (
    DATA,
    EXPRESSED,
    PAYMENT_THEN_CANCEL,
    REASONS,
    WORLD,
    Action,
    answer_digest,
    gold_sequences,
    sequences,
)

from evalspec import api
from evalspec.api import load_suite
from evalspec.records import RunOptions, Suite, ToolSession

ORACLE: dict[str, Any] = json.loads((DATA / "oracle.json").read_text(encoding="utf-8"))
Step = list[Any]
"""tau-bench's side of one call: [digest of its answer, what it changed (RFC 6902)]."""


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    folder = tmp_path_factory.mktemp("tau_retail")
    shutil.copy(DATA / "tools.yaml", folder / "tools.yaml")
    text = (
        "suite: tau-retail\n"
        "models: [gpt-4o-mini]\n"
        f"state: {json.dumps(WORLD)}\n"
        "tools: [{include: tools.yaml}]\n"
        "cases: [{name: any, user: Hello., expect: {no_tool_calls: true}}]\n"
    )
    (folder / "suite.yaml").write_text(text, encoding="utf-8")
    return load_suite(folder / "suite.yaml")


def test_the_yaml_has_exactly_the_tools_it_claims(suite: Suite) -> None:
    assert sorted(t.name for t in suite.tools) == sorted(EXPRESSED)
    assert set(EXPRESSED) == set(ORACLE["tools"])  # all of tau-bench's own tools


# ---------------------------------------------------------------- the two sides


def declared_call(conversation: ToolSession, name: str, kwargs: dict[str, Any]) -> tuple[str, Any]:
    result = conversation.call(name, copy.deepcopy(kwargs), json.dumps(kwargs))
    assert result.source not in ("rule", "cache", "error:no_response"), f"{name} has no behavior"
    return ("error", result.error) if result.error is not None else ("ok", result.output)


# ---------------------------------------------------------------- judging a difference


def limit_hit(world: Any, name: str, kwargs: dict[str, Any]) -> str | None:
    """The documented limit this call runs into, judged on tau-bench's world before it; None
    when the YAML claims to do exactly what tau-bench does."""
    if name == "cancel_pending_order" and kwargs["reason"] not in REASONS:
        return "schema: the parameters' enum refuses the reason before the tool runs"
    if name == "calculate":
        try:
            compile(kwargs["expression"], "<expression>", "eval")
        except SyntaxError:
            return "calculate: an expression that is not arithmetic is worded otherwise"
    return None


def compare(
    suite: Suite, tmp: Path, actions: list[Action], steps: list[Step], world: Any = WORLD
) -> tuple[str, str | None]:
    """Both sides, call by call (`steps`: tau-bench's, from the oracle): ("agree", None);
    ("limit", which) at the first difference, when a documented limit explains it; else
    ("defect", what differs)."""
    assert len(steps) == len(actions), "oracle.json is not of these calls: remake it"
    conversation = fresh_session(suite)
    data = conversation.state  # the suite's state, shared: equal parts compare at once
    assert data == world
    copied: set[tuple[str, str]] = set()
    for i, ((name, kwargs), (digest, patch)) in enumerate(zip(actions, steps, strict=True)):
        limit = limit_hit(data, name, kwargs)
        data = jsonpatch.apply_patch(own_records(data, patch, copied), patch, in_place=True)
        ours = declared_call(conversation, name, kwargs)
        same_answer = answer_digest(ours) == digest
        if not same_answer or data != conversation.state:
            if limit is not None:
                return "limit", limit
            what = "answers" if not same_answer else "worlds after it"
            return "defect", f"call {i} {name}({kwargs}): the {what} differ; ours: {ours}"
    return "agree", None


def own_records(data: Any, patch: list[dict[str, Any]], copied: set[tuple[str, str]]) -> Any:
    """`data` (never changed in place: the conversation's state shares it) with a private copy
    of each record the patch changes, so the patch may be applied in place: a copy of the whole
    world before every call took most of the test's time."""
    data = {kind: dict(records) for kind, records in data.items()} if not copied else data
    copied.add(("", ""))
    for op in patch:
        kind, key = [*jsonpatch.JsonPointer(op["path"]).parts, "", ""][:2]
        if key and (kind, key) not in copied:
            data[kind][key] = copy.deepcopy(data[kind][key])
            copied.add((kind, key))
    return data


def tau_world_after(task: int) -> dict[str, Any]:
    """tau-bench's world after a task's gold calls (those of tools the YAML has)."""
    index = [t for t, _, _ in gold_sequences()].index(task)
    data = copy.deepcopy(WORLD)
    for _, patch in ORACLE["gold"][index]:
        data = jsonpatch.apply_patch(data, patch)
    return data


# ---------------------------------------------------------------- tau-bench's own tasks


def test_tau_bench_gold_action_sequences_end_in_the_same_world(suite: Suite, tmp_path: Path):
    outcomes = {
        index: compare(suite, tmp_path, actions, steps)
        for (index, actions, _), steps in zip(gold_sequences(), ORACLE["gold"], strict=True)
    }
    defects = {i: why for i, (kind, why) in outcomes.items() if kind == "defect"}
    assert not defects
    agree = sorted(i for i, (kind, _) in outcomes.items() if kind == "agree")
    limits = {i: why for i, (kind, why) in outcomes.items() if kind == "limit"}
    assert (len(outcomes), len(agree), limits) == (23, 23, {})


def whole_world() -> dict[str, Any]:
    """tau-bench's retail data, as shipped (gzip of its users, orders and products.json)."""
    return {
        kind: json.loads(gzip.decompress((DATA / f"{kind}.json.gz").read_bytes()))
        for kind in ("users", "orders", "products")
    }


@pytest.fixture(scope="module")
def whole_suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Suite, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("tau_retail_whole")
    shutil.copy(DATA / "tools.yaml", folder / "tools.yaml")
    world = whole_world()
    text = (
        "suite: tau-retail-whole\n"
        "models: [gpt-4o-mini]\n"
        f"state: {json.dumps(world)}\n"
        "tools: [{include: tools.yaml}]\n"
        "cases: [{name: any, user: Hello., expect: {no_tool_calls: true}}]\n"
    )
    (folder / "suite.yaml").write_text(text, encoding="utf-8")
    return load_suite(folder / "suite.yaml"), world


@pytest.mark.slow  # the whole world: the small one's gold sequences run in the default lane
@pytest.mark.timeout(900)
def test_all_115_gold_sequences_reach_tau_benchs_world_after_every_call(
    whole_suite: tuple[Suite, dict[str, Any]], tmp_path: Path
) -> None:
    """All 115 test tasks of tasks_test.py, every call of their gold action sequences (all 16
    tools), on the whole world (500 users, 1,000 orders, 50 products): the same answer and
    the same world as tau-bench's own tools after every call."""
    suite, world = whole_suite
    oracle = json.loads((DATA / "oracle_whole.json").read_text(encoding="utf-8"))
    tasks = json.loads((DATA / "tasks_test.json").read_text(encoding="utf-8"))
    assert (len(tasks), {len(world[k]) for k in ("users", "orders")}) == (115, {500, 1000})
    outcomes = {
        task["task"]: compare(
            suite, tmp_path, [(a["name"], a["kwargs"]) for a in task["actions"]], steps, world
        )
        for task, steps in zip(tasks, oracle["gold"], strict=True)
    }
    assert {i: why for i, why in outcomes.items() if why != ("agree", None)} == {}
    used = {a["name"] for task in tasks for a in task["actions"]}
    assert {"modify_pending_order_items", "exchange_delivered_order_items"} <= used


# ---------------------------------------------------------------- random sequences


@pytest.mark.slow
def test_random_calls_within_the_language_agree_call_by_call(suite: Suite, tmp_path: Path):
    runs = sequences()["inside"]
    outcomes = Counter(
        compare(suite, tmp_path, s, steps) for s, steps in zip(runs, ORACLE["inside"], strict=True)
    )
    assert outcomes == Counter({("agree", None): 300})
    calls = Counter(name for s in runs for name, _ in s)
    assert set(calls) == set(EXPRESSED)  # every tool was exercised


@pytest.mark.slow
def test_random_calls_outside_it_differ_only_at_a_documented_limit(suite: Suite, tmp_path: Path):
    runs = sequences()["outside"]
    outcomes = Counter(
        compare(suite, tmp_path, s, steps) for s, steps in zip(runs, ORACLE["outside"], strict=True)
    )
    defects = [why for (kind, why) in outcomes if kind == "defect"]
    assert not defects
    limits = {why: n for (kind, why), n in outcomes.items() if kind == "limit"}
    assert set(limits) == {
        "calculate: an expression that is not arithmetic is worded otherwise",
        "schema: the parameters' enum refuses the reason before the tool runs",
    }
    assert outcomes["agree", None] > 200


# ------------------------------------------------ a whole run, judged as τ-bench does

CHANGING = {
    "cancel_pending_order",
    "modify_pending_order_address",
    "modify_pending_order_payment",
    "modify_user_address",
    "return_delivered_order_items",
}
RUN_TASKS = (17, 32, 66)
"""An address changed; two orders paid by gift card cancelled and an item returned; a card
refund."""


def _kept(task: int) -> list[Action]:
    return next(actions for index, actions, _ in gold_sequences() if index == task)


def _expected_state(task: int) -> tuple[dict[str, Any], list[str]]:
    """τ-bench's reward as evalspec checks: each record the gold calls change must end as
    τ-bench's Python leaves it (required: all or nothing, as τ-bench's reward is), and every
    other record must not move."""
    data = tau_world_after(task)
    changed = [
        (kind, key) for kind in WORLD for key in WORLD[kind] if WORLD[kind][key] != data[kind][key]
    ]
    assert changed  # each of these tasks changes the world
    state = {
        f"/{kind}/{key}": {"value": data[kind][key], "required": True} for kind, key in changed
    }
    unchanged = [
        f"/{kind}/{key}" for kind in WORLD for key in WORLD[kind] if (kind, key) not in changed
    ]
    return state, unchanged


class GoldModel:
    """Answers each request with the task's next gold call, then a closing text; `careless`
    leaves out the last call that changes the world."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Action]] = {}
        for task in RUN_TASKS:
            actions = _kept(task)
            last = max(i for i, (name, _) in enumerate(actions) if name in CHANGING)
            self.scripts[f"good {task}"] = actions
            self.scripts[f"careless {task}"] = actions[:last] + actions[last + 1 :]

    def __call__(self, body: dict[str, Any]) -> Any:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        script = self.scripts[f"{body['model']} {user.split('#')[1].split()[0]}"]
        done = sum(m["role"] == "tool" for m in body["messages"])
        if done < len(script):
            name, kwargs = script[done]
            return tool_call_reply(name, kwargs)
        return text_reply("All done.")


def run_recorded(folder: Path) -> tuple[Suite, Any]:
    """The three tasks' suite in `folder` (run.yaml, including retail/tools.yaml), run against
    the scripted gold and careless agents; their answers recorded in run.recordings.jsonl."""
    (folder / "retail").mkdir()
    shutil.copy(DATA / "tools.yaml", folder / "retail" / "tools.yaml")
    cases = []
    for task in RUN_TASKS:
        state, unchanged = _expected_state(task)
        cases.append(
            {
                "name": f"task {task}",
                "user": f"Please help me: task #{task} of the retail tests.",
                "expect": {"state": state, "unchanged": unchanged},
            }
        )
    with FakeOpenAI(GoldModel()) as fake:
        models = [
            {"name": name, "model": name, "base_url": fake.base_url, "api_key_env": KEY_ENV}
            for name in ("good", "careless")
        ]
        suite_text = json.dumps(
            {
                "suite": "tau-retail-run",
                "models": models,
                "run": {"mode": "agent", "max_turns": 20},
                "state": WORLD,
                "tools": [{"include": "retail/tools.yaml"}],
                "cases": cases,
            }
        )
        (folder / "run.yaml").write_text(suite_text, encoding="utf-8")
        suite = load_suite(folder / "run.yaml")
        outcome = api.run_plan(api.compile_plan(suite), RunOptions(run_dir=folder / "out"))
    return suite, outcome


def test_a_run_judges_gold_and_careless_agents_by_the_world_they_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-tau-retail-0000")
    suite, outcome = run_recorded(tmp_path)
    report = api.score(suite, outcome.transcripts)
    verdicts = {(r.case, r.model): (r.status, r.score) for r in report.results}
    assert verdicts == {
        **{(f"task {t}", "good"): ("pass", 1.0) for t in RUN_TASKS},
        **{
            (f"task {t}", "careless"): ("fail", verdicts[f"task {t}", "careless"][1])
            for t in RUN_TASKS
        },
    }
    assert all(verdicts[f"task {t}", "careless"][1] < 1 for t in RUN_TASKS)
    good = {t.case: t for t in outcome.transcripts if t.model == "good"}
    assert [c.name for c in good["task 32"].tool_calls] == [name for name, _ in _kept(32)]


@pytest.mark.slow
def test_review_of_a_changed_refund_flags_exactly_the_conversations_that_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pull request that changes cancel_pending_order's refund, reviewed offline from the
    recordings: only the tasks whose recorded calls cancel an order are stale."""
    monkeypatch.setenv(KEY_ENV, "sk-test-tau-retail-0000")
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    run_recorded(repo / "suites")
    assert (repo / "suites" / "run.recordings.jsonl").exists()
    shutil.rmtree(repo / "suites" / "out")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    tools = repo / "suites" / "retail" / "tools.yaml"
    text = tools.read_text(encoding="utf-8")
    assert text.count("          transaction_type: refund\n") == 2  # cancel, payment change
    tools.write_text(text.replace("transaction_type: refund\n", "transaction_type: reversal\n", 1))
    git(repo, "commit", "-q", "-am", "call a cancelled order's refund a reversal")
    done = review_offline(repo, KEY_ENV)
    assert done.returncode in (0, 1, 3), done.stderr
    (reviewed,) = json.loads(done.stdout)["suites"]
    stale = {(c["case"], c["model"]) for c in reviewed["changes"] if c["stale"]}
    # Task 17 cancels nothing; the careless agent of task 66 left its one cancel out.
    assert stale == {("task 32", "good"), ("task 32", "careless"), ("task 66", "good")}
    good32 = next(c for c in reviewed["changes"] if (c["case"], c["model"]) == ("task 32", "good"))
    [named] = good32["named"]  # by content, not position
    assert named.startswith("tool cancel_pending_order · effect "), named
    assert 'transaction_type: "refund" -> "reversal"' in named, named
    # Replayed, the renamed refund no longer leaves the world τ-bench's gold calls leave.
    assert (good32["before"]["status"], good32["after"]["status"]) == ("pass", "fail")


def test_cancel_after_a_payment_change_refunds_every_payment(suite: Suite, tmp_path: Path) -> None:
    """After a payment change an order holds three payment records; τ-bench's cancel refunds
    each (a loop), and so does the YAML (`for_each` over the history)."""
    (steps,) = ORACLE["payment_then_cancel"]
    assert steps[0][1], "tau-bench accepted the payment change"
    assert compare(suite, tmp_path, PAYMENT_THEN_CANCEL, steps) == ("agree", None)
    conversation = fresh_session(suite)
    ours = [declared_call(conversation, name, kwargs) for name, kwargs in PAYMENT_THEN_CANCEL]
    kinds = [p["transaction_type"] for p in ours[-1][1]["payment_history"]]
    assert kinds == ["payment", "payment", "refund", "refund", "refund", "refund"]
