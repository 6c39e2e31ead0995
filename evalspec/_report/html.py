"""A single-file HTML report: models side by side, filters, search, sort, conversations.

Offline and self-contained (no CDN, font or request): it opens from a CI artifact. The page is
inert to its data: the markup is rendered by jinja2 with autoescape, the cases travel as JSON in
a <script type="application/json"> block with `<` escaped, the page's script only ever sets
text (never markup), and a Content-Security-Policy allows the page's own script and style (by
hash) and nothing else. Rows are drawn as they scroll into view, so a 10,000-case run opens and
filters at once.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from evalspec._report.confusion import confusion_rows
from evalspec._report.html_data import (
    STATUSES,
    HtmlRun,
    build_payload,
    gc_paused,
    script_json,
    shown,
)
from evalspec._report.uncertainty import robustness_rows
from evalspec._scoring.results_file import ResultsFile, plain
from evalspec._scoring.trials import SimulatedUserCost
from evalspec._util import terminal
from evalspec._util.files import write_text_atomic

if TYPE_CHECKING:
    from evalspec._compare.records import Column
    from evalspec._report.records import Report
    from evalspec._stats import Interval

ASSETS = Path(__file__).with_name("assets")
BINS = 10
CHART = {"width": 200, "height": 66, "base": 54, "top": 12}
"""Pixels: the bars stand on `base` and reach up to `top`; threshold labels sit above them."""


@cache
def _assets() -> tuple[Any, str, str]:
    """The template, script and stylesheet, read once."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(ASSETS),
        autoescape=True,
        keep_trailing_newline=True,
        # a suite's name or description, a model's label: control characters and bidirectional
        # overrides shown as escapes, never sent (the page's data is made safe by script_json)
        finalize=lambda v: v if isinstance(v, Markup) or v is None else terminal.plain(v),
    )
    js = (ASSETS / "report.js").read_text(encoding="utf-8")
    css = (ASSETS / "report.css").read_text(encoding="utf-8")
    return env.get_template("report.html.j2"), js, css


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def content_security_policy(js: str, css: str) -> str:
    """Only this page's own script and style run; nothing is fetched, framed or submitted."""
    return (
        f"default-src 'none'; script-src {_sha256(js)}; style-src {_sha256(css)}; "
        "img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'"
    )


def _bars(column: Column) -> list[dict[str, Any]]:
    """A histogram of the column's case scores in ten bands, as stacked SVG rectangles: each
    band split by the status the suite gave its cases, so the colours are the suite's own
    thresholds (a case's rubric may set its own), never fixed bands."""
    counts = [dict.fromkeys(STATUSES, 0) for _ in range(BINS)]
    for side in column.cells.values():
        counts[min(BINS - 1, max(0, int(side.score * BINS)))][side.status] += 1
    top = max(sum(c.values()) for c in counts) or 1
    width = CHART["width"] / BINS
    height = CHART["base"] - CHART["top"]
    bars = []
    for i, by_status in enumerate(counts):
        y = float(CHART["base"])
        for status, n in by_status.items():
            if not n:
                continue
            h = height * n / top
            y -= h
            bars.append(
                {
                    "x": round(i * width + 1, 1),
                    "y": round(y, 1),
                    "w": round(width - 2, 1),
                    "h": round(h, 1),
                    "status": status,
                    "label": f"score {i / BINS:.1f}–{(i + 1) / BINS:.1f}: {n} {status}",
                }
            )
    return bars


def _thresholds(results: ResultsFile) -> list[dict[str, Any]]:
    """The suite's fail and warn thresholds as marks on the chart's axis (older results.json
    files have none)."""
    rubric = results.rubric
    if rubric is None:
        return []
    marks = []
    for key, name, value in (
        ("fail_threshold", "fail below", rubric.fail_threshold),
        ("warn_threshold", "warn below", rubric.warn_threshold),
    ):
        if 0 <= value <= 1:
            x = round(value * CHART["width"], 1)
            marks.append(
                {"x": x, "value": f"{value:g}", "label": f"{name} {value:g}", "kind": key[:4]}
            )
    return marks


def _summary(column: Column, results: ResultsFile) -> dict[str, Any]:
    m = column.summary
    passing = sum(s.status in ("pass", "warn") for s in column.cells.values())
    n = len(column.cells)
    spoiled = sum(s.status == "user_fault" for s in column.cells.values())
    judged = n - spoiled  # a case its simulated user spoiled is not the model's
    if m is None:  # a results file without this model's summary: its figures are unknown
        figures = dict.fromkeys(("mean", "pass_at_k", "pass_hat_k", "cost"), "-")
        figures |= {"pass_at_k": "- (k=1)", "pass_rate_ci": "", "mean_ci": "", "over_budget": ""}
        latency, tokens = 0.0, 0
    else:
        figures = {
            "mean": f"{m.mean_score:.3f}",
            "pass_at_k": f"{m.pass_at_k:.2f} (k={m.k})",
            "pass_hat_k": f"{m.pass_hat_k:.2f}",
            "cost": "-" if m.cost is None else f"{m.cost:.4f}",
            "pass_rate_ci": _interval(m.pass_rate_ci, percent=True),
            "mean_ci": _interval(m.mean_score_ci, percent=False),
            "over_budget": "; ".join(shown(x) for x in m.over_budget),
        }
        latency, tokens = m.latency_s, m.tokens
    return {
        "label": column.label,
        "cases": n,
        "pass_rate": f"{passing / judged:.0%}" if judged else "-",
        "user_faults": f"{spoiled} not counted: the simulated user was at fault" if spoiled else "",
        "tokens": f"{tokens:,}",
        "latency": f"{latency:.1f} s",
        "latency_mean": f"{latency / n:.2f} s" if n else "-",
        "bars": _bars(column),
        "thresholds": _thresholds(results),
        "flaky": _flaky(column, results),
        "confusion": confusion_rows(m.tool_confusion) if m is not None else [],
        "robustness": robustness_rows(m) if m is not None else [],
        **figures,
    }


def _interval(value: Interval | None, *, percent: bool) -> str:
    """`95% CI 64–90%` from a results.json interval, or empty when it is absent."""
    from evalspec._report.uncertainty import interval_text

    return interval_text(value, percent=percent).strip("()") if value else ""


def _flaky(column: Column, results: ResultsFile) -> str:
    """`flaky: a 2/5, b 1/5`, the cases of this column results.json marks flaky; or empty."""
    found = [
        f"{c.case} {c.passed}/{c.trials}"
        for c in results.cases
        if c.model == column.model and c.flaky
    ]
    return ("flaky: " + ", ".join(found[:20]) + (" …" if len(found) > 20 else "")) if found else ""


def _simulators(results: ResultsFile) -> set[str]:
    """The entries of `models:` that only played a simulated user: listed apart, as players."""
    evaluated = {m.model for m in results.models}
    played = {
        name
        for m in results.models
        if isinstance(m.simulated_user, SimulatedUserCost)
        for name in m.simulated_user.models
    }
    return played - evaluated


def _run_meta(run: HtmlRun) -> dict[str, Any]:
    r = run.results
    players = _simulators(r)
    return {
        "label": run.label,
        "suite": shown(r.suite),
        "path": shown(r.path),
        "created": shown(r.created),
        "models": [
            {
                "name": s.name,
                "model": s.model,
                "params": shown(s.params) if s.params else "",
                "price": shown(plain(s.price)) if s.price else "",
            }
            for s in r.model_specs
            if s.name not in players
        ],
        "simulators": [
            {"name": s.name, "model": s.model, "params": shown(s.params) if s.params else ""}
            for s in r.model_specs
            if s.name in players
        ],
        "calibration": [shown(line) for line in r.calibration or ()],
    }


def render_runs(runs: Sequence[HtmlRun]) -> str:
    """The report page for one run or several side by side."""
    template, js, css = _assets()
    with gc_paused():
        payload, columns = build_payload(runs)
    suites = list(dict.fromkeys(shown(r.results.suite) for r in runs))
    tags = sorted({t for c in payload.cases for t in c.tags})
    descriptions = [shown(r.results.description) for r in runs]
    page: str = template.render(
        title=" vs ".join(suites) or "report",
        description=next((d for d in descriptions if d), ""),
        runs=[_run_meta(r) for r in runs],
        summaries=[_summary(c, runs[c.run_index].results) for c in columns],
        priced=any(c.summary is not None and c.summary.cost is not None for c in columns),
        chart=CHART,
        tags=tags,
        csp=content_security_policy(js, css),
        css=Markup(css),
        js=Markup(js),
        data_json=Markup(script_json(payload)),
    )
    return page


def report_run(report: Report, label: str = "", run_dir: Path | None = None) -> HtmlRun:
    """A Report as the page reads a run (the same content as results.json); the conversations
    from the report, or from `run_dir`'s transcripts.jsonl when a streamed run kept only some
    (those of the conversations its console shows) or none."""
    from evalspec._report.runs import load_transcripts_beside

    results = report.results_file()
    transcripts = {t.item_id: t for t in report.transcripts}
    if len(transcripts) < len(report.results) and run_dir is not None:
        transcripts = load_transcripts_beside(run_dir)
    return HtmlRun(label or report.suite.path or report.suite.name, results, transcripts)


def render_html(report: Report, run_dir: Path | None = None) -> str:
    with gc_paused():
        return render_runs([report_run(report, run_dir=run_dir)])


def write_html(report: Report, path: Path, run_dir: Path | None = None) -> None:
    """Write atomically, so a reader never sees half a page."""
    write_text_atomic(path, render_html(report, run_dir))


def write_runs_html(runs: Sequence[HtmlRun], path: Path) -> None:
    write_text_atomic(path, render_runs(runs))
