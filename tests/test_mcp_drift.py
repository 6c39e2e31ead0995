"""Server drift: a real MCP server whose tool list changes under a suite. `tools refresh --check`
says exactly what changed against the lock (and leaves it as it is, exit 1 for CI), and
`evalspec review` says the same when a pull request changes the lock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import git

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "mcp_drift_server.py"

SUITE = f"""\
suite: drift
models: [m]
tools:
  - mcp: {{command: [{json.dumps(sys.executable)}, {json.dumps(str(SERVER))}]}}
cases:
  - name: add
    user: Add 2 and 3
    expect: {{tool_calls: [{{Math.Add: {{a: 2, b: 3}}}}]}}
"""

BEFORE = [
    {"fn": "add", "name": "Math.Add", "description": "Add two numbers."},
    {"fn": "upper", "name": "Text.Upper", "description": "Upper-case a text."},
    {"fn": "add", "name": "Math.Old", "description": "Deprecated adder."},
]
AFTER = [
    # a new description, and integer parameters instead of numbers
    {"fn": "add_int", "name": "Math.Add", "description": "Add two whole numbers."},
    {"fn": "upper", "name": "Text.Shout", "description": "Upper-case a text."},  # renamed
    {"fn": "add", "name": "Math.Plus", "description": "Add, the new way."},  # Math.Old is gone
]
EXPECTED_LINES = [
    "+Math.Plus added",
    "-Math.Old removed",
    "Text.Upper renamed to Text.Shout",
    'Math.Add: description "Add two numbers." -> "Add two whole numbers."',
    'Math.Add: inputSchema /properties/a/type: "number" -> "integer"',
    'Math.Add: inputSchema /properties/b/type: "number" -> "integer"',
]


def _tools(folder: Path, tools: list[dict[str, Any]]) -> None:
    """What the server lists the next time it starts."""
    (folder / "tools.json").write_text(json.dumps(tools), encoding="utf-8")


def _evalspec(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def _suite(folder: Path) -> Path:
    path = folder / "drift.yaml"
    path.write_text(SUITE, encoding="utf-8")
    _tools(folder, BEFORE)
    done = _evalspec(folder, "tools", "refresh", path.name)
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.timeout(180)
def test_check_says_what_changed_on_the_server_exits_1_and_leaves_the_lock(tmp_path) -> None:
    path = _suite(tmp_path)
    lock = tmp_path / "drift.tools.lock.json"
    locked = lock.read_bytes()

    same = _evalspec(tmp_path, "tools", "refresh", "--check", path.name)
    assert same.returncode == 0, same.stderr
    assert "3 tools, unchanged" in same.stdout
    assert "drift.tools.lock.json matches the servers (not written)" in same.stdout

    _tools(tmp_path, AFTER)
    drifted = _evalspec(tmp_path, "tools", "refresh", "--check", path.name)
    assert drifted.returncode == 1, drifted.stderr
    said = [line.strip() for line in drifted.stdout.splitlines()]
    assert "3 tools, changed: 1 added, 1 removed, 1 renamed, 1 changed" in said[0]
    for line in EXPECTED_LINES:
        assert line in said
    assert "drift.tools.lock.json differs from the servers (not written)" in said[-1]
    assert lock.read_bytes() == locked

    as_json = _evalspec(tmp_path, "tools", "refresh", "--check", "--json", path.name)
    assert as_json.returncode == 1, as_json.stderr
    [server] = json.loads(as_json.stdout)["drift"]
    assert server["renamed"] == [{"from": "Text.Upper", "to": "Text.Shout"}]
    [add] = server["changed"]
    assert {"pointer": "/properties/a/type", "before": "number", "after": "integer"} in add[
        "input_schema"
    ]
    assert lock.read_bytes() == locked

    written = _evalspec(tmp_path, "tools", "refresh", path.name)  # without --check: written
    assert written.returncode == 0, written.stderr
    assert lock.read_bytes() != locked
    assert _evalspec(tmp_path, "tools", "refresh", "--check", path.name).returncode == 0


@pytest.mark.timeout(180)
def test_check_shows_a_hostile_description_bounded_and_without_control_codes(tmp_path) -> None:
    path = _suite(tmp_path)
    hostile = "\x1b[2J\x1b]0;owned\x07" + "x" * 200_000
    _tools(tmp_path, [{**BEFORE[0], "description": hostile}, *BEFORE[1:]])
    drifted = _evalspec(tmp_path, "tools", "refresh", "--check", path.name)
    assert drifted.returncode == 1, drifted.stderr
    assert "\x1b" not in drifted.stdout and "\x07" not in drifted.stdout
    assert "\\u001b[2J" in drifted.stdout  # shown, as JSON escapes it
    assert len(drifted.stdout) < 2000


@pytest.mark.timeout(240)
def test_review_of_a_refreshed_lock_says_what_changed_on_the_server(tmp_path) -> None:
    suites = tmp_path / "suites"
    suites.mkdir()
    _suite(suites)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    _tools(suites, AFTER)
    refreshed = _evalspec(suites, "tools", "refresh", "drift.yaml")
    assert refreshed.returncode == 0, refreshed.stderr

    review = _evalspec(
        tmp_path, "review", "--base-ref", "main", "--markdown", "comment.md", "--json"
    )
    assert review.returncode in (0, 3), review.stderr  # no recordings: evidence is missing
    comment = (tmp_path / "comment.md").read_text(encoding="utf-8")
    assert "### MCP servers' tool lists changed" in comment
    for line in EXPECTED_LINES:
        shown = line.replace("->", "-&gt;")
        assert f"  - {shown}" in comment, comment
    [suite] = json.loads(review.stdout)["suites"]
    [server] = suite["tool_drift"]
    assert server["removed"] == ["Math.Old"] and server["added"] == ["Math.Plus"]
    assert "1 MCP tool list changed" in _evalspec(tmp_path, "review", "--base-ref", "main").stdout
