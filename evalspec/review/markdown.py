"""The diff as Markdown: the pull-request comment a reviewer reads.

Order is severity: security-relevant changes (where API keys go), then transcripts that matched
nothing, then the suite changes every case shares, then a table of cases (gating regressions,
cases without evidence, other movements), then per case what changed in the suite, why its
evidence is stale and the rows that explain the score.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec.files import write_text_atomic
from evalspec.report.markdown import GITHUB_COMMENT_LIMIT, cell, markdown_table
from evalspec.review.diff import (
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_SECURITY,
    EXIT_UNVERIFIED,
    CaseChange,
    Comparison,
    RowChange,
    change_text,
    row_text,
    shown_changes,
    side_text,
)

EXIT_MEANING = {
    EXIT_OK: "",
    EXIT_REGRESSION: "exit code 1 (a passing case now fails)",
    EXIT_UNVERIFIED: "exit code 3 (evidence missing or stale: record new answers)",
    EXIT_SECURITY: "exit code 4 (security-relevant change: where API keys go changed)",
}


def headline(c0: Comparison) -> str:
    """`**1 regression, 5 unchanged** · exit code 1 (...)`."""
    meaning = EXIT_MEANING.get(c0.exit_code, f"exit code {c0.exit_code}")
    return f"**{cell(c0.summary(), 300)}**" + (f" · {meaning}" if meaning else "")


def alerts(c0: Comparison, suite: str = "") -> list[str]:
    """Security-relevant changes and skipped transcripts: bullet lines, most severe first."""
    where = f"{suite}: " if suite else ""
    out = [f"- :warning: **security** {cell(where + s, 400)}" for s in c0.security]
    out += [f"- :warning: **transcripts skipped** {cell(where + s, 400)}" for s in c0.skipped]
    return out


def case_table(c0: Comparison, shown: list[CaseChange], suite: str = "") -> list[str]:
    models = {c.model for c in c0.changes}
    header = (
        (["suite"] if suite else [])
        + ["case"]
        + (["model"] if len(models) > 1 else [])
        + ["before", "after", "change"]
    )
    return markdown_table(
        header,
        [
            ([cell(suite)] if suite else [])
            + [cell(c.case)]
            + ([cell(c.model)] if len(models) > 1 else [])
            + [side_text(c.before), side_text(c.after), cell(change_text(c, c0))]
            for c in shown
        ],
    )


def case_details(c: CaseChange, suite: str = "") -> str | None:
    """A folded block: the suite changes that affect the case, stale evidence, moved rows."""
    reason_moved = c.before and c.after and c.before.reason != c.after.reason
    if not (c.rows or c.named or c.stale or reason_moved):
        return None
    where = f"{cell(suite)} · " if suite else ""
    block = [
        "",
        f"<details><summary>{where}{cell(c.case)} · {cell(c.model)}: "
        f"{side_text(c.before)} → {side_text(c.after)}</summary>",
        "",
    ]
    block += [f"- changed: {cell(item, 300)}" for item in c.named]
    block += [f"- stale evidence: {cell(item, 300)}" for item in c.stale]
    if reason_moved and c.before and c.after:
        block += [
            f"- before: {cell(c.before.reason, 300)}",
            f"- after: {cell(c.after.reason, 300)}",
        ]
    if c.rows:
        block += [
            "",
            *markdown_table(
                ["field", "expected", "actual", "before", "after", "why (after)"],
                [
                    [
                        cell(r.field + (f" (call {r.call + 1})" if r.call is not None else ""))
                        + (f" · trial {r.trial + 1}" if r.trial else ""),
                        cell((r.after or r.before).expected, 60),  # type: ignore[union-attr]
                        cell((r.after or r.before).actual, 60),  # type: ignore[union-attr]
                        f"{r.before.score:.2f}×{r.before.weight:g}" if r.before else "-",
                        f"{r.after.score:.2f}×{r.after.weight:g}" if r.after else "-",
                        cell(_why(r), 200),
                    ]
                    for r in c.rows
                ],
            ),
        ]
    block += ["", "</details>"]
    return "\n".join(block)


def _why(r: RowChange) -> str:
    if r.verdict_only:
        return row_text(r)
    row = r.after or r.before
    return row.reason if row else ""


def fit(body: str, details: list[str], limit: int) -> str:
    """Append the detail blocks that fit in `limit`; say so when some were left out."""
    note = "\n\n_Some explanations were left out to fit the comment size limit._\n"
    for block in details:
        if len(body) + len(block) + len(note) > limit:
            return body + note
        body += block + "\n"
    return body


def render_diff_markdown(
    comparison: Comparison, *, show_unchanged: bool = False, limit: int = GITHUB_COMMENT_LIMIT
) -> str:
    """A PR comment for one suite: the summary, alerts, a table of changed cases, details.

    When the text would exceed `limit`, the explanations of the last cases are left out (the
    table stays complete) and a line says so.
    """
    c0 = comparison
    head = [
        f"### {cell(c0.title)}",
        "",
        f"`{cell(c0.before_label)}` → `{cell(c0.after_label)}`",
        "",
        headline(c0),
        "",
    ]
    head += alerts(c0)
    head += [f"- every case: {cell(item, 300)}" for item in c0.suite_wide]
    head += [""] + [f"_{cell(n, 300)}_" for n in c0.notes] + [""]
    shown = shown_changes(c0, show_unchanged=show_unchanged)
    table = case_table(c0, shown) if shown else ["No case changed."]
    body = "\n".join(head + table) + "\n"
    details = [d for d in (case_details(c) for c in shown) if d is not None]
    return fit(body, details, limit)


def write_diff_markdown(comparison: Comparison, path: Path, **kwargs: Any) -> None:
    write_text_atomic(path, render_diff_markdown(comparison, **kwargs))
