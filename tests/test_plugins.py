"""Plugins: critics, evaluators and final-answer checks from outside evalspec.

The example package in examples/plugin is installed by CI (`pip install -e examples/plugin`);
its tests go through the real entry point, as a user's `evalspec` would: in this process, and
in a fresh one with `--all`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, ClassVar

import pytest
from support import evalspec_cli, git, in_process, suites_repo, transcript

from evalspec import plugins
from evalspec.api import load_suite, score
from evalspec.plugins import Critic, CriticOutcome, Params, outcome

EXAMPLE_INSTALLED = any(ep.name == "example" for ep in entry_points(group="evalspec.plugins"))
needs_example = pytest.mark.skipif(
    not EXAMPLE_INSTALLED,
    reason="examples/plugin is not installed (pip install -e examples/plugin; CI does)",
)

SUITE = """
suite: s
models: [m]
tools:
  - name: create_event
    parameters: {type: object, properties: {start: {type: string}}}
cases:
  - name: meeting
    user: Book a meeting tomorrow at 3pm
    critics: {start: CRITIC}
    evaluators:
      - call_budget: {max_calls: 1}
    expect:
      tool_calls:
        - create_event: {start: "2024-03-06T15:00:00"}
      final_answer: {max_words: 5}
"""


def _child(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(
    params=[pytest.param(_child, id="fresh process", marks=pytest.mark.slow), in_process]
)
def _evalspec(request: pytest.FixtureRequest) -> Callable[..., subprocess.CompletedProcess[str]]:
    """The command in a fresh process, as a user's (with --all), and in this one."""
    return request.param  # type: ignore[no-any-return]


@needs_example
def test_installed_plugin_names_validate_and_score(write_suite, _evalspec) -> None:
    path = write_suite(SUITE.replace("CRITIC", "same_day"))
    res = _evalspec("validate", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
    suite = load_suite(path)
    on_the_day = transcript(
        "meeting", ("create_event", {"start": "2024-03-06T09:30:00"}), final="Booked it."
    )
    [r] = score(suite, [on_the_day]).results
    assert (r.status, r.score) == ("pass", 1.0), r.reason
    twice = transcript(
        "meeting",
        ("create_event", {"start": "2024-03-07T15:00:00"}),
        ("create_event", {"start": "2024-03-06T15:00:00"}),
        final="I booked the meeting for you tomorrow.",
    )
    [r] = score(suite, [twice]).results
    assert r.status == "fail"
    assert r.evaluators["call_budget"] == 0.5
    assert r.evaluators["final_answer.max_words"] == 0.0


@needs_example
def test_misspelled_plugin_name_gets_did_you_mean(write_suite, _evalspec) -> None:
    res = _evalspec("validate", str(write_suite(SUITE.replace("CRITIC", "same_dya"))))
    assert res.returncode == 2
    assert "did you mean 'same_day'?" in res.stdout + res.stderr
    assert "Traceback" not in res.stderr


@needs_example
def test_schema_lists_installed_plugins(_evalspec) -> None:
    res = _evalspec("schema")
    schema = json.loads(res.stdout)
    assert "same_day" in schema["$defs"]["critic"]["anyOf"][0]["enum"]
    assert "call_budget" in schema["$defs"]["evaluator"]["anyOf"][1]["properties"]
    assert "max_words" in schema["$defs"]["final_answer"]["properties"]


@dataclass(frozen=True)
class _UpperCritic(Critic):
    """Same text ignoring case (registered by this test module)."""

    kind: ClassVar[str] = "test_upper"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> _UpperCritic:
        Params(cls.kind, params).finish()
        return cls()

    def _judge(self, expected: Any, actual: Any, embedder: Any) -> CriticOutcome:
        same = str(expected).upper() == str(actual).upper()
        return outcome(float(same), same, "same ignoring case" if same else "different")


@pytest.fixture
def upper_critic():
    plugins.register("critic")(_UpperCritic)
    yield
    plugins.unregister("critic", "test_upper")


def test_decorator_registration_is_seen_by_validation_and_scoring(
    write_suite, upper_critic
) -> None:
    text = SUITE.replace("CRITIC", "test_upper")
    text = text.split("    evaluators:")[0] + "    expect:\n      tool_calls:\n"
    text += '        - create_event: {start: "ABC"}\n'
    suite = load_suite(write_suite(text))
    [r] = score(suite, [transcript("meeting", ("create_event", {"start": "abc"}))]).results
    assert (r.status, r.score) == ("pass", 1.0)
    bad = write_suite(text.replace("test_upper", "{test_upper: {x: 1}}"), "bad.yaml")
    from evalspec.errors import SpecError

    with pytest.raises(SpecError, match="unknown parameter 'x'"):
        load_suite(bad)


def test_unregistered_names_stay_unknown(write_suite) -> None:
    from evalspec.errors import SpecError

    text = SUITE.replace("CRITIC", "no_such_critic")
    with pytest.raises(SpecError, match="no_such_critic"):
        load_suite(write_suite(text))


def test_example_plugin_package_is_shipped() -> None:
    root = Path(__file__).resolve().parents[1] / "examples" / "plugin"
    assert 'evalspec.plugins"]' in (root / "pyproject.toml").read_text(encoding="utf-8")


@needs_example
def test_review_hides_installed_plugins_only_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review in a process (the API, a notebook, a test) must not leave plugins off after it:
    the next suite that names an installed critic still validates."""

    # A pull request's suite names the installed critic: review, trusting no plugin, refuses it.
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "s.yaml").write_text(SUITE.replace("CRITIC", "binary"), "utf-8")
    repo = suites_repo(tmp_path, tmp_path / "base")
    (repo / "suites" / "s.yaml").write_text(SUITE.replace("CRITIC", "same_day"), "utf-8")
    git(repo, "commit", "-qam", "use the installed critic")
    monkeypatch.chdir(repo)
    hidden = evalspec_cli(["review", "--base-ref", "main"], catch_exceptions=False)
    assert hidden.exit_code == 2, hidden.output
    assert "unknown critic 'same_day'" in hidden.output
    assert "same_day" in plugins.registered("critic")
    # The review command itself, run in this process outside a git repository (exit 2).
    monkeypatch.chdir(tmp_path)
    result = evalspec_cli(["review", "--base-ref", "HEAD"], catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "same_day" in plugins.registered("critic")
