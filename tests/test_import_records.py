"""Records, not files: one record's fault refuses that record, never the file it is in.

On BFCL's own data (tests/data/bfcl_faults, commits in its README): BFCL v4 2025.11.10's
multi_turn_miss_func holds functions back at a turn that has its own user message in 8 of 200
records (BFCL's inference fails on those 8); a v3 parallel_multiple answer holds
`{"deck": [[], ""]}`, which was blamed on the question file ("unhashable type: 'list'") and lost
every verdict of the file. Each refused record is named with the file that holds the fault,
its line and the reason; it stands in the suite as a case that fails whatever the model does
(as BFCL fails an errored record), tagged `import-refused`, and the rest import (exit 0).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml
from fake_openai import FakeOpenAI, text_reply
from support import BFCL_EVAL_ABSENT, KEY_ENV, evalspec_cli, evalspec_import, shown

from evalspec import api

DATA = Path(__file__).resolve().parent / "data" / "bfcl_faults"
MISS_FUNC = DATA / "BFCL_v4_multi_turn_miss_func.json"
PARALLEL_MULTIPLE = DATA / "BFCL_v3_parallel_multiple.json"
REFUSED = "refused (each stands as a case tagged import-refused that fails)"
MF_NAME, PM_ANSWERS = (
    shown(MISS_FUNC),
    shown(DATA / "possible_answer" / PARALLEL_MULTIPLE.name),
)
needs_bfcl = pytest.mark.skipif(
    importlib.util.find_spec("bfcl_eval") is None, reason=BFCL_EVAL_ABSENT
)


def answers(questions: Path) -> Path:
    return questions.parent / "possible_answer" / questions.name


def import_parallel_multiple(out: Path):
    """`evalspec import bfcl` of the v3 parallel_multiple records (one answer is no function)."""
    done = evalspec_import(
        "bfcl", str(PARALLEL_MULTIPLE), str(answers(PARALLEL_MULTIPLE)), "--names", "dotted",
        "--out", str(out),
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    return done


def cases_of(*paths: Path) -> dict[str, dict]:
    return {c["name"]: c for p in paths for c in yaml.safe_load(p.read_text())["cases"]}


@pytest.mark.timeout(300)
@needs_bfcl
def test_miss_func_records_that_add_functions_at_a_turn_with_a_message_are_refused(tmp_path):
    out = tmp_path / "mf.yaml"
    done = evalspec_import("bfcl", str(MISS_FUNC), str(answers(MISS_FUNC)), "--out", str(out))
    assert done.exit_code == 0, done.output
    assert "Traceback" not in done.output
    lines = done.output.splitlines()
    # Named in the question file, which holds the fault, with the line and the reason.
    assert (
        f"{MF_NAME}:2:1: record multi_turn_miss_func_101 refused: turn 1 adds functions "
        "but has a user message of its own (BFCL asks such turns to be empty, and its inference "
        "fails on this record)" in lines
    )
    assert any(line.startswith(f"{MF_NAME}:3:1: record multi_turn_miss_func_102") for line in lines)
    assert f"4 question entries read: 2 imported as cases, 2 {REFUSED}" in done.output
    cases = cases_of(out)
    assert list(cases) == [f"multi_turn_miss_func_{n}" for n in (100, 101, 102, 103)]
    assert cases["multi_turn_miss_func_100"]["turns"] and cases["multi_turn_miss_func_103"]["turns"]
    refused = cases["multi_turn_miss_func_101"]
    assert refused["tags"] == ["multi_turn_miss_func", "import-refused"]
    assert refused["description"].startswith("refused at import: ")
    api.load_suite(out)  # validates

    # Its published result (BFCL's inference failed: an error text) and a good record's, both
    # imported; the refused record's transcript is errored and fails, with the reason.
    results = tmp_path / "r.json"
    results.write_text(
        json.dumps({"id": "multi_turn_miss_func_101", "result": "Error during inference: ..."})
        + "\n"
        + json.dumps({"id": "multi_turn_miss_func_100", "result": [[[]]]})
        + "\n"
    )
    transcripts = tmp_path / "t.jsonl"
    done = evalspec_import("bfcl-results", str(out), str(results), "--out", str(transcripts))
    assert done.exit_code == 0, done.output
    report = api.rescore(out, transcripts, allow_stale=True).report
    assert report is not None
    by_case = {r.case: r for r in report.results}
    assert by_case["multi_turn_miss_func_101"].status == "error"
    assert "refused at import" in by_case["multi_turn_miss_func_101"].reason
    assert by_case["multi_turn_miss_func_100"].status == "fail"  # scored, not refused


@pytest.mark.timeout(300)
def test_an_answer_that_is_no_function_is_refused_and_blamed_on_the_answer_file(tmp_path):
    out = tmp_path / "pm.yaml"
    done = import_parallel_multiple(out)
    assert (
        f"{PM_ANSWERS}:3:1: record parallel_multiple_179 refused: "
        '{"deck": [[], ""]}: the arguments are not an object' in done.output.splitlines()
    )
    assert "unhashable" not in done.output
    assert f"{shown(PARALLEL_MULTIPLE)}:" not in done.output
    assert f"4 question entries read: 3 imported as cases, 1 {REFUSED}" in done.output
    paths = sorted(tmp_path.glob("pm*.yaml"))
    cases = cases_of(*paths)
    assert sorted(cases) == [f"parallel_multiple_{n}" for n in (177, 178, 179, 180)]
    assert "import-refused" in cases["parallel_multiple_179"]["tags"]
    assert all("import-refused" not in c["tags"] for n, c in cases.items() if not n.endswith("179"))


@pytest.mark.timeout(120)
def test_a_bad_line_anywhere_refuses_that_line_only(tmp_path):
    """Parse, decode, convert, check: each fault costs one record; only a file whose every
    record is refused is refused (exit 2, nothing written)."""
    q_lines = PARALLEL_MULTIPLE.read_text().splitlines()
    a_lines = answers(PARALLEL_MULTIPLE).read_text().splitlines()
    questions, possible = tmp_path / "q.json", tmp_path / "a.json"
    faults = {
        "torn question": (
            [*q_lines[:1], '{"id": "parallel_multiple_x", "quest', *q_lines[1:]],
            a_lines,
        ),
        "function not a list": (
            [*q_lines[:1], json.dumps({**json.loads(q_lines[1]), "function": 5}), *q_lines[2:]],
            a_lines,
        ),
        "answer entry empty": (
            q_lines,
            [
                *a_lines[:1],
                json.dumps({"id": json.loads(a_lines[1])["id"], "ground_truth": [{}]}),
                *a_lines[2:],
            ],
        ),
        "answer missing": (q_lines, a_lines[:1] + a_lines[2:]),
        "answer NaN": (q_lines, [*a_lines[:1], '{"id": "x", "n": NaN}', *a_lines[2:]]),
    }
    for what, (q, a) in faults.items():
        questions.write_text("\n".join(q) + "\n")
        possible.write_text("\n".join(a) + "\n")
        out = tmp_path / what.replace(" ", "_") / "s.yaml"
        done = evalspec_import(
            "bfcl", str(questions), str(possible), "--names", "dotted", "--out", str(out)
        )
        assert done.exit_code == 0, (what, done.output)
        assert "Traceback" not in done.output
        assert REFUSED in done.output, (what, done.output)
        imported = cases_of(*out.parent.glob("*.yaml"))
        good = [n for n, c in imported.items() if "import-refused" not in c["tags"]]
        assert len(good) >= 2, (what, done.output)
        for path in out.parent.glob("*.yaml"):
            api.load_suite(path)  # validates
    # Every record refused: the file is wrong, not a record; nothing written.
    possible.write_text(
        "".join(json.dumps({"id": f"other_{n}", "ground_truth": []}) + "\n" for n in range(4))
    )
    out = tmp_path / "none" / "s.yaml"
    done = evalspec_import(
        "bfcl", str(questions), str(possible), "--names", "dotted", "--out", str(out)
    )
    assert done.exit_code == 2, done.output
    assert "every record was refused, nothing written" in done.output
    assert "has no possible answer with this id" in done.output
    assert not out.parent.exists() or not any(out.parent.iterdir())


@pytest.mark.timeout(120)
def test_a_refused_record_fails_when_run(tmp_path, monkeypatch):
    """`evalspec run` on an imported suite: the refused record's case fails whatever the model
    says, and the report gives the reason; the other cases run as usual."""
    out = tmp_path / "pm.yaml"
    done = import_parallel_multiple(out)
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI(lambda body: text_reply("I cannot help with that.")) as server:
        suite = yaml.safe_load(out.read_text())
        suite["models"] = [
            {"name": "m", "model": "fake", "base_url": server.base_url, "api_key_env": KEY_ENV}
        ]
        out.write_text(yaml.safe_dump(suite, sort_keys=False))
        runs = tmp_path / "runs"
        done = evalspec_cli(["run", str(out), "--out", str(runs), "--json"])
    assert done.exit_code == 1, done.output  # the gate: cases failed
    results = json.loads((runs / "results.json").read_text())["results"]
    by_case = {r["case"]: r for r in results}
    refused = by_case["parallel_multiple_179"]
    assert refused["status"] == "error"
    assert refused["reason"] == (
        f"refused at import: {PM_ANSWERS}:3:1: record parallel_multiple_179 refused: "
        '{"deck": [[], ""]}: the arguments are not an object'
    )
    assert by_case["parallel_multiple_177"]["status"] == "fail"  # scored as usual
    assert {r["case"] for r in results} >= {"parallel_multiple_177", "parallel_multiple_179"}


STB = Path(__file__).resolve().parent / "data" / "stabletoolbench"
STB_QUERIES = STB / "solvable_queries_example/test_instruction/G1_instruction.json"
STB_ANSWERS = (
    STB / "data_example/model_predictions_converted/virtual_chatgpt_cot/G1_instruction.json"
)


@pytest.mark.timeout(120)
def test_a_stabletoolbench_query_that_cannot_become_a_case_is_refused_alone(tmp_path):
    queries = json.loads(STB_QUERIES.read_text())
    broken = queries[1]["query_id"]
    del queries[1]["api_list"]
    path = tmp_path / "G1.json"
    path.write_text(json.dumps([*queries, 5]))
    out = tmp_path / "stb.yaml"
    done = evalspec_import("stabletoolbench", str(path), "--out", str(out))
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    where = shown(path)
    no_api_list = f"{where}:1:1: record {broken} refused: it has no 'api_list': got an object"
    assert no_api_list in done.output
    assert f"{where}:1:1: record query-4 refused: the query is not an object, got a number" in lines
    assert f"4 queries read: 2 imported as cases, 2 {REFUSED}" in done.output
    cases = cases_of(*tmp_path.glob("stb*.yaml"))
    assert "import-refused" in cases[str(broken)]["tags"]
    kept = [n for n, c in cases.items() if "import-refused" not in c["tags"]]
    assert sorted(kept) == sorted(str(q["query_id"]) for q in queries if q["query_id"] != broken)
    for suite in tmp_path.glob("stb*.yaml"):
        api.load_suite(suite)  # validates


@pytest.mark.timeout(120)
def test_a_stabletoolbench_answer_with_a_node_naming_no_call_is_refused_alone(tmp_path):
    """Its score would be wrong without the call: that query's transcript is errored (it fails),
    the others import; the file was refused whole (exit 2)."""
    answers = json.loads(STB_ANSWERS.read_text())
    first = next(iter(answers))
    tree = [
        {"role": "system", "message": "", "next": [{"role": "tool", "message": "x", "next": []}]}
    ]
    answers[first]["answer"]["answer_details"] = tree
    path = tmp_path / "virtual_chatgpt_cot" / "G1.json"
    path.parent.mkdir()
    path.write_text(json.dumps(answers))
    out = tmp_path / "t.jsonl"
    done = evalspec_import("stabletoolbench-answers", str(path), "--out", str(out))
    assert done.exit_code == 0, done.output
    assert f"{shown(path)}:1:1: record {first} refused: 1 tool node(s) name no call" in (
        done.output
    )
    made = {t.case: t for t in api.load_transcripts(out)}
    assert set(made) == set(answers)
    assert made[first].finish_reason == "error" and "name no call" in made[first].error
    assert all(t.finish_reason != "error" for c, t in made.items() if c != first)


@pytest.mark.timeout(120)
def test_an_unreadable_span_errors_its_trace_only(tmp_path):
    """Two traces of one case; a span of the second holds an intValue that is no number: that
    trace's transcript is errored (a call missing would make its score wrong), the first is
    imported as it was; the file was refused whole."""

    def span(trace: str, sid: str, value: dict) -> dict:
        attributes = [
            {"key": "tool.name", "value": {"stringValue": "get_user"}},
            {"key": "input.value", "value": {"stringValue": '{"id": 1}'}},
            {"key": "retries", "value": value},
        ]
        return {"traceId": trace, "spanId": sid, "name": "tool", "attributes": attributes}

    spans = [span("good", "a", {"intValue": "1"}), span("bad", "b", {"intValue": "abc"})]
    path = tmp_path / "spans.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    out = tmp_path / "t.jsonl"
    done = evalspec_import("otel", str(path), "--case", "c", "--out", str(out))
    assert done.exit_code == 0, done.output
    assert (
        f"{shown(path)}:1:1: record trace bad refused: span 2: intValue 'abc' is not a "
        "number" in done.output.splitlines()
    )
    made = {t.item_id: t for t in api.load_transcripts(out)}
    assert made["otel:c:good"].tool_calls[0].name == "get_user"
    assert made["otel:c:bad"].finish_reason == "error"
