"""A large suite is built one case at a time, and the result is exactly the whole-document one.

The stream is a fast path: whatever it cannot vouch for (a problem, a key after `cases:`) goes
to the whole-document path, so errors keep their words and positions.

A unit test of the streaming loader (`evalspec._suite.stream`) against the
whole-document builder (`evalspec._suite.validate`), which it imports: that the two paths build
the same suite, and which one a file takes, is invisible through `load_suite` by design.
"""

from __future__ import annotations

import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support import examples, fuzz_settings

from evalspec._suite import schema, stream
from evalspec._suite.stream import load_streaming
from evalspec._suite.validate import _Builder
from evalspec.api import load_suite
from evalspec.errors import SpecError
from evalspec.records import Suite

SUITES = Path(__file__).resolve().parent.parent / "suites"


def _whole(path: Path, monkeypatch: pytest.MonkeyPatch) -> Suite:
    with monkeypatch.context() as m:
        m.setattr(stream, "STREAM_MIN_CHARS", 10**12)
        return load_suite(path)


def _streamed(path: Path) -> Suite | None:
    loaded = load_streaming(path, path.read_text(encoding="utf-8"), _Builder)
    return None if loaded is None else loaded[0]


def _grown(source: Path, out: Path) -> Path:
    """The suite with its cases repeated under new names until it is large enough to stream."""
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    original, copies = data["cases"], 1
    while True:
        data["cases"] = [
            {**case, "name": f"{case['name']} #{k}"} for k in range(copies) for case in original
        ]
        large = len(yaml.safe_dump(data, sort_keys=False, width=120)) > stream.STREAM_MIN_CHARS
        if large and len(data["cases"]) >= stream.FAST_CHECK_MIN_CASES:
            break
        copies *= 2
    out.write_text(yaml.safe_dump(data, sort_keys=False, width=120), encoding="utf-8")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["slack", "weather", "calc", "math"])
def test_every_example_suite_grown_large_streams_to_the_same_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    here = tmp_path / "suites"
    shutil.copytree(SUITES, here)  # includes, lock files and caches stay beside the suite
    path = _grown(here / f"{name}.yaml", here / f"{name}-large.yaml")
    lock = here / f"{name}.tools.lock.json"  # MCP tool definitions, named after the suite
    if lock.exists():
        shutil.copy(lock, here / f"{name}-large.tools.lock.json")
    streamed = _streamed(path)
    assert streamed is not None, "the stream gave up on a valid suite"
    assert streamed == _whole(path, monkeypatch)
    assert streamed == load_suite(path)
    assert len(streamed.cases) >= stream.FAST_CHECK_MIN_CASES


def _generated(cases: int, *, head_after: str = "", bad_case: int = -1) -> str:
    lines = [
        "suite: generated",
        "vars: {greeting: Hello}",
        "system: '{{ greeting }}, you have tools.'",
        "models: [{name: m, model: x}]",
        "rubric: {fail_threshold: 0.5}",
        "critics: {id: binary, note: similarity}",
        "tools:",
        "  - {name: t, description: d, parameters: {type: object, "
        "properties: {id: {type: string}, note: {type: string}, n: {type: integer}}}}",
        "cases:",
    ]
    for i in range(cases):
        args = f"id: r{i}, note: 'n {i}', n: {i}"
        if i == bad_case:
            args = f"id: r{i}, n: 'not a number'"
        expect = "{tool_calls: [{t: {" + args + "}}]}"
        if i % 7 == 0:
            lines.append(
                f"  - {{name: 'c{i} {{{{ city }}}}', user: 'weather in {{{{ city }}}}', "
                f"matrix: [{{city: Paris}}, {{city: Rome}}], expect: {expect}}}"
            )
        elif i % 5 == 0:
            lines.append(
                f"  - {{name: c{i}, user: q{i}, rubric: {{warn_threshold: 0.95}}, "
                f"critics: {{note: {{similarity: {{threshold: 0.6}}}}}}, tags: [t{i % 3}], "
                f"expect: {expect}}}"
            )
        else:
            lines.append(f"  - {{name: c{i}, user: 'q {i}', expect: {expect}}}")
    return "\n".join(lines) + "\n" + head_after


@pytest.mark.slow
def test_a_generated_suite_with_matrices_templates_and_case_settings_streams_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "gen.yaml"
    path.write_text(_generated(3000), encoding="utf-8")
    streamed = _streamed(path)
    assert streamed is not None
    assert streamed == _whole(path, monkeypatch)
    by_name = {c.name: c for c in streamed.cases}
    assert by_name["c0 Rome"].messages[0].content == "Hello, you have tools."
    # A case's partial rubric keeps the suite's fail_threshold (the schema's default must not
    # be written into it by the compiled check).
    assert by_name["c5"].rubric.fail_threshold == 0.5
    assert by_name["c5"].rubric.warn_threshold == 0.95


@pytest.mark.slow
def test_keys_after_the_cases_are_seen_by_every_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "late.yaml"
    path.write_text(_generated(3000, head_after="trials: 3\n"), encoding="utf-8")
    assert _streamed(path) is None  # the stream cannot build cases before it knows `trials`
    suite = load_suite(path)
    assert {c.trials for c in suite.cases} == {3}
    assert suite == _whole(path, monkeypatch)


@pytest.mark.parametrize(
    ("cases", "small"),
    [(300, True), pytest.param(3000, False, marks=pytest.mark.slow)],
    ids=["300 cases, streamed as if large", "3000 cases, large enough to be streamed"],
)
def test_a_mistake_deep_in_a_large_suite_is_reported_as_the_whole_document_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cases: int, small: bool
) -> None:
    if small:  # streamed and checked fast however small: the default lane's seconds saved
        monkeypatch.setattr(stream, "STREAM_MIN_CHARS", 0)
        monkeypatch.setattr(stream, "FAST_CHECK_MIN_CASES", 0)
    bad = cases * 2 // 3
    path = tmp_path / "bad.yaml"
    path.write_text(_generated(cases, bad_case=bad), encoding="utf-8")
    with pytest.raises(SpecError) as streamed:
        load_suite(path)
    with pytest.raises(SpecError) as whole:
        _whole(path, monkeypatch)
    assert str(streamed.value) == str(whole.value)
    first = streamed.value.problems[0]
    assert first.line == 10 + bad and "cases[" in first.path and "n" in first.path
    assert "not a number" in first.message


@pytest.mark.slow
def test_streaming_holds_far_less_memory_than_the_whole_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "gen.yaml"
    path.write_text(_generated(1000), encoding="utf-8")
    monkeypatch.setattr(stream, "STREAM_MIN_CHARS", 0)
    monkeypatch.setattr(stream, "FAST_CHECK_MIN_CASES", 0)

    def peak(load: Any) -> int:
        tracemalloc.start()
        try:
            load()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    load_suite(path)  # imports and compiled checks are made once, outside the measurement
    streamed = peak(lambda: load_suite(path))
    whole = peak(lambda: _whole(path, monkeypatch))
    assert streamed < whole * 0.6, (streamed, whole)


@pytest.mark.slow
def test_validate_counts_the_cases_of_a_large_suite_without_keeping_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalspec.api import check_suite

    path = tmp_path / "gen.yaml"
    path.write_text(_generated(3000), encoding="utf-8")
    assert _streamed(path) is not None
    expanded = 3000 + len(range(0, 3000, 7))  # every seventh case is a two-row matrix
    assert check_suite(path) == len(load_suite(path).cases) == expanded
    monkeypatch.setattr(stream, "STREAM_MIN_CHARS", 10**12)
    assert check_suite(path) == expanded  # the whole-document path counts the same
    bad = tmp_path / "bad.yaml"
    bad.write_text(_generated(3000, bad_case=2999), encoding="utf-8")
    with pytest.raises(SpecError, match="not a number"):
        check_suite(bad)


def test_an_alias_bomb_spread_over_many_cases_is_refused_while_streaming(tmp_path: Path) -> None:
    """Each case alone stays under the expansion bound; together they are refused, as the
    whole-document path refuses them, before anything is built from them."""
    lines = [
        "suite: bomb",
        "models: [{name: m, model: x}]",
        "tools: [{name: t, parameters: {type: object, properties: {id: {type: string}}}}]",
        "cases:",
    ]
    pad = "padding " * 8
    big = "[" + ", ".join(["x"] * 5000) + "]"
    lines.append(f"  - {{name: c0, user: q, tags: &a {big}, expect: {{no_tool_calls: true}}}}")
    lines += [
        f"  - {{name: c{i}, user: q, description: {pad}, tags: *a, "
        "expect: {no_tool_calls: true}}"
        for i in range(1, 4000)
    ]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert path.stat().st_size > stream.STREAM_MIN_CHARS
    with pytest.raises(SpecError) as info:
        load_suite(path)
    problem = info.value.problems[0]
    assert (problem.line, problem.column) == (5, 3)
    assert "expands to more than 200000 values" in problem.message


@pytest.mark.slow
def test_included_case_files_with_and_without_templates_stream_identically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = _generated(0).replace("cases:\n", "")
    (tmp_path / "suite.yaml").write_text(
        head + "cases:\n  - include: plain.yaml\n  - include: templated.yaml\n", encoding="utf-8"
    )
    call = "expect: {tool_calls: [{t: {id: r, note: n}}]}"
    (tmp_path / "plain.yaml").write_text(
        "".join(f"- {{name: p{i}, user: 'q {i}', {call}}}\n" for i in range(1500)),
        encoding="utf-8",
    )
    # The only template of this file is written with escapes: its text shows no `{{`.
    (tmp_path / "templated.yaml").write_text(
        "".join(
            f'- {{name: t{i}, user: "\\x7b\\x7b greeting }}}} {i}", {call}}}\n' for i in range(1500)
        ),
        encoding="utf-8",
    )
    streamed = _streamed(tmp_path / "suite.yaml")
    assert streamed is not None, "the stream gave up on a valid suite"
    with monkeypatch.context() as m:
        m.setattr("evalspec._suite.validate.load_streaming", lambda *args: None)
        whole = load_suite(tmp_path / "suite.yaml")
    assert streamed == whole
    users = {c.name: c.messages[-1].content for c in streamed.cases}
    assert users["p7"] == "q 7"
    assert users["t7"] == "Hello 7"


def _included_suite(
    folder: Path, cases: int, bad_case: int = -1, under_cases: bool = False
) -> Path:
    """A suite whose cases are in an included file, whose last item includes the rest of them
    from a file in a subfolder (nested includes resolve from there), written as a list or
    `under_cases:`."""
    body = []
    for i in range(cases):
        args = f"id: r{i}, note: 'n {i}', n: {'not a number' if i == bad_case else i}"
        body.append(f"- {{name: c{i}, user: 'q {i}', expect: {{tool_calls: [{{t: {{{args}}}}}]}}}}")
    half = cases // 2
    (folder / "sub").mkdir()
    (folder / "part.yaml").write_text(
        "".join(line + "\n" for line in body[:half]) + "- include: sub/rest.yaml\n",
        encoding="utf-8",
    )
    indent = "  " if under_cases else ""
    (folder / "sub" / "rest.yaml").write_text(
        ("cases:\n" if under_cases else "") + "".join(f"{indent}{line}\n" for line in body[half:]),
        encoding="utf-8",
    )
    suite = folder / "suite.yaml"
    head = [
        "suite: included",
        "models: [{name: m, model: x}]",
        "critics: {id: binary}",
        "tools:",
        "  - {name: t, description: d, parameters: {type: object, "
        "properties: {id: {type: string}, note: {type: string}, n: {type: integer}}}}",
        "cases:",
        "  - include: part.yaml",
    ]
    suite.write_text("\n".join(head) + "\n", encoding="utf-8")
    return suite


@pytest.mark.slow
def test_included_case_files_stream_a_batch_at_a_time(tmp_path: Path) -> None:
    """An included file of cases is parsed and built a few hundred cases at a time, as the
    suite's own `cases:` are: its whole tree is never in memory (50,000 cases over files of
    10,000 held a 10,000-case tree at a time). (The same suite as the whole document builds:
    test_included_case_files_with_and_without_templates_stream_identically.)"""
    path = _included_suite(tmp_path, 4000)
    load_suite(path)  # imports and compiled checks are made once, outside the measurement
    tracemalloc.start()
    try:
        suite = load_suite(path)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [c.name for c in suite.cases][-2:] == ["c3998", "c3999"]
    assert peak - kept < kept * 0.5, (peak - kept, kept)


@pytest.mark.slow
def test_a_mistake_in_a_nested_included_file_keeps_its_place(tmp_path: Path) -> None:
    path = _included_suite(tmp_path, 1200, bad_case=1100, under_cases=True)
    with pytest.raises(SpecError) as err:
        load_suite(path)
    problem = err.value.problems[0]
    lines = (tmp_path / "sub" / "rest.yaml").read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "name: c1100," in text)
    assert (Path(problem.file).name, problem.line) == ("rest.yaml", line)
    assert "not a number" in problem.message or "integer" in problem.message


PLAIN_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "x", "tool", "args"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["x", "t", "tool", "args", "critics"]), inner, max_size=3)
    ),
    max_leaves=8,
)
SPOTS: list[tuple[Any, ...]] = [
    ("name",),
    ("system",),
    ("user",),
    ("tools",),
    ("tools", 0),
    ("tags",),
    ("tags", 0),
    ("rubric",),
    ("expect",),
    ("expect", "tool_calls"),
    ("expect", "ordered"),
    ("expect", "tool_calls", 0),
    ("expect", "tool_calls", 0, "t"),
    ("expect", "tool_calls", 0, "tool"),
    ("expect", "tool_calls", 0, "args"),
    ("expect", "tool_calls", 0, "output"),
    ("expect", "tool_calls", 1, "critics"),
]
"""Where a mutation of a plain case goes: each value, and keys beside them."""


def _a_plain_case() -> dict[str, Any]:
    return {
        "name": "c",
        "system": "s",
        "user": "u",
        "tools": ["t", "u"],
        "tags": ["x"],
        "expect": {"tool_calls": [{"t": {"a": 1}}, {"u": None}]},
    }


@given(st.lists(st.tuples(st.sampled_from(SPOTS), PLAIN_VALUES), min_size=1, max_size=2))
@example([(("name",), "")])
@example([(("expect", "tool_calls", 0), {})])
@settings(fuzz_settings(), max_examples=examples(3000))
def test_the_quick_case_check_passes_only_cases_the_compiled_schema_passes(
    changes: list[tuple[tuple[Any, ...], Any]],
) -> None:
    """`plain_case` saves the compiled check on the commonest cases: it may say yes only where
    the schema does (a yes it should not say would build a case the language refuses)."""
    case: Any = _a_plain_case()
    for spot, value in changes:
        _put(case, spot, value)
    assert schema.plain_case(_a_plain_case())
    if schema.plain_case(case):
        assert schema._passes(schema._compiled_case(), case), case


def _put(case: Any, spot: tuple[Any, ...], value: Any) -> None:
    """Set the value at `spot`, where an earlier change left one to set."""
    try:
        parent = case
        for part in spot[:-1]:
            parent = parent[part]
        if isinstance(parent, dict) or isinstance(spot[-1], int):
            parent[spot[-1]] = value
    except (KeyError, IndexError, TypeError):
        pass  # an earlier change replaced what leads there


def test_the_quick_case_check_knows_the_language_s_case_keys_as_the_schema_says() -> None:
    """If the language changes a key the quick check judges itself, it must change too."""
    language = schema.language_schema()
    case = language["$defs"]["case"]["properties"]
    for key, wanted in schema.PLAIN_CASE.items():
        assert _bare(case[key]) == wanted, key
    assert _bare(case["user"])["type"] == ["string", "object"]
    expect = language["$defs"]["expect"]
    assert "tool_calls" in expect["properties"] and expect["additionalProperties"] is False
    assert _bare(expect["properties"]["tool_calls"]) == {
        "type": "array",
        "items": {"$ref": "#/$defs/expected_call"},
    }
    assert not {"required", "dependentRequired"} & set(expect)
    assert _bare(language["$defs"]["expected_call"]) == {
        "type": "object",
        "additionalProperties": {"type": ["object", "null"]},
        "minProperties": 1,
        "properties": {
            "tool": {"type": "string"},
            "args": {"type": "object"},
            "critics": {"type": "object", "additionalProperties": {"$ref": "#/$defs/critic"}},
            "output": {},
        },
    }
    whole_case = language["$defs"]["case"]
    assert not {"required", "dependentRequired", "allOf", "anyOf", "oneOf", "if"} & set(whole_case)
    judged = {*schema.PLAIN_CASE, "user", "expect"}
    assert not set(whole_case.get("dependentSchemas", {})) & judged


def _bare(schema_part: Any) -> Any:
    """A schema without the words for people (descriptions, examples)."""
    if isinstance(schema_part, dict):
        return {
            k: _bare(v)
            for k, v in schema_part.items()
            if k not in ("description", "markdownDescription", "examples", "title", "$comment")
        }
    return schema_part


@pytest.mark.parametrize(
    "case",
    [
        "{name: '', user: q, expect: {tool_calls: [{t: {id: r}}]}}",
        "{name: c, user: 3, expect: {tool_calls: [{t: {id: r}}]}}",
        "{name: c, user: q, tools: [t, 1], expect: {tool_calls: [{t: {id: r}}]}}",
        "{name: c, user: q, tags: t, expect: {tool_calls: [{t: {id: r}}]}}",
        "{name: c, user: q, expect: {tool_calls: [{t: [r]}]}}",
        "{name: c, user: q, expect: {tool_calls: [{}]}}",
        "{name: c, user: q, expect: {tool_calls: [{args: {id: r}}]}}",
        "{name: c, user: q, expect: {tool_calls: {t: {id: r}}}}",
    ],
)
def test_a_case_of_the_common_shape_with_a_wrong_value_is_reported_as_the_whole_document_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.setattr(stream, "STREAM_MIN_CHARS", 0)
    monkeypatch.setattr(stream, "FAST_CHECK_MIN_CASES", 0)
    path = tmp_path / "suite.yaml"
    text = _generated(12).replace("  - {name: c3, user: 'q 3', ", "  - " + case + "\n  - {c3: 0, ")
    path.write_text(text.replace("{c3: 0, ", "{name: c3, user: 'q 3', "), encoding="utf-8")
    with pytest.raises(SpecError) as streamed:
        load_suite(path)
    with pytest.raises(SpecError) as whole:
        _whole(path, monkeypatch)
    assert str(streamed.value) == str(whole.value)
    assert streamed.value.problems[0].line == 13


def test_a_record_many_cases_share_is_found_under_each_case_that_holds_it(
    tmp_path: Path,
) -> None:
    """A suite's critics are one object its cases share; the walk that finds what sends
    requests looks at a shared record that sends none once, and still finds one that does
    under every case that holds it (each found where a reader looks for it)."""
    import dataclasses

    from evalspec._suite.walk import callers

    path = tmp_path / "shared.yaml"
    cases = "".join(
        f"  - {{name: c{i}, user: hi, expect: {{tool_calls: [{{t: {{id: r{i}}}}}]}}}}\n"
        for i in range(3)
    )
    path.write_text(
        "suite: shared\nmodels: [{name: m, model: m-1}]\ncritics: {id: binary}\n"
        "tools: [{name: t, description: T., parameters: {type: object, properties: "
        "{id: {type: string}}}}]\ncases:\n" + cases,
        encoding="utf-8",
    )
    suite = load_suite(path)
    shared = suite.cases[0].critics
    assert all(c.critics is shared for c in suite.cases)
    assert [p for p, _ in callers(suite)] == [("model m",)]  # the critics send nothing

    sending = tuple(dataclasses.replace(c, params={"base_url": "http://x"}) for c in shared)
    changed = dataclasses.replace(
        suite, cases=tuple(dataclasses.replace(c, critics=sending) for c in suite.cases)
    )
    found = [p for p, _ in callers(changed)]
    assert sorted(found) == [*((f"case 'c{i}'", "critic of id") for i in range(3)), ("model m",)]
