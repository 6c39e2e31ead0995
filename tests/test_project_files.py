"""Files reached through committed links: one policy for every file evalspec keeps in a project.

A pull request commits a symbolic link in the place of a file evalspec reads or writes (a cache,
the recordings, the tool lock, a run directory, a report) or of a folder on its way: to a file
outside the project, to /proc/self/environ, or a folder such as `.evalspec-cache ->
/tmp/elsewhere`. `run --record offline`, `score` and `review` each refuse it with exit 2, name the
path as the project has it (never where the link points) and write nothing outside the project.

The kinds come from the code: each is declared where its file is kept (`kind("judge cache")`,
`kind("run directory", directory=True)`), and `test_every_kind_is_attacked` reads every such
declaration in evalspec's source: a kind declared without an attack here fails it.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, evalspec_cli, git

from evalspec.plugins import ChatRequest, ChatResponse

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

SUITE = """\
suite: files
models: [m]
run: {recordings: rec/answers.jsonl, max_turns: 3}
embeddings: {cache_dir: emb}
tools:
  - name: lookup
    parameters: {type: object, properties: {q: {type: string}}}
    simulate: {model: sim, cache: sim/lookup.json}
  - name: weather
    parameters: {type: object, properties: {q: {type: string}}}
    cache: {file: stb/weather.json}
  - name: forecast
    parameters: {type: object, properties: {q: {type: string}}}
    cache: {dir: stbdir}
  - mcp: {command: [python, server.py], cache: mcpcache}
cases:
  - name: everything
    user: Look it all up.
    expect:
      tool_calls: [{lookup: {q: x}}, {weather: {q: x}}, {forecast: {q: x}}]
      final_answer:
        judge: {criteria: says done, model: judge-model}
  - name: similar
    user: Say it alike.
    expect:
      final_answer: {similarity: {value: done, threshold: 0.5}}
"""

LOCK = {
    "_comment": "test",
    "servers": {
        "python server.py": {
            "tools": [{"name": "Ping", "description": "Ping.", "inputSchema": {"type": "object"}}]
        }
    },
}
ENTRY = {"{'q': 'x'}": {"error": "", "response": "ok"}}


class Scripted:
    """A model that calls every tool once, then says `done`."""

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if request.messages[-1]["role"] != "user" or "alike" in request.messages[-1]["content"]:
            return ChatResponse({"role": "assistant", "content": "done"}, "stop")
        calls = [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": '{"q": "x"}'}}
            for i, n in enumerate(("lookup", "weather", "forecast"))
        ]
        return ChatResponse({"role": "assistant", "content": None, "tool_calls": calls}, "calls")

    async def aclose(self) -> None:
        pass


def invoke(repo: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    monkeypatch.chdir(repo)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = evalspec_cli(list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project using every kind of file, its recordings and a finished run made once."""
    from evalspec.api import load_suite, record_answers

    repo = tmp_path_factory.mktemp("template") / "repo"
    suites = repo / "suites"
    for folder in ("rec", "sim", "stb", "stbdir", "emb", ".evalspec-cache"):
        (suites / folder).mkdir(parents=True)
    (suites / "s.yaml").write_text(SUITE, encoding="utf-8")
    (suites / "s.tools.lock.json").write_text(json.dumps(LOCK), encoding="utf-8")
    for cache in ("sim/lookup.json", "stb/weather.json", "stbdir/forecast.json"):
        (suites / cache).write_text(json.dumps(ENTRY), encoding="utf-8")
    (suites / ".evalspec-cache" / "judge.json").write_text("{}", encoding="utf-8")
    (suites / "s.labels.jsonl").write_text('{"_comment": "none yet"}\n', encoding="utf-8")
    record_answers(load_suite(suites / "s.yaml"), Scripted())
    cwd = Path.cwd()
    os.chdir(repo)
    try:
        code = evalspec_cli(["run", "suites/s.yaml", "--record", "offline", "--out", "runs/done"])
    finally:
        os.chdir(cwd)
    assert code.exit_code in (0, 1, 3), code.output
    (repo / "out").mkdir()
    (repo / "out" / "report.md").write_text("old", encoding="utf-8")
    (repo / "o" / "outdir").mkdir(parents=True)
    (repo / "o" / "outdir" / ".keep").write_text("", encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-f", ".")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


RUN = ("run", "suites/s.yaml", "--record", "offline")
SCORE = ("score", "suites/s.yaml", "-t", "runs/done")
REVIEW = ("review", "suites/s.yaml", "--base-ref", "main", "--json")


@dataclass(frozen=True)
class Attack:
    place: str
    """The file or folder replaced by a link, relative to the repository."""
    commands: tuple[tuple[str, ...], ...]
    """Commands that read or write it; each must refuse the link."""


ATTACKS: dict[str, Attack] = {
    "recordings": Attack("suites/rec/answers.jsonl", (RUN, REVIEW)),
    "judge cache": Attack("suites/.evalspec-cache/judge.json", (RUN, SCORE, REVIEW)),
    "simulator cache": Attack("suites/sim/lookup.json", (RUN, SCORE, REVIEW)),
    "tool response cache": Attack("suites/stb/weather.json", (RUN, SCORE, REVIEW)),
    "tool response cache folder": Attack("suites/stbdir", (RUN, SCORE, REVIEW)),
    "embedding cache": Attack("suites/emb", (RUN, SCORE)),
    "tool lock file": Attack("suites/s.tools.lock.json", (RUN, SCORE, REVIEW)),
    "labels file": Attack("suites/s.labels.jsonl", (RUN, SCORE, REVIEW)),
    "run directory": Attack("runs", (RUN,)),
    "run file": Attack("runs/done/transcripts.jsonl", (SCORE,)),
    "output file": Attack(
        "out/report.md",
        (
            (*RUN, "--markdown", "out/report.md"),
            (*SCORE, "--markdown", "out/report.md"),
            (*REVIEW, "--markdown", "out/report.md"),
        ),
    ),
    "output directory": Attack("o/outdir", ((*RUN, "--out", "o/outdir/run"),)),
}


def declared_kinds() -> dict[str, bool]:
    """Every kind of project file evalspec's source declares (`kind(NAME, directory=...)`),
    by name: whether it is a directory."""
    found: dict[str, bool] = {}
    for path in sorted((ROOT / "evalspec").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "kind"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                flags = {k.arg: k.value for k in node.keywords}
                directory = flags.get("directory")
                found[node.args[0].value] = isinstance(directory, ast.Constant) and bool(
                    directory.value
                )
    return found


KINDS = declared_kinds()


def test_every_kind_is_attacked() -> None:
    """A kind of project file declared anywhere in evalspec has an attack below."""
    assert {"recordings", "run directory", "judge cache"} <= set(KINDS)  # the scan finds them
    assert KINDS["run directory"] and not KINDS["recordings"]
    assert set(KINDS) == set(ATTACKS)


def _cases() -> list[Any]:
    out = []
    for name, attack in ATTACKS.items():
        for link in ("outside", "environ", "folder"):
            inside = attack.place.removeprefix("suites/")  # below the suite's folder
            if link == "folder" and "/" not in inside:
                continue  # no folder of the project on its way
            for command in attack.commands:
                out.append(pytest.param(name, link, command, id=f"{name}-{link}-{command[0]}"))
    return out


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize(("name", "link", "command"), _cases())
def test_a_committed_link_is_refused(
    template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    link: str,
    command: tuple[str, ...],
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(template, repo, symlinks=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    attack = ATTACKS[name]
    place = repo / attack.place
    directory = KINDS[name]
    if link == "folder":  # a folder on the way: `.evalspec-cache -> /tmp/elsewhere`
        folder = place.parent
        shutil.copytree(folder, outside / folder.name)
        shutil.rmtree(folder)
        folder.symlink_to(outside / folder.name, target_is_directory=True)
    else:
        if place.is_dir():
            shutil.rmtree(place)
        else:
            place.unlink()
        if link == "outside":
            target = outside / "target"
            target.mkdir() if directory else target.write_text("{}", encoding="utf-8")
        else:
            target = Path("/proc/self" if directory else "/proc/self/environ")
        place.symlink_to(target, target_is_directory=directory)
    if command[0] == "review":
        git(repo, "add", "-f", "-A")
        git(repo, "commit", "-q", "-m", "a link")
    before = _snapshot(outside)
    code, output = invoke(repo, monkeypatch, *command)
    assert code == 2, output
    named = Path(attack.place.removeprefix("suites/"))  # the suite names its files so
    assert str(named) in output or str(named.parent) in output, output
    assert "symbolic link" in output, output
    assert str(outside) not in output and "/proc/self" not in output, output
    assert "Traceback" not in output
    assert _snapshot(outside) == before  # nothing written outside the project


@pytest.mark.slow
@pytest.mark.parametrize("command", [RUN, SCORE, REVIEW], ids=lambda c: c[0])
def test_without_a_link_nothing_is_refused(
    template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    """The project the attacks start from is sound: each command gets past every file."""
    repo = tmp_path / "repo"
    shutil.copytree(template, repo, symlinks=True)
    code, output = invoke(repo, monkeypatch, *command)
    assert code != 2, output
