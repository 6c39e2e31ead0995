"""tau-bench's own tools, run as its env.step runs them: shared by the make_oracle.py scripts of
tests/data/tau_retail and tests/data/tau_airline (run by hand against a tau-bench checkout;
the tests read only what those scripts recorded)."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

Tool = Callable[..., str]


def load_tools(root: Path, domain: str, leave_out: tuple[str, ...] = ()) -> dict[str, Tool]:
    """Each tool's `invoke` by its name, from the checkout's tau_bench/envs/DOMAIN/tools.
    Their one import, `tau_bench.envs.tool.Tool`, is a bare base class: given here, so nothing
    else of tau-bench (its model clients) is imported."""
    base = types.ModuleType("tau_bench.envs.tool")
    base.Tool = type("Tool", (), {})  # type: ignore[attr-defined]
    for name in ("tau_bench", "tau_bench.envs"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["tau_bench.envs.tool"] = base
    tools: dict[str, Tool] = {}
    for path in sorted((root / "tau_bench" / "envs" / domain / "tools").glob("*.py")):
        if path.stem == "__init__" or path.stem in leave_out:
            continue
        spec = importlib.util.spec_from_file_location(f"tau_{domain}_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for value in vars(module).values():
            if isinstance(value, type) and value is not base.Tool and hasattr(value, "invoke"):
                tools[value.get_info()["function"]["name"]] = value.invoke
    return tools


def call(tools: dict[str, Tool], data: Any, name: str, kwargs: dict[str, Any]) -> tuple[str, Any]:
    """One call, as tau-bench's env.step makes it; `data` changes in place, as there."""
    try:
        text = tools[name](data, **copy.deepcopy(kwargs))
    except Exception as exc:  # as tau_bench/envs/base.py does
        text = f"Error: {exc}"
    if text.startswith("Error: "):
        return ("error", text[len("Error: ") :])
    try:
        return ("ok", json.loads(text))
    except ValueError:
        return ("ok", text)


Action = tuple[str, dict[str, Any]]


def checkout_commit(root: Path) -> str:
    """The commit of a tau-bench git checkout ("" for a tree that is not one)."""
    command = ["git", "-C", str(root), "rev-parse", "HEAD"]
    return subprocess.run(command, capture_output=True, text=True).stdout.strip()


def run_actions(
    tools: dict[str, Tool],
    world: Any,
    actions: list[Action],
    digest: Callable[[tuple[str, Any]], Any],
) -> list[Any]:
    """Each call of one sequence on a fresh copy of `world`: [its answer's digest, what it
    changed as a JSON Patch], which is what the differentials compare after every call."""
    from evalspec._tools.state_patch import changes

    data = copy.deepcopy(world)
    steps = []
    for tool, kwargs in actions:
        before = copy.deepcopy(data)
        answer = call(tools, data, tool, kwargs)
        steps.append([digest(answer), changes(before, data)])
    return steps


def write_oracle(path: Path, out: dict[str, Any]) -> str:
    """The oracle as one compact JSON line (the form the tests read)."""
    text = json.dumps(out, ensure_ascii=False, separators=(",", ":"))
    path.write_text(text + "\n", encoding="utf-8")
    return text
