"""Hostile text through capture accept and the trace importer: a run directory or a trace file
from a pull request writes a suite, so what a model or a trace said must stay data in it (no
template, no suite key, no hidden character), and personal data must not slip past `--redact`
(another spelling, a mapping key, a refused record) or make it run for hours."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import CAPTURE_SUITE as SUITE
from support import capture_accept as accept
from support import captured_run, evalspec_import, one_turn_trace
from support import imported_traces as imported
from support import otel_chat as chat
from support import otel_export as export
from support import otel_span as span
from support import otel_text as text

from evalspec import api

BREAKOUTS = [
    "x {%endraw%}{{ 7*7 }}{%raw%} y",
    "x {%- endraw -%}{{ 6*7 }}{%- raw -%} y",
    "x {%+ endraw +%}{{ 5*5 }} y",
    "x {%\tendraw\n%}{{ 4*4 }} y",
    "x {% endraw %}{{ 3*3 }}{% raw %} y {",
    "{%%}{#{{",
    "it's {{ x }} \\' \\\\ \n\r\n\t é 😀 \x00 }}'",
    "{%" * 200_000,
]
"""Every spelling of Jinja's end of a raw block, each followed by an expression; quotes,
escapes and line breaks; a value of 200,000 `{%`."""


def _send(text: str) -> dict[str, Any]:
    return {"to": "Ann", "text": text, "when": "2026-06-02", "amount": 12.5, "unit": "eur"}


@pytest.mark.parametrize("hostile", BREAKOUTS)
def test_a_models_text_never_becomes_a_template_of_the_accepted_suite(
    tmp_path: Path, hostile: str
) -> None:
    script = {
        ("look up", "m1"): [("get_user", {"user_id": "u-17"})],
        ("look up", "m2"): [("get_user", {"user_id": "u-17"})],
        ("send note", "m1"): [("send", _send(hostile))],
        ("send note", "m2"): [("send", _send(hostile))],
    }
    path, run_dir = captured_run(tmp_path, SUITE, script)
    done = accept(path, run_dir)
    assert done.exit_code == 0, done.output
    expected = api.load_suite(path).cases[1].expect.tool_calls[0]
    assert expected.args["text"] == hostile  # the text as the model wrote it, not rendered


def test_hidden_characters_from_a_run_are_written_as_escapes(tmp_path: Path) -> None:
    """A tool name or argument holding escape sequences, bidirectional overrides or a line
    break reaches the suite only as visible escapes: `git diff` shows it as it is, and no
    comment line breaks out into suite keys."""
    other = "get\x1b]0;owned\x07\u202euser\nmcp: {command: [sh]}"
    script = {
        ("look up", "m1"): [("get_user", {"user_id": "u-17\u202e\x1b[2J"})],
        ("look up", "m2"): [("get_user", {"user_id": "u-17\u202e\x1b[2J"})],
        ("send note", "m1"): [("send", _send("Ready \u2066now\u2069 \x9b31m"))],
        ("send note", "m2"): [(other, {"q": 1})],
        ("send note", "m2", 1): [(other, {"q": 1})],
    }
    path, run_dir = captured_run(tmp_path, SUITE, script)
    done = accept(path, run_dir)
    assert done.exit_code == 0, done.output
    written = path.read_text(encoding="utf-8")
    for hidden in ("\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\u2069"):
        assert hidden not in written
    assert "\\u202E" in written and "\\x1b]0;owned\\x07\\u202euser mcp:" in written
    suite = api.load_suite(path)
    assert all(t.mcp is None for t in suite.tools)
    assert suite.cases[0].expect.tool_calls[0].args["user_id"] == "u-17\u202e\x1b[2J"
    assert suite.cases[1].expect.tool_calls[0].args["text"] == "Ready \u2066now\u2069 \x9b31m"


@pytest.mark.parametrize("hostile", BREAKOUTS)
def test_a_traces_text_never_becomes_a_template_of_the_imported_suite(
    tmp_path: Path, hostile: str
) -> None:
    done, suite, _ = imported(tmp_path, one_turn_trace("t-1", hostile))
    assert done.exit_code == 0, done.output
    assert api.load_suite(suite).cases[0].messages[-1].content == f"Weather in {hostile}?"


def test_hidden_characters_from_a_trace_are_written_as_escapes(tmp_path: Path) -> None:
    lines = one_turn_trace("t-1", "Paris\u202e\x1b[31m")
    source = tmp_path / "a\nmodels: [x]\u202e.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "prod.yaml"
    done = evalspec_import("traces", str(source), "--out", str(out))
    assert done.exit_code == 0, done.output
    written = out.read_text(encoding="utf-8")
    for hidden in ("\x1b", "\u202e"):
        assert hidden not in written
    loaded = api.load_suite(out)
    assert [m.name for m in loaded.models] == ["gpt-4o"]  # the file's name stayed a comment
    assert loaded.cases[0].messages[-1].content == "Weather in Paris\u202e\x1b[31m?"


ADDRESSES = [
    "jürgen@müller.de",
    "ann＠example.com",
    "ann@example。com",
    "Ann.B+x@sub.example.co.uk",
]


def _user_trace(trace: str, said: str, **arguments: Any) -> list[str]:
    called = {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "w1", "name": "note", "arguments": arguments}],
    }
    return [
        export(
            chat(trace, "s1", 1, [text("user", said)], [called]),
            span(trace, "root", "", 0),
        )
    ]


@pytest.mark.parametrize("address", ADDRESSES)
def test_an_address_in_another_spelling_is_redacted(tmp_path: Path, address: str) -> None:
    lines = _user_trace("t-1", f"mail {address} now", to=address)
    done, suite, runs = imported(tmp_path, lines, "--redact", "email")
    assert done.exit_code == 0, done.output
    for written in (suite, runs):
        assert address not in written.read_text(encoding="utf-8")
    assert api.load_suite(suite).cases[0].messages[-1].content == "mail [redacted:email] now"


def test_data_in_keys_tool_definitions_and_trace_ids_is_redacted(tmp_path: Path) -> None:
    definitions = json.dumps(
        [
            {
                "type": "function",
                "name": "note",
                "description": "Notes, e.g. for bob@example.com.",
                "parameters": {"type": "object", "properties": {"to": {"type": "object"}}},
            }
        ]
    )
    lines = _user_trace("carl@example.com", "note it", to={"dora@example.com": "hi"})
    spans = json.loads(lines[0])
    attrs = spans["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    attrs.append({"key": "gen_ai.tool.definitions", "value": {"stringValue": definitions}})
    bad = export(span("erin@example.com", "root", "", 0))  # no conversation: refused
    done, suite, runs = imported(tmp_path, [json.dumps(spans), bad], "--redact", "email")
    assert done.exit_code == 0, done.output
    for name in ("bob", "carl", "dora", "erin"):
        assert f"{name}@example.com" not in done.output
        for written in (suite, runs):
            assert f"{name}@example.com" not in written.read_text(encoding="utf-8")


@pytest.mark.timeout(60)
def test_one_long_word_does_not_stall_the_redaction(tmp_path: Path) -> None:
    """A backtracking search tried at every letter of a run of a million: hours, not seconds."""
    lines = _user_trace("t-1", "a" * 1_000_000 + " ann@example.com")
    done, suite, _ = imported(tmp_path, lines, "--redact", "email", "--redact", "phone")
    assert done.exit_code == 0, done.output
    assert api.load_suite(suite).cases[0].messages[-1].content.endswith(" [redacted:email]")


def _hand_edited(run_dir: Path, edit: Any) -> None:
    """The run's transcripts as a pull request may ship them: each line changed by `edit`."""
    path = run_dir / "transcripts.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    path.write_text("".join(json.dumps(edit(t)) + "\n" for t in lines), encoding="utf-8")


def _deep(transcript: dict[str, Any]) -> dict[str, Any]:
    value: Any = "bottom"
    for _ in range(150):
        value = [value]
    for call in transcript["tool_calls"]:
        call["arguments"] = {"user_id": value} if call["name"] == "get_user" else call["arguments"]
    return transcript


def test_arguments_too_deep_for_a_suite_are_refused_naming_the_suite(tmp_path: Path) -> None:
    path, run_dir = captured_run(tmp_path)
    _hand_edited(run_dir, _deep)
    before = path.read_bytes()
    done = accept(path, run_dir)
    assert done.exit_code == 2
    assert f"would not validate, so nothing was written: {path}:" in done.output
    assert "Traceback" not in done.output and ".cap." not in done.output
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cap.recordings.jsonl",
        "cap.yaml",
        "run",
    ]


def test_a_run_whose_transcripts_are_a_link_is_refused(tmp_path: Path) -> None:
    path, run_dir = captured_run(tmp_path)
    elsewhere = tmp_path.parent / f"{tmp_path.name}-outside.jsonl"
    (run_dir / "transcripts.jsonl").rename(elsewhere)
    (run_dir / "transcripts.jsonl").symlink_to(elsewhere)
    before = path.read_bytes()
    done = accept(path, run_dir)
    assert done.exit_code == 2 and "symbolic link" in done.output
    assert str(elsewhere) not in done.output and path.read_bytes() == before


def test_a_suite_that_is_a_link_out_of_the_project_is_not_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pull request's `cap.yaml` that links to a file elsewhere (a dotfile, another
    checkout): accepting it must not rewrite that file."""
    path, _ = captured_run(tmp_path)
    real = tmp_path.parent / f"{tmp_path.name}-real.yaml"
    path.rename(real)
    path.symlink_to(real)
    before = real.read_bytes()
    monkeypatch.chdir(tmp_path)
    done = accept("cap.yaml", "run")
    assert done.exit_code == 2 and "symbolic link" in done.output
    assert str(real) not in done.output
    assert real.read_bytes() == before and path.is_symlink()


def _called(trace: str, tool: str) -> list[str]:
    called = {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "w1", "name": tool, "arguments": {"a": 1}}],
    }
    return [
        export(chat(trace, "s1", 1, [text("user", "hi")], [called]), span(trace, "root", "", 0))
    ]


def test_a_trace_whose_tools_are_not_names_is_refused_alone(tmp_path: Path) -> None:
    """Each tool a trace calls becomes a suite tool: a name no suite can hold used to write a
    suite that `validate` then refused, whole."""
    lines = [
        *_called("t-1", "get weather\x1b[31m\u202e"),
        *_called("t-2", "x" * 300),
        *_called("t-3", ""),
        *_called("t-4", "get_weather"),
    ]
    done, suite, _ = imported(tmp_path, lines)
    assert done.exit_code == 0, done.output
    assert "record trace t-1 refused: the tool name 'get weather\\x1b[31m\\u202e'" in done.output
    assert "\x1b" not in done.output and "\u202e" not in done.output
    assert "3 record(s) refused" in done.output
    loaded = api.load_suite(suite)  # validates
    assert [t.name for t in loaded.tools] == ["get_weather"]


@pytest.mark.parametrize("option", ["--out", "--transcripts"])
def test_an_output_through_a_link_is_refused_and_its_target_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    target = tmp_path.parent / f"{tmp_path.name}-target.txt"
    target.write_text("kept\n", encoding="utf-8")
    (tmp_path / "traces.jsonl").write_text("\n".join(_called("t-1", "f")) + "\n")
    (tmp_path / "linked").symlink_to(target)
    monkeypatch.chdir(tmp_path)
    outputs = {"--out": "prod.yaml", "--transcripts": "prod.jsonl", option: "linked"}
    args = [a for pair in outputs.items() for a in pair]
    done = evalspec_import("traces", "traces.jsonl", *args)
    assert done.exit_code == 2 and "symbolic link" in done.output
    assert str(target) not in done.output
    assert target.read_text(encoding="utf-8") == "kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["linked", "traces.jsonl"]


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _answered(trace: str, arguments: Any, output: Any, calls: int = 1) -> list[str]:
    """A trace whose model calls `f` `calls` times, each answered with `output`."""
    made = [
        {"type": "tool_call", "id": f"c{i}", "name": "f", "arguments": arguments}
        for i in range(calls)
    ]
    answers = [
        {"type": "tool_call_response", "id": f"c{i}", "response": output} for i in range(calls)
    ]
    said = [text("user", "hi"), {"role": "assistant", "parts": made}]
    said.append({"role": "tool", "parts": answers})
    return [
        export(
            chat(trace, "s1", 1, said, [text("assistant", "done")]),
            span(trace, "root", "", 0),
        )
    ]


@pytest.mark.parametrize(
    ("arguments", "output", "calls", "why"),
    [
        ({"a": _nested(60)}, "ok", 1, "the arguments of call 'c0' (f) nest deeper than 48"),
        ({"a": 1}, {"b": _nested(60)}, 1, "the output of call 'c0' (f) nest deeper than 48"),
        ({"a": 1}, "ok", 101, "it makes 101 tool calls; a case expects at most 100"),
    ],
    ids=["deep arguments", "deep output", "too many calls"],
)
def test_a_trace_the_suite_cannot_hold_is_refused_alone(
    tmp_path: Path, arguments: Any, output: Any, calls: int, why: str
) -> None:
    """What used to be written into a suite `validate` then refused whole."""
    lines = [*_answered("t-1", arguments, output, calls), *_answered("t-2", {"a": 1}, "ok")]
    done, suite, _ = imported(tmp_path, lines)
    assert done.exit_code == 0, done.output
    assert f"record trace t-1 refused: {why}" in done.output
    loaded = api.load_suite(suite)  # validates: the refused trace is a case that fails
    assert [c.name for c in loaded.cases] == ["trace t-2", "trace t-1"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--out", "t.jsonl"], "--out (t.jsonl) would be written over the traces file being read"),
        (
            ["--out", "p.yaml", "--transcripts", "t.jsonl"],
            "--transcripts (t.jsonl) would be written over the traces file being read",
        ),
        (
            ["--out", "p.yaml", "--transcripts", "p.yaml"],
            "--transcripts (p.yaml) would be written over --out",
        ),
        (
            ["--out", "t.yaml", "--record"],
            "the recordings of --record (t.recordings.jsonl) would be written over the traces",
        ),
    ],
    ids=["out", "transcripts", "each other", "recordings"],
)
def test_an_output_over_the_traces_read_or_another_output_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], said: str
) -> None:
    source = "t.recordings.jsonl" if "--record" in args else "t.jsonl"
    monkeypatch.chdir(tmp_path)
    lines = "\n".join(_called("t-1", "f")) + "\n"
    Path(source).write_text(lines, encoding="utf-8")
    done = evalspec_import("traces", source, *args)
    assert done.exit_code == 2 and said in done.output, done.output
    assert Path(source).read_text(encoding="utf-8") == lines
    assert sorted(p.name for p in tmp_path.iterdir()) == [source]


OVER = 64 * 1024 * 1024 + 10
"""Bytes just over the most evalspec reads whole."""


@pytest.mark.slow
def test_a_line_too_long_to_hold_is_refused_unread_and_the_rest_imported(tmp_path: Path) -> None:
    source = tmp_path / "traces.jsonl"
    with source.open("wb") as fh:
        fh.write(("\n".join(_called("t-1", "f")) + "\n").encode())
        fh.write(b'{"attributes": "' + b"a" * OVER + b'"}\n')
        fh.write(("\n".join(_called("t-2", "f")) + "\n").encode())
    done = evalspec_import("traces", str(source), "--out", str(tmp_path / "p.yaml"))
    assert done.exit_code == 0, done.output[:2000]
    assert "traces.jsonl:2:1: record line-2 refused: the line is over 64 MiB" in done.output
    assert len(done.output) < 2_000
    assert {c.name for c in api.load_suite(tmp_path / "p.yaml").cases} == {
        "trace t-1",
        "trace t-2",
        "line-2",
    }


def test_one_document_too_large_to_hold_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "traces.json"
    with source.open("wb") as fh:
        fh.write(b'[\n  {"attributes": "' + b"a" * OVER + b'"}\n]\n')
    done = evalspec_import("traces", str(source), "--out", str(tmp_path / "p.yaml"))
    assert done.exit_code == 2
    assert "one JSON document over 64 MiB is not read whole" in done.output
    assert "export JSON Lines" in done.output and "Traceback" not in done.output
    assert not (tmp_path / "p.yaml").exists()


def _turn(trace: str, start: int, said: str, tool: str, calls: int) -> list[str]:
    """One user turn as its own trace, named as a turn of conversation conv-X."""
    made = [
        {"type": "tool_call", "id": f"{trace}-{i}", "name": tool, "arguments": {"a": i}}
        for i in range(calls)
    ]
    inputs = [text("user", said), {"role": "assistant", "parts": made}]
    root = span(trace, "root", "", start, **{"gen_ai.conversation.id": "conv-X"})
    return [export(chat(trace, "c", start + 1, inputs, [text("assistant", "ok")]), root)]


@pytest.mark.parametrize(
    ("second", "why"),
    [
        (("bad name\x1b", 1), "the tool name 'bad name\\x1b' is not one a suite can hold"),
        (("f", 60), "it makes 120 tool calls; a case expects at most 100"),
    ],
    ids=["a turn's tool name", "calls of all turns"],
)
def test_a_conversation_over_traces_the_suite_cannot_hold_is_refused_whole(
    tmp_path: Path, second: tuple[str, int], why: str
) -> None:
    """No turn is silently left out of the conversation it belongs to."""
    lines = [
        *_turn("a1", 100, "first", "f", 60),
        *_turn("a2", 200, "second", *second),
        *_called("t-9", "f"),
    ]
    done, suite, _ = imported(tmp_path, lines)
    assert done.exit_code == 0, done.output
    assert f"record conversation conv-X refused: {why}" in done.output
    assert {c.name for c in api.load_suite(suite).cases} == {"trace t-9", "conversation conv-X"}
