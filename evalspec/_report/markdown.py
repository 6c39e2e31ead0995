"""Markdown reports of a run's results, for PR comments and job pages (a comparison's Markdown
is evalspec._compare.markdown).

Everything a suite or a model wrote is escaped (evalspec._util.markdown): GitHub renders HTML
inside Markdown, so a case name or a model answer holding `<script>` or `|` must not become
markup or break a table.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalspec._report.conversation import (
    calls_by_item,
    conversation,
    role_label,
    simulator_of,
)
from evalspec._report.uncertainty import (
    budget_text,
    flaky_text,
    rates_text,
    robustness_lines,
    simulated_user_text,
    user_faults_text,
)
from evalspec._util.files import atomic_write
from evalspec._util.markdown import cell, markdown_table, table_lines

if TYPE_CHECKING:
    from collections.abc import Iterator

    from evalspec._report.records import Report
    from evalspec._scoring.trials import CaseSummary, ModelSummary
    from evalspec._scoring.types import CaseResult


def _rows_table(result: CaseResult) -> list[str]:
    return markdown_table(
        ["field", "expected", "actual", "score", "weight", "why"],
        [
            [
                cell(r.field + (f" (call {r.call + 1})" if r.call is not None else "")),
                cell(r.expected, 60),
                cell(r.actual, 60),
                f"{r.score:.2f}",
                f"{r.weight:g}",
                cell(r.reason, 200),
            ]
            for r in result.rows
        ],
    )


def _turns_table(result: CaseResult, report: Report) -> list[str]:
    """A row per line of a conversation, by role (what a user said is never an expected value
    beside the model's answer), each judged turn's verdict on its first row."""
    calls = calls_by_item(report.transcripts).get(result.item_id, [])
    player = simulator_of(report.suite, result.case)
    rows = []
    for turn in conversation(result.details, calls):
        verdict = turn.status.upper() if turn.status else "not judged"
        score = f"{turn.score:.3f}" if turn.score is not None else ""
        why = cell(turn.reason, 200) if turn.status not in (None, "pass") else ""
        for i, line in enumerate(turn.lines):
            first = i == 0
            rows.append(
                [
                    f"turn {turn.number}" if first else "",
                    cell(role_label(line.role, player)),
                    cell(line.text, 200),
                    verdict if first else "",
                    score if first else "",
                    why if first else "",
                ]
            )
    return markdown_table(["turn", "who", "what", "result", "score", "why"], rows)


def markdown_lines(report: Report) -> Iterator[str]:
    """The whole report, line by line: a summary per model, a table of cases, the rows of
    non-passing ones (a 50,000-case report is written as it is made, never held whole)."""
    yield from (f"# evalspec: {cell(report.suite.name)}", "")
    if report.calibration:
        yield from (*(f"- {cell(line, 1000)}" for line in report.calibration), "")
    for m in report.models:
        yield from _model_lines(report, m)


def _model_lines(report: Report, m: ModelSummary) -> Iterator[str]:
    yield from (f"## {cell(m.model)}", "")
    summary = (
        f"**{m.passed} passed, {m.warned} warned, {m.failed} failed**"
        + (f", {m.errors} errors" if m.errors else "")
        + (f", {user_faults_text(m.spoiled)}" if m.spoiled else "")
        + f" of {m.cases} cases · mean score {m.mean_score:.2f}"
        + (f" · trial pass rate {m.pass_at_1:.0%}" if m.k > 1 else "")
    )
    yield from (summary, "")
    yield from (
        "C" + rates_text(m)[1:],  # "case pass rate ...", opening a sentence
        "",
        cell(flaky_text(report.cases, m), 2000),
        "",
    )
    if m.over_budget:
        yield from (f"**{cell(budget_text(m), 1000)}**", "")
    if simulated := simulated_user_text(m):
        yield from (cell(simulated, 1000), "")
    if robust := robustness_lines(m):
        yield from (*(f"- {cell(line, 1000)}" for line in robust), "")
    mine = [c for c in report.cases if c.model == m.model]
    yield from table_lines(
        ["case", "result", "score", "why"],
        (
            [
                cell(c.case),
                c.status.upper()
                + (f" {c.passed}/{c.trials}" if c.trials > 1 else "")
                + (" flaky" if c.flaky else ""),
                f"{c.score:.3f}",
                "" if c.status == "pass" else cell(c.reason, 200),
            ]
            for c in mine
        ),
    )
    yield ""
    for c in mine:
        if c.status != "pass":
            yield from _details(report, c)


def _details(report: Report, c: CaseSummary) -> Iterator[str]:
    """A case that did not pass: each of its trials that did not, with its rows."""
    yield from (f"<details><summary>{c.status.upper()} {cell(c.case)}: {c.score:.3f}</summary>", "")
    for r in c.results:
        if r.status == "pass":
            continue
        if c.trials > 1:
            yield from (f"Trial {r.trial}: {r.status.upper()} {r.score:.3f}", "")
        yield from (cell(r.reason, 400), "")
        if r.details.get("turns"):
            yield from (*_turns_table(r, report), "")
        if r.rows:
            yield from (*_rows_table(r), "")
    yield from ("</details>", "")


def render_markdown(report: Report) -> str:
    """The whole report as one text."""
    return "\n".join(markdown_lines(report)).rstrip() + "\n"


def write_markdown(report: Report, path: Path) -> None:
    """Write atomically, line by line: the text `render_markdown` makes (its trailing blank
    lines and spaces cut, one newline at the end)."""
    with atomic_write(path) as fh:
        held: list[str] = []  # the last line with text, and the blank ones after it
        for line in markdown_lines(report):
            if line.strip():
                if held:
                    fh.write("\n".join(held) + "\n")
                held = [line]
            else:
                held.append(line)
        fh.write(("\n".join(held)).rstrip() + "\n")
