"""StableToolBench interop: its queries as tools, its answer files as transcripts, its metrics.

Conventions (also in docs/how-to/importers.md):

- Function names follow StableToolBench/ToolBench: ``<api>_for_<tool>`` with both parts
  standardized (non-word runs -> "_", lowercase, trimmed, a leading digit gets "get_", API names
  that are Python keywords get "is_"), keeping the last 64 characters. Parameter names get the
  same treatment, so arguments look exactly as in StableToolBench runs and caches.
- API call score = |called ∩ gold| / |gold| over (tool_name, api_name) pairs; 0.0 with no gold.
- A run without a Finish call is Unsolved (SoPR 0.0); Solved 1.0, Unsure 0.5, Unsolved 0.0.
- A pass-rate file's several evaluator votes per query are averaged (each vote scored 1/0.5/0),
  which is how StableToolEval's pass rate counts them; the status reported is the majority vote.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec._interop.records import (
    RecordFault,
    Refusal,
    blame,
    errored_transcript,
    refused_all,
)
from evalspec._interop.stabletoolbench_nodes import finished, read_tool_node, walk
from evalspec._suite.model import Tool
from evalspec._tools.toolbench_names import (
    FINISH,
    api_call_score,
    api_identifier,
    function_name,
    is_api_call,
    name_key,
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


def _objects(items: Any, path: Path, what: str) -> None:
    """InputError unless `items` is a list of JSON objects."""
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise input_error(
            display_name(path),
            f"the {what} must be JSON objects in a list (or in an object by id)",
            "name a StableToolBench file",
        )


def load_queries(
    path: str | Path, ids_path: str | Path | None = None, *, refused: list[Refusal] | None = None
) -> list[dict[str, Any]]:
    """Read a ``test_instruction`` file, keeping only the ids in ``ids_path`` when given.

    The id file may be a list of ids or a dict keyed by id; ids compare as strings. With
    `refused`, an entry that is not an object is refused on its own (appended there)."""
    queries = read_json(Path(path))
    if isinstance(queries, dict):
        queries = list(queries.values())
    if refused is not None and isinstance(queries, list):
        name = display_name(Path(path))
        for i, q in enumerate(queries):
            if not isinstance(q, dict):
                refused.append(Refusal(f"query-{i + 1}", name, 1, "the query is not an object"))
        queries = [q for q in queries if isinstance(q, dict)]
    _objects(queries, Path(path), "queries")
    if ids_path is None:
        return list(queries)
    ids = read_json(Path(ids_path))
    wanted = {str(i) for i in (ids.keys() if isinstance(ids, dict) else ids)}
    return [q for q in queries if str(q.get("query_id")) in wanted]


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


def api_names(queries: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """Function name -> (tool_name, api_name) over every API of these queries."""
    found: dict[str, tuple[str, str]] = {}
    for query in queries:
        for api in query.get("api_list") or ():
            pair = (api["tool_name"], api["api_name"])
            found.setdefault(function_name(*pair), pair)
            found.setdefault(name_key(function_name(*pair)), pair)
            found.setdefault(f"{pair[0]}_{pair[1]}", pair)
    return found


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
    data = read_json(path)
    name = display_name(path)
    if not isinstance(data, dict):
        raise input_error(
            name,
            "a converted answer file must be a JSON object of answers by query id",
            "name a model_predictions_converted file",
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
    if data and len(refused) == len(data):
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
        raise RecordFault("the answer is not an object", "answers")
    answer = record.get("answer") or {}
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


def transcripts_from_converted(path: str | Path, model: str | None = None) -> list[Transcript]:
    """The transcripts of `read_converted_answers`."""
    return read_converted_answers(path, model).transcripts


def _calls_from_train_messages(messages: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    pending: Mapping[str, Any] | None = None
    for message in messages:
        function_call = message.get("function_call")
        if message.get("role") == "assistant" and function_call:
            if pending is not None:
                calls.append(
                    _tool_call(pending["name"], pending.get("arguments", ""), None, len(calls))
                )
            pending = function_call
        elif message.get("role") == "function" and pending is not None:
            calls.append(
                _tool_call(
                    pending["name"],
                    pending.get("arguments", ""),
                    message.get("content"),
                    len(calls),
                )
            )
            pending = None
    if pending is not None:
        calls.append(_tool_call(pending["name"], pending.get("arguments", ""), None, len(calls)))
    return calls


def _calls_from_chain(chain: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    action: str | None = None
    for node in chain:
        if node.get("node_type") == "Action":
            action = str(node.get("description", ""))
        elif node.get("node_type") == "Action Input" and action is not None:
            calls.append(
                _tool_call(action, node.get("description", ""), node.get("observation"), len(calls))
            )
            action = None
    return calls


def transcripts_from_answer_dir(
    directory: str | Path, model: str | None = None
) -> list[Transcript]:
    """Read raw ToolBench answer files (``<query_id>_<method>.json``) from one directory.

    The calls are the final chain the run reports (``answer_generation.train_messages[-1]``);
    a run with no valid chain (``train_messages`` empty) falls back to its last try's chain.
    ``model`` defaults to the directory's parent name (``virtual_chatgpt_cot``).
    """
    directory = Path(directory)
    label = model_label(model, directory, "stabletoolbench")
    out: list[Transcript] = []
    for path in sorted(directory.glob("*.json")):
        query_id, _, method = path.stem.partition("_")
        data = read_json(path)
        generation = data.get("answer_generation") or {}
        train = generation.get("train_messages") or []
        if train:
            calls = _calls_from_train_messages(train[-1])
        else:
            trys = data.get("trys") or []
            calls = _calls_from_chain(trys[-1].get("chain") or []) if trys else []
        out.append(
            _transcript(
                query_id,
                str(generation.get("query", "")),
                label,
                calls,
                generation.get("final_answer"),
                method,
            )
        )
    out.sort(key=lambda t: (int(t.case) if t.case.isdigit() else 0, t.case))
    return out


# ---------------------------------------------------------------------------------------------
# Metrics


def has_finish(transcript: Transcript) -> bool:
    """Did the run end its reasoning with a Finish call (any return_type)?

    An imported run carries StableToolBench's own verdict (see `stabletoolbench_nodes.finished`);
    any other run finished when it called Finish.
    """
    if transcript.source.startswith("import:stabletoolbench"):
        return transcript.finish_reason == "finish"
    return any(call.name == FINISH for call in transcript.tool_calls)


def called_apis(
    transcript: Transcript, queries: Iterable[Mapping[str, Any]]
) -> set[tuple[str, str]]:
    """The (tool_name, api_name) pairs a run called, Finish excluded.

    Names are mapped back through the queries' api lists, accepting StableToolBench function
    names (``transfermarkt_details_for_theclique``) and ``<tool>_<api>`` names. A name no API
    of these queries has is ignored: it cannot be in the gold set anyway. Older ToolBench
    names (``4_get_x`` for ``get_4_get_x``) are read too.
    """
    names = api_names(queries)
    found = (
        names.get(call.name) or names.get(name_key(call.name))
        for call in transcript.tool_calls
        if is_api_call(call.name)
    )
    return {pair for pair in found if pair is not None}


def parse_status(value: Any) -> str:
    """``"AnswerStatus.Solved"`` / ``"Solved"`` -> ``"Solved"``; anything unknown -> Unsure."""
    name = str(value).rsplit(".", 1)[-1].strip().capitalize()
    return name if name in SOPR_VALUES else "Unsure"


def sopr_score(status: str, finished: bool = True) -> float:
    """SoPR value of one judged answer; without a Finish call it is Unsolved whatever the judge."""
    if not finished:
        return 0.0
    return SOPR_VALUES[parse_status(status)]


def majority_status(votes: Sequence[str]) -> str:
    """The most common status; ties go to the lower score (a split vote is not a pass)."""
    statuses = [parse_status(v) for v in votes]
    if not statuses:
        return "Unsolved"
    counts = {s: statuses.count(s) for s in SOPR_VALUES}
    best = max(counts.values())
    return min((s for s, c in counts.items() if c == best), key=lambda s: SOPR_VALUES[s])


def sopr_from_pass_rate_results(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read a StableToolEval pass-rate JSON file.

    Returns ``{query_id: {"votes": [...], "status": majority, "sopr": mean}}`` where ``sopr`` is
    the mean of the votes' values (Solved 1, Unsure 0.5, Unsolved 0), the per-query share of
    StableToolEval's pass rate, and ``status`` the majority vote (ties toward the lower status).
    """
    data = read_json(Path(path))
    out: dict[str, dict[str, Any]] = {}
    for query_id, record in data.items():
        raw = record.get("is_solved") or {}
        keys = sorted(raw, key=lambda k: int(k) if str(k).isdigit() else 0)
        votes = [parse_status(raw[k]) for k in keys] if isinstance(raw, dict) else []
        if isinstance(raw, list):
            votes = [parse_status(v) for v in raw]
        mean = sum(SOPR_VALUES[v] for v in votes) / len(votes) if votes else 0.0
        out[str(query_id)] = {"votes": votes, "status": majority_status(votes), "sopr": mean}
    return out


# ---------------------------------------------------------------------------------------------
# Results


def evaluate_transcript(
    transcript: Transcript,
    query: Mapping[str, Any],
    status: str | None = None,
    evaluation_method: str = "official",
    evaluation_time: float = 0.0,
) -> dict[str, Any]:
    """One result record in the seed's format; ``status`` is the judge's verdict when known.

    Without a verdict the answer status is Unsolved (no judge has said otherwise).
    """
    finished = has_finish(transcript)
    answer_status = parse_status(status) if (status is not None and finished) else "Unsolved"
    api_score = api_call_score(called_apis(transcript, [query]), gold_apis(query))
    return {
        "query_id": str(query.get("query_id", transcript.case)),
        "query_text": query.get("query", ""),
        "gold_answer": {
            "relevant_apis": [list(p) for p in query.get("relevant APIs") or ()],
            "available_tools": _available_tools(query),
        },
        "system_answer": {
            "final_answer": transcript.final_answer or "",
            "answer_details": answer_details(transcript),
        },
        "scores": {"sopr_score": sopr_score(answer_status, finished), "api_call_score": api_score},
        "evaluation": {
            "answer_status": answer_status,
            "has_finish": finished,
            "evaluation_method": evaluation_method,
        },
        "timing": {"evaluation_time": evaluation_time},
    }


def answer_details(transcript: Transcript) -> list[dict[str, Any]]:
    """The run as StableToolBench's ``answer_details`` chain: system -> user -> one tool node
    per call, each message ``{name, arguments, response}`` with the ``{"error","response"}``
    observation as a JSON string, as in the converted answer files."""
    chain: list[dict[str, Any]] = [
        {"role": "system", "message": "", "next": []},
        {"role": "user", "message": "", "next": []},
    ]
    for call in transcript.tool_calls:
        response = (
            ""
            if call.name == FINISH
            else json.dumps(
                {"error": call.error or "", "response": call.output},
                ensure_ascii=False,
                default=str,
            )
        )
        message = {"name": call.name, "arguments": call.raw_arguments, "response": response}
        chain.append({"role": "tool", "message": message, "next": []})
    for parent, child in itertools.pairwise(chain):
        parent["next"] = [child]
    return [chain[0]]


def _available_tools(query: Mapping[str, Any]) -> list[dict[str, Any]]:
    tools: dict[str, dict[str, Any]] = {}
    for api in query.get("api_list") or ():
        entry = tools.setdefault(
            api["tool_name"],
            {"category": api.get("category_name", ""), "tool_name": api["tool_name"], "apis": []},
        )
        entry["apis"].append(
            {"api_name": api["api_name"], "api_description": api.get("api_description", "")}
        )
    return list(tools.values())


def summary(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The seed's summary statistics over result records."""
    n = len(results)
    sopr = [float(r["scores"]["sopr_score"]) for r in results]
    api = [float(r["scores"]["api_call_score"]) for r in results]
    times = [float((r.get("timing") or {}).get("evaluation_time", 0.0)) for r in results]
    solved = sum(1 for s in sopr if s == 1.0)
    total_time = sum(times)
    return {
        "total_queries": len({str(r["query_id"]) for r in results}),
        "total_evaluations": n,
        "solved_count": solved,
        "solved_percentage": 100.0 * solved / n if n else 0.0,
        "finish_count": sum(1 for r in results if r["evaluation"]["has_finish"]),
        "average_sopr_score": sum(sopr) / n if n else 0.0,
        "average_api_call_score": sum(api) / n if n else 0.0,
        "total_evaluation_time": total_time,
        "average_evaluation_time": total_time / n if n else 0.0,
    }


def result_file(
    results: Sequence[Mapping[str, Any]],
    framework: str,
    config: Mapping[str, Any] | None = None,
    overall_time: float = 0.0,
    timestamp: str | None = None,
) -> dict[str, Any]:
    """The seed's result file: metadata, summary, results."""
    return {
        "metadata": {
            "framework": framework,
            "config": dict(config or {}),
            "overall_time": overall_time,
            "timestamp": timestamp or time.strftime("%Y-%m-%d %H:%M:%S"),
        },
        "summary": summary(results),
        "results": [dict(r) for r in results],
    }
