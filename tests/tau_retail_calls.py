"""The calls the tau-bench retail differential makes, shared by the test and by
tests/data/tau_retail/make_oracle.py, which records what tau-bench's own tools answer to them.

The gold action sequences of tau-bench's test tasks on the slice's users (gold.json), and seeded
random sequences over the same ids. Both sides must make exactly these calls: the oracle file
holds tau-bench's answers by position.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "tau_retail"
WORLD: dict[str, Any] = json.loads((DATA / "world.json").read_text(encoding="utf-8"))
GOLD: list[dict[str, Any]] = json.loads((DATA / "gold.json").read_text(encoding="utf-8"))
Action = tuple[str, dict[str, Any]]
REASONS = ["no longer needed", "ordered by mistake"]

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
    "exchange_delivered_order_items",
    "modify_pending_order_items",
    "list_all_product_types",
    "calculate",
    "think",
    "transfer_to_human_agents",
)
"""The tools written in YAML (tests/data/tau_retail/tools.yaml): all 16 of tau-bench's."""

RANDOM = {"inside": (22, 300, 8, True), "outside": (7, 300, 8, False)}
"""Seed, count, length and `inside` of each set of random sequences."""


def gold_sequences() -> list[tuple[int, list[Action], int]]:
    """(task index, the gold actions of tools the YAML has, how many it left out)."""
    out = []
    for task in GOLD:
        actions = [(a["name"], a["kwargs"]) for a in task["actions"]]
        kept = [a for a in actions if a[0] in EXPRESSED]
        out.append((task["task"], kept, len(actions) - len(kept)))
    return out


PAYMENT_THEN_CANCEL: list[Action] = [
    (
        "modify_pending_order_payment",
        {"order_id": "#W2417020", "payment_method_id": "paypal_6228291"},
    ),
    ("cancel_pending_order", {"order_id": "#W2417020", "reason": REASONS[0]}),
]
"""The first pending order of the slice whose payment method can change (the first such method),
then its cancellation: the documented limit of cancel_pending_order, shown."""


def sequences() -> dict[str, list[list[Action]]]:
    """Every sequence the differential runs, by set: gold, inside, outside, payment_then_cancel."""
    out = {"gold": [actions for _, actions, _ in gold_sequences()]}
    for name, (seed, count, length, inside) in RANDOM.items():
        out[name] = random_sequences(seed, count, length, inside)
    out["payment_then_cancel"] = [PAYMENT_THEN_CANCEL]
    return out


def answer_digest(answer: tuple[str, Any]) -> str:
    """What the oracle keeps of an answer (`("ok", value)` or `("error", text)`): enough to
    tell two apart, a fraction of the size."""
    text = json.dumps(answer, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


USERS = sorted(WORLD["users"])
ORDERS = sorted(WORLD["orders"])
PRODUCTS = sorted(WORLD["products"])
ITEMS = sorted({item["item_id"] for o in WORLD["orders"].values() for item in o["items"]})
METHODS = sorted({m for u in WORLD["users"].values() for m in u["payment_methods"]})


def random_action(rng: random.Random, inside: bool) -> Action:
    """One call over the slice's ids (and a few that are not there). `inside`: only arguments
    for which the YAML claims to do exactly what tau-bench does."""
    name = rng.choice(EXPRESSED)
    delivered = ("return_delivered_order_items", "exchange_delivered_order_items")
    wanted = "delivered" if name in delivered else "pending"
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
    if name in ("exchange_delivered_order_items", "modify_pending_order_items"):
        return name, swap_arguments(rng, order_id, order, owner, inside)
    if name == "list_all_product_types":
        return name, {}
    if name == "calculate":
        return name, {"expression": expression(rng, inside)}
    if name == "think":
        return name, {"thought": "The order is pending, so it can be cancelled."}
    return name, {"summary": "The user wants a refund to another card."}


def swap_arguments(
    rng: random.Random, order_id: str, order: Any, owner: Any, inside: bool
) -> dict[str, Any]:
    """Items of the order (duplicates as it holds them), each for a variant of its product
    (available or not); outside: sometimes an id of another product, or one id fewer."""
    items = order["items"] if order else []
    chosen = rng.sample(items, rng.randint(1, len(items))) if items else []
    new_ids = []
    for item in chosen:
        variants = sorted(WORLD["products"][item["product_id"]]["variants"])
        new_ids.append(rng.choice(variants))
    if not inside and rng.random() < 0.3:
        new_ids = [*new_ids[:-1], rng.choice(ITEMS)] if rng.random() < 0.5 else new_ids[1:]
    methods = list(owner["payment_methods"]) + ([] if inside else rng.sample(METHODS, 1))
    return {
        "order_id": order_id,
        "item_ids": [item["item_id"] for item in chosen] or ["1234567890"],
        "new_item_ids": new_ids or ["1234567890"],
        "payment_method_id": rng.choice(methods),
    }


def expression(rng: random.Random, inside: bool) -> str:
    """Arithmetic a calculator is asked: prices, a discount, now and then a division by zero;
    outside, text that is not arithmetic."""
    a, b = round(rng.uniform(1, 500), 2), round(rng.uniform(1, 500), 2)
    forms = [f"{a} + {b}", f"({a} - {b}) * 0.9", f"{a} * 3 / 4", f"{a} / 0", f"-{a} + {b}"]
    if not inside:
        forms += [f"{a} +", "two plus two", f"{a} % 7"]
    return rng.choice(forms)


def random_sequences(seed: int, count: int, length: int, inside: bool) -> list[list[Action]]:
    rng = random.Random(seed)
    return [[random_action(rng, inside) for _ in range(length)] for _ in range(count)]
