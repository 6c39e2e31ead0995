"""JUnit, Markdown and HTML reports, as CI systems and people read them."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support import evalspec_cli, in_process, transcript

from evalspec.api import load_suite, score, write_reports, write_transcripts
from evalspec.records import ReportFiles

ROOT = Path(__file__).resolve().parent.parent
EVIL = "<script>alert(1)</script> & co"

SUITE = """
suite: reports
models: [alpha, beta]
rubric: {fail_threshold: 0.6, warn_threshold: 0.9}
critics: {user: binary, text: binary}
tools:
  - name: send_dm
    parameters:
      type: object
      properties: {user: {type: string}, text: {type: string}}
cases:
  - name: ok
    user: tell bob hi
    expect: {tool_calls: [{send_dm: {user: bob, text: hi}}]}
  - name: "<script>alert(1)</script> & co"
    user: tell ann hi
    expect: {tool_calls: [{send_dm: {user: ann, text: hi}}]}
  - name: half
    user: tell joe hello
    expect: {tool_calls: [{send_dm: {user: joe, text: hello}}]}
  - name: broken
    user: anything
    expect: {tool_calls: [{send_dm: {user: x, text: y}}]}
"""


@pytest.fixture
def scored(write_suite):
    """The suite's path and two models' transcripts: every status band, hostile text."""
    path = write_suite(SUITE)
    ts = []
    for model in ("alpha", "beta"):
        ts += [
            transcript("ok", ("send_dm", {"user": "bob", "text": "hi"}), model=model),
            transcript(
                EVIL,
                ("send_dm", {"user": "<b>eve</b>", "text": "<script>steal()</script>\x00\x1b"}),
                model=model,
                final="</td><script>x()</script>",
            ),
            # 2 of 3 rows right: 0.667, between the thresholds: a warning.
            transcript("half", ("send_dm", {"user": "joe", "text": "bye"}), model=model),
            transcript("broken", model=model, error="endpoint unreachable after 4 retries"),
        ]
    return path, ts


@pytest.fixture
def report(scored):
    path, ts = scored
    return score(load_suite(path), ts)


def command_wrote(scored, tmp_path: Path, option: str) -> str:
    """The report `evalspec score` writes with `option` (--markdown, --html) from the same
    transcripts."""
    path, ts = scored
    write_transcripts(tmp_path / "t.jsonl", ts)
    out = tmp_path / ("command" + option.replace("--", "."))
    args = ["score", path, "-t", tmp_path / "t.jsonl", "--allow-stale", option, out]
    done = evalspec_cli(args)
    assert done.exit_code == 1, done.output  # a case failed
    return out.read_text(encoding="utf-8")


def test_statuses_cover_every_band(report):
    assert [c.status for c in report.cases[:4]] == ["pass", "fail", "warn", "error"]


def test_junit_has_a_testsuite_per_model_and_the_right_counts(report, tmp_path):
    path = tmp_path / "out" / "junit.xml"
    write_reports(report, ReportFiles(junit=path))
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("8", "2", "2")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["reports · alpha", "reports · beta"]
    for s in suites:
        cases = s.findall("testcase")
        assert [c.get("name") for c in cases] == ["ok", EVIL, "half", "broken"]
        assert (s.get("tests"), s.get("failures"), s.get("errors")) == ("4", "1", "1")
        ok, bad, half, broken = cases
        assert list(ok) == []
        failure = bad.find("failure")
        assert failure is not None and "below the fail threshold" in failure.get("message")
        # The body lists the failing rows only, with what was expected and what came.
        assert "user" in failure.text and "text" in failure.text
        assert "<script>steal()</script>" in failure.text
        assert "tool_selection" not in failure.text
        assert half.find("failure") is None and half.find("error") is None
        assert half.find("system-out").text.startswith("WARN: score 0.667")
        assert "endpoint unreachable" in broken.find("error").get("message")


def test_markdown_lists_cases_and_the_rows_of_non_passing_ones(report, scored, tmp_path):
    path = tmp_path / "report.md"
    write_reports(report, ReportFiles(markdown=path))
    text = path.read_text(encoding="utf-8")
    assert text == command_wrote(scored, tmp_path, "--markdown")
    assert text.count("\n## ") == 2
    assert "**1 passed, 1 warned, 1 failed**, 1 errors of 4 cases" in text
    assert "| ok | PASS | 1.000 |  |" in text
    assert "| half | WARN | 0.667 |" in text
    # Rows of the warned case: expected hello, got bye.
    assert "| text (call 1) | hello | bye | 0.00 | 1 |" in text
    assert "<script>" not in text and "<b>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in text
    # A passing case has no details block.
    assert "<summary>PASS" not in text


def test_html_is_self_contained_and_inert(report, scored, tmp_path):
    """Data reaches the page only as escaped JSON; the one script is the page's own, by hash."""
    path = tmp_path / "report.html"
    write_reports(report, ReportFiles(html=path))
    page = path.read_text(encoding="utf-8")
    assert page == command_wrote(scored, tmp_path, "--html")
    scripts = re.findall(r"<script[^>]*>", page)
    assert scripts == ['<script type="application/json" id="report-data">', "<script>"]
    assert "<b>eve" not in page and "</td><script>" not in page and "steal()</script>" not in page
    blob = page.split('id="report-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in blob and ">" not in blob and "&" not in blob
    data = json.loads(blob)
    assert [c["n"] for c in data["cases"]] == ["ok", EVIL, "half", "broken"]
    assert data["columns"] == ["alpha", "beta"]
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    csp = html.unescape(csp)
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    js = page.split("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp
    assert "src=" not in page and "href=" not in page and "@import" not in page
    markup = re.sub(r"<script[^>]*>.*?</script>", "", page, flags=re.S)
    assert not re.search(r"<[^>]+\son\w+\s*=", markup)  # no event handler attributes


def test_run_writes_junit_and_markdown(tmp_path):
    junit, md = tmp_path / "r.xml", tmp_path / "r.md"
    proc = in_process(
        "run", "suites/weather.yaml", "--record", "offline", "--out", tmp_path / "run",
        "--junit", junit, "--markdown", md, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # two example answers fail on purpose
    root = ET.parse(junit).getroot()
    assert (root.get("tests"), root.get("failures")) == ("6", "2")
    assert "| now and tomorrow, in order | FAIL |" in md.read_text(encoding="utf-8")


@pytest.mark.slow
def test_score_writes_every_report_format(tmp_path: Path) -> None:
    """`evalspec score` re-renders JUnit, Markdown and HTML from recorded transcripts."""
    run_dir = tmp_path / "run"
    first = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalspec",
            "run",
            "suites/math.yaml",
            "--record",
            "offline",
            "--out",
            str(run_dir),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert first.returncode == 1, first.stderr  # the example recordings hold one failing case
    out = {k: tmp_path / f"r.{k}" for k in ("xml", "md", "html")}
    second = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalspec",
            "score",
            "suites/math.yaml",
            "-t",
            str(run_dir),
            "--junit",
            str(out["xml"]),
            "--markdown",
            str(out["md"]),
            "--html",
            str(out["html"]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert second.returncode == 1, second.stderr
    suite = ET.parse(out["xml"]).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1" and suite.get("tests") == "8"
    assert "divide 81 by 9" in out["md"].read_text()
    assert "<html" in out["html"].read_text().lower()


def test_score_case_chooses_cases_as_run_does(tmp_path: Path, monkeypatch) -> None:
    """`score --case` takes run's patterns (glob, substring or tag): the report holds the chosen
    cases alone; a pattern that matches nothing is a usage error naming the cases."""

    monkeypatch.chdir(ROOT)
    run_dir = tmp_path / "run"
    ran = evalspec_cli(
        ["run", "suites/math.yaml", "--record", "offline", "--out", str(run_dir), "--json"]
    )
    assert ran.exit_code in (0, 1), ran.output
    every = {c["case"] for c in json.loads((run_dir / "results.json").read_text())["cases"]}
    out = tmp_path / "some.json"
    chosen = evalspec_cli(
        [
            "score",
            "suites/math.yaml",
            "-t",
            str(run_dir),
            "--case",
            "SQUARE*",
            "--case",
            "add in",
            "--out",
            str(out),
        ],
    )
    assert chosen.exit_code in (0, 1), chosen.output
    cases = {c["case"] for c in json.loads(out.read_text(encoding="utf-8"))["cases"]}
    assert cases == {"square root", "add in either order"} and cases < every
    assert "skipped" not in chosen.output  # the other cases' transcripts are not stale
    none = evalspec_cli(
        ["score", "suites/math.yaml", "-t", str(run_dir), "--case", "nothing like it"]
    )
    assert none.exit_code == 2
    assert "no case matches nothing like it; cases: add two large numbers" in none.output
