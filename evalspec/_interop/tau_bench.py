"""τ-bench's published trajectories as evalspec transcripts, and its tasks as cases.

A trajectory file (`historical_trajectories/*.json` of sierra-research/tau-bench) is a JSON
list of runs: `task_id`, `trial`, `reward`, `info.task` (the task: its user, instruction, gold
`actions` and required `outputs`) and `traj` (the conversation in OpenAI chat format). Each run
becomes a transcript of case `task N`; each task becomes a case judged as τ-bench's reward
judges it: the world the run's calls leave must be the world the gold actions leave (every
record; τ-bench compares a hash of the whole), and each required output must be in the answer.

The gold world is found by running the gold actions through the suite's own tools (a
terminating tool, `transfer_to_human_agents`, is left out as τ-bench's reward leaves it out),
so the cases hold no τ-bench code. A record that is not a run is refused, named with the
reason, and the others are imported.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from evalspec._interop.records import Refusal, what_it_is
from evalspec._suite.yaml_tree import MAX_DEPTH
from evalspec._transcript import ToolCall, Transcript
from evalspec._util.reading import nests_deeper

TERMINATE = ("transfer_to_human_agents",)
"""τ-bench's airline and retail envs end the conversation on these; its reward does not
replay them."""


@dataclass(frozen=True)
class Run:
    """One published run: the task it ran, its trial and reward, and its transcript."""

    task_id: int
    trial: int
    reward: float
    task: dict[str, Any]
    transcript: Transcript


@dataclass(frozen=True)
class Trajectories:
    runs: list[Run]
    refused: list[Refusal]
    """One per record that is not a run (`record-N`, N its index in the file's list)."""


class NotARun(ValueError):
    """A record of a trajectory file that is not a τ-bench run."""


def case_name(task_id: int) -> str:
    return f"task {task_id}"


def read_runs(records: Any, model: str, source: str = "") -> Trajectories:
    """Every run of a parsed trajectory file (`source`, for messages); the records that are
    not runs, refused (evalspec._interop.records: each stands as a case that fails)."""
    if not isinstance(records, list):
        raise NotARun(f"the file is not a JSON list of runs, got {what_it_is(records)}")
    runs, refused = [], []
    seen: dict[tuple[int, int], int] = {}
    tasks: dict[int, tuple[dict[str, Any], int]] = {}
    for i, record in enumerate(records):
        try:
            run = _run(record, model)
            _one_of_its_kind(run, i, seen, tasks)
        except NotARun as exc:
            refused.append(Refusal(f"record-{i}", source, 1, str(exc)))
            continue
        runs.append(run)
    return Trajectories(runs, refused)


def _one_of_its_kind(
    run: Run,
    index: int,
    seen: dict[tuple[int, int], int],
    tasks: dict[int, tuple[dict[str, Any], int]],
) -> None:
    """NotARun for a second run of one task and trial (its reward would replace the first's),
    or a run of a task stated otherwise by an earlier run (it would be judged by that one)."""
    first = seen.setdefault((run.task_id, run.trial), index)
    if first != index:
        raise NotARun(
            f"a second run of task {run.task_id}, trial {run.trial} (the first is record-{first})"
        )
    task, where = tasks.setdefault(run.task_id, (run.task, index))
    if task != run.task:
        raise NotARun(
            f"its info.task differs from that of record-{where}, an earlier run of task "
            f"{run.task_id}: one case judges every run of a task"
        )


def _need(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, kind):
        shown = "missing (or null)" if value is None and what != "the record" else what_it_is(value)
        raise NotARun(f"{what} is {shown}, not {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {dict: "a mapping", list: "a list", str: "a text", int: "a whole number"}
    return " or ".join(names.get(k, "a number") for k in kinds)


VALUE_DEPTH = MAX_DEPTH - 16
"""How deep a task may nest: its case holds it under the suite, the case and its checks."""
RUN_KEYS = ("task_id", "trial", "reward", "info", "traj")
"""The keys of a τ-bench run."""


def _run(record: Any, model: str) -> Run:
    record = _need(record, dict, "the record")
    if not any(k in record for k in RUN_KEYS):
        raise NotARun(
            f"it is no run (it has none of {', '.join(RUN_KEYS)}): got {what_it_is(record)}"
        )
    task_id = _need(record.get("task_id"), int, "task_id")
    trial = _need(record.get("trial"), int, "trial")
    if task_id < 0 or trial < 0:
        raise NotARun("task_id and trial must not be negative")
    reward = _need(record.get("reward"), (int, float), "reward")
    info = _need(record.get("info"), dict, "info")
    task = _need(info.get("task"), dict, "info.task")
    actions = _need(task.get("actions"), list, "info.task.actions")
    for j, action in enumerate(actions):
        action = _need(action, dict, f"info.task.actions[{j}]")
        _need(action.get("name"), str, f"info.task.actions[{j}].name")
        _need(action.get("kwargs"), dict, f"info.task.actions[{j}].kwargs")
    outputs = _need(task.get("outputs", []), list, "info.task.outputs")
    for j, output in enumerate(outputs):
        _need(output, str, f"info.task.outputs[{j}]")
    if nests_deeper(task, VALUE_DEPTH):  # the case's expected world and outputs hold it
        raise NotARun(f"info.task nests deeper than {VALUE_DEPTH} levels, more than a suite holds")
    messages = _need(record.get("traj"), list, "traj")
    for j, message in enumerate(messages):
        _need(message, dict, f"traj[{j}]")
    transcript = _transcript(task_id, trial, model, messages)
    if info.get("reward_info") is None:  # never judged: τ-bench's step limit cut it off
        transcript = msgspec.structs.replace(transcript, finish_reason="max_turns")
    return Run(task_id, trial, float(reward), task, transcript)


def _transcript(task_id: int, trial: int, model: str, messages: list[dict[str, Any]]) -> Transcript:
    """The run as evalspec records one: every call τ-bench ran, with its observation as the
    output (`Error: ...` as the error). A tool message answers the earliest call not yet
    answered that has its id (published runs reuse ids); a call no tool message answers was
    not run (τ-bench's agent runs the first call of a message only) and is left out."""
    pending: list[tuple[dict[str, Any], int]] = []
    calls: list[ToolCall] = []
    final: str | None = None
    turn = 0
    for j, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            at = next(
                (
                    i
                    for i, (c, _) in enumerate(pending)
                    if c.get("id") == message.get("tool_call_id")
                ),
                None,
            )
            if at is not None:
                call, made_in = pending.pop(at)
                calls.append(_call(call, made_in, message.get("content")))
            continue
        if role != "assistant":
            continue
        content = message.get("content")
        listed = _need(message.get("tool_calls") or [], list, f"traj[{j}].tool_calls")
        if isinstance(content, str) and content and not listed:
            final = content
        for call in listed:
            pending.append((_need(call, dict, f"traj[{j}].tool_calls[]"), turn))
        turn += 1
    return Transcript(
        item_id=f"tau-bench:{model}:{task_id}:{trial}",
        case=case_name(task_id),
        model=model,
        trial=trial,
        messages=tuple(messages),
        tool_calls=tuple(calls),
        final_answer=final,
        finish_reason="stop",
        turns=turn,
        source="import:tau-bench",
    )


def _call(call: dict[str, Any], turn: int, observation: Any) -> ToolCall:
    """One call τ-bench ran and what it observed."""
    function = _need(call.get("function"), dict, "a call's function")
    name = _need(function.get("name"), str, "a call's name")
    raw = function.get("arguments")
    raw = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        arguments = json.loads(raw)
    except ValueError:
        arguments = None
    output, error = _observation(observation)
    return ToolCall(
        name=name,
        arguments=arguments if isinstance(arguments, dict) else None,
        raw_arguments=raw,
        id=str(call.get("id")),
        output=output,
        error=error,
        turn=turn,
    )


def _observation(text: Any) -> tuple[Any, str | None]:
    """τ-bench's observation text as (output, error): `Error: why` is an error; JSON text is
    its value; any other text stays text."""
    if not isinstance(text, str):
        return text, None
    if text.startswith("Error: "):
        return None, text[len("Error: ") :]
    try:
        return json.loads(text), None
    except ValueError:
        return text, None


def gold_calls(task: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The gold actions τ-bench's reward replays: all but the terminating ones."""
    return [(a["name"], a["kwargs"]) for a in task["actions"] if a["name"] not in TERMINATE]


def tasks(runs: Sequence[Run]) -> dict[int, dict[str, Any]]:
    """Each task once, as its first run states it."""
    out: dict[int, dict[str, Any]] = {}
    for run in runs:
        out.setdefault(run.task_id, run.task)
    return out
