"""`evalspec validate` on bad input of every kind: problem lines, exit code 2, never a traceback."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support import in_process

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "invalid"


def _validate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`evalspec validate ARGS` in `cwd`, in process (a child each made this module take
    seconds; test_version_names_the_installed_version runs the real command)."""
    return in_process("validate", *args, cwd=cwd)


def _assert_refused(out: subprocess.CompletedProcess[str], *lines: str) -> None:
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    for line in lines:
        assert line in out.stderr.splitlines(), out.stderr
    assert out.stdout == ""


BAD_INPUTS = {
    "missing file": ("no_such_suite.yaml", "no_such_suite.yaml:1:1: file not found"),
    "binary garbage": ("binary_file.yaml", "binary_file.yaml:1:12: is a binary file"),
    "empty file": ("empty_file.yaml", "empty_file.yaml:1:1: the file is empty"),
    "list at top level": ("top_level_list.yaml", "top_level_list.yaml:2:1: a suite must be"),
    "python tag": ("python_tag.yaml", "python_tag.yaml:6:11: cases[0].user: the tag !!python"),
    "alias bomb": ("alias_bomb.yaml", "alias_bomb.yaml:7:4: this value repeats *aliases"),
    "deep flow nesting": ("deep_nesting_flow.yaml", "deep_nesting_flow.yaml:4:71: the data"),
    "deep block nesting": ("deep_nesting_block.yaml", "deep_nesting_block.yaml:66:127: the"),
    "sandbox escape": ("sandbox_escape.yaml", "sandbox_escape.yaml:6:11: cases[0].user: template"),
    "syntax error": ("unclosed_quote.yaml", "unclosed_quote.yaml:6:11: YAML syntax error"),
    "unknown tool": (
        "unknown_tool_in_expect.yaml",
        "unknown_tool_in_expect.yaml:16:11: cases[0].expect.tool_calls[0]: 'send_dm' is not a "
        "tool of this suite; did you mean 'send_dm_to_user'?",
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD_INPUTS))
def test_bad_input_is_refused_without_a_traceback(kind: str) -> None:
    name, start = BAD_INPUTS[kind]
    out = _validate(name, cwd=CORPUS)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    lines = out.stderr.splitlines()
    assert lines[0].startswith(start), out.stderr
    assert lines[-1] == "1 problem found"


def test_python_tag_runs_nothing(tmp_path: Path) -> None:
    shutil.copy(CORPUS / "python_tag.yaml", tmp_path)
    _assert_refused(_validate("python_tag.yaml", cwd=tmp_path))
    assert list(tmp_path.iterdir()) == [tmp_path / "python_tag.yaml"]


def test_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "suites").mkdir()
    _assert_refused(
        _validate("suites", cwd=tmp_path),
        "suites:1:1: is a directory, not a YAML file; name a .yaml file inside it",
    )


def test_every_problem_is_reported_at_once() -> None:
    out = _validate("several_mistakes_semantic.yaml", cwd=CORPUS)
    _assert_refused(out, "5 problems found")
    assert len(out.stderr.splitlines()) == 6


def test_problems_of_several_files_are_reported_together() -> None:
    out = _validate(
        "misspelt_expect.yaml", "no_such.yaml", str(ROOT / "suites/slack.yaml"), cwd=CORPUS
    )
    _assert_refused(
        out,
        "misspelt_expect.yaml:7:5: cases[0]: unknown key 'expcet'; did you mean 'expect'?",
        "no_such.yaml:1:1: file not found; check the path; run `evalspec init` to create a suite",
        "2 problems found",
    )


def test_many_files_and_globs_print_one_line_on_success(tmp_path: Path) -> None:
    for p in (ROOT / "suites").glob("*.yaml"):
        shutil.copy(p, tmp_path / p.name)
    (tmp_path / "more").mkdir()
    shutil.copy(ROOT / "suites" / "weather.yaml", tmp_path / "more" / "weather2.yaml")
    out = _validate("slack.yaml", "m*.yaml", "more/**/*.yaml", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    lines = out.stdout.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("3 suites valid (")


def test_a_glob_that_matches_nothing_is_an_error(tmp_path: Path) -> None:
    out = _validate("nothing/*.yaml", cwd=tmp_path)
    assert out.returncode == 2
    assert "no file matches" in out.stderr and "Traceback" not in out.stderr


def test_version_names_the_installed_version():
    from importlib.metadata import version

    proc = in_process("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"evalspec {version('evalspec-yaml')}"
