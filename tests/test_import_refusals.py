"""Importers say why nothing, or less than expected, was imported.

What a user hands BFCL's, StableToolBench's and τ-bench's importers by mistake (the other file
of the pair, another benchmark's file, an empty list, JSON Lines where one document is read) or
what a hostile file holds (entries that are no record, two records of one id): each refused
entry is named by its place (`line-N`, `entry-K` in a JSON list, `query-N`) with what it is
instead, a line says what was read, imported and refused, and input with nothing usable in it
is refused whole (exit 2, nothing written). Before, such entries were all `line-1` (two cases
of one name: the suite written did not validate), an answer file given in the place of another
imported as "no call expected", and an empty answer file wrote nothing with exit 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import in_process

from evalspec import api
from evalspec.errors import EvalspecError

DATA = Path(__file__).resolve().parent / "data"
BFCL_Q = DATA / "bfcl" / "BFCL_v4_simple_python.json"
BFCL_A = DATA / "bfcl" / "possible_answer" / "BFCL_v4_simple_python.json"
STB_QUERIES = DATA / "stabletoolbench/solvable_queries_example/test_instruction/G1_instruction.json"
STB_ANSWERS = (
    DATA / "stabletoolbench/data_example/model_predictions_converted/virtual_chatgpt_cot"
    / "G1_instruction.json"
)  # fmt: skip


def first_lines(path: Path, count: int = 2) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()[:count]]


def jsonl(records: list[Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def said(done: Any) -> str:
    """Everything the command printed, on one line per message."""
    return done.stdout + done.stderr


def bfcl(tmp_path: Path, questions: str, answers: str) -> tuple[Any, Path]:
    (tmp_path / "q.json").write_text(questions, "utf-8")
    (tmp_path / "a.json").write_text(answers, "utf-8")
    out = tmp_path / "out" / "s.yaml"
    done = in_process(
        "import", "bfcl", "q.json", "a.json", "--names", "dotted", "--out", out, cwd=tmp_path
    )
    assert "Traceback" not in said(done)
    return done, out


def case_names(*paths: Path) -> list[str]:
    return [c["name"] for p in paths for c in yaml.safe_load(p.read_text("utf-8"))["cases"]]


# ---------------------------------------------------------------------------------- BFCL


def test_entries_of_a_json_list_that_are_no_record_are_named_by_their_place(tmp_path):
    """Two entries that are no record, in a JSON list: each refused under its own name and said
    what it is; the suite written validates (both were `line-1`: two cases of one name)."""
    good = first_lines(BFCL_Q, 1)
    done, out = bfcl(tmp_path, json.dumps([*good, 5, {"a": 1}]), BFCL_A.read_text("utf-8"))
    assert done.returncode == 0, said(done)
    lines = done.stderr.splitlines()
    assert "q.json:1:1: record entry-2 refused: every record must be a JSON object with an " \
        "'id', got a number" in lines  # fmt: skip
    assert "q.json:1:1: record entry-3 refused: every record must be a JSON object with an " \
        "'id', got an object with keys 'a'" in lines  # fmt: skip
    assert "3 question entries read: 1 imported as cases, 2 refused" in done.stderr
    assert case_names(out) == [good[0]["id"], "entry-2", "entry-3"]
    api.load_suite(out)  # validates


@pytest.mark.parametrize(
    ("given", "what"),
    [(BFCL_Q, "a BFCL question record"), ("results", "a BFCL model result")],
)
def test_a_question_or_result_file_given_as_answers_is_refused_with_what_it_is(
    tmp_path: Path, given: Path | str, what: str
) -> None:
    """Records without `ground_truth` were read as expecting no call: every case passed a
    model that called nothing, and the import said nothing (exit 0)."""
    questions = first_lines(BFCL_Q)
    if given == "results":
        answers = [{"id": q["id"], "result": "[f(a=1)]"} for q in questions]
    else:
        answers = questions
    done, out = bfcl(tmp_path, jsonl(questions), jsonl(answers))
    assert done.returncode == 2, said(done)
    assert "every record was refused, nothing written" in done.stderr
    assert f"a.json:1:1: record {questions[0]['id']} refused: it has no 'ground_truth'" in (
        done.stderr
    )
    assert f"({what}: is the file given in the right place?)" in done.stderr
    assert not out.parent.exists()


def test_an_answer_file_given_as_questions_is_refused_with_what_it_is(tmp_path: Path) -> None:
    answers = first_lines(BFCL_A)
    done, out = bfcl(tmp_path, jsonl(answers), jsonl(answers))
    assert done.returncode == 2, said(done)
    assert (
        f"q.json:1:1: record {answers[0]['id']} refused: it has no 'question': got an object "
        "with keys 'id', 'ground_truth' (a BFCL possible-answer record: is the file given in "
        "the right place?)" in done.stderr
    )
    assert not out.parent.exists()


def test_an_answer_file_without_a_record_is_refused_for_its_own_entries(tmp_path: Path) -> None:
    """The answer file's entries are named, not every question as 'no possible answer'."""
    done, out = bfcl(tmp_path, jsonl(first_lines(BFCL_Q)), "[1, 2]")
    assert done.returncode == 2, said(done)
    assert "a.json:1:1: record entry-1 refused: every record must be a JSON object with an " \
        "'id', got a number" in done.stderr  # fmt: skip
    assert "check that it is a BFCL possible_answer file" in done.stderr
    assert "has no possible answer with this id" not in done.stderr
    assert not out.parent.exists()


def test_answer_lines_refused_are_counted_apart_from_the_cases(tmp_path: Path) -> None:
    """Bad lines of the answer file make no case: the count said '2 of 2 record(s) refused,
    the rest imported; each refused record is a case' while both cases imported."""
    questions = first_lines(BFCL_Q)
    answers = [json.loads(line) for line in BFCL_A.read_text("utf-8").splitlines()[:3]]
    text = jsonl(answers[:1]) + "{torn\n7\n" + jsonl(answers[1:])
    done, _ = bfcl(tmp_path, jsonl(questions), text)
    assert done.returncode == 0, said(done)
    assert (
        "2 question entries read: 2 imported as cases, 0 refused (each stands as a case tagged "
        "import-refused that fails); 2 entries of the answer file refused (no case); 1 possible "
        f"answer(s) of no question, unused ('{answers[2]['id']}')" in done.stderr
    )
    assert "record(s) refused, the rest imported" not in done.stderr


def test_a_second_record_with_an_id_already_read_is_refused(tmp_path: Path) -> None:
    questions = first_lines(BFCL_Q)
    done, out = bfcl(tmp_path, jsonl([*questions, questions[0]]), BFCL_A.read_text("utf-8"))
    assert done.returncode == 0, said(done)
    assert (
        f"q.json:3:1: record line-3 refused: a second record with id '{questions[0]['id']}' "
        "(the first is on line 1)" in done.stderr
    )
    api.load_suite(out)  # validates: no two cases of one name


def test_results_of_no_case_are_named(tmp_path: Path) -> None:
    questions = first_lines(BFCL_Q)
    suite = tmp_path / "s.yaml"
    (tmp_path / "q.json").write_text(jsonl(questions), "utf-8")
    api.import_bfcl(tmp_path / "q.json", suite, BFCL_A, names="dotted")
    results = tmp_path / "r.json"
    results.write_text(jsonl([{"id": "simple_python_9x", "result": "[f()]"}]), "utf-8")
    with pytest.raises(EvalspecError) as refused:
        api.import_bfcl_results(suite, results, tmp_path / "t.jsonl")
    message = str(refused.value)
    assert "the results' ids: 'simple_python_9x'" in message
    assert f"the suite's cases: '{questions[0]['id']}', '{questions[1]['id']}'" in message
    assert not (tmp_path / "t.jsonl").exists()
    results.write_text(
        jsonl([{"id": questions[0]["id"], "result": "[f()]"}, {"id": "other_1", "result": "x"}])
    )
    written = api.import_bfcl_results(suite, results, tmp_path / "t.jsonl")
    assert written.skipped == 1
    assert written.summary == (
        f"2 result entries read: 1 transcript(s) of cases of {suite} (0 errored: each fails), "
        "1 skipped, 0 refused; skipped 1 result(s) whose id is no case of it: 'other_1'"
    )


# ------------------------------------------------------------------------- StableToolBench


def stb(tmp_path: Path, text: str, *more: str) -> Any:
    (tmp_path / "q.json").write_text(text, "utf-8")
    done = in_process(
        "import", "stabletoolbench", "q.json", *more, "--out", "out/s.yaml", cwd=tmp_path
    )
    assert "Traceback" not in said(done)
    return done


def test_stabletoolbench_entries_keep_their_place_and_each_counts_once(tmp_path: Path) -> None:
    """Entries were renumbered after those that are no object were taken out: two refused
    entries were both `query-2` (a suite that did not validate) and one was counted twice."""
    good = json.loads(STB_QUERIES.read_text("utf-8"))[0]
    done = stb(tmp_path, json.dumps([good, 5, {"a": 1}, "x"]))
    assert done.returncode == 0, said(done)
    lines = done.stderr.splitlines()
    assert "q.json:1:1: record query-2 refused: the query is not an object, got a number" in lines
    assert "q.json:1:1: record query-3 refused: it has no 'api_list': got an object with keys " \
        "'a'" in lines  # fmt: skip
    assert "q.json:1:1: record query-4 refused: the query is not an object, got a string" in lines
    assert "4 queries read: 1 imported as cases, 3 refused" in done.stderr
    out = tmp_path / "out" / "s.yaml"
    assert case_names(out) == [str(good["query_id"]), "query-2", "query-3", "query-4"]
    api.load_suite(out)  # validates


def test_a_second_query_with_an_id_already_read_is_refused(tmp_path: Path) -> None:
    good = json.loads(STB_QUERIES.read_text("utf-8"))[0]
    done = stb(tmp_path, json.dumps([good, good]))
    assert done.returncode == 0, said(done)
    assert f"record query-2 refused: a second query with query_id '{good['query_id']}'" in (
        done.stderr
    )
    api.load_suite(tmp_path / "out" / "s.yaml")  # validates


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[]", "the file holds no query: a test_instruction file is a JSON list of queries (or "
         "an object of them by id), got an empty list"),
        ("{}", "got an empty object"),
        (" \n", "the file is empty, not one JSON list of queries"),
        ('{"id": 1}\n{"id": 2}\n', "the file holds a JSON document per line (JSON Lines, line 1 "
         "an object with keys 'id'), not one JSON list of queries"),
    ],
)  # fmt: skip
def test_a_query_file_with_no_query_in_it_says_what_it_holds(
    tmp_path: Path, text: str, words: str
) -> None:
    done = stb(tmp_path, text)
    assert done.returncode == 2, said(done)
    assert done.stderr.startswith("q.json:1:1: ") and words in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("ids", "words"),
    [
        ("5", "ids.json:1:1: a test_query_ids file is a JSON list of query ids (or an object "
         "keyed by them), got a number"),
        ("[1, 2]", "ids.json:1:1: no query of q.json has an id listed here (the queries' ids: "
         "'1073', '588', '608')"),
    ],
)  # fmt: skip
def test_an_ids_file_that_selects_nothing_says_why(tmp_path: Path, ids: str, words: str) -> None:
    (tmp_path / "ids.json").write_text(ids, "utf-8")
    done = stb(tmp_path, STB_QUERIES.read_text("utf-8"), "--ids", "ids.json")
    assert done.returncode == 2, said(done)
    assert words in done.stderr
    assert not (tmp_path / "out").exists()


def test_an_empty_converted_answer_file_is_refused(tmp_path: Path) -> None:
    """`{}` wrote an empty transcripts file with exit 0."""
    (tmp_path / "c.json").write_text("{}", "utf-8")
    with pytest.raises(EvalspecError, match="got an empty object"):
        api.import_stabletoolbench_answers(tmp_path / "c.json", tmp_path / "t.jsonl")
    assert not (tmp_path / "t.jsonl").exists()


def test_a_converted_answer_without_answer_is_refused_not_read_as_no_call(tmp_path: Path):
    """An object without `answer` stood as a run that called nothing, unsaid."""
    answers = json.loads(STB_ANSWERS.read_text("utf-8"))
    first = next(iter(answers))
    (tmp_path / "c.json").write_text(json.dumps({first: answers[first], "x": {"a": 1}}))
    written = api.import_stabletoolbench_answers(tmp_path / "c.json", tmp_path / "t.jsonl")
    assert [str(r) for r in written.refused] == [
        f"{tmp_path / 'c.json'}:1:1: record x refused: it has no 'answer': got an object with "
        "keys 'a'"
    ]
    made = {t.case: t for t in api.load_transcripts(tmp_path / "t.jsonl")}
    assert made["x"].finish_reason == "error"


# ------------------------------------------------------------------------------- τ-bench


NOOP = """\
- name: noop
  parameters: {type: object, properties: {by: {type: integer}}}
  behavior: {response: ok}
"""


def tau(tmp_path: Path, records: Any) -> Any:
    (tmp_path / "runs.json").write_text(json.dumps(records), "utf-8")
    (tmp_path / "world.json").write_text(json.dumps({"counters": {"c": 0}}), "utf-8")
    (tmp_path / "tools.yaml").write_text(NOOP, "utf-8")
    done = in_process(
        "import", "tau-bench", "runs.json", "--world", "world.json", "--tools", "tools.yaml",
        "--suite-out", "out/s.yaml", "--out", "out/t.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert "Traceback" not in said(done)
    return done


@pytest.mark.parametrize(
    ("records", "words"),
    [
        ({"a": 1}, "runs.json is not a τ-bench trajectory file: the file is not a JSON list of "
         "runs, got an object with keys 'a'"),
        ([{"a": 1}], "runs.json:1:1: record record-0 refused: it is no run (it has none of "
         "task_id, trial, reward, info, traj): got an object with keys 'a'"),
        ([{"task_id": "1"}], "record record-0 refused: task_id is a string, not a whole number"),
        ([{"task_id": 1}], "record record-0 refused: trial is missing (or null), not a whole "
         "number"),
    ],
)  # fmt: skip
def test_tau_bench_records_that_are_no_run_say_what_they_are(
    tmp_path: Path, records: Any, words: str
) -> None:
    """In words, not Python's type names (`task_id is str`, `trial is NoneType`)."""
    done = tau(tmp_path, records)
    assert done.returncode == 2, said(done)
    assert words in done.stderr
    assert "NoneType" not in done.stderr
    assert not (tmp_path / "out").exists()


def run_of(task_id: int, trial: int, gold: int) -> dict[str, Any]:
    """A τ-bench run that calls nothing, of a task whose gold action bumps by `gold`."""
    task = {"actions": [{"name": "noop", "kwargs": {"by": gold}}], "outputs": []}
    return {
        "task_id": task_id,
        "trial": trial,
        "reward": 0.0,
        "info": {"task": task},
        "traj": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "no"}],
    }


def test_tau_bench_runs_that_would_replace_or_misjudge_another_are_refused(tmp_path: Path):
    """A second run of one task and trial replaced the first's published reward ('1 of 2 runs'
    for 3 imported); a run stating its task otherwise was judged by the first run's task."""
    done = tau(tmp_path, [run_of(0, 0, 2), run_of(0, 0, 2), run_of(0, 1, 5), run_of(0, 2, 2)])
    assert done.returncode == 0, said(done)
    lines = done.stderr.splitlines()
    assert "runs.json:1:1: record record-1 refused: a second run of task 0, trial 0 (the first " \
        "is record-0)" in lines  # fmt: skip
    assert (
        "runs.json:1:1: record record-2 refused: its info.task differs from that of "
        "record-0, an earlier run of task 0: one case judges every run of a task" in lines
    )
    assert "published rewards: 0 of 2 runs at 1" in done.stdout


def test_a_function_no_suite_can_offer_is_refused_and_said(tmp_path: Path) -> None:
    """A BFCL function named `a b`, or a StableToolBench answer's function named so: the
    suite written did not validate (exit 0); now that record is refused, named and said."""
    questions = first_lines(BFCL_Q)
    questions[1]["function"][0]["name"] = "get area\x1b[2J"
    done, out = bfcl(tmp_path, jsonl(questions), BFCL_A.read_text("utf-8"))
    assert done.returncode == 0, said(done)
    assert (
        f"q.json:2:1: record {questions[1]['id']} refused: a function's name 'get area\\x1b[2J' "
        "is no tool name (1 to 64 letters, digits, '_', '.' or '-')" in done.stderr
    )
    api.load_suite(out)  # validates
    answers = json.loads(STB_ANSWERS.read_text("utf-8"))
    first, second = list(answers)[:2]
    answers[second]["available_tools"][0]["name"] = "no such name"
    (tmp_path / "c.json").write_text(json.dumps({first: answers[first], second: answers[second]}))
    done = in_process(
        "import", "stabletoolbench-answers", "c.json", "--out", "t.jsonl", "--suite-out",
        "s.yaml", "--judge", "judge-model", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, said(done)
    assert f"c.json:1:1: record {second} refused: a function's name 'no such name' is no tool" \
        in done.stderr  # fmt: skip
    api.load_suite(tmp_path / "s.yaml")  # validates


def test_the_queries_read_and_those_an_ids_file_keeps_are_counted(tmp_path: Path) -> None:
    (tmp_path / "ids.json").write_text('["588"]', "utf-8")
    done = stb(tmp_path, STB_QUERIES.read_text("utf-8"), "--ids", "ids.json")
    assert done.returncode == 0, said(done)
    assert (
        "3 queries read, 1 with an id of ids.json: 1 imported as cases, 0 refused (each stands "
        "as a case tagged import-refused that fails)" in done.stderr
    )
