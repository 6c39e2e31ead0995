"""one_of against every BFCL possible answer: the listed answer passes, a wrong one fails.

Runs over every record of the simple, multiple and parallel possible-answer files in
tests/data/bfcl, for every parameter of every ground-truth call, with and without
BFCL's string normalization and with and without the parameter type from the question file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support import critic as make_critic

DATA = Path(__file__).resolve().parent / "data" / "bfcl"
ANSWER_FILES = sorted((DATA / "possible_answer").glob("*.json"))

_KIND_OF_TYPE = {
    "string": "str",
    "integer": "int",
    "float": "float",
    "boolean": "bool",
    "array": "list",
    "tuple": "list",
    "dict": "dict",
}


def standardize_string(text: str) -> str:
    """BFCL's ast_checker.standardize_string, the normalization `normalize: true` promises:
    spaces and ,./-_*^ dropped, lowercased, ' read as "."""
    return re.sub(r"[ \,\.\/\-\_\*\^]", "", text).lower().replace("'", '"')


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _params() -> list[tuple[str, str, list[Any], str | None]]:
    """(record id, parameter, acceptable values, BFCL type from the question file)."""
    out = []
    for answer_file in ANSWER_FILES:
        questions = {q["id"]: q for q in _lines(DATA / answer_file.name)}
        for record in _lines(answer_file):
            tools = {f["name"]: f for f in questions[record["id"]]["function"]}
            for call in record["ground_truth"]:
                for func, params in call.items():
                    schema = tools[func]["parameters"]["properties"]
                    for name, choices in params.items():
                        out.append((record["id"], name, choices, schema[name]["type"]))
    return out


PARAMS = _params()


def _is_omit(value: Any) -> bool:
    return isinstance(value, str) and value == ""


def _concrete(candidate: Any) -> Any:
    """A value a model could send for one acceptable value: dict specs take first choices."""
    if isinstance(candidate, dict):
        out = {}
        for key, choices in candidate.items():
            if not _is_omit(choices[0]):
                out[key] = _concrete(choices[0])
        return out
    if isinstance(candidate, list):
        return [_concrete(c) if isinstance(c, dict) else c for c in candidate]
    return candidate


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}[
        type(value)
    ]


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _wrong_value(value: Any, candidates: list[Any]) -> tuple[bool, Any]:
    """(found, a value of the same type that no acceptable value equals)."""
    kind = _kind(value)
    plain = [_concrete(c) for c in candidates]
    texts = {standardize_string(c) for c in plain if isinstance(c, str)}
    if kind == "bool":
        wrong: Any = not value
    elif kind in ("int", "float"):
        wrong = value + (1 if kind == "int" else 1.5)
        while any(_kind(c) in ("int", "float") and c == wrong for c in plain):
            wrong += 1
    elif kind == "str":
        wrong = value + " zq"
        if standardize_string(wrong) in texts:
            return False, None
    elif kind == "list":
        wrong = [*value, value[-1]] if value else ["zq"]
    elif kind == "dict":
        spec = next(c for c in candidates if isinstance(c, dict))
        wrong = dict(value)
        for key in wrong:
            found, replacement = _wrong_value(wrong[key], spec[key])
            if found:
                wrong[key] = replacement
                break
        else:
            wrong["zq_unexpected"] = 1
    else:
        return False, None
    return not any(_same(wrong, c) for c in plain), wrong


def _wrong_types(value: Any, declared: str | None) -> list[Any]:
    """Values of another type than the parameter's: each must fail."""
    kind = declared or _kind(value)
    if kind == "int":
        return [str(value), float(value), True]
    if kind == "float":
        return [str(value), True, [value]]
    if kind == "bool":
        return [str(value).lower(), int(value), None]
    if kind == "str":
        return [12345, True, [value]]
    if kind == "list":
        return [json.dumps(value), {"items": value}, 7]
    if kind == "dict":
        return [list(value.items()), json.dumps(value), None]
    if kind == "null":
        return ["zq", 0, False]
    raise AssertionError(kind)


@pytest.mark.parametrize("normalize", [False, True], ids=["exact", "normalize"])
@pytest.mark.parametrize("with_type", [False, True], ids=["inferred-type", "declared-type"])
def test_every_bfcl_answer_passes_and_wrong_values_fail(normalize: bool, with_type: bool):
    counts: Counter[str] = Counter()
    failures: list[str] = []

    def check(
        label: str, rid: str, name: str, choices: list[Any], value: Any, present: bool, want: float
    ):
        critic = make_critic("one_of", params)
        outcome = critic.evaluate(choices, value, present=present)
        counts[label] += 1
        if outcome.score != want or outcome.match is not (want == 1.0):
            failures.append(f"{label} {rid}.{name}={value!r} of {choices!r}: {outcome.reason}")

    for rid, name, choices, bfcl_type in PARAMS:
        declared = _KIND_OF_TYPE.get(bfcl_type) if with_type else None
        params: dict[str, Any] = {"normalize": normalize}
        if with_type and bfcl_type != "any":
            params["type"] = bfcl_type
        counts["parameters"] += 1

        # The first acceptable value as written; "" first means "left out".
        first = choices[0]
        if _is_omit(first):
            check("first_left_out", rid, name, choices, None, False, 1.0)
        else:
            check("first_value", rid, name, choices, _concrete(first), True, 1.0)

        candidates = [c for c in choices if not _is_omit(c)]
        if not candidates:
            check("must_be_left_out_but_given", rid, name, choices, "zq", True, 0.0)
            continue
        value = _concrete(candidates[0])
        if _is_omit(first):
            check("first_non_empty_value", rid, name, choices, value, True, 1.0)
        if "" not in choices:
            check("required_but_left_out", rid, name, choices, None, False, 0.0)

        found, wrong = _wrong_value(value, candidates)
        if found:
            check("wrong_value_same_type", rid, name, choices, wrong, True, 0.0)
        else:
            counts["no_same_type_mutation"] += 1
        for wrong_type in _wrong_types(value, declared):
            if any(_same(wrong_type, c) for c in candidates):
                continue  # e.g. None when None is itself acceptable
            check("wrong_type", rid, name, choices, wrong_type, True, 0.0)

    print(f"\nBFCL one_of (normalize={normalize}, declared type={with_type}): {dict(counts)}")
    assert not failures, f"{len(failures)} failures, first ones:\n" + "\n".join(failures[:15])
    records = sum(len(_lines(f)) for f in ANSWER_FILES)
    assert records == 800
    assert counts["parameters"] == len(PARAMS) > 3000
    assert counts["wrong_value_same_type"] > 0.95 * counts["parameters"] - counts["first_left_out"]
