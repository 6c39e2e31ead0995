"""Plan item ids are content ids: same request, same id; scoring edits never change an id.

Each test edits a temporary copy of suites/slack.yaml as text, the way a person edits a suite,
and compares the ids of every (case, model, trial) before and after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalspec.api import compile_plan, load_suite

ROOT = Path(__file__).resolve().parents[1]
SLACK = (ROOT / "suites" / "slack.yaml").read_text(encoding="utf-8")

Ids = dict[tuple[str, str, int], str]


def _ids_of(text: str, where: Path, trials: int | None = None) -> Ids:
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(text, encoding="utf-8")
    plan = compile_plan(load_suite(where), trials=trials)
    return {(it.case.name, it.model.name, it.trial): it.id for it in plan.items}


def _edit(old: str, new: str, text: str = SLACK) -> str:
    assert text.count(old) == 1, f"{old!r} must occur once in the suite"
    return text.replace(old, new)


@pytest.fixture
def base(tmp_path: Path) -> Ids:
    return _ids_of(SLACK, tmp_path / "a" / "slack.yaml")


def test_two_loads_give_the_same_ids(tmp_path: Path, base: Ids) -> None:
    assert _ids_of(SLACK, tmp_path / "a" / "slack.yaml") == base
    assert len(set(base.values())) == len(base) == 6


def test_ids_do_not_depend_on_the_file_path(tmp_path: Path, base: Ids) -> None:
    assert _ids_of(SLACK, tmp_path / "elsewhere" / "renamed.yaml") == base


USER_NAME_PARAM = (
    "        user_name: {type: string, description: The Slack username of the person to message.}\n"
)
MESSAGE_PARAM = "        message: {type: string, description: The text of the message.}\n"


def test_ids_do_not_depend_on_key_order(tmp_path: Path, base: Ids) -> None:
    text = _edit(USER_NAME_PARAM + MESSAGE_PARAM, MESSAGE_PARAM + USER_NAME_PARAM)
    text = _edit(
        "    params: {temperature: 0, seed: 7}", "    params: {seed: 7, temperature: 0}", text
    )
    assert _ids_of(text, tmp_path / "b" / "slack.yaml") == base


@pytest.mark.slow
def test_ids_are_the_same_in_another_process(tmp_path: Path, base: Ids) -> None:
    path = tmp_path / "a" / "slack.yaml"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-m", "evalspec", "plan", str(path), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tmp_path,
    ).stdout
    items = json.loads(out)["items"]
    assert {(i["case"], i["model"], i["trial"]): i["id"] for i in items} == base


SCORING_EDITS = {
    "threshold": ("  fail_threshold: 0.85", "  fail_threshold: 0.5"),
    "critic": ("  user_name: binary ", "  user_name: exact "),
    "critic option": ("{similarity: 0.75, weight: 0.5}", "{similarity: 0.6, weight: 0.5}"),
    "weight": ("{similarity: 0.75, weight: 0.5}", "{similarity: 0.75, weight: 3}"),
    "case critic": ("threshold: 0.95}}", "threshold: 0.5}}"),
    "expected args": (
        '{user_name: johndoe, message: "Hello, can we meet at 3 PM?"}',
        '{user_name: johndoe, message: "Hi, 3 PM?"}',
    ),
    "expected tool": (
        "- get_messages_in_channel: {channel_name: general, limit: 2}",
        "- list_users: {limit: 2}",
    ),
    "simulated response": ('ts: "1712345678.000200"', 'ts: "1000000000.000000"'),
    "simulated error": ("- error: channel_not_found", "- error: no_such_channel"),
    "final answer check": ("contains: [lunch]", "contains: [noon]"),
}


@pytest.mark.parametrize("edit", sorted(SCORING_EDITS))
def test_scoring_edits_leave_every_id_unchanged(tmp_path: Path, base: Ids, edit: str) -> None:
    old, new = SCORING_EDITS[edit]
    edited = _ids_of(_edit(old, new), tmp_path / "b" / "slack.yaml")
    assert edited == base


def test_editing_one_user_message_changes_only_that_cases_ids(tmp_path: Path, base: Ids) -> None:
    text = _edit(
        "What are the last 2 messages in #general?", "What are the last 3 messages in #general?"
    )
    edited = _ids_of(text, tmp_path / "b" / "slack.yaml")
    changed = {k for k in base if edited[k] != base[k]}
    assert changed == {("read the general channel", "gpt-4o-mini", 0)}


def test_editing_a_matrix_row_changes_only_that_rows_ids(tmp_path: Path, base: Ids) -> None:
    text = _edit('text: "Lunch at noon"', 'text: "Lunch at one"')
    edited = _ids_of(text, tmp_path / "b" / "slack.yaml")
    changed = {k for k in base if edited.get(k) != base[k]}
    assert changed == {("post to general", "gpt-4o-mini", 0)}


def test_matrix_rows_get_distinct_ids(base: Ids) -> None:
    assert (
        base[("post to announcements", "gpt-4o-mini", 0)]
        != base[("post to general", "gpt-4o-mini", 0)]
    )


TWO_MODELS = _edit(
    "    params: {temperature: 0, seed: 7}\n",
    "    params: {temperature: 0, seed: 7}\n"
    "  - name: warm\n"
    "    model: gpt-4o-mini\n"
    "    params: {temperature: 0.7, seed: 7}\n",
)


def test_changing_model_params_changes_only_that_models_ids(tmp_path: Path) -> None:
    before = _ids_of(TWO_MODELS, tmp_path / "a" / "slack.yaml")
    after = _ids_of(
        _edit(
            "params: {temperature: 0.7, seed: 7}", "params: {temperature: 1.0, seed: 7}", TWO_MODELS
        ),
        tmp_path / "b" / "slack.yaml",
    )
    changed = {k for k in before if after[k] != before[k]}
    assert changed == {k for k in before if k[1] == "warm"}
    assert len(changed) == 6
    # Same model id, different params: different requests, different ids.
    for case, _, trial in changed:
        assert before[(case, "warm", trial)] != before[(case, "gpt-4o-mini", trial)]


def test_trial_index_changes_ids_and_first_trial_keeps_its_id(tmp_path: Path, base: Ids) -> None:
    three = _ids_of(SLACK, tmp_path / "a" / "slack.yaml", trials=3)
    assert len(set(three.values())) == len(three) == 18
    for (case, model, trial), item_id in base.items():
        assert three[(case, model, trial)] == item_id


def _whole_payload_key(model, messages: list, tools: list, trial: int) -> str:
    """The key as documented: sha256 of the whole request payload, keys sorted."""
    import hashlib

    payload = {"v": 1, "model": model.model, "params": model.params, "messages": messages}
    payload |= {"tools": tools, "trial": trial}
    if model.provider != "openai":
        payload["provider"] = model.provider
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_request_keys_are_the_hash_of_the_whole_payload(tmp_path: Path, provider: str) -> None:
    import dataclasses

    text = _edit("saying 'Hello, can we meet at 3 PM?'", "saying 'Hello — ünïcode \\u00e9 \"x\"?'")
    where = tmp_path / "slack.yaml"
    where.write_text(text, encoding="utf-8")
    suite = load_suite(where)
    suite = dataclasses.replace(
        suite,
        models=tuple(
            dataclasses.replace(m, provider=provider, params={"temperature": 0.5, "é": [1, None]})
            for m in suite.models
        ),
    )
    plan = compile_plan(suite, trials=2)
    assert len({it.first_key for it in plan.items}) == len(plan.items)
    for it in plan.items:
        expected = _whole_payload_key(it.model, list(it.messages), list(it.tools), it.trial)
        assert it.first_key == expected
