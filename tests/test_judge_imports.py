"""Judging answers that came from elsewhere: `evalspec judge` asks the suite's judge (over real
HTTP, to a server started here on 127.0.0.1) for StableToolBench's published converted answers,
fills the cache `score` reads, and reports SoPR by the seed's formula.

The judge server answers each published answer with StableToolEval's own published verdict on
it (the majority of the votes in `data_example/pass_rate_results`), so the SoPR evalspec
computes end to end can be checked against a hand computation on StableToolBench's numbers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, text_reply
from support import (
    evalspec_cli,
    has_finish,
    majority_status,
    published_votes,
    sopr_from_pass_rate_results,
    sopr_score,
)

DATA = Path(__file__).resolve().parent / "data" / "stabletoolbench"
QUERIES = DATA / "solvable_queries_example/test_instruction/G1_instruction.json"
EXAMPLE = DATA / "data_example"
MODELS = ("virtual_chatgpt_cot", "virtual_chatgpt_dfs")
KEY_ENV = "EVALSPEC_TEST_JUDGE_KEY"
KEY = "sk-judge-secret-4242"


def cli(*args: Any):
    return evalspec_cli([str(a) for a in args])


def published_verdicts() -> dict[str, str]:
    """Final answer text -> StableToolEval's majority verdict on it, for both published runs."""
    return {
        answer: majority_status(votes) for answer, votes in published_votes(EXAMPLE, MODELS).items()
    }


class PublishedJudge:
    """Replies to a judge prompt with the published verdict on the answer it quotes."""

    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        self.verdicts = published_verdicts() | (overrides or {})

    def __call__(self, body: dict[str, Any]) -> Any:
        prompt = body["messages"][-1]["content"]
        answer = re.search(r"Final answer:\n(.*?)(?:\n\nGrading criteria:|$)", prompt, re.S)
        verdict = self.verdicts[answer.group(1)] if answer else "Unsure"
        return text_reply(json.dumps({"verdict": verdict, "reason": "as StableToolEval voted"}))


@pytest.fixture
def imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The example queries imported with a judge at a fake server, and both published runs."""
    monkeypatch.setenv(KEY_ENV, KEY)
    judge = PublishedJudge()
    with FakeOpenAI(judge) as server:
        suite = tmp_path / "stb.yaml"
        done = cli(
            "import", "stabletoolbench", QUERIES, "--out", suite,
            "--judge", "judge-model", "--judge-base-url", server.base_url,
            "--judge-key-env", KEY_ENV, "--model", MODELS[0], "--model", MODELS[1],
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        lines = []
        for model in MODELS:
            out = tmp_path / f"{model}.jsonl"
            converted = EXAMPLE / f"model_predictions_converted/{model}/G1_instruction.json"
            done = cli("import", "stabletoolbench-answers", converted, "--out", out)
            assert done.exit_code == 0, done.output
            lines += out.read_text().splitlines()
        transcripts = tmp_path / "answers.jsonl"
        transcripts.write_text("\n".join(lines) + "\n")
        yield suite, transcripts, server, judge


@pytest.mark.slow
def test_sopr_of_published_answers_matches_the_seed_formula(imported):
    suite, transcripts, server, _ = imported
    # Before: scoring calls no judge, so the verdicts are missing and it says how to get them.
    before = " ".join(cli("score", suite, "-t", transcripts, "--json").output.split())
    assert "is not in" in before and "evalspec judge SUITE -t TRANSCRIPTS" in before
    assert server.requests == []

    done = cli("judge", suite, "-t", transcripts)
    assert done.exit_code == 0, done.output
    # cot's run on query 588 gave no final answer (and no Finish): nothing to ask about it.
    assert "judged 6 answers: 5 asked, 0 from the cache, 1 without an answer, 0 failed" in (
        done.output
    )
    assert len(server.requests) == 5
    # By hand, from StableToolBench's published files and the seed's formula (Solved 1,
    # Unsure 0.5, Unsolved 0; a run without Finish is Unsolved; the mean over answers):
    # cot: 588 has no Finish -> 0; 1073 Solved -> 1; 608 Solved -> 1: (0 + 1 + 1) / 3.
    # dfs: 588, 608 and 1073 all end with Finish and were voted Solved: (1 + 1 + 1) / 3.
    cot, dfs = (0 + 1 + 1) / 3, (1 + 1 + 1) / 3
    assert f"virtual_chatgpt_cot · final_answer.judge: SoPR {cot:.3f} over 3 answers" in done.output
    assert f"virtual_chatgpt_dfs · final_answer.judge: SoPR {dfs:.3f} over 3 answers" in done.output
    as_json = cli("judge", suite, "-t", transcripts, "--json")
    sopr = {row["model"]: row["sopr"] for row in json.loads(as_json.stdout)["sopr"]}
    assert sopr == pytest.approx({MODELS[0]: cot, MODELS[1]: dfs})
    # The published pass rate agrees: the mean of StableToolEval's votes per query.
    for model, expected in zip(MODELS, (cot, dfs), strict=True):
        votes = sopr_from_pass_rate_results(
            EXAMPLE / f"pass_rate_results/{model}/G1_instruction_{model}.json"
        )
        assert sum(v["sopr"] for v in votes.values()) / len(votes) == pytest.approx(expected)

    # Asked once: a second pass and `score` read the cache and send nothing.
    again = cli("judge", suite, "-t", transcripts)
    assert "0 asked, 5 from the cache" in again.output
    results = suite.parent / "results.json"
    scored = cli("score", suite, "-t", transcripts, "--out", results)
    assert "is not in" not in scored.output, scored.output
    # Imported answers carry the real APIs' outputs; the suite makes no claim about them.
    assert "stale" not in scored.output
    assert len(server.requests) == 5
    rows = {
        (r["model"], r["case"]): row["score"]
        for r in json.loads(results.read_text())["results"]
        for row in r["rows"]
        if row["field"] == "final_answer.judge"
    }
    assert rows[(MODELS[0], "1073")] == 1.0 and rows[(MODELS[0], "588")] == 0.0


def test_the_judge_goes_through_the_one_provider_path(imported):
    suite, transcripts, server, _ = imported
    server.fail_next(429, retry_after=0.05)  # retried by the provider, as for any model call
    done = cli("judge", suite, "-t", transcripts)
    assert done.exit_code == 0, done.output
    assert len(server.requests) == 6
    assert {r.headers.get("authorization") for r in server.requests} == {f"Bearer {KEY}"}
    cache = suite.parent / ".evalspec-cache" / "judge.json"
    assert KEY not in done.output and KEY not in cache.read_text()
    assert len(json.loads(cache.read_text())) == 5


@pytest.mark.slow
def test_a_judge_that_cannot_answer_exits_3_and_keeps_what_it_had(imported):
    suite, transcripts, server, _ = imported
    server.fail_next(500, times=1000, message="the judge is down")
    done = cli("judge", suite, "-t", transcripts)
    assert done.exit_code == 3, done.output
    assert "no verdict for 5 answers: the judge failed" in done.output
    assert "the judge is down" in done.output
    assert KEY not in done.output


def test_unfinished_runs_are_unsolved_whatever_the_verdict(imported, tmp_path):
    suite, transcripts, _, judge = imported
    lines = [json.loads(line) for line in transcripts.read_text().splitlines()]
    cot = [t for t in lines if t["model"] == MODELS[0]]
    (no_finish,) = [t for t in cot if t["case"] == "588"]
    no_finish["final_answer"] = "Messi played for Barcelona and Paris Saint-Germain."
    judge.verdicts[no_finish["final_answer"]] = "Solved"  # the judge likes it; no Finish
    (unsure,) = [t for t in cot if t["case"] == "608"]
    judge.verdicts[unsure["final_answer"]] = "Unsure"
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in cot))
    done = cli("judge", suite, "-t", path, "--json")
    assert done.exit_code == 0, done.output
    (row,) = json.loads(done.stdout)["sopr"]
    # 588: Solved but no Finish -> 0; 608: Unsure -> 0.5; 1073: Solved -> 1.
    assert row["sopr"] == pytest.approx((0 + 0.5 + 1) / 3)
    assert row["verdicts"] == {"Unsolved": 1, "Unsure": 1, "Solved": 1}


def test_judge_refuses_a_suite_without_a_judge(tmp_path):
    suite = tmp_path / "plain.yaml"
    assert cli("import", "stabletoolbench", QUERIES, "--out", suite).exit_code == 0
    done = cli("judge", suite, "-t", tmp_path / "none.jsonl")
    assert done.exit_code == 2
    assert "has no judge check" in done.output
    lone = cli("import", "stabletoolbench", QUERIES, "--out", suite, "--judge-base-url", "x")
    assert lone.exit_code == 2 and "need --judge MODEL" in lone.output


SUBSET = DATA / "toolbench/tooleval/results/default_evalset/gpt-3.5-turbo_CoT/G2_instruction.json"


def length_verdict(body: dict[str, Any]) -> Any:
    """A stand-in judge with a rule a test can recompute: long answers solve, short ones are
    unsure, the rest unsolved."""
    answer = body["messages"][-1]["content"].split("Final answer:\n", 1)[1]
    answer = answer.split("\n\nGrading criteria:", 1)[0]
    verdict = "Solved" if len(answer) > 300 else "Unsure" if len(answer) > 100 else "Unsolved"
    return text_reply(json.dumps({"verdict": verdict, "reason": "stand-in"}))


def test_a_published_answer_file_alone_is_judged_end_to_end(tmp_path, monkeypatch):
    """The leaderboard's answer files come without their queries in a test_instruction file:
    --suite-out makes the suite from the answer file itself, as StableToolEval reads it."""
    from evalspec.api import load_transcripts

    monkeypatch.setenv(KEY_ENV, KEY)
    with FakeOpenAI(length_verdict) as server:
        suite, out = tmp_path / "g2.yaml", tmp_path / "g2.jsonl"
        done = cli(
            "import", "stabletoolbench-answers", SUBSET, "--out", out, "--suite-out", suite,
            "--judge", "judge-model", "--judge-base-url", server.base_url,
            "--judge-key-env", KEY_ENV,
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        assert cli("validate", suite).exit_code == 0
        judged = cli("judge", suite, "-t", out, "--json")
        assert judged.exit_code == 0, judged.output
        (row,) = json.loads(judged.stdout)["sopr"]
    by_hand = []
    for t in load_transcripts(out):
        answer = t.final_answer or ""
        verdict = "Solved" if len(answer) > 300 else "Unsure" if len(answer) > 100 else "Unsolved"
        by_hand.append(sopr_score(verdict, has_finish(t)) if answer.strip() else 0.0)
    assert row["answers"] == 9
    assert row["sopr"] == pytest.approx(sum(by_hand) / len(by_hand))
    assert len(server.requests) == sum(1 for t in load_transcripts(out) if t.final_answer)
    lone = cli("import", "stabletoolbench-answers", SUBSET, "--out", out, "--suite-out", suite)
    assert lone.exit_code == 2 and "go together" in lone.output


@pytest.mark.timeout(120)
def test_judge_takes_every_transcripts_file(imported, tmp_path):
    """`-t a -t b` judges both files (it judged only the last, exit 0, no word about a)."""
    suite, transcripts, server, _ = imported
    by_model: dict[str, list[str]] = {}
    for line in transcripts.read_text().splitlines():
        by_model.setdefault(json.loads(line)["model"], []).append(line)
    cot, dfs = tmp_path / "cot.jsonl", tmp_path / "dfs.jsonl"
    cot.write_text("\n".join(by_model[MODELS[0]]) + "\n")
    dfs.write_text("\n".join(by_model[MODELS[1]]) + "\n")
    done = cli("judge", suite, "-t", cot, "-t", dfs)
    assert done.exit_code == 0, done.output
    assert "judged 6 answers: 5 asked" in done.output
    assert f"{MODELS[0]} · final_answer.judge: SoPR 0.667 over 3 answers" in done.output
    assert f"{MODELS[1]} · final_answer.judge: SoPR 1.000 over 3 answers" in done.output
    assert f"next: evalspec score {suite} -t {cot}" in done.output
    assert f"next: evalspec score {suite} -t {dfs}" in done.output
    # One transcript in two files would count its answer twice: refused, the files named.
    asked = len(server.requests)
    twice = cli("judge", suite, "-t", cot, "-t", transcripts)
    assert twice.exit_code == 2, twice.output
    assert f"is in both {cot} and {transcripts}" in twice.output
    assert "Traceback" not in twice.output and len(server.requests) == asked
