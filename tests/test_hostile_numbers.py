"""Numbers that are not finite: every number read from a suite or an imported file, and every
one computed from them, is finite or refused where it enters, and nothing evalspec writes holds
NaN or Infinity (JSON has neither; `score`, `view` and every strict reader refuse them).

Each test attacks as a hostile pull request or a hostile file would: a suite's price or weight
past what a float can multiply, review of a pull request that makes a cost ratio overflow, an
OpenTelemetry or StableToolBench file holding NaN, Infinity and 1e400, a recording whose
latency adds up to infinity, and a label derived from a path that comes out empty.

Most tests go through `evalspec` and evalspec.api; the property tests of a cost change's text
(evalspec._compare.text), the numeric critic's range, an imported literal's carrying
(evalspec._util.finite) and the writer's guard (evalspec._report.json_report) import what they
attack: hypothesis draws thousands of values, too many for a run each.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support import ROOT, evalspec_import, examples, git, in_process, refused_suite, suites_repo

SUITES = ROOT / "suites"


def _not_json(text: str) -> Any:
    raise ValueError(f"{text} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} overflows a float")
    return value


def strict(text: str) -> Any:
    """JSON as a strict reader takes it: NaN, Infinity and 1e400 are errors."""
    return json.loads(text, parse_constant=_not_json, parse_float=_finite)


def strict_lines(path: Path) -> list[Any]:
    return [strict(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


# ------------------------------------------------------------------ numbers in a suite

MINI = """\
suite: mini
models:
  - name: m
    model: gpt-4o-mini
    price: {{input: {price}, output: 0.6}}
run: {{timeout: {timeout}, requests_per_minute: {rpm}}}
rubric: {{tool_selection_weight: {selection}}}
tools:
  - name: get_weather
    parameters: {{type: object, properties: {{city: {{type: string}}}}}}
critics:
  city: {{binary: true, weight: {weight}}}
cases:
  - name: weather
    user: Weather in Paris?
    expect:
      tool_calls:
        - get_weather: {{city: Paris}}
"""
SANE = {"price": 0.15, "timeout": 60, "rpm": 60, "selection": 1, "weight": 1}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("price", "1.0e+308", "models[0].price.input: 1e+308 is out of range: it must be from 0"),
        ("price", "1" + "0" * 400, "models[0].price.input: 1" + "0" * 20),
        ("weight", "1.7e+308", "critics.city.weight: 1.7e+308 is out of range"),
        ("selection", "1.7e+308", "rubric.tool_selection_weight: 1.7e+308 is out of range"),
        ("timeout", "1.0e+308", "run.timeout: 1e+308 is out of range"),
        ("rpm", "5.0e-324", "run.requests_per_minute: 4.94066e-324 is out of range"),
    ],
)
def test_a_number_whose_products_overflow_is_refused_by_validate(
    tmp_path: Path, key: str, value: str, message: str
) -> None:
    """A price of 1e308 made every cost infinite and results.json not JSON; now it is a
    file:line:col error naming the key, as any out-of-range number is."""
    out = refused_suite(tmp_path / "mini.yaml", MINI.format(**{**SANE, key: value}))
    assert message in out, out
    assert "mini.yaml:" in out


def test_the_largest_numbers_a_suite_may_hold_validate(tmp_path: Path) -> None:
    path = tmp_path / "mini.yaml"
    path.write_text(
        MINI.format(price=1e6, timeout=86400, rpm=1e6, selection=1e6, weight=1e6),
        encoding="utf-8",
    )
    done = in_process("validate", path)
    assert done.returncode == 0, done.stdout + done.stderr


COMPARED_ONLY = {
    "/$defs/critic/anyOf/1/properties/numeric/anyOf/1/properties/min",
    "/$defs/critic/anyOf/1/properties/numeric/anyOf/1/properties/max",
    "/$defs/critic/anyOf/1/properties/numeric/anyOf/1/properties/tolerance",
    "/$defs/budget/properties/max_cost",
    "/$defs/budget/properties/max_latency_s",
    "/$defs/suite_budget/properties/max_cost",
    "/$defs/suite_budget/properties/max_latency_s",
}
"""Numbers only compared, never multiplied or added up (a numeric critic's min..max is refused
when the suite is built if its width overflows); every other number has a maximum."""


def _numbers(node: Any, pointer: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(node, dict):
        if node.get("type") == "number":
            found.append((pointer, node))
        for key, child in node.items():
            found += _numbers(child, f"{pointer}/{key}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += _numbers(child, f"{pointer}/{i}")
    return found


def test_every_number_of_the_suite_language_is_bounded_or_only_compared() -> None:
    """A new number in the suite schema needs a maximum (or a reason to be left unbounded):
    the class is closed for keys not yet written."""
    schema = json.loads((ROOT / "schemas" / "suite.schema.json").read_text(encoding="utf-8"))
    unbounded = [
        pointer
        for pointer, node in _numbers(schema)
        if "maximum" not in node and "exclusiveMaximum" not in node
    ]
    assert sorted(set(unbounded) - COMPARED_ONLY) == []
    assert set(unbounded) >= COMPARED_ONLY  # the list names real, still unbounded keys


def test_a_numeric_range_wider_than_a_float_is_refused(tmp_path: Path) -> None:
    """max - min overflowed to inf, and every answer scored 1.0 on that range."""
    text = MINI.format(**SANE).replace(
        "city: {binary: true, weight: 1}", "city: {numeric: {min: -1.7e+308, max: 1.7e+308}}"
    )
    out = refused_suite(tmp_path / "mini.yaml", text)
    assert "wider than a number can hold" in out, out


def test_a_parameter_past_the_largest_float_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    text = MINI.format(**SANE).replace(
        "city: {binary: true, weight: 1}", "city: {numeric: {tolerance: 1" + "0" * 400 + "}}"
    )
    out = refused_suite(tmp_path / "mini.yaml", text)
    assert "'tolerance' must be a number" in out, out


# ------------------------------------------------------------------ what review and run write


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The example suites on `main`, `pr` checked out."""
    return suites_repo(tmp_path, SUITES)


MODEL_LINE = "    params: {temperature: 0, seed: 7, parallel_tool_calls: true}\n"


def price(repo: Path, per_million: str) -> None:
    """Give the weather suite's model a price (input and output alike)."""
    path = repo / "suites" / "weather.yaml"
    text = path.read_text(encoding="utf-8")
    assert text.count(MODEL_LINE) == 1
    line = f"    price: {{input: {per_million}, output: {per_million}}}\n"
    path.write_text(text.replace(MODEL_LINE, MODEL_LINE + line), encoding="utf-8")


def review(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`evalspec review --json`, in the checkout, as CI runs it (in this process)."""
    return in_process(
        "review", "--base-ref", "main", "--json", *args, cwd=repo, env={"EVALSPEC_NO_PLUGINS": None}
    )


@pytest.mark.timeout(300)
def test_review_of_a_pull_request_pricing_a_model_at_1e308_is_refused(repo: Path) -> None:
    """It printed `"cost": Infinity` (not JSON) and exited 0; now the price is the error."""
    price(repo, "1.0e+308")
    git(repo, "commit", "-q", "-am", "price")
    done = review(repo, "suites/weather.yaml")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "models[0].price.input: 1e+308 is out of range" in done.stderr
    assert "Infinity" not in done.stdout and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_review_of_a_cost_ratio_past_a_float_shows_no_infinite_percentage(
    repo: Path, tmp_path: Path
) -> None:
    """Base price 1e-303, head price 1,000,000 (both valid): the change of cost is ~1e309
    times the base, which was `+inf%` in the comment."""
    price(repo, "1.0e-303")
    git(repo, "commit", "-q", "-am", "a tiny price")
    git(repo, "branch", "-f", "main")
    text = (repo / "suites" / "weather.yaml").read_text(encoding="utf-8")
    (repo / "suites" / "weather.yaml").write_text(text.replace("1.0e-303", "1000000"))
    git(repo, "commit", "-q", "-am", "the largest price")
    comment = tmp_path / "comment.md"
    done = review(repo, "suites/weather.yaml", "--markdown", str(comment))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    data = strict(done.stdout)
    assert data
    shown = comment.read_text(encoding="utf-8")
    assert "cost 0.0000 →" in shown, shown
    assert "inf" not in shown.lower() and "nan" not in shown.lower()


@pytest.mark.timeout(300)
def test_recorded_latencies_that_add_up_to_infinity_are_refused_where_read(repo: Path) -> None:
    """Each answer's latency 1.7e308: the conversation's sum was inf, written into
    transcripts.jsonl, which `score` then refused."""
    path = repo / "suites" / "weather.recordings.jsonl"
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("{") and '"response"' in line:
            data = json.loads(line)
            data["response"]["latency_s"] = 1.7e308
            line = json.dumps(data)
        lines.append(line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = repo / "run"
    done = in_process("run", repo / "suites" / "weather.yaml", "--record", "offline", "--out", out)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert "latency_s: 1.7e+308 is out of range: it must be at most 1000000.0" in said
    assert not (out / "transcripts.jsonl").exists() or "Infinity" not in (
        out / "transcripts.jsonl"
    ).read_text(encoding="utf-8")


def test_a_non_finite_number_reaching_a_writer_is_an_error_and_no_file(tmp_path: Path) -> None:
    """The guard behind the bounds: results.json with an infinite cost is never written."""
    from dataclasses import replace

    import msgspec

    from evalspec._report.json_report import write_json
    from evalspec._scoring.results_file import ModelSummary
    from evalspec._util.finite import NotFiniteError
    from evalspec.api import compile_plan, load_suite, run_plan, score
    from evalspec.records import RunOptions

    suite = load_suite(SUITES / "weather.yaml")
    outcome = run_plan(compile_plan(suite), RunOptions(record="offline", run_dir=tmp_path / "run"))
    model = msgspec.convert({"model": "m", "cost": math.inf}, ModelSummary)
    report = replace(score(suite, outcome.transcripts), models=(model,))
    path = tmp_path / "results.json"
    with pytest.raises(NotFiniteError, match=r"results\.json: models\[0\]\.cost = inf"):
        write_json(report, path)
    assert not path.exists()


# ------------------------------------------------------------------ imported files

HOSTILE_ATTRIBUTES = {
    "input.value": '{"x": NaN, "y": 1e400}',
    "output.value": '{"v": Infinity, "w": -1e999}',
}


def otel_spans() -> list[dict[str, Any]]:
    return [
        {
            "name": "get",
            "context": {"trace_id": "t1", "span_id": "a"},
            "start_time": 1,
            "attributes": {"tool.name": "get", **HOSTILE_ATTRIBUTES},
        },
        {
            "name": "put",
            "context": {"trace_id": "t1", "span_id": "b"},
            "start_time": int("1" + "0" * 400),  # a start no float holds
            "attributes": {"tool.name": "put", "input.value": '{"x": 1}', "output.value": "1e400"},
        },
    ]


OTEL_SUITE = """\
suite: otel
models: [otel]
tools:
  - name: get
    parameters: {type: object, properties: {x: {type: number}}}
  - name: put
    parameters: {type: object, properties: {x: {type: number}}}
cases:
  - name: c
    user: go
    expect:
      tool_calls:
        - get: {}
        - put: {x: 1}
"""


def test_otel_spans_with_nan_infinity_and_1e400_import_as_transcripts_score_reads(
    tmp_path: Path,
) -> None:
    """The importer wrote NaN and Infinity (parsed from attribute text) into transcripts that
    `score` refused, and a 400-digit start time was a traceback; now they stay text."""
    spans = tmp_path / "spans.json"
    spans.write_text(json.dumps(otel_spans()), encoding="utf-8")
    out = tmp_path / "t.jsonl"
    res = evalspec_import("otel", str(spans), "--case", "c", "--out", str(out))
    assert res.exit_code == 0, res.output
    (line,) = strict_lines(out)
    get, put = line["tool_calls"]
    assert get["arguments"] is None and get["raw_arguments"] == HOSTILE_ATTRIBUTES["input.value"]
    assert get["output"] == HOSTILE_ATTRIBUTES["output.value"]
    assert put["arguments"] == {"x": 1} and put["output"] == "1e400"
    suite = tmp_path / "otel.yaml"
    suite.write_text(OTEL_SUITE, encoding="utf-8")
    done = in_process("score", suite, "-t", out, "--out", tmp_path / "results.json")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    strict((tmp_path / "results.json").read_text(encoding="utf-8"))


def stb_answers() -> dict[str, Any]:
    """A converted answer file whose nodes hold 1e400 (Python literal) and NaN (lenient JSON)."""
    finish = (
        "{'name': 'Finish', 'arguments': "
        '\'{"return_type": "give_answer", "final_answer": "1e400"}\', \'response\': \'\'}'
    )
    nan_node = json.dumps(
        {"name": "get_y", "arguments": '{"b": NaN}', "response": '{"error": "", "response": NaN}'}
    )
    literal = (
        "{'name': 'get_x', 'arguments': '{\"a\": 1e400}', "
        "'response': {'error': '', 'response': {'v': 1e400, 'w': -1e400}}}"
    )
    tree = [
        {
            "role": "system",
            "message": "",
            "next": [
                {
                    "role": "tool",
                    "message": literal,
                    "next": [
                        {
                            "role": "tool",
                            "message": nan_node,
                            "next": [{"role": "tool", "message": finish, "next": []}],
                        }
                    ],
                }
            ],
        }
    ]
    answer = {"method": "x", "final_answer": "1e400", "answer_details": tree}
    return {"1": {"query": "q", "available_tools": [], "answer": answer}}


@pytest.mark.timeout(120)
def test_stabletoolbench_answers_with_1e400_and_nan_import_as_transcripts_score_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file in the current folder, imported with --suite-out: the transcripts hold no NaN
    or Infinity, and the suite's model is the folder's name (it was `models: ['']`)."""
    folder = tmp_path / "virtual_model"
    folder.mkdir()
    (folder / "G1.json").write_text(json.dumps(stb_answers()), encoding="utf-8")
    monkeypatch.chdir(folder)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = evalspec_import(
        "stabletoolbench-answers", "G1.json", "--out", "t.jsonl",
        "--suite-out", "s.yaml", "--judge", "gpt-4o-mini",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    (line,) = strict_lines(folder / "t.jsonl")
    assert line["model"] == "virtual_model"
    get_x, get_y, _finish = line["tool_calls"]
    assert get_x["arguments"] is None and get_x["output"] == {"v": "inf", "w": "-inf"}
    assert get_y["arguments"] is None and "NaN" in get_y["output"]
    suite = (folder / "s.yaml").read_text(encoding="utf-8")
    assert "models: [virtual_model]" in suite, suite
    done = in_process("score", "s.yaml", "-t", "t.jsonl", "--out", "r.json", cwd=folder)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    strict((folder / "r.json").read_text(encoding="utf-8"))


def test_an_empty_model_label_is_refused(tmp_path: Path) -> None:
    spans = tmp_path / "spans.json"
    spans.write_text(json.dumps(otel_spans()[:1]), encoding="utf-8")
    res = evalspec_import("otel", str(spans), "--case", "c", "--model", " ", "--out", "t.jsonl")
    assert res.exit_code == 2 and "--model is empty" in res.output, res.output


# ------------------------------------------------------------------ the computations

EDGES = [1.7e308, 5e-324, -0.0, 0.0, 2.2250738585072014e-308, 1e-303]
FLOATS = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=examples(300), deadline=None)
@given(before=st.floats(0, 1.7e308), after=st.floats(0, 1.7e308))
@example(before=5e-324, after=1.7e308)
@example(before=1.8e-306, after=1000.0)
@example(before=-0.0, after=1.0)
def test_a_cost_change_is_never_shown_as_an_infinite_percentage(before: float, after: float):
    from evalspec._compare.records import Spend
    from evalspec._compare.text import spend_text

    shown = spend_text(Spend(10, before), Spend(20, after))
    assert "inf" not in shown and "nan" not in shown


def largest_price() -> float:
    """The largest price per million tokens the suite schema allows (KeyError: none)."""
    schema = json.loads((ROOT / "schemas" / "suite.schema.json").read_text(encoding="utf-8"))
    price = schema["$defs"]["model"]["anyOf"][1]["properties"]["price"]["properties"]
    return float(min(price["input"]["maximum"], price["output"]["maximum"]))


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data(), tokens=st.tuples(st.integers(0, 10**15), st.integers(0, 10**15)))
@example(data=None, tokens=(10**15, 10**15))
def test_a_cost_from_any_price_the_suite_allows_is_finite(data: Any, tokens: tuple[int, int]):
    """Every price the schema allows (to its maximum, down to 5e-324 and -0.0), times a token
    count a server may report (at most 10**15 per answer), is a finite cost."""
    from evalspec.records import Price

    hi = largest_price()
    prices = (hi, hi) if data is None else data.draw(st.tuples(st.floats(0, hi), st.floats(0, hi)))
    cost = Price(*prices).cost(*tokens)
    assert math.isfinite(cost) and cost >= 0


@settings(max_examples=examples(300), deadline=None)
@given(low=FLOATS, high=FLOATS, expected=FLOATS, actual=FLOATS)
@example(low=-1.7e308, high=1.7e308, expected=-1e308, actual=1e308)
@example(low=-0.0, high=5e-324, expected=5e-324, actual=-0.0)
def test_a_numeric_critic_refuses_its_range_or_scores_it_exactly(
    low: float, high: float, expected: float, actual: float
):
    """Over min..max the score is 1 - |expected - actual| / (max - min), clamped: a range
    whose width overflowed scored 0 where that is 0.41."""
    from fractions import Fraction

    from evalspec._critics.numeric import NumericCritic

    try:
        critic = NumericCritic.from_params({"min": low, "max": high})
    except ValueError:
        assert not low < high or not math.isfinite(high - low)
        return
    apart = abs(Fraction(expected) - Fraction(actual)) / (Fraction(high) - Fraction(low))
    exact = max(Fraction(0), min(Fraction(1), 1 - apart))
    verdict = critic.evaluate(expected, actual, present=True)
    assert verdict.score == pytest.approx(float(exact), abs=1e-9)


LITERALS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None)
@given(LITERALS)
@example({"v": [1.7e308 * 10, -0.0, 5e-324]})
def test_an_imported_literal_is_always_strict_json_once_carried(value: Any):
    from evalspec._util.finite import non_finite_as_text

    strict(json.dumps(non_finite_as_text(value), allow_nan=False))
