"""`evalspec merge`: shard runs combine into one run directory, scored like `run` scores."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from support import KEY_ENV, in_process, results_of, scripted, write_e2e_suite

from evalspec import api
from evalspec.api import write_transcripts
from evalspec.errors import UsageError
from evalspec.records import Transcript


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv(KEY_ENV, "sk-test-merge-0000")
    with FakeOpenAI(scripted) as fake:
        yield fake


def fake_run(run_dir: Path, suite_path: Path, answers: dict[str, str]) -> None:
    """A run directory of model m1 holding one transcript per (item id -> final answer), its
    run.json as docs/reference/runs.md describes it."""
    suite = api.load_suite(suite_path)
    plan = api.compile_plan(suite, models=["m1"])
    by_id = {it.id: it for it in plan.items}
    run_dir.mkdir(parents=True)
    manifest = {"suite": suite.name, "path": str(suite_path.resolve())}
    manifest["selection"] = {"models": ["m1"]}
    (run_dir / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    write_transcripts(
        run_dir / "transcripts.jsonl",
        [
            Transcript(item_id, by_id[item_id].case.name, "m1", final_answer=text)
            for item_id, text in answers.items()
        ],
    )


def finished(run_dir: Path) -> set[str]:
    """The ids of the items a run directory holds finished."""
    return {t.item_id for t in api.load_transcripts(run_dir)}


@pytest.mark.slow
def test_cli_shards_cover_every_item_once_and_merge_into_one_run(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = write_e2e_suite(tmp_path, server.base_url, mode="single_turn")
    for i in (1, 2):
        proc = in_process("run", suite, "--shard", f"{i}/2", "--out", tmp_path / f"shard{i}")
        assert proc.returncode in (0, 1), proc.stderr
    one, two = (finished(tmp_path / f"shard{i}") for i in (1, 2))
    everything = {it.id for it in api.compile_plan(api.load_suite(suite)).items}
    assert one and two and not one & two
    assert one | two == everything
    assert len(server.requests) == len(everything)

    merged = tmp_path / "merged"
    proc = in_process("merge", tmp_path / "shard1", tmp_path / "shard2", "--out", merged)
    assert proc.returncode == 1, proc.stderr  # m2 adds the wrong numbers
    assert "merged from 2 run directories" in proc.stdout
    data = results_of(merged)
    assert {r["item_id"] for r in data["results"]} == everything
    statuses = {(c["case"], c["model"]): c["status"] for c in data["cases"]}
    assert statuses[("add numbers", "m2")] == "fail"
    assert statuses[("weather paris", "m1")] == "pass"
    assert finished(merged) == everything
    assert json.loads((merged / "run.json").read_text())["suite"] == "e2e"


def test_the_last_directory_wins_for_an_item_in_several(tmp_path: Path) -> None:
    suite = write_e2e_suite(tmp_path, "http://127.0.0.1:9/v1")
    ids = [it.id for it in api.compile_plan(api.load_suite(suite), models=["m1"]).items]
    fake_run(tmp_path / "a", suite, {ids[0]: "old", ids[1]: "only in a"})
    fake_run(tmp_path / "b", suite, {ids[0]: "new", ids[2]: "only in b"})
    merged = api.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "merged")
    answers = {t.item_id: t.final_answer for t in api.load_transcripts(merged.run_dir)}
    assert answers == {ids[0]: "new", ids[1]: "only in a", ids[2]: "only in b"}
    assert "1 duplicates replaced" in merged.note
    assert Path(merged.suite.path) == suite.resolve()


def test_shards_of_different_suites_are_refused(tmp_path: Path) -> None:
    first = write_e2e_suite(tmp_path, "http://127.0.0.1:9/v1")
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other = write_e2e_suite(other_dir, "http://127.0.0.1:9/v1")
    other.write_text(other.read_text().replace("suite: e2e", "suite: weather"))
    ids = [it.id for it in api.compile_plan(api.load_suite(first), models=["m1"]).items]
    fake_run(tmp_path / "a", first, {ids[0]: "x"})
    fake_run(tmp_path / "b", other, {ids[1]: "y"})
    with pytest.raises(UsageError, match=r"different suites.*'e2e'.*'weather'"):
        api.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    proc = in_process("merge", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert "different suites" in proc.stderr and "Traceback" not in proc.stderr


def test_merge_without_run_json_needs_the_suite(tmp_path: Path) -> None:
    suite = write_e2e_suite(tmp_path, "http://127.0.0.1:9/v1")
    ids = [it.id for it in api.compile_plan(api.load_suite(suite), models=["m1"]).items]
    fake_run(tmp_path / "a", suite, {ids[0]: "x"})
    (tmp_path / "a" / "run.json").unlink()
    with pytest.raises(UsageError, match="suite=SUITE"):
        api.merge([tmp_path / "a"], tmp_path / "out")
    merged = api.merge([tmp_path / "a"], tmp_path / "out", suite=suite)
    assert (merged.missing, merged.planned) == (5, 6)
    assert [t.item_id for t in api.load_transcripts(merged.run_dir)] == [ids[0]]
    assert merged.exit_code == 1  # no call made: fails
    proc = in_process("merge", tmp_path / "a", "--out", tmp_path / "out2", "--suite", suite)
    assert proc.returncode == 1, proc.stderr
    assert [r["item_id"] for r in results_of(tmp_path / "out2")["results"]] == [ids[0]]
    assert "5 of 6 planned items are in none of the run directories" in proc.stderr


def test_merge_refuses_an_out_that_holds_another_run(tmp_path: Path) -> None:
    suite = write_e2e_suite(tmp_path, "http://127.0.0.1:9/v1", mode="single_turn")
    plan = api.compile_plan(api.load_suite(suite), models=["m1"])
    fake_run(tmp_path / "shard", suite, {plan.items[0].id: "4"})
    used = tmp_path / "used"
    used.mkdir()
    (used / "transcripts.jsonl").write_text('{"kept": true}\n', encoding="utf-8")
    proc = in_process("merge", tmp_path / "shard", "--out", used)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"error: --out {used} already holds files of a run; choose a new directory"
    )
    assert (used / "transcripts.jsonl").read_text(encoding="utf-8") == '{"kept": true}\n'
