"""BFCL importer: function docs as JSON Schema tools, suite generation, model results decoding.

A unit test of the BFCL importer's pieces (`evalspec._interop.bfcl` and its decoder
`evalspec._interop.bfcl_decode`), which it imports: type conversion, suite dictionaries and
decoding are each checked on their own; `evalspec import bfcl` and `import bfcl-results` run
end to end here too, through the command.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from msgspec.structs import replace
from support import evalspec_import, read_records, shown, write_suite_yaml

from evalspec._interop.bfcl import (
    INVALID_TAG,
    bfcl_suite_dict,
    bfcl_suite_dicts,
    bfcl_tools,
    bfcl_transcripts,
    param_schema,
    split_records,
    suite_yaml,
)
from evalspec._interop.bfcl_decode import DecodeError, decode
from evalspec.api import load_suite, load_transcripts, score
from evalspec.errors import UsageError
from evalspec.records import ToolCall, Transcript

DATA = Path(__file__).resolve().parent / "data" / "bfcl"
FAULTS = DATA.parent / "bfcl_faults"
FILES = ("BFCL_v4_simple_python.json", "BFCL_v4_multiple.json", "BFCL_v4_parallel.json")

AREA = {
    "name": "geometry.area",
    "description": "Area of a shape.",
    "parameters": {
        "type": "dict",
        "properties": {
            "shape": {"type": "string", "enum": ["circle", "square"], "description": "Shape."},
            "size": {"type": "float", "default": 1.0},
            "units": {"type": "any"},
            "corner": {"type": "tuple", "items": {"type": "integer"}},
            "style": {
                "type": "dict",
                "properties": {"color": {"type": "string"}, "alpha": {"type": "float"}},
                "required": ["color"],
            },
            "layers": {
                "type": "array",
                "items": {"type": "dict", "properties": {"z": {"type": "integer"}}},
            },
            "filled": {"type": "boolean", "optional": True},
        },
        "required": ["shape"],
    },
}
AREA_TRUTH = {
    "geometry.area": {
        "shape": ["circle"],
        "size": [2.0, 2],
        "units": ["", "cm"],
        "style": [{"color": ["red", "Red"], "alpha": ["", 0.5]}],
        "layers": [[{"z": [1]}, {"z": [2]}]],
        "filled": [True, ""],
    }
}


def test_bfcl_types_become_json_schema() -> None:
    (tool,) = bfcl_tools([AREA])
    props = tool["parameters"]["properties"]
    assert tool["name"] == "geometry.area"
    assert tool["parameters"]["type"] == "object"
    assert tool["parameters"]["required"] == ["shape"]
    assert props["shape"] == {
        "type": "string",
        "description": "Shape.",
        "enum": ["circle", "square"],
    }
    assert props["size"] == {"type": "number", "default": 1.0}
    assert props["units"] == {}
    assert props["corner"] == {"type": "array", "items": {"type": "integer"}}
    assert props["style"]["type"] == "object"
    assert props["style"]["properties"]["alpha"] == {"type": "number"}
    assert props["style"]["required"] == ["color"]
    assert props["layers"]["items"]["properties"]["z"] == {"type": "integer"}
    assert props["filled"] == {"type": "boolean"}  # BFCL's "optional" is not JSON Schema


JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object"}


def _types(schema: dict) -> set[str]:
    found = {schema["type"]} if "type" in schema else set()
    for sub in (schema.get("properties") or {}).values():
        found |= _types(sub)
    if isinstance(schema.get("items"), dict):
        found |= _types(schema["items"])
    return found


@pytest.mark.slow
def test_every_bfcl_function_doc_is_a_valid_json_schema() -> None:
    count = 0
    for file in FILES:
        for record in read_records(DATA / file):
            for tool in bfcl_tools(record["function"]):
                Draft202012Validator.check_schema(tool["parameters"])
                assert _types(tool["parameters"]) <= JSON_TYPES
                count += 1
    assert count == 1157


def test_nested_types_convert_everywhere() -> None:
    schema = param_schema(
        {"type": "array", "items": {"type": "dict", "properties": {"v": {"type": "float"}}}}
    )
    assert schema == {
        "type": "array",
        "items": {"type": "object", "properties": {"v": {"type": "number"}}},
    }


def _case(suite: dict) -> dict:
    (case,) = suite["cases"]
    return case


def test_case_expects_first_acceptable_values_and_judges_every_argument() -> None:
    record = {"id": "simple_python_7", "question": [[{"role": "user", "content": "Area?"}]]}
    suite = bfcl_suite_dict(
        [{**record, "function": [AREA]}],
        [{"id": "simple_python_7", "ground_truth": [AREA_TRUTH]}],
        name="t",
    )
    case = _case(suite)
    (call,) = case["expect"]["tool_calls"]
    assert case["name"] == "simple_python_7" and case["tags"] == ["simple_python"]
    assert case["user"] == "Area?"
    assert call["tool"] == "geometry.area"
    # "" first means "may be left out": units is not expected, but still judged.
    assert call["args"] == {
        "shape": "circle",
        "size": 2.0,
        "style": {"color": "red"},
        "layers": [{"z": 1}, {"z": 2}],
        "filled": True,
    }
    assert call["critics"]["units"] == {
        "one_of": {"values": ["", "cm"], "normalize": True, "type": "any"}
    }
    assert call["critics"]["size"] == {"one_of": {"values": [2.0, 2], "type": "float"}}
    assert suite["rubric"] == {
        "fail_threshold": 1.0,
        "warn_threshold": 1.0,
        "fail_on_tool_selection": True,
        "fail_on_tool_call_quantity": True,
        "extra_args": "penalize",
        "normalize_tool_names": False,
    }
    assert suite["run"] == {"mode": "single_turn"}


def test_required_argument_stays_required_when_its_list_holds_empty() -> None:
    fn = {
        "name": "f",
        "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]},
    }
    suite = bfcl_suite_dict(
        [{"id": "s_1", "question": [[{"role": "user", "content": "q"}]], "function": [fn]}],
        [{"id": "s_1", "ground_truth": [{"f": {"x": ["", 25.0]}}]}],
        name="t",
    )
    (call,) = _case(suite)["expect"]["tool_calls"]
    assert call["args"] == {"x": 25.0}
    assert call["critics"]["x"] == {"one_of": {"values": [25.0], "type": "float"}}


VOLTAGE = {
    "name": "calculate_voltage_difference",
    "parameters": {
        "type": "dict",
        "properties": {
            "electric_field": {"type": "float"},
            "distance": {"type": "float"},
            "charge": {"type": "float"},
            "pairings": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["electric_field", "distance"],
    },
}


def _scored(tmp_path: Path, truth: dict, *calls: dict) -> list[str]:
    """Import one record with `truth` as its possible answer, validate the suite, score calls."""
    question = {"id": "x_1", "question": [[{"role": "user", "content": "q"}]]}
    suite_dict = bfcl_suite_dict(
        [{**question, "function": [VOLTAGE]}], [{"id": "x_1", "ground_truth": [truth]}], name="t"
    )
    path = tmp_path / "t.yaml"
    path.write_text(suite_yaml(suite_dict), encoding="utf-8")
    suite = load_suite(path)  # the suite validates
    transcripts = [
        Transcript(
            item_id=f"x_1:{i}",
            case="x_1",
            model="m",
            tool_calls=(ToolCall(name=VOLTAGE["name"], arguments=a, raw_arguments=json.dumps(a)),),
        )
        for i, a in enumerate(calls)
    ]
    return [suite_dict["cases"][0]["tags"], *(r.status for r in score(suite, transcripts).results)]


def test_answer_naming_an_undefined_parameter_is_tagged_and_scored_as_bfcl(tmp_path: Path) -> None:
    """BFCL rejects an argument its doc does not define: the answer passes only without it."""
    truth = {
        VOLTAGE["name"]: {"electric_field": [5.0], "distance": [2.0], "permeability": ["", 0.1]}
    }
    good, undefined = {"electric_field": 5.0, "distance": 2.0}, {"permeability": 0.1}
    tags, *statuses = _scored(tmp_path, truth, good, {**good, **undefined})
    assert tags == ["x", INVALID_TAG]
    assert statuses == ["pass", "fail"]
    # Without "" the undefined parameter must be given and cannot be: nothing passes.
    truth[VOLTAGE["name"]]["permeability"] = [0.1]
    assert _scored(tmp_path, truth, good, {**good, **undefined})[1:] == ["fail", "fail"]


def test_types_are_checked_before_acceptable_values(tmp_path: Path) -> None:
    """ "" listed as acceptable for an optional array still is text, not an array: BFCL's
    type_error:simple. Left out, or an empty list, passes."""
    truth = {VOLTAGE["name"]: {"electric_field": [5.0], "distance": [2.0], "pairings": ["", []]}}
    base = {"electric_field": 5.0, "distance": 2.0}
    statuses = _scored(tmp_path, truth, {**base, "pairings": ""}, base, {**base, "pairings": []})[
        1:
    ]
    assert statuses == ["fail", "pass", "pass"]


def test_records_redefining_a_tool_name_go_to_separate_suites() -> None:
    def record(rid: str, param: str) -> dict:
        fn = {
            "name": "f",
            "parameters": {"type": "dict", "properties": {param: {"type": "integer"}}},
        }
        return {"id": rid, "question": [[{"role": "user", "content": rid}]], "function": [fn]}

    questions = [record("a_0", "x"), record("a_1", "y"), record("a_2", "x")]
    answers = [
        {"id": "a_0", "ground_truth": [{"f": {"x": [1]}}]},
        {"id": "a_1", "ground_truth": [{"f": {"y": [1]}}]},
        {"id": "a_2", "ground_truth": [{"f": {"x": [2]}}]},
    ]
    assert [[q["id"] for q in g] for g in split_records(questions)] == [["a_0", "a_2"], ["a_1"]]
    with pytest.raises(UsageError, match="defines 'f' differently"):
        bfcl_suite_dict(questions, answers, name="t")
    suites = bfcl_suite_dicts(questions, answers, name="t")
    assert [s["suite"] for s in suites] == ["t", "t-2"]
    assert [[c["name"] for c in s["cases"]] for s in suites] == [["a_0", "a_2"], ["a_1"]]


def test_missing_possible_answer_is_a_usage_error() -> None:
    q = {"id": "x_1", "question": [[{"role": "user", "content": "q"}]], "function": [AREA]}
    with pytest.raises(UsageError, match=r"every record was refused.*no possible answer"):
        bfcl_suite_dicts([q], [], name="t")


def test_template_like_text_survives_rendering(tmp_path: Path) -> None:
    fn = {
        "name": "render",
        "description": "Fills {{ name }} placeholders {% like this %}",
        "parameters": {"type": "dict", "properties": {"t": {"type": "string"}}, "required": []},
    }
    text = "Hello {{ user }} {#1}"
    q = {"id": "r_1", "question": [[{"role": "user", "content": f"Render '{text}'"}]]}
    paths = write_suite_yaml(
        [{**q, "function": [fn]}],
        [{"id": "r_1", "ground_truth": [{"render": {"t": [text]}}]}],
        tmp_path / "s.yaml",
        name="t",
    )
    suite = load_suite(paths[0])
    assert suite.tools[0].description == fn["description"]
    case = suite.cases[0]
    assert case.messages[-1].content == f"Render '{text}'"
    assert case.expect.tool_calls[0].args == {"t": text}
    (transcript,) = bfcl_transcripts([{"id": "r_1", "result": [{"render": {"t": text}}]}])
    assert score(suite, [transcript]).results[0].status == "pass"


def test_generated_suites_hold_every_record_once(tmp_path: Path) -> None:
    for file in FILES:
        questions = read_records(DATA / file)
        answers = read_records(DATA / "possible_answer" / file)
        suites = bfcl_suite_dicts(questions, answers, name="x")
        names = [c["name"] for s in suites for c in s["cases"]]
        assert sorted(names) == sorted(q["id"] for q in questions)
        for s in suites:
            tool_names = [t["name"] for t in s["tools"]]
            assert len(tool_names) == len(set(tool_names))


# ------------------------------------------------------------------------ model results


def test_python_call_text_decodes_without_running_anything(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = (
        f"[math.hypot(x=3, y=-4.5, tags=('a', 'b'), opts={{'k': None}}, flag=True), "
        f"g(path=__import__('os').system('touch {marker}'), unit=cm)]"
    )
    calls = decode(text, "prompting")
    assert calls[0] == (
        "math.hypot",
        {"x": 3, "y": -4.5, "tags": ["a", "b"], "opts": {"k": None}, "flag": True},
    )
    name, args = calls[1]
    assert name == "g" and args["unit"] == "cm"  # a bare name is its text, as in BFCL
    assert "__import__" in args["path"] and not marker.exists()


def test_result_forms() -> None:
    assert decode("```\n[f(a=1)]\n```", "prompting") == [("f", {"a": 1})]
    assert decode("f(a='x')", "prompting") == [("f", {"a": "x"})]
    assert decode([{"f": '{"a": 1}'}, {"g": {"b": [1, 2]}}], "fc") == [
        ("f", {"a": 1}),
        ("g", {"b": [1, 2]}),
    ]
    assert decode("[]", "prompting") == []
    # BFCL's prompting decoder reads Python only: a language tag or JSON text is no call.
    for text in ("```python\n[f(a=1)]\n```", '[{"f": {"a": 1}}]'):
        with pytest.raises(DecodeError):
            decode(text, "prompting")


def test_undecodable_output_is_a_transcript_without_calls_that_fails(tmp_path: Path) -> None:
    fn = {"name": "f", "parameters": {"type": "dict", "properties": {"a": {"type": "integer"}}}}
    (path,) = write_suite_yaml(
        [{"id": "s_1", "question": [[{"role": "user", "content": "q"}]], "function": [fn]}],
        [{"id": "s_1", "ground_truth": [{"f": {"a": [1]}}]}],
        tmp_path / "t.yaml",
        name="t",
    )
    results = ["I think you should call f with a=1", "[f(a=1)]", "[f(a=2)]", "[f(a=1, b=2)]"]
    transcripts = [
        replace(t, trial=i)
        for i, t in enumerate(bfcl_transcripts([{"id": "s_1", "result": r} for r in results]))
    ]
    assert transcripts[0].tool_calls == () and "call f" in (transcripts[0].final_answer or "")
    assert [c.name for c in transcripts[1].tool_calls] == ["f"]
    assert transcripts[1].source == "import:bfcl"
    statuses = [r.status for r in score(load_suite(path), transcripts).results]
    assert statuses == ["fail", "pass", "fail", "fail"]


def test_results_file_needs_id_and_result(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"id": "a"}\n', encoding="utf-8")
    with pytest.raises(UsageError, match="'id' and 'result'"):
        bfcl_transcripts(path)
    path.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"r\.json:1:2: record line-1 refused: invalid JSON"):
        bfcl_transcripts(path)


# ------------------------------------------------------------------------ `evalspec import`

STB = DATA.parent / "stabletoolbench"
# 12 of the 163 G1 queries; two of them define demo_project's APIs differently.
G1 = STB / "solvable_queries/test_instruction/G1_instruction.json"


def test_import_bfcl_writes_suites_that_validate_and_score(tmp_path: Path) -> None:
    # A slice of the multiple file: 20 records, plus 2 that redefine a function of those.
    file = "BFCL_v4_multiple.json"
    groups = split_records(read_records(DATA / file))
    chosen = {q["id"] for q in groups[0][:20] + groups[1][:2]}
    for src, dst in (
        (DATA / file, tmp_path / file),
        (DATA / "possible_answer" / file, tmp_path / "a.json"),
    ):
        lines = src.read_text(encoding="utf-8").splitlines()
        dst.write_text(
            "\n".join(x for x in lines if json.loads(x)["id"] in chosen), encoding="utf-8"
        )
    out = tmp_path / "multiple.yaml"
    args = ("bfcl", str(tmp_path / file), str(tmp_path / "a.json"), "--out", str(out))
    res = evalspec_import(*args, "--names", "dotted")
    assert res.exit_code == 0, res.output
    paths = [out, *sorted(p for p in tmp_path.glob("multiple-*.yaml"))]
    assert len(paths) == 2 and "22 cases in 2 suite(s)" in res.output
    suites = [load_suite(p) for p in paths]
    assert sum(len(s.cases) for s in suites) == 22
    assert suites[0].name == "BFCL_v4_multiple" and suites[0].models[0].name == "gpt-4o-mini"

    answers = {a["id"]: a["ground_truth"] for a in read_records(tmp_path / "a.json")}
    results = tmp_path / "results.jsonl"
    lines = []
    for case in suites[0].cases[:3]:
        ((name, params),) = answers[case.name][0].items()
        args = ", ".join(f"{k}={v[0]!r}" for k, v in params.items() if v[0] != "")
        lines.append(json.dumps({"id": case.name, "result": f"[{name}({args})]"}))
    lines.append(json.dumps({"id": suites[0].cases[3].name, "result": "[unknown_tool(a=1)]"}))
    lines.append(json.dumps({"id": "not_in_this_suite", "result": "[]"}))
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    transcripts = tmp_path / "t.jsonl"
    res = evalspec_import("bfcl-results", str(paths[0]), str(results), "--out", str(transcripts))
    assert res.exit_code == 0, res.output
    loaded = load_transcripts(transcripts)
    assert len(loaded) == 4 and {t.model for t in loaded} == {"gpt-4o-mini"}
    statuses = [r.status for r in score(suites[0], loaded).results]
    assert statuses == ["pass", "pass", "pass", "fail"]


def test_import_errors_exit_2_without_traceback(tmp_path: Path) -> None:
    res = evalspec_import(
        "bfcl", str(tmp_path / "none.json"), str(tmp_path / "a.json"), "--out", "x.yaml"
    )
    assert res.exit_code == 2 and "none.json:1:1: file not found" in res.output
    assert "Traceback" not in res.output
    bad = tmp_path / "suite.yaml"
    bad.write_text("suite: x\n", encoding="utf-8")
    res = evalspec_import("bfcl-results", str(bad), str(tmp_path / "r.json"), "--out", "t.jsonl")
    assert res.exit_code == 2 and "suite.yaml:" in res.output
    res = evalspec_import("stabletoolbench", str(tmp_path / "none.json"), "--out", "x.yaml")
    assert res.exit_code == 2 and "none.json:1:1: file not found" in res.output
    assert not (tmp_path / "x.yaml").exists()


def test_import_stabletoolbench_queries_and_answers(tmp_path: Path) -> None:
    example = STB / "solvable_queries_example"
    out = tmp_path / "stb.yaml"
    res = evalspec_import(
        "stabletoolbench",
        str(example / "test_instruction" / "G1_instruction.json"),
        "--ids",
        str(example / "test_query_ids" / "G1_instruction.json"),
        "--out",
        str(out),
        "--name",
        "stb",
    )
    assert res.exit_code == 0, res.output
    suite = load_suite(out)
    assert [c.name for c in suite.cases] == ["588", "608", "1073"]
    assert all(c.evaluators[0].kind == "api_call_score" for c in suite.cases)

    converted = STB / "data_example" / "model_predictions_converted" / "virtual_chatgpt_cot"
    transcripts = tmp_path / "t.jsonl"
    res = evalspec_import(
        "stabletoolbench-answers",
        str(converted / "G1_instruction.json"),
        "--out",
        str(transcripts),
        "--model",
        "gpt-4o-mini",
    )
    assert res.exit_code == 0, res.output
    report = score(suite, load_transcripts(transcripts))
    assert {r.case: r.evaluators["api_call_score"] for r in report.results} == {
        "588": 1.0,
        "608": 1.0,
        "1073": 1.0,
    }


def test_import_stabletoolbench_g1_validates(tmp_path: Path) -> None:
    res = evalspec_import(
        "stabletoolbench",
        str(G1),
        "--out",
        str(tmp_path / "g1.yaml"),
        "--judge",
        "gpt-4o-mini",
    )
    assert res.exit_code == 0, res.output
    suites = [load_suite(p) for p in sorted(tmp_path.glob("g1*.yaml"))]
    assert sum(len(s.cases) for s in suites) == 12
    # Query 55721 defines two demo_project APIs unlike 35112 does: a suite of its own.
    cases = sorted([c.name for c in s.cases] for s in suites)
    assert len(cases) == 2 and ["55721"] in cases
    assert all(c.expect.final_answer[0].kind == "judge" for s in suites for c in s.cases)


def test_each_case_offers_only_its_records_functions(tmp_path: Path) -> None:
    """A live run sends each record's own functions, as BFCL does, not the whole suite's."""
    from evalspec._plan import compile_plan

    questions = read_records(DATA / "BFCL_v4_multiple.json")[:20]
    answers = read_records(DATA / "possible_answer" / "BFCL_v4_multiple.json")[:20]
    [path] = write_suite_yaml(questions, answers, tmp_path / "multiple.yaml", name="multiple")
    plan = compile_plan(load_suite(path))
    for item, record in zip(plan.items, questions, strict=True):
        sent = [t["function"]["name"] for t in item.tools]
        assert sent == [fn["name"] for fn in record["function"]]
    assert len(plan.tools) > max(len(item.tools) for item in plan.items)


def test_import_reports_records_with_undefined_parameters(tmp_path: Path) -> None:
    question = {
        "id": "x_1",
        "question": [[{"role": "user", "content": "q"}]],
        "function": [VOLTAGE],
    }
    truth = {VOLTAGE["name"]: {"electric_field": [5.0], "distance": [2.0], "permeability": [0.1]}}
    (tmp_path / "q.json").write_text(json.dumps(question) + "\n", encoding="utf-8")
    (tmp_path / "a.json").write_text(
        json.dumps({"id": "x_1", "ground_truth": [truth]}) + "\n", encoding="utf-8"
    )
    out = tmp_path / "s.yaml"
    res = evalspec_import(
        "bfcl", str(tmp_path / "q.json"), str(tmp_path / "a.json"), "--out", str(out)
    )
    assert res.exit_code == 0, res.output
    assert f"1 record(s) tagged {INVALID_TAG}" in res.output
    assert load_suite(out).cases[0].tags == ("x", INVALID_TAG)


@pytest.mark.timeout(120)
def test_a_result_the_decoder_chokes_on_costs_that_record_only(tmp_path, monkeypatch):
    """Whatever decoding a result raises (here a decoder fault, forced), that record is refused
    and errored; the file's other results import (it stopped the whole import)."""
    import evalspec._interop.bfcl as bfcl

    simple = FAULTS / "BFCL_v3_simple.json"
    suite = tmp_path / "s.yaml"
    done = evalspec_import(
        "bfcl",
        str(simple),
        str(FAULTS / "possible_answer" / simple.name),
        "--names",
        "dotted",
        "--out",
        str(suite),
    )
    assert done.exit_code == 0, done.output
    decode = bfcl.decode

    def choking(result, kind):
        if result == "boom":
            raise TypeError("the decoder choked")
        return decode(result, kind)

    monkeypatch.setattr(bfcl, "decode", choking)
    results = tmp_path / "r.json"
    rows = [("simple_362", "[get_best_sushi_places(city='Tokyo')]"), ("simple_363", "boom")]
    results.write_text("".join(json.dumps({"id": i, "result": r}) + "\n" for i, r in rows))
    out = tmp_path / "t.jsonl"
    done = evalspec_import("bfcl-results", str(suite), str(results), "--out", str(out))
    assert done.exit_code == 0, done.output
    assert f"{shown(results)}:2:1: record simple_363 refused: a value has the wrong type" in (
        done.output
    )
    made = {t.case: t for t in load_transcripts(out)}
    assert made["simple_363"].finish_reason == "error"
    assert made["simple_362"].tool_calls[0].name == "get_best_sushi_places"
