"""Hostile inputs that aim at time and memory: each bound is asserted by counts, caps and exit
codes, never by a clock (benchmarks/bench_bounds.py measures the time and memory they save).

Each bound is attacked where it is kept (the plan, the runner, the scorer, the suite's
limits and the review's comment), which it imports: a bound is a cap on a count that no result
shows, and reaching it through a whole run would need the very time and memory it saves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support import evalspec_cli

from evalspec import api, errors
from evalspec._compare.markdown import FULL_REVIEW_NOTE, fit_comment
from evalspec._plan import compile_plan
from evalspec._runner.execute import TOO_MANY_CALLS, run_item
from evalspec._scoring.scorer import Scorer
from evalspec._suite.limits import MAX_CALLS_PER_CASE, max_plan_items, untrusted
from evalspec._suite.model import Tool
from evalspec._tool_schema import pattern_problems, tool_validator
from evalspec._tools.simulated import ToolSimulator
from evalspec._util.markdown import GITHUB_COMMENT_LIMIT, code
from evalspec._util.schemas import compiled_check
from evalspec.api import load_suite
from evalspec.plugins import ChatRequest, ChatResponse
from evalspec.records import Suite, Transcript

EVIL = "^(a+)+$"
"""Exponential under a backtracking engine: 34 a's and a `!` take minutes in Python's `re`."""
EVIL_TEXT = "a" * 34 + "!"


def load_suite_text(text: str) -> Suite:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "s.yaml").write_text(text, encoding="utf-8")
        return load_suite(Path(tmp) / "s.yaml")


def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = evalspec_cli(list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def regex_suite(pattern: str, key_pattern: str, city: str) -> str:
    return f"""\
suite: mini
models: [gpt-4o-mini]
tools:
  - name: get_weather
    parameters:
      type: object
      properties:
        city: {{type: string, pattern: '{pattern}'}}
      patternProperties:
        '{key_pattern}': {{type: string}}
      additionalProperties: false
cases:
  - name: weather
    user: Weather in Paris?
    expect:
      tool_calls:
        - get_weather: {{city: '{city}'}}
"""


# ------------------------------------------------------------------ regexes in tool parameters


def test_a_catastrophic_schema_pattern_is_judged_not_hung(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "s.yaml").write_text(regex_suite(EVIL, EVIL, EVIL_TEXT), encoding="utf-8")
    code, output = cli(tmp_path, monkeypatch, "validate", "s.yaml")
    assert code == 2
    assert f"the expected city '{EVIL_TEXT}' does not fit get_weather's parameter" in output


def test_a_pattern_re2_cannot_run_is_a_validation_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "s.yaml").write_text(regex_suite("^(a)\\1$", "^(?=b)", "aa"), encoding="utf-8")
    code, output = cli(tmp_path, monkeypatch, "validate", "s.yaml")
    assert code == 2
    assert "properties.city.pattern: the pattern '^(a)\\\\1$' cannot be used" in output
    assert "patternProperties: the pattern '^(?=b)' cannot be used" in output
    assert "2 problems found" in output


def test_schema_regexes_run_on_re2_in_every_keyword() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "pattern": EVIL}},
        "patternProperties": {EVIL: {"type": "integer"}},
        "additionalProperties": False,
        "propertyNames": {"pattern": "^(a+|city)+$"},
    }
    validator = tool_validator(schema)
    assert not validator.is_valid({"city": EVIL_TEXT})
    assert validator.is_valid({"city": "aaa", "aaaa": 3})
    assert not validator.is_valid({"aaaa": "three"})  # patternProperties applied
    assert not validator.is_valid({EVIL_TEXT: 3})  # neither property nor pattern: additional
    assert [e.validator for e in validator.iter_errors({EVIL_TEXT: 3})] == [
        "additionalProperties",
        "pattern",
    ]
    # The compiled (fastjsonschema) check never takes a schema with a pattern: it would use `re`.
    assert compiled_check(schema) is None
    assert compiled_check(schema["properties"]["city"]) is None
    assert pattern_problems(schema) == []


def test_a_running_simulated_tool_checks_a_hostile_argument_on_re2(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string", "pattern": EVIL}}}
    tool = Tool(name="get_weather", description="", parameters=schema)
    simulator = ToolSimulator([tool], tmp_path)
    result = asyncio.run(simulator.call("get_weather", {"city": EVIL_TEXT}, ""))
    assert result.error is not None and "does not match '^(a+)+$'" in result.error


# ------------------------------------------------------------------ tool calls per case


def many_calls_suite(n: int) -> str:
    calls = "".join(f"        - get_weather: {{city: 'City {i}'}}\n" for i in range(n))
    return f"""\
suite: mini
models: [gpt-4o-mini]
tools:
  - name: get_weather
    parameters: {{type: object, properties: {{city: {{type: string}}}}}}
cases:
  - name: weather
    user: Weather everywhere?
    expect:
      tool_calls:
{calls}"""


def test_a_case_expecting_more_calls_than_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ok.yaml").write_text(many_calls_suite(MAX_CALLS_PER_CASE), encoding="utf-8")
    (tmp_path / "s.yaml").write_text(many_calls_suite(2000), encoding="utf-8")
    assert cli(tmp_path, monkeypatch, "validate", "ok.yaml")[0] == 0
    code, output = cli(tmp_path, monkeypatch, "validate", "s.yaml")
    assert code == 2
    assert output.splitlines()[0] == (
        "s.yaml:11:9: cases[0].expect.tool_calls: the case expects 2000 tool calls; the limit "
        "is 100 per case; split it into several cases"
    )


def transcript_with_calls(n: int) -> dict:
    call = {"name": "get_weather", "arguments": {"city": "Paris"}, "raw_arguments": "", "id": "c"}
    return {
        "item_id": "i1",
        "case": "weather",
        "model": "gpt-4o-mini",
        "trial": 0,
        "messages": [],
        "tool_calls": [{**call, "turn": 0}] * n,
        "final_answer": None,
        "usage": {"prompt_tokens": 3, "completion_tokens": 4},
        "latency_s": 0.1,
        "turns": 1,
        "source": "live",
    }


def test_a_transcript_with_more_calls_than_the_cap_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "s.yaml").write_text(many_calls_suite(3), encoding="utf-8")
    (tmp_path / "t.jsonl").write_text(json.dumps(transcript_with_calls(2000)) + "\n")
    code, output = cli(tmp_path, monkeypatch, "score", "s.yaml", "-t", "t.jsonl")
    assert (code, output.strip().splitlines()[0]) == (
        2,
        "t.jsonl:1:1: not a transcript: tool_calls: 2000 items; evalspec reads at most 100; "
        "each line must be one transcript, as `evalspec run` writes it",
    )


class _Chatty:
    """A provider whose every answer asks for `n` tool calls."""

    def __init__(self, n: int):
        self.n = n
        self.requests = 0

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests += 1
        call = {"name": "get_weather", "arguments": "{}"}
        calls = [{"id": f"c{i}", "type": "function", "function": call} for i in range(self.n)]
        return ChatResponse({"role": "assistant", "content": None, "tool_calls": calls})


def test_a_model_asking_for_more_calls_than_the_cap_stops_its_case(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(many_calls_suite(3), encoding="utf-8")
    suite = load_suite(tmp_path / "s.yaml")
    plan = compile_plan(suite)
    simulator = ToolSimulator(suite.tools, tmp_path)
    provider = _Chatty(30)  # 30 a turn: the fourth turn would pass the cap of 100
    t = asyncio.run(run_item(plan.items[0], plan, provider, simulator))
    assert (provider.requests, len(t.tool_calls), t.finish_reason) == (4, 90, TOO_MANY_CALLS)
    assert t.error == (
        "the model asked for 120 tool calls in one case; evalspec scores at most 100, so the "
        "case stopped there"
    )
    assert Scorer(suite).score(t).status == "error"


def test_matching_at_the_cap_scores_each_pair_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """100 expected x 100 actual calls of one tool: 10,000 pair scores, one assignment."""
    from evalspec._scoring import scorer

    suite_text = many_calls_suite(MAX_CALLS_PER_CASE)
    suite = load_suite_text(suite_text)
    t = Transcript.from_dict(transcript_with_calls(MAX_CALLS_PER_CASE))
    scored = []
    real = scorer.score_pair
    monkeypatch.setattr(scorer, "score_pair", lambda *a: scored.append(1) or real(*a))
    result = Scorer(suite).score(t)
    assert len(scored) == MAX_CALLS_PER_CASE**2
    assert result.status == "fail" and len(result.rows) == 2 * MAX_CALLS_PER_CASE


# ------------------------------------------------------------------ aliases, counted in characters


def test_one_long_text_aliased_across_a_matrix_is_refused_by_its_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1 MB anchored once, aliased 10,000 times: 10,000 values (under the value cap), 10 GB."""
    rows = ", ".join(["*b"] * 10_000)
    text = (
        many_calls_suite(1)
        .replace("cases:\n", f'vars:\n  big: &b "{"x" * 1_000_000}"\ncases:\n')
        .replace(
            "  - name: weather\n",
            "  - name: 'weather {{ n }}'\n    matrix:\n      t: [" + rows + "]\n      n: [1, 2]\n",
        )
    )
    (tmp_path / "s.yaml").write_text(text, encoding="utf-8")
    code, output = cli(tmp_path, monkeypatch, "validate", "s.yaml")
    assert (code, output.splitlines()[0]) == (
        2,
        "s.yaml:11:10: this value repeats *aliases so often that it expands to 9998999947 more "
        "characters of text than the file writes out; the limit is 16777216; repeat a long text "
        "through a template variable in fewer places, or write it out once per use",
    )
    # The same megabyte used once is within the bound.
    (tmp_path / "s.yaml").write_text(text.replace(rows, ", ".join(["*b"] * 1)), encoding="utf-8")
    assert cli(tmp_path, monkeypatch, "validate", "s.yaml")[0] == 0


# ------------------------------------------------------------------ the base tree of a review

SUITES = Path(__file__).resolve().parents[1] / "suites"


def weather_repo(tmp_path: Path, *extra: tuple[str, str | None]) -> Path:
    """suites/weather.yaml and its recordings committed on `main`, plus `extra` (path, link
    target) symbolic links: None makes a 1 MiB file of that name instead."""
    repo = tmp_path / "repo"
    (repo / "suites").mkdir(parents=True)
    for name in ("weather.yaml", "weather.recordings.jsonl"):
        (repo / "suites" / name).write_bytes((SUITES / name).read_bytes())
    for name, target in extra:
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if target is None:
            path.write_bytes(b"\0" * 1024 * 1024)
        else:
            path.symlink_to(target)
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "b"]):
        subprocess.run(
            ["git", "-c", "user.email=t@e.com", "-c", "user.name=t", *args], cwd=repo, check=True
        )
    return repo


def test_links_in_the_base_are_never_created_nor_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: one absolute link anywhere made review trace back (AbsoluteLinkError), exit 1."""
    repo = weather_repo(
        tmp_path,
        ("etc", "/etc"),
        ("assets/up", "../../../.."),
        ("suites/passwd.yaml", "/etc/passwd"),
    )
    code, output = cli(repo, monkeypatch, "review", "--base-ref", "main", "--json")
    assert code == 0, output
    assert [s["path"] for s in json.loads(output)["suites"]] == ["suites/weather.yaml"]


def test_the_base_is_streamed_and_its_size_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalspec._review import git_base

    repo = weather_repo(tmp_path, *((f"assets/a{i}.bin", None) for i in range(3)))
    written: list[int] = []
    monkeypatch.setattr(git_base, "_CHUNK", 64 * 1024)
    real_open = open

    def counting_open(path, mode="r", *args, **kwargs):  # type: ignore[no-untyped-def]
        fh = real_open(path, mode, *args, **kwargs)
        if mode == "wb" and str(path).endswith(".bin"):
            real_write = fh.write
            fh.write = lambda chunk: written.append(len(chunk)) or real_write(chunk)
        return fh

    monkeypatch.setattr(git_base, "open", counting_open, raising=False)
    assert cli(repo, monkeypatch, "review", "--base-ref", "main")[0] == 0
    assert len(written) == 3 * 16 and max(written) == 64 * 1024  # one chunk at a time
    monkeypatch.setattr(git_base, "MAX_BASE_FILE_BYTES", 512 * 1024)
    written.clear()
    assert cli(repo, monkeypatch, "review", "--base-ref", "main")[0] == 0
    assert written == []  # larger than any file evalspec reads: left out
    monkeypatch.setattr(git_base, "MAX_BASE_FILE_BYTES", 2 * 1024 * 1024)
    monkeypatch.setattr(git_base, "MAX_BASE_TREE_BYTES", 2 * 1024 * 1024)
    code, output = cli(repo, monkeypatch, "review", "--base-ref", "main")
    assert code == 2
    assert output.strip().splitlines()[-1].startswith("error: the base ")
    assert "holds more than 2097152 bytes of files; review reads the base tree" in output


# ------------------------------------------------------------------ the comment fits GitHub


@pytest.mark.slow
def test_a_pull_request_adding_2000_cases_gets_a_comment_github_accepts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: 261,319 characters, which GitHub refuses (at most 65,536): nothing was posted."""
    repo = weather_repo(tmp_path)
    cases = "".join(
        f"  - name: case {i} with a name long enough to fill a table row\n"
        f"    user: Weather in city {i}?\n"
        "    expect: {tool_calls: [{get_weather: {city: Paris}}]}\n"
        for i in range(2000)
    )
    (repo / "suites" / "my_math.yaml").write_text(
        many_calls_suite(1).split("cases:")[0] + "cases:\n" + cases, encoding="utf-8"
    )
    code, _ = cli(
        repo, monkeypatch, "review", "--base-ref", "main", "--markdown", "c.md",
        "--full-markdown", "full.md",
    )  # fmt: skip
    assert code == 3  # every new case needs a run
    comment = (repo / "c.md").read_text(encoding="utf-8")
    full = (repo / "full.md").read_text(encoding="utf-8")
    assert len(comment) <= GITHUB_COMMENT_LIMIT < 65_536 < len(full)
    assert comment.endswith(FULL_REVIEW_NOTE)
    shown = comment.count("| `suites/my_math.yaml` | case ")
    assert 100 < shown < 2000 and full.count("| `suites/my_math.yaml` | case ") == 2000
    assert f"_{2000 - shown} more case rows are in the full review._" in comment
    assert "my\\_math" not in comment  # a code span shows its text as it is


def test_summarise_then_fold_then_cut() -> None:
    table = ["| a | b |", "|---|---|", *(f"| row {i} | x |" for i in range(100))]
    details = ["<details>d</details>"] * 3
    whole = fit_comment("head", table, "tail", details, 100_000)
    assert whole.count("| row ") == 100 and whole.count("<details>") == 3
    folded = fit_comment("head", table, "tail", details, len(whole) - 10)
    assert folded.count("| row ") == 100 and "<details>" not in folded
    summarised = fit_comment("head", table, "tail", details, 1000)
    assert len(summarised) <= 1000 and 0 < summarised.count("| row ") < 100
    assert summarised.endswith(FULL_REVIEW_NOTE)
    cut = fit_comment("head\n" * 500, table, "tail", details, 1000)
    assert len(cut) <= 1000 and cut.endswith(FULL_REVIEW_NOTE) and "| row " not in cut


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("suites/my_math.yaml", "`suites/my_math.yaml`"),
        ("a`b", "``a`b``"),
        ("`x`", "`` `x` ``"),
        ("a|b", "`a|b`"),
    ],
)
def test_code_spans_show_their_text_as_it_is(text: str, shown: str) -> None:
    assert code(text) == shown
    assert code("a|b", in_table=True) == "`a\\|b`"


# ------------------------------------------------------------------ smaller holes


def test_the_default_recordings_path_never_writes_through_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a committed `s.recordings.jsonl -> /elsewhere` had a run append outside."""
    outside = tmp_path / "outside.jsonl"
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "s.yaml").write_text(many_calls_suite(1), encoding="utf-8")
    (tmp_path / "repo" / "s.recordings.jsonl").symlink_to(outside)
    code, output = cli(tmp_path / "repo", monkeypatch, "run", "s.yaml", "--record", "offline")
    assert code == 2
    assert output.strip().splitlines()[0] == (
        "s.recordings.jsonl:1:1: recordings: it is a symbolic link; evalspec never reads or "
        "writes a project's files through a link; replace the link with the file or folder itself"
    )
    assert str(tmp_path) not in output  # where the link points is never shown
    assert not outside.exists()


def test_one_run_directory_is_written_by_one_run_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: two `--resume` of one directory at once each ran (and paid for) every item."""
    from evalspec._runner.run_dir import run_dir_lock

    (tmp_path / "s.yaml").write_text(many_calls_suite(1), encoding="utf-8")
    run = tmp_path / "run"
    with run_dir_lock(run):  # another run holds it
        code, output = cli(tmp_path, monkeypatch, "run", "s.yaml", "--resume", "run")
    assert (code, output.strip().splitlines()[-1]) == (
        2,
        "error: run is being written by another evalspec run; wait for it to end (or stop "
        "it), then resume",
    )
    assert sorted(p.name for p in run.iterdir()) == [".lock"]  # nothing ran
    with run_dir_lock(run):  # released when the holder is done: the next one takes it
        pass


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"properties": [1]}, "properties: [1] is not of type 'object'"),
        ({"type": "object", "properties": {"a": 5}}, "properties/a: 5 is not of type"),
        ({"type": "object", "required": "a"}, "required: 'a' is not of type 'array'"),
        ({"type": "object", "properties": {"a": {"pattern": "(a)\\1"}}}, "cannot be used"),
    ],
)
def test_a_malformed_locked_schema_is_a_suite_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schema: dict, why: str
) -> None:
    """Before: AttributeError / SchemaError tracebacks from `validate`."""
    from evalspec._suite.mcp_lock import lock_path, write_lock

    path = tmp_path / "s.yaml"
    path.write_text(
        "suite: locked\nmodels: [m]\ntools: [{mcp: {command: [never-started]}}]\n"
        "cases: [{name: c, user: hi, expect: {no_tool_calls: true}}]\n",
        encoding="utf-8",
    )
    write_lock(lock_path(path), {"never-started": [{"name": "t", "inputSchema": schema}]})
    code, output = cli(tmp_path, monkeypatch, "validate", "s.yaml")
    assert code == 2
    assert "s.yaml:3:15: tools[0].mcp: the locked inputSchema of 't' is not usable: " in output
    assert why in output


@pytest.mark.slow
def test_tools_refresh_waits_as_long_as_the_suite_says(tmp_path: Path) -> None:
    """Before: a fixed 30 s, whatever `run.timeout` said."""
    from evalspec._tools.mcp_refresh import refresh_lock
    from evalspec.errors import RunError

    path = tmp_path / "s.yaml"
    sleeper = json.dumps([sys.executable, "-c", "import time; time.sleep(60)"])
    path.write_text(
        "suite: hung\nmodels: [m]\nrun: {timeout: 0.25}\n"
        f"tools: [{{mcp: {{command: {sleeper}}}}}]\n"
        "cases: [{name: c, user: hi, expect: {no_tool_calls: true}}]\n",
        encoding="utf-8",
    )
    with pytest.raises(RunError, match=r"no answer within 0\.25 s"):
        refresh_lock(path)
    assert not (tmp_path / "s.tools.lock.json").exists()


# ------------------------------------------------------------------ review's limits and budget


def pull_request(tmp_path: Path, suite_text: str) -> Path:
    """A repository whose pull request (the working tree) adds suites/p.yaml."""
    repo = weather_repo(tmp_path)
    (repo / "suites" / "p.yaml").write_text(suite_text, encoding="utf-8")
    return repo


def rows_suite(rows: int, trials: int) -> str:
    return (
        many_calls_suite(1)
        .replace("cases:\n", f"trials: {trials}\ncases:\n")
        .replace(
            "  - name: weather\n",
            "  - name: 'weather {{ n }}'\n    matrix: {n: ["
            + ", ".join(map(str, range(rows)))
            + "]}\n",
        )
    )


def test_review_refuses_a_plan_over_its_cap_that_a_run_accepts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: 10,000 rows x `trials: 100` (99 KB) took review 41-71 s and 1.7 GB."""
    repo = pull_request(tmp_path, rows_suite(1001, 100))  # 100,100 requests
    code, output = cli(repo, monkeypatch, "review", "--base-ref", "main")
    assert (code, output.strip().splitlines()[-1]) == (
        2,
        "error: the plan has 100100 items (cases × models × trials); the limit is 100000: run "
        "fewer trials or models, or split the suite",
    )
    assert max_plan_items() == 1_000_000  # the author's own run of it would be fine
    with untrusted():
        assert max_plan_items() == 100_000


def test_review_refuses_more_tools_than_its_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: 100,000 tools took 151 s and 1 GB to validate."""
    tools = "".join(
        f"  - {{name: t{i}, parameters: {{type: object, properties: {{a: {{type: string}}}}}}}}\n"
        for i in range(1001)
    )
    text = many_calls_suite(1).replace("tools:\n", "tools:\n" + tools)
    repo = pull_request(tmp_path, text)
    code, output = cli(repo, monkeypatch, "review", "--base-ref", "main")
    assert code == 2
    assert output.splitlines()[0] == (
        "suites/p.yaml:1004:5: tools: the suite defines more than 1000 tools; split the suite, "
        "or raise the limit with EVALSPEC_MAX_TOOLS"
    )
    assert cli(repo, monkeypatch, "validate", "suites/p.yaml")[0] == 0  # own: up to 10,000


TIME_UP_0_001 = (
    "error: review stopped after its time budget of 0.001 s; a pull request may not make "
    "review take longer (whoever runs it may raise EVALSPEC_REVIEW_SECONDS)"
)


@pytest.mark.timeout(300, method="thread")  # no test-runner timer: the review's own signal runs
def test_review_stops_at_its_time_budget_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = pull_request(tmp_path, rows_suite(3, 1))
    monkeypatch.setenv("EVALSPEC_REVIEW_SECONDS", "0.001")  # no review is this fast
    code, output = cli(repo, monkeypatch, "review", "--base-ref", "main")
    assert (code, output.strip().splitlines()[-1]) == (2, TIME_UP_0_001)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no timer left behind
    monkeypatch.delenv("EVALSPEC_REVIEW_SECONDS")
    assert cli(repo, monkeypatch, "review", "--base-ref", "main")[0] == 3  # new cases: no evidence


def watchdog(signum: int, frame: object) -> None:
    raise AssertionError("the caller's timer fired: the review's budget did not stop it")


@pytest.fixture
def callers_watchdog() -> Iterator[None]:
    """A caller with its own SIGALRM handler and a timer running (a watchdog, a test runner's
    time-out): the review's budget holds on a timer thread. Should it not, the watchdog fails
    the test after 30 s instead of letting it hang."""
    previous = signal.signal(signal.SIGALRM, watchdog)
    signal.setitimer(signal.ITIMER_REAL, 30)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def loop_until_stopped(what: str = "review") -> None:
    """A review that never ends on its own: only its time budget stops it."""
    from evalspec._suite.limits import review_budget

    never = threading.Event()
    with review_budget(what):
        while not never.wait(0.01):
            pass


def review_lasting(seconds: float) -> None:
    """A review busy for `seconds`: as long as its budget, it ends just before the budget
    does or is stopped by it."""
    from evalspec._suite.limits import review_budget

    with review_budget("review"):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass


@pytest.mark.timeout(300, method="thread")
def test_review_budget_leaves_the_callers_timer_and_handler_alone(
    monkeypatch: pytest.MonkeyPatch, callers_watchdog: None
) -> None:
    """The review stops at its budget, and the caller's timer still runs, its handler still
    set."""
    monkeypatch.setenv("EVALSPEC_REVIEW_SECONDS", "0.05")
    with pytest.raises(errors.UsageError, match=r"time budget of 0\.05 s"):
        loop_until_stopped()
    assert signal.getsignal(signal.SIGALRM) is watchdog
    assert signal.getitimer(signal.ITIMER_REAL)[0] > 0


@pytest.fixture(
    params=["ignored", "default", "a handler that returns"],
    ids=["SIGINT ignored (nohup, cmd & in a script)", "SIGINT default", "SIGINT handled"],
)
def sigint_set_aside(request: pytest.FixtureRequest) -> Iterator[list[int]]:
    """SIGINT as a caller may have it, none of which raises KeyboardInterrupt; yields the
    signals the caller's handler was called with (a review must not fake a Ctrl-C)."""
    calls: list[int] = []
    disposition: Any = {"ignored": signal.SIG_IGN, "default": signal.SIG_DFL}.get(
        request.param, lambda signum, frame: calls.append(signum)
    )
    previous = signal.signal(signal.SIGINT, disposition)
    try:
        yield calls
        assert signal.getsignal(signal.SIGINT) is disposition
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.timeout(300, method="thread")
def test_review_budget_stops_the_block_whatever_sigint_is_set_to(
    monkeypatch: pytest.MonkeyPatch, callers_watchdog: None, sigint_set_aside: list[int]
) -> None:
    """Before: the timer thread interrupted the main thread as Ctrl-C does, which does nothing
    where SIGINT is ignored or handled without raising: the review ran on, unbounded (a test
    session started with `cmd &` hung here)."""
    monkeypatch.setenv("EVALSPEC_REVIEW_SECONDS", "0.05")
    with pytest.raises(errors.UsageError, match=r"review stopped after its time budget of 0\.05 s"):
        loop_until_stopped()
    assert sigint_set_aside == []


@pytest.mark.timeout(300, method="thread")
def test_review_of_a_pull_request_stops_at_its_budget_whatever_sigint_is_set_to(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    callers_watchdog: None,
    sigint_set_aside: list[int],
) -> None:
    repo = pull_request(tmp_path, rows_suite(3, 1))
    monkeypatch.setenv("EVALSPEC_REVIEW_SECONDS", "0.001")  # no review is this fast
    code, output = cli(repo, monkeypatch, "review", "--base-ref", "main")
    assert (code, output.strip().splitlines()[-1]) == (2, TIME_UP_0_001)
    assert sigint_set_aside == []
    assert signal.getsignal(signal.SIGALRM) is watchdog


@pytest.mark.timeout(300, method="thread")
def test_a_review_ending_as_its_budget_does_leaves_no_time_up_behind(
    monkeypatch: pytest.MonkeyPatch, callers_watchdog: None
) -> None:
    """Before: the timer thread could fire just after the review had ended, and a
    KeyboardInterrupt came out of the caller's code that followed (77 of 2,000 such reviews)."""
    monkeypatch.setenv("EVALSPEC_REVIEW_SECONDS", "0.002")
    strays: list[str] = []
    for _ in range(200):
        try:
            with contextlib.suppress(errors.UsageError):
                review_lasting(0.002)
            sum(range(20_000))  # the caller's next lines
        except BaseException as exc:
            strays.append(type(exc).__name__)
    assert strays == []


@pytest.mark.timeout(300, method="thread")
def test_a_review_in_a_worker_thread_stops_at_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a review outside the main thread (an application's worker) had no budget."""
    repo = pull_request(tmp_path, rows_suite(3, 1))
    monkeypatch.setenv("EVALSPEC_REVIEW_SECONDS", "0.001")
    with ThreadPoolExecutor(1) as pool:
        review = pool.submit(api.review, base_ref="main", cwd=repo)
        with pytest.raises(errors.UsageError) as refused:
            review.result(timeout=60)
    assert str(refused.value) == TIME_UP_0_001.removeprefix("error: ")
    monkeypatch.setenv("EVALSPEC_REVIEW_SECONDS", "0.05")
    with ThreadPoolExecutor(1) as pool:
        loop = pool.submit(loop_until_stopped)
        with pytest.raises(errors.UsageError, match=r"time budget of 0\.05 s"):
            loop.result(timeout=60)


@pytest.mark.slow
def test_a_short_suite_including_many_cases_is_read_a_case_at_a_time(tmp_path: Path) -> None:
    """Before: the streaming reader skipped files under 256 KiB, so a short head including
    50,000 cases was read whole (407 MiB to validate instead of 78 MiB)."""
    from evalspec._suite.stream import load_streaming
    from evalspec._suite.validate import _Builder

    lines = "".join(
        f"- {{name: c{i}, user: 'q {i}', expect: {{tool_calls: [{{get_weather: {{city: x}}}}]}}}}\n"
        for i in range(2500)
    )
    for part in range(2):
        (tmp_path / f"cases{part}.yaml").write_text(lines.replace("name: c", f"name: p{part}c"))
    head = many_calls_suite(1).split("cases:")[0] + (
        "cases:\n  - include: cases0.yaml\n  - include: cases1.yaml\n"
    )
    (tmp_path / "s.yaml").write_text(head, encoding="utf-8")
    streamed = load_streaming(tmp_path / "s.yaml", head, _Builder)
    assert streamed is not None and streamed[1] == 5000
    assert len(load_suite(tmp_path / "s.yaml").cases) == 5000


def test_review_reports_a_pull_request_s_included_file_that_does_not_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a suite whose last item included a file with a YAML syntax error made review
    (and validate, run) trace back with PyYAML's exception, exit 1."""
    repo = weather_repo(tmp_path)
    suite = repo / "suites" / "weather.yaml"
    suite.write_text(suite.read_text() + "  - include: more.yaml\n", encoding="utf-8")
    (repo / "suites" / "more.yaml").write_text(
        "- {name: more, user: 'Weather in Oslo', expect: {tool_calls: [{get_current_weather:"
        " {city: Oslo}}]}}\n- {name: [again, user: 'And Rome', expect: {no_tool_calls: true}}\n",
        encoding="utf-8",
    )
    code, output = cli(repo, monkeypatch, "review", "--base-ref", "main")
    assert code == 2, output
    assert "suites/more.yaml:2:10: YAML syntax error: the [ opened here is not closed" in output
