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

from evalspec._report.html_data import (
    STATUSES,
    HtmlRun,
    build_payload,
    gc_paused,
    number,
    script_json,
    shown,
)
from evalspec._util.files import write_text_atomic

if TYPE_CHECKING:
    from evalspec._report.columns import Column
    from evalspec._report.records import Report

ASSETS = Path(__file__).with_name("assets")
BINS = 10
CHART = {"width": 200, "height": 66, "base": 54, "top": 12}
"""Pixels: the bars stand on `base` and reach up to `top`; threshold labels sit above them."""


@cache
def _assets() -> tuple[Any, str, str]:
    """The template, script and stylesheet, read once."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(ASSETS), autoescape=True, keep_trailing_newline=True
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


def _thresholds(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The suite's fail and warn thresholds as marks on the chart's axis (older results.json
    files have none)."""
    raw_rubric = results.get("rubric")
    rubric: dict[str, Any] = raw_rubric if isinstance(raw_rubric, dict) else {}
    marks = []
    for key, name in (("fail_threshold", "fail below"), ("warn_threshold", "warn below")):
        value = rubric.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
            x = round(value * CHART["width"], 1)
            marks.append(
                {"x": x, "value": f"{value:g}", "label": f"{name} {value:g}", "kind": key[:4]}
            )
    return marks


def _summary(column: Column, results: dict[str, Any]) -> dict[str, Any]:
    m = column.summary
    passing = sum(s.status in ("pass", "warn") for s in column.cells.values())
    cost = m.get("cost")
    return {
        "label": column.label,
        "cases": len(column.cells),
        "pass_rate": f"{passing / len(column.cells):.0%}" if column.cells else "-",
        "mean": _figure(m.get("mean_score"), "{:.3f}"),
        "pass_at_k": _figure(m.get("pass_at_k"), "{:.2f}") + f" (k={int(number(m.get('k'), 1.0))})",
        "pass_hat_k": _figure(m.get("pass_hat_k"), "{:.2f}"),
        "tokens": f"{int(number(m.get('tokens'))):,}",
        "latency": f"{number(m.get('latency_s')):.1f} s",
        "latency_mean": (
            f"{number(m.get('latency_s')) / len(column.cells):.2f} s" if column.cells else "-"
        ),
        "cost": _figure(cost, "{:.4f}"),
        "bars": _bars(column),
        "thresholds": _thresholds(results),
        "pass_rate_ci": _interval(m.get("pass_rate_ci"), percent=True),
        "mean_ci": _interval(m.get("mean_score_ci"), percent=False),
        "flaky": _flaky(column, results),
        "over_budget": "; ".join(
            shown(x) for x in m.get("over_budget") or () if isinstance(x, str)
        ),
    }


def _interval(value: Any, *, percent: bool) -> str:
    """`95% CI 64–90%` from a results.json interval, or empty when it is absent or malformed."""
    from evalspec._report.uncertainty import interval_text

    keys = ("confidence", "low", "high")
    if not isinstance(value, dict) or any(_figure(value.get(k), "{}") == "-" for k in keys):
        return ""
    return interval_text({k: float(value[k]) for k in keys}, percent=percent).strip("()")


def _flaky(column: Column, results: dict[str, Any]) -> str:
    """`flaky: a 2/5, b 1/5`, the cases of this column results.json marks flaky; or empty."""
    found = [
        f"{shown(c.get('case'))} {int(number(c.get('passed')))}/{int(number(c.get('trials')))}"
        for c in results.get("cases") or ()
        if isinstance(c, dict) and c.get("model") == column.model and c.get("flaky") is True
    ]
    return ("flaky: " + ", ".join(found[:20]) + (" …" if len(found) > 20 else "")) if found else ""


def _figure(value: Any, fmt: str) -> str:
    """A summary figure, or `-` when the run does not have it (older results.json)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return fmt.format(value)


def _run_meta(run: HtmlRun) -> dict[str, Any]:
    r = run.results
    specs = [s for s in r.get("model_specs") or () if isinstance(s, dict)]
    return {
        "label": run.label,
        "suite": shown(r.get("suite")),
        "path": shown(r.get("path")),
        "created": shown(r.get("created")),
        "models": [
            {
                "name": shown(s.get("name")),
                "model": shown(s.get("model")),
                "params": shown(s.get("params")) if s.get("params") else "",
                "price": shown(s.get("price")) if s.get("price") else "",
            }
            for s in specs
        ],
    }


def render_runs(runs: Sequence[HtmlRun]) -> str:
    """The report page for one run or several side by side."""
    template, js, css = _assets()
    with gc_paused():
        payload, columns = build_payload(runs)
    suites = list(dict.fromkeys(shown(r.results.get("suite")) for r in runs))
    tags = sorted({t for c in payload["cases"] for t in c["t"]})
    descriptions = [shown(r.results.get("description")) for r in runs]
    page: str = template.render(
        title=" vs ".join(suites) or "report",
        description=next((d for d in descriptions if d), ""),
        runs=[_run_meta(r) for r in runs],
        summaries=[_summary(c, runs[c.run_index].results) for c in columns],
        priced=any(_figure(c.summary.get("cost"), "{}") != "-" for c in columns),
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
    from the report, or from `run_dir`'s transcripts.jsonl when a streamed run kept none."""
    from evalspec._report.runs import load_transcript_dicts

    results = report.to_dict()
    transcripts = {t.item_id: t.to_dict() for t in report.transcripts}
    if not transcripts and run_dir is not None:
        transcripts = load_transcript_dicts(run_dir)
    return HtmlRun(label or report.suite.path or report.suite.name, results, transcripts)


def render_html(report: Report, run_dir: Path | None = None) -> str:
    with gc_paused():
        return render_runs([report_run(report, run_dir=run_dir)])


def write_html(report: Report, path: Path, run_dir: Path | None = None) -> None:
    """Write atomically, so a reader never sees half a page."""
    write_text_atomic(path, render_html(report, run_dir))


def write_runs_html(runs: Sequence[HtmlRun], path: Path) -> None:
    write_text_atomic(path, render_runs(runs))
