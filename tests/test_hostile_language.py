"""The language declarations (`evalspec._language`) from a suite's side: the only part a suite
reaches is the schema they generate, whose `pattern`s Python's backtracking `re` runs on the
suite's text when it is validated. A pattern that can split one run of characters two ways is
quadratic in it; a pull request's suite would hold `validate` and `review` for hours."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, evalspec_cli

SCHEMA = ROOT / "schemas" / "suite.schema.json"
RUN = 200_000
"""Characters in each hostile run: quadratic matching takes hours on it, linear a moment."""


def _patterns(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            elif key == "patternProperties" and isinstance(value, dict):
                yield from value
                yield from _patterns(value)
            else:
                yield from _patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from _patterns(item)


PATTERNS = sorted(set(_patterns(json.loads(SCHEMA.read_text(encoding="utf-8")))))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_every_pattern_of_the_language_is_linear_in_hostile_text(pattern: str) -> None:
    """Runs of each kind of character a pattern may repeat, each ending where it cannot match;
    a pattern that backtracks over a run does not finish within the test's bound."""
    compiled = re.compile(pattern)
    for run in (" ", "1", "a", "/", "{", "=", "\t1"):
        for end in ("", "x", "!", " \x00"):
            compiled.search(run * RUN + end)
            compiled.search("=" + run * RUN + end)


@pytest.mark.timeout(60)
def test_validate_refuses_a_hostile_count_without_stalling(tmp_path: Path) -> None:
    suite = tmp_path / "count.yaml"
    spaces = " " * RUN
    suite.write_text(
        "suite: count\nmodels: [m]\ntools:\n  - name: t\n    description: t\n"
        "    parameters: {type: object}\n    responses: [{output: ok}]\n"
        "cases:\n  - name: c\n    user: hi\n    expect: {no_tool_calls: true}\n"
        f'    evaluators:\n      - tool_call_count: {{counts: {{t: "{spaces}x"}}}}\n',
        encoding="utf-8",
    )
    done = evalspec_cli(["validate", suite])
    assert done.exit_code == 2, done.output
    assert "count.yaml:13:" in done.output and "followed by a number" in done.output
    assert len(done.output) < 2_000  # the 200,000 characters are not echoed back


def test_the_language_reads_nothing_and_runs_nothing() -> None:
    """The declarations are data: no file, environment, process or dynamic import in them, so
    nothing a suite or a checkout holds changes the schema they generate (only `--write`, in
    `__main__`, writes the one schema file)."""
    language = "evalspec._language"  # read as source text here, never imported
    allowed = {"__future__", "collections.abc", "dataclasses", "json", "sys", "typing"}
    forbidden_calls = {"open", "exec", "eval", "compile", "__import__"}
    for path in sorted((ROOT / "evalspec" / "_language").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                inside = node.module.startswith(language)
                schema_path = path.name == "__main__.py" and node.module == "evalspec._util.schemas"
                assert inside or schema_path or node.module in allowed, (path.name, node.module)
            elif isinstance(node, ast.Import):
                assert all(a.name in allowed for a in node.names), (path.name, node.names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in forbidden_calls, (path.name, node.func.id)
