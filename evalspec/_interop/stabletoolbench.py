"""StableToolBench interop: its queries as tools, its converted answer files as transcripts.

Conventions (also in docs/how-to/importers.md):

- Function names follow StableToolBench/ToolBench: ``<api>_for_<tool>`` with both parts
  standardized (non-word runs -> "_", lowercase, trimmed, a leading digit gets "get_", API names
  that are Python keywords get "is_"), keeping the last 64 characters. Parameter names get the
  same treatment, so arguments look exactly as in StableToolBench runs and caches.
- API call score = |called ∩ gold| / |gold| over (tool_name, api_name) pairs; 0.0 with no gold.
- A run without a Finish call is Unsolved (SoPR 0.0); Solved 1.0, Unsure 0.5, Unsolved 0.0.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec._interop.records import (
    RecordFault,
    Refusal,
    blame,
    errored_transcript,
    read_document,
    refused_all,
    what_it_is,
)
from evalspec._interop.stabletoolbench_nodes import finished, read_tool_node, walk
from evalspec._suite.model import Tool
from evalspec._tools.toolbench_names import (
    FINISH,
    api_identifier,
    function_name,
    standardize,
)
from evalspec._transcript import ToolCall, Transcript
from evalspec._util.json_values import parse_json_value
from evalspec._util.paths import model_label
from evalspec._util.reading import display_name, input_error, read_json

SOURCE = "import:stabletoolbench"
"""The source of transcripts made from StableToolBench files."""

SOPR_VALUES = {"Solved": 1.0, "Unsure": 0.5, "Unsolved": 0.0}
DESCRIPTION_MAX = 256

_TYPE_MAP: dict[str, dict[str, Any]] = {
    "STRING": {"type": "string"},
    "NUMBER": {"type": "number"},
    "INTEGER": {"type": "integer"},
    "BOOLEAN": {"type": "boolean"},
    "ENUM": {"type": "string"},
    "DATE (YYYY-MM-DD)": {"type": "string", "format": "date"},
    "OBJECT": {"type": "object"},
    "ARRAY": {"type": "array"},
}


# ---------------------------------------------------------------------------------------------
# Queries and tools


def placed_queries(
    path: str | Path, ids_path: str | Path | None = None
) -> tuple[list[tuple[str, Any]], int]:
    """Each entry of a ``test_instruction`` file with its place (`query-N`, N its position in
    the file), whatever it is (an entry that is no query is refused where it becomes a case);
    only those whose `query_id` is in ``ids_path`` when given (and every entry that is no
    object, which has none), and how many entries the file holds. InputError when the file is
    no list (or object by id) of entries or holds none, or when no entry has an id of
    ``ids_path``."""
    name = display_name(Path(path))
    hint = "name a StableToolBench solvable_queries/test_instruction file"
    data = read_document(Path(path), "one JSON list of queries", hint)
    entries = list(data.values()) if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise input_error(
            name,
            f"the file holds no query: a test_instruction file is a JSON list of queries (or "
            f"an object of them by id), got {what_it_is(data)}",
            hint,
        )
    placed = [(f"query-{i}", q) for i, q in enumerate(entries, 1)]
    if ids_path is None:
        return placed, len(placed)
    wanted = _query_ids(Path(ids_path))
    kept = [(p, q) for p, q in placed if not isinstance(q, dict) or _id(q) in wanted]
    if not kept:
        ids = sorted({_id(q) for _, q in placed})
        raise input_error(
            display_name(Path(ids_path)),
            f"no query of {name} has an id listed here (the queries' ids: "
            f"{', '.join(repr(i[:40]) for i in ids[:3])}{' ...' if len(ids) > 3 else ''})",
            "give the test_query_ids file of the same group as the queries",
        )
    return kept, len(placed)


def _id(query: Mapping[str, Any]) -> str:
    return str(query.get("query_id"))


def _query_ids(path: Path) -> set[str]:
    """The ids of a ``test_query_ids`` file: a list of ids, or an object keyed by id."""
    ids = read_json(path)
    if isinstance(ids, dict):
        return {str(i) for i in ids}
    if isinstance(ids, list) and all(isinstance(i, str | int) for i in ids):
        return {str(i) for i in ids}
    raise input_error(
        display_name(path),
        f"a test_query_ids file is a JSON list of query ids (or an object keyed by them), got "
        f"{what_it_is(ids)}",
        "name a StableToolBench solvable_queries/test_query_ids file",
    )


def param_schema(param: Mapping[str, Any]) -> dict[str, Any]:
    """JSON Schema for one RapidAPI parameter; unknown types become strings, as in ToolBench."""
    raw_type = str(param.get("type") or "STRING").strip()
    schema = dict(_TYPE_MAP.get(raw_type.upper(), _TYPE_MAP.get(raw_type, {"type": "string"})))
    description = str(param.get("description") or "")[:DESCRIPTION_MAX]
    if description:
        schema["description"] = description
    default = param.get("default")
    if default not in (None, ""):
        schema["examples"] = [default]
    return schema


def param_name(name: str) -> str:
    """ToolBench's parameter name rule (same as its API name rule)."""
    return api_identifier(name)


def api_to_tool(api: Mapping[str, Any]) -> Tool:
    """Convert one ``api_list`` entry to the Tool a StableToolBench agent would see.

    Name, description and parameter names are ToolBench's, character for character. Two
    deliberate differences: types are real JSON Schema (NUMBER -> number, where ToolBench says
    integer, because RapidAPI numbers include decimals such as coordinates; DATE -> string with
    format date; OBJECT/ARRAY -> object/array; ENUM and unknown types -> string), and optional
    parameters are kept even when an API has no required ones (ToolBench drops them). Parameter
    defaults become JSON Schema ``examples``; of two parameters with one name the first is kept.
    """
    name = function_name(api["tool_name"], api["api_name"])
    std_tool = standardize(api["tool_name"])
    description = f'This is the subfunction for tool "{std_tool}", you can use this tool.'
    api_description = str(api.get("api_description") or "").strip()
    if api_description:
        text = api_description.replace(api["api_name"], name)[:DESCRIPTION_MAX]
        description += f'The description of this function is: "{text}"'
    properties: dict[str, Any] = {}
    required: list[str] = []
    for group, is_required in (("required_parameters", True), ("optional_parameters", False)):
        for param in api.get(group) or ():
            pname = param_name(str(param.get("name", "")))
            if pname in properties:
                continue
            properties[pname] = param_schema(param)
            if is_required:
                required.append(pname)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    return Tool(name=name, description=description, parameters=parameters)


def gold_apis(query: Mapping[str, Any]) -> set[tuple[str, str]]:
    return {(str(t), str(a)) for t, a in query.get("relevant APIs") or ()}


# ---------------------------------------------------------------------------------------------
# Answer files -> transcripts


def _tool_call(
    name: str, raw_args: Any, observation: Any, index: int, *, readable: bool = True
) -> ToolCall:
    """A ToolCall from a StableToolBench step; the observation is ``{"error","response"}``.

    Cut-off argument text (`readable` false) is kept as the raw arguments, never parsed.
    """
    raw = raw_args if isinstance(raw_args, str) else json.dumps(raw_args, ensure_ascii=False)
    args = parse_json_value(raw_args) if readable else None
    obs = parse_json_value(observation) if observation not in (None, "") else None
    output: Any = observation if observation not in (None, "") else None
    error: str | None = None
    if isinstance(obs, dict) and ({"error", "response"} & obs.keys()):
        output = obs.get("response")
        error = str(obs["error"]) if obs.get("error") else None
        if error is not None:
            output = None
    return ToolCall(
        name=name,
        arguments=args if isinstance(args, dict) else None,
        raw_arguments=raw,
        id=f"call_{index}",
        output=output,
        error=error,
        turn=index,
    )


def final_answer_text(final: Any) -> str | None:
    """The user-visible answer in a Finish payload (``{"return_type","final_answer"}``)."""
    if final in (None, ""):
        return None
    parsed = parse_json_value(final)
    if isinstance(parsed, dict):
        answer = parsed.get("final_answer")
        return str(answer) if answer not in (None, "") else None
    return str(final)


def _messages(
    query: str, calls: Sequence[ToolCall], final: str | None
) -> tuple[dict[str, Any], ...]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": query}]
    for call in calls:
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.raw_arguments},
                    }
                ],
            }
        )
        content = {"error": call.error} if call.error is not None else call.output
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call.id,
                "content": content if isinstance(content, str) else json.dumps(content),
            }
        )
    if final is not None:
        messages.append({"role": "assistant", "content": final})
    return tuple(messages)


def _transcript(
    query_id: str,
    query: str,
    model: str,
    calls: list[ToolCall],
    final: Any,
    method: str,
    *,
    finish: bool | None = None,
) -> Transcript:
    """One run; `finish` is StableToolBench's Finish verdict when the source tree gives one."""
    if finish is None:
        finish = any(c.name == FINISH for c in calls)
    answer = final_answer_text(final)
    return Transcript(
        item_id=f"{model}:{query_id}",
        case=str(query_id),
        model=model,
        messages=_messages(query, calls, answer),
        tool_calls=tuple(calls),
        final_answer=answer,
        finish_reason="finish" if finish else "incomplete",
        turns=len(calls),
        source=f"{SOURCE}:{method}" if method else SOURCE,
    )


@dataclass(frozen=True)
class ConvertedAnswers:
    """Transcripts of a converted answer file, and what happened to its tool nodes."""

    transcripts: list[Transcript]
    nodes_read: int
    calls_kept: int
    arguments_cut_off: int
    nodes_dropped: tuple[str, ...]
    finished: int
    refused: tuple[Refusal, ...] = ()
    """Queries refused (their transcripts are errored), each with the reason."""

    def summary(self) -> str:
        return (
            f"{len(self.transcripts)} transcripts ({len(self.refused)} of refused queries): "
            f"{self.nodes_read} tool nodes read, "
            f"{self.calls_kept} calls kept ({self.arguments_cut_off} with cut-off arguments, "
            f"kept as unreadable), {len(self.nodes_dropped)} dropped; "
            f"{self.finished} runs end with Finish"
        )


def read_converted_answers(path: str | Path, model: str | None = None) -> ConvertedAnswers:
    """Read a converted answer file (``{query_id: {query, answer, ...}}``), in any form
    StableToolBench publishes (see `stabletoolbench_nodes`).

    Every tool node of the ``answer_details`` tree becomes a call, depth first; for a DFS tree
    that includes abandoned branches, as StableToolBench's own API scorer counts them. ``model``
    defaults to the file's parent directory name (``virtual_chatgpt_cot``). A query that
    cannot be read, or whose tool node names no call (its score would be wrong without it), is
    refused (`ConvertedAnswers.refused`) and its transcript is errored: it fails.
    """
    path = Path(path)
    label = model_label(model, path, "stabletoolbench")
    hint = "name a model_predictions_converted file"
    data = read_document(path, "one JSON object of answers by query id", hint)
    name = display_name(path)
    if not isinstance(data, dict) or not data:
        raise input_error(
            name,
            "a converted answer file must be a JSON object of answers by query id, got "
            f"{what_it_is(data)}",
            hint,
        )
    out: list[Transcript] = []
    refused: list[Refusal] = []
    tally = Counter[str]()
    dropped: list[str] = []
    for query_id, record in data.items():
        try:
            with blame(name):
                out.append(_answer(str(query_id), record, label, tally, dropped))
        except RecordFault as fault:
            refused.append(Refusal(str(query_id), name, 1, fault.reason))
            item = f"{label}:{query_id}"
            out.append(errored_transcript(item, str(query_id), label, fault.reason, SOURCE))
    if len(refused) == len(data):
        raise refused_all(refused, "a model_predictions_converted answer file")
    return ConvertedAnswers(
        transcripts=out,
        nodes_read=tally["read"],
        calls_kept=sum(len(t.tool_calls) for t in out),
        arguments_cut_off=tally["cut"],
        nodes_dropped=tuple(dropped),
        finished=sum(t.finish_reason == "finish" for t in out),
        refused=tuple(refused),
    )


def _answer(
    query_id: str, record: Any, label: str, tally: Counter[str], dropped: list[str]
) -> Transcript:
    """One query's run; a RecordFault when a tool node of it names no call."""
    if not isinstance(record, dict):
        raise RecordFault(f"the answer is not an object, got {what_it_is(record)}", "answers")
    if "answer" not in record:  # read as none, it would stand as a run that called nothing
        raise RecordFault(f"it has no 'answer': got {what_it_is(record)}", "answers")
    answer = record["answer"] or {}
    if not isinstance(answer, dict):
        raise RecordFault(f"its 'answer' is {what_it_is(answer)}, not an object", "answers")
    details = answer.get("answer_details") or ()
    calls: list[ToolCall] = []
    unread = []
    for node in walk(details):
        if node.get("role") != "tool":
            continue
        tally["read"] += 1
        call = read_tool_node(node.get("message"))
        if call is None:
            unread.append(f"query {query_id}: {str(node.get('message'))[:60]!r}")
            continue
        tally["cut"] += not call.arguments_complete
        calls.append(
            _tool_call(
                call.name,
                call.arguments,
                call.response,
                len(calls),
                readable=call.arguments_complete,
            )
        )
    if unread:
        dropped.extend(unread)
        shown = "; ".join(unread[:3])
        raise RecordFault(
            f"{len(unread)} tool node(s) name no call ({shown}); its score would be wrong without "
            "them",
            "answers",
        )
    return _transcript(
        query_id,
        str(record.get("query", "")),
        label,
        calls,
        answer.get("final_answer"),
        str(answer.get("method", "")),
        finish=finished(details),
    )
