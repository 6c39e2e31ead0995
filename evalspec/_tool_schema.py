"""JSON Schema validators for tool `parameters`, whose regexes run in linear time.

A tool's schema comes from a suite or an MCP lock file, both of which a pull request can change,
and the text it is matched against comes from a suite or a model. jsonschema matches `pattern`
and `patternProperties` with Python's backtracking `re`, where `^(a+)+$` against 34 a's and a `!`
runs for minutes. Here those keywords (and `additionalProperties`, which consults
`patternProperties`) match on RE2, as critics' patterns do; a pattern RE2 refuses is reported
when the suite is validated, and the compiled (fastjsonschema) checks never see a pattern at all
(`schemas.FAST_KEYWORDS` leaves `pattern` out).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from evalspec._critics.patterns import PatternError, compile_pattern

if TYPE_CHECKING:
    from jsonschema.exceptions import SchemaError

_NOT_SCHEMAS = frozenset({"const", "enum", "default", "examples", "description", "title"})
"""Keys whose values are data, not schemas: a `pattern` inside them is text, not a regex."""


def schema_patterns(schema: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every regex in a schema, as (where, pattern): `pattern` values, `patternProperties` keys."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            where = f"{path}.{key}" if path else str(key)
            if key in _NOT_SCHEMAS:
                continue
            if key == "pattern" and isinstance(value, str):
                yield where, value
            elif key == "patternProperties" and isinstance(value, dict):
                for name, sub in value.items():
                    yield where, str(name)
                    yield from schema_patterns(sub, f"{where}.{name}")
            else:
                yield from schema_patterns(value, where)
    elif isinstance(schema, list):
        for i, item in enumerate(schema):
            yield from schema_patterns(item, f"{path}[{i}]")


def pattern_problems(schema: Any) -> list[str]:
    """Why a schema's regexes cannot be used, one sentence each (empty when all can)."""
    problems = []
    for where, pattern in schema_patterns(schema):
        try:
            compile_pattern(pattern)
        except PatternError as exc:
            problems.append(f"{where}: the pattern {pattern!r:.80} cannot be used: {exc}")
    problems += [
        f"{where}: {ref!r:.80} refers to another document, which evalspec never fetches; "
        "put the definition under `$defs` and refer to it as `#/$defs/NAME`"
        for where, ref in _outside_refs(schema)
    ]
    if _uses(schema, "unevaluatedProperties") and _uses(schema, "patternProperties"):
        problems.append(
            "`unevaluatedProperties` together with `patternProperties` is not supported "
            "in tool parameters; use `additionalProperties`"
        )
    return problems


def _outside_refs(schema: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every `$ref` or `$dynamicRef` that is not a pointer into the schema itself (`#...`),
    as (where, ref): an address a pull request chose, which would otherwise be fetched."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            where = f"{path}.{key}" if path else str(key)
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                if not value.startswith("#"):
                    yield where, value
            elif key not in _NOT_SCHEMAS:
                yield from _outside_refs(value, where)
    elif isinstance(schema, list):
        for i, item in enumerate(schema):
            yield from _outside_refs(item, f"{path}[{i}]")


def _uses(schema: Any, keyword: str) -> bool:
    if isinstance(schema, dict):
        return keyword in schema or any(
            _uses(v, keyword) for k, v in schema.items() if k not in _NOT_SCHEMAS
        )
    return isinstance(schema, list) and any(_uses(v, keyword) for v in schema)


def _search(pattern: str, text: str) -> bool:
    try:
        return compile_pattern(pattern).search(text) is not None
    except PatternError:
        return False  # reported by validation; a run never matches on an unusable pattern


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r:.80} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema._keywords import additionalProperties

    patterns = schema.get("patternProperties") or {}
    # types-jsonschema declares the keyword functions as returning None; they yield errors.
    if not patterns or not validator.is_type(instance, "object"):
        yield from additionalProperties(validator, extra, instance, schema)  # type: ignore[func-returns-value,misc]
        return
    # jsonschema would join the patterns and search with `re`: the same judgement, on RE2.
    known = schema.get("properties", {})
    matched = {k for k in instance if k in known or any(_search(p, k) for p in patterns)}
    rest = {k: v for k, v in instance.items() if k not in matched}
    yield from additionalProperties(  # type: ignore[func-returns-value,misc]  # see above
        validator, extra, rest, {**schema, "patternProperties": {}}
    )


def schema_error(schema: Any) -> SchemaError | None:
    """The first reason `schema` is not Draft 2020-12 JSON Schema (jsonschema's own check of
    it), or None. Checked once per distinct schema a process: the check walks the meta-schema's
    dynamic references, milliseconds a schema, and the same tools come back in every load of a
    suite, in review's base and head, and in every run's tool simulator."""
    return _schema_error(_ByText(schema))


class _ByText:
    """A schema as a cache key: equal when written alike (`repr` tells 1, 1.0, True and "1"
    apart, as the check does; the same schema in another key order is only checked again)."""

    __slots__ = ("schema", "text")

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.text = repr(schema)

    def __hash__(self) -> int:
        return hash(self.text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByText) and other.text == self.text


@lru_cache(maxsize=512)
def _schema_error(keyed: _ByText) -> SchemaError | None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(keyed.schema)
    except SchemaError as exc:
        return exc
    return None


@lru_cache(maxsize=1)
def _validator_class() -> Any:
    from jsonschema import Draft202012Validator, validators

    return validators.extend(  # type: ignore[no-untyped-call]  # unannotated in types-jsonschema
        Draft202012Validator,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        },
    )


def tool_validator(schema: Any) -> Any:
    """A Draft 2020-12 validator for `schema` whose regexes run on RE2 and whose references
    resolve inside the schema only: without a registry, jsonschema fetches a `$ref` to an
    address (`http://169.254.169.254/...`) that a suite or lock file names."""
    from referencing import Registry

    return _validator_class()(schema, registry=Registry())
