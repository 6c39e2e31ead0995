"""The JSON Schema of the suite language, loaded once, and the defaults it declares.

The schema is the one source of truth for the language: editors complete from it, `validate`
checks against it, and the `default` it gives a key is the value evalspec uses when a suite
leaves that key out. Code reads defaults from here instead of repeating them, so the
documentation, editor hints and behaviour cannot disagree.
"""

from __future__ import annotations

import json
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
def suite_schema() -> dict[str, Any]:
    """The suite language's JSON Schema (schemas/suite.schema.json)."""
    from importlib import resources

    packaged = resources.files("evalspec").joinpath("suite.schema.json")
    source = packaged if packaged.is_file() else SCHEMA_PATH
    schema: dict[str, Any] = json.loads(source.read_text(encoding="utf-8"))
    return schema


def schema_default(pointer: str) -> Any:
    """The `default` the schema declares at a JSON pointer, e.g. `/$defs/rubric/properties/x`.

    A pointer that leads nowhere, or to a key without a default, raises KeyError: a default
    that code relies on must be written in the schema.
    """
    node: Any = suite_schema()
    for part in pointer.strip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node["default"]


RUBRIC = "/$defs/rubric/properties/"
RUN = "/properties/run/properties/"
MODEL = "/$defs/model/anyOf/1/properties/"
EVALUATOR = "/$defs/evaluator/anyOf/1/properties/"
CRITIC = "/$defs/critic/anyOf/1/properties/"
EXPECT = "/$defs/expect/properties/"
FINAL_ANSWER = "/$defs/final_answer/properties/"

DEFAULT_API_KEY_ENV: str = schema_default(MODEL + "api_key_env")
"""Where a model's (or judge's, or simulator's) key is read from when the suite does not say."""
ANTHROPIC_API_KEY_ENV = "ANTHROPIC_API_KEY"


def default_api_key_env(provider: str) -> str:
    """Where a model's key is read from when the suite does not say: its provider's usual one."""
    return ANTHROPIC_API_KEY_ENV if provider == "anthropic" else DEFAULT_API_KEY_ENV


DEFAULT_SIMILARITY_THRESHOLD: float = schema_default(
    CRITIC + "similarity/anyOf/2/properties/threshold"
)
"""Similarity at or above which texts count as matching, for critics and final answers."""
