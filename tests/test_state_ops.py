"""The state language on lists of items: several lists walked in step, items checked and
changed one by one, sums, sorting, texts matched whatever their case, a mapping built.

Each is shown on a small shop (the kind of tool τ-bench's retail world needs: return these
items, swap each for another variant and settle the difference), through a real `evalspec run`
against a scripted model, and attacked: a suite that misuses one is refused with its place and
a fix (exit 2), and a model's arguments or a pull request's tool that would make a call work for
long or without end stop at a limit, as the call's error, with the state unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply, text_reply, tool_call_reply
from support import Called, call_tool, git, in_process, review_offline

from evalspec import api
from evalspec.records import Transcript

KEY_ENV = "EVALSPEC_TEST_KEY"
MAX_WALK_ITEMS = 1_000
"""Items of one list a walk goes through (docs/security.md)."""
MAX_CALL_STEPS = 1_000_000
"""Items walked and records scanned by one call in all (docs/security.md)."""

SHOP = {
    "orders": {
        "o1": {
            "status": "delivered",
            "items": [
                {"item_id": "mug-red", "product": "mug", "price": 10.1},
                {"item_id": "mug-red", "product": "mug", "price": 10.1},
                {"item_id": "tee-s", "product": "tee", "price": 20.2},
            ],
        }
    },
    "products": {
        "mug": {"name": "Mug", "variants": {"mug-red": 10.1, "mug-blue": 12.3}},
        "tee": {"name": "Tee", "variants": {"tee-s": 20.2, "tee-m": 19.9}},
    },
    "users": {"u1": {"email": "Ann.Lee@Example.com"}, "u2": {"email": "bob@example.com"}},
}

SWAP = {
    "let": {
        "old_items": {
            "$each": "${args.item_ids}",
            "$do": {
                "$select": "/orders/o1/items",
                "$where": {"item_id": "${each}"},
                "$first": True,
            },
        },
        "difference": {
            "$calc": "sum(differences)",
            "$with": {
                "differences": {
                    "$each": {"item": "${let.old_items}", "new": "${args.new_ids}"},
                    "$do": {
                        "$calc": "${state/products/${each.item/product}/variants/${each.new}}"
                        " - ${each.item/price}"
                    },
                }
            },
        },
    },
    "preconditions": [
        {
            "for_each": {"item_id": "${args.item_ids}"},
            "checks": [
                {
                    "value": {
                        "$calc": "len(asked)",
                        "$with": {
                            "asked": {"$select": "${args.item_ids}", "$where": "${each.item_id}"}
                        },
                    },
                    "max": {
                        "$calc": "len(held)",
                        "$with": {
                            "held": {
                                "$select": "/orders/o1/items",
                                "$where": {"item_id": "${each.item_id}"},
                            }
                        },
                    },
                    "error": "${each.item_id} not found",
                }
            ],
        },
        {
            "for_each": {"item": "${let.old_items}", "new": "${args.new_ids}"},
            "checks": [
                {
                    "path": "/products/${each.item/product}/variants/${each.new}",
                    "exists": True,
                    "error": "no variant ${each.new}",
                }
            ],
        },
    ],
    "effects": [
        {"set": "/orders/o1/difference", "value": {"$calc": "round(${let.difference}, 2)"}},
        {"set": "/orders/o1/swapped", "value": {"$sorted": "${args.item_ids}"}},
        {
            "set": "/orders/o1/kind",
            "value": {
                "$if": {"value": "${let.difference}", "max": 0},
                "$then": "refund",
                "$else": "charge",
            },
        },
        # let values are computed on the state the call found: the items before the swap
        {
            "for_each": {"item": "${let.old_items}", "new": "${args.new_ids}"},
            "set": "/orders/o1/items",
            "where": {"item_id": "${each.item/item_id}"},
            "first": True,
            "at": "/item_id",
            "value": "${each.new}",
        },
    ],
    "response": "${state/orders/o1}",
}


def call(behavior: dict[str, Any], args: dict[str, Any], state: Any = None) -> Called:
    """A tool with this behaviour called once by hand on `state` (by default the shop)."""
    return call_tool({"behavior": behavior}, SHOP if state is None else state, args)


def test_each_item_is_checked_and_changed_in_turn_and_the_difference_summed() -> None:
    out = call(
        SWAP,
        {"item_ids": ["tee-s", "mug-red", "mug-red"], "new_ids": ["tee-m", "mug-blue", "mug-red"]},
    )
    assert out.error is None, out.error
    order = out.state["orders"]["o1"]
    # the first mug-red became mug-blue; the second, met again, is swapped for itself
    assert [i["item_id"] for i in order["items"]] == ["mug-blue", "mug-red", "tee-m"]
    assert order["difference"] == round(0 + (19.9 - 20.2) + (12.3 - 10.1) + (10.1 - 10.1), 2)
    assert order["swapped"] == ["mug-red", "mug-red", "tee-s"]
    assert order["kind"] == "charge"
    assert SHOP["orders"]["o1"]["items"][0]["item_id"] == "mug-red"  # never changed in place


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"item_ids": ["tee-s", "tee-s"], "new_ids": ["tee-m", "tee-m"]}, "tee-s not found"),
        ({"item_ids": ["mug-red", "hat"], "new_ids": ["mug-blue", "x"]}, "hat not found"),
        (
            {"item_ids": ["mug-red", "tee-s"], "new_ids": ["mug-blue", "tee-xl"]},
            "no variant tee-xl",
        ),
        (
            {"item_ids": ["mug-red"], "new_ids": ["mug-blue", "tee-m"]},
            "for_each walks lists of different lengths: item (1 items) and new (2 items)",
        ),
    ],
)
def test_the_first_item_that_fails_is_the_error_and_nothing_changes(
    args: dict[str, Any], error: str
) -> None:
    out = call(SWAP, args)
    assert out.error == error
    assert out.state == SHOP


FIND = {
    "response": {
        "$select": "/users",
        "$where": {"email": "${args.email}"},
        "$first": True,
        "$key": True,
        "$ignore_case": True,
    }
}
"""The key of the user with an e-mail, whatever its case."""


def test_texts_match_whatever_their_case_with_ignore_case() -> None:
    find = FIND
    assert call(find, {"email": "ann.lee@example.COM"}).output == "u1"
    exact = {"response": {**find["response"], "$ignore_case": False}}
    assert call(exact, {"email": "ann.lee@example.COM"}).output is None


def test_a_mapping_is_built_from_records_and_sorted_by_key() -> None:
    """A plain LIST and `{NAME: LIST}` are the same walk: `${each}` or `${each.NAME}`."""
    for walk, item in (("${state/products}", "each"), ({"p": "${state/products}"}, "each.p")):
        listing = {
            "response": {
                "$sorted": {
                    "$each": walk,
                    "$key": "${" + item + "/name}",
                    "$do": {"$calc": "len(${" + item + "/variants})"},
                }
            }
        }
        out = call(listing, {})
        assert list(out.output.items()) == [("Mug", 2), ("Tee", 2)]


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("(10.1 - 3) * 2 / 4", round((10.1 - 3) * 2 / 4, 2)),
        ("7 // 2", 3.0),
        ("1.5 / 0", "float division by zero"),
        ("__import__('os')", "invalid characters in expression"),
        ("7 % 2", "invalid characters in expression"),
        ("-" * 500 + "1", None),
    ],
)
@pytest.mark.timeout(20)
def test_a_calculator_takes_a_calculators_keys_and_words_errors_as_python(
    text: str, answer: Any
) -> None:
    """τ-bench's calculate: only digits, + - * / ( ) . and spaces, then arithmetic (never run);
    Python's own words for a division by zero. (The grammar: test_state_compute.py.)"""
    calc = {
        "let": {"result": {"$calc": "${args.expression}"}},
        "response": {"$calc": "round(float(${let.result}), 2)"},
    }
    out = call(calc, {"expression": text})
    if answer is None:
        assert out.error is not None
        assert "not an arithmetic expression" in out.error or "more than" in out.error
    elif isinstance(answer, str):
        assert out.error == answer
    else:
        assert (out.error, out.output) == (None, answer)


@pytest.mark.timeout(60)
def test_a_for_each_inside_a_for_each_stops_at_the_calls_steps() -> None:
    """A thousand ids, each scanned against a thousand: a million steps, refused at the
    limit, not run for minutes."""
    ids = [str(i) for i in range(MAX_WALK_ITEMS)]
    square = {
        "response": {
            "$each": {"a": "${args.ids}"},
            "$do": {
                "$calc": "len(same)",
                "$with": {"same": {"$select": "${args.ids}", "$where": "${each.a}"}},
            },
        }
    }
    out = call(square, {"ids": ids})
    assert out.error == f"the call would walk or scan more than {MAX_CALL_STEPS} items and records"
    over = call(square, {"ids": [*ids, "x"]})
    assert over.error == f"for_each a: {MAX_WALK_ITEMS + 1} items; the limit is {MAX_WALK_ITEMS}"


@pytest.mark.parametrize(
    ("operator", "error"),
    [
        ({"$calc": "sum(${args.texts})"}, "'1' is not a number"),
        ({"$sorted": ["b", 1]}, "$sorted: the list must hold only texts or only numbers"),
        ({"$calc": "len(${args.n})"}, "len takes one list, mapping or text"),
        ({"$calc": "1e308 * 10"}, "the result is not a finite number"),
        ({"$each": {"x": "${args.n}"}, "$do": 1}, "for_each x needs a list, not 5"),
        ({"$each": "${args.n}", "$do": 1}, "for_each needs a list, not 5"),
        (
            {"$each": "${args.texts}", "$key": "${each}", "$do": 1},
            "$each's $key is 2; a mapping's key must be text",
        ),
    ],
)
def test_a_computed_value_given_the_wrong_kind_of_value_is_the_calls_error(
    operator: dict[str, Any], error: str
) -> None:
    out = call(
        {"effects": [{"set": "/x", "value": operator}]}, {"n": 5, "texts": ["1", 2]}, {"x": 0}
    )
    assert (out.error, out.state) == (error, {"x": 0})


# ---------------------------------------------------------------- through the commands

TOOL = """\
suite: ops
models: [{{name: m, model: fake-m, base_url: "{url}", api_key_env: {key}}}]
run: {{retries: 0, timeout: 10, max_turns: 4}}
state: {state}
tools:
  - name: swap
    description: Swap items of order o1 for other variants.
    parameters:
      type: object
      properties:
        item_ids: {{type: array, items: {{type: string}}}}
        new_ids: {{type: array, items: {{type: string}}}}
      required: [item_ids, new_ids]
    behavior: {behavior}
cases:
  - name: swap a mug
    user: swap my red mug for a blue one
    expect:
      state: {{/orders/o1/items/0/item_id: mug-blue, /orders/o1/difference: 2.2}}
"""


def shop_suite(folder: Path, url: str, behavior: dict[str, Any] = SWAP) -> Path:
    path = folder / "ops.yaml"
    text = TOOL.format(url=url, key=KEY_ENV, state=json.dumps(SHOP), behavior=json.dumps(behavior))
    path.write_text(text, encoding="utf-8")
    return path


def swapper(body: dict[str, Any]) -> Reply:
    if body["messages"][-1]["role"] == "tool":
        return text_reply("Swapped.")
    return tool_call_reply("swap", {"item_ids": ["mug-red"], "new_ids": ["mug-blue"]})


def test_a_run_swaps_an_item_and_is_judged_on_the_world_it_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-ops-0000")
    with FakeOpenAI(swapper) as server:
        path = shop_suite(tmp_path, server.base_url)
        done = in_process("run", path, "--out", tmp_path / "out", env={KEY_ENV: "sk-test-ops-0000"})
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = (tmp_path / "out" / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    state = json.loads(line)["state"]
    assert [i["item_id"] for i in state["orders"]["o1"]["items"]] == [
        "mug-blue",
        "mug-red",
        "tee-s",
    ]
    assert state["orders"]["o1"]["kind"] == "charge"


MISUSES = [
    (
        '"value": "${each.new}"',
        '"value": "${each.old}"',
        "${each.old} reads the item 'old', but no for_each or $each around it names one",
        "for_each: {old: LIST}",
    ),
    ('"$then": "refund"', '"$than": "refund"', "unknown key '$than' in a $if", "a $if takes"),
    ('"first": true', '"first": "yes"', "first is true or false, beside where", "first: true"),
    (
        '"for_each": {"item_id": "${args.item_ids}"}',
        '"for_each": {"item id": "${args.item_ids}"}',
        "'item id' cannot name an item",
        "for_each: {item_id:",
    ),
    (
        '"$calc": "len(asked)"',
        '"$calc": "len(asked) if 1 else 0"',
        "IfExp is not arithmetic",
        "$with names",
    ),
]


@pytest.mark.parametrize(("old", "new", "message", "fix"), MISUSES)
def test_a_misused_operator_is_refused_with_its_place_and_a_fix(
    tmp_path: Path, old: str, new: str, message: str, fix: str
) -> None:
    path = shop_suite(tmp_path, "http://127.0.0.1:9")
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    done = in_process("validate", path)
    assert done.returncode == 2, done.stdout + done.stderr
    out = " ".join((done.stdout + done.stderr).split())
    assert "Traceback" not in out
    line = text.splitlines().index("    behavior: " + json.dumps(SWAP)) + 1
    assert f"{path.name}:{line}:" in out  # the behavior's line (one JSON line here), a column
    assert message in out and fix in out, out


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_pull_request_whose_tool_walks_without_end_is_reviewed_offline_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pull request makes the swap tool walk every pair of a thousand items for each item:
    review replays the recorded call through it, which stops at the call's steps (the replayed
    call's error), and the review says the conversation changed, in bounded time."""
    monkeypatch.setenv(KEY_ENV, "sk-test-ops-0000")
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    with FakeOpenAI(swapper) as server:
        path = shop_suite(repo / "suites", server.base_url)
        text = path.read_text(encoding="utf-8").replace("run: {", "run: {recordings: rec.jsonl, ")
        path.write_text(text, encoding="utf-8")
        done = in_process("run", path, "--out", tmp_path / "out", env={KEY_ENV: "sk-test-ops-0000"})
    assert done.returncode == 0, done.stdout + done.stderr
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    big = json.dumps({**SHOP, "big": list(range(MAX_WALK_ITEMS))})
    walk = {
        "for_each": {"a": "${state/big}"},
        "checks": [
            {
                "value": {
                    "$calc": "len(pairs)",
                    "$with": {"pairs": {"$each": {"b": "${state/big}"}, "$do": 0}},
                },
                "min": 0,
            }
        ],
    }
    hostile = {**SWAP, "preconditions": [*SWAP["preconditions"], walk]}
    text = path.read_text(encoding="utf-8").replace(json.dumps(SHOP), big)
    path.write_text(text.replace(json.dumps(SWAP), json.dumps(hostile)), encoding="utf-8")
    git(repo, "commit", "-q", "-am", "a tool that walks a million pairs")
    done = review_offline(repo, KEY_ENV)
    assert "Traceback" not in done.stderr
    assert done.returncode in (1, 3), done.stdout + done.stderr
    (reviewed,) = json.loads(done.stdout)["suites"]
    (change,) = reviewed["changes"]
    assert change["stale"] and change["after"]["status"] == "fail", change


def test_ignore_case_finds_the_same_record_once_the_records_are_indexed() -> None:
    """A mapping scanned again is looked up in an index: one keyed by lowercased texts for
    `$ignore_case`, never the exact one (and the exact one never the folded)."""
    users = {f"u{i}": {"email": f"Person.{i}@Example.com", "zip": str(i)} for i in range(40)}
    state = {"users": users}
    find = FIND
    exact = {"response": {**find["response"], "$ignore_case": False}}
    asked = ["person.7@example.com", "PERSON.31@EXAMPLE.COM", "Person.7@Example.com", "nobody"]
    for _ in range(3):  # the second scan builds the index, the third reads it
        assert [call(find, {"email": e}, state).output for e in asked] == ["u7", "u31", "u7", None]
        assert [call(exact, {"email": e}, state).output for e in asked] == [None, None, "u7", None]


def test_the_schema_accepts_the_operators_and_flags_a_misused_key(tmp_path: Path) -> None:
    """Editors complete from the schema: a suite using every new key is valid there, and a
    `first:` that is not true/false is flagged at its place, as validate refuses it."""
    import yaml
    from jsonschema import Draft202012Validator

    checker = Draft202012Validator(api.suite_schema())
    path = shop_suite(tmp_path, "http://127.0.0.1:9")
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert [e.message for e in checker.iter_errors(doc)] == []
    doc["tools"][0]["behavior"]["effects"][-1]["first"] = "yes"
    errors = ["/".join(map(str, e.absolute_path)) for e in checker.iter_errors(doc)]
    assert errors == ["tools/0/behavior/effects/3/first"]


def test_an_item_read_in_the_answer_is_not_taken_for_a_place_an_effect_changed(
    tmp_path: Path,
) -> None:
    """`${each.p/name}` reads an item, not the state's /name: an effect setting /name does not
    make validate warn that the answer reads it after it changed."""
    behavior = {
        "effects": [
            {"for_each": {"p": "${state/orders}"}, "set": "/name", "value": "${each.p/name}"}
        ],
        "response": {"$each": {"p": "${state/orders}"}, "$do": "${each.p/name}"},
    }
    path = shop_suite(tmp_path, "http://127.0.0.1:9", behavior)
    done = in_process("validate", path)
    assert (done.returncode, "warning" in done.stdout + done.stderr) == (0, False), done.stdout


def test_review_names_a_changed_computed_value_as_the_suite_writes_it(tmp_path: Path) -> None:
    written = {"$calc": "sum(x)", "$with": {"x": {"$select": "${args.ids}"}}}
    listing = {"$each": {"p": "${state/ps}"}, "$do": "${state/n}", "$key": "${args.k}"}
    plain = {"$sorted": {"$each": "${state/ps}", "$do": "${each/n}"}}
    versions = []
    for i, response in enumerate((written, listing, plain)):
        path = tmp_path / f"v{i}.yaml"
        versions.append(path)
        tool = {"name": "t", "parameters": {"type": "object", "properties": {"ids": {}, "k": {}}}}
        suite = {
            "suite": "s",
            "models": ["m"],
            "state": {"ps": [{"n": 1}], "n": 2},
            "tools": [{**tool, "behavior": {"response": response}}],
            "cases": [{"name": "c", "user": "hi", "expect": {"tool_calls": [{"tool": "t"}]}}],
        }
        path.write_text(json.dumps(suite), encoding="utf-8")
    ran = [Transcript(item_id="i", case="c", model="m")]
    for (before, after), (old, new) in zip(
        [(versions[0], versions[1]), (versions[1], versions[2])],
        [(written, listing), (listing, plain)],
        strict=True,
    ):
        changes = api.diff(before, after, ran).suite_changes
        shown = f"{json.dumps(old, sort_keys=True)} -> {json.dumps(new, sort_keys=True)}"
        assert f"tool t · response: {shown}" in changes, changes
        assert not any("frozenset" in line or "arguments" in line for line in changes), changes


@pytest.mark.timeout(60)
def test_the_calls_steps_count_its_let_values_checks_and_effects_together() -> None:
    """Each part walks 600 x 600 = 360,000 pairs: under the call's 1,000,000 alone, past it
    together (a let value, then a precondition, then the answer)."""
    ids = [str(i) for i in range(600)]
    pairs = {
        "$calc": "len(same)",
        "$with": {
            "same": {"$each": "${args.ids}", "$do": {"$select": "${args.ids}", "$where": "${each}"}}
        },
    }
    one = call({"response": pairs}, {"ids": ids})
    assert (one.error, one.output) == (None, 600)
    three = {
        "let": {"n": pairs},
        "preconditions": [{"value": pairs, "min": "${let.n}"}],
        "response": pairs,
    }
    out = call(three, {"ids": ids})
    assert out.error == f"the call would walk or scan more than {MAX_CALL_STEPS} items and records"
