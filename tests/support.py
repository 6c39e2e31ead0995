"""Plain helpers that more than one test module uses; the fixtures are in conftest.py.

A test module takes shared helpers from here (or from the fake servers beside it), never from
another test module: importing one runs that module's skips in the importer (the report-scale
tests that need no browser were skipped with the browser tests), a second name (`tests.x` beside
`x`) loads a module twice, and a helper should not move when a test file is split or renamed.
tests/test_layout.py holds every module of tests/ to this.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import functools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fake_openai import FakeOpenAI, text_reply, tool_call_reply, tool_calls_reply
from rate_checks import assert_held_to

from evalspec._tools.toolbench_names import FINISH, function_name, is_api_call, name_key
from evalspec.records import ToolCall, Transcript

if TYPE_CHECKING:
    from click.testing import Result

    from evalspec.plugins import ChatRequest, ChatResponse
    from evalspec.records import Report, ToolSession

ROOT = Path(__file__).resolve().parent.parent

EVERY_EXAMPLE = False
"""Set by conftest.py before any test module is imported: True in the full suite (`--all`)."""
LANES: list[bool] = []
"""EVERY_EXAMPLE of each pytest session open in this process, innermost last (a test may run
pytest.main inside the session, which must leave the outer lane as it found it)."""
MEMORY = Path("/dev/shm")
MEMORY_FREE_NEEDED = 1 << 30
"""Free bytes /dev/shm must have for the default lane to keep its temporary files there."""
FAST_LANE_SHARE = 10
"""The default lane runs a property test on a tenth of its examples (at least 10)."""


def memory_may_hold_temporary_files() -> bool:
    """Whether the default lane puts its temporary files (tmp_path, and the tempfile module's
    in this process) in memory: where the machine has a /dev/shm and no TMPDIR, TEMP or TMP
    chose a place. A run's files are fsynced as they are written, 1,440 times in the lane, 3.4 s
    of its wall time on a disk. `--all` keeps the system's place, and so does a machine whose
    /dev/shm is small (a container's is 64 MiB by default; the lane leaves ~45 MiB a session and
    pytest keeps three)."""
    if any(os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")):
        return False
    if not (MEMORY.is_dir() and os.access(MEMORY, os.W_OK | os.X_OK)):
        return False
    free = os.statvfs(MEMORY)
    return free.f_bavail * free.f_frsize >= MEMORY_FREE_NEEDED


WHOLE_MODULE_SLOW = re.compile(
    r"^pytestmark\s*=\s*(?:pytest\.mark\.slow\b|\[[^\]]*\bpytest\.mark\.slow\b)", re.MULTILINE
)
"""`pytestmark = pytest.mark.slow` (or a list holding it) at a module's top level."""


def marks_module_slow(path: Path) -> bool:
    """Whether every test of the module at `path` is marked slow, by its module-level mark: the
    default lane then leaves the module unimported (a browser's, Ray's or MkDocs's import cost
    seconds of collection only to deselect what it collected)."""
    return path.suffix == ".py" and bool(WHOLE_MODULE_SLOW.search(path.read_text("utf-8")))


def examples(count: int) -> int:
    """How many examples a property test asking for `count` runs in this lane: all of them with
    `--all` (CI), a tenth in the default lane, where the same properties are checked without the
    seconds of the long search."""
    return count if EVERY_EXAMPLE else max(10, count // FAST_LANE_SHARE)


def fuzz_settings() -> Any:
    """Hypothesis settings of a fuzz test: reproducible (derandomized, no example database),
    no deadline, `examples(300)` examples in this lane."""
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=examples(300),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --------------------------------------------------------------------------------- transcripts


def transcript(
    case: str,
    *calls: tuple[str, dict | None],
    model: str = "m",
    trial: int = 0,
    final: str | None = None,
    error: str | None = None,
) -> Transcript:
    """A transcript whose model made `calls` (name, arguments) in order."""
    return Transcript(
        item_id=f"{case}-{model}-{trial}",
        case=case,
        model=model,
        trial=trial,
        tool_calls=tuple(
            ToolCall(name=n, arguments=a, raw_arguments="" if a is not None else "{bad")
            for n, a in calls
        ),
        final_answer=final,
        error=error,
    )


def critic(kind: str, params: Mapping[str, Any]) -> Any:
    """The critic a suite names `kind` with these options, found as scoring finds it: the
    registry's entry (`evalspec.plugins.find`), built by its `from_params`."""
    from evalspec import plugins

    entry = plugins.find("critic", kind)
    assert entry is not None, f"no critic {kind!r}"
    return entry.impl.from_params(dict(params))


@dataclasses.dataclass(frozen=True)
class Called:
    """What one call of a tool answered, and the world after it."""

    output: Any
    error: str | None
    state: Any


def call_tool(tool: Mapping[str, Any], state: Any, arguments: dict[str, Any]) -> Called:
    """`tool` (as a suite writes it) called once by hand on `state` (see `tools_on`)."""
    session = tools_on([tool], state)
    answer = session.call(tool.get("name", "t"), arguments)
    return Called(answer.output, answer.error, session.state)


def tools_on(tools: Sequence[Mapping[str, Any]], state: Any) -> ToolSession:
    """The tools (as a suite writes them) of a suite whose state is `state`, to call by hand
    (`evalspec.api.tool_session`). A tool written as a bare `behavior` (no name) is tool `t`
    taking the arguments its behaviour names."""
    from evalspec.api import load_suite, tool_session

    named = []
    for tool in tools:
        if "name" not in tool:
            names = sorted(set(re.findall(r"\$\{args\.(\w+)", json.dumps(tool["behavior"]))))
            properties = {name: {} for name in names}
            tool = {"name": "t", "parameters": {"type": "object", "properties": properties}, **tool}
        named.append(tool)
    suite = {
        "suite": "tools",
        "models": ["m"],
        "state": state,
        "tools": named,
        "cases": [{"name": "c", "user": "hi", "expect": {"no_tool_calls": True}}],
    }
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tools.yaml"
        path.write_text(json.dumps(suite), encoding="utf-8")
        return tool_session(load_suite(path))


@dataclasses.dataclass(frozen=True)
class Evaluated:
    """One evaluator's line of a report: its score, whether it passed, its justification."""

    score: float
    passed: bool
    justification: dict[str, Any]


def evaluated(
    transcript: Transcript, kind: str, options: dict[str, Any], expected: list[Any] | None = None
) -> Evaluated:
    """The evaluator `kind` with these options, held by the one case of a suite (expecting the
    `expected` calls, else the calls the transcript made), scored on `transcript` by
    `evalspec.api.score`."""
    from msgspec.structs import replace

    from evalspec.api import load_suite, score

    calls = [call.name for call in transcript.tool_calls]
    named = [o["name"] for o in options.get("tool_outputs", [])]
    tools = sorted({*calls, *named, *(c["tool"] for c in expected or [])})
    suite = {
        "suite": "evaluated",
        "models": ["m"],
        "tools": [{"name": name, "parameters": {"type": "object"}} for name in tools],
        "cases": [
            {
                "name": "c",
                "user": "run the pipeline",
                "expect": {"tool_calls": expected or [{"tool": name} for name in calls]},
                "evaluators": [{kind: options}],
            }
        ],
    }
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "evaluated.yaml"
        path.write_text(json.dumps(suite), encoding="utf-8")
        one = replace(transcript, case="c", model="m")
        (result,) = score(load_suite(path), [one]).results
    (row,) = [r for r in result.rows if r.field == kind]
    return Evaluated(result.evaluators[kind], row.match, result.details[kind])


def fresh_session(suite: Any) -> Any:
    """A new conversation of `suite`'s first case, its tools called by hand
    (`evalspec.api.tool_session`)."""
    from evalspec.api import tool_session

    return tool_session(suite, suite.cases[0].name)


# ------------------------------------------------------------------ commands, ports, git repos


def cli(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 60, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """The real `evalspec` command, in a child process, from the repository root (or `cwd`)."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("COLUMNS", None)
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *map(str, args)],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
    )


def refused_suite(path: Path, text: str) -> str:
    """Write `text` as a suite at `path` and validate it (in process); what it printed,
    after checking it was refused as a user should see it (exit 2, no traceback)."""
    path.write_text(text, encoding="utf-8")
    done = in_process("validate", path)
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Traceback" not in out
    return out


@functools.cache
def _command() -> Any:
    """The command line as click runs it, built once: typer builds it anew from the application
    at every call (27 ms, most of an in-process command's cost), and nothing a test changes
    reaches what it builds."""
    import typer.main

    from evalspec._cli import app

    return typer.main.get_command(app)


def command_tree() -> Any:
    """The `evalspec` command as click sees it (its `commands`, each command's `params`): what
    `evalspec --help` and each command's help are printed from, for a test that checks every
    option of every command."""
    return _command()


def evalspec_cli(args: Sequence[str | Path], **invoke: Any) -> Result:
    """`evalspec ARGS` as a user types it, run in this process by typer's CliRunner (`env=`,
    `input=`, `catch_exceptions=` as it takes them), on the command built once. The one place
    the tests reach the command's application object: a move inside evalspec._cli changes
    this function, not every test."""
    from unittest import mock

    from typer import testing

    from evalspec._cli import app

    with mock.patch.object(testing, "_get_command", lambda _: _command()):
        return testing.CliRunner().invoke(app, [str(arg) for arg in args], **invoke)


def in_process(
    *args: str | Path, env: dict[str, str | None] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """What `cli` returns, from the command run in this process in `cwd` with `env` added to
    the environment: the same exit code and output without a child's start-up (a second or
    more each). An error that escapes the command fails the test, as a traceback would."""
    before = Path.cwd()
    os.chdir(cwd)
    try:
        done = evalspec_cli(args, env={"COLUMNS": None, **(env or {})})  # as cli() leaves it
    finally:
        os.chdir(before)
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return subprocess.CompletedProcess(
        list(map(str, args)), done.exit_code, done.stdout, done.stderr
    )


def shown(path: Path) -> str:
    """A file's name as evalspec's messages show it: relative to the working directory when
    it is under it, else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def evalspec_import(*args: str) -> Result:
    """`evalspec import ARGS`, in process."""
    return evalspec_cli(["import", *args])


def results_of(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "results.json").read_text(encoding="utf-8"))


def many_cases_suite(cases: int) -> str:
    """A suite of `cases` one-call cases (c0, c1, ...), each expecting t(id=r<i>)."""
    lines = [
        "suite: many",
        "models: [{name: m, model: x}]",
        "critics: {id: binary}",
        "tools: [{name: t, parameters: {type: object, properties: {id: {type: string}}}}]",
        "cases:",
    ]
    lines += [
        f"  - {{name: c{i}, user: 'q {i}', expect: {{tool_calls: [{{t: {{id: r{i}}}}}]}}}}"
        for i in range(cases)
    ]
    return "\n".join(lines) + "\n"


def console_report(
    suite: Path,
    transcripts: Path | Sequence[Transcript],
    *,
    width: int = 160,
    verbose: bool = False,
) -> str:
    """What `evalspec score SUITE -t TRANSCRIPTS --allow-stale` prints on a terminal `width`
    columns wide: the console report a person reads. Transcripts made in memory are written
    beside the suite first, as a user's would be."""
    if not isinstance(transcripts, Path):
        from evalspec import api

        written = suite.with_name(suite.stem + ".transcripts.jsonl")
        api.write_transcripts(written, list(transcripts))
        transcripts = written
    args = ["score", suite, "-t", transcripts, "--allow-stale", *(["-v"] if verbose else [])]
    done = evalspec_cli(args, env={"COLUMNS": str(width)})
    assert done.exit_code in (0, 1), done.output
    return done.stdout


def refuse_sockets(monkeypatch: Any) -> None:
    """Make every outgoing connection fail loudly: an offline replay must open none."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a socket was opened")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def serving(monkeypatch: Any, key_env: str, responder: Any) -> Iterator[Any]:
    """A fake OpenAI server on 127.0.0.1 answering with `responder`, its key variable set:
    the body of a test module's `server` fixture (`yield from serving(...)`)."""
    from fake_openai import FakeOpenAI

    monkeypatch.setenv(key_env, "sk-test-" + key_env.lower())
    with FakeOpenAI(responder) as fake:
        yield fake


def serve_in_thread(server: Any) -> threading.Thread:
    """Run a socketserver's `serve_forever` in a daemon thread, polling every 50 ms: its
    `shutdown()` waits for the next poll, half a second per test at the default interval."""
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    return thread


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def suites_repo(tmp_path: Path, suites: Path) -> Path:
    """A git repository holding `suites` (as `suites/`) committed on `main`, `pr` checked out:
    where a test plays a pull request."""
    repo = tmp_path / "repo"
    shutil.copytree(suites, repo / "suites")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


@dataclasses.dataclass(frozen=True)
class Reviewed:
    """What `evalspec review` says of one pull request: its JSON (`--json`) and its console
    text, and the lines that name the suite's changes, by where review puts them."""

    data: dict[str, Any]
    console: str

    @property
    def suite(self) -> dict[str, Any]:
        (suite,) = self.data["suites"]
        return suite

    def named(self, case: str) -> list[str]:
        """The `changed:` lines under one case."""
        return next(c["named"] for c in self.suite["changes"] if c["case"] == case)

    def causes(self, case: str) -> list[str]:
        return next(c["causes"] for c in self.suite["changes"] if c["case"] == case)

    def lines(self) -> list[str]:
        """Every line that names a change: under each case, every case's, the suite's other
        changes, and each cause."""
        s = self.suite
        out = [*s["suite_wide"], *s["suite_changes"]]
        return out + [n for c in s["changes"] for n in (*c["named"], *c["causes"])]


def review_change(
    tmp_path: Path,
    suite: str,
    replacements: Sequence[tuple[str, str]],
    *,
    files: Mapping[str, str] | None = None,
    base: Sequence[tuple[str, str]] = (),
    base_files: Mapping[str, str] | None = None,
    allow_stale: bool = True,
) -> Reviewed:
    """A pull request that makes `replacements` (each old text once) in the example suite
    `suites/<suite>.yaml` and writes `files` beside it, reviewed against `main` (every
    example suite with its shipped recordings, the suite first edited by `base` and
    `base_files`), offline: through `evalspec.api.review` for the data and the command for
    the console text (`--allow-stale` unless told not)."""
    from evalspec import api

    shipped = tmp_path / "shipped"
    shutil.copytree(ROOT / "suites", shipped)
    _edit_suite(shipped, suite, base, base_files)
    repo = suites_repo(tmp_path, shipped)
    _edit_suite(repo / "suites", suite, replacements, files)
    pattern = [f"suites/{suite}.yaml"]
    result = api.review(pattern, base_ref="main", allow_stale=allow_stale, cwd=repo)
    args = ("review", *pattern, "--base-ref", "main", *(["--allow-stale"] * allow_stale))
    console = in_process(*args, cwd=repo, env={"COLUMNS": "400"})
    assert "Traceback" not in console.stderr, console.stderr
    assert console.returncode == result.exit_code, console.stdout + console.stderr
    return Reviewed(result.to_dict(), console.stdout)


def _edit_suite(
    folder: Path,
    suite: str,
    replacements: Sequence[tuple[str, str]],
    files: Mapping[str, str] | None,
) -> None:
    path = folder / f"{suite}.yaml"
    text = path.read_text(encoding="utf-8")
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    for name, content in (files or {}).items():
        (folder / name).write_text(content, encoding="utf-8")


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` as a fixed committer; its output."""
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def review_offline(
    repo: Path, key_env: str, *, plugins: Sequence[str] = (), env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`evalspec review --base-ref main --json` in `repo` with no API key (`key_env` emptied):
    what a pull request's check runs, replaying recordings only; `plugins` are the installed
    plugins the base's workflow trusts (`--plugin`), `env` more of the environment."""
    trusted = [arg for name in plugins for arg in ("--plugin", name)]
    return subprocess.run(
        [sys.executable, "-m", "evalspec", "review", "--base-ref", "main", "--json", *trusted],
        capture_output=True,
        text=True,
        cwd=repo,
        timeout=240,
        env={**os.environ, **(env or {}), key_env: ""},
    )


# ------------------------------------------------------------------- OpenAI-style requests


def user_text(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def complete(provider: Any, request: ChatRequest) -> ChatResponse:
    """One request through a provider, which is then closed."""

    async def go() -> ChatResponse:
        try:
            return await provider.complete(request)
        finally:
            await provider.aclose()

    return asyncio.run(go())


# ------------------------------------------------- the end-to-end suite (tests/test_run_e2e.py)

KEY_ENV = "EVALSPEC_TEST_KEY"
"""The variable the end-to-end suite's models read their key from."""

E2E_SUITE = """\
suite: e2e
models:
  - {{name: m1, model: fake-1, base_url: "{url}", api_key_env: {key_env}}}
  - {{name: m2, model: fake-2, base_url: "{url}", api_key_env: {key_env}}}
run: {{timeout: {timeout}, retries: {retries}, concurrency: 4, max_turns: {max_turns}, \
mode: {mode}}}
critics: {{city: binary, a: binary, b: binary}}
tools:
  - name: get_weather
    description: Current weather for a city.
    parameters:
      type: object
      properties: {{city: {{type: string}}}}
      required: [city]
    responses:
      - when: {{city: Paris}}
        output: {{temp: 21}}
      - output: {{temp: 5}}
  - name: add
    description: Add two numbers.
    parameters:
      type: object
      properties: {{a: {{type: number}}, b: {{type: number}}}}
      required: [a, b]
    responses:
      - output: {{sum: 5}}
cases:
  - name: weather paris
    user: What is the weather in Paris?
    expect:
      tool_calls: [{{get_weather: {{city: Paris}}}}]
  - name: weather two cities
    user: Weather in Paris and Oslo?
    expect:
      tool_calls: [{{get_weather: {{city: Paris}}}}, {{get_weather: {{city: Oslo}}}}]
  - name: add numbers
    user: Add 2 and 3
    expect:
      tool_calls: [{{add: {{a: 2, b: 3}}}}]
"""


def write_e2e_suite(
    directory: Path,
    url: str,
    *,
    timeout: float = 30,
    retries: int = 2,
    max_turns: int = 4,
    mode: str = "agent",
    key_env: str = KEY_ENV,
    extra: str = "",
) -> Path:
    """The end-to-end suite in `directory` (e2e.yaml), its models pointing at `url`."""
    path = directory / "e2e.yaml"
    text = E2E_SUITE.format(
        url=url, key_env=key_env, timeout=timeout, retries=retries, max_turns=max_turns, mode=mode
    )
    path.write_text(text + extra, encoding="utf-8")
    return path


def scripted(body: dict[str, Any]) -> Any:
    """A good model (fake-1) and a careless one (fake-2, adds the wrong numbers)."""
    user = user_text(body)
    if tool_messages(body):
        return text_reply("Here you are: " + tool_messages(body)[-1]["content"])
    if "two cities" in user or "Paris and Oslo" in user:
        return tool_calls_reply(
            ("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})
        )
    if "Paris" in user:
        return tool_call_reply("get_weather", {"city": "Paris"})
    if body.get("model") == "fake-2":
        return tool_call_reply("add", {"a": 2, "b": 4})
    return tool_call_reply("add", {"a": 2, "b": 3})


def run_api(
    suite_path: Path, run_dir: Path, *, cases: list[str] | None = None, **plan_kw: Any
) -> tuple[Report, list[Any]]:
    """Run a suite through the Python API and score it: the report and the transcripts."""
    from evalspec import api
    from evalspec.records import RunOptions

    suite = api.load_suite(suite_path)
    plan = api.compile_plan(suite, cases=cases, **plan_kw)
    outcome = api.run_plan(plan, RunOptions(run_dir=run_dir))
    return api.score(suite, outcome.transcripts), outcome.transcripts


# ----------------------------------------- the hostile-endpoint suite (tests/test_call_faults.py)

FAULT_KEY = "sk-fault-MODEL-key-1234567"
FAULT_SIM_KEY = "sim-SECRET-key-7654321"
FAULT_JUDGE_KEY = "judge-SECRET-key-999999"
FAULT_HEADER_SECRET = "hdr-SECRET-value-424242"
FAULT_URL_USER, FAULT_URL_PASSWORD = "svc", "pw-SECRET-31337"
FAULT_ENV = {
    "FAULT_KEY": FAULT_KEY,
    "FAULT_SIM_KEY": FAULT_SIM_KEY,
    "FAULT_JUDGE_KEY": FAULT_JUDGE_KEY,
    "FAULT_HDR": FAULT_HEADER_SECRET,
}
"""The secrets the fault suite's model, simulator, judge and header read, by variable."""

FAULT_SUITE = """\
suite: faults
models:
  - name: m
    model: fault-model
    base_url: "{model_url}"
    api_key_env: FAULT_KEY
    headers: {{X-Team: search, X-Token: "${{FAULT_HDR}}"}}
run: {{timeout: {timeout}, retries: 1, concurrency: 2, max_turns: 3{run_extra}}}
tools:
  - name: get_weather
    description: Current weather for a city.
    parameters:
      type: object
      properties: {{city: {{type: string}}, note: {{type: string}}}}
      required: [city]
    simulate: {{model: sim-model, base_url: "{sim_url}", api_key_env: FAULT_SIM_KEY}}
cases:
  - name: paris
    user: What is the weather in Paris?
    expect:
      tool_calls: [{{get_weather: {{city: Paris}}}}]
      final_answer:
        judge: {{criteria: says the weather, model: judge-model, base_url: "{judge_url}",
                 api_key_env: FAULT_JUDGE_KEY}}
"""


def write_fault_suite(
    directory: Path, model: str, judge: str, sim: str, timeout: float = 2, run_extra: str = ""
) -> Path:
    """A one-case suite (faults.yaml) whose model, LLM judge and tool simulator are the three
    URLs given, each with its own secret."""
    path = directory / "faults.yaml"
    path.write_text(
        FAULT_SUITE.format(
            model_url=model, judge_url=judge, sim_url=sim, timeout=timeout, run_extra=run_extra
        ),
        encoding="utf-8",
    )
    return path


def fault_cli(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real `evalspec` command with the fault suite's secrets in its environment."""
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **FAULT_ENV},
        cwd=ROOT,
        timeout=timeout,
    )


# ----------------------------------------- BFCL answers and mutations (tests/test_bfcl_scoring.py)

Calls = list[tuple[str, dict[str, Any]]]
BFCL_MODEL = "bfcl-test"
BFCL_EVAL_ABSENT = (
    "bfcl-eval is not installed (pip install --no-deps bfcl-eval==2026.3.23; "
    ".ci/run runs these tests in .venv-diff, where it is)"
)


def first_answer(record: dict, truth: list[dict]) -> Calls:
    """The first acceptable value of every argument; "" (leave out) is not acceptable for a
    required argument, which BFCL checks first (simple_python_200 lists "" first for one)."""
    from evalspec._interop.bfcl import first_value

    docs = {f["name"]: f for f in record["function"]}
    calls = []
    for entry in truth:
        ((name, choices_by_param),) = entry.items()
        params = docs[name]["parameters"]
        args = {}
        for p, choices in choices_by_param.items():
            if p in params["required"]:
                choices = [c for c in choices if c != ""]
            if choices and choices[0] != "":
                args[p] = first_value(choices, params["properties"].get(p))
        calls.append((name, args))
    return calls


def last_answer(record: dict, truth: list[dict]) -> Calls:
    """The last acceptable value of every argument ("" = left out), in reverse call order."""
    from evalspec._interop.bfcl import first_value

    docs = {f["name"]: f for f in record["function"]}
    calls = []
    for entry in reversed(truth):
        ((name, choices_by_param),) = entry.items()
        params = docs[name]["parameters"]
        args = {}
        for p, choices in choices_by_param.items():
            if p in params["required"]:
                choices = [c for c in choices if c != ""]
            if choices and choices[-1] != "":
                args[p] = first_value(choices[-1:], params["properties"].get(p))
        calls.append((name, args))
    return calls


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + " zz"
    if isinstance(value, list):
        return value[:-1] if value else ["zz"]
    if isinstance(value, dict):
        if not value:
            return {"zz": 1}
        key = next(iter(value))
        return {**value, key: _changed(value[key])}
    return "zz"


def _retyped(value: Any) -> Any:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return 7
    if isinstance(value, list | dict):
        return json.dumps(value)
    return 7


def bfcl_mutations(category: str, index: int, record: dict, truth: list[dict]) -> dict[str, Calls]:
    """Every mutation that applies to this record, by name (listed in test_bfcl_scoring.py)."""
    base = first_answer(record, truth)
    docs = {f["name"]: f for f in record["function"]}
    k = index % len(base)
    name, args = base[k]
    doc = docs[name]
    props = doc["parameters"]["properties"]
    choices = next(iter(truth[k].values()))
    out: dict[str, Calls] = {"first_answer": base}

    def with_call(new_name: str, new_args: dict[str, Any]) -> Calls:
        calls = copy.deepcopy(base)
        calls[k] = (new_name, new_args)
        return calls

    def pick(params: list[str]) -> str | None:
        return params[index % len(params)] if params else None

    others = [f["name"] for f in record["function"] if f["name"] != name]
    out["wrong_function"] = with_call(others[0] if others else name + "_v2", args)
    target = pick(list(args))
    if target is not None:
        out["wrong_value"] = with_call(name, {**args, target: _changed(args[target])})
        out["wrong_type"] = with_call(name, {**args, target: _retyped(args[target])})
    floats = [
        p
        for p, v in args.items()
        if props.get(p, {}).get("type") == "float" and isinstance(v, float) and v.is_integer()
    ]
    if (p := pick(floats)) is not None:
        out["int_for_float"] = with_call(name, {**args, p: int(args[p])})
    required = [p for p in doc["parameters"]["required"] if p in args]
    if (p := pick(required)) is not None:
        out["missing_required"] = with_call(name, {a: v for a, v in args.items() if a != p})
    optional = [
        p for p in args if "" in choices.get(p, []) and p not in doc["parameters"]["required"]
    ]
    if (p := pick(optional)) is not None:
        out["missing_optional"] = with_call(name, {a: v for a, v in args.items() if a != p})
    out["extra_unknown_argument"] = with_call(name, {**args, "zz_unknown": 1})
    texts = [p for p, v in args.items() if isinstance(v, str) and " " in v]
    if (p := pick(texts)) is not None:
        restyled = args[p].upper().replace(" ", "_")
        out["text_restyled"] = with_call(name, {**args, p: restyled})
    out["last_answer"] = last_answer(record, truth)
    out["duplicate_call"] = [*copy.deepcopy(base), copy.deepcopy(base[0])]
    if category == "parallel" and len(base) > 1:
        out["parallel_reordered"] = list(reversed(copy.deepcopy(base)))
        out["parallel_call_dropped"] = copy.deepcopy(base[:-1])
    return out


def bfcl_transcript(record_id: str, mutation: str, calls: Calls) -> Transcript:
    """The transcript of a model (BFCL_MODEL) that made `calls` for one record."""
    return Transcript(
        item_id=f"{record_id}:{mutation}",
        case=record_id,
        model=BFCL_MODEL,
        tool_calls=tuple(
            ToolCall(name=n, arguments=a, raw_arguments=json.dumps(a), id=f"c{i}")
            for i, (n, a) in enumerate(calls)
        ),
        source="import:bfcl",
    )


# ------------------------------------ two models, two limits (tests/test_model_rate_limits.py)

RPM_KEY_ENV = "EVALSPEC_RPM_TEST_KEY"
FAST_RPM, SLOW_RPM = 300, 120
"""One request per 0.2 s and per 0.5 s."""
RPM_CASES = 8


def add_answer(body: dict[str, Any]) -> Any:
    """A model that calls add(A, B) for "What is A plus B?"."""
    a, b = (
        int(x) for x in user_text(body).removeprefix("What is ").removesuffix("?").split(" plus ")
    )
    return tool_call_reply("add", {"a": a, "b": b})


def write_two_model_suite(directory: Path, fast_url: str, slow_url: str) -> Path:
    """Two models with their own limits, one per server; no run-wide limit."""
    models = [
        {"name": "fast", "model": "m", "base_url": fast_url, "requests_per_minute": FAST_RPM},
        {"name": "slow", "model": "m", "base_url": slow_url, "requests_per_minute": SLOW_RPM},
    ]
    for m in models:
        m["api_key_env"] = RPM_KEY_ENV
    lines = [
        "suite: own-limits",
        f"models: {json.dumps(models)}",
        "run: {mode: single_turn, concurrency: 8, retries: 0}",
        "critics: {a: binary, b: binary}",
        "tools: [{name: add, parameters: {type: object, properties: {a: {type: number}, "
        "b: {type: number}}}}]",
        "cases:",
    ]
    for i in range(RPM_CASES):
        lines.append(
            f"  - {{name: c{i}, user: 'What is {i} plus 1?', "
            f"expect: {{tool_calls: [{{add: {{a: {i}, b: 1}}}}]}}}}"
        )
    path = directory / "limits.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def assert_each_held_to_its_own_rate(fast: FakeOpenAI, slow: FakeOpenAI, began: float) -> None:
    """Each server got every case, each no sooner than its own limit allows after the run
    began (tests/rate_checks.py: load can only make arrivals later)."""
    for server, rpm in ((fast, FAST_RPM), (slow, SLOW_RPM)):
        arrivals = [r.at for r in server.requests]
        assert len(arrivals) == RPM_CASES
        assert_held_to(rpm, began, arrivals)


# ------------------- the support suite with two models (tests/test_console_widths.py, the page)


def support_two_models(directory: Path) -> Path:
    """suites/support.yaml with a second evaluated model and its simulated case made to fail,
    its answers recorded for both models from examples/scripted_model.py."""
    sys.path.insert(0, str(ROOT / "examples"))
    from scripted_model import SUPPORT, ScriptedProvider

    from evalspec.api import load_suite, record_answers

    text = (ROOT / "suites" / "support.yaml").read_text(encoding="utf-8")
    second = (
        "  - name: gpt-4o-mini-warm\n    model: gpt-4o-mini\n    api_key_env: OPENAI_API_KEY\n"
        "    params: {temperature: 1, seed: 7}\n"
    )
    text = text.replace("  - name: customer\n", second + "  - name: customer\n", 1)
    # the simulated customer's case now expects a replacement: it fails with a reason
    text = text.replace(
        "      final_answer: {contains: refunded}\n      state: {/orders/0/status: refunded}",
        "      final_answer: {contains: replacement}\n      state: {/orders/0/status: refunded}",
    )
    assert "contains: replacement" in text
    path = directory / "support.yaml"
    path.write_text(text.replace("../schemas/", str(ROOT / "schemas") + "/"), encoding="utf-8")
    record_answers(load_suite(path), ScriptedProvider(SUPPORT))
    return path


# ------------------------------------------------------------------ pages of the documentation
def fenced_blocks(page: Path) -> list[tuple[str, str]]:
    """A documentation page's fenced blocks, in order: (language, text)."""
    blocks: list[tuple[str, str]] = []
    language: str | None = None
    lines: list[str] = []
    for line in page.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("```") and language is None:
            language, lines = line[3:].strip(), []
        elif line.startswith("```"):
            blocks.append((language or "", "".join(lines)))
            language = None
        elif language is not None:
            lines.append(line)
    return blocks


def shown_commands(page: Path) -> list[tuple[str, list[str]]]:
    """Each `$ command` of a page's console blocks (no language), in order, with the lines
    printed under it."""
    shown: list[tuple[str, list[str]]] = []
    for language, block in fenced_blocks(page):
        for line in block.splitlines() if language == "" else []:
            if line.startswith("$ "):
                shown.append((line[2:], []))
            elif shown:
                shown[-1][1].append(line.rstrip())
    return shown


def result_table(lines: list[str], *models: str) -> list[str]:
    """The result table and the models' summaries: what does not depend on time or place."""
    kept = [line.rstrip() for line in lines if line[:1] in "┏┃┡│└"]
    kept += [line.rstrip() for line in lines if line.startswith(tuple(f"{m}: " for m in models))]
    return kept


# ------------------------------------------------ a fake clock for the model calls (conftest)
class FakeClock:
    """Time that passes only when something waits, and at once. A sleep of s seconds moves the
    clock to at least s after it began (sleeps that begin together overlap, as on a real
    clock); a server's `pause` moves it on to the next attempt deadline at most, so a time-out
    fires when due and never later. `deadline` is asyncio.timeout on this clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []
        self._lock = threading.Lock()
        self._deadlines: dict[int, tuple[float, asyncio.AbstractEventLoop, asyncio.Timeout]] = {}

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self._advance_to(self.now + seconds)
        await asyncio.sleep(0)

    def pause(self, seconds: float) -> None:
        """A server thread's wait, up to the deadline of the request it answers at most at a
        time: the client sees its time-out before the server's next byte. It stops when no
        request that was waiting when it began still waits (its client gave up)."""
        # Only the deadlines of requests already waiting: a retry's deadline, set while this
        # thread still pauses for the answer its client gave up on, is not this answer's (it
        # once timed the retry out too, when a loaded machine was slow to answer the retry).
        with self._lock:
            waiting = set(self._deadlines)
        idle = 0
        while seconds > 0 and idle < 20:
            with self._lock:
                due = [at - self.now for k, (at, _, _) in self._deadlines.items() if k in waiting]
            step = min([seconds, *due]) if due else 0.0
            idle = 0 if due else idle + 1
            if step > 0:
                self._advance_to(self.now + step)
                seconds -= step
            time.sleep(0.005)

    def _advance_to(self, when: float) -> None:
        with self._lock:
            self.now = max(self.now, when)
            due = [key for key, (at, _, _) in self._deadlines.items() if at <= self.now + 1e-9]
            for key in due:
                _, loop, timeout = self._deadlines.pop(key)
                loop.call_soon_threadsafe(self._expire, timeout, loop)

    @staticmethod
    def _expire(timeout: asyncio.Timeout, loop: asyncio.AbstractEventLoop) -> None:
        with contextlib.suppress(RuntimeError):  # the block ended meanwhile
            timeout.reschedule(loop.time())

    @contextlib.asynccontextmanager
    async def deadline(self, seconds: float) -> AsyncIterator[asyncio.Timeout]:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(None) as timeout:
            with self._lock:
                self._deadlines[id(timeout)] = (self.now + seconds, loop, timeout)
            try:
                yield timeout
            finally:
                with self._lock:
                    self._deadlines.pop(id(timeout), None)


# ------------------------- StableToolEval's metrics: the oracle the judge and imports are held to


SOPR_VALUES = {"Solved": 1.0, "Unsure": 0.5, "Unsolved": 0.0}
"""StableToolEval's value of each verdict (eval_pass_rate.py), written here so the oracle does
not read evalspec's own copy."""


def api_names(queries: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """Function name -> (tool_name, api_name) over every API of these queries."""
    found: dict[str, tuple[str, str]] = {}
    for query in queries:
        for api in query.get("api_list") or ():
            pair = (api["tool_name"], api["api_name"])
            found.setdefault(function_name(*pair), pair)
            found.setdefault(name_key(function_name(*pair)), pair)
            found.setdefault(f"{pair[0]}_{pair[1]}", pair)
    return found


def has_finish(transcript: Transcript) -> bool:
    """Did the run end its reasoning with a Finish call (any return_type)?

    An imported run carries StableToolBench's own verdict (see `stabletoolbench_nodes.finished`);
    any other run finished when it called Finish.
    """
    if transcript.source.startswith("import:stabletoolbench"):
        return transcript.finish_reason == "finish"
    return any(call.name == FINISH for call in transcript.tool_calls)


def called_apis(
    transcript: Transcript, queries: Iterable[Mapping[str, Any]]
) -> set[tuple[str, str]]:
    """The (tool_name, api_name) pairs a run called, Finish excluded.

    Names are mapped back through the queries' api lists, accepting StableToolBench function
    names (``transfermarkt_details_for_theclique``) and ``<tool>_<api>`` names. A name no API
    of these queries has is ignored: it cannot be in the gold set anyway. Older ToolBench
    names (``4_get_x`` for ``get_4_get_x``) are read too.
    """
    names = api_names(queries)
    found = (
        names.get(call.name) or names.get(name_key(call.name))
        for call in transcript.tool_calls
        if is_api_call(call.name)
    )
    return {pair for pair in found if pair is not None}


def parse_status(value: Any) -> str:
    """``"AnswerStatus.Solved"`` / ``"Solved"`` -> ``"Solved"``; anything unknown -> Unsure."""
    name = str(value).rsplit(".", 1)[-1].strip().capitalize()
    return name if name in SOPR_VALUES else "Unsure"


def sopr_score(status: str, finished: bool = True) -> float:
    """SoPR value of one judged answer; without a Finish call it is Unsolved whatever the judge."""
    if not finished:
        return 0.0
    return SOPR_VALUES[parse_status(status)]


def majority_status(votes: Sequence[str]) -> str:
    """The most common status; ties go to the lower score (a split vote is not a pass)."""
    statuses = [parse_status(v) for v in votes]
    if not statuses:
        return "Unsolved"
    counts = {s: statuses.count(s) for s in SOPR_VALUES}
    best = max(counts.values())
    return min((s for s, c in counts.items() if c == best), key=lambda s: SOPR_VALUES[s])


def sopr_from_pass_rate_results(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read a StableToolEval pass-rate JSON file.

    Returns ``{query_id: {"votes": [...], "status": majority, "sopr": mean}}`` where ``sopr`` is
    the mean of the votes' values (Solved 1, Unsure 0.5, Unsolved 0), the per-query share of
    StableToolEval's pass rate, and ``status`` the majority vote (ties toward the lower status).
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out: dict[str, dict[str, Any]] = {}
    for query_id, record in data.items():
        raw = record.get("is_solved") or {}
        keys = sorted(raw, key=lambda k: int(k) if str(k).isdigit() else 0)
        votes = [parse_status(raw[k]) for k in keys] if isinstance(raw, dict) else []
        if isinstance(raw, list):
            votes = [parse_status(v) for v in raw]
        mean = sum(SOPR_VALUES[v] for v in votes) / len(votes) if votes else 0.0
        out[str(query_id)] = {"votes": votes, "status": majority_status(votes), "sopr": mean}
    return out


def published_votes(example: Path, models: Sequence[str]) -> dict[str, list[str]]:
    """Final answer text -> StableToolEval's published verdict of each round on it, in round
    order, for the runs of `models` in StableToolBench's `data_example` folder."""
    out = {}
    for model in models:
        converted = json.loads(
            (example / f"model_predictions_converted/{model}/G1_instruction.json").read_text(
                encoding="utf-8"
            )
        )
        votes = sopr_from_pass_rate_results(
            example / f"pass_rate_results/{model}/G1_instruction_{model}.json"
        )
        for query_id, record in converted.items():
            answer = json.loads(record["answer"]["final_answer"] or "{}").get("final_answer")
            if answer:
                out[answer] = votes[query_id]["votes"]
    return out


# ------------------------------------------------------------ BFCL records written as suites


def write_suite_yaml(
    questions: Sequence[Mapping[str, Any]],
    answers: Sequence[Mapping[str, Any]] | None,
    out: str | Path,
    *,
    name: str,
    models: Sequence[str] | None = None,
    names: str = "dotted",
) -> list[Path]:
    """The suite(s) `import bfcl` writes for these records, from records in memory; extra
    suites go beside `out` as `<stem>-2.yaml`, ..."""
    from evalspec._interop.bfcl import DEFAULT_MODEL, bfcl_suite_dicts, write_suites

    models = models or (DEFAULT_MODEL,)
    suites = bfcl_suite_dicts(questions, answers, name=name, models=models, names=names)
    return write_suites(Path(out), suites)


def bfcl_checker() -> tuple[Any, Any]:
    """BFCL's ast_checker. Its model registry pulls every model client; the checker only asks
    it whether a model writes `.` as `_`, so a registry answering "no" stands in."""
    name = "bfcl_eval.constants.model_config"
    if name not in sys.modules:
        registry = types.ModuleType(name)
        registry.MODEL_CONFIG_MAPPING = defaultdict(  # type: ignore[attr-defined]
            lambda: types.SimpleNamespace(underscore_to_dot=False)
        )
        sys.modules[name] = registry
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker, Language.PYTHON


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a BFCL file (the tests' data is whole: a refused line is an error)."""
    from evalspec._interop.bfcl import read_numbered

    read = read_numbered(path)
    assert not read.refused, read.refused
    return list(read.records)


# ------------------------------------------------ capture mode and trace import (hostile tests too)


CAPTURE_SUITE = """\
# The team's new suite: no expectations yet.
suite: cap
models:
  - {name: m1, model: m1}
  - {name: m2, model: m2}
tools:
  - name: get_user
    description: Look up a user.
    parameters:
      type: object
      properties:
        user_id: {type: string}
        verbose: {type: boolean}
      required: [user_id]
    responses:
      - output: {name: Ann}
  - name: send
    description: Send a message.
    parameters:
      type: object
      properties:
        to: {type: string}
        text: {type: string}
        when: {type: string, format: date}
        amount: {type: number}
        unit: {type: string, enum: [eur, usd]}
      required: [to, text]
    responses:
      - output: sent
cases:
  - name: look up   # keep this comment
    user: Who is user u-17?
    capture: true
  - capture: true
    name: send note
    user: Tell Ann the report is ready, on 2026-06-02, and pay her 12.5 eur
  - name: judged
    user: hi
    expect: {no_tool_calls: true}   # and this one
"""


CAPTURE_SEND = {
    "to": "Ann",
    "text": "The report is ready {{ secret }}",
    "when": "2026-06-02",
    "amount": 12.5,
    "unit": "eur",
}


CAPTURE_CALLS: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {
    ("look up", "m1"): [("get_user", {"user_id": "u-17", "verbose": False})],
    ("look up", "m2"): [("get_user", {"user_id": "u-17", "verbose": True})],
    ("send note", "m1"): [("send", CAPTURE_SEND)],
    ("send note", "m2"): [("send", CAPTURE_SEND)],
}
"""What each scripted model calls; the text holds template syntax, as a hostile model's may."""


class ScriptedCalls:
    """Calls what CAPTURE_CALLS says on the first request of a turn, then answers in text."""

    def __init__(self, calls: dict[tuple[str, str], Any] = CAPTURE_CALLS) -> None:
        self.calls = calls

    async def complete(self, request: ChatRequest) -> ChatResponse:
        from evalspec.plugins import ChatResponse

        case, model = request.label.split("'")[1], request.label.split("'")[3]
        if request.messages[-1]["role"] == "tool":
            return ChatResponse({"role": "assistant", "content": "done"}, "stop", {}, 0.0)
        users = sum(m["role"] == "user" for m in request.messages)
        calls = self.calls.get((case, model, users), self.calls.get((case, model), []))
        if not calls:
            return ChatResponse({"role": "assistant", "content": "hello"}, "stop", {}, 0.0)
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"c{i}",
                    "type": "function",
                    "function": {
                        "name": n,
                        "arguments": a if isinstance(a, str) else json.dumps(a),
                    },
                }
                for i, (n, a) in enumerate(calls)
            ],
        }
        return ChatResponse(message, "tool_calls", {}, 0.0)

    async def aclose(self) -> None:
        return None


def captured_run(
    tmp_path: Path, text: str = CAPTURE_SUITE, script: Any = None
) -> tuple[Path, Path]:
    """The suite written, its answers recorded from the script, and run offline: (suite, run)."""
    from evalspec import api
    from evalspec.records import RunOptions

    path = tmp_path / "cap.yaml"
    path.write_text(text, encoding="utf-8")
    api.record_answers(api.load_suite(path), ScriptedCalls(script or CAPTURE_CALLS))
    run_dir = tmp_path / "run"
    suite = api.load_suite(path)
    outcome = api.run_plan(api.compile_plan(suite), RunOptions(record="offline", run_dir=run_dir))
    assert all(not t.error for t in outcome.transcripts)
    return path, run_dir


def capture_accept(*args: str | Path) -> Any:
    """`evalspec capture accept ARGS`, in process."""
    return evalspec_cli(["capture", "accept", *args])


def otel_typed(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    return {"stringValue": value if isinstance(value, str) else json.dumps(value)}


def otel_span(trace: str, sid: str, parent: str, start: int, status: int = 1, **attrs: Any) -> dict:
    """One span as the OTLP JSON exporter writes it (typed attribute values)."""
    return {
        "traceId": trace,
        "spanId": sid,
        "parentSpanId": parent,
        "name": str(attrs.get("gen_ai.operation.name", "agent")),
        "startTimeUnixNano": str(start),
        "attributes": [{"key": k, "value": otel_typed(v)} for k, v in attrs.items()],
        "status": {"code": status},
    }


def otel_export(*spans: dict) -> str:
    """One line of the Collector's file exporter: an OTLP export holding `spans`."""
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


def otel_text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def otel_call(cid: str, name: str, **args: Any) -> dict:
    return {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": cid, "name": name, "arguments": args}],
    }


def otel_chat(
    trace: str, sid: str, start: int, inputs: list[dict], outputs: list[dict], **more: Any
) -> dict:
    return otel_span(
        trace,
        sid,
        "root",
        start,
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": json.dumps(inputs),
            "gen_ai.output.messages": json.dumps(outputs),
            **more,
        },
    )


def one_turn_trace(trace: str, city: str) -> list[str]:
    asked = [otel_text("user", f"Weather in {city}?")]
    called = [
        *asked,
        otel_call("w1", "get_weather", city=city),
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "w1", "response": "sunny"}],
        },
    ]
    return [
        otel_export(
            otel_chat(trace, "s1", 1, called, [otel_text("assistant", f"Sunny in {city}.")]),
            otel_span(trace, "root", "", 0),
        )
    ]


def imported_traces(tmp_path: Path, lines: list[str], *args: str) -> tuple[Any, Path, Path]:
    source = tmp_path / "traces.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    suite, runs = tmp_path / "prod.yaml", tmp_path / "prod.jsonl"
    done = evalspec_import(
        "traces", str(source), "--out", str(suite), "--transcripts", str(runs), *args
    )
    return done, suite, runs


BUMP_TOOLS = """\
- name: bump
  parameters: {type: object, properties: {by: {type: integer}}, required: [by]}
  behavior:
    effects: [{increment: /counters/c, by: "${args.by}"}]
    response: ${state/counters/c}
"""
"""A tools file of one stateful tool (`bump` adds `by` to /counters/c and answers the count):
what a tau-bench import is given to replay its runs' calls."""
