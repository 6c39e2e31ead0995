"""The HTML report at 300 cases x 3 models in a real browser: a case opens where it can be read,
a link opens a case (and a case x model), columns stay readable, the chart uses the suite's own
thresholds, and the change column's label and number agree.

Drives Debian's chromium through Playwright (conftest.py's `browser`). The screenshots
the run takes are written to $EVALSPEC_SCREENSHOTS when it is set (the documentation's
`docs/images/report-*.png` come from `EVALSPEC_SCREENSHOTS=docs/images pytest
tests/test_html_report_scale.py`), otherwise to a temporary directory.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import quote

import msgspec
import pytest
from support import transcript

from evalspec.api import load_suite, score, write_reports, write_runs_page
from evalspec.records import ReportFiles, Transcript, Usage

pytestmark = pytest.mark.slow

MODELS = ("gpt-4o-mini", "claude-3-5-haiku", "qwen2.5-7b-instruct")
CASES = 300
CITIES = ("Paris", "Lyon", "Oslo", "Kyoto", "Lima", "Accra", "Perth", "Quito", "Turin", "Cork")

HEAD = """
suite: calendar and email
description: A product manager's calendar-and-email assistant, 300 requests.
models: [gpt-4o-mini, claude-3-5-haiku, qwen2.5-7b-instruct]
rubric: {fail_threshold: 0.6, warn_threshold: 0.9}
critics: {title: binary, date: binary, city: binary, attendees: binary}
tools:
  - name: create_event
    description: Put an event in the user's calendar.
    parameters:
      type: object
      properties:
        title: {type: string}
        date: {type: string}
        city: {type: string}
        attendees: {type: string}
cases:
"""


def _args(i: int) -> dict[str, str]:
    city = CITIES[i % len(CITIES)]
    return {
        "title": f"review {i}",
        "date": f"2026-03-{i % 28 + 1:02d}",
        "city": city,
        "attendees": "ann, bob",
    }


def _answer(i: int, model: int) -> dict[str, str]:
    """Each model gets a different number of the four arguments wrong, case by case: scores of
    1.0, 0.8, 0.6 and 0.4 (tool selection counts as a fifth row), so every status shows."""
    args = dict(_args(i))
    wrong = (i * (model + 1) + model) % 7 % 4 if (i + model) % 3 else 0
    for key in list(args)[:wrong]:
        args[key] = args[key] + " (wrong)"
    return args


def _conversation(t: Transcript, i: int) -> Transcript:
    calls = [
        {
            "id": "c0",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
        }
        for c in t.tool_calls
    ]
    messages = (
        {"role": "system", "content": "You manage the user's calendar."},
        {"role": "user", "content": f"Set up review {i} on March {i % 28 + 1} with Ann and Bob."},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c0", "content": '{"ok": true}'},
        {"role": "assistant", "content": f"Review {i} is in your calendar."},
    )
    usage = Usage(prompt_tokens=420 + i % 50, completion_tokens=35 + i % 9)
    return Transcript(
        **{
            **msgspec.structs.asdict(t),
            "messages": messages,
            "final_answer": messages[-1]["content"],
            "usage": usage,
            "latency_s": 0.6 + (i % 13) / 10,
        }
    )


def _suite_text() -> str:
    lines = [HEAD]
    for i in range(CASES):
        tag = ("travel", "team", "customer")[i % 3]
        args = json.dumps(_args(i))
        lines.append(
            f"  - name: review {i} in {CITIES[i % len(CITIES)]}\n"
            f"    tags: [{tag}]\n"
            f"    user: set up review {i}\n"
            f"    expect: {{tool_calls: [{{create_event: {args}}}]}}\n"
        )
    return "".join(lines)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scale-run")
    (out / "suites").mkdir()
    (out / "suites" / "calendar.yaml").write_text(_suite_text(), encoding="utf-8")
    here = Path.cwd()
    os.chdir(out)  # the report names the suite as a user would give it: suites/calendar.yaml
    try:
        suite = load_suite(Path("suites/calendar.yaml"))
    finally:
        os.chdir(here)
    ts = [
        _conversation(
            transcript(
                f"review {i} in {CITIES[i % len(CITIES)]}",
                ("create_event", _answer(i, m)),
                model=name,
            ),
            i,
        )
        for m, name in enumerate(MODELS)
        for i in range(CASES)
    ]
    report = score(suite, ts)
    write_reports(report, ReportFiles(results=out / "results.json", html=out / "report.html"))
    return out


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = os.environ.get("EVALSPEC_SCREENSHOTS")
    if not target:
        return tmp_path_factory.mktemp("shots")
    path = Path(target)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _open(browser, url: str, width: int = 1440, height: int = 900):
    context = browser.new_context(viewport={"width": width, "height": height})
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.goto(url)
    pg.wait_for_selector("body[data-ready='1']", timeout=20_000)
    return pg


def _in_view(pg, selector: str) -> bool:
    """The element's top part is on screen (not below the fold, not scrolled away)."""
    return pg.evaluate(
        """sel => { const r = document.querySelector(sel).getBoundingClientRect();
        return r.width > 0 && r.top >= 0 && r.top < innerHeight - 100 && r.left < innerWidth; }""",
        selector,
    )


def _broken_words(pg, selector: str) -> list[str]:
    """Texts of the matched elements that wrap onto more than one line (a word cut in two)."""
    return pg.evaluate(
        """sel => [...document.querySelectorAll(sel)].filter(e => {
            const r = document.createRange(); r.selectNodeContents(e);
            const rects = [...r.getClientRects()].filter(x => x.height > 0)
                .sort((a, b) => a.top - b.top);
            let lines = 0, bottom = -Infinity;
            for (const x of rects) if (x.top >= bottom - 1) { lines++; bottom = x.bottom; }
            return lines > 1; }).map(e => e.textContent)""",
        selector,
    )


def _cut_words(pg, selector: str) -> list[str]:
    """Words (up to 20 characters; a hyphen may end a line) that a line break cuts in two."""
    return pg.evaluate(
        """sel => { const cut = [];
        for (const e of document.querySelectorAll(sel)) {
          const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
          for (let n = walk.nextNode(); n; n = walk.nextNode()) {
            for (const m of n.data.matchAll(/[^\\s-]{2,20}/g)) {
              const r = document.createRange();
              r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
              const tops = new Set([...r.getClientRects()].filter(x => x.width > 0)
                .map(x => Math.round(x.top)));
              if (tops.size > 1) cut.push(m[0]);
            } } }
        return cut; }""",
        selector,
    )


def _case_url(run_dir: Path, case: str, model: str | None = None) -> str:
    fragment = "case=" + quote(case, safe="")
    if model is not None:
        fragment += "&model=" + quote(model, safe="")
    return (run_dir / "report.html").as_uri() + "#" + fragment


@pytest.mark.parametrize("size", [(1440, 900), (800, 700), (390, 800)])
def test_a_case_low_in_a_long_list_opens_where_it_can_be_read(browser, run_dir, shots, size):
    from playwright.sync_api import expect  # the browser fixture has found it installed

    pg = _open(browser, (run_dir / "report.html").as_uri(), *size)
    assert pg.inner_text("#count") == f"{CASES} of {CASES} cases"
    pg.locator("#viewport").evaluate("v => v.scrollTop = v.scrollHeight")
    row = pg.locator("#rows .row.item", has_text="review 299 in").locator(".case")
    row.click()
    assert _in_view(pg, "#detail h2")
    assert pg.inner_text("#detail h2") == "review 299 in Cork"
    # Every model's explanation is there, each under its own heading.
    assert [h.split(" #")[0] for h in pg.locator("#detail h3").all_inner_texts()] == list(MODELS)
    assert "#case=review+299+in+Cork" in pg.url
    # Nothing in the explanation is cut mid-word ("weig ht"), at any width.
    assert _cut_words(pg, "#detail table.rows, #detail .detail-bar, #detail h3") == []
    pg.screenshot(path=str(shots / f"report-case-{size[0]}.png"))
    # Next and previous walk the list; Escape closes and the list is whole again.
    pg.click("#prev")
    expect(pg.locator("#detail h2")).to_have_text("review 298 in Turin")
    pg.keyboard.press("Escape")
    expect(pg.locator("#detail")).to_be_hidden()  # waits for the page to react, then asserts
    assert pg.errors == []
    pg.context.close()


def test_a_link_opens_a_case_and_a_case_by_model(browser, run_dir, shots):
    from playwright.sync_api import expect  # the browser fixture has found it installed

    pg = _open(browser, _case_url(run_dir, "review 150 in Paris"))
    assert pg.is_visible("#detail") and _in_view(pg, "#detail h2")
    assert pg.inner_text("#detail h2") == "review 150 in Paris"
    assert pg.locator("#detail section.side").count() == 3
    # The row is scrolled into the list, marked, and on screen.
    assert pg.locator("#rows .row.item.selected .case").inner_text() == "review 150 in Paris"
    assert _in_view(pg, "#rows .row.item.selected")
    pg.context.close()

    pg = _open(browser, _case_url(run_dir, "review 150 in Paris", "claude-3-5-haiku"))
    sides = pg.locator("#detail section.side")
    assert sides.count() == 1 and sides.locator("h3").inner_text().startswith("claude-3-5-haiku")
    pg.screenshot(path=str(shots / "report-case-by-model.png"))
    # The side's own link is the one that opened it; "show every model" goes back to the case.
    href = sides.locator("h3 a").get_attribute("href")
    assert href == "#case=review+150+in+Paris&model=claude-3-5-haiku"
    pg.click("#detail a.all")
    expect(pg.locator("#detail section.side")).to_have_count(3)
    # An unknown case in a link opens nothing, and says nothing is wrong.
    pg.goto(_case_url(run_dir, "no such case"))
    pg.wait_for_selector("body[data-ready='1']")
    assert pg.is_hidden("#detail")
    assert pg.errors == []
    pg.context.close()


def test_three_models_keep_their_words_whole(browser, run_dir, shots):
    pg = _open(browser, (run_dir / "report.html").as_uri())
    heads = pg.locator("#list-head span").all_inner_texts()
    assert heads[2:5] == list(MODELS)
    # The model names fit their columns, uncut.
    assert pg.evaluate(
        """() => [...document.querySelectorAll('#list-head span')].slice(2, 5)
           .every(e => e.scrollWidth <= e.clientWidth)"""
    )
    pg.screenshot(path=str(shots / "report-list.png"))
    pg.locator("#rows .row.item .case").nth(2).click()
    assert _broken_words(pg, "#detail table.rows th") == []
    assert _cut_words(pg, "#detail table.rows") == []
    assert _broken_words(pg, "#models th") == []
    assert pg.errors == []
    pg.context.close()


def test_chart_colours_are_the_suites_thresholds(run_dir):
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    # Scores of 0.4 fail (below 0.6), 0.6 and 0.8 warn, 1.0 passes: a band's colour is the
    # status the suite gave its cases.
    bars = re.findall(r'<rect class="bar (\w+)"[^>]*><title>score ([\d.]+)–[\d.]+: \d+ (\w+)', page)
    assert bars and all(cls == status for cls, _, status in bars)
    by_band = {(low, cls) for cls, low, _ in bars}
    assert ("0.4", "fail") in by_band and ("0.6", "warn") in by_band
    assert ("0.8", "warn") in by_band
    assert ("0.9", "pass") in by_band
    assert page.count("<title>fail below 0.6</title>") == 3
    assert page.count("<title>warn below 0.9</title>") == 3


def test_a_fail_just_below_the_threshold_is_red_not_amber(write_suite, tmp_path):
    """Thresholds at 0.6 and 0.9 with a 0.58 score: the 0.5 band holds a FAIL, drawn red."""
    suite = load_suite(
        write_suite(
            """
suite: t
models: [m]
rubric: {fail_threshold: 0.6, warn_threshold: 0.9, tool_selection_weight: 0.0}
critics: {a: {binary: {}, weight: 0.58}, b: {binary: {}, weight: 0.42}}
tools:
  - {name: f, parameters: {type: object, properties: {a: {type: string}, b: {type: string}}}}
cases:
  - {name: c, user: u, expect: {tool_calls: [{f: {a: x, b: y}}]}}
"""
        )
    )
    report = score(suite, [transcript("c", ("f", {"a": "x", "b": "no"}), model="m")])
    assert report.cases[0].status == "fail" and round(report.cases[0].score, 2) == 0.58
    write_reports(report, ReportFiles(html=tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert '<rect class="bar fail"' in page and "score 0.5–0.6: 1 fail" in page
    assert 'class="bar warn"' not in page


def test_summary_labels_sums_and_means(run_dir):
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    for label in ("tokens, total", "latency, total", "latency per case, mean", "mean score"):
        assert f"<th>{label}</th>" in page


def test_change_label_and_number_agree(browser, run_dir, tmp_path, shots):
    """Two runs of three models: each model is compared with itself in the other run, so an
    unchanged case shows no difference (it used to show another model's, `unchanged -0.667`)."""
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    after = json.loads(json.dumps(results))
    for c in after["cases"]:
        if c["case"] == "review 1 in Lyon" and c["model"] == "qwen2.5-7b-instruct":
            c.update(status="fail", score=0.4)
    out = tmp_path / "both.html"
    (tmp_path / "after.json").write_text(json.dumps(after), encoding="utf-8")
    write_runs_page([run_dir / "results.json", tmp_path / "after.json"], out)
    pg = _open(browser, out.as_uri())
    assert pg.locator("#list-head span").last.inner_text() == "change, first run → last"
    changes = dict(
        zip(
            pg.locator("#rows .row.item .case").all_inner_texts(),
            pg.locator("#rows .row.item .change").all_inner_texts(),
            strict=True,
        )
    )
    first = next(iter(changes))
    assert first == "review 1 in Lyon"  # sorted by change: the one regression first
    assert re.fullmatch(r"(regression|worse) -0\.\d{3}", changes[first])
    unchanged = [v for k, v in changes.items() if k != first]
    assert unchanged and set(unchanged) == {"unchanged"}
    pg.locator("#controls").evaluate("e => e.scrollIntoView()")
    pg.screenshot(path=str(shots / "report-change.png"))
    assert pg.errors == []
    pg.context.close()


def test_models_of_one_run_say_what_they_are_compared_with(browser, run_dir):
    pg = _open(browser, (run_dir / "report.html").as_uri())
    assert pg.locator("#list-head span").last.inner_text() == "change vs gpt-4o-mini"
    pg.select_option("#sort", "change")
    row = pg.locator("#rows .row.item").first
    text = row.locator(".change").inner_text()
    kind, _, number = text.partition(" ")
    assert kind in ("regression", "worse")
    cells = row.locator(".cell .score").all_inner_texts()
    # The number is the difference of a model against gpt-4o-mini, the first column.
    diffs = {round(float(c) - float(cells[0]), 3) for c in cells[1:]}
    assert float(number) in diffs and float(number) < 0
    pg.context.close()
