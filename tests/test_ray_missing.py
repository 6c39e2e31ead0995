"""`evalspec run --ray` without the ray extra: a usage error that says how to install it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evalspec.cli.run import RunRequest, execute
from evalspec.errors import UsageError

SUITE = """\
suite: no-ray
models: [{name: m, model: x, base_url: "http://127.0.0.1:9/v1"}]
tools: [{name: t, parameters: {type: object, properties: {id: {type: string}}}}]
cases: [{name: c, user: hi, expect: {tool_calls: [{t: {id: a}}]}}]
"""


def test_ray_not_installed_is_a_usage_error_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if not installed
    monkeypatch.delitem(sys.modules, "evalspec.runner.ray_cluster", raising=False)
    with pytest.raises(UsageError) as info:
        execute(RunRequest(suite=suite, ray="auto", out=tmp_path / "run"))
    assert "pip install 'evalspec-yaml[ray]'" in str(info.value)
    assert not (tmp_path / "run" / "transcripts.jsonl").exists()
