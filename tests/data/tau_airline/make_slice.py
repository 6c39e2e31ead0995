"""Remake the slice in this folder from a tau-bench checkout.

    python make_slice.py /path/to/tau-bench [/path/to/tau-bench-at-7362a17]

Copies, unchanged, from tau_bench/envs/airline/data: every flight (a search answers from all of
them), the users of the test tasks (tasks_test.py) and their reservations, and any other
reservation a task's gold actions name; and each task's gold actions and required outputs, as
JSON (world.json.gz, gold.json). With a second checkout, at commit 7362a17 (where the published
trajectories were added, and made: its users' addresses say `province` where later data says
`state`), also the same users as that commit has them (users-7362a17.json.gz).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any


def load_tasks(root: Path) -> list[Any]:
    """tasks_test.TASKS, importing only tau_bench/types.py (plain pydantic records), not the
    package's model clients."""
    package = types.ModuleType("tau_bench")
    package.__path__ = [str(root / "tau_bench")]
    sys.modules.setdefault("tau_bench", package)
    modules = (("tau_bench.types", "types.py"), ("tau_airline_tasks", "envs/airline/tasks_test.py"))
    module = None
    for name, file in modules:
        spec = importlib.util.spec_from_file_location(name, root / "tau_bench" / file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return list(module.TASKS)  # type: ignore[union-attr]


def named_reservations(value: Any) -> set[str]:
    if isinstance(value, dict):
        return {r for v in value.values() for r in named_reservations(v)} | (
            {value["reservation_id"]} if isinstance(value.get("reservation_id"), str) else set()
        )
    if isinstance(value, list):
        return {r for v in value for r in named_reservations(v)}
    return set()


def main(root: Path) -> None:
    data = root / "tau_bench" / "envs" / "airline" / "data"
    flights = json.loads((data / "flights.json").read_text())
    reservations = json.loads((data / "reservations.json").read_text())
    users = json.loads((data / "users.json").read_text())
    tasks = load_tasks(root)
    user_ids = sorted({t.user_id for t in tasks})
    wanted = {r for u in user_ids for r in users[u]["reservations"]}
    wanted |= {r for t in tasks for a in t.actions for r in named_reservations(a.kwargs)}
    world = {
        "flights": flights,
        "reservations": {r: v for r, v in reservations.items() if r in wanted},
        "users": {u: users[u] for u in user_ids},
    }
    here = Path(__file__).parent
    text = json.dumps(world, separators=(",", ":"))
    (here / "world.json.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    gold = [
        {
            "task": i,
            "user_id": t.user_id,
            "actions": [a.model_dump() for a in t.actions],
            "outputs": list(t.outputs),
        }
        for i, t in enumerate(tasks)
    ]
    lines = ",\n ".join(json.dumps(task) for task in gold)
    (here / "gold.json").write_text(f"[{lines}]\n")


def old_users(older: Path) -> None:
    """The slice's users as the older checkout has them (the trajectories' data)."""
    here = Path(__file__).parent
    world = json.loads(gzip.decompress((here / "world.json.gz").read_bytes()))
    data = older / "tau_bench" / "envs" / "airline" / "data"
    users = json.loads((data / "users.json").read_text())
    text = json.dumps({u: users[u] for u in world["users"]}, separators=(",", ":"))
    (here / "users-7362a17.json.gz").write_bytes(gzip.compress(text.encode(), mtime=0))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    if len(sys.argv) > 2:
        old_users(Path(sys.argv[2]))
