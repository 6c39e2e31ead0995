"""The suite language's JSON Schema, made from the declarations, and the file it is written to.

`python -m evalspec._language --write` rewrites `schemas/suite.schema.json`; `--check` fails
when the file differs from what the declarations make (a test runs the same check).
"""

from __future__ import annotations

import json
from typing import Any

from evalspec._language.suite import DEFS, SUITE
from evalspec._language.vocabulary import schema

HEADER = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://evalspec.dev/schemas/suite.schema.json",
    "title": "evalspec suite",
}


def declared_schema() -> dict[str, Any]:
    """The whole schema: the header, the suite's keys, then every named piece."""
    body = schema(SUITE)
    top = {key: body.pop(key) for key in ("description",)}
    return {
        **HEADER,
        **top,
        **body,
        "$defs": {name: schema(node) for name, node in DEFS.items()},
    }


def schema_text() -> str:
    """The schema as the file holds it: two-space indents, UTF-8 kept, a final newline."""
    return json.dumps(declared_schema(), indent=2, ensure_ascii=False) + "\n"
