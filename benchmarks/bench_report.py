"""What reports cost: the HTML page of a 10,000-case run, and the console for three models.

Run: ``.venv/bin/python benchmarks/bench_report.py [--cases 10000] [--console-cases 500]
[--repeat 3] [--no-browser]``

Measured in one run:
  (a) `render_html` of a scored 10,000-case run (every case with its conversation: system,
      user, the call, the tool's output, the answer), against `api.score` of the same
      transcripts (the baseline: the step before it); best of N. Goal: at most 1 s beyond
      score; the page at most 15 MB.
  (b) the console report of a 3-model, 500-case run (`print_report` into a 160-column
      console), against a plain rich table of the same rows (case and three text cells).
      Goal: at most 0.3 s.
  (c) the 10,000-case page in headless chromium (Debian's, through Playwright): time to open
      (load, parse, first rows drawn) and to filter (untick `pass`, search), and the largest
      number of rows in the document (drawn lazily, so a few dozen). Reported, no goal.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, goal, interleave, machine, paired_ratio, summary

sys.path.insert(0, str(REPO))

from evalspec._report.html import render_html
from evalspec._suite.validate import load_suite
from evalspec._transcript import ToolCall, Transcript, Usage
from evalspec.api import score

CITIES = ["Paris", "London", "Tokyo", "Lyon", "Berlin", "Rome", "Oslo", "Lima", "Quito"]

_HEADER = """suite: bench-report
description: Weather look-ups, generated for the report benchmark.
system: You are a travel assistant. Use the weather tools for any question about weather.
models: [{models}]
run: {{mode: agent}}
rubric: {{fail_threshold: 0.6, warn_threshold: 0.9}}
critics: {{city: {{exact: {{case_sensitive: false}}}}, unit: binary}}
tools:
  - name: get_current_weather
    description: Current weather for a city.
    parameters:
      type: object
      properties:
        city: {{type: string}}
        unit: {{type: string, enum: [celsius, fahrenheit]}}
cases:
"""


def write_suite(folder: Path, cases: int, models: list[str]) -> Path:
    lines = [_HEADER.format(models=", ".join(models))]
    for i in range(cases):
        city = CITIES[i % len(CITIES)]
        lines.append(
            f"  - name: weather in {city} no. {i}\n"
            f"    tags: [{'europe' if i % 3 else 'elsewhere'}]\n"
            f"    user: What's the weather like in {city} today (request {i})?\n"
            "    expect: {tool_calls: [{get_current_weather: "
            f"{{city: {city}, unit: celsius}}}}]}}\n"
        )
    path = folder / "suite.yaml"
    path.write_text("".join(lines), encoding="utf-8")
    return path


def make_transcripts(cases: int, model: str, wrong_every: int) -> list[Transcript]:
    """One agent conversation per case; every `wrong_every`-th case asks for the wrong city."""
    out = []
    for i in range(cases):
        city = CITIES[i % len(CITIES)]
        asked = CITIES[(i + 1) % len(CITIES)] if i % wrong_every == 0 else city
        args = f'{{"city": "{asked}", "unit": "celsius"}}'
        output = {"city": asked, "temperature": 10 + i % 20, "unit": "celsius", "sky": "cloudy"}
        answer = f"It is {10 + i % 20} °C and cloudy in {asked} right now (request {i})."
        call = {"id": f"c{i}", "type": "function"}
        call["function"] = {"name": "get_current_weather", "arguments": args}
        messages = (
            {
                "role": "system",
                "content": "You are a travel assistant. Use the weather tools "
                "for any question about weather.",
            },
            {"role": "user", "content": f"What's the weather like in {city} today (request {i})?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": str(output)},
            {"role": "assistant", "content": answer},
        )
        out.append(
            Transcript(
                item_id=f"{model}-{i}",
                case=f"weather in {city} no. {i}",
                model=model,
                messages=messages,
                tool_calls=(
                    ToolCall(
                        "get_current_weather",
                        {"city": asked, "unit": "celsius"},
                        args,
                        f"c{i}",
                        output,
                    ),
                ),
                final_answer=answer,
                usage=Usage(120 + i % 50, 30 + i % 20),
                latency_s=0.4 + (i % 7) / 10,
                turns=2,
            )
        )
    return out


def bench_html(cases: int, repeat: int, folder: Path) -> Path:
    suite = load_suite(write_suite(folder, cases, ["m"]))
    transcripts = make_transcripts(cases, "m", wrong_every=7)
    report = score(suite, transcripts)
    page = render_html(report)
    times = interleave(
        {
            "score": lambda: _timed(lambda: score(suite, transcripts)),
            "html": lambda: _timed(lambda: render_html(report)),
        },
        repeat,
    )
    size_mb = len(page.encode()) / 1e6
    print(f"(a) {cases} cases, one model, each with a 5-message conversation")
    print(f"    api.score (baseline):  {summary(times['score'])}")
    print(f"    render_html:           {summary(times['html'])}")
    print(f"    html / score (paired median): {paired_ratio(times['html'], times['score']):.2f}")
    goal("html_10k_seconds_beyond_score", min(times["html"]), "<=", 1.0)
    goal("html_10k_size_mb", size_mb, "<=", 15.0, "{:.2f}")
    path = folder / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def bench_console(cases: int, repeat: int, folder: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    from evalspec._report.console import print_report

    models = ["alpha", "beta", "gamma"]
    suite = load_suite(write_suite(folder, cases, models))
    transcripts = [
        t for n, m in enumerate(models) for t in make_transcripts(cases, m, wrong_every=3 + n)
    ]
    report = score(suite, transcripts)

    def evalspec_console() -> float:
        console = Console(file=io.StringIO(), width=160, force_terminal=True)
        return _timed(lambda: print_report(report, console, verbose=True))

    def plain_table() -> float:
        console = Console(file=io.StringIO(), width=160, force_terminal=True)

        def draw() -> None:
            table = Table()
            for name in ["case", *models]:
                table.add_column(name)
            for c in report.cases[:cases]:
                table.add_row(c.case, "PASS 1.000", "FAIL 0.500", "WARN 0.900")
            console.print(table)

        return _timed(draw)

    times = interleave({"plain": plain_table, "evalspec": evalspec_console}, repeat)
    print(f"(b) console, 3 models x {cases} cases, every case shown (--verbose)")
    print(f"    plain rich table of the same rows (baseline): {summary(times['plain'])}")
    print(f"    print_report:                                 {summary(times['evalspec'])}")
    ratio = paired_ratio(times["evalspec"], times["plain"])
    print(f"    print_report / plain table (paired median): {ratio:.2f}")
    goal("console_3x500_seconds", min(times["evalspec"]), "<=", 0.3)


def bench_browser(page_path: Path, cases: int, repeat: int) -> None:
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        print("(c) skipped: playwright is not installed")
        return
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        print("(c) skipped: no /usr/bin/chromium")
        return
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"]  # fmt: skip
    opened, filtered, searched, most_rows = [], [], [], 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=args)
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            start = time.perf_counter()
            page.goto(page_path.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=60_000)
            opened.append(time.perf_counter() - start)
            page.locator("#viewport").evaluate("v => { v.scrollTop = v.scrollHeight / 2; }")
            most_rows = max(most_rows, page.locator("#rows .row.item").count())
            total = page.inner_text("#count")
            start = time.perf_counter()
            page.uncheck("#status-filter input[value=pass]")
            expect(page.locator("#count")).not_to_have_text(total, timeout=60_000)
            filtered.append(time.perf_counter() - start)
            page.check("#status-filter input[value=pass]")
            expect(page.locator("#count")).to_have_text(total, timeout=60_000)
            last = f"no. {cases - 1}"
            start = time.perf_counter()
            page.fill("#search", last)
            expect(page.locator("#rows .row.item .case").first).to_contain_text(last)
            searched.append(time.perf_counter() - start - 0.12)  # minus the typing debounce
            page.close()
        browser.close()
    print(f"(c) the {page_path.stat().st_size / 1e6:.1f} MB page in headless chromium")
    print(f"    open (load, parse, first rows): {summary(opened)}")
    print(f"    untick pass, rows redrawn:      {summary(filtered)}")
    print(f"    search, rows redrawn:           {summary(searched)}")
    print(f"    rows in the document (of {cases}), scrolled to the middle: {most_rows}")
    print(f"    median open {statistics.median(opened):.2f} s")


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--console-cases", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-browser", action="store_true")
    opts = parser.parse_args()
    print(f"bench_report · {machine()}")
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        folder = Path(tmp)
        (folder / "html").mkdir()
        (folder / "console").mkdir()
        page = bench_html(opts.cases, opts.repeat, folder / "html")
        bench_console(opts.console_cases, opts.repeat, folder / "console")
        if not opts.no_browser:
            bench_browser(page, opts.cases, opts.repeat)


if __name__ == "__main__":
    main()
