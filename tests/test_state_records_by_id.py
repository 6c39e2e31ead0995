"""What a real domain's world needs of the state language (tau-bench's retail world showed it,
tests/test_tau_retail.py): records kept in a mapping by id and read through another record's
field (`${state/users/${state/orders/${args.order_id}/user_id}}`), either-or preconditions
(`any_of`), money that stays in cents (`increment` with `round`), and effects on the values of
a mapping that match (`where` on a mapping)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from support import Called, call_tool, evalspec_cli

from evalspec.errors import SpecError

SHOP: dict[str, Any] = {
    "users": {
        "ann_1": {
            "name": "Ann",
            "payment_methods": {
                "gift_card_1": {"id": "gift_card_1", "source": "gift_card", "balance": 32.94},
                "card_7": {"id": "card_7", "source": "credit_card"},
            },
        },
        "a/b": {"name": "a key with a slash", "payment_methods": {}},
    },
    "orders": {
        "#W1": {"user_id": "ann_1", "status": "pending", "paid": 49.8, "method": "gift_card_1"},
        "#W2": {"user_id": "ann_1", "status": "delivered", "paid": 10.0, "method": "card_7"},
        "#W3": {"user_id": "bob_9", "status": "pending", "paid": 1.0, "method": "gift_card_1"},
    },
}


def call(behavior: dict[str, Any], arguments: dict[str, Any], state: Any = None) -> Called:
    """A tool with this behaviour, called once by hand on `state` (by default the shop)."""
    return call_tool({"behavior": behavior}, SHOP if state is None else state, arguments)


# ---------------------------------------------------------------- references inside references


def test_a_record_is_read_by_the_id_a_call_names():
    get_user = {
        "preconditions": [{"path": "/users/${args.id}", "exists": True, "error": "no user"}],
        "response": "${state/users/${args.id}}",
    }
    assert call(get_user, {"id": "ann_1"}).output["name"] == "Ann"
    assert call(get_user, {"id": "bob_9"}).error == "no user"
    # The argument fills one key, whatever it holds: it cannot climb or split the path.
    assert call(get_user, {"id": "a/b"}).output["name"] == "a key with a slash"
    assert call(get_user, {"id": ".."}).error == "no user"


def test_a_record_is_read_through_another_records_field():
    owner = {"response": "${state/users/${state/orders/${args.order_id}/user_id}/name}"}
    assert call(owner, {"order_id": "#W1"}).output == "Ann"
    missing = call(owner, {"order_id": "#W3"})  # its user is not in the state
    assert missing.error == "the state has nothing at /users/bob_9/name"
    assert missing.state == SHOP
    text = {"response": "order of ${state/users/${state/orders/${args.order_id}/user_id}/name}"}
    assert call(text, {"order_id": "#W2"}).output == "order of Ann"
    count = {"response": "${count/users/${args.id}/payment_methods}"}
    assert call(count, {"id": "ann_1"}).output == 2


def test_an_effect_writes_where_another_record_points():
    refund = {
        "effects": [
            {
                "increment": "/users/${state/orders/${args.order_id}/user_id}/payment_methods"
                "/${state/orders/${args.order_id}/method}/balance",
                "by": "${state/orders/${args.order_id}/paid}",
                "round": 2,
            }
        ],
        "response": "${state/users/ann_1/payment_methods/gift_card_1/balance}",
    }
    done = call(refund, {"order_id": "#W1"})
    assert done.error is None and done.output == 82.74  # 32.94 + 49.8 is 82.74000000000001
    assert SHOP["users"]["ann_1"]["payment_methods"]["gift_card_1"]["balance"] == 32.94
    failed = call(refund, {"order_id": "#W2"})  # paid by card: no balance to add to
    assert failed.error == "the state has nothing at /users/ann_1/payment_methods/card_7/balance"
    assert failed.state == SHOP


def test_a_literal_dollar_brace_inside_a_pointer_is_refused_not_misread():
    with pytest.raises(SpecError, match=r"cannot hold a literal \$\$\{"):
        call({"response": "${state/odd/$${x}}"}, {})


# ---------------------------------------------------------------- any_of


RETURN = {
    "preconditions": [
        {
            "any_of": [
                {"value": "${args.method}", "contains": "gift_card"},
                {"path": "/orders/${args.order_id}/method", "equals": "${args.method}"},
            ],
            "error": "refund to a gift card or to the original method",
        }
    ],
    "effects": [{"set": "/orders/${args.order_id}/status", "value": "return requested"}],
}


def test_any_of_holds_when_one_alternative_holds():
    assert call(RETURN, {"order_id": "#W2", "method": "card_7"}).error is None  # the original
    assert call(RETURN, {"order_id": "#W2", "method": "gift_card_1"}).error is None
    refused = call(RETURN, {"order_id": "#W2", "method": "card_8"})
    assert refused.error == "refund to a gift card or to the original method"
    assert refused.state == SHOP


def test_any_of_without_an_error_says_why_each_alternative_failed():
    behavior = {"preconditions": [{"any_of": RETURN["preconditions"][0]["any_of"]}]}
    refused = call(behavior, {"order_id": "#W2", "method": "card_8"})
    assert refused.error == (
        'none of these holds: the value has nothing matching "gift_card"; '
        '/orders/#W2/method is "card_7", not "card_8"'
    )


# ---------------------------------------------------------------- where on a mapping


def test_where_on_a_mapping_changes_only_the_values_that_match():
    refund = {
        "effects": [
            {
                "increment": "/users/ann_1/payment_methods",
                "where": {"id": "${args.method}", "source": "gift_card"},
                "at": "/balance",
                "by": "${args.amount}",
                "round": 2,
            }
        ]
    }
    done = call(refund, {"method": "gift_card_1", "amount": 49.8})
    methods = done.state["users"]["ann_1"]["payment_methods"]
    assert methods["gift_card_1"]["balance"] == 82.74
    assert list(methods) == ["gift_card_1", "card_7"]  # keys and their order kept
    card = call(refund, {"method": "card_7", "amount": 5})  # not a gift card: nothing to do
    assert card.error is None and card.state["users"] == SHOP["users"]
    drop = {
        "effects": [{"remove": "/users/ann_1/payment_methods", "where": {"source": "gift_card"}}]
    }
    assert list(call(drop, {}).state["users"]["ann_1"]["payment_methods"]) == ["card_7"]
    not_records = call(
        drop | {"effects": [{**drop["effects"][0], "remove": "/orders/#W1/paid"}]}, {}
    )
    assert not_records.error == "/orders/#W1/paid is not a list or mapping of records"


def test_round_applies_to_a_whole_number_only_as_a_number():
    count = {"effects": [{"increment": "/n", "by": 2, "round": 0}], "response": "${state/n}"}
    assert call(count, {}, {"n": 1}).output == 3
    assert call(count, {}, {"n": 1.25}).output == 3.0


# ---------------------------------------------------------------- mistakes, where written

SUITE = """\
suite: shop
models: [m]
state: {users: {}, orders: {}}
tools:
  - name: refund
    parameters: {type: object, properties: {order_id: {type: string}, method: {type: string}}}
    behavior:
%s
cases:
  - {name: c, user: hi, expect: {no_tool_calls: true}}
"""


def validate(tmp_path: Path, behavior: str) -> tuple[int, str]:
    path = tmp_path / "s.yaml"
    path.write_text(SUITE % behavior, encoding="utf-8")
    done = evalspec_cli(["validate", str(path)])
    assert "Traceback" not in done.output
    return done.exit_code, " ".join(done.output.split())


def test_the_new_forms_validate(tmp_path):
    behavior = """\
      preconditions:
        - any_of:
            - {value: "${args.method}", contains: gift_card}
            - {path: "/orders/${args.order_id}/method", equals: "${args.method}"}
          error: not that method
      effects:
        - increment: /users/${state/orders/${args.order_id}/user_id}/payment_methods
          where: {id: "${args.method}", source: gift_card}
          at: /balance
          by: ${state/orders/${args.order_id}/paid}
          round: 2
      response: ${state/orders/${args.order_id}}"""
    code, out = validate(tmp_path, behavior)
    assert code == 0, out


def test_round_beside_another_op_is_refused_where_written(tmp_path):
    code, out = validate(tmp_path, "      effects: [{set: /orders/x, value: 1, round: 2}]")
    assert code == 2
    assert "s.yaml:8:" in out and "only increment and decrement take round" in out


def test_round_must_be_a_number_of_places(tmp_path):
    code, out = validate(tmp_path, "      effects: [{increment: /orders/x, round: -1}]")
    assert code == 2
    assert "round must be a whole number of decimal places from 0 to 15" in out
    assert "round: 2 keeps cents" in out


def test_an_any_of_inside_an_any_of_is_refused(tmp_path):
    behavior = "      preconditions: [{any_of: [{any_of: [{value: 1, equals: 1}]}]}]"
    code, out = validate(tmp_path, behavior)
    assert code == 2
    assert "s.yaml:8:" in out and "an any_of inside an any_of" in out


def test_a_test_beside_any_of_is_refused(tmp_path):
    behavior = (
        "      preconditions: [{any_of: [{value: 1, equals: 1}], path: /users, exists: true}]"
    )
    code, out = validate(tmp_path, behavior)
    assert code == 2
    assert "'path' beside any_of" in out and "inside one of the alternatives" in out


def test_an_empty_any_of_is_refused(tmp_path):
    code, out = validate(tmp_path, "      preconditions: [{any_of: []}]")
    assert code == 2 and "any_of must be a list of preconditions" in out


def test_an_argument_an_inner_reference_names_must_be_a_parameter(tmp_path):
    code, out = validate(tmp_path, "      response: ${state/orders/${args.order}/status}")
    assert code == 2
    assert "s.yaml:8:" in out and "order_id" in out  # did you mean


def nested(levels: int) -> str:
    inner = "${args.order_id}"
    for _ in range(levels):
        inner = "${state/orders/" + inner + "}"
    return inner


def test_references_nested_too_deep_are_refused(tmp_path):
    code, out = validate(tmp_path, f"      response: '{nested(12)}'")
    found = re.search(r"nests references more than (\d+) deep", out)
    assert code == 2 and found, out
    deepest = int(found[1])  # the limit the message names is the one held
    assert 2 <= deepest < 12
    assert validate(tmp_path, f"      response: '{nested(deepest)}'")[0] == 0
    code, out = validate(tmp_path, f"      response: '{nested(deepest + 1)}'")
    assert code == 2
    assert "s.yaml:8:" in out and f"nests references more than {deepest} deep" in out


def test_an_unclosed_inner_reference_is_refused(tmp_path):
    code, out = validate(tmp_path, "      response: '${state/orders/${args.order_id}'")
    assert code == 2 and "is not closed" in out


# ---------------------------------------------------------------- $key


def test_select_key_answers_the_id_of_a_record_kept_by_id():
    find = {"response": {"$select": "/users", "$where": {"name": "${args.name}"}, "$key": True}}
    assert call(find, {"name": "Ann"}).output == ["ann_1"]
    assert call(find, {"name": "Zed"}).output == []
    first = {
        "response": {
            "$select": "/orders",
            "$where": {"status": "pending"},
            "$first": True,
            "$key": True,
        }
    }
    assert call(first, {}).output == "#W1"
    nested = {
        "response": {
            "$select": "/orders",
            "$where": {"user_id": "bob_9"},
            "$first": True,
            "$key": True,
        }
    }
    assert call(nested, {}).output == "#W3"
    indexes = {"response": {"$select": "/list", "$where": {"x": 2}, "$key": True}}
    assert call(indexes, {}, {"list": [{"x": 1}, {"x": 2}, {"x": 2}]}).output == [1, 2]
    none = {
        "preconditions": [
            {
                "value": {
                    "$select": "/users",
                    "$where": {"name": "${args.name}"},
                    "$first": True,
                    "$key": True,
                },
                "not_equals": None,
                "error": "user not found",
            }
        ],
        "response": "found",
    }
    assert call(none, {"name": "Zed"}).error == "user not found"
    assert call(none, {"name": "Ann"}).output == "found"


def test_select_key_must_be_true_or_false(tmp_path):
    code, out = validate(tmp_path, "      response: {$select: /users, $key: 1}")
    assert code == 2
    assert "s.yaml:8:" in out and "$key must be true or false" in out


# ---------------------------------------------------------------- decrement


def test_decrement_takes_an_amount_off_and_keeps_cents():
    pay = {
        "preconditions": [
            {
                "any_of": [
                    {
                        "path": "/users/ann_1/payment_methods/${args.method}/source",
                        "not_equals": "gift_card",
                    },
                    {
                        "path": "/users/ann_1/payment_methods/${args.method}/balance",
                        "min": "${args.amount}",
                    },
                ],
                "error": "insufficient gift card balance",
            }
        ],
        "effects": [
            {
                "decrement": "/users/ann_1/payment_methods",
                "where": {"id": "${args.method}", "source": "gift_card"},
                "at": "/balance",
                "by": "${args.amount}",
                "round": 2,
            }
        ],
    }
    paid = call(pay, {"method": "gift_card_1", "amount": 10.1})
    assert paid.state["users"]["ann_1"]["payment_methods"]["gift_card_1"]["balance"] == 22.84
    assert (
        call(pay, {"method": "gift_card_1", "amount": 40}).error == "insufficient gift card balance"
    )
    card = call(
        pay, {"method": "card_7", "amount": 400}
    )  # a card: no balance to check or take from
    assert card.error is None and card.state["users"] == SHOP["users"]
    plain = {"effects": [{"decrement": "/n"}], "response": "${state/n}"}
    assert call(plain, {}, {"n": 3}).output == 2
    text = call({"effects": [{"decrement": "/n", "by": "${args.by}"}]}, {"by": "x"}, {"n": 3})
    assert text.error == "decrement's `by` is not a number"


def test_by_on_an_op_that_takes_none_names_both_that_do(tmp_path):
    code, out = validate(tmp_path, "      effects: [{set: /orders/x, value: 1, by: 2}]")
    assert code == 2 and "only increment and decrement take by" in out
