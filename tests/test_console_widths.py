"""The console at 80 and 120 columns: every reason of two models' conversations, whole.

The support suite with a second model entry and a simulated-user case that fails, run offline
on scripted recordings: in a real pseudo-terminal of each width (`evalspec run`, as a CI log or
a developer's terminal gets it) and in-process with COLUMNS set to each width, every case's
reason, every turn's reason and every user line appears unbroken once the wrapping is undone
(no table border, no word cut), no line is wider than the terminal, and each line says its role.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, evalspec_cli, results_of, support_two_models

WIDTHS = (80, 120)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Z]")


@pytest.fixture(scope="module")
def support(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return support_two_models(tmp_path_factory.mktemp("support"))


def _joined(output: str) -> str:
    """The output with escapes gone and wrapping undone: one space for any run of blanks."""
    return " ".join(_ANSI.sub("", output).replace("\r", "").split())


def _must_show(results: dict[str, Any]) -> list[str]:
    """Every reason of a result that did not pass, of its turns, and what each user said."""
    texts = []
    for r in results["results"]:
        if r["status"] == "pass":
            continue
        texts.append(r["reason"])
        for turn in r["details"].get("turns") or ():
            texts.append(turn["user"])
            if turn.get("status") not in (None, "pass"):
                texts.append(turn["reason"])
    return texts


def _in_pty(args: list[str], width: int, cwd: Path) -> str:
    """`python -m evalspec ARGS` in a pseudo-terminal of `width` x 50, everything it printed."""
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalspec", *args],
        stdin=child,
        stdout=child,
        stderr=child,
        cwd=cwd,
        env=env,
        close_fds=True,
    )
    os.close(child)
    chunks = []
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("no output for 60 s")
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(main)
    return b"".join(chunks).decode("utf-8", errors="replace")


def _check(output: str, must_show: list[str], width: int) -> None:
    joined = _joined(output)
    for said in must_show:
        assert " ".join(said.split()) in joined, f"not shown whole at {width}: {said!r}"
    for line in _ANSI.sub("", output).split("\n"):
        shown = line.rstrip("\r").split("\r")[-1]  # what a terminal keeps of a redrawn line
        assert len(shown.rstrip()) <= width, shown


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.parametrize("width", WIDTHS)
def test_every_reason_is_whole_in_a_real_terminal(support: Path, width: int) -> None:
    out = support.parent / f"run-{width}"
    output = _in_pty(["run", str(support), "--record", "offline", "--out", str(out)], width, ROOT)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    must_show = _must_show(results)
    failed = {(r["case"], r["model"]) for r in results["results"] if r["status"] != "pass"}
    assert ("the customer answers back", "gpt-4o-mini-warm") in failed  # a simulated user's
    assert ("two orders, refund the toaster", "gpt-4o-mini") in failed  # and a scripted one's
    assert len(must_show) >= 10
    _check(output.split("models")[0], must_show, width)
    assert "simulated user (customer) said: It's A17." in _joined(output)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("width", WIDTHS)
def test_every_reason_is_whole_on_a_console_of_that_width(
    support: Path, tmp_path: Path, width: int
) -> None:
    run = ["run", support, "--record", "offline", "--out", tmp_path / "run", "--verbose"]
    done = evalspec_cli(run, env={"COLUMNS": str(width)})  # not a terminal: COLUMNS is its width
    assert done.exit_code == 1, done.output
    output = done.stdout
    results = results_of(tmp_path / "run")["results"]
    must_show = [r["reason"] for r in results if r["status"] != "pass"]
    must_show += [
        str(e.get(key))
        for r in results
        if r["status"] != "pass"
        for e in r["details"].get("turns") or ()
        for key in ("user", "reason")
        if e.get(key) and e.get("status") != "pass"
    ]
    _check(output.split("\nmodels")[0], must_show, width)
    joined = _joined(output)
    # Lines by role: the calls and the tool's answers come from the kept transcripts.
    assert "simulated user (customer) said: Hi, my new kettle arrived broken." in joined
    assert 'model called: refund_order {"order_id": "A17", "reason": "not_needed"}' in joined
    # (read back from the run directory, whose lines keep an object's keys sorted)
    assert 'tool answered: {"days_to_card": 5, "refunded": "A17"}' in joined
    assert "model answered: Order A17 is refunded." in joined
    assert "user said: Please refund the toaster, I don't need it." in joined
    assert "conversation ended: the user said ###STOP###" in joined
    # "expected" is what a judged turn asked for, on its own line: never what a user said.
    after = joined.split("why not passed")[1]
    assert 'expected: refund_order {"order_id": "B22", "reason": "not_needed"}' in after
    assert "expected: Please refund" not in after and "expected: Hi," not in after


def test_a_tool_answer_reads_the_same_from_memory_and_from_its_file(
    support: Path, tmp_path: Path
) -> None:
    """A script that scores transcripts it holds in memory writes the same Markdown as `evalspec
    score` of the same transcripts written to a file (whose lines keep an object's keys sorted):
    a tool's answer is not shown in the tool's own key order in one and sorted in the other."""
    import msgspec

    from evalspec import api
    from evalspec.records import ReportFiles

    run = tmp_path / "run"
    assert evalspec_cli(["run", support, "--record", "offline", "--out", run]).exit_code == 1
    read = api.load_transcripts(run / "transcripts.jsonl")

    def unsorted(value: Any) -> Any:  # as a tool or a plugin hands it over: any key order
        if isinstance(value, dict):
            return {k: unsorted(value[k]) for k in sorted(value, reverse=True)}
        return value

    held = [
        msgspec.structs.replace(
            t,
            tool_calls=tuple(
                msgspec.structs.replace(c, output=unsorted(c.output)) for c in t.tool_calls
            ),
        )
        for t in read
    ]
    suite = api.load_suite(support)
    api.write_reports(api.score(suite, held), ReportFiles(markdown=tmp_path / "memory.md"))
    api.write_reports(api.score(suite, read), ReportFiles(markdown=tmp_path / "file.md"))

    def answers(name: str) -> list[str]:
        text = (tmp_path / name).read_text(encoding="utf-8")
        return re.findall(r"\| tool answered \| ([^\n]*?) \|", text)

    assert answers("memory.md") == answers("file.md")
    assert r'{"days\_to\_card": 5, "refunded": "A17"}' in answers("memory.md")
