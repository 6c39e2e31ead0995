"""An option that takes one value, given twice: refused with its name (exit 2), for every command.

The parser keeps the last value silently: `judge SUITE -t a.jsonl -t b.jsonl` judged b only and
exited 0, and `score -t a -t b`, `import bfcl -o x -o y` did the same. Options that take many
(`--model`, `--case`, `judge -t`) keep every value.

It walks the command tree as click builds it (support.command_tree): every option of every
command, so a new command is checked without being listed here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support import command_tree, evalspec_cli


def commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command of the CLI with its words (`("import", "bfcl")`)."""
    for name, command in sorted(getattr(group, "commands", {}).items()):
        if hasattr(command, "commands"):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command


ROOT = command_tree()
"""The command tree, built once (27 ms a build)."""


def one_value_options() -> list[tuple[tuple[str, ...], str]]:
    out = []
    for words, command in commands(ROOT):
        for param in command.params:
            multiple = param.multiple or getattr(param, "count", False)
            if param.param_type_name == "option" and not multiple and not param.is_eager:
                out.append((words, param.opts[0]))
    return out


CASES = one_value_options()


def test_every_command_is_checked():
    names = {" ".join(words) for words, _ in CASES}
    assert {"judge", "score", "run", "import bfcl", "review", "import otel"} <= names
    assert len(CASES) > 40


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("words", "option"), CASES, ids=[f"{' '.join(w)} {o}" for w, o in CASES])
def test_a_one_value_option_given_twice_is_refused(words, option, tmp_path):
    command = ROOT
    for word in words:
        command = command.commands[word]
    (param,) = [p for p in command.params if p.opts and p.opts[0] == option]
    args = [option] if param.is_flag else [option, str(tmp_path / "v1")]
    again = [param.opts[-1]] if param.is_flag else [param.opts[-1], str(tmp_path / "v2")]
    done = evalspec_cli([*words, *args, *again])
    assert done.exit_code == 2, done.output
    assert "given 2 times, but it takes one value" in done.output
    assert option in done.output
    assert "Traceback" not in done.output
    assert not any(tmp_path.iterdir())  # refused before anything ran


def test_options_that_take_many_keep_every_value(tmp_path):
    done = evalspec_cli(["judge", str(tmp_path / "s.yaml"), "-t", "a", "-t", "b"])
    assert "given 2 times" not in done.output
    done = evalspec_cli(
        ["import", "bfcl", "q.json", "-o", str(tmp_path / "o.yaml"), "-m", "a", "-m", "b"]
    )
    assert "given 2 times" not in done.output
