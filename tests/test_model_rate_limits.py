"""A model's own `requests_per_minute`: its endpoint is held to it, other models to theirs.

Two models on two fake servers with different limits; each server logs when requests arrive.
The same suite on a Ray cluster is in tests/test_ray_run.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fake_openai import FakeOpenAI, tool_call_reply
from rate_checks import assert_held_to

from evalspec._providers.calls import (
    Endpoint,
    ModelCalls,
    model_endpoint,
    own_rate_limits,
    rate_key,
)
from evalspec._suite.validate import load_suite

ROOT = Path(__file__).resolve().parent.parent
KEY_ENV = "EVALSPEC_RPM_TEST_KEY"
FAST_RPM, SLOW_RPM = 300, 120
"""One request per 0.2 s and per 0.5 s."""
CASES = 8


def answer(body: dict[str, Any]) -> Any:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    a, b = (int(x) for x in user.removeprefix("What is ").removesuffix("?").split(" plus "))
    return tool_call_reply("add", {"a": a, "b": b})


def write_two_model_suite(directory: Path, fast_url: str, slow_url: str) -> Path:
    """Two models with their own limits, one per server; no run-wide limit."""
    models = [
        {"name": "fast", "model": "m", "base_url": fast_url, "requests_per_minute": FAST_RPM},
        {"name": "slow", "model": "m", "base_url": slow_url, "requests_per_minute": SLOW_RPM},
    ]
    for m in models:
        m["api_key_env"] = KEY_ENV
    lines = [
        "suite: own-limits",
        f"models: {json.dumps(models)}",
        "run: {mode: single_turn, concurrency: 8, retries: 0}",
        "critics: {a: binary, b: binary}",
        "tools: [{name: add, parameters: {type: object, properties: {a: {type: number}, "
        "b: {type: number}}}}]",
        "cases:",
    ]
    for i in range(CASES):
        lines.append(
            f"  - {{name: c{i}, user: 'What is {i} plus 1?', "
            f"expect: {{tool_calls: [{{add: {{a: {i}, b: 1}}}}]}}}}"
        )
    path = directory / "limits.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def assert_each_held_to_its_own_rate(fast: FakeOpenAI, slow: FakeOpenAI, began: float) -> None:
    """Each server got every case, each no sooner than its own limit allows after the run
    began (tests/rate_checks.py: load can only make arrivals later)."""
    for server, rpm in ((fast, FAST_RPM), (slow, SLOW_RPM)):
        arrivals = [r.at for r in server.requests]
        assert len(arrivals) == CASES
        assert_held_to(rpm, began, arrivals)


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *(str(a) for a in args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, KEY_ENV: "sk-test-rpm-0000"},
        check=False,
    )


def test_each_model_is_held_to_its_own_rate(tmp_path: Path) -> None:
    with FakeOpenAI(answer) as fast, FakeOpenAI(answer) as slow:
        suite = write_two_model_suite(tmp_path, fast.base_url, slow.base_url)
        began = time.monotonic()
        done = run_cli("run", suite, "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr[-3000:]
    assert_each_held_to_its_own_rate(fast, slow, began)
    # Two limiters, one per model: neither is held to the other's rate.
    models = load_suite(suite).models
    own = ModelCalls.for_run(load_suite(suite).run, models).own_limiters
    intervals = {m.name: own[rate_key(model_endpoint(m), m.model)].interval_s for m in models}
    assert intervals == {"fast": 60 / FAST_RPM, "slow": 60 / SLOW_RPM}


def test_models_of_one_endpoint_share_the_strictest_limit(tmp_path: Path) -> None:
    suite_file = tmp_path / "s.yaml"
    suite_file.write_text(
        "suite: s\n"
        "models:\n"
        "  - {name: t0, model: m, base_url: 'http://127.0.0.1:1/v1', requests_per_minute: 60,"
        " params: {temperature: 0}}\n"
        "  - {name: t1, model: m, base_url: 'http://127.0.0.1:1/v1', requests_per_minute: 30,"
        " params: {temperature: 1}}\n"
        "  - {name: other, model: n, base_url: 'http://127.0.0.1:1/v1', requests_per_minute: 90}\n"
        "  - {name: unlimited, model: u, base_url: 'http://127.0.0.1:1/v1'}\n"
        "tools: [{name: t, parameters: {type: object}}]\n"
        "cases: [{name: c, user: hi, expect: {tool_calls: [{t: {}}]}}]\n",
        encoding="utf-8",
    )
    suite = load_suite(suite_file)
    limits = own_rate_limits(suite.models)
    endpoint = Endpoint("http://127.0.0.1:1/v1")
    assert limits == {rate_key(endpoint, "m"): 30, rate_key(endpoint, "n"): 90}
    # The key is a digest: a URL's credentials never name an actor or a log line.
    secret = Endpoint("https://user:hunter2@example.test/v1")
    assert "hunter2" not in rate_key(secret, "m")
    assert rate_key(secret, "m") != rate_key(Endpoint("https://example.test/v1"), "m")
