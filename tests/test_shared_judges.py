"""Scoring shares what cases share (their critics' table, a string's rendering) and nothing
else: a case judged by the table made for another case would score by the wrong critic."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from support import transcript

from evalspec.api import load_suite, score
from evalspec.plugins import show

_SUITE = """\
suite: shared-judges
models: [{name: m, model: fake, base_url: 'http://127.0.0.1:9/v1'}]
critics: {note: binary}
tools:
  - {name: book_dated, description: Book., parameters: {type: object, properties:
      {when: {type: string, format: date}, note: {type: string}}}}
  - {name: book_plain, description: Book., parameters: {type: object, properties:
      {when: {type: string}, note: {type: string}}}}
cases:
  - {name: dated, user: Book it., tools: [book_dated],
     expect: {tool_calls: [{book_dated: {when: '2026-01-02', note: x}}]}}
  - {name: plain, user: Book it., tools: [book_plain],
     expect: {tool_calls: [{book_plain: {when: '2026-01-02', note: x}}]}}
  - {name: plain-again, user: Book it., tools: [book_plain],
     expect: {tool_calls: [{book_plain: {when: '2026-01-02', note: x}}]}}
"""


def test_cases_sharing_critics_are_judged_by_their_own_tools_schema(tmp_path: Path) -> None:
    """Three cases share the suite's critics and their argument names; the critic of `when`
    comes from each tool's schema (a date: the datetime critic), so each keeps its own."""
    path = tmp_path / "suite.yaml"
    path.write_text(_SUITE, encoding="utf-8")
    suite = load_suite(path)
    args = {"when": "2026-01-02", "note": "x"}
    report = score(
        suite,
        [
            transcript("plain", ("book_plain", args)),
            transcript("dated", ("book_dated", args)),
            transcript("plain-again", ("book_plain", args)),
        ],
    )
    critics = {
        r.case: {row.field: row.critic for row in r.rows if row.field != "tool_selection"}
        for r in report.results
    }
    assert critics == {
        "plain": {"when": "binary", "note": "binary"},
        "dated": {"when": "datetime", "note": "binary"},
        "plain-again": {"when": "binary", "note": "binary"},
    }
    assert {r.case: r.status for r in report.results} == dict.fromkeys(critics, "pass")


@given(st.text())
def test_a_shown_string_is_its_json_text_in_single_quotes(text: str) -> None:
    """Reasons show a string as JSON writes it (escapes included), quoted with ' not "."""
    written = json.dumps(text, ensure_ascii=False)
    expected = "'" + written[1:-1].replace('\\"', '"') + "'"
    if len(expected) > 60:
        expected = expected[:59] + "…"
    assert show(text) == expected
