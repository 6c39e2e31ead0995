"""Compiled JSON Schema checks for the plain schemas tools use, judged as jsonschema judges them.

jsonschema words every error well but costs ~10 µs a check; a validator compiled by
fastjsonschema answers "valid?" in a tenth of that. The two agree only on some keywords, so a
compiled check is made only for schemas that use nothing else; jsonschema still explains what is
wrong whenever the compiled check says no.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def compiled_check(schema: Any) -> Callable[[Any], bool] | None:
    """`check(value)` -> is it valid, for a plain, well-formed schema; None for any other."""
    if not plain_schema(schema):
        return None
    import fastjsonschema

    try:
        validate = fastjsonschema.compile(schema, use_default=False)
    except fastjsonschema.JsonSchemaDefinitionException:
        return None

    def check(value: Any) -> bool:
        try:
            validate(value)
        except fastjsonschema.JsonSchemaException:
            return False
        return True

    return check
