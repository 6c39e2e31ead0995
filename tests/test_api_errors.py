"""An error about an argument names the Python parameter when the API raises it (`gate=`), and
the command's option when the command reports it (`--gate`): the library never quotes a flag,
and one table in the command line maps each parameter to its option.

It reads the command's table of flags (evalspec._cli.flags), the one place the mapping lives.
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support import evalspec_cli

from evalspec import api, errors, records
from evalspec._cli.flags import FLAGS

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "evalspec"
SLACK = ROOT / "suites" / "slack.yaml"
BFCL = ROOT / "tests" / "data" / "bfcl" / "BFCL_v4_simple_python.json"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory holding the Slack suite, its recordings and a directory in the way."""
    monkeypatch.chdir(tmp_path)
    for name in ("slack.yaml", "slack.recordings.jsonl"):
        shutil.copy(SLACK.with_name(name), tmp_path / name)
    (tmp_path / "taken").mkdir()
    yield tmp_path


def _run(**request: Any) -> Callable[[], Any]:
    return lambda: api.run(records.RunRequest(Path("slack.yaml"), record="offline", **request))


BAD_CALLS: dict[str, tuple[str, Callable[[], Any], list[str], str]] = {
    "an unknown gate": (
        "gate",
        lambda: api.diff("slack.yaml", "slack.yaml", "taken", gate="strict"),
        ["diff", "slack.yaml", "slack.yaml", "-t", "taken", "--gate", "strict"],
        "--gate 'strict': choose one of",
    ),
    "a shard not i/n": (
        "shard",
        _run(shard="two"),
        ["run", "slack.yaml", "--record", "offline", "--shard", "two"],
        "--shard takes i/n, like 1/4; got 'two'",
    ),
    "resuming no run": (
        "resume",
        _run(resume=Path("nothing-here")),
        ["run", "slack.yaml", "--record", "offline", "--resume", "nothing-here"],
        "--resume nothing-here: no such run directory",
    ),
    "a report file that is a directory": (
        "markdown",
        lambda: api.run(
            records.RunRequest(Path("slack.yaml"), record="offline"),
            reports=records.ReportFiles(markdown=Path("taken")),
        ),
        ["run", "slack.yaml", "--record", "offline", "--markdown", "taken"],
        "--markdown taken is a directory; name a file to write",
    ),
    "an unknown tool-name rule": (
        "names",
        lambda: api.import_bfcl(BFCL, "out.yaml", names="camel"),
        ["import", "bfcl", str(BFCL), "--out", "out.yaml", "--names", "camel"],
        "--names 'camel': use one of",
    ),
    "a judge's endpoint without a judge": (
        "judge_base_url",
        lambda: api.import_stabletoolbench(
            "queries.json", "out.yaml", judge_base_url="http://127.0.0.1:9"
        ),
        [
            *("import", "stabletoolbench", "queries.json", "--out", "out.yaml"),
            *("--judge-base-url", "http://127.0.0.1:9"),
        ],
        "--judge-base-url and --judge-key-env need --judge MODEL",
    ),
}


@pytest.mark.parametrize("what", BAD_CALLS)
def test_the_api_names_the_parameter_and_never_a_flag(work: Path, what: str) -> None:
    param, call, _, _ = BAD_CALLS[what]
    if what == "a judge's endpoint without a judge":
        (work / "queries.json").write_text("[]", encoding="utf-8")
    with pytest.raises(errors.EvalspecError) as raised:
        call()
    message = str(raised.value)
    assert f"{param}=" in message and param in raised.value.params, message
    assert not re.search(r"(?<![\w-])--[a-z]", message), message


@pytest.mark.parametrize("what", BAD_CALLS)
def test_the_command_names_the_flag(work: Path, what: str) -> None:
    _, _, argv, said = BAD_CALLS[what]
    if what == "a judge's endpoint without a judge":
        (work / "queries.json").write_text("[]", encoding="utf-8")
    done = evalspec_cli(argv)
    assert done.exit_code == 2, done.output
    assert said in done.output and "Traceback" not in done.output
    assert not re.search(r"\b[a-z_]+=", done.output.replace("(git fetch", "")), done.output


@functools.cache
def _error_calls() -> tuple[tuple[Path, ast.Call], ...]:
    """Every error the library (not the command line) builds, with its message: the package
    parsed once for the tests that read them (each parse of it costs most of a second)."""
    return tuple(
        (path, node)
        for path in sorted(LIBRARY.rglob("*.py"))
        if "_cli" not in path.parts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id.endswith(("Error", "Problem", "not_this_kind", "TimeUp"))
    )


def _named_params(call: ast.Call) -> list[str]:
    for keyword in call.keywords:
        if keyword.arg == "params" and isinstance(keyword.value, ast.List | ast.Tuple):
            return [e.value for e in keyword.value.elts if isinstance(e, ast.Constant)]
    return []


API_ONLY = {"tools.py": "tool_session"}
"""Modules of evalspec/_api whose functions no command calls (file -> the function): their
errors name parameters no flag sets."""


def test_every_parameter_an_error_names_has_a_flag() -> None:
    cli_source = "".join(p.read_text(encoding="utf-8") for p in (LIBRARY / "_cli").rglob("*.py"))
    assert not any(function in cli_source for function in API_ONLY.values())
    named = {
        p
        for path, call in _error_calls()
        if not (path.parent.name == "_api" and path.name in API_ONLY)
        for p in _named_params(call)
    }
    checked = set()
    for path in LIBRARY.rglob("*.py"):  # check_output_file(path, "param")
        text = path.read_text(encoding="utf-8")
        checked |= set(re.findall(r"check_output_(?:file|dir)\([^,]+, \"(\w+)\"\)", text))
        checked |= set(re.findall(r"\(files\.\w+, \"(\w+)\"\),", text))
    assert named and checked
    assert (named | checked) - set(FLAGS) == set()


def test_no_library_error_quotes_an_option_of_the_command() -> None:
    """A flag may appear only inside a command to type (`evalspec run ... --resume DIR`,
    `ray start --head`, `pip install --no-deps`), never as the name of what was wrong."""
    options = set(FLAGS.values())
    quoted = []
    for path, call in _error_calls():
        for text in (ast.unparse(arg) for arg in [*call.args, *call.keywords]):
            commands = "evalspec " in text or "pip install" in text or "ray start" in text
            for flag in re.findall(r"--[a-z][\w-]*", text):
                if flag in options and not commands:
                    quoted.append(f"{path.relative_to(ROOT)}:{call.lineno}: {flag}")
    assert quoted == []
