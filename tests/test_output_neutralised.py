"""Model text and suite names reach the console and Markdown as text, never as commands.

A model's argument holding `[/INST]` must not be read as Rich markup (it crashed `run` and
`score`), escape sequences from a model must not reach the terminal (colours, clearing the
screen, changing the window title), and a Markdown report posted as a pull-request comment must
not mention people, link, or load remote images because a model wrote `@team` or `![](url)`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support import evalspec_cli

HOSTILE = "[/INST] [bold red]x[/] \x1b[2J\x1b]0;pwned\x07"
"""Rich markup, a screen clear, and a window-title change ended by BEL."""

MARKDOWN_HOSTILE = "@octocat [a](http://e.x) ![i](https://e.x/t.png) <img>"
"""A mention, a link, a remote image and HTML (reasons quote the first 60 characters)."""

UNESCAPED_LINK = re.compile(r"(?<!\\)\]\(")

RAW_CONTROLS = ("\x1b", "\x07")

SUITE = """\
suite: "markup [/nope] \\e[31m"
models: [gpt-4o-mini]
tools:
  - name: send
    parameters: {type: object, properties: {text: {type: string}}}
cases:
  - name: "send [/b] \\e]0;title\\a"
    user: Send hello
    expect:
      tool_calls:
        - send: {text: hello}
"""


def transcript(text: str) -> dict:
    return {
        "item_id": "i1",
        "case": "send [/b] \x1b]0;title\x07",
        "model": "gpt-4o-mini",
        "tool_calls": [
            {
                "name": "send",
                "arguments": {"text": text},
                "raw_arguments": json.dumps({"text": text}),
            }
        ],
        "final_answer": text,
        "turns": 1,
    }


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "t.jsonl").write_text(json.dumps(transcript(HOSTILE)) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(*args: str) -> tuple[int, str]:
    result = evalspec_cli(list(args), env={"COLUMNS": "500"})
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def assert_shown_not_sent(output: str) -> None:
    for raw in RAW_CONTROLS:
        assert raw not in output, f"a raw control character reached the terminal: {output!r}"


def test_plan_prints_names_with_brackets_and_escapes_as_text(workdir: Path) -> None:
    code, output = cli("plan", "s.yaml")
    assert code == 0, output
    assert "markup [/nope] \\x1b[31m: 1 items" in output
    assert "send [/b] \\x1b]0;title\\x07" in output
    assert_shown_not_sent(output)


def test_score_verbose_shows_model_text_as_text(workdir: Path) -> None:
    code, output = cli("score", "s.yaml", "-t", "t.jsonl", "-v", "--allow-stale")
    # The hand-written transcript answers no plan item (stale, accepted here); the model sent
    # the wrong text: a failure, not a crash. The stale warning quotes the text inertly too.
    assert code == 1, output
    assert "[/INST] [bold red]x[/] \\u001b[2J" in output  # JSON-quoted by the critic
    assert_shown_not_sent(output)


def test_diff_shows_model_text_as_text(workdir: Path) -> None:
    (workdir / "s2.yaml").write_text(
        SUITE.replace("{text: hello}", "{text: bye}"), encoding="utf-8"
    )
    code, output = cli(
        "diff", "s.yaml", "s2.yaml", "-t", "t.jsonl", "--all", "--allow-stale"
    )  # the hand-written transcript answers no plan item: stale evidence, accepted here
    assert code == 0, output
    assert "send [/b] \\x1b]0;title\\x07" in output
    assert_shown_not_sent(output)


def test_compare_shows_names_and_reasons_as_text(workdir: Path) -> None:
    row = {
        "field": "text",
        "expected": "hello",
        "actual": HOSTILE,
        "score": 0.0,
        "weight": 1.0,
        "reason": HOSTILE,
    }
    result = {
        "item_id": "i1",
        "case": "c \x1b[2J [/x]",
        "model": "m",
        "trial": 0,
        "score": 0.0,
        "status": "fail",
        "reason": HOSTILE,
        "rows": [row],
    }
    a = {
        "suite": "s",
        "cases": [
            {"case": "c \x1b[2J [/x]", "model": "m", "status": "pass", "score": 1.0, "reason": ""}
        ],
    }
    b = {
        "suite": "s",
        "cases": [{**a["cases"][0], "status": "fail", "score": 0.0, "reason": HOSTILE}],
        "results": [result],
    }
    (workdir / "a.json").write_text(json.dumps(a), encoding="utf-8")
    (workdir / "b.json").write_text(json.dumps(b), encoding="utf-8")
    code, output = cli("compare", "a.json", "b.json")
    assert code == 1, output
    assert "c \\x1b[2J [/x]" in output
    assert_shown_not_sent(output)


def test_errors_show_control_characters_as_escapes(workdir: Path) -> None:
    (workdir / "bad.yaml").write_text(
        SUITE.replace("user: Send hello", "usr\x1b[2J: Send hello"), encoding="utf-8"
    )
    code, output = cli("validate", "bad.yaml")
    assert code == 2
    assert_shown_not_sent(output)


def test_markdown_report_neutralises_mentions_links_images_and_escapes(workdir: Path) -> None:
    # --allow-stale: the hand-written transcripts answer no plan item (stale evidence).
    code, _ = cli("score", "s.yaml", "-t", "t.jsonl", "--markdown", "report.md", "--allow-stale")
    assert code == 1
    text = (workdir / "report.md").read_text(encoding="utf-8")
    assert_shown_not_sent(text)
    assert "\\[/INST\\]" in text and "2J" in text  # shown as text
    (workdir / "t.jsonl").write_text(json.dumps(transcript(MARKDOWN_HOSTILE)) + "\n")
    code, output = cli(
        "score", "s.yaml", "-t", "t.jsonl", "--markdown", "report.md", "--allow-stale"
    )
    assert code == 1, output
    text = (workdir / "report.md").read_text(encoding="utf-8")
    assert "@octocat" not in text and "@&#8203;octocat" in text
    assert not UNESCAPED_LINK.search(text) and "\\[a\\]" in text and "\\!\\[i\\]" in text
    assert "http://" not in text and "https://" not in text
    assert "<img>" not in text and "&lt;img&gt;" in text


def test_diff_markdown_neutralises_model_text(workdir: Path) -> None:
    (workdir / "t.jsonl").write_text(json.dumps(transcript(MARKDOWN_HOSTILE)) + "\n")
    (workdir / "s2.yaml").write_text(
        SUITE.replace("{text: hello}", "{text: bye}"), encoding="utf-8"
    )
    code, output = cli(
        "diff", "s.yaml", "s2.yaml", "-t", "t.jsonl", "--all", "--markdown", "d.md", "--allow-stale"
    )
    assert code == 0, output
    text = (workdir / "d.md").read_text(encoding="utf-8")
    assert_shown_not_sent(text)
    assert "@octocat" not in text and "@&#8203;octocat" in text
    assert not UNESCAPED_LINK.search(text) and "https://" not in text


def test_regex_critic_cannot_backtrack_catastrophically(workdir: Path) -> None:
    """`^(a|aa)+$` against 60 characters takes ages with a backtracking engine; RE2 is linear."""
    (workdir / "r.yaml").write_text(
        SUITE.replace("send: {text: hello}", "send: {text: aaaa}")
        + "    critics:\n      text: {regex: '^(a|aa)+$'}\n",
        encoding="utf-8",
    )
    (workdir / "t.jsonl").write_text(
        json.dumps(transcript("a" * 60 + "!")) + "\n", encoding="utf-8"
    )
    result = evalspec_cli(["score", "r.yaml", "-t", "t.jsonl", "--json", "--allow-stale"])
    assert result.exit_code == 1, result.output
    (case,) = json.loads(result.stdout)["cases"]  # stderr warns of the stale transcript
    assert case["status"] == "fail" and "does not wholly match" not in case["reason"]
