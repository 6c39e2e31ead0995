"""Large suites: the value and file-size limits allow 50,000 cases and are configurable."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec.errors import SpecError
from evalspec.suite.validate import load_suite


def _suite(cases: int) -> str:
    lines = [
        "suite: many",
        "models: [{name: m, model: x}]",
        "critics: {id: binary}",
        "tools: [{name: t, parameters: {type: object, properties: {id: {type: string}}}}]",
        "cases:",
    ]
    lines += [
        f"  - {{name: c{i}, user: 'q {i}', expect: {{tool_calls: [{{t: {{id: r{i}}}}}]}}}}"
        for i in range(cases)
    ]
    return "\n".join(lines) + "\n"


def test_a_suite_of_more_than_200000_values_loads(tmp_path: Path) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(_suite(20_000), encoding="utf-8")  # ~220,000 values
    suite = load_suite(path)
    assert len(suite.cases) == 20_000


def test_the_value_limit_is_configurable_and_named_in_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(_suite(20), encoding="utf-8")
    monkeypatch.setenv("EVALSPEC_MAX_SUITE_VALUES", "100")
    with pytest.raises(SpecError) as info:
        load_suite(path)
    (problem,) = info.value.problems
    text = str(problem)
    assert "more than 100 values" in text
    assert "EVALSPEC_MAX_SUITE_VALUES" in text
    assert text.startswith(f"{path}:") or "many.yaml:" in text
    monkeypatch.setenv("EVALSPEC_MAX_SUITE_VALUES", "1000")
    assert len(load_suite(path).cases) == 20


def test_the_file_size_limit_is_configurable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(_suite(20), encoding="utf-8")
    monkeypatch.setenv("EVALSPEC_MAX_SUITE_BYTES", "500")
    with pytest.raises(SpecError) as info:
        load_suite(path)
    assert "EVALSPEC_MAX_SUITE_BYTES" in str(info.value.problems[0])
    monkeypatch.delenv("EVALSPEC_MAX_SUITE_BYTES")
    assert len(load_suite(path).cases) == 20
