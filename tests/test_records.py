"""Records declared once: the files evalspec 1.0 wrote decode into the record classes, validate
against the schemas generated from those classes, and are written back byte for byte.

A unit test of the record classes and their files (recordings, run.json, results.json,
the HTML report's data, transcripts), which it imports from where each is declared: the
byte-for-byte round trip is the record modules' promise, below any command.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from support import evalspec_cli, examples

from evalspec._providers.recordings import (
    RecordedAnswer,
    Recordings,
    RecordingsComment,
    _parse_line,
)
from evalspec._report import record_schemas
from evalspec._report.html_data import HtmlRun, Payload, build_payload, script_json
from evalspec._report.runs import load_transcripts_beside
from evalspec._runner.run_dir import manifest_text, read_manifest
from evalspec._scoring.results_file import ResultsFile, load_results
from evalspec._transcript import read_transcripts
from evalspec._util.errors import InputError
from evalspec._util.files import dumps_line
from evalspec.api import write_transcripts

REPO = Path(__file__).resolve().parents[1]
V1 = REPO / "tests" / "data" / "records_v1"
RUNS = sorted(p.name for p in V1.iterdir() if p.is_dir())


@functools.cache
def validator(file: str) -> Draft202012Validator:
    """The published schema's validator, checked and built once per file (nothing mutates it;
    checking a schema against its meta-schema costs more than the validations here)."""
    schema = json.loads((REPO / "schemas" / file).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.mark.parametrize("described", record_schemas.SCHEMAS, ids=lambda d: d.file)
def test_committed_schema_is_the_generated_one(described: record_schemas.Described) -> None:
    committed = (REPO / "schemas" / described.file).read_text(encoding="utf-8")
    assert committed == record_schemas.text(record_schemas.generate(described)), (
        f"schemas/{described.file} is out of date: python -m evalspec._report.record_schemas"
    )


def test_check_mode_reports_a_stale_schema(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for described in record_schemas.SCHEMAS:
        shutil.copy(REPO / "schemas" / described.file, tmp_path / described.file)
    assert record_schemas.main(["--check", "--dir", str(tmp_path)]) == 0
    (tmp_path / "results.schema.json").write_text("{}\n", encoding="utf-8")
    assert record_schemas.main(["--check", "--dir", str(tmp_path)]) == 1
    assert "results.schema.json" in capsys.readouterr().err
    assert (tmp_path / "results.schema.json").read_text(encoding="utf-8") == "{}\n"


@pytest.mark.parametrize("run", RUNS)
def test_v1_transcripts_decode_validate_and_write_back(run: str, tmp_path: Path) -> None:
    source = V1 / run / "transcripts.jsonl"
    transcripts = read_transcripts(source)
    check = validator("transcript.schema.json")
    for line in source.read_text(encoding="utf-8").splitlines():
        assert not list(check.iter_errors(json.loads(line)))
    write_transcripts(tmp_path / "t.jsonl", transcripts)
    assert (tmp_path / "t.jsonl").read_bytes() == source.read_bytes()


@pytest.mark.parametrize("run", RUNS)
def test_v1_results_decode_and_validate(run: str) -> None:
    """What 1.0 wrote reads back and fits the schema (a fresh replay writes the same bytes:
    test_a_fresh_replay_writes_what_1_0_wrote)."""
    source = V1 / run / "results.json"
    results = load_results(source)
    assert isinstance(results, ResultsFile) and results.results and results.models
    assert not list(validator("results.schema.json").iter_errors(json.loads(source.read_text())))


@pytest.mark.parametrize("run", RUNS)
def test_v1_run_manifest_decodes_validates_and_writes_back(run: str) -> None:
    manifest = read_manifest(V1 / run)
    assert manifest is not None and manifest.suite == run
    text = (V1 / run / "run.json").read_text(encoding="utf-8")
    assert not list(validator("run-manifest.schema.json").iter_errors(json.loads(text)))
    assert manifest_text(manifest) == text


def test_v1_recordings_decode_validate_and_write_back() -> None:
    check = validator("recordings-line.schema.json")
    lines = (V1 / "slack" / "recordings.jsonl").read_text(encoding="utf-8").splitlines()
    kinds = []
    for line in lines:
        record = _parse_line(line.encode("utf-8"))
        assert isinstance(record, RecordedAnswer | RecordingsComment), record
        kinds.append(type(record).__name__)
        assert not list(check.iter_errors(json.loads(line)))
        assert dumps_line(msgspec.to_builtins(record)) == line
    assert kinds == ["RecordingsComment"] + ["RecordedAnswer"] * 3


def test_a_recordings_line_from_a_newer_writer_still_replays(tmp_path: Path) -> None:
    """Recordings tolerate unknown keys (a newer evalspec's line replays, and compaction keeps
    the key); transcripts, results and run.json refuse them."""
    lines = (V1 / "slack" / "recordings.jsonl").read_text(encoding="utf-8").splitlines()
    entry = json.loads(lines[1])
    entry["cache_hint"] = {"ttl": 60}
    path = tmp_path / "rec.jsonl"
    path.write_text(lines[0] + "\n" + dumps_line(entry) + "\n", encoding="utf-8")
    response = Recordings(path).get(entry["key"])
    assert response is not None and response.message == entry["response"]["message"]


def test_unknown_keys_are_refused_in_transcripts_results_and_run_json(tmp_path: Path) -> None:
    line = json.loads((V1 / "slack" / "transcripts.jsonl").read_text().splitlines()[0])
    (tmp_path / "t.jsonl").write_text(json.dumps({**line, "mood": "good"}) + "\n")
    unknown = r"t\.jsonl:1:1: not a transcript: the line: unknown key 'mood'"
    with pytest.raises(InputError, match=unknown):
        read_transcripts(tmp_path / "t.jsonl")
    results = json.loads((V1 / "slack" / "results.json").read_text())
    results["results"][0]["rows"][0]["colour"] = "red"
    (tmp_path / "r.json").write_text(json.dumps(results))
    with pytest.raises(InputError, match=r"results\[0\]\.rows\[0\]: unknown key 'colour'"):
        load_results(tmp_path / "r.json")
    run = tmp_path / "run"
    run.mkdir()
    manifest = json.loads((V1 / "slack" / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**manifest, "owner": "x"}))
    assert read_manifest(run) is None  # not trusted to vouch for the run


def test_html_payload_of_v1_runs_is_a_payload_and_validates() -> None:
    runs = [
        HtmlRun(r, load_results(V1 / r), load_transcripts_beside(V1 / r / "results.json"))
        for r in RUNS
    ]
    payload, columns = build_payload(runs)
    assert len(columns) == 3  # slack's model, and calc's two
    data = json.loads(script_json(payload))
    assert not list(validator("html-payload.schema.json").iter_errors(data))
    assert msgspec.convert(data, Payload) == payload
    trial = data["cases"][0]["c"][0][4][0]
    assert trial["m"] and trial["tok"] > 0  # the conversation travelled with the trial


EMBEDDING_REL = 1e-6
"""How close a number computed from embedding vectors must come to the stored one (relative).
The model runs in float32, whose last digits differ between CPUs, BLAS builds and torch
releases: the slack replay's similarity 0.9052829742 on one machine is 0.9052828550 on another
(1.3e-7 apart), and every score averaged from it moves as much. A change to scoring itself moves
a score far more than a millionth."""

SCORE_KEYS = frozenset({"score", "std", "mean_score", "std_score", "mean_score_ci"})
"""Where results.json holds scores (a number under one of these keys, or in an object under
one): a weighted mean of critic scores, embedding similarity among them. Every other value
(texts, counts, pass rates and their intervals, weights, thresholds, latencies) is exact."""

FLOAT = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def _is_score(path: tuple[str | int, ...]) -> bool:
    return any(isinstance(k, str) and k in SCORE_KEYS for k in path[-2:])


def record_differences(new: Any, old: Any, path: tuple[str | int, ...] = ()) -> list[str]:
    """Where a record written today differs from a stored one: every value exactly (key order
    too), but a score to EMBEDDING_REL."""
    where = _path_text(path) or "the top"
    if isinstance(new, dict) and isinstance(old, dict):
        if list(new) != list(old):
            return [f"{where}: keys {list(new)}, stored {list(old)}"]
        return [d for k in old for d in record_differences(new[k], old[k], (*path, k))]
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        pairs = enumerate(zip(new, old, strict=True))
        return [d for i, (n, o) in pairs for d in record_differences(n, o, (*path, i))]
    if type(new) is float and type(old) is float and _is_score(path):
        if new == pytest.approx(old, rel=EMBEDDING_REL):
            return []
    elif type(new) is type(old) and new == old:
        return []
    return [f"{where}: {new!r}, stored {old!r}"]


def file_differences(new: str, old: str) -> list[str]:
    """A written JSON or JSON-lines file against a stored one: the same lines once every number
    is blanked (the layout), then the same values by `record_differences`. The time a file was
    written (`created`) is left out."""
    news = [x for x in new.splitlines() if '"created"' not in x]
    olds = [x for x in old.splitlines() if '"created"' not in x]
    blanked = [FLOAT.sub("#", x) for x in news], [FLOAT.sub("#", x) for x in olds]
    if blanked[0] != blanked[1]:
        return [f"{len(news)} lines, stored {len(olds)}: {blanked[0][:3]}..."]
    if not new.startswith("{\n"):  # JSON lines
        lines = enumerate(zip(news, olds, strict=True))
        return [
            f"line {i + 1}: {d}"
            for i, (n, o) in lines
            for d in record_differences(json.loads(n), json.loads(o))
        ]
    values = [json.loads(text) for text in (new, old)]
    for value in values:
        value.pop("created", None)
    return record_differences(*values)


def _without_gate(lines: list[str]) -> list[str]:
    """results.json as 1.0 wrote it: the one key added since, the gate the run was judged
    under (`compare` applies it), taken out; everything else must not have moved."""
    bare = [line.rstrip("\n") for line in lines]
    if '  "gate": {' not in bare:
        return lines
    start = bare.index('  "gate": {')
    end = bare.index("  },", start)
    assert json.loads("{" + "".join(bare[start : end + 1]).rstrip(",") + "}")["gate"]["mode"]
    return lines[:start] + lines[end + 1 :]


def _without_tool_confusion(lines: list[str]) -> list[str]:
    """results.json without each model's `tool_confusion` (added since 1.0, the last key of a
    model's summary): the line before it loses its comma again."""
    out: list[str] = []
    skipping = ""
    for line in lines:
        if skipping:
            if line.rstrip("\n") == skipping:
                skipping = ""
            continue
        if line.lstrip().startswith('"tool_confusion": ['):
            indent = line[: len(line) - len(line.lstrip())]
            if not line.rstrip().endswith("[]"):
                skipping = indent + "]"
            out[-1] = out[-1].rstrip("\n").rstrip(",") + "\n"
            continue
        out.append(line)
    return out


def test_a_fresh_replay_writes_what_1_0_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The slack example replayed offline today writes the same transcripts and results: every
    value exactly, except the scores, which match to EMBEDDING_REL."""
    monkeypatch.chdir(REPO)
    out = tmp_path / "run"
    args = ["run", "suites/slack.yaml", "--record", "offline", "--out", str(out)]
    result = evalspec_cli(args)
    assert result.exit_code == 0, result.output
    for name in ("transcripts.jsonl", "results.json"):
        written = (out / name).read_text(encoding="utf-8").splitlines(keepends=True)
        new = "".join(_without_tool_confusion(_without_gate(written)))
        old = (V1 / "slack" / name).read_text(encoding="utf-8")
        assert file_differences(new, old) == [], name


RESULTS_V1 = (V1 / "slack" / "results.json").read_text(encoding="utf-8")


def _nudged(text: str, pattern: str, factor: float) -> str:
    """The results file with the first number after `pattern` multiplied by `factor`."""
    number = FLOAT.search(text, text.index(pattern) + len(pattern))
    assert number is not None, pattern
    return text[: number.start()] + repr(float(number.group()) * factor) + text[number.end() :]


@pytest.mark.parametrize(
    ("pattern", "factor"),
    [
        ('"mean_score":', 1 + 1e-8),
        ('"std_score":', 1 - 1e-8),
        ('"score":', 1 + 3e-7),  # an item's score, as another machine's similarity moves it
    ],
)
def test_the_comparison_allows_embedding_noise_in_scores(pattern: str, factor: float) -> None:
    nudged = _nudged(RESULTS_V1, pattern, factor)
    assert nudged != RESULTS_V1
    assert file_differences(nudged, RESULTS_V1) == []


@pytest.mark.parametrize(
    ("changed", "what"),
    [
        (lambda t: _nudged(t, '"mean_score":', 1 + 1e-4), "a score moved by a real change"),
        (lambda t: _nudged(t, '"pass_hat_k":', 1 - 1e-12), "an exact number"),
        (lambda t: _nudged(t, '"weight":', 1 + 1e-12), "a weight"),
        (lambda t: t.replace('"passed": 5', '"passed": 4', 1), "a count"),
        (lambda t: t.replace('"warned": 1', '"warned": 1.0', 1), "a count's type"),
        (lambda t: t.replace("similar enough.", "similar enough!", 1), "a reason"),
        (lambda t: t.replace('"passed": 1, "pass_at_k"', '"pass_at_k"', 1), "a key"),
        (lambda t: t.replace('"cases": 6,\n      "passed"', '"passed"', 1), "a key"),
        (lambda t: t.replace("\n  ", "\n   ", 1), "the layout"),
    ],
)
def test_the_comparison_finds_every_other_change(changed: Any, what: str) -> None:
    other = changed(RESULTS_V1)
    assert other != RESULTS_V1, what
    assert file_differences(other, RESULTS_V1), what


# ------------------------------------------------------------------- untrusted transcripts

LINE = json.loads((V1 / "slack" / "transcripts.jsonl").read_text().splitlines()[0])
assert LINE["tool_calls"], "the fuzzed line has a tool call to fuzz"

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = [
    *[(k,) for k in LINE],
    *[("tool_calls", 0, k) for k in LINE["tool_calls"][0]],
    *[("usage", k) for k in LINE["usage"]],
    ("messages", 0),
]
FILLED = {("usage",), ("tool_calls",)}
"""Fields holding records: an object given there reads back with the defaults filled in."""


def _path_text(path: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


@settings(
    max_examples=examples(300),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(field=st.sampled_from(FIELDS), value=JSON, line_no=st.integers(1, 3))
def test_any_field_replaced_by_any_json_reads_or_names_that_field(
    tmp_path: Path, field: tuple[str | int, ...], value: Any, line_no: int
) -> None:
    data = json.loads(json.dumps(LINE))
    target: Any = data
    for step in field[:-1]:
        target = target[step]
    target[field[-1]] = value
    lines = [json.dumps(LINE)] * (line_no - 1) + [json.dumps(data)]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        transcripts = read_transcripts(path)
    except InputError as exc:
        message = str(exc)
        where = _path_text(field)
        assert message.startswith(f"{path}:{line_no}:1: not a transcript: {where}"), message
        assert message.endswith("each line must be one transcript, as `evalspec run` writes it")
        assert "\x1b" not in message
    else:
        assert len(transcripts) == line_no
        if field in FILLED:
            return  # a record's fields left out are read as their defaults
        back = msgspec.to_builtins(transcripts[-1])
        replaced: Any = back
        for step in field[:-1]:
            replaced = replaced[step]
        # As given (as JSON: a list for a tuple; a whole number equals the same number).
        assert json.loads(json.dumps(replaced[field[-1]])) == value


def test_validate_does_not_import_the_records_library() -> None:
    """`evalspec validate` is held to a few times `import yaml, jsonschema`: it reads suites
    only, so the library the file records are declared with stays unloaded."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from evalspec._cli import app\n"
        "try:\n"
        "    app(['validate', 'suites/slack.yaml'], prog_name='evalspec')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "print('msgspec' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "False", out.stdout + out.stderr


@settings(max_examples=examples(200), derandomize=True, database=None, deadline=None)
@given(
    depth=st.integers(0, 260),
    text=st.text(alphabet='[]{}"\\ab', max_size=12),
    wrap=st.sampled_from(["[{}]", '{{"k": {}}}']),
)
def test_the_fast_depth_check_agrees_with_the_reader(depth: int, text: str, wrap: str) -> None:
    """Brackets, quotes and backslashes inside strings never fool the depth check that runs
    after a typed decode: it says too deep exactly when evalspec's JSON reader does."""
    from evalspec._util.reading import json_depth_error
    from evalspec._util.records import _too_deep

    value: Any = [text, {text: text}]
    for _ in range(depth):
        value = json.loads(wrap.format(json.dumps(value)))
    encoded = json.dumps(value)
    assert _too_deep(encoded) == (json_depth_error(encoded) is not None)
    assert _too_deep(encoded.encode()) == _too_deep(encoded)


def test_a_models_arguments_are_held_to_their_depth_however_many_brackets_they_quote() -> None:
    """Arguments nested past the limit are refused; brackets inside strings are text, however
    many; NaN, overflowing numbers, broken JSON and a leading BOM are refused, the last two in
    json.loads's words."""
    from evalspec._util.reading import MAX_VALUE_DEPTH, loads_untrusted

    deep = "[" * (MAX_VALUE_DEPTH + 1) + "]" * (MAX_VALUE_DEPTH + 1)
    with pytest.raises(ValueError, match=f"deeper than {MAX_VALUE_DEPTH} levels"):
        loads_untrusted(deep, MAX_VALUE_DEPTH)
    quoted = json.dumps({"note": "[{" * MAX_VALUE_DEPTH})
    assert loads_untrusted(quoted, MAX_VALUE_DEPTH) == {"note": "[{" * MAX_VALUE_DEPTH}
    assert loads_untrusted('{"x": [1.5, {"y": null}]}', MAX_VALUE_DEPTH) == {
        "x": [1.5, {"y": None}]
    }
    for refused in ('{"x": NaN}', '{"x": 1e400}'):
        with pytest.raises(ValueError, match=r"not a number JSON allows|too large for a number"):
            loads_untrusted(refused, MAX_VALUE_DEPTH)
    for broken in ('\ufeff{"x": 1}', '{"x": }'):  # worded as json.loads words them
        with pytest.raises(ValueError) as ours:
            loads_untrusted(broken, MAX_VALUE_DEPTH)
        with pytest.raises(ValueError) as plain:
            json.loads(broken)
        assert str(ours.value) == str(plain.value)
