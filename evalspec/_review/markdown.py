"""`evalspec review` as Markdown: one pull-request comment for every suite of a repository.

Each suite's comparison is written with the pieces of evalspec._compare.markdown; here they are
merged across suites, most severe first, within GitHub's comment size limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from evalspec._compare.classify import severity
from evalspec._compare.markdown import (
    EXIT_MEANING,
    alerts,
    case_details,
    fit_comment,
    named_text,
    noise_markdown,
    tool_drift_markdown,
)
from evalspec._compare.records import CaseChange, Comparison
from evalspec._compare.text import change_text, shown_changes, side_text
from evalspec._review.repo import Review
from evalspec._util.files import write_text_atomic
from evalspec._util.markdown import GITHUB_COMMENT_LIMIT, cell, code, markdown_table

REVIEW_MARKER = "<!-- evalspec-review -->"
"""First line of the comment: the action finds and updates its own comment by it."""


class _Present(NamedTuple):
    """A suite of the review that the head still has, with its comparison."""

    path: str
    comparison: Comparison
    untouched: bool


def render_review_markdown(review: Review, *, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """One PR comment for every suite, most severe first across suites.

    Security-relevant changes lead, then one table of every case that moved or lacks evidence
    (regressions, re-run needed, needs a run, then other movements), then suite-wide changes;
    suites with nothing to say share one line; per-case explanations come last, folded.
    """
    present = [
        _Present(s.path, s.comparison, s.untouched)
        for s in review.suites
        if s.comparison is not None
    ]
    rows = [(s, c) for s in present for c in shown_changes(s.comparison, show_unchanged=False)]
    rows.sort(key=lambda sc: severity(sc[1]))
    head = _review_head(review, present)
    tail = _calibration(review) + _suite_changes(present) + _suites_list(review)
    details = [d for s, c in rows if (d := case_details(c, s.path)) is not None]
    return fit_comment("\n".join(head), _case_table(rows), "\n".join(tail), details, limit)


def _review_head(review: Review, present: list[_Present]) -> list[str]:
    """The verdict, then security-relevant changes, skipped transcripts and the noise test."""
    meaning = EXIT_MEANING.get(review.exit_code, f"exit code {review.exit_code}")
    out = [
        REVIEW_MARKER,
        "## evalspec review",
        "",
        f"Base {code(review.base_ref)} · {len(review.suites)} suite"
        f"{'s' if len(review.suites) != 1 else ''}"
        + (f" · **{meaning}**" if meaning else " · nothing to stop for"),
        "",
    ]
    security = [(s.path, item) for s in present for item in s.comparison.security]
    if security:
        out += ["### :rotating_light: Security-relevant changes: where keys go, what runs", ""]
        out += [f"- {code(path)}: {cell(item, 400)}" for path, item in security]
        out += [
            "",
            "Do not run the head suites with secrets until the owner of those secrets has "
            "checked these endpoints, servers and models.",
            "",
        ]
    alerts_ = [line for s in present for line in alerts(s.comparison, s.path) if "skipped" in line]
    out += [*alerts_, ""] if alerts_ else []
    noise = [
        line for s in present if not s.untouched for line in noise_markdown(s.comparison, s.path)
    ]
    if noise:
        out += ["### Signal or noise", "", *noise, ""]
    return out


def _case_table(rows: list[tuple[_Present, CaseChange]]) -> list[str]:
    """Every case shown across suites, one table, most severe first."""
    if not rows:
        return []
    return markdown_table(
        ["suite", "case", "model", "suite change", "before", "after", "outcome"],
        [
            [
                code(s.path, in_table=True),
                cell(c.case),
                cell(c.model),
                named_text(c, s.comparison),
                side_text(c.before),
                side_text(c.after),
                cell(change_text(c, s.comparison)),
            ]
            for s, c in rows
        ],
    )


def _calibration(review: Review) -> list[str]:
    """Judges whose calibration against people a change made stale, and what it did to it."""
    stale = [(s.path, line) for s in review.suites for line in s.calibration]
    if not stale:
        return []
    out = ["### Judge calibration", ""]
    out += [f"- {code(path)}: {cell(line, 400)}" for path, line in stale]
    return [*out, ""]


def _suite_changes(present: list[_Present]) -> list[str]:
    """Changes to every case of a suite, other changes to suite files, recordings changed."""
    out: list[str] = []
    wide = [(s.path, item) for s in present for item in s.comparison.suite_wide]
    if wide:
        out += ["### Changes to every case of a suite", ""]
        out += [f"- {code(path)}: {cell(item, 300)}" for path, item in wide]
        out.append("")
    other = [(s.path, item) for s in present for item in s.comparison.suite_changes]
    if other:
        out += ["### Other changes to suite files", ""]
        out += [f"- `{cell(path)}`: {cell(item, 300)}" for path, item in other]
        out.append("")
    out += recordings_markdown([(s.path, s.comparison) for s in present])
    return out + tool_drift_markdown([(s.path, s.comparison) for s in present])


def _suites_list(review: Review) -> list[str]:
    """Each suite's one-line summary; untouched and removed suites share a line each."""
    out = ["### Suites", ""]
    for s in review.suites:
        if s.comparison is not None and not s.untouched:
            out.append(f"- {code(s.path)}: {cell(s.comparison.summary(), 300)}")
    untouched = [code(s.path) for s in review.suites if s.untouched]
    if untouched:
        out.append(f"- Untouched: {', '.join(untouched)} (no case changed).")
    removed = [code(s.path) for s in review.suites if s.comparison is None]
    if removed:
        out.append(f"- Removed in this change: {', '.join(removed)}.")
    return [*out, "", "_No model or endpoint was called: recorded answers were re-scored._", ""]


def recordings_markdown(suites: list[tuple[str, Comparison]]) -> list[str]:
    """Every recordings file the pull request changed, by path, with its counts; recorded
    requests that do not give their key lead, listed (the diff shows them to reviewers)."""
    changes = [r for _, c in suites for r in c.recordings]
    if not changes:
        return []
    out = ["### Recordings changed", ""]
    for rec in sorted(changes, key=lambda r: (not r.unverified, r.path)):
        mark = ":warning: " if rec.unverified else ""
        out.append(f"- {mark}{code(rec.path)}: {cell(rec.text(), 400)}")
        out += [f"  - {cell(finding, 300)}" for finding in rec.findings]
        if rec.unverified > len(rec.findings):
            out.append(f"  - and {rec.unverified - len(rec.findings)} more")
    return [*out, ""]


def write_review_markdown(review: Review, path: Path, **kwargs: Any) -> None:
    write_text_atomic(path, render_review_markdown(review, **kwargs))
