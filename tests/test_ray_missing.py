"""`evalspec run --ray` without the ray extra: a usage error that says how to install it; and
`evalspec run` without --ray never loads Ray."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, tool_call_reply

from evalspec.api import run
from evalspec.errors import UsageError
from evalspec.records import RunRequest

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
    for name in [m for m in sys.modules if m.startswith("evalspec.") and "ray" in m]:
        monkeypatch.delitem(sys.modules, name)  # evalspec's Ray modules import it afresh
    with pytest.raises(UsageError) as info:
        run(RunRequest(suite=suite, ray="auto", out=tmp_path / "run"))
    assert "pip install 'evalspec-yaml[ray]'" in str(info.value)
    assert not (tmp_path / "run" / "transcripts.jsonl").exists()


@pytest.mark.slow
def test_a_local_run_never_imports_ray(tmp_path: Path) -> None:
    """Without --ray, a run with a similarity critic never loads Ray (nor Ray Data)."""
    with FakeOpenAI(lambda body: tool_call_reply("t", {"id": "lunch on Friday"})) as fake:
        suite = tmp_path / "s.yaml"
        suite.write_text(
            "suite: local\n"
            f"models: [{{name: m, model: x, base_url: '{fake.base_url}'}}]\n"
            "critics: {id: similarity}\n"
            "tools: [{name: t, parameters: {type: object, properties: {id: {type: string}}}}]\n"
            "cases: [{name: c, user: hi, expect: {tool_calls: [{t: {id: lunch Friday 12}}]}}]\n",
            encoding="utf-8",
        )
        argv = ["evalspec", "run", str(suite), "--out", str(tmp_path / "run")]
        script = (
            f"import runpy, sys; sys.argv = {argv!r}\n"
            "try: runpy.run_module('evalspec', run_name='__main__')\n"
            "finally: print(sorted(m for m in ('ray', 'ray.data') if m in sys.modules))"
        )
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={
                **os.environ,
                "OPENAI_API_KEY": "sk-test-local-0000",
                "EVALSPEC_CACHE_DIR": str(tmp_path / "cache"),
            },
        )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert list((tmp_path / "cache").rglob("*.npz"))  # embedded here, by the local store
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-2000:]
