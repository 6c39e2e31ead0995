"""Review that knows noise, end to end: a pull request re-records a suite's answers from a model
server on 127.0.0.1, and `evalspec review` tells sampling noise (no gate) from a real drop
(gated), names flaky cases, leaves cases the suite marks flaky out of the gate, and shows what
tokens and cost did. Budgets fail a case with the reason; `plan` prices a live run.

The server answers each case right for a fixed number of its trials (the n-th request for a
case is right while n <= the case's count), so every count below is exact, not sampled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, tool_call_reply

pytestmark = pytest.mark.slow

CASES = 30
TRIALS = 5
KEY = "sk-noise-test-key"


def suite_text(url: str, *, gate: str = "significant_drop", budget: str = "") -> str:
    cases = "\n".join(
        f"""  - name: case {i:02d}
    user: Look up city{i:02d}
    expect: {{tool_calls: [{{lookup: {{city: city{i:02d}}}}}]}}"""
        + ("\n    flaky: true" if i == 0 else "")
        for i in range(CASES)
    )
    return f"""suite: noisy
models:
  - name: m
    model: fake-model
    base_url: {url}
    price: {{input: 2.0, output: 8.0}}
run: {{mode: single_turn, concurrency: 1, retries: 0}}
trials: {TRIALS}
pass_rule: majority
gate: {{mode: {gate}}}
{budget}
tools:
  - name: lookup
    parameters: {{type: object, properties: {{city: {{type: string}}}}, required: [city]}}
    responses: [{{output: {{ok: true}}}}]
critics: {{city: binary}}
cases:
{cases}
"""


class Counts:
    """How many trials of each case the server answers right (the rest get a wrong city)."""

    def __init__(self) -> None:
        self.right: dict[str, int] = {}
        self.seen: dict[str, int] = {}

    def respond(self, body: dict) -> object:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        city = user.rsplit(" ", 1)[-1]
        n = self.seen[city] = self.seen.get(city, 0) + 1
        ok = n <= self.right.get(city, TRIALS)
        return tool_call_reply("lookup", {"city": city if ok else "Nowhere"})

    def record(self, repo: Path, right: dict[int, int]) -> None:
        self.right = {f"city{i:02d}": c for i, c in right.items()}
        self.seen = {}
        runs = repo / "run"
        out = f"run/{len(list(runs.iterdir())) + 1 if runs.is_dir() else 1}"
        proc = evalspec(repo, "run", "suites/noisy.yaml", "--record", "record", "--out", out)
        assert proc.returncode in (0, 1), proc.stderr


def evalspec(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *args],
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, "OPENAI_API_KEY": KEY},
        timeout=300,
    )


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


# Base: most cases pass 4 or 5 of 5 trials; some sit at 3/5 (pass by majority, flaky).
BASE = {i: (5 if i % 3 else 3) for i in range(CASES)} | {0: 5}


@pytest.fixture(scope="module")
def server():
    counts = Counts()
    with FakeOpenAI(responder=counts.respond) as fake:
        yield fake, counts


@pytest.fixture
def repo(tmp_path: Path, server) -> Path:
    fake, counts = server
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "noisy.yaml").write_text(suite_text(fake.base_url), encoding="utf-8")
    (tmp_path / ".gitignore").write_text("run/\n.evalspec-cache/\n", encoding="utf-8")
    git(tmp_path, "init", "-q")
    counts.record(tmp_path, BASE)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    return tmp_path


def review(repo: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], str, dict]:
    md = repo / "comment.md"
    proc = evalspec(repo, "review", "--base-ref", "HEAD", "--markdown", str(md), *extra)
    as_json = evalspec(repo, "review", "--base-ref", "HEAD", "--json", *extra)
    return proc, md.read_text(encoding="utf-8"), json.loads(as_json.stdout)


def test_a_re_recording_that_changes_nothing_the_model_sees_is_noise_and_does_not_gate(
    repo, server
):
    _, counts = server
    # Same model, same requests, new samples: four 3/5 cases drop to 2/5 (now failing by
    # majority), four rise to 4/5: flips both ways, no real change.
    head = dict(BASE)
    at_three = [i for i, c in BASE.items() if c == 3]
    for i in at_three[:4]:
        head[i] = 2
    for i in at_three[4:8]:
        head[i] = 4
    counts.record(repo, head)
    proc, comment, data = review(repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [suite] = data["suites"]
    [noise] = suite["noise"]
    assert noise["pass_rate"]["verdict"] == "within noise"
    assert noise["pass_rate"]["improved"] == 4 and noise["pass_rate"]["regressed"] == 4
    assert suite["counts"]["regression"] == 4 and suite["gate_failures"] == []
    assert "within noise" in comment and "gate `significant_drop`: passed" in comment
    assert "scored on the head's own recordings" in comment
    # The same pull request under today's gate fails on the four flipped cases.
    strict, _, _ = review(repo, "--gate", "any_regression")
    assert strict.returncode == 1


def test_a_real_drop_is_significant_and_gated(repo, server):
    _, counts = server
    head = {i: (2 if 1 <= i <= 12 else c) for i, c in BASE.items()}
    counts.record(repo, head)
    proc, comment, data = review(repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [noise] = data["suites"][0]["noise"]
    assert noise["pass_rate"]["verdict"] == "significant drop"
    assert noise["pass_rate"]["p_value"] < 0.01
    assert "significant drop" in comment and "gate `significant_drop` failed" in comment
    assert "exit code 1" in comment


def test_a_case_marked_flaky_is_reported_and_not_gated(repo, server):
    _, counts = server
    counts.record(repo, BASE | {0: 1})  # case 00 (flaky: true) falls from 5/5 to 1/5
    proc, comment, data = review(repo, "--gate", "any_regression")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [suite] = data["suites"]
    [change] = [c for c in suite["changes"] if c["kind"] == "regression"]
    assert change["case"] == "case 00" and change["known_flaky"] is True
    assert "marked flaky in the suite: not gated" in comment
    assert suite["noise"][0]["known_flaky"] == ["case 00"]


def test_a_pull_request_cannot_loosen_its_own_gate(repo, server):
    fake, counts = server
    head = {i: (2 if 1 <= i <= 12 else c) for i, c in BASE.items()}
    counts.record(repo, head)
    suite = repo / "suites" / "noisy.yaml"
    suite.write_text(suite_text(fake.base_url, gate="none"), encoding="utf-8")
    proc, comment, _ = review(repo)
    assert proc.returncode == 1
    assert "edits the suite's gate" in comment


def test_review_shows_the_change_in_tokens_and_cost(repo, server):
    _, counts = server
    counts.record(repo, BASE)
    _, _, data = review(repo)
    noise = data["suites"][0]["noise"][0]
    # The fake server reports 10 prompt and 5 completion tokens per answer: 150 items.
    assert noise["before_spend"]["tokens"] == 15 * CASES * TRIALS
    assert noise["after_spend"]["cost"] == pytest.approx(CASES * TRIALS * (10 * 2 + 5 * 8) / 1e6)


def test_a_case_over_budget_fails_with_the_reason(repo, server):
    fake, _ = server
    suite = repo / "suites" / "noisy.yaml"
    budget = "budgets: {case: {max_tokens: 12}, suite: {max_cost: 0.001}}"
    suite.write_text(suite_text(fake.base_url, budget=budget), encoding="utf-8")
    proc = evalspec(repo, "run", "suites/noisy.yaml", "--record", "offline", "--out", "b", "--json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    reasons = {r["reason"] for r in data["results"]}
    assert any("over budget: 15 tokens > max_tokens 12" in r for r in reasons), reasons
    assert all(r["status"] == "fail" for r in data["results"])
    [model] = data["models"]
    assert model["over_budget"] == ["the run: cost 0.0090 > max_cost 0.001"]


def test_plan_estimates_the_cost_of_a_live_run_from_recordings(repo):
    suite = repo / "suites" / "noisy.yaml"
    # Ten more trials per case: five are recorded, five must be called.
    text = suite.read_text(encoding="utf-8").replace(f"trials: {TRIALS}", "trials: 10")
    suite.write_text(text, encoding="utf-8")
    proc = evalspec(repo, "plan", "suites/noisy.yaml", "--json")
    assert proc.returncode == 0, proc.stderr
    [estimate] = json.loads(proc.stdout)["estimate"]
    assert estimate["recorded"] == CASES * TRIALS and estimate["estimated"] == CASES * TRIALS
    assert estimate["to_record_tokens"] == 15 * CASES * TRIALS
    assert estimate["cost"] == pytest.approx(2 * CASES * TRIALS * 60 / 1e6)
    printed = evalspec(repo, "plan", "suites/noisy.yaml")
    said = " ".join(printed.stdout.split())
    assert "not recorded (a --record auto run calls these): 150 items" in said


def test_compare_pairs_two_runs_and_the_html_shows_intervals_and_flaky_cases(repo, server):
    _, counts = server
    head = dict(BASE)
    at_three = [i for i, c in BASE.items() if c == 3]
    for i in at_three[:4]:
        head[i] = 2
    for i in at_three[4:8]:
        head[i] = 4
    counts.record(repo, head)
    proc = evalspec(repo, "compare", "run/1", "run/2", "--json", "--gate", "significant_drop")
    assert proc.returncode == 0, proc.stderr
    [noise] = json.loads(proc.stdout)["noise"]
    assert noise["pass_rate"]["verdict"] == "within noise"
    assert (noise["pass_rate"]["improved"], noise["pass_rate"]["regressed"]) == (4, 4)
    # The suite's gate (significant_drop), which the runs' results record, applies: the flips
    # are noise. Reported: compare judged under any_regression whatever the suite said.
    results = json.loads((repo / "run" / "1" / "results.json").read_text(encoding="utf-8"))
    assert results["gate"] == {
        "mode": "significant_drop",
        "min_pass_rate": None,
        "max_drop": None,
        "confidence": 0.95,
        "power": 0.8,
    }
    plain = evalspec(repo, "compare", "run/1", "run/2", "--json")
    assert plain.returncode == 0, plain.stdout
    assert json.loads(plain.stdout)["gate"]["mode"] == "significant_drop"
    assert evalspec(repo, "compare", "run/1", "run/2", "--gate", "any_regression").returncode == 1
    wrong = evalspec(repo, "compare", "run/1", "run/2", "--gate", "sometimes")
    assert wrong.returncode == 2 and "--gate 'sometimes'" in wrong.stderr
    assert "Traceback" not in wrong.stderr
    page = repo / "page.html"
    assert evalspec(repo, "view", "run/2", "-o", str(page)).returncode == 0
    html = page.read_text(encoding="utf-8")
    assert "95% CI" in html and "flaky: case 03 2/5" in html
    results = json.loads((repo / "run" / "2" / "results.json").read_text(encoding="utf-8"))
    [model] = results["models"]
    assert model["flaky"] == 9 and model["pass_at_1_ci"]["method"] == "Wilson, clustered by case"
    assert {c["case"] for c in results["cases"] if c["flaky"]} >= {"case 03", "case 15"}
