"""The script the GitHub Action runs (action/review.sh), end to end: a git repository with a base
and a head branch, `evalspec review` across its suites, one comment, the exit code as output."""

from __future__ import annotations

import html
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import git, in_process, suites_repo

from evalspec.api import load_suite, record_answers

ROOT = Path(__file__).resolve().parent.parent
SUITES = ROOT / "suites"
REVIEW_SH = ROOT / "action" / "review.sh"
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The three example suites and their recordings committed on `main`; `pr` checked out."""
    return suites_repo(tmp_path, SUITES)


def sample_pull_request(repo: Path) -> None:
    """A threshold, a critic, a simulated response, an endpoint and one user message."""
    slack, weather = repo / "suites" / "slack.yaml", repo / "suites" / "weather.yaml"
    edit(slack, "fail_threshold: 0.85", "fail_threshold: 0.9")
    edit(
        slack,
        "message: {similarity: 0.75, weight: 0.5}",
        "message: {similarity: 0.99, weight: 0.5}",
    )
    edit(
        slack,
        "user: Great, DM her that the report is ready.",
        "user: Great, DM her that the report is done.",
    )
    edit(
        weather,
        "output: {city: Paris, temperature: 21, unit: celsius, sky: sunny}",
        "output: {city: Paris, temperature: 30, unit: celsius, sky: sunny}",
    )
    edit(
        weather,
        "    params: {temperature: 0, seed: 7, parallel_tool_calls: true}\n",
        "    params: {temperature: 0, seed: 7, parallel_tool_calls: true}\n"
        "    base_url: http://203.0.113.7/v1\n    api_key_env: CI_DEPLOY_TOKEN\n",
    )
    git(repo, "commit", "-q", "-am", "sample change")


def run_review(repo: Path, tmp_path: Path, base: str = "main", **env: str):
    out, summary, comment = tmp_path / "out", tmp_path / "summary.md", tmp_path / "comment.md"
    environ = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "EVALSPEC_BASE_REF": base,
        "EVALSPEC_COMMENT_FILE": str(comment),
        "GITHUB_OUTPUT": str(out),
        "GITHUB_STEP_SUMMARY": str(summary),
        **env,
    }
    done = subprocess.run(
        ["bash", str(REVIEW_SH)], cwd=repo, env=environ, capture_output=True, text=True
    )
    output = out.read_text(encoding="utf-8") if out.exists() else ""
    text = comment.read_text(encoding="utf-8") if comment.exists() else ""
    return done, output, text, summary


def rendered(markdown: str) -> str:
    """The comment's text as GitHub shows it: Markdown escapes and HTML entities undone."""
    return html.unescape(markdown.replace("\\", "")).replace("\u200b", "")


@pytest.mark.slow  # the action's script, bash and the command in child processes
def test_sample_pull_request_is_reviewed_in_one_comment(repo, tmp_path):
    sample_pull_request(repo)
    done, output, markdown, summary = run_review(repo, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "exit-code=4" in output  # the endpoint change wins over everything else
    assert summary.read_text(encoding="utf-8") == markdown
    assert_sample_comment(repo, tmp_path, markdown)


def test_sample_pull_request_comment_in_process(repo, tmp_path):
    """The review the action runs, without the action's script: the default lane's twin."""
    sample_pull_request(repo)
    comment = tmp_path / "comment.md"
    done = in_process("review", "--base-ref", "main", "--markdown", comment, cwd=repo)
    assert done.returncode == 4, done.stderr  # the endpoint change wins over everything else
    assert_sample_comment(repo, tmp_path, comment.read_text(encoding="utf-8"))


def assert_sample_comment(repo: Path, tmp_path: Path, markdown: str) -> None:
    """What the sample pull request's comment must say, in order."""
    assert markdown.startswith("<!-- evalspec-review -->\n")
    comment = rendered(markdown)
    # Severity order: security first, then the cases, then what every case shares.
    security = comment.index("Security-relevant changes")
    cases = comment.index("### Cases")
    assert security < cases < comment.index("fail_threshold 0.85 -> 0.9")
    assert "$CI_DEPLOY_TOKEN (plain http to another host" in comment
    # The Paris change: exactly the two cases that saw Paris's weather.
    rows = [line for line in comment.splitlines() if line.startswith("| `suites/weather.yaml`")]
    assert [row.split(" | ")[1] for row in rows if "re-run needed" in row] == [
        "compare two cities",
        "current weather in Paris",
    ]
    assert "similarity 0.91 now not matched" in comment
    assert 'user message: "Great, DM her that the report is ready." -> "Great' in comment
    untouched = ("calc", "calendar", "helpdesk", "math", "phone", "search", "shop")
    assert "Untouched: " + ", ".join(f"`suites/{s}.yaml`" for s in untouched) in comment
    # Repository-relative paths only, and the checkout is left as it was.
    assert str(tmp_path) not in markdown and "/tmp/" not in markdown
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.slow
def test_untouched_suites_fold_into_one_line_and_exit_0(repo, tmp_path):
    edit(repo / "suites" / "math.yaml", "suite: math", "suite: math  # renamed nothing")
    git(repo, "commit", "-q", "-am", "comment only")
    done, output, comment, _ = run_review(repo, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "exit-code=0" in output
    untouched = (
        "calc", "calendar", "helpdesk", "phone", "search", "shop", "slack", "support",
        "support_conversation", "weather",
    )  # fmt: skip
    assert "Untouched: " + ", ".join(f"`suites/{s}.yaml`" for s in untouched) in comment
    # A file whose text changed is never called untouched, even when only a comment did.
    assert "- `suites/math.yaml`: the file's text changed (comments or layout" in rendered(comment)
    assert "### Cases" not in comment


@pytest.mark.slow
def test_new_suite_is_scored_on_its_own_recordings_and_known_endpoints_pass(repo, tmp_path):
    for ext in ("yaml", "recordings.jsonl"):
        shutil.copy(repo / "suites" / f"math.{ext}", repo / "suites" / f"math2.{ext}")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a new suite, same endpoints")
    _, output, comment, _ = run_review(repo, tmp_path)
    assert "exit-code=0" in output, comment
    assert "| `suites/math2.yaml` |" in comment and "Security" not in comment
    math2 = repo / "suites" / "math2.yaml"
    edit(
        math2,
        "    params: {temperature: 0, seed: 7}\n",
        "    params: {temperature: 0, seed: 7}\n    api_key_env: OTHER_KEY\n",
    )
    git(repo, "commit", "-q", "-am", "a new key variable")
    (tmp_path / "b").mkdir()
    _, output, markdown, _ = run_review(repo, tmp_path / "b")
    comment = rendered(markdown)
    assert "exit-code=4" in output
    assert "new suite: model gpt-4o-mini sends to" in comment and "$OTHER_KEY" in comment


ROME_BERLIN = (
    "        - get_current_weather: {city: Paris}\n        - get_current_weather: {city: London}",
    "        - get_current_weather: {city: Rome}\n        - get_current_weather: {city: Berlin}",
)


@pytest.mark.slow
def test_regression_exits_1(repo, tmp_path):
    edit(repo / "suites" / "weather.yaml", *ROME_BERLIN)
    git(repo, "commit", "-q", "-am", "regression")
    _, output, markdown, _ = run_review(repo, tmp_path)
    comment = rendered(markdown)
    assert "exit-code=1" in output
    row = next(r for r in comment.splitlines() if r.startswith("| `suites/weather.yaml`"))
    assert row.startswith("| `suites/weather.yaml` | compare two cities | gpt-4o-mini | ")
    # Neither city alone fails the case (each alone leaves it at WARN): the row names both.
    assert (
        '| cause: expected call 1 (get_current_weather) · city: "Paris" -> "Rome"'
        ' and expected call 2 (get_current_weather) · city: "London" -> "Berlin" together'
        " (alone, each gives WARN 0.833)" in row
    )
    assert row.endswith("| PASS 1.000 | FAIL 0.667 | REGRESSION |")


@pytest.mark.slow
def test_stale_evidence_exits_3_unless_accepted(repo, tmp_path):
    edit(repo / "suites" / "weather.yaml", "temperature: 21, unit", "temperature: 22, unit")
    git(repo, "commit", "-q", "-am", "stale evidence")
    assert "exit-code=3" in run_review(repo, tmp_path)[1]
    accepted = tmp_path / "accepted"
    accepted.mkdir()
    assert "exit-code=0" in run_review(repo, accepted, EVALSPEC_ALLOW_STALE="true")[1]


@pytest.mark.slow
def test_answers_re_recorded_in_the_pr_stand_in_for_stale_ones(repo, tmp_path):
    edit(repo / "suites" / "slack.yaml", "that the report is ready.", "that the report is done.")
    rerecord(repo / "suites" / "slack.yaml")
    git(repo, "commit", "-q", "-am", "edited message, re-recorded")
    _, output, comment, _ = run_review(repo, tmp_path)
    assert "exit-code=0" in output, comment
    assert "follow-up to an earlier request" in comment
    assert "scored on the head" in comment


def rerecord(suite_path: Path) -> None:
    """Record the suite's answers anew with the scripted model the example recordings come
    from."""
    sys.path.insert(0, str(ROOT / "examples"))
    from scripted_model import SCRIPTS, ScriptedProvider

    record_answers(load_suite(suite_path), ScriptedProvider(SCRIPTS["slack"]))


@pytest.mark.parametrize("ref", ["--upload-pack=touch pwned", "main;touch pwned", "-h", "a..b"])
def test_hostile_base_refs_are_refused(repo, tmp_path, ref):
    done, _, comment, _ = run_review(repo, tmp_path, base=ref)
    assert done.returncode == 2
    assert not (repo / "pwned").exists() and not comment


def test_cli_refuses_an_option_like_base_ref(repo):
    done = in_process("review", "--base-ref=--output=x", cwd=repo)
    assert done.returncode == 2
    assert "not a git ref name" in done.stderr
    assert not (repo / "x").exists()


def test_action_installs_the_cpu_torch_and_runs_these_scripts():
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    assert action["inputs"]["torch-index-url"]["default"] == "https://download.pytorch.org/whl/cpu"
    scripts = " ".join(step.get("run", "") for step in steps)
    assert '--no-deps --index-url "$TORCH_INDEX" -c "$ACTION_PATH/constraints.txt" torch' in scripts
    assert '-c "$ACTION_PATH/constraints.txt" "${EVALSPEC_REQ:-$ACTION_PATH}"' in scripts
    assert "action/review.sh" in scripts and "action/comment.sh" in scripts
    workflow = (ROOT / "examples" / "ci" / "github-workflow.yml").read_text(encoding="utf-8")
    assert len(workflow.splitlines()) <= 20


@pytest.mark.slow
def test_action_keys_its_pip_cache_on_its_own_files(tmp_path: Path) -> None:
    """setup-python hashes files inside the workspace only; the action lives outside it, in
    github.action_path: no setup-python cache, and a key made from the action's own files."""
    import yaml

    steps = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["steps"]
    setup = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python"))
    assert "cache" not in setup["with"] and "cache-dependency-path" not in setup["with"]
    keying = next(s for s in steps if s.get("id") == "pip-cache")
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
    assert "steps.pip-cache.outputs.key" in cache["with"]["key"]
    assert cache["with"]["path"] == "${{ steps.pip-cache.outputs.dir }}"

    def key_for(action_path: Path) -> dict[str, str]:
        out = tmp_path / "output"
        out.write_text("", encoding="utf-8")
        env = {**os.environ, "ACTION_PATH": str(action_path), "GITHUB_OUTPUT": str(out)}
        subprocess.run(["bash", "-c", keying["run"]], env=env, check=True, cwd=tmp_path)
        return dict(line.split("=", 1) for line in out.read_text(encoding="utf-8").splitlines())

    copy = tmp_path / "action"
    copy.mkdir()
    for name in ("pyproject.toml", "constraints.txt", "torch-cpu.txt"):
        (copy / name).write_bytes((ROOT / name).read_bytes())
    first = key_for(copy)
    assert len(first["key"]) == 16 and first["dir"]
    assert key_for(copy) == first
    (copy / "constraints.txt").write_text("torch==9.9.9\n", encoding="utf-8")
    assert key_for(copy)["key"] != first["key"]


def test_the_torch_step_installs_the_constrained_version():
    """torch-cpu.txt (the README's first step) asks PyTorch's CPU index for constraints.txt's
    torch, so the second step keeps it rather than fetching PyPI's CUDA build."""
    pins = lambda name: [  # noqa: E731
        line.strip()
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines()
        if line.startswith("torch")
    ]
    assert pins("torch-cpu.txt") == pins("constraints.txt") == ["torch==2.13.0"]
    torch_step = (ROOT / "torch-cpu.txt").read_text(encoding="utf-8")
    assert "--index-url https://download.pytorch.org/whl/cpu" in torch_step.splitlines()


def test_the_version_is_a_release_in_the_changelog():
    """RELEASING.md: pyproject's version has its own section in CHANGELOG.md, below the
    "Unreleased" one, so `@vX.Y.Z` always has notes saying what it holds."""
    import re
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text("utf-8"), re.M)
    assert headings[0] == "Unreleased"
    assert version in headings[1:], (version, headings)
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
