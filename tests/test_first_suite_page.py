"""docs/first-suite.md, walked as a reader walks it: its commands print what the page shows.

The page's output was made against a stand-in model server; here a server on 127.0.0.1 answers
the same way (the right city, never the unit), and every command is the page's, run as a
program in a fresh folder. When a message, a score or the table changes, this fails and the
page is brought up to date.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, text_reply, tool_call_reply
from support import fenced_blocks, result_table, shown_commands

pytestmark = pytest.mark.slow

PAGE = Path(__file__).resolve().parents[1] / "docs" / "first-suite.md"


def _stand_in(body: dict[str, Any]) -> Any:
    """A model that looks up the weather of the city asked about, and forgets the unit."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        out = json.loads(last["content"])
        return text_reply(f"It is {out['temperature']} degrees and {out['sky']} right now.")
    city = re.search(r"in (Paris|Tokyo)", last["content"] or "")
    if city:
        return tool_call_reply("get_weather", {"city": city.group(1)})
    return text_reply("You're welcome! Have a nice day.")


def _evalspec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run(
        [sys.executable, "-m", "evalspec", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def _shown_outputs() -> dict[str, list[str]]:
    """Each `$ command` of the page's console blocks -> the lines printed under it."""
    shown: dict[str, list[str]] = {}
    for command, lines in shown_commands(PAGE):
        shown.setdefault(command, []).extend(lines)
    return shown


def _block(prefix: str, *, having: str = "", last: bool = False) -> str:
    """The page's first (or last) YAML block that starts with `prefix` and holds `having`."""
    yaml_blocks = [block for language, block in fenced_blocks(PAGE) if language == "yaml"]
    found = [b for b in yaml_blocks if b.lstrip().startswith(prefix) and having in b]
    assert found, f"no YAML block of the page starts with {prefix!r}"
    return found[-1] if last else found[0]


def _table(lines: list[str]) -> list[str]:
    return result_table(lines, "local")


def _edit(suite: Path, old: str, new: str) -> None:
    text = suite.read_text(encoding="utf-8")
    assert old in text, f"the page's edit does not apply: {old!r}"
    suite.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_first_suite_page_shows_what_evalspec_prints(tmp_path: Path) -> None:
    shown = _shown_outputs()
    folder = tmp_path / "my-evals"
    folder.mkdir()

    out = _evalspec("init", "weather.yaml", cwd=folder)
    assert out.stdout.splitlines() == shown["evalspec init weather.yaml"]
    suite = folder / "weather.yaml"
    starter = _block("suite: weather")
    assert starter in suite.read_text(encoding="utf-8")  # step 2 shows the starter as written

    # Step 3: the page's three edits, with its two mistakes.
    starter_models = re.search(r"^models:\n(?:  .*\n)+", starter, flags=re.MULTILINE)
    assert starter_models is not None
    _edit(suite, starter_models.group(0), _block("models:"))
    paris = "        output: {temperature: 21, unit: celsius, sky: sunny}\n"
    _edit(suite, paris, paris + _block("- when: {city: Tokyo}"))
    _edit(suite, "  fail_threshold: 0.8 ", "  fail_threshold: 80  ")
    tokyo = _block("- name: weather in Tokyo", having="expected:")
    _edit(suite, "  - name: small talk", tokyo + "\n  - name: small talk")

    # Step 4: both mistakes at once, then none (the page shows the command twice).
    validate_shown = shown["evalspec validate weather.yaml"]
    out = _evalspec("validate", "weather.yaml", cwd=folder)
    assert out.returncode == 2
    problems = out.stderr.splitlines()
    assert problems == validate_shown[: len(problems)]
    _edit(suite, "  fail_threshold: 80  ", "  fail_threshold: 0.8 ")
    _edit(suite, "    expected:\n", "    expect:\n")
    out = _evalspec("validate", "weather.yaml", cwd=folder)
    assert out.returncode == 0
    assert out.stdout.splitlines() == validate_shown[len(problems) :]

    # Step 5: a run against the model, then a run that replays it.
    with FakeOpenAI(_stand_in) as server:
        _edit(suite, "http://localhost:11434/v1", server.base_url)
        first = _evalspec("run", "weather.yaml", cwd=folder)
        again = _evalspec("run", "weather.yaml", cwd=folder)
        _edit(suite, server.base_url, "http://localhost:11434/v1")
    assert first.returncode == 1, first.stderr
    run_shown = shown["evalspec run weather.yaml"]
    assert _table(first.stdout.splitlines()) == _table(run_shown)
    requests = ("model requests: 0 replayed, 5 called", "model requests: 5 replayed, 0 called")
    for counts, output in zip(requests, (first, again), strict=True):
        assert counts in output.stdout and any(counts in line for line in run_shown)

    # Step 7: a smaller weight for the unit, and the first run scored again.
    fixed_tokyo = tokyo.replace("    expected:\n", "    expect:\n")
    _edit(suite, fixed_tokyo, _block("- name: weather in Tokyo", having="critics:"))
    whole = _block("suite: weather", last=True)
    assert suite.read_text(encoding="utf-8").endswith(whole)  # "The whole suite" is the file
    run_dir = re.search(r"results: (runs/weather/\S+)/results.json", first.stdout)
    assert run_dir is not None
    score_command = next(c for c in shown if c.startswith("evalspec score weather.yaml -t "))
    out = _evalspec("score", "weather.yaml", "-t", run_dir.group(1), cwd=folder)
    assert out.returncode == 0, out.stderr
    assert _table(out.stdout.splitlines()) == _table(shown[score_command])
