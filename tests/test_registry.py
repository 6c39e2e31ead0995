"""One registry: evalspec's own critics, evaluators and final-answer checks and a plugin's are
registered the same way, found by the same lookup, and listed by `evalspec schema` alike.

A unit test of the one registry (`evalspec._util.registry`) and of the built-in kinds it
loads (`evalspec._critics`, `evalspec._scoring.evaluators`, `evalspec._scoring.final_answer`),
which it imports: how entries are recorded, found, hidden and refused is the registry's
internals; what a plugin author sees goes through `evalspec.plugins` here too.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalspec import plugins
from evalspec._critics import CRITIC_KINDS, BinaryCritic, make_critic
from evalspec._scoring.evaluators import EVALUATOR_KINDS, run_evaluator
from evalspec._scoring.final_answer import (
    FINAL_ANSWER_KINDS,
    acheck_final_answer,
    check_final_answer,
)
from evalspec._suite.model import EvaluatorSpec, ExpectedCall, FinalAnswerCheck
from evalspec._util import registry
from evalspec._util.schemas import language_schema
from evalspec.errors import SpecError, UsageError
from evalspec.records import ToolCall, Transcript

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "plugin"


def _transcript(*names: str, final: str | None = None) -> Transcript:
    return Transcript(
        item_id="c-m-0",
        case="c",
        model="m",
        trial=0,
        tool_calls=tuple(ToolCall(name=n, arguments={}, raw_arguments="{}") for n in names),
        final_answer=final,
    )


def _installed(site: Path, name: str, module: str, source: str | None = None) -> None:
    """A package laid out as pip installs it: a dist-info naming an `evalspec.plugins` entry
    point (and, when given, the module's source beside it)."""
    info = site / f"{name}_pkg-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[evalspec.plugins]\n{name} = {module}\n")
    if source is not None:
        (site / f"{module}.py").write_text(source, encoding="utf-8")


def _fresh(site: Path, *args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    """`evalspec ARGS` (or `python -c CODE`) in a new process that sees `site` as installed."""
    env = {k: v for k, v in os.environ.items() if k != registry.DISABLE_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(site), str(EXAMPLE)])
    command = ["-c", code] if code is not None else ["-m", "evalspec", *args]
    return subprocess.run(
        [sys.executable, *command], capture_output=True, text=True, env=env, timeout=300
    )


def test_installed_plugin_and_builtin_are_listed_and_found_alike(tmp_path: Path) -> None:
    _installed(tmp_path, "example", "evalspec_example_plugin")
    res = _fresh(tmp_path, "schema")
    assert res.returncode == 0, res.stderr
    critic = json.loads(res.stdout)["$defs"]["critic"]
    assert {"binary", "same_day"} <= set(critic["anyOf"][0]["enum"])
    assert critic["anyOf"][1]["properties"]["same_day"]["anyOf"][1] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    assert "binary" in critic["anyOf"][1]["properties"]
    found = _fresh(
        tmp_path,
        code=(
            "import json\nfrom evalspec.plugins import find\n"
            "print(json.dumps({n: [find('critic', n).origin, find('critic', n).impl.__name__]"
            " for n in ('binary', 'same_day')}))"
        ),
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout) == {
        "binary": ["evalspec", "BinaryCritic"],
        "same_day": ["example", "SameDayCritic"],
    }


BINARY_AGAIN = """
from dataclasses import dataclass
from evalspec.plugins import Critic, register

@register("critic")
@dataclass(frozen=True)
class MyBinary(Critic):
    kind = "binary"
"""


def test_a_plugin_taking_a_builtin_name_is_refused_naming_both(tmp_path: Path) -> None:
    _installed(tmp_path, "shadow", "shadow_plugin", BINARY_AGAIN)
    res = _fresh(tmp_path, "schema")
    assert res.returncode == 2, res.stdout + res.stderr
    message = " ".join(res.stderr.split())
    assert "plugin 'shadow' registers the critic 'binary'" in message
    assert "evalspec's own critic 'binary' (evalspec._critics.binary.BinaryCritic)" in message
    assert "Traceback" not in res.stderr


def test_code_registering_a_builtin_name_is_refused() -> None:
    with pytest.raises(UsageError, match="evalspec's own evaluator 'tool_call_order'"):
        plugins.register("evaluator", "tool_call_order")(lambda inp: 1.0)
    assert registry.find("evaluator", "tool_call_order").origin == registry.BUILTIN


def test_builtins_are_registered_through_the_decorator_and_match_the_language_schema() -> None:
    defs = language_schema()["$defs"]
    in_schema = {
        "critic": set(defs["critic"]["anyOf"][0]["enum"]),
        "evaluator": set(defs["evaluator"]["anyOf"][0]["enum"]),
        "final_answer": set(defs["final_answer"]["properties"]) - {"weight", "name"},
    }
    shipped = {"critic": CRITIC_KINDS, "evaluator": EVALUATOR_KINDS}
    shipped["final_answer"] = FINAL_ANSWER_KINDS
    # BFCL's multi-turn classes are evalspec's one environment of its own (bfcl-eval installed
    # apart); every other comes from a plugin.
    assert registry.builtin_names("environment") == frozenset({"bfcl"})
    for kind in shipped:
        assert registry.builtin_names(kind) == shipped[kind]
        assert shipped[kind] <= in_schema[kind], kind
        for name in shipped[kind]:
            entry = registry.find(kind, name)
            assert entry is not None and entry.builtin and entry.origin == "evalspec"
    assert registry.find("critic", "binary").impl is BinaryCritic
    assert "judge" in FINAL_ANSWER_KINDS


def test_allow_only_hides_plugins_and_keeps_builtins(monkeypatch) -> None:
    hidden = registry.Plugin("critic", "from_elsewhere", BinaryCritic, origin="other",
                            from_entry_point=True)  # fmt: skip
    monkeypatch.setitem(registry._REGISTRY["critic"], "from_elsewhere", hidden)
    monkeypatch.setattr(registry, "_entry_points_loaded", True)
    assert registry.find("critic", "from_elsewhere") is hidden
    with registry.allow_only(()):
        assert registry.find("critic", "from_elsewhere") is None
        assert registry.find("critic", "binary").impl is BinaryCritic
        assert set(registry.registered("critic")) >= CRITIC_KINDS
        assert make_critic("binary", {}).kind == "binary"
        with pytest.raises(ValueError, match="unknown critic"):
            make_critic("from_elsewhere", {})
    assert registry.find("critic", "from_elsewhere") is hidden


@pytest.fixture
def registered_here() -> Iterator[list[tuple[str, str]]]:
    added: list[tuple[str, str]] = []
    yield added
    for kind, name in added:
        plugins.unregister(kind, name)


def _add(added: list[tuple[str, str]], kind: str, name: str, fn, **options) -> None:
    plugins.register(kind, name, **options)(fn)
    added.append((kind, name))


def test_typed_evaluator_gets_one_record_and_explains_with_findings(registered_here) -> None:
    seen = []

    def distinct(inp: plugins.EvaluatorInput) -> plugins.CheckReturn:
        seen.append(inp)
        names = [inp.key(c.name) for c in inp.transcript.tool_calls]
        wanted = [inp.key(c.tool) for c in inp.expected_calls]
        findings = tuple(
            plugins.Finding(w, w, "called" if w in names else "-", float(w in names))
            for w in wanted
        )
        score = sum(f.score for f in findings) / len(findings)
        return plugins.Verdict(score, {"distinct": len(set(names))}, findings)

    _add(registered_here, "evaluator", "distinct_calls", distinct)
    entry = plugins.find("evaluator", "distinct_calls")
    assert (entry.origin, entry.legacy) == (distinct.__module__, False)
    spec = EvaluatorSpec("distinct_calls", {"threshold": 0.5, "name": "d", "x": 1}, weight=2.0)
    expected = [ExpectedCall("Search"), ExpectedCall("book")]
    result = run_evaluator(spec, _transcript("search"), expected)
    assert (result.name, result.score, result.passed) == ("d", 0.5, True)
    assert result.justification == {"distinct": 1}
    assert [(r.field, r.weight, r.match) for r in result.rows] == [
        ("distinct_calls.search", 1.0, True),
        ("distinct_calls.book", 1.0, False),
    ]
    assert dict(seen[0].params) == {"x": 1}  # name and threshold are evalspec's
    strict = run_evaluator(spec, _transcript("search"), expected, normalize_names=False)
    assert strict.score == 0.0


def test_old_positional_plugin_forms_keep_working(registered_here) -> None:
    def budget(transcript, expected_calls, params):
        made = len(transcript.tool_calls)
        if "max_calls" not in params:
            raise ValueError("`max_calls` is required")
        return min(1.0, params["max_calls"] / made), {"reason": f"{made} calls"}

    def short(answer, params):
        return float(len(answer.split()) <= params["value"]), "word count"

    _add(registered_here, "evaluator", "old_budget", budget)
    _add(registered_here, "final_answer", "old_short", short)
    assert plugins.find("evaluator", "old_budget").legacy
    assert plugins.find("final_answer", "old_short").legacy
    r = run_evaluator(EvaluatorSpec("old_budget", {"max_calls": 1}), _transcript("a", "b"), [])
    assert (r.score, r.passed, r.rows[0].reason) == (0.5, False, "2 calls")
    assert r.rows[0].expected == {"max_calls": 1}
    with pytest.raises(SpecError, match="evaluator old_budget: `max_calls` is required"):
        run_evaluator(EvaluatorSpec("old_budget", {}), _transcript("a"), [])
    check = FinalAnswerCheck("old_short", {"value": 2, "threshold": 1})
    ok = check_final_answer(check, "two words")
    assert (ok.score, ok.passed, ok.rows[0].reason) == (1.0, True, "word count")
    assert check_final_answer(check, None).score == 0.0  # no answer: scored before the call


def test_an_async_answer_check_is_an_ordinary_registered_check(registered_here) -> None:
    async def polite(inp: plugins.AnswerInput) -> plugins.CheckReturn:
        await asyncio.sleep(0)
        ok = "please" in inp.answer.lower()
        return (1.0 if ok else 0.0), {"asked": inp.question}

    _add(registered_here, "final_answer", "polite", polite)
    check = FinalAnswerCheck("polite", {})
    r = check_final_answer(check, "Please wait.", question="Book it")
    assert (r.score, r.passed, r.justification) == (1.0, True, {"asked": "Book it"})

    async def inside_a_loop():
        with pytest.raises(RuntimeError, match="await acheck_final_answer"):
            check_final_answer(check, "no")
        return await acheck_final_answer(check, "no")

    assert asyncio.run(inside_a_loop()).score == 0.0


def test_a_check_returning_something_else_is_a_placed_error(registered_here) -> None:
    _add(registered_here, "final_answer", "wordy", lambda inp: "fine")
    with pytest.raises(SpecError, match="final_answer wordy: returned str as its score"):
        check_final_answer(FinalAnswerCheck("wordy", {}), "an answer")
