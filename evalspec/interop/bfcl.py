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
- Model outputs in BFCL's result format: python-call text (`[f(a=1)]`, parsed with `ast`,
  never evaluated; bare names become strings and positional arguments are ignored, as BFCL's
  decoder does) or decoded lists `[{"f": {"a": 1}}]` (argument JSON text is parsed). Output
  that cannot be decoded becomes a transcript with no call, so it fails like in BFCL.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evalspec.errors import UsageError
from evalspec.files import write_text_atomic
from evalspec.reading import display_name, input_error, parse_json, read_text
from evalspec.transcript import ToolCall, Transcript

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
    "normalize_tool_names": True,
}
"""BFCL's verdict is all or nothing: any wrong, missing or unexpected argument fails the call.

Tool names are normalised (evalspec's default, written out so a reader sees it): BFCL accepts
`math_factorial` for `math.factorial` from models whose API forbids dots, and this accepts it
from any model (and also case and `-` variants, which BFCL would not)."""


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
    return data


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


def bfcl_tools(functions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """BFCL function docs as evalspec tool definitions (parameters as JSON Schema objects)."""
    tools = []
    for fn in functions:
        params = fn.get("parameters") or {}
        schema = param_schema({**params, "type": "dict"})
        schema.setdefault("properties", {})
        tools.append(
            {"name": fn["name"], "description": fn.get("description", ""), "parameters": schema}
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
    required = set(params.get("required") or ())
    args: dict[str, Any] = {}
    critics: dict[str, Any] = {}
    undefined = [p for p in answers if p not in props]
    unpassable = any(r not in props for r in required)
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


class _Flow(dict):
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
    questions: Sequence[Mapping[str, Any]], answers: Sequence[Mapping[str, Any]]
) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    by_id = {a["id"]: a for a in answers}
    missing = [q["id"] for q in questions if q["id"] not in by_id]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise UsageError(f"no possible answer for {len(missing)} question(s): {shown}")
    return [(q, by_id[q["id"]]) for q in questions]


def split_records(questions: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Group records so that no group holds two different docs for one function name.

    BFCL reuses names (e.g. `calculate_area`) with different parameters in different records;
    one suite offers one definition per name, so such records go to another group (first fit).
    """
    groups: list[tuple[dict[str, str], list[Mapping[str, Any]]]] = []
    for q in questions:
        docs = {fn["name"]: _fn_key(fn) for fn in q.get("function") or ()}
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
    answers: Sequence[Mapping[str, Any]],
    *,
    name: str,
    models: Sequence[str] = (DEFAULT_MODEL,),
) -> dict[str, Any]:
    """One suite in evalspec's YAML language: a case per record, BFCL's verdict as the rubric.

    Raises UsageError when two records define the same function name differently (use
    `bfcl_suite_dicts`, which splits them into several suites).
    """
    tools: dict[str, dict[str, Any]] = {}
    docs: dict[str, str] = {}
    cases = []
    for q, a in _pair(questions, answers):
        functions = {fn["name"]: fn for fn in q.get("function") or ()}
        for fn in functions.values():
            key = _fn_key(fn)
            if docs.setdefault(fn["name"], key) != key:
                raise UsageError(
                    f"record {q['id']} defines {fn['name']!r} differently from an earlier "
                    "record; one suite offers one definition per tool name "
                    "(split the records with bfcl_suite_dicts / `evalspec import bfcl`)"
                )
            if fn["name"] not in tools:
                tools[fn["name"]] = bfcl_tools([fn])[0]
        ground_truth = a.get("ground_truth") or []
        built = [_expected_call(e, functions.get(next(iter(e)))) for e in ground_truth]
        calls = [call for call, _, _ in built]
        case: dict[str, Any] = {"name": str(q["id"]), "tags": [_category(str(q["id"]))]}
        if any(undefined for _, undefined, _ in built):
            case["tags"].append(INVALID_TAG)
        case.update(_messages(q))
        case["tools"] = list(functions)  # the record's own functions, as BFCL offers them
        case["expect"] = {"tool_calls": calls} if calls else {"no_tool_calls": True}
        if any(unpassable for _, _, unpassable in built):
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
    return escape_templates(suite)


def bfcl_suite_dicts(
    questions: Sequence[Mapping[str, Any]],
    answers: Sequence[Mapping[str, Any]],
    *,
    name: str,
    models: Sequence[str] = (DEFAULT_MODEL,),
) -> list[dict[str, Any]]:
    """As many suites as the records need (see `split_records`): `name`, `name-2`, ..."""
    groups = split_records(questions)
    return [
        bfcl_suite_dict(group, answers, name=name if i == 0 else f"{name}-{i + 1}", models=models)
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


def write_suite_yaml(
    questions: Sequence[Mapping[str, Any]],
    answers: Sequence[Mapping[str, Any]],
    out: str | Path,
    *,
    name: str,
    models: Sequence[str] = (DEFAULT_MODEL,),
) -> list[Path]:
    """Write the suite(s) for these records; extra suites go beside `out` as `<stem>-2.yaml`, ...

    Every file is written to a temporary name first, so a failure leaves nothing half-written.
    """
    return write_suites(Path(out), bfcl_suite_dicts(questions, answers, name=name, models=models))


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


class DecodeError(ValueError):
    """A BFCL model output that is not a list of function calls."""


def _literal(node: ast.AST) -> Any:
    """A keyword argument's value: a Python literal, a bare name as its text, else the source."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        if isinstance(node, ast.Name):
            return node.id
        return ast.unparse(node)
    return _jsonable(value)


def _jsonable(value: Any) -> Any:
    """A Python literal as JSON data: what JSON has no word for (`...`, 1j, b'x') as text."""
    if isinstance(value, tuple | list | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return "..." if value is Ellipsis else str(value)


def _call_name(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise DecodeError("a call must name a function")
    parts.append(node.id)
    return ".".join(reversed(parts))


def parse_python_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """`[f(a=1), mod.g(b='x')]` as (name, arguments) pairs; the text is parsed, never run."""
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`").strip()
        if text.startswith("python"):
            text = text[len("python") :]
    text = text.strip()
    if len(text) > 1_000_000:
        raise DecodeError("output too long to decode")
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError, UnicodeError) as exc:
        raise DecodeError(f"not python function calls: {exc}") from None
    nodes = tree.elts if isinstance(tree, ast.List | ast.Tuple) else [tree]
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            raise DecodeError(f"not a function call: {ast.unparse(node)[:60]}")
        args = {kw.arg: _literal(kw.value) for kw in node.keywords if kw.arg is not None}
        calls.append((_call_name(node.func), args))
    return calls


def decode_result(result: Any) -> list[tuple[str, dict[str, Any]]]:
    """A BFCL `result` as (name, arguments) pairs: python-call text or `[{name: args}]`."""
    if isinstance(result, str):
        stripped = result.strip()
        if stripped.startswith(("[{", "{")):
            try:
                result = json.loads(stripped)
            except ValueError:
                return parse_python_calls(result)
        else:
            return parse_python_calls(result)
    if isinstance(result, dict):
        result = [result]
    if not isinstance(result, list):
        raise DecodeError(f"expected a list of calls, got {type(result).__name__}")
    calls = []
    for item in result:
        if not isinstance(item, dict) or len(item) != 1:
            raise DecodeError(f"each call must be {{name: arguments}}, got {str(item)[:60]}")
        ((name, args),) = item.items()
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                raise DecodeError(f"arguments of {name} are not JSON: {args[:60]}") from None
        if not isinstance(args, dict):
            raise DecodeError(f"arguments of {name} must be an object")
        calls.append((str(name), args))
    return calls


def _transcript(record_id: str, result: Any, model: str) -> Transcript:
    raw = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    try:
        decoded = decode_result(result)
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
    results: str | Path | Iterable[Mapping[str, Any]], *, model: str = DEFAULT_MODEL
) -> list[Transcript]:
    """Transcripts from BFCL model results (`{"id", "result"}` records, or a file of them)."""
    records = read_records(results) if isinstance(results, str | Path) else list(results)
    out = []
    for r in records:
        if "id" not in r or "result" not in r:
            raise UsageError(f"a BFCL result needs 'id' and 'result', got keys {sorted(r)}")
        out.append(_transcript(str(r["id"]), r["result"], model))
    return out
