"""A model's own `requests_per_minute`: its endpoint is held to it, other models to theirs.

Two models on two fake servers with different limits; each server logs when requests arrive.
The same suite on a Ray cluster is in tests/test_ray_run.py.

A unit test of evalspec._providers.calls's rate limits, which it imports: which limiter each
model gets, and the digest that keys it, are not in any result (arrival times at the servers
only bound them from below).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from support import (
    FAST_RPM,
    SLOW_RPM,
    FakeClock,
    assert_each_held_to_its_own_rate,
    write_two_model_suite,
)
from support import RPM_KEY_ENV as KEY_ENV
from support import add_answer as answer

from evalspec import api, records
from evalspec._providers.calls import (
    Endpoint,
    ModelCalls,
    model_endpoint,
    own_rate_limits,
    rate_key,
)
from evalspec.api import load_suite


def test_each_model_is_held_to_its_own_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_clock: FakeClock
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-rpm-0000")
    with (
        FakeOpenAI(answer, clock=fake_clock.monotonic) as fast,
        FakeOpenAI(answer, clock=fake_clock.monotonic) as slow,
    ):
        suite = write_two_model_suite(tmp_path, fast.base_url, slow.base_url)
        began = fake_clock.now
        done = api.run(records.RunRequest(suite, out=tmp_path / "run"))
    assert done.exit_code == 0, done.note
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
