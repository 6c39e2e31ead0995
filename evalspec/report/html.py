"""A single static HTML file: per-model tables coloured by status, rows that expand to explain.

No scripts, fonts or stylesheets from elsewhere: the file opens from a CI artifact, offline.
Expanding uses <details>, so it works without JavaScript. Every text goes through html.escape.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalspec.files import write_text_atomic

if TYPE_CHECKING:
    from evalspec.report.records import Report
    from evalspec.scoring.trials import CaseSummary

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1f2328}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{border-bottom:1px solid #d0d7de;padding:.35rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:0 .45rem;border-radius:.6rem;font-weight:600;color:#fff}
.pass .badge{background:#1a7f37}.warn .badge{background:#9a6700}
.fail .badge{background:#cf222e}.error .badge{background:#8250df}
tr.warn{background:#fff8c5}tr.fail{background:#ffebe9}tr.error{background:#fbefff}
details summary{cursor:pointer}table.rows{font-size:.9em;background:#fff}
table.rows td.bad{color:#cf222e;font-weight:600}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;white-space:pre-wrap}
.summary{color:#57606a}
""".strip()


def _text(value: Any) -> str:
    if value is None:
        return "-"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return escape(text)


def _rows_html(c: CaseSummary) -> str:
    parts: list[str] = []
    for r in c.results:
        if c.trials > 1:
            parts.append(
                f"<p>Trial {r.trial + 1}: {escape(r.status.upper())} {r.score:.3f}: "
                f"{escape(r.reason)}</p>"
            )
        if not r.rows:
            continue
        parts.append(
            '<table class="rows"><tr><th>field</th><th>expected</th><th>actual</th>'
            "<th>score</th><th>weight</th><th>why</th></tr>"
        )
        for row in r.rows:
            where = row.field + (f" (call {row.call + 1})" if row.call is not None else "")
            bad = "" if row.match else ' class="bad"'
            parts.append(
                f"<tr><td{bad}>{escape(where)}</td><td><code>{_text(row.expected)}</code></td>"
                f"<td><code>{_text(row.actual)}</code></td>"
                f'<td class="num">{row.score:.2f}</td><td class="num">{row.weight:g}</td>'
                f"<td>{escape(row.reason)}</td></tr>"
            )
        parts.append("</table>")
    return "".join(parts)


def render_html(report: Report) -> str:
    name = escape(report.suite.name)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>evalspec: {name}</title><style>{_CSS}</style></head><body>",
        f"<h1>evalspec: {name}</h1>",
    ]
    if report.suite.description:
        out.append(f'<p class="summary">{escape(report.suite.description)}</p>')
    for m in report.models:
        out.append(f"<h2>{escape(m.model)}</h2>")
        out.append(
            f'<p class="summary">{m.passed} passed, {m.warned} warned, {m.failed} failed'
            + (f", {m.errors} errors" if m.errors else "")
            + f" of {m.cases} cases · mean score {m.mean_score:.2f} · "
            f"pass@1 {m.pass_at_1:.2f}</p>"
        )
        out.append(
            '<table><tr><th>case</th><th>result</th><th class="num">score</th>'
            "<th>why (click to expand)</th></tr>"
        )
        for c in report.cases:
            if c.model != m.model:
                continue
            status = c.status if c.status in ("pass", "warn", "fail", "error") else "error"
            result = escape(c.status.upper()) + (f" {c.passed}/{c.trials}" if c.trials > 1 else "")
            out.append(
                f'<tr class="{status}"><td>{escape(c.case)}</td>'
                f'<td><span class="badge">{result}</span></td>'
                f'<td class="num">{c.score:.3f}</td>'
                f"<td><details{' open' if status in ('fail', 'error') else ''}>"
                f"<summary>{escape(c.reason)}</summary>{_rows_html(c)}</details></td></tr>"
            )
        out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def write_html(report: Report, path: Path) -> None:
    """Write atomically, so a reader never sees half a page."""
    write_text_atomic(path, render_html(report))
