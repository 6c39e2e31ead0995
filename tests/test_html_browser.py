"""The HTML report in a real browser: filters, search and sort change what is shown, a case
opens onto its conversation, and nothing in the data ever runs as code.

Drives Debian's chromium through Playwright (the system browser, by its path); skipped with the
reason when either is missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support import evalspec_cli, transcript

from evalspec.api import load_suite, score, write_reports, write_transcripts
from evalspec.records import ReportFiles, Transcript

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.slow

FLAG = "window.__pwned"
IMG = '<img src=x onerror="window.__pwned=1;alert(1)">'
SCRIPT = "<script>window.__pwned=1;alert(2)</script>"
EVIL_CASE = f"greet {IMG}{SCRIPT}"

SUITE = f"""
suite: browser
models: [alpha, beta]
rubric: {{fail_threshold: 0.6, warn_threshold: 0.9}}
critics: {{user: binary, text: binary}}
tools:
  - name: send_dm
    parameters:
      type: object
      properties: {{user: {{type: string}}, text: {{type: string}}}}
cases:
  - name: greet bob
    tags: [greeting]
    user: tell bob hi
    expect: {{tool_calls: [{{send_dm: {{user: bob, text: hi}}}}]}}
  - name: '{EVIL_CASE}'
    tags: [evil]
    user: tell ann hi
    expect: {{tool_calls: [{{send_dm: {{user: ann, text: hi}}}}]}}
  - name: half right
    tags: [greeting]
    user: tell joe hello
    expect: {{tool_calls: [{{send_dm: {{user: joe, text: hello}}}}]}}
  - name: unreachable
    user: anything
    expect: {{tool_calls: [{{send_dm: {{user: x, text: y}}}}]}}
"""


def _with_conversation(t: Transcript, answer: str, tool_output: str) -> Transcript:
    """The messages as the model saw them: system, user, its call, the tool's answer, its reply."""
    calls = [
        {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
        }
        for i, c in enumerate(t.tool_calls)
    ]
    messages = (
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": f"do it {SCRIPT}"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *({"role": "tool", "tool_call_id": c["id"], "content": tool_output} for c in calls),
        {"role": "assistant", "content": answer},
    )
    return Transcript(**{**msgspec.structs.asdict(t), "messages": messages, "final_answer": answer})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-model run whose names, arguments, tool outputs and answers carry script payloads."""
    out = tmp_path_factory.mktemp("browser-run")
    path = out / "suite.yaml"
    path.write_text(SUITE, encoding="utf-8")
    suite = load_suite(path)
    ts = []
    for model in ("alpha", "beta"):
        bob = {"user": "bob", "text": "hi"} if model == "alpha" else {"user": "bo", "text": "yo"}
        ts += [
            transcript("greet bob", ("send_dm", bob), model=model),
            transcript(EVIL_CASE, ("send_dm", {"user": IMG, "text": SCRIPT}), model=model),
            transcript("half right", ("send_dm", {"user": "joe", "text": "bye"}), model=model),
            transcript("unreachable", model=model, error=f"endpoint down {IMG}"),
        ]
    ts = [
        _with_conversation(t, f"Sent. {IMG}", f'{{"ok": true, "note": "{SCRIPT}"}}')
        if not t.error
        else t
        for t in ts
    ]
    report = score(suite, ts)
    write_transcripts(out / "transcripts.jsonl", list(ts))
    write_reports(report, ReportFiles(results=out / "results.json", html=out / "report.html"))
    return out


@pytest.fixture
def page(browser, run_dir):
    """The report, opened; every dialog (an alert from injected code) is recorded."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    pg = context.new_page()
    pg.dialogs = []
    pg.errors = []
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.goto((run_dir / "report.html").as_uri())
    pg.wait_for_selector("body[data-ready='1']", timeout=10_000)
    yield pg
    assert pg.errors == []
    context.close()


def names(pg) -> list[str]:
    return pg.locator("#rows .row.item .case").all_inner_texts()


def test_status_model_and_tag_filters_change_the_rows(page):
    assert len(names(page)) == 4
    assert page.inner_text("#count") == "4 of 4 cases"
    page.uncheck("#status-filter input[value=pass]")
    page.uncheck("#status-filter input[value=warn]")
    # Shown: a case any model failed or errored on; greet bob passes only on alpha.
    assert set(names(page)) == {"greet bob", EVIL_CASE, "unreachable"}
    page.select_option("#model-filter", label="alpha")
    assert set(names(page)) == {EVIL_CASE, "unreachable"}
    header = page.inner_text("#list-head")
    assert "alpha" in header and "beta" not in header
    page.check("#status-filter input[value=pass]")
    page.check("#status-filter input[value=warn]")
    page.select_option("#tag-filter", "greeting")
    assert names(page) == ["greet bob", "half right"]


def test_search_narrows_to_matching_cases(page):
    page.fill("#search", "HALF")
    expect(page.locator("#count")).to_have_text("1 of 4 cases")
    assert names(page) == ["half right"]
    page.fill("#search", "endpoint down")  # a reason, not a name
    expect(page.locator("#rows .row.item .case")).to_have_text(["unreachable"])


def test_sort_by_score_and_by_change(page):
    assert names(page)[0] == "greet bob"
    page.select_option("#sort", "score-asc")
    assert names(page)[0] == "unreachable"  # errors score 0
    page.select_option("#sort", "score-desc")
    assert names(page)[-1] == "unreachable"
    page.select_option("#sort", "change")
    # greet bob passes on alpha and fails on beta: the one regression comes first.
    assert names(page)[0] == "greet bob"
    assert page.locator("#rows .row.item .change").first.inner_text().startswith("regression")


def test_a_case_opens_onto_its_conversation_and_explanation(page):
    assert page.is_hidden("#detail")
    page.locator("#rows .row.item", has_text="half right").click()
    detail = page.locator("#detail")
    assert detail.is_visible()
    text = detail.inner_text()
    assert "conversation" in text and "SYSTEM" in text.upper()
    assert "send_dm" in text and '"text": "bye"' in text  # the call and its arguments
    assert '"ok": true' in text  # the tool's output
    assert "Sent." in text  # the final answer
    assert text.count("half right") >= 1 and "alpha" in text and "beta" in text
    # The failing argument row: expected hello, actual bye, the difference marked.
    bad = detail.locator("table.rows tr.bad").first
    assert "hello" in bad.inner_text() and "bye" in bad.inner_text()
    assert bad.locator("mark").count() == 2


def test_injected_markup_in_names_arguments_and_answers_never_runs(page, run_dir):
    # The open case sits over the right of the list: the names on the left stay clickable.
    for i in range(page.locator("#rows .row.item").count()):
        page.locator("#rows .row.item .case").nth(i).click()
    page.locator("#rows .row.item .case", has_text="greet <img").click()
    # The panel shows the clicked case once the page has drawn it (a loaded machine lags).
    expect(page.locator("#detail")).to_contain_text(EVIL_CASE)
    detail = page.inner_text("#detail")
    # Shown as text, exactly as written.
    assert EVIL_CASE in detail and SCRIPT in detail and "Sent. <img" in detail
    assert page.evaluate(FLAG) is None
    assert page.dialogs == []
    assert page.locator("#detail img, #detail script, #rows img, #rows script").count() == 0
    # The only scripts are the data block and the page's own.
    assert page.locator("script").count() == 2


def test_screenshot(page, run_dir):
    page.locator("#rows .row.item", has_text="half right").click()
    shot = run_dir / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_view_writes_the_report_of_several_runs(run_dir, tmp_path, monkeypatch, browser):
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url) or False)
    out = tmp_path / "both.html"
    result = evalspec_cli(["view", str(run_dir), str(run_dir), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert f"report: {out}" in result.output and "no browser found" in result.output
    assert opened == [out.resolve().as_uri()]
    pg = browser.new_page()
    pg.goto(out.as_uri())
    pg.wait_for_selector("body[data-ready='1']")
    header = pg.inner_text("#list-head")
    assert header.count("alpha @") == 2 and header.count("beta @") == 2
    pg.close()


@pytest.mark.timeout(120)
def test_a_simulated_conversation_reads_by_role_and_its_player_is_apart(
    browser: Any, tmp_path: Path
) -> None:
    """The case panel of a simulated-user conversation: a line per role (the customer's lines
    as the simulated user's, the calls, the tool's answers), no user line shown as an expected
    value, and the model playing the user listed apart from the models evaluated."""
    from concurrent.futures import ThreadPoolExecutor

    from support import support_two_models

    run_dir = tmp_path / "run"

    def record_then_run() -> Any:  # away from the browser's event loop
        suite = support_two_models(tmp_path)
        args = ["run", str(suite), "--record", "offline", "--out", str(run_dir)]
        args += ["--html", str(tmp_path / "report.html")]
        return evalspec_cli(args)

    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(record_then_run).result()
    assert result.exit_code == 1, result.output
    pg = browser.new_page(viewport={"width": 1280, "height": 900})
    pg.goto((tmp_path / "report.html").as_uri() + "#case=the+customer+answers+back")
    pg.wait_for_selector("body[data-ready='1']")
    runs = pg.inner_text("#runs")
    assert "simulated user customer" in runs and "model customer" not in runs
    assert "model gpt-4o-mini-warm" in runs
    side = pg.locator(".side").nth(1)
    turns = side.locator(".turns").inner_text()
    said = [" ".join(t.split()) for t in side.locator(".turn .said").all_inner_texts()]
    assert said[0] == (
        "simulated user (customer) said Hi, my new kettle arrived broken. I'd like my money back."
    )
    assert 'model called refund_order {"order_id": "A17", "reason": "damaged"}' in said
    assert any(s.startswith("tool answered {") and '"refunded": "A17"' in s for s in said)
    assert "conversation ended the user said ###STOP###" in said
    assert "expected" not in turns.lower()
    # the rows table keeps only checks: the user's lines are not in it
    assert "It's A17." not in side.locator("table.rows").inner_text()
    side.screenshot(path=str(tmp_path / "simulated-conversation.png"))
