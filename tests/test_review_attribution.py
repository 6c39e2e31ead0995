"""Review says which change moved each verdict, proven by re-scoring, and names every change by
its content.

The pull request below changes a threshold, a critic and an effect at once; three cases move,
each for one of the three reasons. A case that went WARN -> FAIL at the same score was once
blamed on the effect (its row named every change its case could reach); here each row carries
the cause and the counterfactual that proves it (the base suite with that change alone gives the
head's verdict). Edits apply one at a time: a property test rebuilds a changed suite from its
base by applying them all.

The attribution's logic (interactions, its bound, re-recorded answers) and the edits it applies
are unit-tested in tests/test_attribution_logic.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import git

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

MISSPELT = """\
  - name: lunch, the attendee misspelt
    user: Book lunch with Jane Doe on 2026-03-05.
    expect:
      tool_calls:
        - create_event: {title: Lunch with Jane Doe, date: "2026-03-05", attendee: Jane Do}
    critics:
      title: {similarity: {threshold: 0.5, metric: tfidf}}

  - name: unknown contact
"""


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


@pytest.fixture
def three_causes(tmp_path: Path) -> Path:
    """The calendar suite (a case scoring 0.750 added, WARN under a fail threshold of 0.7) on
    `main`; the pull request moves the threshold to 0.8, adds a critic to `unknown contact` and
    writes `canceled` for `cancelled` in cancel_event's effect."""
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    shutil.copy(ROOT / "suites" / "calendar.recordings.jsonl", repo / "suites")
    suite = repo / "suites" / "calendar.yaml"
    text = (ROOT / "suites" / "calendar.yaml").read_text(encoding="utf-8")
    text = _edit(text, "  - name: unknown contact\n", MISSPELT)
    text = _edit(text, "  state_weight: 0.5 ", "  fail_threshold: 0.7\n  state_weight: 0.5 ")
    suite.write_text(text, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    text = _edit(text, "fail_threshold: 0.7", "fail_threshold: 0.8")
    text = _edit(text, "          value: cancelled\n", "          value: canceled\n")
    text = _edit(
        text,
        "      unchanged: [/events]\n\n  - name: double booking",
        '      unchanged: [/events]\n    critics:\n      attendee: {regex: "^Robert"}\n\n'
        "  - name: double booking",
    )
    suite.write_text(text, encoding="utf-8")
    return repo


def _review(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "evalspec"), "review", "--base-ref", "main", "--allow-stale", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_each_moved_verdict_is_attributed_to_its_true_cause(three_causes):
    done = _review(three_causes, "--json")
    assert done.returncode == 1, done.stderr  # a passing case now fails: the gate
    changes = {c["case"]: c for s in json.loads(done.stdout)["suites"] for c in s["changes"]}

    threshold = changes["lunch, the attendee misspelt"]
    assert (threshold["before"]["status"], threshold["after"]["status"]) == ("warn", "fail")
    assert threshold["causes"] == [
        "rubric · fail_threshold: 0.7 -> 0.8 (alone: WARN 0.750 -> FAIL 0.750, score unchanged)"
    ]
    effect = changes["cancel by date, any path"]
    [cause] = effect["causes"]
    assert cause.startswith(
        'tool cancel_event · effect 1 (set /events ... /status) · value: "cancelled" -> '
        '"canceled" (alone: PASS 1.000 -> FAIL'
    )
    assert '/events/1/status: "cancelled" -> "canceled"' in cause
    critic = changes["unknown contact"]
    [cause] = critic["causes"]
    assert cause.startswith('critic of attendee added: {"regex": {"pattern": "^Robert"}} (alone')
    # The proof: each change applied alone to the base, and the verdict it gives.
    proof = {c["applied"]: c["verdict"] for c in threshold["counterfactuals"]}
    assert proof["rubric · fail_threshold: 0.7 -> 0.8"] == "FAIL 0.750"
    # Unmoved cases get no cause; and no change is named by position alone.
    assert changes["book lunch with jane"]["causes"] == []
    named = [n for c in changes.values() for n in c["named"]]
    assert not [n for n in named if "effects[" in n or n.endswith(" changed")], named


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_console_and_markdown_show_the_cause_and_its_proof(three_causes, tmp_path):
    comment = tmp_path / "comment.md"
    done = _review(three_causes, "--markdown", str(comment))
    assert "cause: rubric · fail_threshold: 0.7 -> 0.8" in done.stdout.replace("\n", " ")
    markdown = comment.read_text(encoding="utf-8")
    assert "cause: rubric · fail\\_threshold: 0.7 -&gt; 0.8 (alone: WARN 0.750" in markdown
    assert "- with rubric · fail\\_threshold: 0.7 -&gt; 0.8: FAIL 0.750" in markdown
