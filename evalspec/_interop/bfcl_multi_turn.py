"""BFCL's multi-turn categories as suites: one case per conversation, judged on state.

BFCL runs its ground truth and the model's calls through its own classes and, after every
turn, compares the instances' public attributes. The imported case says the same in evalspec's
language: `state:` BFCL's initial config (one key per involved class), the `bfcl` tool
environment (`bfcl_environment.py`), one turn per BFCL turn whose `expect.state` is where the
ground truth leaves each attribute that differs from the initial state and whose `unchanged`
lists the rest, BFCL's response check as a `contains` check on the outputs given so far (the
environment's `$outputs`), and `turn_rule: all_or_nothing`. The expected states come from
running the ground truth, so importing needs `bfcl-eval` installed. A judged turn also says
`min_calls: 1`: BFCL fails a turn in which the model makes no call.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from evalspec._interop.bfcl import (
    ANSWERS,
    DEFAULT_MODEL,
    QUESTIONS,
    SOURCES,
    bfcl_tools,
    escape_templates,
    lacks,
)
from evalspec._interop.bfcl_decode import DecodeError, _value
from evalspec._interop.bfcl_environment import CLASSES, OUTPUTS, BfclEnvironment
from evalspec._interop.records import (
    RecordFault,
    Refusal,
    Sources,
    blame,
    holdable,
    refused_all,
    refused_case,
)
from evalspec._util.errors import UsageError
from evalspec._util.graph import GraphTooLarge

CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_param",
    "multi_turn_miss_func",
    "multi_turn_long_context",
)
"""Imported. multi_turn_miss_func holds functions back until a later turn: the case's `tools:`
leave them out and that turn's `add_tools:` offers them, with the user message BFCL sends then
(its question has none for that turn)."""


def is_multi_turn(records: Sequence[Mapping[str, Any]]) -> bool:
    return any(str(r.get("id", "")).startswith("multi_turn") for r in records)


def function_docs(classes: Sequence[str]) -> list[dict[str, Any]]:
    """BFCL's function docs of these classes, as it offers them to the model."""
    try:
        data = resources.files("bfcl_eval") / "data" / "multi_turn_func_doc"
    except ModuleNotFoundError:
        raise UsageError(_NEEDS_BFCL) from None
    docs: list[dict[str, Any]] = []
    for name in classes:
        text = (data / f"{CLASSES[name]}.json").read_text(encoding="utf-8")
        docs.extend(json.loads(line) for line in text.splitlines() if line.strip())
    return docs


_NEEDS_BFCL = (
    "importing BFCL multi-turn records runs their ground truth through BFCL's classes: "
    "pip install --no-deps 'bfcl-eval==2026.3.23'"
)


def parse_call(text: str, env: BfclEnvironment) -> tuple[str, dict[str, Any]]:
    """One ground-truth call `f(a, b=2)` as a name and keyword arguments (positional ones named
    from the method's signature, as Python binds them when BFCL evaluates the call)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise DecodeError(f"not a function call: {text[:80]}: {exc}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise DecodeError(f"not a function call: {text[:80]}")
    name = node.func.id
    args = {kw.arg or "**": _value(kw.value) for kw in node.keywords}
    if node.args:
        params = env.parameter_names(name)
        for param, value in zip(params, node.args, strict=False):
            args[param] = _value(value)
    return name, args


def _pointer(*parts: str) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _turn_text(messages: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")


def multi_turn_case(
    question: Mapping[str, Any], answer: Mapping[str, Any], *, long_context: bool
) -> dict[str, Any]:
    """One conversation as a case (see the module's docstring)."""
    rid = str(question["id"])
    classes = [str(c) for c in question.get("involved_classes") or ()]
    unknown = [c for c in classes if c not in CLASSES]
    if unknown:
        raise RecordFault(f"class {unknown[0]!r} is not a multi-turn class", QUESTIONS)
    config = question.get("initial_config") or {}
    state = {c: config.get(c, {}) for c in classes}
    env = BfclEnvironment(state, classes, {"long_context": long_context})
    # names only: a set of the file's numbers hashes them as themselves (chosen collisions)
    excluded = {n for n in question.get("excluded_function") or () if isinstance(n, str)}
    turns_in = list(question.get("question") or [])
    held = held_back(question, len(turns_in))
    later = {n for names in held.values() for n in names}
    offered = [d["name"] for d in function_docs(classes) if d["name"] not in excluded | later]
    with blame(ANSWERS):
        truth = answer.get("ground_truth") or []
        if not isinstance(truth, list) or len(truth) != len(turns_in):
            raise RecordFault(
                f"its ground truth is not a list of {len(turns_in)} turns, one per turn of "
                "the question",
                ANSWERS,
            )
        try:
            turns = _turns(env, turns_in, truth, held)
        except GraphTooLarge as exc:
            raise RecordFault(f"under its ground truth, {exc}", ANSWERS) from None
    return {
        "name": rid,
        "tags": [rid.rsplit("_", 1)[0]],
        "state": state,
        "tools": offered,
        "turns": turns,
        "turn_rule": "all_or_nothing",
    }


def _turns(
    env: BfclEnvironment,
    turns_in: list[Any],
    truth: list[Any],
    held: dict[int, list[str]],
) -> list[dict[str, Any]]:
    """The case's turns, each judged on the state its ground truth leaves in `env`."""
    initial = env.snapshot()
    turns = []
    for k, (messages, calls) in enumerate(zip(turns_in, truth, strict=True)):
        outputs = []
        for text in calls:
            name, args = parse_call(str(text), env)
            outputs.append(env.call(name, args).output)
        after = env.snapshot()
        expect_state: dict[str, Any] = {}
        if outputs:
            # BFCL's response check: every output of the turn's ground truth among the outputs
            # the model has seen so far. `contains` reads the list as JSON text: each output as
            # a JSON string, quotes included, matches one whole output.
            pieces = [json.dumps(o, ensure_ascii=False) for o in outputs if isinstance(o, str)]
            expect_state[_pointer(OUTPUTS)] = {"value": pieces, "contains": {}}
        unchanged: list[str] = []
        for cls, attrs in after.items():
            if cls == OUTPUTS:
                continue
            for attr, value in attrs.items():
                path = _pointer(cls, attr)
                # `unchanged` compares with the conversation's initial state; anything a
                # turn has moved from there (even back again later) is checked by value.
                if initial.get(cls, {}).get(attr) == value:
                    unchanged.append(path)
                else:
                    # A mapping would read as critics: the long form says it is the value.
                    expect_state[path] = {"value": value} if isinstance(value, dict) else value
        expect: dict[str, Any] = {}
        if expect_state:
            expect["state"] = expect_state
        if unchanged:
            expect["unchanged"] = unchanged
        turn: dict[str, Any] = {"user": _turn_text(messages) or f"(turn {k + 1})"}
        if k in held:  # BFCL offers the held-back functions and says so in the user's place
            turn = {"user": _added_functions_prompt(), "add_tools": held[k]}
        # A turn without ground-truth calls (miss_param's question back to the user) is not
        # judged in BFCL: what the model does there is judged by the next turn's state.
        if expect and calls:
            # BFCL fails a turn whose ground truth calls when the model calls nothing
            # (`empty_turn_model_response`), even where the state is already right.
            turn["expect"] = {"min_calls": 1, **expect}
        turns.append(turn)
    return turns


def held_back(question: Mapping[str, Any], turns: int) -> dict[int, list[str]]:
    """multi_turn_miss_func's `missed_function`: the functions offered from a later turn on,
    by turn; BFCL leaves those turns' questions empty."""
    raw = question.get("missed_function") or {}
    if not isinstance(raw, Mapping):
        raise RecordFault("missed_function must map turn numbers to names", QUESTIONS)
    out: dict[int, list[str]] = {}
    for key, names in raw.items():
        k = int(key) if str(key).isdigit() else -1
        if not 0 < k < turns or not isinstance(names, list):
            raise RecordFault(
                f"missed_function turn {str(key)[:20]!r} is not a later turn of its {turns} "
                "turns with a list of function names",
                QUESTIONS,
            )
        questions = question.get("question") or []
        if questions[k]:
            raise RecordFault(
                f"turn {k} adds functions but has a user message of its own (BFCL asks such "
                "turns to be empty, and its inference fails on this record)",
                QUESTIONS,
            )
        out[k] = [str(n) for n in names]
    return out


def _added_functions_prompt() -> str:
    """What BFCL says in the user's place when it adds functions (function calling)."""
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

    return str(DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC)


def _case_or_refusal(
    question: Mapping[str, Any],
    by_id: Mapping[str, Mapping[str, Any]],
    long_context: bool,
    refused: list[Refusal],
    sources: Sources,
) -> dict[str, Any]:
    """The record's case, or (its fault named in `refused`) a case that fails."""
    rid = str(question["id"])
    try:
        with blame(QUESTIONS):
            if "question" not in question:
                raise lacks(question, "question", QUESTIONS)
            if rid not in by_id:
                raise RecordFault("the answer file has no possible answer with this id", ANSWERS)
            if "ground_truth" not in by_id[rid]:
                raise lacks(by_id[rid], "ground_truth", ANSWERS)
            case = multi_turn_case(question, by_id[rid], long_context=long_context)
            holdable(case, "case (question, state and ground truth)", QUESTIONS)
            return case
    except RecordFault as fault:
        refusal = sources.refusal(rid, fault)
        refused.append(refusal)
        return refused_case(refusal, [rid.rsplit("_", 1)[0]])


def multi_turn_suite_dict(
    questions: Sequence[Mapping[str, Any]],
    answers: Sequence[Mapping[str, Any]] | None,
    *,
    name: str,
    models: Sequence[str] = (DEFAULT_MODEL,),
    refused: list[Refusal] | None = None,
    sources: Sources = SOURCES,
) -> dict[str, Any]:
    """A suite of BFCL multi-turn conversations (the `bfcl` environment answers every call).

    A record that cannot become a case is refused (appended to `refused`) and stands in the
    suite as a case that fails; UsageError when every record is refused."""
    if answers is None:
        raise UsageError("BFCL multi-turn records need their possible answers (the ground truth)")
    by_id = {str(a["id"]): a for a in answers}
    categories = {str(q["id"]).rsplit("_", 1)[0] for q in questions}
    long_context = categories == {"multi_turn_long_context"}
    if len(categories) > 1 and "multi_turn_long_context" in categories:
        raise UsageError("import multi_turn_long_context records on their own (a suite of theirs)")
    refused = refused if refused is not None else []
    before = len(refused)
    cases = [_case_or_refusal(q, by_id, long_context, refused, sources) for q in questions]
    if questions and len(refused) - before == len(questions):
        raise refused_all(refused[before:], "a BFCL multi-turn question file with its answers")
    classes = sorted({c for case in cases for c in case.get("state") or ()})
    suite: dict[str, Any] = {
        "suite": name,
        "description": "Imported from BFCL's multi-turn records: one case per conversation, "
        "each turn judged on the state BFCL's ground truth leaves (all or nothing).",
        "models": list(models) or [DEFAULT_MODEL],
        "environment": {
            "kind": "bfcl",
            "params": {"long_context": long_context},
            "validate_arguments": False,  # BFCL runs every call, whatever its arguments
        },
        # BFCL's verdict is pass or fail: a turn passes only when every state check does.
        "rubric": {"state_weight": 1.0, "warn_threshold": 1.0, "fail_threshold": 1.0},
        "tools": bfcl_tools(function_docs(classes)),
        "cases": cases,
    }
    escaped: dict[str, Any] = escape_templates(suite)
    return escaped
