"""A run's console and Markdown show what the model called and the tools answered in the
conversations that did not pass, read back from the run directory (a run keeps no transcript
in memory), by role, never as `expected | actual`."""

from __future__ import annotations

from support import ROOT, in_process


def test_a_failed_conversation_shows_its_calls_and_outputs_by_role(tmp_path):
    markdown = tmp_path / "report.md"
    done = in_process(
        "run", ROOT / "suites" / "support.yaml", "--record", "offline",
        "--out", tmp_path / "run", "--markdown", markdown,
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # one conversation fails by design
    out = done.stdout
    assert 'model called: refund_order {"order_id": "A17", "reason": "not_needed"}' in out
    assert 'tool answered: {"days_to_card": 5, "refunded": "A17"}' in out
    assert "user said: Please refund the toaster, I don't need it." in out
    # What the turn asked for is its own line, after what happened: never beside the answer.
    assert 'expected: refund_order {"order_id": "B22", "reason": "not_needed"}' in out
    md = markdown.read_text(encoding="utf-8")
    assert "| model called | refund\\_order" in md or "| model called | refund_order" in md
    assert "| tool answered |" in md
    assert "| expected | refund\\_order" in md
