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
from pathlib import Path
from typing import Any

from evalspec._interop.bfcl_decode import DecodeError, ResultFormat, decode, text_kind
from evalspec._transcript import ToolCall, Transcript
from evalspec._util.errors import UsageError
from evalspec._util.files import write_text_atomic
from evalspec._util.reading import display_name, input_error, parse_json, read_text

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
    return sorted(
        {fn["name"] for q in questions for fn in q.get("function") or () if "." in fn["name"]}
    )


# ------------------------------------------------------------------------------------ reading


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Read a BFCL file: JSON Lines (its usual form despite the .json suffix) or a JSON list."""
    path = Path(path)
    name = display_name(path)
    text = read_text(path, name)
    if text.lstrip().startswith("["):
        data = parse_json(text, name)
        lines = [1] * len(data) if isinstance(data, list) else []
    else:
        numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        data = [parse_json(line, name, n) for n, line in numbered]
        lines = [n for n, _ in numbered]
    if not data:
        raise input_error(name, "the file holds no BFCL records", "name a BFCL .json file")
    for line, record in zip(lines, data, strict=False):
        if not isinstance(record, dict) or "id" not in record:
            raise input_error(
                name,
                "every record must be a JSON object with an 'id'",
                "name a BFCL question, answer or result file",
                line,
            )
    records: list[dict[str, Any]] = data  # a list of objects, checked just above
    return records


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
"""Tag of a record whose possible answer names a parameter its function does not define."""


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
    if len(turns) != 1 or not turns[0]:
        raise UsageError(
            f"BFCL record {record['id']}: {len(turns)} turns; only single-turn records "
            "(simple, multiple, parallel, ...) can become cases"
        )
    messages = [dict(m) for m in turns[0]]
    if messages[-1].get("role") != "user":
        raise UsageError(f"BFCL record {record['id']}: the last message is not the user's")
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


def _pair(
    questions: Sequence[Mapping[str, Any]], answers: Sequence[Mapping[str, Any]] | None
) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """Each question with its possible answer; without answers, each expects no call."""
    if answers is None:
        return [(q, {"id": q["id"], "ground_truth": []}) for q in questions]
    by_id = {a["id"]: a for a in answers}
    missing = [q["id"] for q in questions if q["id"] not in by_id]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise UsageError(f"no possible answer for {len(missing)} question(s): {shown}")
    return [(q, by_id[q["id"]]) for q in questions]


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
) -> dict[str, Any]:
    """One suite in evalspec's YAML language: a case per record, BFCL's verdict as the rubric.

    `answers` None: every record expects no call (BFCL's irrelevance categories). `names`: one
    of NAME_RULES. Raises UsageError when two records define the same function name
    differently (use `bfcl_suite_dicts`, which splits them into several suites).
    """
    tools: dict[str, dict[str, Any]] = {}
    docs: dict[str, str] = {}
    cases = []
    for q, a in _pair(questions, answers):
        functions = {fn["name"]: fn for fn in q.get("function") or ()}
        for fn in functions.values():
            key = _fn_key(fn)
            if docs.setdefault(offered_name(fn["name"], names), key) != key:
                raise UsageError(
                    f"record {q['id']} defines {fn['name']!r} differently from an earlier "
                    "record; one suite offers one definition per tool name "
                    "(split the records with bfcl_suite_dicts / `evalspec import bfcl`)"
                )
            if fn["name"] not in tools:
                tools[fn["name"]] = bfcl_tools([fn], names)[0]
        ground_truth = a.get("ground_truth") or []
        built = [_expected_call(e, functions.get(next(iter(e)))) for e in ground_truth]
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
            # No call passes in BFCL; with the expected calls above, this fails the rest too.
            case["evaluators"] = ["no_tool_calls"]
        cases.append(case)
    if not cases:
        raise UsageError("no BFCL records to turn into cases")
    suite: dict[str, Any] = {
        "suite": name,
        "description": "Imported from BFCL: one case per record; a case passes exactly when "
        "every call is one of BFCL's possible answers.",
    }
    suite["models"] = list(models) or [DEFAULT_MODEL]
    suite["run"] = {"mode": "single_turn"}
    suite["rubric"] = dict(RUBRIC)
    suite["tools"] = list(tools.values())
    suite["cases"] = cases
    escaped: dict[str, Any] = escape_templates(suite)  # the same shape, its texts escaped
    return escaped


def bfcl_suite_dicts(
    questions: Sequence[Mapping[str, Any]],
    answers: Sequence[Mapping[str, Any]] | None,
    *,
    name: str,
    models: Sequence[str] = (DEFAULT_MODEL,),
    names: str = "dotted",
) -> list[dict[str, Any]]:
    """As many suites as the records need (see `split_records`): `name`, `name-2`, ..."""
    groups = split_records(questions, names)
    return [
        bfcl_suite_dict(
            group,
            answers,
            name=name if i == 0 else f"{name}-{i + 1}",
            models=models,
            names=names,
        )
        for i, group in enumerate(groups)
    ]


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
) -> list[Transcript]:
    """Transcripts from BFCL model results (`{"id", "result"}` records, or a file of them).

    `kind` is the decoder BFCL applies (one of `bfcl_decode.RESULT_FORMATS`); None reads it from
    the file (`result_kind`)."""
    records = read_records(results) if isinstance(results, str | Path) else list(results)
    for r in records:
        if "id" not in r or "result" not in r:
            raise UsageError(f"a BFCL result needs 'id' and 'result', got keys {sorted(r)}")
    kind = kind or result_kind(records)
    return [_transcript(str(r["id"]), r["result"], model, kind) for r in records]
