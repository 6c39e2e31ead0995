"""JSON Schemas: the suite language's file, loaded once, and the compiled checks for the plain
schemas tools use.

The suite schema file is generated from the language's declarations (evalspec._language, which
also holds the defaults code reads); editors complete from the file and `validate` checks
against it, reading it as JSON rather than building it from the declarations at each start.

jsonschema words every error well but costs ~10 µs a check; a validator compiled by
fastjsonschema answers "valid?" in a tenth of that. The two agree only on some keywords, so a
compiled check is made only for schemas that use nothing else; jsonschema still explains what is
wrong whenever the compiled check says no.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "suite.schema.json"
"""In a source checkout; an installed package carries the same file as package data."""


PACKAGED_SCHEMA = Path(__file__).resolve().parents[1] / "suite.schema.json"
"""The copy the package carries (the same file): present wherever evalspec is installed."""


def schema_file() -> Path:
    """A file of the suite schema that exists here, for an editor's `$schema` modeline."""
    return PACKAGED_SCHEMA if PACKAGED_SCHEMA.is_file() else SCHEMA_PATH


@lru_cache(maxsize=1)
def language_schema() -> dict[str, Any]:
    """The suite language's JSON Schema as written (schemas/suite.schema.json), without the
    plugins' checks, which `evalspec._suite.schema.suite_schema` adds."""
    from importlib import resources

    packaged = resources.files("evalspec").joinpath("suite.schema.json")
    source = packaged if packaged.is_file() else SCHEMA_PATH
    schema: dict[str, Any] = json.loads(source.read_text(encoding="utf-8"))
    return schema


# ---------------------------------------------------------------------------------------------
# compiled checks for plain schemas

FAST_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "description",
        "title",
        "examples",
    }
)
"""Keywords a compiled (draft-07) validator judges exactly as jsonschema's 2020-12 one does.
Left out on purpose: `enum`/`const` (there 1 equals true), `format` (asserted there, not
here), `default` (filled into the data there), `pattern`, `$ref` and everything newer."""


def plain_schema(schema: Any) -> bool:
    """Does this schema use only `FAST_KEYWORDS`, at every depth?"""
    if not isinstance(schema, dict) or not FAST_KEYWORDS.issuperset(schema):
        return False
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    kinds = schema.get("type", [])
    return (
        isinstance(props, dict)
        and all(plain_schema(sub) for sub in props.values())
        and (isinstance(extra, bool) or plain_schema(extra))
        and ("items" not in schema or plain_schema(schema["items"]))
        and all(isinstance(name, str) for name in schema.get("required", []))
        and all(isinstance(kind, str) for kind in ([kinds] if isinstance(kinds, str) else kinds))
    )


def fast_validator(schema: dict[str, Any]) -> Callable[[Any], Any]:
    """fastjsonschema's validator for `schema` (raises on an invalid value; never writes the
    schema's defaults into it), compiled from a copy: fastjsonschema rewrites `$ref`s in place
    against the schema's `$id`, which turned the language schema every later reader shares
    (`evalspec schema`, the copy `init` writes) into other references in the same process."""
    import copy

    import fastjsonschema

    validate: Callable[[Any], Any] = fastjsonschema.compile(
        copy.deepcopy(schema), use_default=False
    )
    return validate


def compiled_check(schema: Any) -> Callable[[Any], bool] | None:
    """`check(value)` -> is it valid, for a plain, well-formed schema; None for any other."""
    if not plain_schema(schema):
        return None
    import fastjsonschema

    try:
        validate = fast_validator(schema)
    except fastjsonschema.JsonSchemaDefinitionException:
        return None

    def check(value: Any) -> bool:
        try:
            validate(value)
        except fastjsonschema.JsonSchemaException:
            return False
        return True

    return check
