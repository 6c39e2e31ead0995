"""Hostile inputs that aim at time and memory: each bound is asserted by counts, caps and exit
codes, never by a clock (benchmarks/bench_bounds.py measures the time and memory they save)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalspec.cli import app
from evalspec.fast_schema import compiled_check
from evalspec.suite.model import Tool
from evalspec.tool_schema import pattern_problems, tool_validator
from evalspec.tools.simulated import ToolSimulator

EVIL = "^(a+)+$"
"""Exponential under a backtracking engine: 34 a's and a `!` take minutes in Python's `re`."""
EVIL_TEXT = "a" * 34 + "!"


def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def regex_suite(pattern: str, key_pattern: str, city: str) -> str:
    return f"""\
suite: mini
models: [gpt-4o-mini]
tools:
  - name: get_weather
    parameters:
      type: object
      properties:
        city: {{type: string, pattern: '{pattern}'}}
      patternProperties:
        '{key_pattern}': {{type: string}}
      additionalProperties: false
cases:
  - name: weather
    user: Weather in Paris?
    expect:
      tool_calls:
        - get_weather: {{city: '{city}'}}
"""


# ------------------------------------------------------------------ regexes in tool parameters


def test_a_catastrophic_schema_pattern_is_judged_not_hung(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "s.yaml").write_text(regex_suite(EVIL, EVIL, EVIL_TEXT), encoding="utf-8")
    code, output = cli(tmp_path, monkeypatch, "validate", "s.yaml")
    assert code == 2
    assert f"the expected city '{EVIL_TEXT}' does not fit get_weather's parameter" in output


def test_a_pattern_re2_cannot_run_is_a_validation_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "s.yaml").write_text(regex_suite("^(a)\\1$", "^(?=b)", "aa"), encoding="utf-8")
    code, output = cli(tmp_path, monkeypatch, "validate", "s.yaml")
    assert code == 2
    assert "properties.city.pattern: the pattern '^(a)\\\\1$' cannot be used" in output
    assert "patternProperties: the pattern '^(?=b)' cannot be used" in output
    assert "2 problems found" in output


def test_schema_regexes_run_on_re2_in_every_keyword() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "pattern": EVIL}},
        "patternProperties": {EVIL: {"type": "integer"}},
        "additionalProperties": False,
        "propertyNames": {"pattern": "^(a+|city)+$"},
    }
    validator = tool_validator(schema)
    assert not validator.is_valid({"city": EVIL_TEXT})
    assert validator.is_valid({"city": "aaa", "aaaa": 3})
    assert not validator.is_valid({"aaaa": "three"})  # patternProperties applied
    assert not validator.is_valid({EVIL_TEXT: 3})  # neither property nor pattern: additional
    assert [e.validator for e in validator.iter_errors({EVIL_TEXT: 3})] == [
        "additionalProperties",
        "pattern",
    ]
    # The compiled (fastjsonschema) check never takes a schema with a pattern: it would use `re`.
    assert compiled_check(schema) is None
    assert compiled_check(schema["properties"]["city"]) is None
    assert pattern_problems(schema) == []


def test_a_running_simulated_tool_checks_a_hostile_argument_on_re2(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string", "pattern": EVIL}}}
    tool = Tool(name="get_weather", description="", parameters=schema)
    simulator = ToolSimulator([tool], tmp_path)
    result = asyncio.run(simulator.call("get_weather", {"city": EVIL_TEXT}, ""))
    assert result.error is not None and "does not match '^(a+)+$'" in result.error
