"""tau-bench's own tools, run as its env.step runs them: shared by the make_oracle.py scripts of
tests/data/tau_retail and tests/data/tau_airline (run by hand against a tau-bench checkout;
the tests read only what those scripts recorded)."""

from __future__ import annotations

import copy
import importlib.util
import json
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
