"""The suite JSON Schema, and its errors translated into messages a person can act on."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache
from itertools import repeat
from typing import Any

from evalspec._language.common import WORDED_BY_VALIDATE
from evalspec._suite.load import LDict, LList, Pos
from evalspec._suite.yaml_hints import implicit_reading
from evalspec._util import registry
from evalspec._util.errors import Problem
from evalspec._util.schemas import fast_validator, language_schema


def _plugin_names() -> tuple[tuple[str, ...], ...]:
    """The names registered beside evalspec's own, per kind."""
    return tuple(
        tuple(sorted(registry.registered(kind, builtins=False))) for kind in registry.KINDS
    )


def suite_schema() -> dict[str, Any]:
    """The suite language's schema with every registered critic, evaluator and check in it,
    built-in or installed, each with its options: editors, `validate` and did-you-mean know
    them all. (Built-ins' options are written in the language schema itself.)"""
    return _schema_for(_plugin_names())


@lru_cache(maxsize=4)
def _schema_for(names: tuple[tuple[str, ...], ...]) -> dict[str, Any]:
    base = language_schema()
    if not any(names):
        return base
    schema: dict[str, Any] = json.loads(json.dumps(base))
    defs = schema["$defs"]
    places = {
        "critic": (defs["critic"]["anyOf"][0]["enum"], defs["critic"]["anyOf"][1]["properties"]),
        "evaluator": (
            defs["evaluator"]["anyOf"][0]["enum"],
            defs["evaluator"]["anyOf"][1]["properties"],
        ),
        "final_answer": (None, defs["final_answer"]["properties"]),
    }
    for kind, (enum, properties) in places.items():
        for name, plugin in registry.registered(kind).items():
            if name in properties:
                continue  # a built-in: the language schema has its options
            if enum is not None:
                enum.append(name)
            properties[name] = {
                "anyOf": [{"type": "boolean"}, plugin.options],
                "description": plugin.description or f"{kind} from a plugin",
            }
    return schema


def language_validator() -> Any:
    """The validator of the language alone; loads no plugin."""
    return _validator_for(())


@lru_cache(maxsize=4)
def _validator_for(names: tuple[tuple[str, ...], ...]) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_schema_for(names))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def unknown_tool_hint(name: str, tools: Iterable[str]) -> str:
    """The fix for a name that is not a tool of the suite: the closest tool, else the list of
    them, else (a suite without tools) where to declare it."""
    names = sorted(tools)
    if not names:
        return "add it under `tools:`"
    return did_you_mean(name, names) or "tools of this suite: " + ", ".join(names)


def format_path(parts: list[Any] | tuple[Any, ...]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def locate(root: Any, parts: list[Any], *, key: bool = False) -> Pos:
    """Where a path points; past the last positioned node (data a template made), its place."""
    best: Pos = getattr(root, "pos", Pos("<suite>", 1, 1))
    node = root
    for i, p in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, LDict) and isinstance(p, str):
            table = node.key_pos if key and last else node.value_pos
            best = table.get(p, best)
        elif isinstance(node, LList) and isinstance(p, int) and 0 <= p < len(node.item_pos):
            best = node.item_pos[p]
        try:
            node = node[p]
        except (KeyError, IndexError, TypeError):
            break
    return best


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if value is None:
        return "nothing (null)"
    return "text"


_TYPE_WORDS = {
    "object": "a mapping",
    "array": "a list",
    "string": "text",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "null": "null",
}


FAST_CHECK_MIN_CASES = 2000
"""From this many cases on, a compiled validator answers "valid?" first. Compiling it costs
~0.1 s of CPU once (plus its first use); jsonschema takes ~0.1 ms a case, so the two break
even at about 2,000 cases (measured: 500 cases 0.20 s compiled vs 0.11 s jsonschema, 2,000 cases
0.33 s both; 5,000 cases 0.04 s to check instead of 0.6 s). jsonschema still produces every
message when something is wrong."""


@lru_cache(maxsize=1)
def _compiled() -> Any:
    """The language alone: a suite that fits it names no plugin."""
    return _compile(language_schema())


def _compile(schema: dict[str, Any]) -> Any:
    """A yes/no validator. It never writes the schema's defaults into the document: a case's
    partial `rubric:` must not gain a default that hides the suite's own setting."""
    return fast_validator(schema)


def _head_schema() -> dict[str, Any]:
    """The language with `cases` left out: the top-level keys a stream checks first."""
    base = language_schema()
    return {**base, "properties": {**base["properties"], "cases": {"type": "array"}}}


@lru_cache(maxsize=1)
def _head_validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_head_schema())


@lru_cache(maxsize=1)
def _compiled_case() -> Any:
    """The validator of one case, for the parts of a suite read one case at a time."""
    base = language_schema()
    one_case: dict[str, Any] = {k: base[k] for k in ("$schema", "$id", "$defs") if k in base}
    return _compile({**one_case, "$ref": "#/$defs/case"})


def _passes(check: Any, value: Any) -> bool:
    import fastjsonschema

    try:
        check(value)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def head_quickly_valid(top: dict[str, Any]) -> bool:
    """True when every top-level key but `cases` certainly fits the language. The head is one
    object: jsonschema checks it in milliseconds, where compiling a validator for it (its code
    is ~600 KB) took ~0.2 s of CPU in every streamed load."""
    return bool(_head_validator().is_valid({**top, "cases": []}))


def case_quickly_valid(case: Any) -> bool:
    """True when one case certainly fits the language; False means "look closer"."""
    return plain_case(case) or _passes(_compiled_case(), case)


PLAIN_CASE = {
    "name": {"type": "string", "minLength": 1},
    "system": {"type": "string"},
    "tools": {"type": "array", "items": {"type": "string"}},
    "tags": {"type": "array", "items": {"type": "string"}},
}
"""The schemas of the case keys `plain_case` judges itself (a test holds them to the
language's); `user` and `expect` it judges only in their plainest forms (text; a list of
short-form calls)."""
_PLAIN_KEYS = frozenset({*PLAIN_CASE, "user", "expect"})
_LONG_FORM = frozenset({"tool", "args", "critics", "output"})


def plain_case(case: Any) -> bool:
    """True for a case of the commonest shape (`name`, `system`, `user` as text, `tools`,
    `tags`, `expect: {tool_calls: [{tool: {...}}]}`) whose every value fits the language:
    checked in ~1 µs, where the compiled check takes ~6 µs and ~0.1 s to compile. False
    says nothing: the compiled check decides. So it may only ever say True for a case the
    compiled check passes (a test compares the two on mutated cases)."""
    if not isinstance(case, dict) or not _PLAIN_KEYS.issuperset(case):
        return False
    get = case.get
    name, system, user = get("name", "-"), get("system", ""), get("user", "")
    if not (isinstance(name, str) and name and isinstance(system, str) and isinstance(user, str)):
        return False
    if not (_texts(get("tools", ())) and _texts(get("tags", ()))):
        return False
    return "expect" not in case or _plain_expect(case["expect"])


def _texts(value: Any) -> bool:
    # map, not a generator: this runs twice for every case.
    return isinstance(value, _SEQUENCE) and all(map(isinstance, value, repeat(str)))


_SEQUENCE = (list, tuple)


def _plain_expect(expect: Any) -> bool:
    """`{tool_calls: [{tool_name: {arg: value} or null}, ...]}` and nothing else."""
    if not isinstance(expect, dict) or len(expect) != 1 or "tool_calls" not in expect:
        return False
    calls = expect["tool_calls"]
    if not isinstance(calls, list):
        return False
    for call in calls:
        if not isinstance(call, dict) or not call:
            return False
        for tool, args in call.items():
            if not isinstance(tool, str) or tool in _LONG_FORM:
                return False
            if args is not None and not isinstance(args, dict):
                return False
    return True


def case_weight(case: Any) -> int:
    """A case's share of the schema check, counted in cases: a multi-turn case is one per turn
    (each turn is about as large as a case)."""
    turns = case.get("turns") if isinstance(case, dict) else None
    return len(turns) if isinstance(turns, list) and turns else 1


def quickly_valid(root: Any) -> bool:
    """True when a large document is certainly valid; False means "look closer"."""
    if not isinstance(root, dict):
        return False
    cases = root.get("cases") or ()
    if len(cases) < FAST_CHECK_MIN_CASES and (
        sum(case_weight(c) for c in cases) < FAST_CHECK_MIN_CASES
    ):
        return False
    return _passes(_compiled(), root)


def _problems(root: LDict, validator: Any) -> list[Problem]:
    problems: list[Problem] = []
    for error in validator.iter_errors(root):
        problems.extend(_translate(root, error))
    return problems


def schema_problems(root: LDict) -> list[Problem]:
    """Every schema violation in the document, each with a position and a fix."""
    if quickly_valid(root):
        return []
    # Installed plugins are looked up (an entry-point scan) only for a suite the language alone
    # rejects: one that fits it names no plugin.
    problems = _problems(root, language_validator())
    if problems and any(_plugin_names()):
        problems = _problems(root, _validator_for(_plugin_names()))
    # One message per place is enough: keep the first per (position, path).
    seen: set[tuple[Any, ...]] = set()
    unique = []
    for p in problems:
        k = (p.file, p.line, p.column, p.path, p.message)
        if k not in seen:
            seen.add(k)
            unique.append(p)
    return unique


def _translate(root: LDict, error: Any) -> list[Problem]:
    if isinstance(error.schema, dict) and error.schema.get("$comment") == WORDED_BY_VALIDATE:
        return []
    parts = list(error.absolute_path)
    path = format_path(parts)
    v = error.validator
    if v == "anyOf":
        return _translate_any_of(root, error)
    if v == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(error.schema.get("properties", {}))
        out = []
        extras = [k for k in error.instance if k not in error.schema.get("properties", {})]
        for k in extras:
            pos = locate(root, [*parts, k], key=True)
            hint = did_you_mean(k, allowed) or ("allowed keys: " + ", ".join(allowed))
            out.append(
                Problem.at(
                    pos,
                    path or "(top level)",
                    f"unknown key {k!r}",
                    hint,
                )
            )
        return out
    pos = locate(root, parts)
    where = path or "(top level)"
    if v == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        example = _example_for(error.schema, missing)
        return [
            Problem.at(
                pos,
                where,
                f"missing required key {missing!r}",
                f"add `{missing}: {example}`",
            )
        ]
    if v == "dependentRequired":  # "'judge' is a dependency of 'judged'"
        needed, having = [*error.message.split("'")[1::2], "", ""][:2]
        example = _example_for(error.schema, needed)
        message = f"`{having}` needs `{needed}` beside it"
        return [Problem.at(pos, where, message, f"add `{needed}: {example}`")]
    if v == "type":
        want = error.validator_value
        wants = [want] if isinstance(want, str) else list(want)
        words = " or ".join(_TYPE_WORDS.get(w, w) for w in wants)
        message = f"expected {words}, got {_type_name(error.instance)}"
        hint = _type_hint(error.schema)
        reading = implicit_reading(*pos, error.instance) if "string" in wants else None
        if reading is not None:
            message, hint = f"{message}: {reading[0]}", reading[1]
        return [Problem.at(pos, where, message, hint)]
    if v == "enum":
        choices = [str(c) for c in error.validator_value]
        hint = did_you_mean(str(error.instance), choices)
        hint = f"{hint} " if hint else ""
        return [
            Problem.at(
                pos,
                where,
                f"{error.instance!r} is not allowed here",
                f"{hint}choose one of: {', '.join(choices)}",
            )
        ]
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        message, hint = range_message(error.instance, error.schema)
        return [Problem.at(pos, where, message, hint)]
    if v in ("minItems", "minProperties", "minLength"):
        return [Problem.at(pos, where, "must not be empty", _type_hint(error.schema))]
    if v == "pattern":
        return [replace(_pattern_problem(pos, where, parts, error), shape_ok=True)]
    return [Problem.at(pos, where, error.message, _type_hint(error.schema))]


def _translate_any_of(root: LDict, error: Any) -> list[Problem]:
    """Pick the branch meant by the value's own type, and report that branch's errors."""
    instance = error.instance
    branches = error.validator_value
    parts = list(error.absolute_path)
    pos = locate(root, parts)
    path = format_path(parts) or "(top level)"
    matching = [i for i, b in enumerate(branches) if _type_fits(b, instance)]
    if isinstance(instance, str):
        names = [str(c) for b in branches for c in b.get("enum", ())]
        if names and instance not in names:
            what = _what(error.schema)
            hint = did_you_mean(instance, names)
            hint = f"{hint} " if hint else ""
            return [
                Problem.at(
                    pos,
                    path,
                    f"unknown {what} {instance!r}",
                    f"{hint}choose one of: {', '.join(names)}",
                )
            ]
    if len(matching) == 1:
        sub = [e for e in error.context if e.relative_schema_path[0] == matching[0]]
        if sub:
            out: list[Problem] = []
            for e in sub:
                out.extend(_translate(root, e))
            return out
    kinds = " or ".join(sorted({_TYPE_WORDS.get(t, t) for b in branches for t in _types(b)}))
    examples = error.schema.get("examples", [])
    hint = f"for example: {json.dumps(examples[0])}" if examples else ""
    return [
        Problem.at(
            pos,
            path,
            f"expected {kinds}, got {_type_name(instance)}",
            hint,
        )
    ]


def _what(schema: dict[str, Any]) -> str:
    """What a choice of names is called: the schema definition it comes from, if any."""
    for name, definition in suite_schema().get("$defs", {}).items():
        if definition is schema or definition == schema:
            return str(name).replace("_", " ")
    return "value"


def _fmt(number: Any) -> str:
    return f"{number:g}" if isinstance(number, float) else str(number)


def range_message(value: Any, schema: dict[str, Any]) -> tuple[str, str]:
    """A number outside its schema's bounds: the whole allowed range, and how to fix it."""
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    if "exclusiveMinimum" in schema and hi is None:
        allowed = f"more than {_fmt(lo)}"
    elif "exclusiveMaximum" in schema and lo is None:
        allowed = f"less than {_fmt(hi)}"
    elif lo is not None and hi is not None:
        allowed = f"from {_fmt(lo)} to {_fmt(hi)}"
    elif lo is not None:
        allowed = f"{_fmt(lo)} or more"
    else:
        allowed = f"{_fmt(hi)} or less"
    message = f"{_fmt(value)} is out of range: it must be {allowed}"
    if lo == 0 and hi == 1 and isinstance(value, int) and 1 < value <= 100:
        return message, f"scores are shares from 0 to 1: write {_fmt(value / 100)} for {value}%"
    examples = schema.get("examples") or []
    if examples and isinstance(examples[0], int | float):
        return message, f"for example: {_fmt(examples[0])}"
    if lo == 0 and (hi is None or hi > 1):
        return message, f"use {allowed} (0 makes it not count)"
    return message, f"use a number {allowed}"


def _pattern_problem(pos: Pos, where: str, parts: list[Any], error: Any) -> Problem:
    """Text of the wrong form; a secret put where its variable's name belongs is not echoed."""
    schema = error.schema
    desc = str(schema.get("description", "")).rstrip(".")
    examples = schema.get("examples") or []
    example = f"for example: {examples[0]}" if examples else f"it must match {schema['pattern']}"
    if parts and parts[-1] == "api_key_env":
        return Problem.at(
            pos,
            where,
            "this must be the name of an environment variable, not the key itself",
            "never put an API key in a suite; write `api_key_env: OPENAI_API_KEY` "
            "and set that variable",
        )
    if parts and parts[-1] == "base_url" and isinstance(error.instance, str):
        bare = error.instance.strip().split("://", 1)[-1]
        return Problem.at(
            pos,
            where,
            f"{error.instance!r:.80} is not a URL starting with http:// or https://, so no "
            "request could reach it",
            f"write the whole address, e.g. http://{bare[:60]}",
        )
    what = f"{error.instance!r:.80} is not written the expected way"
    if desc:
        what += f": write {desc[0].lower()}{desc[1:]}"
    return Problem.at(pos, where, what, example)


def _types(branch: dict[str, Any]) -> list[str]:
    t = branch.get("type")
    if t is None:
        return ["string"] if "enum" in branch else []
    return [t] if isinstance(t, str) else list(t)


def _type_fits(branch: dict[str, Any], value: Any) -> bool:
    types = _types(branch)
    if not types:
        return False
    checks = {
        "object": lambda x: isinstance(x, dict),
        "array": lambda x: isinstance(x, list),
        "string": lambda x: isinstance(x, str),
        "number": lambda x: isinstance(x, int | float) and not isinstance(x, bool),
        "integer": lambda x: isinstance(x, int) and not isinstance(x, bool),
        "boolean": lambda x: isinstance(x, bool),
        "null": lambda x: x is None,
    }
    return any(checks.get(t, lambda x: False)(value) for t in types)


def _example_for(schema: dict[str, Any], key: str) -> str:
    prop = schema.get("properties", {}).get(key, {})
    examples = prop.get("examples") or []
    if examples:
        ex = examples[0]
        return ex if isinstance(ex, str) else json.dumps(ex)
    return "..."


def _type_hint(schema: dict[str, Any]) -> str:
    examples = schema.get("examples") or []
    if examples:
        ex = examples[0]
        return f"for example: {ex if isinstance(ex, str) else json.dumps(ex)}"
    return ""


def explain_value_error(error: Any) -> str:
    """One jsonschema error about a value (not a suite key), in words a person reads."""
    v = error.validator
    if v == "type":
        want = error.validator_value
        wants = [want] if isinstance(want, str) else list(want)
        words = " or ".join(_TYPE_WORDS.get(w, w) for w in wants)
        return f"expected {words}, got {_type_name(error.instance)}"
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return range_message(error.instance, error.schema)[0].split(": ", 1)[-1]
    if v == "enum":
        return "it must be one of: " + ", ".join(str(c) for c in error.validator_value)
    if v == "const":
        return f"it must be {error.validator_value!r}"
    if v in ("minLength", "maxLength", "minItems", "maxItems"):
        return f"{v[:3]}imum {'length' if 'Length' in v else 'items'}: {error.validator_value}"
    return str(error.message)


JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
_TYPE_ALIASES = {
    "text": "string",
    "str": "string",
    "int": "integer",
    "float": "number",
    "double": "number",
    "bool": "boolean",
    "list": "array",
    "dict": "object",
    "map": "object",
    "mapping": "object",
    "none": "null",
}


def suggest_json_type(name: Any) -> str:
    """`text` → did you mean 'string'? (the JSON Schema word for it)."""
    alias = _TYPE_ALIASES.get(str(name).lower())
    if alias:
        return f"did you mean {alias!r}?"
    return did_you_mean(str(name), JSON_TYPES)
