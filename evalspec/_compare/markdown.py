"""A comparison as Markdown: the pull-request comment a reviewer reads of one suite.

Order is severity: security-relevant changes (where keys go, what runs), then transcripts that
matched nothing, then the suite changes every case shares, then a table of cases (gating
regressions, cases without evidence, other movements), then per case what changed in the suite,
why its evidence is stale and the rows that explain the score. The pieces are shared with the
comment on a whole repository (evalspec._review.markdown).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalspec._compare.records import (
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_SECURITY,
    EXIT_UNVERIFIED,
    CaseChange,
    Comparison,
    RowChange,
    matrix_rows,
)
from evalspec._compare.text import (
    VARIANTS_HEADING,
    change_text,
    noise_lines,
    row_text,
    shown_changes,
    side_text,
)
from evalspec._compare.words import clipped
from evalspec._util.files import write_text_atomic
from evalspec._util.markdown import GITHUB_COMMENT_LIMIT, cell, code, markdown_table

EXIT_MEANING = {
    EXIT_OK: "",
    EXIT_REGRESSION: "exit code 1 (the gate failed: see below)",
    EXIT_UNVERIFIED: "exit code 3 (evidence missing or stale: record new answers)",
    EXIT_SECURITY: "exit code 4 (security-relevant change: where keys go or what runs changed)",
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


def noise_markdown(c0: Comparison, suite: str = "") -> list[str]:
    """Per model: the paired change in pass rate (significant or within noise), its power,
    flaky cases and spend; then the gate's verdict. Bullet lines."""
    where = f"{code(suite)} " if suite else ""
    out = []
    for m in c0.noise:
        lines = noise_lines(m)
        mark = ":small_red_triangle_down: " if m.pass_rate.drop else ""
        out.append(f"- {mark}{where}{cell(lines[0], 600)}")
        out += [f"  - {cell(line, 600)}" for line in lines[1:]]
    for m in c0.variants:
        lines = noise_lines(m)
        out.append(f"- {where}{VARIANTS_HEADING} {cell(lines[0], 600)}")
        out += [f"  - {cell(line, 600)}" for line in lines[1:]]
    failures = c0.gate_failures
    gate = f"gate `{c0.gate.mode}`"
    if failures:
        out += [f"- :x: {where}**{gate} failed**: {cell(why, 400)}" for why in failures]
    elif c0.noise:
        out.append(f"- {where}{gate}: passed")
    out += [f"- :warning: {where}{cell(note, 600)}" for note in c0.gate_notes]
    return out


def named_text(c: CaseChange, c0: Comparison) -> str:
    """The suite changes of one case, for a table cell: the proven cause of a moved verdict,
    else what was changed."""
    if c.causes:
        return cell("cause: " + "; ".join(c.causes), 300)
    if c.named:
        return cell("; ".join(c.named), 200)
    return "shared by every case (below)" if c0.suite_wide else "-"


def case_table(c0: Comparison, shown: list[CaseChange]) -> list[str]:
    models = {c.model for c in c0.changes}
    header = (
        ["case"]
        + (["model"] if len(models) > 1 else [])
        + ["suite change", "before", "after", "outcome"]
    )
    return markdown_table(
        header,
        [
            [cell(c.case)]
            + ([cell(c.model)] if len(models) > 1 else [])
            + [named_text(c, c0), side_text(c.before), side_text(c.after), cell(change_text(c, c0))]
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
    block += [f"- **cause**: {cell(item, 300)}" for item in c.causes]
    block += [
        f"- with {cell(applied, 200)}: {cell(verdict, 40)}"
        for applied, verdict in c.counterfactuals
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
                        cell(
                            clipped(r.field)
                            + (f" (call {r.call + 1})" if r.call is not None else "")
                        )
                        + (f" · trial {r.trial}" if r.trial else ""),
                        *[cell(value, 60) for value in _expected_actual(r)],
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


def _expected_actual(r: RowChange) -> tuple[Any, Any]:
    """The row's expected and actual values as it stands: after the change, else before it."""
    row = r.after or r.before
    return (row.expected, row.actual) if row else (None, None)


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


def _matrix_markdown(comparison: Comparison, *, show_unchanged: bool) -> list[str]:
    """The model × case matrix: a column per (run, model); unchanged cases only when asked."""
    rows = [
        [cell(case), *(side_text(s) for s in cells), kind]
        for case, kind, cells in matrix_rows(comparison)
        if show_unchanged or kind != "unchanged"
    ]
    header = ["case", *(cell(c.label) for c in comparison.columns), "change"]
    return [*markdown_table(header, rows), ""] if rows else []


def render_diff_markdown(
    comparison: Comparison, *, show_unchanged: bool = False, limit: int = GITHUB_COMMENT_LIMIT
) -> str:
    """A PR comment for one suite: the summary, alerts, a table of changed cases, details.

    When the text would exceed `limit`, the explanations of the last cases are left out and a
    line says so; when the table alone is too long, its most severe rows stay (`fit_comment`).
    """
    c0 = comparison
    head = [
        f"### {cell(c0.title)}",
        "",
        f"{code(c0.before_label)} → {code(c0.after_label)}",
        "",
        headline(c0),
        "",
    ]
    head += alerts(c0)
    head += noise_markdown(c0)
    head += [f"- every case: {cell(item, 300)}" for item in c0.suite_wide]
    head += [f"- suite: {cell(item, 300)}" for item in c0.suite_changes]
    head += [""] + [f"_{cell(n, 300)}_" for n in c0.notes] + [""]
    head += tool_drift_markdown([("", c0)])
    if c0.columns:
        head += _matrix_markdown(c0, show_unchanged=show_unchanged)
    shown = shown_changes(c0, show_unchanged=show_unchanged)
    table = case_table(c0, shown) if shown else []
    details = [d for d in (case_details(c) for c in shown) if d is not None]
    tail = "" if shown else "No case changed.\n"
    return fit_comment("\n".join(head), table, tail, details, limit, heading=[])


DRIFT_LINES = 40
"""The changes shown per server (a server can drop a hundred tools at once); the rest are
counted."""


def tool_drift_markdown(suites: list[tuple[str, Comparison]]) -> list[str]:
    """Each MCP server whose tool list in a suite's lock file changed, with what changed (for
    a review of many suites, each server's line names its suite; `path` "" names none)."""
    drifted = [(path, d) for path, c in suites for d in c.tool_drift]
    if not drifted:
        return []
    out = ["### MCP servers' tool lists changed", ""]
    for path, d in drifted:
        where = f"{code(path)} · " if path else ""
        out.append(f"- {where}server {code(d.server, 200)}: {cell(d.counts())}")
        lines = d.lines()
        out += [f"  - {cell(line, 400)}" for line in lines[:DRIFT_LINES]]
        if len(lines) > DRIFT_LINES:
            out.append(f"  - and {len(lines) - DRIFT_LINES} more changes")
    return [*out, ""]


def write_diff_markdown(comparison: Comparison, path: Path, **kwargs: Any) -> None:
    write_text_atomic(path, render_diff_markdown(comparison, **kwargs))


FULL_REVIEW_NOTE = (
    "\n\n_Shortened to fit GitHub's comment size limit: the full review is the "
    "`evalspec-review` artifact of this workflow run._\n"
)


def fit_comment(
    head: str,
    table: list[str],
    tail: str,
    details: list[str],
    limit: int,
    heading: tuple[str, ...] | list[str] = ("### Cases", ""),
) -> str:
    """The comment within `limit` characters: whole when it fits; else summarised (the most
    severe case rows that fit, and how many more), folded (no explanations), and as a last resort
    cut at a line; a shortened comment points to the full review."""
    cases = [*heading, *table, ""] if table else []
    whole = "\n".join([head, *cases, tail])
    if len(whole) <= limit:
        return fit(whole, details, limit)
    budget = limit - len(head) - len(tail) - len(FULL_REVIEW_NOTE) - 200
    kept = table[:2]
    used = sum(len(line) + 1 for line in kept)
    for line in table[2:]:
        if used + len(line) + 1 > budget:
            break
        kept.append(line)
        used += len(line) + 1
    more = len(table) - len(kept)
    if len(kept) > 2:
        cases = [*heading, *kept, "", f"_{more} more case rows are in the full review._", ""]
    else:
        cases = [f"_{len(table) - 2} case rows are in the full review._", ""]
    body = "\n".join([head, *cases, tail])
    room = limit - len(FULL_REVIEW_NOTE)
    if len(body) > room:
        body = body[: body.rfind("\n", 0, room)]
    return body + FULL_REVIEW_NOTE
