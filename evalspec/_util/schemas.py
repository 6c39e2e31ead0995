"""JSON Schemas: the suite language's, loaded once with the defaults it declares, and the
compiled checks for the plain schemas tools use.

The suite schema is the one source of truth for the language: editors complete from it,
`validate` checks against it, and the `default` it gives a key is the value evalspec uses when a
suite leaves that key out. Code reads defaults from here instead of repeating them, so the
documentation, editor hints and behaviour cannot disagree.

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


def schema_default(pointer: str) -> Any:
    """The `default` the schema declares at a JSON pointer, e.g. `/$defs/rubric/properties/x`.

    A name the pointer does not find where it is, but inside one of the node's `anyOf` / `oneOf`
    branches, is looked up in those branches by name: pointers name keys, never branch
    positions, so reordering a union in the schema cannot move a default.

    A pointer that leads nowhere, or to a key without a default, raises KeyError: a default
    that code relies on must be written in the schema.
    """
    node: Any = language_schema()
    for part in pointer.strip("/").split("/"):
        node = _step(node, part.replace("~1", "/").replace("~0", "~"))
    return node["default"]


def _step(node: Any, part: str) -> Any:
    if isinstance(node, list):
        return node[int(part)]
    if part in node:
        return node[part]
    for union in ("anyOf", "oneOf"):
        for branch in node.get(union, ()):
            try:
                return _step(branch, part)
            except (KeyError, IndexError, ValueError, TypeError):
                continue
    raise KeyError(part)


RUBRIC = "/$defs/rubric/properties/"
RUN = "/properties/run/properties/"
MODEL = "/$defs/model/properties/"
EVALUATOR = "/$defs/evaluator/properties/"
CRITIC = "/$defs/critic/properties/"
EXPECT = "/$defs/expect/properties/"
FINAL_ANSWER = "/$defs/final_answer/properties/"

DEFAULT_TIMEOUT_S: float = float(schema_default(RUN + "timeout"))
"""Seconds one model request (or MCP refresh) may take when the suite does not say."""
DEFAULT_RETRIES: int = schema_default(RUN + "retries")
"""Retries of one model request after a 429/5xx/timeout when the suite does not say."""

DEFAULT_API_KEY_ENV: str = schema_default(MODEL + "api_key_env")
"""Where a model's (or judge's, or simulator's) key is read from when the suite does not say."""
ANTHROPIC_API_KEY_ENV = "ANTHROPIC_API_KEY"


def default_api_key_env(provider: str) -> str:
    """Where a model's key is read from when the suite does not say: its provider's usual one."""
    return ANTHROPIC_API_KEY_ENV if provider == "anthropic" else DEFAULT_API_KEY_ENV


DEFAULT_SIMILARITY_THRESHOLD: float = schema_default(CRITIC + "similarity/properties/threshold")
"""Similarity at or above which texts count as matching, for critics and final answers."""


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
