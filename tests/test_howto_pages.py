"""The how-to pages on stateful tools, conversations and simulated users, walked as a reader
walks them: their commands print what the pages show.

The pages' worked example is docs/how-to/examples/bistro.yaml with its example recordings
(scripted answers, examples/scripted_model.py). Every command runs as a program in a fresh
folder holding those two files, offline. Each YAML block a page shows is the suite's own text,
except the first drafts the stateful-tools page shows before it fixes them: those are put into
the suite in place of the fixed text, and `validate` and `run` then print what the page shows.
When a message, a score or the table changes, this fails and the pages are brought up to date.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import call_tool, fenced_blocks, result_table, shown_commands

from evalspec.api import load_transcripts

DOCS = Path(__file__).resolve().parents[1] / "docs" / "how-to"
EXAMPLE = DOCS / "examples" / "bistro.yaml"
PAGES = ("stateful-tools.md", "conversations.md", "simulated-users.md")
MODEL = "gpt-4o-mini"


def _evalspec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "80"},
        timeout=120,
    )


def _yaml(page: str) -> list[str]:
    return [block for language, block in fenced_blocks(DOCS / page) if language == "yaml"]


def _one(page: str, having: str) -> str:
    found = [block for block in _yaml(page) if having in block]
    assert len(found) == 1, f"{page}: {len(found)} YAML blocks hold {having!r}"
    return found[0]


WORKED_TOOLS = ("- name: pay_bill", "  - name: swap_items")
"""Tools the stateful-tools page works through on a world of their own, outside the example
suite; `test_the_worked_tools_answer_as_the_page_says` calls each as the page does."""


def _is_draft(page: str, block: str) -> bool:
    """A first draft the page fixes below it, a fragment it suggests adding, or a worked tool
    with a world of its own: not the suite's text as it stands."""
    if page == "stateful-tools.md":
        refusal = block.startswith("  - name: too many people") and "rubric:" not in block
        worked = any(tool in block for tool in WORKED_TOOLS)
        return refusal or worked or 'response: {booking: "${count/bookings}"' in block
    if page == "simulated-users.md":  # a judged rule needs a judge model the example lacks
        return "judged:" in block
    return page == "conversations.md" and "turn_rule: all_or_nothing" in block


@pytest.mark.parametrize("page", PAGES)
def test_the_suite_the_pages_show_is_the_example_file(page: str) -> None:
    suite = EXAMPLE.read_text(encoding="utf-8")
    shown = [block for block in _yaml(page) if not _is_draft(page, block)]
    assert shown, page
    missing = [block for block in shown if block not in suite]
    assert not missing, f"{page} shows YAML the example suite does not hold: {missing}"


def _worked(having: str) -> tuple[dict[str, Any], Any]:
    """(the tool, the world its block declares or None) of a worked tool on the page."""
    block = yaml.safe_load(_one("stateful-tools.md", having))
    if isinstance(block, list):
        return block[0], None
    return block["tools"][0], block["state"]


def test_the_worked_tools_answer_as_the_page_says() -> None:
    bill, _ = _worked("- name: pay_bill")
    world = {"menu": {"soup": 6.5, "steak": 24}, "bills": [], "tips": []}
    paid = call_tool(bill, world, {"table": 3, "dishes": ["soup", "steak", "soup"], "tip": 10})
    assert paid.error is None and paid.output == {"table": 3, "total": 40.7}
    assert paid.state["bills"] == [{"table": 3, "total": 40.7}]
    assert paid.state["tips"] == [{"table": 3, "percent": 10}]
    cake = call_tool(bill, world, {"table": 3, "dishes": ["soup", "cake"], "tip": 10})
    assert cake.error == "there is no cake on the menu" and cake.state == world
    untipped = call_tool(bill, world, {"table": 3, "dishes": ["soup"], "tip": 0})
    assert untipped.state["tips"] == [] and untipped.state["bills"] == [{"table": 3, "total": 6.5}]

    swap, shop = _worked("  - name: swap_items")
    swapped = call_tool(
        swap, shop, {"order_id": "o1", "item_ids": ["mug-red"], "new_ids": ["mug-blue"]}
    )
    order = swapped.output
    assert swapped.error is None
    assert [i["item_id"] for i in order["items"]] == ["mug-blue", "mug-red"]
    assert order["swapped"] == ["mug-red"] and order["difference"] == 2.2
    three = {"order_id": "o1", "item_ids": ["mug-red"] * 3, "new_ids": ["mug-blue"] * 3}
    refused = call_tool(swap, shop, three)
    assert refused.error == "mug-red is not in the order that often" and refused.state == shop


def test_trying_a_tool_by_hand_prints_what_the_page_says(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (code,) = [b for lang, b in fenced_blocks(DOCS / "stateful-tools.md") if lang == "python"]
    said = [line.split("  # ", 1)[1] for line in code.splitlines() if line.startswith("print(")]
    monkeypatch.chdir(folder)
    exec(compile(code, "stateful-tools.md", "exec"), {})
    assert capsys.readouterr().out.splitlines() == said


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A fresh folder with the example suite and its example recordings, as the pages say."""
    for name in ("bistro.yaml", "bistro.recordings.jsonl"):
        shutil.copy(EXAMPLE.with_name(name), tmp_path / name)
    return tmp_path


def _replace(folder: Path, fixed: str, draft: str) -> None:
    suite = folder / "bistro.yaml"
    text = suite.read_text(encoding="utf-8")
    assert fixed in text, f"the page's fixed text is not in the suite: {fixed!r}"
    suite.write_text(text.replace(fixed, draft, 1), encoding="utf-8")


def run_dir_of(run: subprocess.CompletedProcess[str]) -> str:
    found = re.search(r"results: (runs/bistro/\S+)/results.json", run.stdout)
    assert found is not None, run.stdout
    return found.group(1)


def _fixed_effects(page: str) -> tuple[str, str]:
    """(the booking tool's effects and response as fixed, as first drafted)."""
    fixed = _one(page, "set: /last_id")
    tool = _one(page, 'response: {booking: "${count/bookings}"')
    draft = tool[tool.index("      effects:\n") :]
    return fixed, draft


@pytest.mark.slow
def test_the_stateful_tools_page_shows_what_evalspec_prints(folder: Path) -> None:
    page = "stateful-tools.md"
    shown = shown_commands(DOCS / page)
    commands = [command for command, _ in shown]
    assert commands[:2] == ["evalspec validate bistro.yaml"] * 2

    # The booking tool as first written: the id read twice.
    fixed_effects, draft_effects = _fixed_effects(page)
    _replace(folder, fixed_effects, draft_effects)
    out = _evalspec("validate", "bistro.yaml", cwd=folder)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() + out.stdout.splitlines() == shown[0][1]

    # Fixed: the suite as it is.
    shutil.copy(EXAMPLE, folder / "bistro.yaml")
    out = _evalspec("validate", "bistro.yaml", cwd=folder)
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout.splitlines() == shown[1][1]

    # The refusal case as first written: a warning, then the failure it warned about.
    cases = [b for b in _yaml(page) if b.startswith("  - name: too many people")]
    draft_case, fixed_case = sorted(cases, key=lambda b: "rubric:" in b)
    _replace(folder, fixed_case, draft_case)
    out = _evalspec("validate", "bistro.yaml", cwd=folder)
    assert out.returncode == 0
    assert out.stderr.splitlines() + out.stdout.splitlines() == shown[2][1]
    run_command, run_shown = shown[3]
    assert run_command == "evalspec run bistro.yaml --record offline --case state"
    run = _evalspec(*run_command.split()[1:], cwd=folder)
    assert run.returncode == 1, run.stderr  # the refusal case fails
    assert result_table(run.stdout.splitlines(), MODEL) == result_table(run_shown, MODEL)
    assert "model requests: 7 replayed, 0 called" in run.stdout
    assert any("model requests: 7 replayed, 0 called" in line for line in run_shown)

    # The idiom at work: the booking's number and the number the model was told agree.
    booked = next(t for t in load_transcripts(folder / run_dir_of(run)) if t.case == "book a table")
    (call,) = booked.tool_calls
    assert call.output["id"] == booked.state["bookings"][1]["id"] == 1

    # Fixed again, and the same run scored under it.
    shutil.copy(EXAMPLE, folder / "bistro.yaml")
    score_command, score_shown = shown[4]
    assert score_command.startswith("evalspec score bistro.yaml -t runs/bistro/")
    out = _evalspec("score", "bistro.yaml", "-t", run_dir_of(run), cwd=folder)
    assert out.returncode == 0, out.stderr
    assert result_table(out.stdout.splitlines(), MODEL) == result_table(score_shown, MODEL)
    assert len(shown) == 5


@pytest.mark.slow
@pytest.mark.parametrize(
    ("page", "requests"),
    [("conversations.md", 5), ("simulated-users.md", 6)],
)
def test_the_conversation_pages_show_what_evalspec_prints(
    page: str, requests: int, folder: Path
) -> None:
    ((command, lines),) = shown_commands(DOCS / page)
    run = _evalspec(*command.split()[1:], cwd=folder)
    assert run.returncode == 0, run.stderr
    assert result_table(run.stdout.splitlines(), MODEL) == result_table(lines, MODEL)
    counts = f"model requests: {requests} replayed, 0 called"
    assert counts in run.stdout and any(counts in line for line in lines)
    guest = [line.rstrip() for line in run.stdout.splitlines() if line.startswith("simulated user")]
    assert guest == [line for line in lines if line.startswith("simulated user")]


def test_the_example_recordings_say_they_are_examples() -> None:
    first = EXAMPLE.with_name("bistro.recordings.jsonl").read_text(encoding="utf-8")
    assert first.startswith('{"_comment": "EXAMPLE recordings: scripted answers')
    assert "example recordings" in EXAMPLE.read_text(encoding="utf-8")
    for page in PAGES:
        text = (DOCS / page).read_text(encoding="utf-8")
        assert "example recordings" in text and "not a real" in text, page
