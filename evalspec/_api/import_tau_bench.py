"""`evalspec import tau-bench`: τ-bench's published runs as transcripts, its tasks as a suite.

The suite holds the world (`--world`, τ-bench's data as one JSON document) as its state, the
domain's tools (`--tools`, written in the state language and included, not copied), and one
case per task judged as τ-bench's reward judges a run: every record of the world must end as
the task's gold actions leave it (run through those same tools here), and every required
output must be in the answer. `evalspec score SUITE -t TRANSCRIPTS` then replays each run's
calls and gives its verdict, to set beside the reward the file publishes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec._interop.records import (
    Refusal,
    errored_transcript,
    read_document,
    refused_all,
    refused_case,
)
from evalspec._interop.tau_bench import Run, case_name, gold_calls, read_runs, tasks
from evalspec._util.errors import UsageError
from evalspec._util.files import atomic_write
from evalspec._util.outputs import check_output_file
from evalspec._util.reading import display_name, parse_json, read_text

PASS_ONLY_AT_ONE = {
    "fail_threshold": 1.0,
    "warn_threshold": 1.0,
    "fail_on_tool_call_quantity": False,
    "extra_calls": "allow",
}
"""τ-bench's reward is all or nothing, whatever calls reach the world."""


@dataclass(frozen=True)
class TauBenchImported:
    """What `import tau-bench` wrote, and the published reward of each run."""

    suite: Path
    transcripts: Path
    count: int
    refused: tuple[Refusal, ...]
    """Records that are not runs (file, line, why), each standing in the suite as a case
    tagged `import-refused` that fails, with an errored transcript."""
    rewards: dict[tuple[str, int], float]
    """(case, trial) -> the reward the file publishes."""


def import_tau_bench(
    trajectories: str | Path,
    out: str | Path,
    *,
    world: str | Path,
    tools: str | Path,
    suite_out: str | Path,
    model: str | None = None,
) -> TauBenchImported:
    """Turn a τ-bench trajectory file into transcripts (`out`) and a suite of its tasks
    (`suite_out`) over `world` and `tools`; nothing is written when the inputs do not fit."""
    source, out, suite_path = Path(trajectories), Path(out), Path(suite_out)
    check_output_file(out, "out")
    check_output_file(suite_path, "suite_out")
    label = model or source.stem
    hint = "give a historical_trajectories/*.json file of tau-bench"
    records = read_document(source, "one JSON list of runs", hint)
    try:
        read = read_runs(records, label, display_name(source))
    except ValueError as exc:
        raise UsageError(f"{source} is not a τ-bench trajectory file: {exc}") from None
    if not read.runs:
        if read.refused:
            raise refused_all(read.refused, "a historical_trajectories/*.json file of tau-bench")
        raise UsageError(
            f"{source}: no τ-bench run in it (empty); give a historical_trajectories/*.json "
            "file of tau-bench"
        )
    state = parse_json(read_text(Path(world)), str(world))
    if not isinstance(state, dict):
        raise UsageError(f"{world}: the world must be one JSON mapping (τ-bench's data)")
    include = os.path.relpath(Path(tools).resolve(), suite_path.resolve().parent)
    base = _suite(suite_path.stem, label, state, include, [])
    gold = _gold_worlds(base, suite_path, tasks(read.runs))
    cases = [_case(task_id, task, state, gold[task_id]) for task_id, task in gold_tasks(read.runs)]
    cases += [refused_case(r) for r in read.refused]
    stand_ins = [
        errored_transcript(f"tau:{r.record}", r.record, label, str(r), "import:tau-bench")
        for r in read.refused
    ]
    with atomic_write(suite_path) as fh:
        fh.write(_suite(suite_path.stem, label, state, include, cases))
    from evalspec._transcript import write_transcripts

    out.parent.mkdir(parents=True, exist_ok=True)
    write_transcripts(out, [run.transcript for run in read.runs] + stand_ins)
    return TauBenchImported(
        suite_path,
        out,
        len(read.runs),
        tuple(read.refused),
        {(run.transcript.case, run.trial): run.reward for run in read.runs},
    )


def gold_tasks(runs: list[Run]) -> list[tuple[int, dict[str, Any]]]:
    return sorted(tasks(runs).items())


def _suite(name: str, model: str, state: Any, include: str, cases: list[Any]) -> str:
    """The suite as YAML (each value written as JSON, which YAML reads as it is)."""
    placeholder = [{"name": "gold", "user": "-", "expect": {"no_tool_calls": True}}]
    lines = [
        f"suite: {json.dumps(name)}",
        f"models: [{json.dumps(model)}]",
        f"state: {json.dumps(state, ensure_ascii=False)}",
        f"tools: [{{include: {json.dumps(include)}}}]",
        "cases:",
        *(f"  - {json.dumps(case, ensure_ascii=False)}" for case in cases or placeholder),
    ]
    return "\n".join(lines) + "\n"


def _gold_worlds(text: str, suite_path: Path, by_task: dict[int, dict[str, Any]]) -> dict[int, Any]:
    """The world each task's gold actions leave, run through the suite's own tools."""
    from evalspec._suite.validate import load_suite
    from evalspec._tools.environment import Conversations
    from evalspec._tools.simulated import ToolSimulator

    draft = suite_path.with_name(f".{suite_path.name}.gold.yaml")  # beside it: the include
    draft.parent.mkdir(parents=True, exist_ok=True)
    draft.write_text(text, encoding="utf-8")
    try:
        suite = load_suite(draft)
    finally:
        draft.unlink()
    opener = Conversations(suite, ToolSimulator(suite.tools, suite_path.parent))
    worlds: dict[int, Any] = {}
    for task_id, task in by_task.items():
        conversation = opener.open(suite.cases[0])
        for name, kwargs in gold_calls(task):
            result = conversation.act(name, json.loads(json.dumps(kwargs)), json.dumps(kwargs))
            if result is None:
                raise UsageError(
                    f"task {task_id}: the gold action {name} is not a tool with a behavior in "
                    "the tools file given as tools=...; the gold world cannot be found",
                    params=["tools"],
                )
        worlds[task_id] = conversation.snapshot()
    return worlds


def _case(task_id: int, task: dict[str, Any], before: dict[str, Any], after: Any) -> Any:
    """τ-bench's reward as checks: each record the gold actions change must end as they
    leave it, every other must not move; each required output must be in the answer."""
    state: dict[str, Any] = {}
    unchanged: list[str] = []
    for kind, records in before.items():
        final = after.get(kind)
        if final == records:
            unchanged.append(f"/{_escape(kind)}")
            continue
        if not isinstance(records, dict) or not isinstance(final, dict):
            state[f"/{_escape(kind)}"] = {"value": final, "required": True}
            continue
        for key in {**records, **final}:
            place = f"/{_escape(kind)}/{_escape(key)}"
            if key not in final:
                state[place] = {"exists": False}
            elif records.get(key) != final[key]:
                state[place] = {"value": final[key], "required": True}
            else:
                unchanged.append(place)
    expect: dict[str, Any] = {"state": state} if state else {}
    expect["unchanged"] = unchanged
    if task.get("outputs"):
        expect["final_answer"] = {"contains": list(task["outputs"])}
    instruction = task.get("instruction")
    return {
        "name": case_name(task_id),
        "user": instruction if isinstance(instruction, str) and instruction else f"task {task_id}",
        "expect": expect,
        "rubric": PASS_ONLY_AT_ONE,
    }


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
