"""Defaults live in the schema: a suite that leaves a key out gets the schema's `default`."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from evalspec._util import schemas
from evalspec._util.schemas import CRITIC, MODEL, RUBRIC, RUN, language_schema, schema_default
from evalspec.api import load_suite


def _defaults(node, path=""):
    """Every (pointer, default) the schema declares."""
    if isinstance(node, dict):
        if "default" in node:
            yield path, node["default"]
        for key, value in node.items():
            yield from _defaults(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _defaults(value, f"{path}/{i}")


MINIMAL = """
suite: minimal
models: [m]
tools:
  - name: t
    parameters: {type: object, properties: {a: {type: string}}}
cases:
  - name: c
    user: hi
    expect:
      tool_calls: [{t: {a: x}}]
    critics: {a: binary}
    evaluators: [no_tool_calls]
"""


def test_the_schema_declares_the_defaults_that_matter():
    declared = dict(_defaults(language_schema()))
    for key in ("fail_threshold", "warn_threshold", "extra_calls", "normalize_tool_names"):
        assert f"/$defs/rubric/properties/{key}" in declared
    for key in ("mode", "max_turns", "concurrency", "timeout", "retries"):
        assert f"/properties/run/properties/{key}" in declared


def test_a_suite_that_leaves_keys_out_gets_the_schema_defaults(tmp_path: Path):
    path = tmp_path / "minimal.yaml"
    path.write_text(MINIMAL, encoding="utf-8")
    suite = load_suite(path)
    case = suite.cases[0]
    for key in ("fail_threshold", "warn_threshold", "fail_on_tool_selection", "extra_calls"):
        assert getattr(suite.rubric, key) == schema_default(RUBRIC + key)
        assert getattr(case.rubric, key) == schema_default(RUBRIC + key)
    assert suite.run.max_turns == schema_default(RUN + "max_turns")
    assert suite.run.timeout_s == schema_default(RUN + "timeout")
    assert suite.run.mode == schema_default(RUN + "mode")
    assert case.trials == schema_default("/properties/trials")
    assert case.pass_rule == schema_default("/properties/pass_rule")
    assert suite.models[0].api_key_env == schema_default("/$defs/model/properties/api_key_env")
    assert case.critics[0].weight == schema_default("/$defs/critic/properties/weight")
    assert case.evaluators[0].required is schema_default("/$defs/evaluator/properties/required")


def test_a_default_that_code_relies_on_must_be_in_the_schema():
    with pytest.raises(KeyError):
        schema_default("/$defs/rubric/properties/no_such_key")


def _reversed_unions(node):
    if isinstance(node, dict):
        out = {k: _reversed_unions(v) for k, v in node.items()}
        for union in ("anyOf", "oneOf"):
            if union in out:
                out[union] = out[union][::-1]
        return out
    if isinstance(node, list):
        return [_reversed_unions(v) for v in node]
    return node


POINTERS = (
    MODEL + "api_key_env",
    MODEL + "provider",
    CRITIC + "weight",
    CRITIC + "similarity/properties/threshold",
    "/$defs/evaluator/properties/required",
    RUBRIC + "fail_threshold",
    RUN + "timeout",
    RUN + "retries",
)


def test_defaults_are_found_by_name_whatever_order_the_union_branches_are_in(monkeypatch):
    """A default inside `anyOf` is named by its key: reordering the branches moves nothing."""
    as_written = {p: schema_default(p) for p in POINTERS}
    reordered = _reversed_unions(copy.deepcopy(language_schema()))
    assert reordered != language_schema()
    monkeypatch.setattr(schemas, "language_schema", lambda: reordered)
    assert {p: schema_default(p) for p in POINTERS} == as_written
