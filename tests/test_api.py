"""The public surface: the verbs in `evalspec`, the functions in `evalspec.api`, records, errors
and plugin hooks each in their own module, every name documented and loaded on first use; and
the API does what the commands do without a command line."""

from __future__ import annotations

import importlib
import inspect
import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import evalspec
from evalspec import api, errors, plugins, records

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reference" / "python-api.md"
VERBS = [
    "compare",
    "diff",
    "import_bfcl",
    "import_bfcl_results",
    "import_otel",
    "import_stabletoolbench",
    "import_stabletoolbench_answers",
    "import_tau_bench",
    "import_traces",
    "judge",
    "merge",
    "rescore",
    "review",
    "run",
    "score",
]
STAGES = [
    "GATE_NAMES",
    "RECORD_MODES",
    "accept_capture",
    "calibrate",
    "check_suite",
    "compile_plan",
    "estimate_cost",
    "load_suite",
    "load_transcripts",
    "project_schema",
    "record_answers",
    "refresh_tools",
    "run_plan",
    "stale_transcripts",
    "starter_suite",
    "suite_files",
    "suite_schema",
    "tool_session",
    "write_project_schema",
    "write_reports",
    "write_runs_page",
    "write_transcripts",
]
SURFACE = {
    "evalspec": VERBS,
    "evalspec.api": sorted([*VERBS, *STAGES]),
    "evalspec.records": [
        "Adopted",
        "Calibration",
        "CaptureAccepted",
        "Comparison",
        "JudgeOutcome",
        "Judged",
        "Merged",
        "ModelEstimate",
        "ModelSpec",
        "Plan",
        "PlanItem",
        "Price",
        "RefreshOutcome",
        "Refusal",
        "Report",
        "ReportFiles",
        "Rescored",
        "Review",
        "RunOptions",
        "RunOutcome",
        "RunProgress",
        "RunRequest",
        "RunResult",
        "RunStart",
        "StaleTranscript",
        "Suite",
        "SuitesWritten",
        "TauBenchImported",
        "ToolAnswer",
        "ToolCall",
        "ToolSession",
        "ToolVariant",
        "TracesImported",
        "Transcript",
        "TranscriptsWritten",
        "Usage",
        "UserTurn",
        "Warnings",
    ],
    "evalspec.errors": [
        "EvalspecError",
        "Problem",
        "RecordingsMissing",
        "RunError",
        "RunInterrupted",
        "SpecError",
        "UsageError",
    ],
    "evalspec.plugins": [
        "AnswerCheck",
        "AnswerInput",
        "ChatRequest",
        "ChatResponse",
        "CheckReturn",
        "Critic",
        "CriticOutcome",
        "Embedder",
        "Evaluator",
        "EvaluatorInput",
        "Finding",
        "Judge",
        "Params",
        "Plugin",
        "Provider",
        "ToolEnvironment",
        "ToolFault",
        "ToolOutcome",
        "Verdict",
        "find",
        "outcome",
        "register",
        "registered",
        "show",
        "unregister",
    ],
}
"""The public surface, group by group: a name added or dropped by accident fails here."""
PUBLIC = [(module, name) for module, names in SURFACE.items() for name in names]
SLACK = ROOT / "suites" / "slack.yaml"


@pytest.mark.parametrize("module", SURFACE)
def test_each_public_module_offers_exactly_its_group(module):
    offered = importlib.import_module(module)
    assert sorted(offered.__all__) == SURFACE[module]
    assert set(SURFACE[module]) <= set(dir(offered))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = offered.nothing_here


def test_the_groups_do_not_overlap_and_the_verbs_at_the_top_are_the_apis():
    """Each name has one home; the top level repeats the verbs of `evalspec.api`."""
    groups = [set(names) for module, names in SURFACE.items() if module != "evalspec"]
    assert sum(map(len, groups)) == len(set().union(*groups))
    for name in SURFACE["evalspec"]:
        assert getattr(evalspec, name) is getattr(api, name), name
    assert evalspec.records is records and evalspec.errors is errors
    assert evalspec.plugins is plugins


def test_internals_are_not_offered():
    for module, name in [
        ("evalspec", "load_suite"),
        ("evalspec", "register"),
        ("evalspec.api", "RAY_BATCH"),
        ("evalspec.api", "RunRequest"),
        ("evalspec.plugins", "Kind"),
        ("evalspec.plugins", "load_entry_points"),
    ]:
        with pytest.raises(AttributeError):
            getattr(importlib.import_module(module), name)


def _own_doc(value: object) -> str:
    doc = inspect.getdoc(value) or ""
    if inspect.isclass(value) and doc.startswith(f"{value.__name__}("):
        return ""  # the signature a dataclass makes up when it has no docstring
    return doc


@pytest.mark.parametrize(("module", "name"), PUBLIC)
def test_every_public_name_has_a_docstring_and_is_on_the_reference_page(module, name):
    page = PAGE.read_text(encoding="utf-8")
    value = getattr(importlib.import_module(module), name)
    if inspect.isclass(value) or inspect.isfunction(value):
        assert _own_doc(value).strip(), f"{name} has no docstring"
        if module != "evalspec":  # the verbs are documented where they live, in evalspec.api
            assert f"::: {module}.{name}\n" in page, f"{module}.{name} is not in {PAGE.name}"
    else:  # a constant: described in a definition list
        assert f"`{name}`" in page, f"{name} is not described in {PAGE.name}"


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return {m for m in json.loads(out.splitlines()[-1]) if m.split(".")[0] == "evalspec"}


def test_importing_evalspec_loads_no_stage():
    lazy = {"evalspec", "evalspec._util", "evalspec._util.lazy"}
    assert _modules_after("import evalspec") == lazy
    for group in ("api", "records", "errors", "plugins"):
        assert _modules_after(f"import evalspec.{group}") == {*lazy, f"evalspec.{group}"}
    # A name loads its own module and what that needs, not the whole pipeline.
    loaded = _modules_after("from evalspec.api import load_suite")
    assert "evalspec._suite.validate" in loaded
    assert not any(m.startswith(("evalspec._runner", "evalspec._review")) for m in loaded)


class Recorder:
    """A RunProgress that keeps what it is told."""

    def __init__(self) -> None:
        self.started: list[records.RunStart] = []
        self.finished: list[str] = []
        self.stopped = 0

    def start(self, run: records.RunStart) -> None:
        self.started.append(run)

    def advance(self, transcript: records.Transcript) -> None:
        self.finished.append(transcript.item_id)

    def stop(self) -> None:
        self.stopped += 1


def _slack(tmp_path: Path, *, drop_cases: tuple[str, ...] = ()) -> Path:
    """The Slack example suite and its recordings, copied (without some cases' recordings)."""
    suite = tmp_path / "slack.yaml"
    shutil.copy(SLACK, suite)
    lines = SLACK.with_name("slack.recordings.jsonl").read_text(encoding="utf-8").splitlines()
    kept = [
        line
        for line in lines
        if not any(f"case {case!r}" in json.loads(line).get("label", "") for case in drop_cases)
    ]
    for case in drop_cases:
        assert any(f"case {case!r}" in line for line in lines), f"no recording of {case!r}"
    (tmp_path / "slack.recordings.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    return suite


def _statuses(results: Path) -> dict[str, str]:
    data = json.loads(results.read_text(encoding="utf-8"))
    return {r["case"]: r["status"] for r in data["results"]}


def test_run_replays_the_slack_suite_offline_and_resumes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite = _slack(tmp_path)
    progress = Recorder()
    first = api.run(
        records.RunRequest(suite, record="offline", out=tmp_path / "run"),
        reports=records.ReportFiles(markdown=tmp_path / "report.md"),
        progress=progress,
    )
    items = len(first.report.results)
    assert items == 6 and first.exit_code == 0
    assert first.counts["replayed"] > 0 and first.counts.get("called", 0) == 0
    assert first.results_file == tmp_path / "run" / "results.json"
    assert _statuses(first.results_file) == {c.case: c.status for c in first.report.cases}
    assert (tmp_path / "report.md").read_text(encoding="utf-8").strip()
    (start,) = progress.started
    assert (start.total, start.run_dir, tuple(start.stale)) == (items, tmp_path / "run", ())
    assert len(progress.finished) == items and progress.stopped == 1

    # Lose the last two finished items, as an interrupted run would; resume runs only those.
    transcripts = tmp_path / "run" / "transcripts.jsonl"
    lines = transcripts.read_text(encoding="utf-8").splitlines()
    transcripts.write_text("\n".join(lines[:-2]) + "\n", encoding="utf-8")
    again = Recorder()
    resumed = api.run(
        records.RunRequest(suite, record="offline", resume=tmp_path / "run"), progress=again
    )
    assert resumed.resumed == items - 2
    assert len(again.finished) == 2 and again.stopped == 1
    assert _statuses(resumed.results_file) == _statuses(first.results_file)
    assert len(resumed.report.results) == items
    assert "4 resumed" in resumed.note

    # A used run directory is refused before anything runs.
    with pytest.raises(errors.UsageError, match=r"out=.* already holds files"):
        api.run(records.RunRequest(suite, record="offline", out=tmp_path / "run"))


def test_missing_recordings_name_every_request_and_write_no_results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dropped = ("direct message", "read the general channel")
    suite = _slack(tmp_path, drop_cases=dropped)
    run_dir = tmp_path / "run"
    with pytest.raises(errors.RecordingsMissing) as info:
        api.run(records.RunRequest(suite, record="offline", out=run_dir))
    missing = info.value
    assert isinstance(missing, errors.RunError)
    assert len(missing.labels) == len(dropped)
    for case in dropped:
        assert any(f"case {case!r}" in label for label in missing.labels), missing.labels
    assert "record=offline may not call the model" in str(missing)
    assert not (run_dir / "results.json").exists()


def test_diff_of_suites_in_memory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite_path = _slack(tmp_path)
    result = api.run(records.RunRequest(suite_path, record="offline", out=tmp_path / "run"))
    transcripts = api.load_transcripts(result.run_dir)
    suite = api.load_suite(suite_path)
    # A case whose rubric no longer tolerates anything below a perfect score.
    strict = replace(
        suite,
        cases=tuple(
            replace(c, rubric=replace(c.rubric, fail_threshold=1.0, warn_threshold=1.0))
            for c in suite.cases
        ),
    )
    before = {c.case: c.status for c in api.score(suite, transcripts).cases}
    after = {c.case: c.status for c in api.score(strict, transcripts).cases}
    moved = {case for case in before if before[case] != after[case]}
    assert moved, "the stricter rubric must change some status for this test to mean anything"

    comparison = api.diff(suite, strict, transcripts)
    changed = {c.case for c in comparison.changes if c.kind not in ("unchanged",)}
    assert moved <= changed
    regressions = {c.case for c in comparison.changes if c.kind == "regression"}
    assert regressions == {case for case in moved if after[case] == "fail"}
    assert comparison.exit_code == (1 if regressions else 0)
    # The same diff of files and of the run directory says the same.
    strict_file = tmp_path / "same.yaml"
    shutil.copy(suite_path, strict_file)
    same = api.diff(suite_path, strict_file, result.run_dir)
    assert same.exit_code == 0 and not [c for c in same.changes if c.kind != "unchanged"]


def test_merge_of_shards_is_the_whole_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite = _slack(tmp_path)
    whole = api.run(records.RunRequest(suite, record="offline", out=tmp_path / "whole"))
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for i, out in enumerate(shards, 1):
        part = api.run(records.RunRequest(suite, record="offline", shard=f"{i}/2", out=out))
        assert 0 < len(part.report.results) < len(whole.report.results)
    merged = api.merge(shards, tmp_path / "all")
    assert (merged.missing, merged.planned) == (0, len(whole.report.results))
    assert _statuses(tmp_path / "all" / "results.json") == _statuses(whole.results_file)
    assert merged.exit_code == whole.exit_code

    # One shard alone: the rest is counted missing, and what is there is still scored.
    alone = api.merge(shards[:1], tmp_path / "half")
    assert alone.missing == len(whole.report.results) - len(alone.report.results) > 0


def test_rescore_names_what_it_left_out_and_compare_pairs_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite = _slack(tmp_path)
    first = api.run(records.RunRequest(suite, record="offline", out=tmp_path / "run"))
    again = api.rescore(
        suite, first.run_dir, reports=records.ReportFiles(results=tmp_path / "r.json")
    )
    assert (again.exit_code, again.stale, again.skipped, again.adopted) == (0, (), (), None)
    assert again.scored == again.read == len(first.report.results)
    assert _statuses(tmp_path / "r.json") == _statuses(first.results_file)

    # The direct message now asks something else; one case is dropped from the suite.
    text = suite.read_text(encoding="utf-8")
    edited = text.replace("saying 'Hello, can we meet at 3 PM?'", "saying 'See you at 4'", 1)
    assert edited != text
    suite.write_text(edited, encoding="utf-8")
    changed = api.rescore(suite, first.run_dir, cases=["post to*"])
    assert changed.report is not None and changed.exit_code == 0  # only chosen cases scored
    assert {c.case for c in changed.report.cases} == {"post to general", "post to announcements"}
    stale = api.rescore(suite, first.run_dir)
    assert [s.label for s in stale.stale] and all("direct message" in s.label for s in stale.stale)
    assert stale.exit_code == 3
    assert api.rescore(suite, first.run_dir, allow_stale=True).exit_code == 0

    # Nothing of the suite among the transcripts: nothing scored, exit 3.
    other = tmp_path / "other.jsonl"
    lines = (first.run_dir / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
    other.write_text(
        "\n".join(json.dumps({**json.loads(line), "model": "elsewhere"}) for line in lines) + "\n",
        encoding="utf-8",
    )
    nothing = api.rescore(suite, other)
    assert nothing.report is None and nothing.exit_code == 3
    assert nothing.skipped and "'elsewhere'" in nothing.skipped[0]

    # Two runs side by side: the same answers, so nothing changed and the gate passes.
    second = api.run(records.RunRequest(SLACK, record="offline", out=tmp_path / "run2"))
    comparison = api.compare([first.run_dir, second.run_dir], html=tmp_path / "c.html")
    assert len(comparison.columns) == 2 and comparison.exit_code == 0
    assert not [c for c in comparison.changes if c.kind not in ("unchanged",)]
    assert (tmp_path / "c.html").stat().st_size > 0
    with pytest.raises(errors.UsageError, match="nothing to compare"):
        api.compare([first.run_dir])
    with pytest.raises(errors.UsageError, match="gate='strict'"):
        api.compare([first.run_dir, second.run_dir], gate="strict")


class _Canned:
    """A model of the caller's own: calls get_weather once, then says what it read."""

    def __init__(self) -> None:
        self.requests: list[plugins.ChatRequest] = []

    async def complete(self, request: plugins.ChatRequest) -> plugins.ChatResponse:
        self.requests.append(request)
        if request.messages[-1]["role"] == "tool":
            message = {"role": "assistant", "content": "It is 21 degrees in Paris."}
            return plugins.ChatResponse(
                message, "stop", {"prompt_tokens": 9, "completion_tokens": 7}
            )
        call = {"id": "c1", "type": "function"}
        call["function"] = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return plugins.ChatResponse(
            message, "tool_calls", {"prompt_tokens": 5, "completion_tokens": 3}
        )

    async def aclose(self) -> None:
        return None


def test_record_answers_from_your_own_provider_then_replay_them_offline(
    tmp_path, write_suite, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    path = write_suite(
        """\
        suite: own model
        models: [house-model]
        tools:
          - name: get_weather
            description: Current weather for a city.
            parameters: {type: object, properties: {city: {type: string}}, required: [city]}
            responses: [{output: {temperature: 21}}]
        cases:
          - name: paris
            user: How warm is Paris?
            expect: {tool_calls: [{get_weather: {city: Paris}}]}
        """
    )
    model = _Canned()
    written = api.record_answers(api.load_suite(path), model, note="EXAMPLE answers")
    assert len(model.requests) == 2  # the call, then the answer after the tool's output
    lines = written.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"_comment": "EXAMPLE answers"} and len(lines) == 3
    result = api.run(records.RunRequest(path, record="offline", out=tmp_path / "run"))
    (summary,) = result.report.models
    assert (summary.passed, summary.failed) == (1, 0)
    (case,) = result.report.cases
    (trial,) = case.results
    assert (trial.model, trial.status, trial.score) == ("house-model", "pass", 1.0)


def test_every_public_signature_names_only_public_types():
    """A parameter or return typed by a private class cannot be built or read by a user (as
    `score(calls: ModelCalls)` was): each type a public function names is offered too."""
    offered = {name for names in SURFACE.values() for name in names}
    standard = {"Any", "Awaitable", "Callable", "Iterable", "Iterator", "Literal", "Mapping"}
    standard |= {"None", "Path", "Sequence"}
    private = []
    for module, name in PUBLIC:
        function = getattr(importlib.import_module(module), name)
        if isinstance(function, type) or not callable(function):
            continue
        signature = inspect.signature(function)
        written = [str(p.annotation) for p in signature.parameters.values()]
        for text in [*written, str(signature.return_annotation)]:
            named = set(re.findall(r"\b[A-Z]\w*", text)) - offered - standard
            private += [f"{module}.{name}: {type_name}" for type_name in sorted(named)]
    assert private == []


def test_no_public_function_hides_its_parameters():
    """Every parameter a public function takes is in its signature and its documentation: none
    passes unnamed ones through (`run_plan(**kwargs)` took a private `providers=` unseen)."""
    hidden = []
    for module, name in PUBLIC:
        function = getattr(importlib.import_module(module), name)
        if isinstance(function, type) or not callable(function):
            continue
        parameters = inspect.signature(function).parameters.values()
        hidden += [f"{module}.{name}" for p in parameters if p.kind is p.VAR_KEYWORD]
    assert hidden == []
    with pytest.raises(TypeError, match="providers"):
        api.run_plan(api.compile_plan(api.load_suite(SLACK)), providers={})  # type: ignore[call-arg]
