"""Markdown reports: a run's results, and a diff of two versions, for PR comments and job pages.

Everything a suite or a model wrote is escaped: GitHub renders HTML inside Markdown, so a case
name or a model answer holding `<script>` or `|` must not become markup or break a table.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalspec.api import Report
    from evalspec.review import Comparison
    from evalspec.scoring.types import CaseResult

GITHUB_COMMENT_LIMIT = 65_000
"""GitHub rejects comments over 65,536 characters; keep a margin."""


def cell(value: Any, limit: int = 120) -> str:
    """One table cell: a single line, HTML-escaped, pipes escaped, long text shortened."""
    if value is None:
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text, quote=False).replace("|", "\\|")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def _rows_table(result: CaseResult) -> list[str]:
    return _table(
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


def render_markdown(report: Report) -> str:
    """The whole report: a summary per model, a table of cases, the rows of non-passing ones."""
    out = [f"# evalspec: {cell(report.suite.name)}", ""]
    for m in report.models:
        out.append(f"## {cell(m.model)}")
        out.append("")
        summary = (
            f"**{m.passed} passed, {m.warned} warned, {m.failed} failed**"
            + (f", {m.errors} errors" if m.errors else "")
            + f" of {m.cases} cases · mean score {m.mean_score:.2f} · pass@1 {m.pass_at_1:.2f}"
        )
        out += [summary, ""]
        mine = [c for c in report.cases if c.model == m.model]
        out += _table(
            ["case", "result", "score", "why"],
            [
                [
                    cell(c.case),
                    c.status.upper() + (f" {c.passed}/{c.trials}" if c.trials > 1 else ""),
                    f"{c.score:.3f}",
                    "" if c.status == "pass" else cell(c.reason, 200),
                ]
                for c in mine
            ],
        )
        out.append("")
        for c in mine:
            if c.status == "pass":
                continue
            out.append(
                f"<details><summary>{c.status.upper()} {cell(c.case)}: {c.score:.3f}</summary>"
            )
            out.append("")
            for r in c.results:
                if r.status == "pass":
                    continue
                if c.trials > 1:
                    out += [f"Trial {r.trial + 1}: {r.status.upper()} {r.score:.3f}", ""]
                out += [cell(r.reason, 400), ""]
                if r.rows:
                    out += [*_rows_table(r), ""]
            out += ["</details>", ""]
    return "\n".join(out).rstrip() + "\n"


def write_markdown(report: Report, path: Path) -> None:
    _write(path, render_markdown(report))


def _write(path: Path, text: str) -> None:
    """Write atomically, so a CI step never posts half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def render_diff_markdown(
    comparison: Comparison, *, show_unchanged: bool = False, limit: int = GITHUB_COMMENT_LIMIT
) -> str:
    """A PR comment: the summary, a table of changed cases, and the rows that explain them.

    When the text would exceed `limit`, the explanations of the last cases are left out (the
    table stays complete) and a line says so.
    """
    from evalspec.review import change_text, shown_changes, side_text

    c0 = comparison
    head = [
        f"### {cell(c0.title)}",
        "",
        f"`{cell(c0.before_label)}` → `{cell(c0.after_label)}`",
        "",
        f"**{cell(c0.summary())}**"
        + (" · exit code 1 (a passing case now fails)" if c0.exit_code else ""),
        "",
    ]
    head += [f"_{cell(n, 300)}_" for n in c0.notes] + [""]
    shown = shown_changes(c0, show_unchanged=show_unchanged)
    models = {c.model for c in c0.changes}
    header = ["case"] + (["model"] if len(models) > 1 else []) + ["before", "after", "change"]
    table = _table(
        header,
        [
            [cell(c.case)]
            + ([cell(c.model)] if len(models) > 1 else [])
            + [side_text(c.before), side_text(c.after), cell(change_text(c, c0))]
            for c in shown
        ],
    )
    if not shown:
        table = ["No case changed."]
    body = "\n".join(head + table) + "\n"
    details: list[str] = []
    for c in shown:
        if not c.rows and (
            c.before is None or c.after is None or c.before.reason == c.after.reason
        ):
            continue
        block = [
            "",
            f"<details><summary>{cell(c.case)} · {cell(c.model)}: "
            f"{side_text(c.before)} → {side_text(c.after)}</summary>",
            "",
        ]
        if c.before and c.after and c.before.reason != c.after.reason:
            block += [
                f"- before: {cell(c.before.reason, 300)}",
                f"- after: {cell(c.after.reason, 300)}",
                "",
            ]
        if c.rows:
            block += _table(
                ["field", "expected", "actual", "before", "after", "why (after)"],
                [
                    [
                        cell(r.field + (f" (call {r.call + 1})" if r.call is not None else ""))
                        + (f" · trial {r.trial + 1}" if r.trial else ""),
                        cell((r.after or r.before).expected, 60),
                        cell((r.after or r.before).actual, 60),
                        f"{r.before.score:.2f}×{r.before.weight:g}" if r.before else "-",
                        f"{r.after.score:.2f}×{r.after.weight:g}" if r.after else "-",
                        cell((r.after or r.before).reason, 200),
                    ]
                    for r in c.rows
                ],
            )
        block += ["", "</details>"]
        details.append("\n".join(block))
    note = "\n\n_Some explanations were left out to fit the comment size limit._\n"
    for block in details:
        if len(body) + len(block) + len(note) > limit:
            return body + note
        body += block + "\n"
    return body


def write_diff_markdown(comparison: Comparison, path: Path, **kwargs: Any) -> None:
    _write(path, render_diff_markdown(comparison, **kwargs))
