"""Shapes real models' BFCL results take, each scored as BFCL scores it.

Each test is one class of difference found by comparing evalspec with BFCL's own checker on
published results of real models (tests/test_differential.py, `tests/data/bfcl_results`):
the verdicts below are BFCL's.

A unit test of BFCL's result decoder (`evalspec._interop.bfcl_decode`, and the results
reader in `evalspec._interop.bfcl`), which it imports: each shape is one decoder rule, checked
on its own against BFCL's verdict; plans are read with `evalspec._plan` where a test pins
which tools an item offers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import evalspec_import, write_suite_yaml

from evalspec._interop.bfcl import bfcl_transcripts
from evalspec._interop.bfcl_decode import DecodeError, decode
from evalspec.api import load_suite, score


def _truth(rid: str, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"id": rid, "ground_truth": [{name: args} for name, args in calls]}]


AREA_TRUTH = {"function": ["x**2"], "interval": [[1.0, 3.0]], "height": [""]}

AREA = {
    "name": "calculate_area_under_curve",
    "description": "Area under a curve.",
    "parameters": {
        "type": "dict",
        "properties": {
            "function": {"type": "string"},
            "interval": {"type": "array", "items": {"type": "float"}},
            "height": {"type": "integer"},
        },
        "required": ["function", "interval"],
    },
}
FACTORIAL = {
    "name": "math.factorial",
    "description": "n!",
    "parameters": {
        "type": "dict",
        "properties": {"number": {"type": "integer"}},
        "required": ["number"],
    },
}


def _record(rid: str, *functions: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": rid,
        "question": [[{"role": "user", "content": "q"}]],
        "function": list(functions),
    }


def _verdicts(
    tmp_path: Path,
    records: list[dict[str, Any]],
    answers: list[dict[str, Any]] | None,
    results: list[Any],
    *,
    names: str = "dotted",
    kind: str | None = None,
) -> list[str]:
    """Import the records, then score each result against the first record."""
    (path,) = write_suite_yaml(records, answers, tmp_path / "s.yaml", name="s", names=names)
    suite = load_suite(path)
    transcripts = bfcl_transcripts(
        [{"id": records[0]["id"], "result": r} for r in results], model="m", kind=kind
    )
    from msgspec.structs import replace

    transcripts = [replace(t, trial=i) for i, t in enumerate(transcripts)]
    return [r.status for r in score(suite, transcripts).results]


def test_integers_in_a_float_array_fail_as_in_bfcl(tmp_path: Path) -> None:
    """`interval=[1, 3]` for an array of float: BFCL's nested type check rejects it (unlike a
    top-level float, where 1 is accepted), unless the listed answer's items are integers."""
    truth = _truth("a_1", (AREA["name"], dict(AREA_TRUTH)))
    results = [
        "[calculate_area_under_curve(function='x**2', interval=[1.0, 3.0])]",
        "[calculate_area_under_curve(function='x**2', interval=[1, 3])]",
        "[calculate_area_under_curve(function='x**2', interval=[1, 3.0])]",
    ]
    assert _verdicts(tmp_path, [_record("a_1", AREA)], truth, results) == ["pass", "fail", "fail"]
    truth[0]["ground_truth"][0][AREA["name"]]["interval"] = [[1, 3]]
    assert _verdicts(tmp_path, [_record("a_1", AREA)], truth, results[1:2]) == ["pass"]


def test_calls_without_brackets_are_a_call_list(tmp_path: Path) -> None:
    """BFCL's prompting decoder adds the brackets a model left out."""
    assert decode("f(a=1),\ng(b=2)", "prompting") == [("f", {"a": 1}), ("g", {"b": 2})]
    assert decode("```\nf(a=1), g(b='x')\n```", "prompting") == [("f", {"a": 1}), ("g", {"b": "x"})]
    truth = _truth("p_1", ("math.factorial", {"number": [5]}), ("math.factorial", {"number": [7]}))
    results = ["math.factorial(number=5),\nmath.factorial(number=7)"]
    assert _verdicts(tmp_path, [_record("p_1", FACTORIAL)], truth, results) == ["pass"]


@pytest.mark.parametrize(
    ("names", "verdicts"),
    [
        # A prompting model sees `math.factorial` and must write it so, case included.
        ("dotted", ["pass", "fail", "fail"]),
        # OpenAI/Anthropic/Mistral/Google function calling see `math_factorial`.
        ("underscored", ["fail", "fail", "pass"]),
    ],
)
def test_tool_names_follow_bfcls_rule_for_the_kind_of_model(
    tmp_path: Path, names: str, verdicts: list[str]
) -> None:
    truth = [{"id": "s_1", "ground_truth": [{"math.factorial": {"number": [5]}}]}]
    results = [f"[{n}(number=5)]" for n in ("math.factorial", "Math.factorial", "math_factorial")]
    assert _verdicts(tmp_path, [_record("s_1", FACTORIAL)], truth, results, names=names) == verdicts


def test_import_asks_which_name_rule_when_a_name_has_a_dot(tmp_path: Path) -> None:
    (tmp_path / "q.json").write_text(json.dumps(_record("s_1", FACTORIAL)) + "\n", "utf-8")
    answer = {"id": "s_1", "ground_truth": [{"math.factorial": {"number": [5]}}]}
    (tmp_path / "a.json").write_text(json.dumps(answer) + "\n", "utf-8")
    out = tmp_path / "s.yaml"
    args = ["bfcl", str(tmp_path / "q.json"), str(tmp_path / "a.json"), "--out", str(out)]
    res = evalspec_import(*args)
    assert res.exit_code == 2 and "--names dotted" in res.output and "math.factorial" in res.output
    assert "Traceback" not in res.output and not out.exists()
    res = evalspec_import(*args, "--names", "underscored")
    assert res.exit_code == 0, res.output
    assert [t.name for t in load_suite(out).tools] == ["math_factorial"]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("height=5*12+11", 71),
        ("height=-3", -3),
        ("height=+3", 3),
        ("height=2**10", 1024),
        ("height=7//2", 3),
        ("height=10/4", 2.5),
        ("height='ab'+'c'", "abc"),
        ("c=3 * 10^8", 22),  # a real answer (Raven v2): `^` is Python's xor, as BFCL evals it
        ("m=6 & 3 | 8", 10),
        ("s=1 << 10 >> 2", 256),
    ],
)
def test_constant_arithmetic_is_computed_without_eval(text: str, value: Any) -> None:
    """BFCL `eval`s arithmetic in an argument; here the tree is walked, constants only."""
    assert decode(f"[f({text})]", "prompting") == [("f", {text.split("=")[0]: value})]


@pytest.mark.parametrize(
    "text",
    [
        "[f(g=lambda x: x**2)]",  # BFCL's decoder fails on a lambda
        "[f(g=x**2)]",  # a name inside arithmetic: BFCL's eval raises NameError
        "[f(u=Units.METRIC)]",  # an attribute is no value BFCL reads
        "[f(a=[i for i in range(3)])]",
        "[f(a=1/0)]",
        "[f(a=__import__('os').getcwd() + 'x')]",  # never run
        "[f(a=9**9**9)]",  # refused, not computed
        "[f(a='x'*10**9)]",
        "[f(a=(1 << 100000))]",
        "[f(a=1 << -1)]",  # Python's ValueError: no call in BFCL too
        "[f(a=1.5 ^ 2)]",
        "[f(a='x' | 'y')]",
    ],
)
def test_arguments_bfcl_cannot_read_make_the_output_undecodable(text: str) -> None:
    with pytest.raises(DecodeError):
        decode(text, "prompting")


def test_an_undecodable_argument_is_no_call_and_fails_or_passes_like_bfcl(tmp_path: Path) -> None:
    truth = _truth("a_1", (AREA["name"], dict(AREA_TRUTH)))
    result = "[calculate_area_under_curve(function=lambda x: x**2, interval=[1.0, 3.0])]"
    assert _verdicts(tmp_path, [_record("a_1", AREA)], truth, [result]) == ["fail"]
    # An irrelevance record (no possible answers): undecodable output is no call, a pass.
    assert _verdicts(tmp_path / "i", [_record("i_1", AREA)], None, [result]) == ["pass"]


def test_records_offering_no_function_import_and_expect_no_call(tmp_path: Path) -> None:
    records = [_record("live_irrelevance_1"), _record("live_irrelevance_2", FACTORIAL)]
    (path,) = write_suite_yaml(records, None, tmp_path / "s.yaml", name="s")
    suite = load_suite(path)
    assert suite.cases[0].tools == () and suite.cases[0].expect.no_tool_calls
    results = ["I cannot help with that.", "[math.factorial(number=5)]"]
    transcripts = bfcl_transcripts(
        [{"id": "live_irrelevance_1", "result": r} for r in results], model="m"
    )
    from msgspec.structs import replace

    transcripts = [replace(t, trial=i) for i, t in enumerate(transcripts)]
    assert [r.status for r in score(suite, transcripts).results] == ["pass", "fail"]


def test_a_call_to_a_function_the_record_does_not_offer_is_scored_invalid(tmp_path: Path) -> None:
    truth = [{"id": "s_1", "ground_truth": [{"math.factorial": {"number": [5]}}]}]
    results = ["[math.gamma(number=5)]", "[math.factorial(number=5), math.gamma(x=1)]"]
    assert _verdicts(tmp_path, [_record("s_1", FACTORIAL)], truth, results) == ["fail", "fail"]


def test_function_calling_results_are_decoded_by_bfcls_fc_rule(tmp_path: Path) -> None:
    """A function-calling model's text is no call, even when it reads like call text."""
    truth = [{"id": "s_1", "ground_truth": [{"math.factorial": {"number": [5]}}]}]
    results = [[{"math_factorial": '{"number": 5}'}], "[math_factorial(number=5)]"]
    verdicts = _verdicts(tmp_path, [_record("s_1", FACTORIAL)], truth, results, names="underscored")
    assert verdicts == ["pass", "fail"]
    for bad in ("[f(a=1)]", [{"f": "[1, 2]"}], [{"f": "{not json"}], [{}], {"f": "{}"}):
        with pytest.raises(DecodeError):
            decode(bad, "fc")


def test_a_case_offering_no_tool_sends_none(tmp_path: Path) -> None:
    """`tools: []` is not "every tool of the suite": a live run offers the model nothing."""
    from evalspec._plan import compile_plan

    records = [_record("live_irrelevance_1"), _record("live_irrelevance_2", FACTORIAL)]
    (path,) = write_suite_yaml(records, None, tmp_path / "s.yaml", name="s")
    first, second = compile_plan(load_suite(path)).items
    assert first.tools == ()
    assert [t["function"]["name"] for t in second.tools] == ["math.factorial"]


def test_names_equal_once_dots_are_underscores_go_to_separate_suites(tmp_path: Path) -> None:
    dotted = {**FACTORIAL, "name": "car.rental"}
    plain = {**FACTORIAL, "name": "car_rental", "description": "another"}
    records = [_record("m_1", dotted), _record("m_2", plain)]
    assert len(write_suite_yaml(records, None, tmp_path / "d.yaml", name="d")) == 1
    paths = write_suite_yaml(records, None, tmp_path / "u.yaml", name="u", names="underscored")
    assert [[t.name for t in load_suite(p).tools] for p in paths] == [["car_rental"]] * 2


def test_an_empty_list_counts_as_leaving_out_an_array_argument(tmp_path: Path) -> None:
    """BFCL reads a "" answer as an empty list, so `deck=[]` passes where only leaving `deck`
    out is listed (Llama-3-70B on simple_python_335); text in its place is still wrong."""
    deck = {"type": "array", "items": {"type": "string"}}
    properties = {"number": {"type": "integer"}, "deck": deck}
    params = {**FACTORIAL["parameters"], "properties": properties}
    fn = {**FACTORIAL, "parameters": params}
    truth = _truth("s_1", ("math.factorial", {"number": [5], "deck": [""]}))
    results = ["[math.factorial(number=5, deck=[])]", "[math.factorial(number=5, deck=['x'])]"]
    assert _verdicts(tmp_path, [_record("s_1", fn)], truth, results) == ["pass", "fail"]


def test_json_call_text_is_read_never_run_and_bounded() -> None:
    """Models that write calls as JSON text (`json`: xLAM's handlers, `llama`: Llama 3.1's)."""
    from evalspec._interop.bfcl_decode import MAX_TEXT, text_kind

    hostile = '{"name": "__import__(\'os\').system(\'x\')", "arguments": {"q": "\\u202e\\u00e9"}}'
    assert decode(hostile, "json") == [("__import__('os').system('x')", {"q": "\u202e\u00e9"})]
    assert decode('{"name": "a", "parameters": {"n": 2 ** 10}}', "llama") == [("a", {"n": 1024})]
    deep_json, deep_python = "[" * 5000 + "]" * 5000, "{'x': " * 3000 + "1" + "}" * 3000
    for text, kind in [
        ("{\"name\": __import__('os').system('x'), \"parameters\": {}}", "llama"),
        ('{"name": "a", "parameters": {"n": 9 ** 9 ** 9}}', "llama"),
        ('{"name": "a", "parameters": {"s": "x" * 10 ** 9}}', "llama"),
        ('{"name": "a", "parameters": {"k": {1, 2}}}', "llama"),
        (deep_json, "json"),
        (deep_python, "llama"),
        ('{"name": "a", "arguments": ' + '{"x": ' * 200 + "1" + "}" * 201, "json"),
        ('{"name": "a", "arguments": {"x": "' + "y" * MAX_TEXT + '"}}', "json"),
        ('{"name": "a", "arguments": {"x": NaN}}', "json"),
    ]:
        with pytest.raises(DecodeError):
            decode(text, kind)  # type: ignore[arg-type]
    # The kind a file's text asks for: the key its JSON call objects use, else call text.
    assert text_kind(["ok", '[{"name": "f", "arguments": {}}]']) == "json"
    assert text_kind(['<|python_tag|>{"name": "f", "parameters": {"a": 1}}']) == "llama"
    assert text_kind(["[f(a=1)]", '{"name": "f"}', "[1, 2]", deep_json]) == "prompting"
    # A prompting model that once answered in JSON is still read as a prompting model.
    once = ["[f(a=1)]", "g(b='x')", '[{"name": "f", "arguments": {"a": 1}}]']
    assert text_kind(once) == "prompting"


@pytest.mark.timeout(20)
def test_tagged_call_text_is_read_never_run_and_bounded() -> None:
    """Models whose calls sit between markers (`qwen_fc`: `<tool_call>` blocks, `granite`:
    `<function_call>` pieces, `glm`: a name over a line of JSON, `nexus`: `;` between calls).
    BFCL's Qwen handler finds its blocks with a lazy regex, quadratic in unclosed tags (8,000
    take 12 s, so the 80,000 below some 20 minutes); here one search forward. An output no
    reader takes is no call."""
    from evalspec._interop.bfcl_decode import MAX_TEXT, text_kind

    block = '<tool_call>\n{"name": "%s", "arguments": {"q": "\\u202e\\u00e9"}}\n</tool_call>'
    hostile = block % "__import__('os').system('x')"
    assert decode(hostile, "qwen_fc") == [("__import__('os').system('x')", {"q": "\u202e\u00e9"})]
    assert decode("<tool_call>\n" * 80_000, "qwen_fc") == []
    assert decode("<function_call>" * 60_000, "granite") == []
    deep = "[" * 5000 + "]" * 5000  # beyond Python's own reader: BFCL skips the block too
    assert decode(f"<tool_call>\n{deep}\n</tool_call>", "qwen_fc") == []
    nested = '{"name": "a", "arguments": ' + '{"x": ' * 200 + "1" + "}" * 201
    for text, kind in [
        (f"<tool_call>\n{nested}\n</tool_call>", "qwen_fc"),
        ('<tool_call>\n{"name": "a", "arguments": {"x": NaN}}\n</tool_call>', "qwen_fc"),
        ('<tool_call>\n{"name": "a", "arguments": {"x": 1e999}}\n</tool_call>', "qwen_fc"),
        (block % ("y" * MAX_TEXT), "qwen_fc"),
        (f"<function_call> {nested}", "granite"),
        ('<function_call> {"name": "a", "arguments": {"x": Infinity}}', "granite"),
        ('<function_call> {"name": "no_function", "arguments": {}}', "granite"),
        ("f\n" + deep, "glm"),
        ("f\n" + "x" * (MAX_TEXT + 1), "glm"),
        (";" * (MAX_TEXT - 1), "nexus"),
        ("f(a=" + "[" * 50_000 + "]" * 50_000 + ");", "nexus"),
        ("f(a=1); out_of_domain(q='x');", "nexus"),
    ]:
        with pytest.raises(DecodeError):
            decode(text, kind)  # type: ignore[arg-type]
    # A multi-turn step's arguments may be JSON text (BFCL's `decode_execute` reads them), held
    # to the same bounds.
    as_text = '<tool_call>\n{"name": "f", "arguments": "%s"}\n</tool_call>'
    assert decode(as_text % '{\\"x\\": 1}', "qwen_fc", multi_turn=True) == [("f", {"x": 1})]
    for arguments in ['{\\"x\\": NaN}', "[1]", "x=1", "[" * 5000]:
        with pytest.raises(DecodeError):
            decode(as_text % arguments, "qwen_fc", multi_turn=True)
    with pytest.raises(DecodeError):  # an AST answer's arguments must be an object
        decode(as_text % '{\\"x\\": 1}', "qwen_fc")
    # Hermes 2 Pro writes Python-quoted JSON, which BFCL's Hermes handler read by turning
    # every `'` into `"`: a name with an apostrophe then breaks the whole answer, there as here.
    quoted = "<tool_call>\n{'arguments': {'a': 20}, 'name': 'f'}\n</tool_call>"
    assert decode(quoted, "hermes") == [("f", {"a": 20})]
    assert decode(quoted, "qwen_fc") == []  # the Qwen FC handler skips the block
    apostrophe = '<tool_call>\n{"arguments": {"who": "O\'Brien"}, "name": "f"}\n</tool_call>'
    with pytest.raises(DecodeError):
        decode(apostrophe, "hermes")
    with pytest.raises(DecodeError):
        decode(f"<tool_call>\n{nested}\n</tool_call>", "hermes")
    with pytest.raises(DecodeError):  # its last line, empty, is no JSON: BFCL's error too
        decode("<tool_call>\n" * 80_000, "hermes")
    assert decode("<tool_call>\n</tool_call>\n" * 40_000, "hermes") == []
    # The kind a file's text asks for: its handler's markers.
    assert text_kind(["I cannot.", block % "f", block % "g"]) == "qwen_fc"
    assert text_kind([quoted, block % "g", quoted]) == "hermes"
    assert text_kind(['<function_call> {"name": "f", "arguments": {}}', "no"]) == "granite"
    assert text_kind(['spotify_play\n{"artist": "A"}', 'f\n{"a": 1}', "text"]) == "glm"
    assert text_kind(["f(a=1); g(b='x');", "h(c=[1]);", "f(a=2)"]) == "nexus"
    # Raven's answers to irrelevance records: mostly `out_of_domain(...);`, no call, but its kind.
    no_call = ["out_of_domain(user_query='a');", "out_of_domain(user_query='b');", "f(a=1)"]
    assert text_kind(no_call) == "nexus"
    assert text_kind(["[f(a=1)]", "Sure.\nHere it is.", "[g(b=2)]"]) == "prompting"
    assert decode("f(a=1); g(b='x; y');" * 2_000, "nexus")[-1] == ("g", {"b": "x, y"})
    code = "__import__('os').system('x')"  # a call without keywords is its text, as in BFCL
    assert decode(f"f(a={code});", "nexus") == [("f", {"a": code})]


def test_a_hostile_tagged_answer_is_no_call_for_its_record_only(tmp_path: Path) -> None:
    """`import bfcl-results` of a Qwen-style file: the record whose answer cannot be read fails
    alone (no call, as BFCL scores it); the other record's calls are imported and pass."""
    records = [_record("s_1", FACTORIAL), _record("s_2", FACTORIAL)]
    truth = _truth("s_1", ("math.factorial", {"number": [5]})) + _truth(
        "s_2", ("math.factorial", {"number": [5]})
    )
    (tmp_path / "q.json").write_text("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "a.json").write_text("".join(json.dumps(r) + "\n" for r in truth))
    good = '<tool_call>\n{"name": "math.factorial", "arguments": {"number": 5}}\n</tool_call>'
    bad = '<tool_call>\n{"name": "math.factorial", "arguments": {"number": NaN}}\n</tool_call>'
    results = tmp_path / "r.json"
    results.write_text(
        json.dumps({"id": "s_1", "result": good}) + "\n" + json.dumps({"id": "s_2", "result": bad})
    )
    suite = tmp_path / "s.yaml"
    made = evalspec_import(
        "bfcl",
        str(tmp_path / "q.json"),
        str(tmp_path / "a.json"),
        "--names",
        "dotted",
        "--out",
        str(suite),
    )
    assert made.exit_code == 0, made.output
    out = tmp_path / "t.jsonl"
    done = evalspec_import("bfcl-results", str(suite), str(results), "--out", str(out))
    assert done.exit_code == 0, done.output
    transcripts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [len(t.get("tool_calls") or ()) for t in transcripts] == [1, 0]
    statuses = {
        r.case: r.status
        for r in score(load_suite(suite), bfcl_transcripts(results, model="m")).results
    }
    assert statuses == {"s_1": "pass", "s_2": "fail"}


def test_a_call_without_a_name_fails_and_is_named_so(tmp_path: Path) -> None:
    """Granite's handler calls a piece without a name `""` (BFCL: a call, so an irrelevance
    record fails); the reason must not say the model made no call."""
    record = _record("irrelevance_1", FACTORIAL)
    (path,) = write_suite_yaml([record], None, tmp_path / "s.yaml", name="s", names="dotted")
    answer = '<function_call> {"arguments": {"number": 5}}'
    transcripts = bfcl_transcripts([{"id": "irrelevance_1", "result": answer}], kind="granite")
    (result,) = score(load_suite(path), transcripts).results
    assert result.status == "fail"
    assert result.reason == 'expected no tool call, the model called ""'


def test_a_published_files_kind_is_guessed_as_its_bfcl_handler_reads_it() -> None:
    """`import bfcl-results` without `--kind`, on each shipped file of real results: the calls
    are those its model's BFCL handler reads (a file whose answers have no marker at all, such
    as answers to irrelevance records in prose, may be guessed otherwise: no call either way)."""
    root = Path(__file__).parent / "data" / "bfcl_results"
    models = json.loads((root / "models.json").read_text(encoding="utf-8"))
    checked = 0
    for model, info in sorted(models.items()):
        for path in sorted((root / model).glob("BFCL_v4_*_result.json")):
            guessed = bfcl_transcripts(path, model=model)
            given = bfcl_transcripts(path, model=model, kind=info["kind"])
            calls = [[(c.name, c.arguments) for c in t.tool_calls] for t in guessed]
            assert calls == [[(c.name, c.arguments) for c in t.tool_calls] for t in given], path
            checked += len(given)
    assert checked > 600
