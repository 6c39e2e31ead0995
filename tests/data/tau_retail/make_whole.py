"""Remake the whole-world files in this folder from a tau-bench checkout.

    python make_whole.py /path/to/tau-bench [COMMIT]

- `users.json.gz`, `orders.json.gz`, `products.json.gz`: tau_bench/envs/retail/data/*.json,
  unchanged (gzip of the same bytes).
- `tasks_test.json`: the gold action sequences of all 115 tasks of tasks_test.py, as JSON.
- `oracle_whole.json`: what tau-bench's own tools (tau_bench_tools.load_tools: its files, loaded
  without the rest of tau-bench) answer to each of those sequences, each on a fresh copy of the
  whole world, as make_oracle.py records it: per call a digest of the answer and what the call
  changed (RFC 6902).

tests/test_tau_retail.py replays the sequences through tools.yaml and compares call by call;
it never needs tau-bench itself.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent), str(HERE.parent.parent.parent)]

from tau_bench_tools import checkout_commit, load_tools, run_actions, write_oracle  # noqa: E402
from tau_retail_calls import answer_digest  # noqa: E402

KINDS = ("users", "orders", "products")


def load_tasks(root: Path) -> list[Any]:
    """tasks_test.py's TASKS_TEST, importing only tau_bench/types.py (plain pydantic records)
    beside it, not tau-bench's package (which imports its model clients)."""
    for name in ("tau_bench", "tau_bench.envs", "tau_bench.envs.retail"):
        sys.modules.setdefault(name, types.ModuleType(name))
    for name, path in (
        ("tau_bench.types", root / "tau_bench" / "types.py"),
        ("tau_retail_tasks_test", root / "tau_bench" / "envs" / "retail" / "tasks_test.py"),
    ):
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return list(sys.modules["tau_retail_tasks_test"].TASKS_TEST)


def main(root: Path, commit: str = "") -> None:
    data_dir = root / "tau_bench" / "envs" / "retail" / "data"
    world = {}
    for kind in KINDS:
        raw = (data_dir / f"{kind}.json").read_bytes()
        (HERE / f"{kind}.json.gz").write_bytes(gzip.compress(raw, mtime=0))
        world[kind] = json.loads(raw)
    tasks = load_tasks(root)
    gold = [
        {"task": i, "user_id": t.user_id, "actions": [a.model_dump() for a in t.actions]}
        for i, t in enumerate(tasks)
    ]
    lines = ",\n ".join(json.dumps(task) for task in gold)
    (HERE / "tasks_test.json").write_text(f"[{lines}]\n")
    tools = load_tools(root, "retail")
    commit = commit or checkout_commit(root)
    steps = [
        run_actions(
            tools, world, [(a["name"], a["kwargs"]) for a in task["actions"]], answer_digest
        )
        for task in gold
    ]
    out = {"tau_bench_commit": commit or "unknown", "tools": sorted(tools), "gold": steps}
    write_oracle(HERE / "oracle_whole.json", out)
    print(f"oracle_whole.json: {len(steps)} sequences, {sum(map(len, steps))} calls")


if __name__ == "__main__":
    main(Path(sys.argv[1]), *sys.argv[2:3])
