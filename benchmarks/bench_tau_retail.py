"""τ-bench's whole retail world as a suite's state: loading it, and calls on it.

Run: ``.venv/bin/python benchmarks/bench_tau_retail.py [--calls 1000] [--repeat 5]``

The world is tests/data/tau_retail's copy of τ-bench's data (500 users, 1,000 orders, 50
products, 65,000 values); the tools are tests/data/tau_retail/tools.yaml (all 16).

  (a) load: `load_suite` of a suite whose `state:` is the whole world (in-process, so the
      figure is the loading, not Python's start); also printed, `evalspec validate` of it as a
      whole process.
  (b) replay: --calls calls answered as `score` and `review` replay a run (a fresh
      conversation on the suite's state for each conversation recorded, each call through
      `Conversation.act`: schema check, preconditions, effects, answer), on the whole world and
      on a state of 10 records (a user, their orders and the products those hold). Each
      conversation is the same 18 calls on those 10 records: find the user by e-mail, read
      them, calculate, and for each order read it and its product, return, exchange, modify,
      re-address and cancel it (most refused by the order's status, as they would be), then
      re-address the user: every tool but list_all_product_types (whose answer grows with the
      products). The two runs alternate; the goal is the median of the per-pair ratios of CPU
      time (the machine is shared; wall time is printed too).

Goals: (a) < 3 s of CPU; (b) whole world / 10 records <= 1.2.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import REPO, evalspec_cmd, goal, interleave, machine, paired_ratio, run_child, summary

sys.path.insert(0, str(REPO))

from evalspec._tools.environment import Conversations
from evalspec._tools.simulated import ToolSimulator
from evalspec.api import load_suite

DATA = REPO / "tests" / "data" / "tau_retail"
USERS = ("aarav_santos_2259",)
"""A user whose orders (pending and delivered) and their products make 10 records with them."""


def whole_world() -> dict[str, Any]:
    return {
        kind: json.loads(gzip.decompress((DATA / f"{kind}.json.gz").read_bytes()))
        for kind in ("users", "orders", "products")
    }


def ten_records(world: dict[str, Any]) -> dict[str, Any]:
    """A user, their orders and the products those hold: 10 records in all."""
    users = {u: world["users"][u] for u in USERS}
    orders = {o: world["orders"][o] for u in USERS for o in world["users"][u]["orders"]}
    products = {i["product_id"] for o in orders.values() for i in o["items"]}
    small = {
        "users": users,
        "orders": orders,
        "products": {p: world["products"][p] for p in sorted(products)},
    }
    assert sum(map(len, small.values())) == 10, {k: len(v) for k, v in small.items()}
    return small


def conversation(small: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """One conversation's calls: every tool but list_all_product_types, on the 10 records."""
    one_round: list[tuple[str, dict[str, Any]]] = []
    for user_id, user in small["users"].items():
        one_round += [
            ("find_user_id_by_email", {"email": user["email"].upper()}),
            ("get_user_details", {"user_id": user_id}),
            ("calculate", {"expression": "(129.99 - 20) * 0.9"}),
        ]
        method = next(iter(user["payment_methods"]))
        for order_id in user["orders"]:
            order = small["orders"][order_id]
            ids = [i["item_id"] for i in order["items"]]
            variants = [
                sorted(small["products"][i["product_id"]]["variants"]) for i in order["items"]
            ]
            new_ids = [v[0] for v in variants]
            one_round += [
                ("get_order_details", {"order_id": order_id}),
                ("get_product_details", {"product_id": order["items"][0]["product_id"]}),
                (
                    "return_delivered_order_items",
                    {"order_id": order_id, "item_ids": ids, "payment_method_id": method},
                ),
                (
                    "exchange_delivered_order_items",
                    {
                        "order_id": order_id,
                        "item_ids": ids,
                        "new_item_ids": new_ids,
                        "payment_method_id": method,
                    },
                ),
                (
                    "modify_pending_order_items",
                    {
                        "order_id": order_id,
                        "item_ids": ids,
                        "new_item_ids": new_ids,
                        "payment_method_id": method,
                    },
                ),
                ("modify_pending_order_address", {"order_id": order_id, **ADDRESS}),
                ("cancel_pending_order", {"order_id": order_id, "reason": "no longer needed"}),
            ]
        one_round.append(("modify_user_address", {"user_id": user_id, **ADDRESS}))
    return one_round


ADDRESS = {
    "address1": "1 Elm Street",
    "address2": "",
    "city": "Denver",
    "state": "CO",
    "country": "USA",
    "zip": "80202",
}


def write_suite(folder: Path, state: dict[str, Any]) -> Path:
    shutil.copy(DATA / "tools.yaml", folder / "tools.yaml")
    path = folder / "suite.yaml"
    path.write_text(
        "suite: tau-retail\nmodels: [m]\n"
        f"state: {json.dumps(state)}\n"
        "tools: [{include: tools.yaml}]\n"
        "cases: [{name: any, user: Hello., expect: {no_tool_calls: true}}]\n",
        encoding="utf-8",
    )
    return path


def replay(suite: Any, folder: Path, calls: list[tuple[str, dict[str, Any]]], count: int) -> float:
    """CPU seconds to answer `count` calls, a fresh conversation for each run of `calls`."""
    conversations = Conversations(suite, ToolSimulator(suite.tools, folder))
    raws = [(name, kwargs, json.dumps(kwargs)) for name, kwargs in calls]
    start, wall = time.process_time(), time.perf_counter()
    done = 0
    while done < count:
        opened = conversations.open(suite.cases[0])
        for name, kwargs, raw in raws[: count - done]:
            opened.act(name, dict(kwargs), raw)
        done += min(len(raws), count - done)
        opened.snapshot()
    WALL.append(time.perf_counter() - wall)
    return time.process_time() - start


WALL: list[float] = []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"bench_tau_retail: {machine()}")
    world = whole_world()
    small = ten_records(world)
    with tempfile.TemporaryDirectory(prefix="bench-tau-retail-") as tmp:
        whole_dir, small_dir = Path(tmp, "whole"), Path(tmp, "small")
        whole_dir.mkdir()
        small_dir.mkdir()
        whole_path, small_path = write_suite(whole_dir, world), write_suite(small_dir, small)
        loads, walls = [], []
        for _ in range(args.repeat):
            start, wall = time.process_time(), time.perf_counter()
            whole = load_suite(whole_path)
            loads.append(time.process_time() - start)
            walls.append(time.perf_counter() - wall)
        print(f"  load_suite, whole world, CPU: {summary(loads)}; wall: {summary(walls)}")
        child = run_child([*evalspec_cmd(), "validate", str(whole_path)])
        print(
            f"  evalspec validate of it, whole process: {child.wall:.3f} s wall, "
            f"{child.cpu_s:.3f} s CPU, {child.maxrss_mb:.0f} MiB (exit {child.returncode})"
        )
        ten = load_suite(small_path)
        calls = conversation(small)
        times = interleave(
            {
                "whole": lambda: replay(whole, whole_dir, calls, args.calls),
                "small": lambda: replay(ten, small_dir, calls, args.calls),
            },
            args.repeat,
        )
        print(f"  {args.calls} calls in conversations of {len(calls)}:")
        print(f"    whole world, CPU: {summary(times['whole'])}")
        print(f"    10 records, CPU: {summary(times['small'])}")
        print(f"    wall, whole and 10 records alternating: {', '.join(f'{w:.3f}' for w in WALL)}")
    goal("load the whole retail world as a suite's state (CPU s)", min(loads), "<", 3.0)
    goal(
        f"{args.calls}-call replay, whole world / 10 records",
        paired_ratio(times["whole"], times["small"]),
        "<=",
        1.2,
    )


if __name__ == "__main__":
    main()
