"""τ-bench's published rewards, reproduced: `evalspec import tau-bench` on the GPT-4o airline
trajectories (tests/data/tau_airline/, MIT), judged by `evalspec score` with the state checks
and outputs τ-bench's reward uses, run by run beside the reward the file publishes.

And the importer against files that are not what they claim: a record that is not a run is
named and left out, the others imported; a file that is no list of runs is refused, exit 2,
nothing written.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support import BUMP_TOOLS, in_process
from tau_airline_calls import DATA, WORLD


def world_of_the_trajectories() -> dict[str, Any]:
    """The slice as the trajectories ran on it: users as at tau-bench's 7362a17."""
    users = json.loads(gzip.decompress((DATA / "users-7362a17.json.gz").read_bytes()))
    return {**WORLD, "users": users}


def imported(folder: Path) -> tuple[dict[tuple[str, int], float], str]:
    """The published file imported into `folder`: its rewards by (case, trial), and what the
    command printed."""
    (folder / "gpt-4o-airline.json").write_bytes(
        gzip.decompress((DATA / "gpt-4o-airline.json.gz").read_bytes())
    )
    (folder / "airline.json").write_text(json.dumps(world_of_the_trajectories()))
    shutil.copy(DATA / "tools.yaml", folder / "airline-tools.yaml")
    done = in_process(
        "import", "tau-bench", folder / "gpt-4o-airline.json",
        "--world", folder / "airline.json", "--tools", folder / "airline-tools.yaml",
        "--suite-out", folder / "tau_airline.yaml", "--out", folder / "t.jsonl",
        "-m", "gpt-4o",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = json.loads((folder / "gpt-4o-airline.json").read_text())
    return {(f"task {r['task_id']}", r["trial"]): r["reward"] for r in records}, done.stdout


OUTPUT_IN_AN_EARLIER_ANSWER = "the output is in an earlier answer, not the last"
CUT_OFF = "τ-bench's step limit cut the run off (reward 0 unjudged); its world is the gold one"
DIFFERENCES = {
    ("task 2", 2): OUTPUT_IN_AN_EARLIER_ANSWER,
    ("task 44", 2): OUTPUT_IN_AN_EARLIER_ANSWER,
    ("task 46", 3): CUT_OFF,
}
"""Every run where evalspec's verdict is not τ-bench's published reward (docs/differences.md,
"τ-bench's published rewards")."""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_published_gpt_4o_airline_rewards_are_reproduced_run_by_run(tmp_path: Path) -> None:
    rewards, printed = imported(tmp_path)
    assert "wrote 200 transcripts" in printed
    assert "published rewards: 84 of 200 runs at 1" in printed
    done = in_process("score", tmp_path / "tau_airline.yaml", "-t", tmp_path / "t.jsonl", "--json")
    assert done.returncode == 1, done.stderr  # failures, and nothing stale
    assert "stale" not in done.stderr
    results = json.loads(done.stdout)["results"]
    verdicts = {(r["case"], r["trial"]): r for r in results}
    assert len(verdicts) == 200
    differ = {k for k, r in verdicts.items() if (r["status"] == "pass") != (rewards[k] == 1)}
    assert differ == set(DIFFERENCES)
    assert len(verdicts) - len(differ) == 197
    for key in (("task 2", 2), ("task 44", 2)):
        assert "final_answer.contains: answer lacks" in verdicts[key]["reason"]
    transcripts = [json.loads(line) for line in (tmp_path / "t.jsonl").open()]
    cut = [(t["case"], t["trial"]) for t in transcripts if t["finish_reason"] == "max_turns"]
    assert ("task 46", 3) in cut and all(rewards[k] == 0 for k in cut)


# ---------------------------------------------------------------- hostile files


def run_record(task_id: Any, trial: Any, by: int, reward: float = 1.0) -> dict[str, Any]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "bump", "arguments": f'{{"by": {by}}}'},
    }
    return {
        "task_id": task_id,
        "trial": trial,
        "reward": reward,
        "info": {"task": {"actions": [{"name": "bump", "kwargs": {"by": 2}}], "outputs": []}},
        "traj": [
            {"role": "user", "content": "bump it by two"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "name": "bump", "content": str(by)},
            {"role": "assistant", "content": "done"},
        ],
    }


def small(tmp_path: Path, records: Any) -> Any:
    """The import of `records` (a text: written as it is) over a one-counter world."""
    text = records if isinstance(records, str) else json.dumps(records)
    (tmp_path / "runs.json").write_text(text)
    (tmp_path / "world.json").write_text(json.dumps({"counters": {"c": 0}}))
    (tmp_path / "tools.yaml").write_text(BUMP_TOOLS)
    return in_process(
        "import", "tau-bench", tmp_path / "runs.json", "--world", tmp_path / "world.json",
        "--tools", tmp_path / "tools.yaml", "--suite-out", tmp_path / "out" / "s.yaml",
        "--out", tmp_path / "out" / "t.jsonl",
    )  # fmt: skip


@pytest.mark.timeout(120)
def test_a_record_that_is_not_a_run_is_named_and_the_others_are_judged(tmp_path: Path) -> None:
    records = [run_record(0, 0, 2), run_record("zero", 1, 2), [], run_record(0, 1, 3, 0.0)]
    done = small(tmp_path, records)
    assert done.returncode == 0, done.stderr
    assert "runs.json:1:1: record record-1 refused: task_id is a string, not a whole number" in (
        done.stderr
    )
    assert "runs.json:1:1: record record-2 refused: the record is an empty list, not a mapping" in (
        done.stderr
    )
    assert "2 of 4 record(s) refused, the rest imported" in done.stderr
    assert "wrote 4 transcripts" in done.stdout  # two runs, and an errored one per refused
    scored = in_process(
        "score", tmp_path / "out" / "s.yaml", "-t", tmp_path / "out" / "t.jsonl", "--json"
    )
    assert "Traceback" not in scored.stderr
    results = json.loads(scored.stdout)["results"]
    verdicts = {r["trial"]: r["status"] for r in results if r["case"] == "task 0"}
    assert verdicts == {0: "pass", 1: "fail"}  # by 2 reaches the gold world, by 3 does not
    refused = {r["case"]: r["status"] for r in results if r["case"] != "task 0"}
    assert refused == {"record-1": "error", "record-2": "error"}  # each counts, as failed


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("content", "words"),
    [
        ({"task_id": 0}, "the file is not a JSON list of runs, got an object with keys 'task_id'"),
        ([{"task_id": 0}], "record record-0 refused: trial is missing (or null), not a whole"),
        ("[{", "runs.json:1:3"),
    ],
)
def test_a_file_of_no_runs_is_refused_and_nothing_is_written(
    tmp_path: Path, content: Any, words: str
) -> None:
    done = small(tmp_path, content)
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr
    assert words in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()
