"""An MCP server whose tool list a test edits between runs: it reads `tools.json` in its working
directory (the suite's folder) at start, so the suite's command line, and the lock's key for
the server, stay the same while the tools change under it.

    tools.json: [{"fn": "add", "name": "Math.Add", "description": "Add two numbers."}, ...]

`fn` picks the function, and with it the input schema: `add` (a, b: number), `add_int`
(a, b: integer), `upper` (text: string).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from mcp_calc_server import MCPServer


def add(a: float, b: float) -> float:
    return a + b


def add_int(a: int, b: int) -> int:
    return a + b


def upper(text: str) -> str:
    return text.upper()


FUNCTIONS: dict[str, Callable[..., Any]] = {"add": add, "add_int": add_int, "upper": upper}

if __name__ == "__main__":
    server = MCPServer("evalspec-drift")
    for tool in json.loads(Path("tools.json").read_text(encoding="utf-8")):
        server.tool(name=tool["name"], description=tool["description"])(FUNCTIONS[tool["fn"]])
    server.run()
