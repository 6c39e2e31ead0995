"""evalspec's state language against a world nobody here wrote: tau-bench's retail domain.

The same calls go (a) through tau-bench's own Python tools (tests/data/tau_retail/reference.py,
copied unchanged, MIT) and (b) through the same tools written in YAML
(tests/data/tau_retail/tools.yaml) in a suite whose `state:` is the same slice of tau-bench's
data; the answers, errors and final worlds are compared. The calls are the gold action
sequences of tau-bench's test tasks on the slice's users, and seeded random sequences over the
same ids. Where the YAML cannot say what the Python does, the first difference of a sequence
must be one of the limits docs/differences.md lists ("tau-bench's retail tools"); anything
else fails the test.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from fake_openai import FakeOpenAI, text_reply, tool_call_reply
from support import KEY_ENV, git

from evalspec import api
from evalspec._runner import RunOptions
from evalspec._suite.model import Suite
from evalspec._tools.environment import Conversation, Conversations
from evalspec._tools.simulated import ToolSimulator
from evalspec.api import load_suite

DATA = Path(__file__).resolve().parent / "data" / "tau_retail"
WORLD: dict[str, Any] = json.loads((DATA / "world.json").read_text(encoding="utf-8"))
GOLD: list[dict[str, Any]] = json.loads((DATA / "gold.json").read_text(encoding="utf-8"))
Action = tuple[str, dict[str, Any]]
REASONS = ["no longer needed", "ordered by mistake"]


def _reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tau_retail_reference", DATA / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REFERENCE = _reference()


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


EXPRESSED = (
    "find_user_id_by_email",
    "find_user_id_by_name_zip",
    "get_user_details",
    "get_order_details",
    "get_product_details",
    "cancel_pending_order",
    "modify_pending_order_address",
    "modify_pending_order_payment",
    "modify_user_address",
    "return_delivered_order_items",
    "think",
    "transfer_to_human_agents",
)


def test_the_yaml_has_exactly_the_tools_it_claims(suite: Suite) -> None:
    assert sorted(t.name for t in suite.tools) == sorted(EXPRESSED)
    assert set(EXPRESSED) < set(REFERENCE.TOOLS)


# ---------------------------------------------------------------- the two sides


def reference_call(data: Any, name: str, kwargs: dict[str, Any]) -> tuple[str, Any]:
    """One call of tau-bench's tool, as its env.step makes it: an exception is the observation
    `Error: ...`. Changes `data` in place, as tau-bench does."""
    try:
        text = REFERENCE.TOOLS[name](data, **copy.deepcopy(kwargs))
    except Exception as exc:  # as tau_bench/envs/base.py does
        text = f"Error: {exc}"
    if text.startswith("Error: "):
        return ("error", text[len("Error: ") :])
    try:
        return ("ok", json.loads(text))
    except ValueError:
        return ("ok", text)


def declared_call(conversation: Conversation, name: str, kwargs: dict[str, Any]) -> tuple[str, Any]:
    result = conversation.act(name, copy.deepcopy(kwargs), json.dumps(kwargs))
    assert result is not None, f"{name} has no behavior"
    return ("error", result.error) if result.error is not None else ("ok", result.output)


_OPENERS: dict[int, tuple[Suite, Conversations]] = {}


def open_conversation(suite: Suite, tmp: Path) -> Conversation:
    """A fresh conversation on the suite's state (one simulator for all: it compiles the
    tools' schemas once)."""
    known = _OPENERS.get(id(suite))
    if known is None or known[0] is not suite:
        known = _OPENERS[id(suite)] = (suite, Conversations(suite, ToolSimulator(suite.tools, tmp)))
    return known[1].open(suite.cases[0])


# ---------------------------------------------------------------- judging a difference


def _items_ok(order: dict[str, Any], item_ids: list[str]) -> bool:
    held = Counter(item["item_id"] for item in order["items"])
    return all(n <= held[i] for i, n in Counter(item_ids).items())


def limit_hit(world: Any, name: str, kwargs: dict[str, Any]) -> str | None:
    """The documented limit this call runs into, judged on tau-bench's world before it; None
    when the YAML claims to do exactly what tau-bench does."""
    order = world["orders"].get(kwargs.get("order_id", ""))
    if name == "find_user_id_by_email":
        emails = [u["email"] for u in world["users"].values()]
        if kwargs["email"] not in emails and kwargs["email"].lower() in map(str.lower, emails):
            return CASE
    if name == "find_user_id_by_name_zip":
        exact = [(u["name"]["first_name"], u["name"]["last_name"]) for u in world["users"].values()]
        if (kwargs["first_name"], kwargs["last_name"]) not in exact:
            return CASE
    if name == "cancel_pending_order" and kwargs["reason"] not in REASONS:
        return "schema: the parameters' enum refuses the reason before the tool runs"
    pending = order is not None and order["status"] == "pending"
    if name == "cancel_pending_order" and pending and len(order["payment_history"]) > 1:
        return FIRST  # after modify_pending_order_payment
    if name == "return_delivered_order_items" and order and order["status"] == "delivered":
        methods = world["users"][order["user_id"]]["payment_methods"]
        method = kwargs["payment_method_id"]
        original = order["payment_history"][0]["payment_method_id"]
        if method in methods and ("gift_card" in method or method == original):
            if not _items_ok(order, kwargs["item_ids"]):
                return "return: no per-item check of the item ids against the order"
            if kwargs["item_ids"] != sorted(kwargs["item_ids"]):
                return "return: item ids are stored as given, not sorted"
    return None


def compare(suite: Suite, tmp: Path, actions: list[Action]) -> tuple[str, str | None]:
    """Both sides, call by call: ("agree", None); ("limit", which) at the first difference,
    when a documented limit explains it; else ("defect", what differs)."""
    data = copy.deepcopy(WORLD)
    conversation = open_conversation(suite, tmp)
    for i, (name, kwargs) in enumerate(actions):
        limit = limit_hit(data, name, kwargs)
        theirs = reference_call(data, name, kwargs)
        ours = declared_call(conversation, name, kwargs)
        if theirs != ours or data != conversation.snapshot():
            if limit is not None:
                return "limit", limit
            what = "answers" if theirs != ours else "worlds after it"
            return "defect", f"call {i} {name}({kwargs}): the {what} differ: {theirs} / {ours}"
    return "agree", None


# ---------------------------------------------------------------- tau-bench's own tasks


def gold_sequences() -> list[tuple[int, list[Action], int]]:
    """(task index, the gold actions of tools the YAML has, how many it left out)."""
    out = []
    for task in GOLD:
        actions = [(a["name"], a["kwargs"]) for a in task["actions"]]
        kept = [a for a in actions if a[0] in EXPRESSED]
        out.append((task["task"], kept, len(actions) - len(kept)))
    return out


def test_tau_bench_gold_action_sequences_end_in_the_same_world(suite: Suite, tmp_path: Path):
    outcomes = {index: compare(suite, tmp_path, actions) for index, actions, _ in gold_sequences()}
    defects = {i: why for i, (kind, why) in outcomes.items() if kind == "defect"}
    assert not defects
    agree = sorted(i for i, (kind, _) in outcomes.items() if kind == "agree")
    limits = {i: why for i, (kind, why) in outcomes.items() if kind == "limit"}
    assert (len(outcomes), len(agree)) == (23, 23 - len(limits))
    assert limits == GOLD_LIMITS


SORTED = "return: item ids are stored as given, not sorted"
CASE = "find: texts compared with their case"
FIRST = "cancel: refunds the first payment only"
GOLD_LIMITS = {11: SORTED, 13: SORTED}
"""Tasks 11 and 13 return items listed out of order: tau-bench stores them sorted."""


# ---------------------------------------------------------------- random sequences

USERS = sorted(WORLD["users"])
ORDERS = sorted(WORLD["orders"])
PRODUCTS = sorted(WORLD["products"])
ITEMS = sorted({item["item_id"] for o in WORLD["orders"].values() for item in o["items"]})
METHODS = sorted({m for u in WORLD["users"].values() for m in u["payment_methods"]})


def random_action(rng: random.Random, inside: bool) -> Action:
    """One call over the slice's ids (and a few that are not there). `inside`: only arguments
    for which the YAML claims to do exactly what tau-bench does."""
    name = rng.choice(EXPRESSED)
    wanted = {"return_delivered_order_items": "delivered"}.get(name, "pending")
    likely = [o for o in ORDERS if WORLD["orders"][o]["status"] == wanted]
    order_id = rng.choice(likely if rng.random() < 0.7 else [*ORDERS, "#W0000000"])
    order = WORLD["orders"].get(order_id)
    owner = WORLD["users"][order["user_id"]] if order else WORLD["users"][rng.choice(USERS)]
    address = {
        "address1": f"{rng.randint(1, 999)} Elm Street",
        "address2": rng.choice(["", "Suite 4"]),
        "city": rng.choice(["Denver", "Austin"]),
        "state": rng.choice(["CO", "TX"]),
        "country": "USA",
        "zip": f"{rng.randint(10000, 99999)}",
    }
    user = WORLD["users"][rng.choice(USERS)]
    if name == "find_user_id_by_email":
        email = rng.choice([user["email"], "nobody@example.com"])
        if not inside and rng.random() < 0.3:
            email = email.upper()
        return name, {"email": email}
    if name == "find_user_id_by_name_zip":
        first, last = user["name"]["first_name"], user["name"]["last_name"]
        if not inside and rng.random() < 0.3:
            first = first.lower()
        zip_code = rng.choice([user["address"]["zip"], "00000"])
        return name, {"first_name": first, "last_name": last, "zip": zip_code}
    if name == "get_user_details":
        return name, {"user_id": rng.choice([*USERS, "nobody_0000"])}
    if name == "get_order_details":
        return name, {"order_id": order_id}
    if name == "get_product_details":
        return name, {"product_id": rng.choice([*PRODUCTS, *ITEMS[:3]])}
    if name == "cancel_pending_order":
        reasons = REASONS if inside else [*REASONS, "changed my mind"]
        return name, {"order_id": order_id, "reason": rng.choice(reasons)}
    if name == "modify_pending_order_address":
        return name, {"order_id": order_id, **address}
    if name == "modify_user_address":
        return name, {"user_id": rng.choice([*USERS, "nobody_0000"]), **address}
    if name == "return_delivered_order_items":
        held = [item["item_id"] for item in order["items"]] if order else []
        item_ids = rng.sample(held, rng.randint(1, len(held))) if held else ["1234567890"]
        if inside:
            item_ids.sort()
        elif rng.random() < 0.3:
            item_ids.append(rng.choice(ITEMS))  # one the order may not hold
        methods = list(owner["payment_methods"])
        if not inside:
            methods += rng.sample(METHODS, 2)
        return name, {
            "order_id": order_id,
            "item_ids": item_ids,
            "payment_method_id": rng.choice(methods),
        }
    if name == "modify_pending_order_payment":
        methods = list(owner["payment_methods"]) + ([] if inside else rng.sample(METHODS, 1))
        current = order["payment_history"][0]["payment_method_id"] if order else None
        others = [m for m in methods if m != current]
        pick = rng.choice(others if others and rng.random() < 0.8 else methods)
        return name, {"order_id": order_id, "payment_method_id": pick}
    if name == "think":
        return name, {"thought": "The order is pending, so it can be cancelled."}
    return name, {"summary": "The user wants a refund to another card."}


def random_sequences(seed: int, count: int, length: int, inside: bool) -> list[list[Action]]:
    rng = random.Random(seed)
    return [[random_action(rng, inside) for _ in range(length)] for _ in range(count)]


def test_random_calls_within_the_language_agree_call_by_call(suite: Suite, tmp_path: Path):
    sequences = random_sequences(22, 300, 8, inside=True)
    outcomes = Counter(compare(suite, tmp_path, s) for s in sequences)
    assert outcomes == Counter({("agree", None): 300})
    calls = Counter(name for s in sequences for name, _ in s)
    assert set(calls) == set(EXPRESSED)  # every tool was exercised


def test_random_calls_outside_it_differ_only_at_a_documented_limit(suite: Suite, tmp_path: Path):
    sequences = random_sequences(7, 300, 8, inside=False)
    outcomes = Counter(compare(suite, tmp_path, s) for s in sequences)
    defects = [why for (kind, why) in outcomes if kind == "defect"]
    assert not defects
    limits = {why: n for (kind, why), n in outcomes.items() if kind == "limit"}
    assert set(limits) == {
        SORTED,
        CASE,
        "return: no per-item check of the item ids against the order",
        "schema: the parameters' enum refuses the reason before the tool runs",
    }
    assert outcomes["agree", None] > 150


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
    data = copy.deepcopy(WORLD)
    for name, kwargs in _kept(task):
        reference_call(data, name, kwargs)
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
    done = subprocess.run(
        [sys.executable, "-m", "evalspec", "review", "--base-ref", "main", "--json"],
        capture_output=True,
        text=True,
        cwd=repo,
        timeout=300,
        env={**os.environ, KEY_ENV: ""},
    )
    assert done.returncode in (0, 1, 3), done.stderr
    (reviewed,) = json.loads(done.stdout)["suites"]
    stale = {(c["case"], c["model"]) for c in reviewed["changes"] if c["stale"]}
    # Task 17 cancels nothing; the careless agent of task 66 left its one cancel out.
    assert stale == {("task 32", "good"), ("task 32", "careless"), ("task 66", "good")}
    good32 = next(c for c in reviewed["changes"] if (c["case"], c["model"]) == ("task 32", "good"))
    assert good32["named"] == ["tool cancel_pending_order effects[0] changed"]
    # Replayed, the renamed refund no longer leaves the world τ-bench's gold calls leave.
    assert (good32["before"]["status"], good32["after"]["status"]) == ("pass", "fail")


def test_cancel_after_a_payment_change_refunds_only_the_first_payment(
    suite: Suite, tmp_path: Path
) -> None:
    """The one documented limit of cancel_pending_order, shown: τ-bench refunds each of the
    three payment records a payment change leaves, the YAML only the first."""
    sequence = None
    for order_id in ORDERS:
        for method in METHODS:
            change = (
                "modify_pending_order_payment",
                {"order_id": order_id, "payment_method_id": method},
            )
            if reference_call(copy.deepcopy(WORLD), *change)[0] == "ok":
                sequence = [
                    change,
                    ("cancel_pending_order", {"order_id": order_id, "reason": REASONS[0]}),
                ]
                break
        if sequence:
            break
    assert sequence is not None
    assert compare(suite, tmp_path, sequence[:1]) == ("agree", None)
    assert compare(suite, tmp_path, sequence) == ("limit", FIRST)
    data = copy.deepcopy(WORLD)
    theirs = [reference_call(data, name, kwargs) for name, kwargs in sequence][-1][1]
    conversation = open_conversation(suite, tmp_path)
    ours = [declared_call(conversation, name, kwargs) for name, kwargs in sequence][-1][1]
    kinds = [p["transaction_type"] for p in theirs["payment_history"]]
    assert kinds == ["payment", "payment", "refund", "refund", "refund", "refund"]
    assert [p["transaction_type"] for p in ours["payment_history"]] == kinds[:4]
