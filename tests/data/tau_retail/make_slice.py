"""Remake the slice in this folder from a tau-bench checkout.

    python make_slice.py /path/to/tau-bench

Copies, unchanged, the listed users of tau_bench/envs/retail/data/users.json, every order of
theirs, and the products the chosen test tasks look up (get_product_details) or their orders
hold (an exchange looks up the product of each item); and the gold action sequences of the
chosen tasks of tasks_test.py (by index), as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

USERS = [
    "fatima_johnson_7581",
    "ethan_garcia_1261",
    "noah_patel_6952",
    "mia_garcia_4516",
    "olivia_lopez_3865",
    "daiki_sanchez_3253",
    "lucas_santos_6600",
    "emma_smith_8564",
    "aarav_lee_1982",
    "yusuf_taylor_7149",
]


def main(root: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_whole import load_tasks  # tasks_test.py's plain pydantic records

    TASKS_TEST = load_tasks(root)

    data = root / "tau_bench" / "envs" / "retail" / "data"
    users = json.loads((data / "users.json").read_text())
    orders = json.loads((data / "orders.json").read_text())
    products = json.loads((data / "products.json").read_text())
    tasks = [(i, t) for i, t in enumerate(TASKS_TEST) if t.user_id in USERS]
    wanted = {o for u in USERS for o in users[u]["orders"]}
    product_ids = {item["product_id"] for o in wanted for item in orders[o]["items"]}
    for _, task in tasks:
        for action in task.actions:
            if action.name == "get_product_details":
                product_ids.add(action.kwargs["product_id"])
    world = {
        "users": {u: users[u] for u in USERS},
        "orders": {o: orders[o] for o in orders if o in wanted},
        "products": {p: products[p] for p in products if p in product_ids},
    }
    here = Path(__file__).parent
    (here / "world.json").write_text(json.dumps(world, indent=1) + "\n")
    gold = [
        {"task": i, "user_id": t.user_id, "actions": [a.model_dump() for a in t.actions]}
        for i, t in tasks
    ]
    lines = ",\n ".join(json.dumps(task) for task in gold)
    (here / "gold.json").write_text(f"[{lines}]\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
