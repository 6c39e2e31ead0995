"""The suite language is declared once (evalspec._language): the schema file is generated from
the declarations, and a suite that leaves a key out gets the declared `default`.

A unit test of the language declarations (`evalspec._language`), which it imports: the
generator and the vocabulary are the declarations' own code; a suite sees only the schema.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from evalspec._language import __main__ as language_command
from evalspec._language.cases import CASE, SIMULATED_USER
from evalspec._language.critics import CRITIC, EVALUATOR, RUBRIC
from evalspec._language.generate import declared_schema, schema_text
from evalspec._language.models import MODEL
from evalspec._language.state import BEHAVIOR
from evalspec._language.suite import SUITE
from evalspec._language.vocabulary import NO_DEFAULT, Const, Node, OneOf, Str, default_of, schema
from evalspec.api import load_suite

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "schemas" / "suite.schema.json"

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


def test_the_schema_file_is_exactly_what_the_declarations_make():
    """Regenerating changes nothing: the checked-in file is the declarations' output, byte for
    byte (run `python -m evalspec._language --write` after changing a declaration)."""
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text()
    assert (ROOT / "evalspec" / "suite.schema.json").read_text(encoding="utf-8") == schema_text()


def test_the_check_command_names_a_hand_edited_file_and_write_repairs_it(
    tmp_path, monkeypatch, capsys
):
    edited = tmp_path / "suite.schema.json"
    schema = declared_schema()
    schema["properties"]["suite"]["description"] = "edited by hand"
    edited.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
    monkeypatch.setattr(language_command, "SCHEMA_PATH", edited)

    assert language_command.main(["--check"]) == 1
    assert "is out of date: run python -m evalspec._language --write" in capsys.readouterr().err
    assert language_command.main(["--write"]) == 0
    assert edited.read_text(encoding="utf-8") == schema_text()
    assert language_command.main(["--check"]) == 0


def test_the_declarations_give_the_defaults_that_matter():
    assert default_of(BEHAVIOR, "effects", "first") is False  # through a list's items
    for key in ("fail_threshold", "warn_threshold", "extra_calls", "normalize_tool_names"):
        assert default_of(RUBRIC, key) is not NO_DEFAULT
    for key in ("mode", "max_turns", "concurrency", "timeout", "retries"):
        assert (
            default_of(SUITE, "run", key)
            == declared_schema()["properties"]["run"]["properties"][key]["default"]
        )


def test_a_suite_that_leaves_keys_out_gets_the_declared_defaults(tmp_path: Path):
    path = tmp_path / "minimal.yaml"
    path.write_text(MINIMAL, encoding="utf-8")
    suite = load_suite(path)
    case = suite.cases[0]
    for key in ("fail_threshold", "warn_threshold", "fail_on_tool_selection", "extra_calls"):
        assert getattr(suite.rubric, key) == default_of(RUBRIC, key)
        assert getattr(case.rubric, key) == default_of(RUBRIC, key)
    assert suite.run.max_turns == default_of(SUITE, "run", "max_turns")
    assert suite.run.timeout_s == default_of(SUITE, "run", "timeout")
    assert suite.run.mode == default_of(SUITE, "run", "mode")
    assert case.trials == default_of(SUITE, "trials")
    assert case.pass_rule == default_of(SUITE, "pass_rule")
    assert case.flaky is default_of(CASE, "flaky")
    assert suite.models[0].api_key_env == default_of(MODEL, "api_key_env")
    assert case.critics[0].weight == default_of(CRITIC, "weight")
    assert case.evaluators[0].required is default_of(EVALUATOR, "required")


def test_the_suite_model_reads_no_default_out_of_the_schema_file():
    """Defaults come from the declarations by name, never from the JSON file by pointer."""
    source = (ROOT / "evalspec" / "_suite" / "model.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "evalspec._util.schemas" not in imported
    pointers = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith(("/$defs/", "/properties/"))
    ]
    assert pointers == []


def test_a_default_that_code_relies_on_must_be_declared():
    with pytest.raises(KeyError, match="no_such_key"):
        default_of(RUBRIC, "no_such_key")
    with pytest.raises(KeyError, match="no default declared for goal"):
        default_of(SIMULATED_USER, "goal")


def _reversed(node: Node) -> Node:
    """The same declaration with every union's branches in the opposite order."""
    if isinstance(node, OneOf):
        return dataclasses.replace(node, branches=tuple(_reversed(b) for b in node.branches[::-1]))
    properties = getattr(node, "properties", None)
    if properties:
        return dataclasses.replace(
            node,  # type: ignore[type-var]
            properties={name: _reversed(sub) for name, sub in properties.items()},
        )
    return node


def test_defaults_are_found_by_name_whatever_order_the_union_branches_are_in():
    """A default inside a union is named by its key: reordering the branches moves nothing."""
    found = [
        (MODEL, ("api_key_env",)),
        (MODEL, ("provider",)),
        (CRITIC, ("weight",)),
        (CRITIC, ("similarity", "threshold")),
        (EVALUATOR, ("required",)),
        (RUBRIC, ("fail_threshold",)),
        (SUITE, ("run", "timeout")),
    ]
    for node, path in found:
        reordered = _reversed(node)
        assert reordered != node or not isinstance(node, OneOf)
        assert default_of(reordered, *path) == default_of(node, *path)


def test_null_is_a_value_a_default_or_a_constant_may_take():
    """A declared `default=None` is written as `"default": null`, not dropped."""
    assert schema(Str(default=None)) == {"type": "string", "default": None}
    assert schema(Const(value=None)) == {"const": None}
    assert schema(Str()) == {"type": "string"}
