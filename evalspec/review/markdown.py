"""The diff as Markdown: the pull-request comment a reviewer reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec.files import write_text_atomic
from evalspec.report.markdown import GITHUB_COMMENT_LIMIT, cell, markdown_table
from evalspec.review.diff import Comparison


def render_diff_markdown(
    comparison: Comparison, *, show_unchanged: bool = False, limit: int = GITHUB_COMMENT_LIMIT
) -> str:
    """A PR comment: the summary, a table of changed cases, and the rows that explain them.

    When the text would exceed `limit`, the explanations of the last cases are left out (the
    table stays complete) and a line says so.
    """
    from evalspec.review.diff import change_text, shown_changes, side_text

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
    if c0.columns:
        head += _matrix_markdown(c0, show_unchanged=show_unchanged)
    shown = shown_changes(c0, show_unchanged=show_unchanged)
    models = {c.model for c in c0.changes}
    header = ["case"] + (["model"] if len(models) > 1 else []) + ["before", "after", "change"]
    table = markdown_table(
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
            block += markdown_table(
                ["field", "expected", "actual", "before", "after", "why (after)"],
                [
                    [
                        cell(r.field + (f" (call {r.call + 1})" if r.call is not None else ""))
                        + (f" · trial {r.trial}" if r.trial else ""),
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


def _matrix_markdown(comparison: Comparison, *, show_unchanged: bool) -> list[str]:
    """The model × case matrix: a column per (run, model); unchanged cases only when asked."""
    from evalspec.review.diff import matrix_rows, side_text

    rows = [
        [cell(case), *(side_text(s) for s in cells), kind]
        for case, kind, cells in matrix_rows(comparison)
        if show_unchanged or kind != "unchanged"
    ]
    header = ["case", *(cell(c.label) for c in comparison.columns), "change"]
    return [*markdown_table(header, rows), ""] if rows else []


def write_diff_markdown(comparison: Comparison, path: Path, **kwargs: Any) -> None:
    write_text_atomic(path, render_diff_markdown(comparison, **kwargs))
