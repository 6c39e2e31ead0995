"""BFCL interop: Berkeley Function Calling Leaderboard records as suites, outputs as transcripts.

A BFCL record is a question, the function docs offered, and possible answers: for every argument
a list of acceptable values ("" = may be left out). A generated case expects the first
acceptable value of each argument (so the YAML reads like any other suite) and judges every
argument with a `one_of` critic holding the whole acceptable list, with BFCL's string
normalisation and the declared BFCL type, so a case passes exactly when BFCL's AST checker
would accept the call. The rubric is BFCL's all-or-nothing verdict.

Conventions (also in docs/how-to/importers.md):
- BFCL types become JSON Schema: float -> number, tuple -> array, dict -> object, any -> {}.
- Arguments whose first acceptable value is "" are left out of the expected call; their critic
  still accepts them when given with an acceptable value. A required argument stays required
  even when its list holds "" (BFCL checks required arguments before possible answers), so ""
  is dropped from its list.
- A suite offers the same tools to every case, so records whose function docs disagree about
  one function name go to separate suites (`bfcl_suite_dicts`).
- Tool names follow BFCL's rule for the kind of model (`names`): as written (`math.factorial`,
  what prompting models and most self-hosted function-calling models are shown), or with `.`
  as `_` (`math_factorial`, what BFCL shows models whose function-calling API forbids dots:
  OpenAI, Anthropic, Mistral, Google). Names are then compared exactly, as BFCL compares them.
- A record that offers no function offers the case no tool (`tools: []`) and expects no call;
  so does every record of a file given without possible answers (irrelevance categories).
- Model outputs in BFCL's result format are decoded by `bfcl_decode`, BFCL's rule for each
  kind of model, never run. Output that cannot be decoded becomes a transcript with no call,
  so it fails or passes as in BFCL.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec._interop.bfcl_decode import DecodeError, ResultFormat, decode, text_kind
from evalspec._interop.records import (
    RecordFault,
    Refusal,
    Sources,
    blame,
    holdable,
    numbered_json,
    refused_all,
    refused_case,
    screen_tool,
    what_it_is,
)
from evalspec._interop.records import (
    errored_transcript as errored,
)
from evalspec._transcript import ToolCall, Transcript
from evalspec._util.errors import UsageError
from evalspec._util.files import write_text_atomic
from evalspec._util.reading import display_name

_JSON_TYPES = {
    "string": "string",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
    "tuple": "array",
    "dict": "object",
    "object": "object",
}
_KEPT_KEYWORDS = ("description", "enum", "default", "format", "minimum", "maximum")

QUESTIONS, ANSWERS, RESULTS = "questions", "answers", "results"
"""The roles of BFCL's files: a record's fault is in one of them."""
SOURCES = Sources({QUESTIONS: "the question file", ANSWERS: "the answer file"}, {})
"""Names for the two files when no file was read (records given to the API)."""

DEFAULT_MODEL = "gpt-4o-mini"
"""The model a generated suite names until the user names theirs (a suite needs one)."""

RUBRIC: dict[str, Any] = {
    "fail_threshold": 1.0,
    "warn_threshold": 1.0,
    "fail_on_tool_selection": True,
    "fail_on_tool_call_quantity": True,
    "extra_args": "penalize",
    "normalize_tool_names": False,
}
"""BFCL's verdict is all or nothing: any wrong, missing or unexpected argument fails the call.

Tool names are compared exactly, as BFCL compares them: the suite already names each tool as
BFCL shows it to the kind of model imported (see `NAME_RULES`)."""

NAME_RULES = ("dotted", "underscored")
"""How BFCL names a function to a model: `dotted` as written (prompting models, and
function-calling models whose API allows dots), `underscored` with every `.` as `_` (BFCL's
`underscore_to_dot` models: OpenAI, Anthropic, Mistral and Google function calling)."""


def offered_name(name: str, names: str) -> str:
    """A function's name as BFCL offers it under the name rule `names`."""
    return name.replace(".", "_") if names == "underscored" else name


def dotted_names(questions: Iterable[Mapping[str, Any]]) -> list[str]:
    """Function names holding a `.`: where the two name rules differ."""
    return sorted({n for q in questions for n in function_names(q) if "." in n})


def function_names(question: Mapping[str, Any]) -> list[str]:
    """The names of the functions a record offers (none when its functions are malformed: the
    record is refused when its case is made)."""
    functions = question.get("function")
    if not isinstance(functions, list):
        return []
    return [
        fn["name"]
        for fn in functions
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str)
    ]


# ------------------------------------------------------------------------------------ reading


@dataclass(frozen=True)
class Read:
    """A BFCL file's records, the line of each id, and the lines refused (not a record)."""

    records: list[dict[str, Any]]
    lines: dict[str, int]
    refused: list[Refusal]


NOT_A_RECORD = "every record must be a JSON object with an 'id'"

KINDS = (
    ("question", "a BFCL question record"),
    ("ground_truth", "a BFCL possible-answer record"),
    ("result", "a BFCL model result"),
)
"""The key that tells each BFCL file's records apart, and what such a record is."""


def lacks(record: Mapping[str, Any], key: str, role: str) -> RecordFault:
    """The fault of a record without `key`: what it holds instead and, when it is a record of
    another BFCL file (the files given in the wrong order or place), which."""
    kind = next((what for k, what in KINDS if k in record and k != key), None)
    swapped = f" ({kind}: is the file given in the right place?)" if kind else ""
    return RecordFault(f"it has no {key!r}: got {what_it_is(record)}{swapped}", role)


def read_numbered(path: str | Path) -> Read:
    """Read a BFCL file: JSON Lines (its usual form despite the .json suffix) or a JSON list; an
    entry that is no record (named by its place: `line-N`, `entry-K` in a list), or a second
    record with an id already read, is refused on its own (`Read.refused`)."""
    path = Path(path)
    name = display_name(path)
    numbered, refused = numbered_json(path, "BFCL records", "name a BFCL .json file")
    records: list[dict[str, Any]] = []
    lines: dict[str, int] = {}
    for entry in numbered:
        record = entry.value
        if not isinstance(record, dict) or "id" not in record:
            why = f"{NOT_A_RECORD}, got {what_it_is(record)}"
            refused.append(Refusal(entry.place, name, entry.line, why))
            continue
        if isinstance(record["id"], bool) or not isinstance(record["id"], str | int):
            why = f"its 'id' must be a text, got {what_it_is(record['id'])}"
            refused.append(Refusal(entry.place, name, entry.line, why))
            continue
        rid = str(record["id"])
        if rid in lines:
            why = f"a second record with id {rid!r} (the first is on line {lines[rid]})"
            refused.append(Refusal(entry.place, name, entry.line, why))
            continue
        records.append(record)
        lines[rid] = entry.line
    return Read(records, lines, refused)


# ------------------------------------------------------------------------------------ tools


def param_schema(bfcl: Mapping[str, Any]) -> dict[str, Any]:
    """One BFCL parameter doc as JSON Schema, recursively (nested properties and items)."""
    kind = bfcl.get("type")
    out: dict[str, Any] = {}
    if kind in _JSON_TYPES:
        out["type"] = _JSON_TYPES[kind]
    for key in _KEPT_KEYWORDS:
        if key in bfcl:
            out[key] = bfcl[key]
    if isinstance(out.get("enum"), list) and not out["enum"]:
        del out["enum"]
    if isinstance(bfcl.get("properties"), Mapping):
        out["properties"] = {k: param_schema(v) for k, v in bfcl["properties"].items()}
        required = [r for r in bfcl.get("required") or () if r in out["properties"]]
        if required:
            out["required"] = required
    if isinstance(bfcl.get("items"), Mapping):
        out["items"] = param_schema(bfcl["items"])
    return out


def bfcl_tools(
    functions: Iterable[Mapping[str, Any]], names: str = "dotted"
) -> list[dict[str, Any]]:
    """BFCL function docs as evalspec tool definitions (parameters as JSON Schema objects)."""
    tools = []
    for fn in functions:
        params = fn.get("parameters") or {}
        schema = param_schema({**params, "type": "dict"})
        schema.setdefault("properties", {})
        tools.append(
            {
                "name": offered_name(fn["name"], names),
                "description": fn.get("description", ""),
                "parameters": schema,
            }
        )
    return tools


# ------------------------------------------------------------------------------------ suites


def first_value(choices: Any, schema: Mapping[str, Any] | None = None) -> Any:
    """A concrete value from BFCL acceptable choices: the first, with nested dict specs resolved.

    A dict parameter's acceptable value is `{key: [choices]}`; a list of dicts holds such specs.
    Keys whose first choice is "" are left out, as a model may leave them out.
    """
    value = choices[0] if isinstance(choices, list) and choices else choices
    return _concrete(value, schema or {})


def _concrete(value: Any, schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if isinstance(value, dict) and kind in ("dict", "object", None):
        props = schema.get("properties") or {}
        out = {}
        for key, choices in value.items():
            if isinstance(choices, list):
                if not choices or choices[0] == "":
                    continue
                out[key] = _concrete(choices[0], props.get(key) or {})
            else:
                out[key] = choices
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [_concrete(v, schema["items"]) for v in value]
    return value


INVALID_TAG = "bfcl-invalid-answer"
"""Tag of a record whose possible answer names a parameter or function the record lacks."""


def _expected_call(
    entry: Mapping[str, Any], fn: Mapping[str, Any] | None
) -> tuple[dict[str, Any], bool, bool]:
    """(expected call, the answer names an undefined parameter, no call can pass).

    BFCL rejects any argument the function doc does not define, so an undefined parameter in
    a possible answer can only be left out: it leaves the suite (it would not validate), and
    when its list lacks "" (or a required parameter is undefined) no answer passes in BFCL.
    """
    ((name, answers),) = entry.items()
    params = (fn or {}).get("parameters") or {}
    props = params.get("properties") or {}
    listed = list(params.get("required") or ())
    # Names only in the set: one of the file's numbers would hash as itself (collisions a file
    # can choose); a number names no parameter, so it only makes the function unpassable.
    required = {r for r in listed if isinstance(r, str)}
    args: dict[str, Any] = {}
    critics: dict[str, Any] = {}
    undefined = [p for p in answers if p not in props]
    unpassable = any(r not in props for r in listed)
    for param, choices in answers.items():
        choices = list(choices) if isinstance(choices, list) else [choices]
        if param not in props:
            unpassable = unpassable or "" not in choices
            continue
        if param in required:
            # BFCL checks required arguments first: "" cannot make one optional.
            choices = [c for c in choices if c != ""]
        if choices and choices[0] != "":
            args[param] = first_value(choices, props.get(param))
        # BFCL compares text after standardize_string (hence normalize) and type-checks first.
        spec: dict[str, Any] = {"values": choices}
        if _has_text(choices):
            spec["normalize"] = True
        declared = (props.get(param) or {}).get("type")
        if declared in _ONE_OF_TYPES:
            spec["type"] = declared
        items = ((props.get(param) or {}).get("items") or {}).get("type")
        if declared in ("array", "tuple") and items in _ONE_OF_TYPES:
            spec["items"] = items  # BFCL checks the items' type too (1 is not a float there)
        critics[param] = _Flow(one_of=spec if len(spec) > 1 else choices)
    return {"tool": name, "args": args, "critics": critics}, bool(undefined), unpassable


_ONE_OF_TYPES = ("string", "integer", "float", "boolean", "array", "tuple", "dict", "any")


def _has_text(value: Any) -> bool:
    if isinstance(value, str):
        return value != ""
    if isinstance(value, dict):
        return any(_has_text(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_text(v) for v in value)
    return False


class _Flow(dict[str, Any]):
    """A mapping written on one line in YAML (critics read best as one line each)."""


def _messages(record: Mapping[str, Any]) -> dict[str, Any]:
    turns = record.get("question") or []
    if len(turns) == 1 and not turns[0]:
        raise RecordFault("its question's one turn holds no message", QUESTIONS)
    if len(turns) != 1:
        raise RecordFault(
            f"{len(turns)} turns; only single-turn records (simple, multiple, parallel, ...) "
            "can become cases",
            QUESTIONS,
        )
    messages = [dict(m) for m in turns[0]]
    if messages[-1].get("role") != "user":
        raise RecordFault("the last message is not the user's", QUESTIONS)
    out: dict[str, Any] = {}
    if messages[0].get("role") == "system":
        out["system"] = str(messages.pop(0).get("content") or "")
    if len(messages) > 1:
        out["history"] = [{"role": m["role"], "content": m.get("content")} for m in messages[:-1]]
    out["user"] = str(messages[-1].get("content") or "")
    return out


def _category(record_id: str) -> str:
    return record_id.rsplit("_", 1)[0] if "_" in record_id else record_id


def _fn_key(fn: Mapping[str, Any]) -> str:
    return json.dumps(fn, sort_keys=True, ensure_ascii=False)


def unpassable_case(case: dict[str, Any]) -> dict[str, Any]:
    """Make `case` fail whatever the model does, as BFCL fails a record no call passes: a call
    fails the `no_tool_calls` evaluator; without an expected call, making none fails
    `min_calls` (a case expecting no call would pass a model that makes none)."""
    case["evaluators"] = ["no_tool_calls"]
    if not case.get("expect", {}).get("tool_calls"):
        case["expect"] = {"min_calls": 1}
    return case


SIMPLE_CATEGORIES = frozenset(
    (
        "simple",
        "simple_python",
        "simple_java",
        "simple_javascript",
        "java",
        "javascript",
        "live_simple",
    )
)
"""BFCL's categories (v3 and v4) whose records its simple checker judges."""


def checker_of(record_id: str) -> str:
    """The AST checker BFCL runs on a record: `parallel` or `multiple` when its category says so
    (`ast_checker` tests the name in that order), `simple` for BFCL's simple categories; any
    other category (not BFCL's) `other`: its answers are read as written."""
    category = _category(record_id)
    found = next((c for c in ("parallel", "multiple") if c in category), None)
    return found or ("simple" if category in SIMPLE_CATEGORIES else "other")


def checked_answer(
    record_id: str, functions: Sequence[Mapping[str, Any]], answer: Mapping[str, Any]
) -> list[Any]:
    """The possible answer as BFCL's checker for the record's category reads it.

    The simple checker judges one call against the record's first function, whatever name the
    answer gives it (v3 simple_363 answers `find_closest` for `restaurant_search.find_closest`).
    The multiple and parallel checkers look the answer's name up among the offered functions;
    a name not offered passes no call there (BFCL's lookup finds nothing), so it stays as is."""
    truth = list(answer.get("ground_truth") or [])
    if checker_of(record_id) != "simple" or not truth or not functions:
        return truth
    first = truth[0]
    if not isinstance(first, Mapping) or len(first) != 1:
        return truth
    return [{functions[0]["name"]: next(iter(first.values()))}]


def split_records(
    questions: Sequence[Mapping[str, Any]], names: str = "dotted"
) -> list[list[Mapping[str, Any]]]:
    """Group records so that no group holds two different docs for one offered tool name.

    BFCL reuses names (e.g. `calculate_area`) with different parameters in different records,
    and `car.rental` and `car_rental` are one name when dots become underscores; one suite
    offers one definition per name, so such records go to another group (first fit).
    """
    groups: list[tuple[dict[str, str], list[Mapping[str, Any]]]] = []
    for q in questions:
        docs = {offered_name(fn["name"], names): _fn_key(fn) for fn in q.get("function") or ()}
        for known, members in groups:
            if all(known.get(n, k) == k for n, k in docs.items()):
                known.update(docs)
                members.append(q)
                break
        else:
            groups.append((dict(docs), [q]))
    return [members for _, members in groups]


def bfcl_suite_dict(
    questions: Sequence[Mapping[str, Any]],
    answers: Sequence[Mapping[str, Any]] | None,
    *,
    name: str,
    models: Sequence[str] = (DEFAULT_MODEL,),
    names: str = "dotted",
    refused: list[Refusal] | None = None,
    sources: Sources = SOURCES,
) -> dict[str, Any]:
    """One suite in evalspec's YAML language: a case per record, BFCL's verdict as the rubric.

    `answers` None: every record expects no call (BFCL's irrelevance categories). `names`: one
    of NAME_RULES. A record whose answer is missing or cannot be read is refused (appended to
    `refused`) and becomes a case that fails (`refused_case`). Raises UsageError when two
    records define the same function name differently (use `bfcl_suite_dicts`, which splits
    them into several suites).
    """
    tools: dict[str, dict[str, Any]] = {}
    docs: dict[str, str] = {}
    by_id = None if answers is None else {str(a["id"]): a for a in answers}
    cases = []
    for q in questions:
        rid = str(q["id"])
        try:
            with blame(ANSWERS):
                case = _case(q, _answer_of(rid, by_id), names)
                holdable(case, "case (question and possible answer)", ANSWERS)
        except RecordFault as fault:
            refusal = sources.refusal(rid, fault)
            (refused if refused is not None else []).append(refusal)
            cases.append(refused_case(refusal, [_category(rid)]))
            continue
        for fn in q.get("function") or ():
            key = _fn_key(fn)
            if docs.setdefault(offered_name(fn["name"], names), key) != key:
                raise UsageError(
                    f"record {q['id']} defines {fn['name']!r} differently from an earlier "
                    "record; one suite offers one definition per tool name "
                    "(split the records with bfcl_suite_dicts / `evalspec import bfcl`)"
                )
            if fn["name"] not in tools:
                tools[fn["name"]] = bfcl_tools([fn], names)[0]
        cases.append(case)
    if not cases:
        raise UsageError("no BFCL records to turn into cases")
    return _suite(name, models, list(tools.values()), cases)


def _suite(
    name: str, models: Sequence[str], tools: list[dict[str, Any]], cases: list[dict[str, Any]]
) -> dict[str, Any]:
    suite: dict[str, Any] = {
        "suite": name,
        "description": "Imported from BFCL: one case per record; a case passes exactly when "
        "every call is one of BFCL's possible answers.",
    }
    suite["models"] = list(models) or [DEFAULT_MODEL]
    suite["run"] = {"mode": "single_turn"}
    suite["rubric"] = dict(RUBRIC)
    suite["tools"] = tools
    suite["cases"] = cases
    escaped: dict[str, Any] = escape_templates(suite)  # the same shape, its texts escaped
    return escaped


def _answer_of(rid: str, by_id: Mapping[str, Mapping[str, Any]] | None) -> Mapping[str, Any]:
    """The record's possible answer; none for a file given without answers (no call)."""
    if by_id is None:
        return {"id": rid, "ground_truth": []}
    if rid not in by_id:
        raise RecordFault("the answer file has no possible answer with this id", ANSWERS)
    if "ground_truth" not in by_id[rid]:  # read as none, it would expect no call
        raise lacks(by_id[rid], "ground_truth", ANSWERS)
    return by_id[rid]


def _case(q: Mapping[str, Any], a: Mapping[str, Any], names: str) -> dict[str, Any]:
    """One record's case (its question already screened: `screen_question`)."""
    functions = {fn["name"]: fn for fn in q.get("function") or ()}
    truth = checked_answer(str(q["id"]), q.get("function") or [], a)
    if not isinstance(truth, list):
        raise RecordFault("its ground_truth is not a list of calls", ANSWERS)
    for entry in truth:
        if not isinstance(entry, Mapping) or len(entry) != 1:
            raise RecordFault(f"{_shown(entry)} is not one {{function: arguments}}", ANSWERS)
        if not isinstance(next(iter(entry.values())), Mapping):
            raise RecordFault(f"{_shown(entry)}: the arguments are not an object", ANSWERS)
    built = [_expected_call(e, functions.get(next(iter(e)))) for e in truth]
    # A possible answer naming a function the record does not offer: no call passes.
    calls = [c for c, _, _ in built if c["tool"] in functions]
    for call in calls:
        call["tool"] = offered_name(call["tool"], names)
    case: dict[str, Any] = {"name": str(q["id"]), "tags": [_category(str(q["id"]))]}
    if any(undefined for _, undefined, _ in built) or len(calls) < len(built):
        case["tags"].append(INVALID_TAG)
    case.update(_messages(q))
    # The record's own functions, as BFCL offers them; none offers none.
    case["tools"] = [offered_name(n, names) for n in functions]
    case["expect"] = {"tool_calls": calls} if calls else {"no_tool_calls": True}
    if any(unpassable for _, _, unpassable in built) or len(calls) < len(built):
        unpassable_case(case)
    return case


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:80]


def screen_question(q: Mapping[str, Any], names: str) -> None:
    """A RecordFault (the question file's) when the record cannot become a case: functions that
    are not named objects, parameters that are no schema, messages that are no single turn."""
    with blame(QUESTIONS):
        if "question" not in q:
            raise lacks(q, "question", QUESTIONS)
        functions = q.get("function") or []
        if not isinstance(functions, list) or not all(
            isinstance(fn, Mapping) and isinstance(fn.get("name"), str) for fn in functions
        ):
            raise RecordFault("its 'function' is not a list of named function docs", QUESTIONS)
        for tool in bfcl_tools(functions, names):
            screen_tool(tool, QUESTIONS)
        _messages(q)


def bfcl_suite_dicts(
    questions: Sequence[Mapping[str, Any]],
    answers: Sequence[Mapping[str, Any]] | None,
    *,
    name: str,
    models: Sequence[str] = (DEFAULT_MODEL,),
    names: str = "dotted",
    refused: list[Refusal] | None = None,
    sources: Sources = SOURCES,
) -> list[dict[str, Any]]:
    """As many suites as the records need (see `split_records`): `name`, `name-2`, ...

    A record that cannot become a case is refused (appended to `refused`) and stands in the
    first suite as a case that fails; UsageError when every record is refused."""
    refused = refused if refused is not None else []
    before = len(refused)
    good, placeholders = [], []
    for q in questions:
        try:
            screen_question(q, names)
        except RecordFault as fault:
            refusal = sources.refusal(str(q["id"]), fault)
            refused.append(refusal)
            placeholders.append(refused_case(refusal, [_category(str(q["id"]))]))
            continue
        good.append(q)
    groups = split_records(good, names)
    suites = [
        bfcl_suite_dict(
            group,
            answers,
            name=name if i == 0 else f"{name}-{i + 1}",
            models=models,
            names=names,
            refused=refused,
            sources=sources,
        )
        for i, group in enumerate(groups)
    ]
    if questions and len(refused) - before == len(questions):
        raise refused_all(refused[before:], "a BFCL question file with its possible answers")
    if not suites:
        suites = [_suite(name, models, [], [])]
    suites[0]["cases"].extend(placeholders)
    return suites


def escape_templates(node: Any) -> Any:
    """Strings that look like Jinja2 templates are escaped, so they render to themselves."""
    if isinstance(node, str):
        if "{{" in node or "{%" in node or "{#" in node:
            return node.replace("{", "{{ '{' }}")
        return node
    if isinstance(node, dict):
        out = {k: escape_templates(v) for k, v in node.items()}
        return _Flow(out) if isinstance(node, _Flow) else out
    if isinstance(node, list):
        return [escape_templates(v) for v in node]
    return node


def suite_yaml(suite: Mapping[str, Any]) -> str:
    """The suite as YAML text, with the schema line editors use."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(
        _Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=True)
    )
    header = "# yaml-language-server: $schema=https://evalspec.dev/schemas/suite.schema.json\n"
    body = yaml.dump(
        dict(suite),
        Dumper=Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=None,
    )
    return header + body


def write_suites(out: Path, suites: Sequence[dict[str, Any]]) -> list[Path]:
    """Write suites to `out`, `<stem>-2.yaml`, ...; all to temporary names first, then moved."""
    paths = [out] + [
        out.with_name(f"{out.stem}-{i + 1}{out.suffix or '.yaml'}") for i in range(1, len(suites))
    ]
    texts = [suite_yaml(suite) for suite in suites]  # every suite rendered before any is written
    for text, path in zip(texts, paths, strict=True):
        write_text_atomic(path, text)
    return paths


# ------------------------------------------------------------------------------------ results


def result_kind(records: Sequence[Mapping[str, Any]]) -> ResultFormat:
    """The kind of model a result file comes from: function-calling results hold call lists;
    text is call text or JSON call objects (`text_kind`)."""
    if any(isinstance(r.get("result"), list) for r in records):
        return "fc"
    return text_kind([r["result"] for r in records if isinstance(r.get("result"), str)])


def _transcript(record_id: str, result: Any, model: str, kind: ResultFormat) -> Transcript:
    raw = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    try:
        decoded = decode(result, kind)
    except DecodeError:
        return Transcript(
            item_id=f"bfcl:{model}:{record_id}",
            case=record_id,
            model=model,
            messages=({"role": "assistant", "content": raw},),
            final_answer=raw,
            finish_reason="stop",
            turns=1,
            source="import:bfcl",
        )
    calls = tuple(
        ToolCall(
            name=name,
            arguments=args,
            raw_arguments=json.dumps(args, ensure_ascii=False, default=str),
            id=f"call_{i}",
            turn=0,
        )
        for i, (name, args) in enumerate(decoded)
    )
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.raw_arguments},
            }
            for c in calls
        ],
    }
    return Transcript(
        item_id=f"bfcl:{model}:{record_id}",
        case=record_id,
        model=model,
        messages=(message,),
        tool_calls=calls,
        finish_reason="tool_calls" if calls else "stop",
        turns=1,
        source="import:bfcl",
    )


def bfcl_transcripts(
    results: str | Path | Iterable[Mapping[str, Any]],
    *,
    model: str = DEFAULT_MODEL,
    kind: ResultFormat | None = None,
    refused: list[Refusal] | None = None,
) -> list[Transcript]:
    """Transcripts from BFCL model results (`{"id", "result"}` records, or a file of them).

    `kind` is the decoder BFCL applies (one of `bfcl_decode.RESULT_FORMATS`); None reads it
    from the file (`result_kind`). A record that cannot be read is refused (appended to
    `refused`; without that list, UsageError): one with an id still gives a transcript, errored,
    so it fails as BFCL fails an errored record. UsageError when every record is refused."""
    records: list[Mapping[str, Any]]
    if isinstance(results, str | Path):
        read = read_numbered(results)
        name, lines, records = display_name(Path(results)), read.lines, list(read.records)
        bad = read.refused
    else:
        name, lines, records, bad = "the results", {}, list(results), []
    kept = [r for r in records if "result" in r]
    for r in records:
        if "result" not in r:
            why = lacks(r, "result", RESULTS).reason
            bad.append(Refusal(str(r["id"]), name, lines.get(str(r["id"]), 1), why))
    if bad and (refused is None or not kept):
        if refused is None:
            raise UsageError(f"{bad[0]} (a BFCL result is a record with 'id' and 'result')")
        raise refused_all(bad, "a BFCL result file ({id, result} lines)")
    (refused if refused is not None else []).extend(bad)
    kind = kind or result_kind(kept)
    out = []
    for r in kept:
        rid = str(r["id"])
        try:
            with blame(name):
                out.append(_transcript(rid, r["result"], model, kind))
        except RecordFault as fault:  # what decoding did not foresee: this record only
            if refused is None:
                raise UsageError(f"{name}: result {rid}: {fault}") from None
            refused.append(Refusal(rid, name, lines.get(rid, 1), fault.reason))
            out.append(errored_transcript(rid, model, fault.reason))
    errored = [
        errored_transcript(str(r["id"]), model, lacks(r, "result", RESULTS).reason)
        for r in records
        if r not in kept
    ]
    return out + errored


def errored_transcript(record_id: str, model: str, why: str) -> Transcript:
    """An errored transcript of a BFCL record (see `records.errored_transcript`)."""
    return errored(f"bfcl:{model}:{record_id}", record_id, model, why, "import:bfcl")
