"""A run's results go to disk as they are scored: memory does not grow with them, and every
report reads them back exactly as they were scored."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest
from support import evalspec_cli

from evalspec import api
from evalspec.plugins import ChatRequest, ChatResponse
from evalspec.records import RunRequest

CASES = 240


def _suite(cases: int, *, models: int = 1, trials: int = 1) -> str:
    names = ", ".join(f"{{name: m{k}, model: x{k}}}" for k in range(models))
    lines = [
        "suite: streamed",
        f"models: [{names}]",
        "run: {mode: single_turn}",
        "critics: {id: binary, note: exact}",
        "tools: [{name: t, parameters: {type: object, properties: {id: {type: string},"
        " note: {type: string}}}, responses: [{output: {ok: true}}]},"
        " {name: u, parameters: {type: object}}]",
        "cases:",
    ]
    lines += [
        f"  - {{name: c{i}, user: 'q {i}', trials: {trials},"
        f" expect: {{tool_calls: [{{t: {{id: r{i}, note: n}}}}]}}}}"
        for i in range(cases)
    ]
    return "\n".join(lines) + "\n"


class _Answers:
    """Right, wrong, the wrong tool, no call, or a note holding a lone surrogate and text from
    other scripts (what a hostile model may send), by case, model and trial."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    async def complete(self, request: ChatRequest) -> ChatResponse:
        case = int(request.label.split("'")[1][1:])
        asked = self.seen[request.label] = self.seen.get(request.label, -1) + 1
        kind = (case + asked + len(request.model)) % 5
        if kind == 3:
            return ChatResponse({"role": "assistant", "content": "no"}, "stop", {}, 0.0)
        name = "u" if kind == 2 else "t"
        note = "n" if kind != 4 else "n \ud83d cut, 名前, \u2028"
        args = json.dumps({"id": f"r{case}" if kind != 1 else "wrong", "note": note})
        call = {"id": "c0", "type": "function", "function": {"name": name, "arguments": args}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return ChatResponse(message, "tool_calls", {"prompt_tokens": 3}, 0.0)

    async def aclose(self) -> None:
        return None


def _recorded(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "streamed.yaml"
    path.write_text(text, encoding="utf-8")
    api.record_answers(api.load_suite(path), _Answers())
    return path


def _alive(kind: type) -> int:
    gc.collect()
    return sum(isinstance(o, kind) for o in gc.get_objects())


def test_a_run_keeps_its_results_on_disk_not_in_memory(tmp_path: Path) -> None:
    """After a run, nothing holds its scored results: the report reads them from disk."""
    suite = _recorded(tmp_path, _suite(CASES))
    done = api.run(RunRequest(suite, record="offline", out=tmp_path / "run"))
    assert len(done.report.results) == CASES
    result = type(done.report.results[0])  # a result, read back
    assert _alive(result) == 0  # were CASES before: one per item, held for the report
    assert sorted(p.name for p in (tmp_path / "run").iterdir() if p.name != ".lock") == [
        "results.json",
        "run.json",
        "transcripts.jsonl",
    ]  # and the results kept aside leave nothing behind


def _as_score_reads(text: str) -> str:
    """`score` reads a transcript's lone surrogate as U+FFFD; the run scored the answer as it
    came (and its reports escape it)."""
    return text.replace("\\ud83d", "\ufffd")


def _without_created(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "created"}


@pytest.mark.parametrize(("models", "trials"), [(1, 1), (2, 3)])
def test_the_reports_read_back_what_was_scored(tmp_path: Path, models: int, trials: int) -> None:
    """results.json, the Markdown and the JUnit of a run are those of scoring its transcripts
    in memory, every model's cases in suite order and each case's trials in order, hostile
    text included."""
    suite = _recorded(tmp_path, _suite(40, models=models, trials=trials))
    out = tmp_path / "out"
    run_args = ["run", suite, "--record", "offline", "--out", tmp_path / "run"]
    ran = evalspec_cli([*run_args, "--markdown", out / "run.md", "--junit", out / "run.xml"])
    assert ran.exit_code == 1, ran.output
    scored = evalspec_cli(
        [
            *("score", suite, "-t", tmp_path / "run", "--out", out / "scored.json"),
            *("--markdown", out / "scored.md", "--junit", out / "scored.xml"),
        ]
    )
    assert scored.exit_code == 1, scored.output
    written = (tmp_path / "run" / "results.json").read_text(encoding="utf-8")
    again = (out / "scored.json").read_text(encoding="utf-8")
    assert "\\ud83d" in written  # the lone surrogate, escaped as results.json escapes it
    written = _as_score_reads(written)
    assert written.split('"created"')[0] == again.split('"created"')[0]
    assert (
        written.split('"created"')[1].split("\n", 1)[1]
        == again.split('"created"')[1].split("\n", 1)[1]
    )
    run_md = _as_score_reads((out / "run.md").read_text(encoding="utf-8"))
    assert run_md == (out / "scored.md").read_text(encoding="utf-8")
    stamp = 'time="'
    run_xml = _as_score_reads((out / "run.xml").read_text(encoding="utf-8"))
    scored_xml = (out / "scored.xml").read_text(encoding="utf-8")
    assert [line.split(stamp)[0] for line in run_xml.splitlines()] == [
        line.split(stamp)[0] for line in scored_xml.splitlines()
    ]
    report = api.run(RunRequest(suite, record="offline", out=tmp_path / "again")).report
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert [c.case for c in report.cases] == [c["case"] for c in results["cases"]]
    assert all([r.trial for r in c.results] == list(range(trials)) for c in report.cases)
    as_read = json.loads(json.dumps(report.to_dict()))
    assert _without_created(as_read) == _without_created(results)


def test_a_run_whose_model_wrote_a_line_separator_is_read_back(tmp_path: Path) -> None:
    """A model's answer holding U+2028 (kept as it is in transcripts.jsonl) cut its line in two
    for `score` and `--resume`, which refused the run's own file."""
    suite = _recorded(tmp_path, _suite(6))
    ran = evalspec_cli(["run", suite, "--record", "offline", "--out", tmp_path / "run"])
    assert ran.exit_code == 1, ran.output
    assert "\u2028" in (tmp_path / "run" / "transcripts.jsonl").read_text(encoding="utf-8")
    scored = evalspec_cli(["score", suite, "-t", tmp_path / "run", "--json"])
    assert scored.exit_code == 1, scored.output
    assert len(json.loads(scored.stdout)["results"]) == 6


def test_the_junit_written_a_case_at_a_time_is_laid_out_as_elementtree_lays_it_out(
    tmp_path: Path,
) -> None:
    """The JUnit file is written a test case at a time; read back and written whole by
    ElementTree (indented, with its declaration), it is the same bytes: text that XML forbids
    or must escape (a lone surrogate, U+2028, `<&"`) included."""
    import xml.etree.ElementTree as ET

    text = _suite(30, models=2, trials=2).replace("note: n}", "note: 'n <&\"> x'}")
    suite = _recorded(tmp_path, text)
    xml = tmp_path / "junit.xml"
    ran = evalspec_cli(
        ["run", suite, "--record", "offline", "--out", tmp_path / "r", "--junit", xml]
    )
    assert ran.exit_code == 1, ran.output
    written = xml.read_bytes()
    tree = ET.parse(xml)
    ET.indent(tree)
    again = tmp_path / "again.xml"
    tree.write(again, encoding="utf-8", xml_declaration=True)
    assert written == again.read_bytes()
    assert written.count(b"<testcase ") == 60
    assert b'n &lt;&amp;"&gt; x' in written  # an expected value, escaped in a failure's text


def test_a_capture_case_stays_out_of_the_tool_confusion_counted_as_results_come(
    tmp_path: Path,
) -> None:
    """The tool confusion a run counts as its results are written leaves capture cases out,
    as summarising the results in memory does."""
    from support import captured_run

    path, run_dir = captured_run(tmp_path)
    ran = api.run(RunRequest(path, record="offline", out=tmp_path / "again")).report
    scored = api.score(api.load_suite(path), api.load_transcripts(run_dir))
    assert [m.tool_confusion for m in ran.models] == [m.tool_confusion for m in scored.models]
    assert [(c.case, c.status) for c in ran.cases] == [(c.case, c.status) for c in scored.cases]


def test_a_run_that_cannot_keep_its_results_aside_says_where_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No room (or no directory) for the results kept aside: exit 3 with the directory and
    TMPDIR named, no traceback."""
    import tempfile

    suite = _recorded(tmp_path, _suite(4))
    missing = tmp_path / "no-such-dir"
    monkeypatch.setattr(tempfile, "tempdir", str(missing))
    ran = evalspec_cli(["run", suite, "--record", "offline", "--out", tmp_path / "run"])
    assert ran.exit_code == 3, ran.output
    said = ran.output
    assert f"cannot keep the scored results in a temporary file in {missing}" in said
    assert "TMPDIR" in said and "Traceback" not in said
