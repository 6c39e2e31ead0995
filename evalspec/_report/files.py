"""Write the report files a command was asked for, each atomically."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # ReportFiles is made before a run, while the collector still runs: stay light
    from evalspec._report.records import Report


@dataclass(frozen=True)
class ReportFiles:
    """Where to write each report; None skips it."""

    results: Path | None = None
    junit: Path | None = None
    markdown: Path | None = None
    html: Path | None = None


def write_reports(report: Report, files: ReportFiles) -> None:
    """Write results.json, JUnit XML, Markdown and HTML, as asked."""
    if files.results:
        from evalspec._report.json_report import write_json

        write_json(report, files.results)
    if files.junit:
        from evalspec._report.junit import write_junit

        write_junit(report, files.junit)
    if files.markdown:
        from evalspec._report.markdown import write_markdown

        write_markdown(report, files.markdown)
    if files.html:
        from evalspec._report.html import write_html

        # A streamed run keeps no transcripts: the page reads them from the run directory.
        write_html(report, files.html, files.results.parent if files.results else None)
