"""A judge asked several rounds per answer, combined as StableToolBench's evaluator combines them
(toolbench/tooleval/eval_pass_rate.py at aa4ed9f: `evaluate_times` rounds, each Solved 1,
Unsure 0.5, else 0; the pass rate is the mean over rounds), each round cached on its own."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, text_reply
from support import evalspec_cli, has_finish, published_votes, sopr_from_pass_rate_results

DATA = Path(__file__).resolve().parent / "data" / "stabletoolbench"
QUERIES = DATA / "solvable_queries_example/test_instruction/G1_instruction.json"
EXAMPLE = DATA / "data_example"
MODELS = ("virtual_chatgpt_cot", "virtual_chatgpt_dfs")
KEY_ENV = "EVALSPEC_TEST_JUDGE_KEY"
VALUE = {"Solved": 1.0, "Unsure": 0.5, "Unsolved": 0.0}


def cli(*args: Any):
    return evalspec_cli([str(a) for a in args])


class RoundJudge:
    """Answers the n-th question about an answer with the n-th verdict of its script."""

    def __init__(self, scripts: dict[str, list[str]]) -> None:
        self.scripts = scripts
        self.asked: Counter[str] = Counter()

    def __call__(self, body: dict[str, Any]) -> Any:
        prompt = body["messages"][-1]["content"]
        found = re.search(r"Final answer:\n(.*?)(?:\n\nGrading criteria:|$)", prompt, re.S)
        answer = found.group(1) if found else ""
        verdicts = self.scripts[answer]
        verdict = verdicts[self.asked[answer] % len(verdicts)]
        self.asked[answer] += 1
        return text_reply(json.dumps({"verdict": verdict, "reason": f"round {self.asked[answer]}"}))


def imported(tmp_path: Path, base_url: str, rounds: int) -> tuple[Path, Path]:
    """The example queries as a suite whose judge asks `rounds` rounds as StableToolBench's
    evaluator does, and both published runs' answers as transcripts."""
    suite = tmp_path / "stb.yaml"
    done = cli(
        "import", "stabletoolbench", QUERIES, "--out", suite, "--judge", "judge-model",
        "--judge-base-url", base_url, "--judge-key-env", KEY_ENV, "--judge-rounds", rounds,
        "--model", MODELS[0], "--model", MODELS[1],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    text = suite.read_text()
    assert text.count(f"rounds: {rounds}") == 3 and text.count("temperature: 0.2") == 3
    assert cli("validate", suite).exit_code == 0
    lines = []
    for model in MODELS:
        out = tmp_path / f"{model}.jsonl"
        converted = EXAMPLE / f"model_predictions_converted/{model}/G1_instruction.json"
        assert cli("import", "stabletoolbench-answers", converted, "--out", out).exit_code == 0
        lines += out.read_text().splitlines()
    transcripts = tmp_path / "answers.jsonl"
    transcripts.write_text("\n".join(lines) + "\n")
    return suite, transcripts


def published_rounds() -> dict[str, list[str]]:
    """Final answer text -> StableToolEval's published verdict of each round, in round order."""
    return published_votes(EXAMPLE, MODELS)


@pytest.mark.timeout(120)
def test_the_published_example_is_judged_in_three_rounds_as_stabletoolbench_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalspec.api import load_transcripts

    monkeypatch.setenv(KEY_ENV, "sk-test")
    judge = RoundJudge(published_rounds())
    with FakeOpenAI(judge) as server:
        suite, transcripts = imported(tmp_path, server.base_url, rounds=3)
        done = cli("judge", suite, "-t", transcripts, "--json")
        assert done.exit_code == 0, done.output
        asked = len(server.requests)
        again = cli("judge", suite, "-t", transcripts, "--json")
        assert len(server.requests) == asked  # every round cached
    # Five answers (cot's 588 gave none), three rounds each.
    assert asked == 5 * 3
    sopr = {row["model"]: row["sopr"] for row in json.loads(again.stdout)["sopr"]}
    # StableToolBench's rule on its published per-round verdicts: per round, the mean over
    # queries (no Finish: Unsolved); then the mean over rounds.
    for model in MODELS:
        votes = sopr_from_pass_rate_results(
            EXAMPLE / f"pass_rate_results/{model}/G1_instruction_{model}.json"
        )
        runs = {t.case: has_finish(t) for t in load_transcripts(transcripts) if t.model == model}
        per_round = [
            sum(VALUE[v["votes"][r]] if runs[q] else 0.0 for q, v in votes.items()) / len(votes)
            for r in range(3)
        ]
        assert sopr[model] == pytest.approx(sum(per_round) / 3)


@pytest.mark.timeout(120)
def test_split_rounds_score_their_mean_and_each_round_is_cached_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    split = ["Solved", "Unsure", "Unsolved", "Solved"]  # StableToolBench: (1 + .5 + 0 + 1) / 4
    judge = RoundJudge({answer: split for answer in published_rounds()})
    with FakeOpenAI(judge) as server:
        suite, transcripts = imported(tmp_path, server.base_url, rounds=4)
        done = cli("judge", suite, "-t", transcripts, "--json")
        assert done.exit_code == 0, done.output
        data = json.loads(done.stdout)
        assert len(server.requests) == 5 * 4
        # One more round: only the new round is asked.
        suite.write_text(suite.read_text().replace("rounds: 4", "rounds: 5"))
        more = cli("judge", suite, "-t", transcripts, "--json")
        assert more.exit_code == 0, more.output
        assert len(server.requests) == 5 * 5
    dfs = next(a for a in data["answers"] if a["model"] == MODELS[1] and a["case"] == "1073")
    assert dfs["score"] == pytest.approx(0.625)
    assert "mean of 4 rounds (Solved, Unsure, Unsolved, Solved)" in dfs["reason"]
    cache = json.loads((suite.parent / ".evalspec-cache" / "judge.json").read_text())
    assert sorted(Counter(v.get("round") for v in cache.values()).items()) == [
        (1, 5), (2, 5), (3, 5), (4, 5), (5, 5)
    ]  # fmt: skip
    # Scoring calls no judge: it reads the five rounds from the cache, (3 * 1 + .5 + 0) / 5.
    scored = cli("score", suite, "-t", transcripts, "--json")
    assert "is not in" not in scored.stdout
    rows = [r for r in _dicts(json.loads(scored.stdout)) if r.get("field") == "final_answer.judge"]
    answered = [r["score"] for r in rows if r["actual"]]  # cot's 588 gave no answer: 0
    assert len(answered) == 5 and answered == pytest.approx([0.7] * 5)


def _dicts(value: Any) -> list[dict[str, Any]]:
    """Every JSON object inside `value`, depth first."""
    found = [value] if isinstance(value, dict) else []
    children = (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    )
    for child in children:
        found += _dicts(child)
    return found


def test_judge_rounds_need_a_judge_and_a_small_whole_number(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    alone = cli("import", "stabletoolbench", QUERIES, "--out", suite, "--judge-rounds", 4)
    assert (
        alone.exit_code == 2
        and "--judge-rounds" in alone.output
        and "--judge-rounds needs --judge MODEL" in alone.output
    )
    many = cli(
        "import", "stabletoolbench", QUERIES, "--out", suite, "--judge", "m", "--judge-rounds", 99
    )
    assert (
        many.exit_code == 2 and "--judge-rounds 99: give a whole number from 1 to 20" in many.output
    )


def test_rounds_must_be_a_small_whole_number(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    done = cli("import", "stabletoolbench", QUERIES, "--out", suite, "--judge", "judge-model")
    assert done.exit_code == 0
    text = suite.read_text()
    suite.write_text(text.replace("model: judge-model", "model: judge-model, rounds: 0"))
    checked = cli("validate", suite)
    assert checked.exit_code == 2
    assert "judge.rounds: 0 is out of range: it must be from 1 to 20" in checked.output
    assert "Traceback" not in checked.output
