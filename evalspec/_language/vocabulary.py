"""The words the suite language is declared in: one frozen dataclass per kind of value.

Each key of a suite is declared once, as one of these, with its description, default and
examples. `schema()` turns a declaration into the JSON Schema that editors and `validate` read,
writing its keywords in one fixed order (`KEYWORDS`), so the generated file only changes where a
declaration does. `default_of` reads a default back for the code that needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Final

NO_DEFAULT: Final[Any] = type("NoDefault", (), {"__repr__": lambda self: "NO_DEFAULT"})()
"""A key without a `default` (None is a value a default may take)."""

DEFS = "#/$defs/"

KEYWORDS: Final = (
    "$ref",
    "type",
    "anyOf",
    "enum",
    "const",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "uniqueItems",
    "items",
    "additionalProperties",
    "required",
    "minProperties",
    "maxProperties",
    "$comment",
    "description",
    "examples",
    "default",
    "propertyNames",
    "properties",
    "dependentRequired",
    "dependentSchemas",
    "allOf",
    "if",
    "then",
    "not",
    "oneOf",
)
"""Every keyword the language uses, in the order the generated schema writes them."""


def _kw(keyword: str, default: Any = None) -> Any:
    """A dataclass field written to the schema as `keyword`."""
    return field(default=default, metadata={"keyword": keyword})


@dataclass(frozen=True, kw_only=True)
class Node:
    """What every declaration says: what it is for, an example, and the value used when absent."""

    TYPE: ClassVar[str | None] = None

    comment: str | None = _kw("$comment")
    description: str | None = _kw("description")
    examples: tuple[Any, ...] | None = _kw("examples")
    default: Any = _kw("default", NO_DEFAULT)

    def keywords(self) -> dict[str, Any]:
        """This node's JSON Schema keywords, unordered, with nested declarations turned into
        schemas."""
        found: dict[str, Any] = {} if self.TYPE is None else {"type": self.TYPE}
        for item in fields(self):
            keyword = item.metadata.get("keyword")
            value = getattr(self, item.name)
            if keyword is None or value is NO_DEFAULT or (value is None and item.default is None):
                continue  # not declared (a `default` or `const` of None is: null)
            found[keyword] = _schema_value(keyword, value)
        return found


@dataclass(frozen=True, kw_only=True)
class Str(Node):
    """A text."""

    TYPE: ClassVar[str | None] = "string"
    pattern: str | None = _kw("pattern")
    min_length: int | None = _kw("minLength")
    max_length: int | None = _kw("maxLength")


@dataclass(frozen=True, kw_only=True)
class Num(Node):
    """A number (whole or not)."""

    TYPE: ClassVar[str | None] = "number"
    minimum: float | None = _kw("minimum")
    maximum: float | None = _kw("maximum")
    exclusive_minimum: float | None = _kw("exclusiveMinimum")
    exclusive_maximum: float | None = _kw("exclusiveMaximum")


@dataclass(frozen=True, kw_only=True)
class Int(Num):
    """A whole number."""

    TYPE: ClassVar[str | None] = "integer"


@dataclass(frozen=True, kw_only=True)
class Bool(Node):
    """true or false."""

    TYPE: ClassVar[str | None] = "boolean"


@dataclass(frozen=True, kw_only=True)
class Arr(Node):
    """A list."""

    TYPE: ClassVar[str | None] = "array"
    items: Node | None = _kw("items")
    min_items: int | None = _kw("minItems")
    max_items: int | None = _kw("maxItems")
    unique_items: bool | None = _kw("uniqueItems")


@dataclass(frozen=True, kw_only=True)
class Obj(Node):
    """A mapping: named keys (`properties`), and what other keys may hold (`additional`: False
    for none, a declaration for their values)."""

    TYPE: ClassVar[str | None] = "object"
    properties: Mapping[str, Node] | None = _kw("properties")
    required: tuple[str, ...] | None = _kw("required")
    additional: bool | Node | None = _kw("additionalProperties")
    min_properties: int | None = _kw("minProperties")
    max_properties: int | None = _kw("maxProperties")
    property_names: Node | None = _kw("propertyNames")
    dependent_required: Mapping[str, tuple[str, ...]] | None = _kw("dependentRequired")
    dependent_schemas: Mapping[str, Node] | None = _kw("dependentSchemas")


@dataclass(frozen=True, kw_only=True)
class Enum(Node):
    """One of a fixed list of values."""

    values: tuple[Any, ...] = field(kw_only=False, metadata={"keyword": "enum"})
    type: str | None = _kw("type")


@dataclass(frozen=True, kw_only=True)
class Const(Node):
    """Exactly this value."""

    value: Any = _kw("const", NO_DEFAULT)


@dataclass(frozen=True, kw_only=True)
class Ref(Node):
    """A named piece of the language (a `$defs` entry), written once and used here."""

    name: str = field(kw_only=False, metadata={"keyword": "$ref"})


@dataclass(frozen=True, kw_only=True)
class OneOf(Node):
    """Any of these forms (JSON Schema's `anyOf`: a value may match several, the first that
    does is how it reads)."""

    branches: tuple[Node, ...] = _kw("anyOf", ())


@dataclass(frozen=True, kw_only=True)
class Mixed(Str, Num, Arr, Obj):
    """A value of several JSON types (`types`, empty for any), with the constraints of each, and
    the rarer combinators. Only for what the typed words above cannot say."""

    TYPE: ClassVar[str | None] = None
    types: tuple[str, ...] = ()
    all_of: tuple[Node, ...] | None = _kw("allOf")
    any_of: tuple[Node, ...] | None = _kw("anyOf")
    one_of: tuple[Node, ...] | None = _kw("oneOf")
    if_: Node | None = _kw("if")
    then: Node | None = _kw("then")
    not_: Node | None = _kw("not")

    def keywords(self) -> dict[str, Any]:
        found = super().keywords()
        if self.types:
            found["type"] = self.types[0] if len(self.types) == 1 else list(self.types)
        return found


def Map(values: Node, **kwargs: Any) -> Obj:
    """A mapping of names the suite chooses to values declared by `values`."""
    return Obj(additional=values, **kwargs)


def Options(
    *short: Node,
    properties: Mapping[str, Node],
    required: tuple[str, ...] | None = None,
    **kwargs: Any,
) -> OneOf:
    """A check written in a short form (`true`, a threshold, a text: `short`) or as a mapping of
    its options and nothing else."""
    options = Obj(additional=False, required=required, properties=properties)
    return OneOf(branches=(*short, options), **kwargs)


def schema(node: Node) -> dict[str, Any]:
    """The JSON Schema of a declaration, keywords in `KEYWORDS` order."""
    found = node.keywords()
    return {keyword: found[keyword] for keyword in KEYWORDS if keyword in found}


def _schema_value(keyword: str, value: Any) -> Any:
    """A keyword's value in JSON form: declarations become schemas, tuples lists."""
    if keyword == "$ref":
        return DEFS + value
    if isinstance(value, Node):
        return schema(value)
    if keyword in ("properties", "dependentSchemas"):
        return {name: schema(sub) for name, sub in value.items()}
    if keyword in ("anyOf", "oneOf", "allOf"):
        return [schema(sub) for sub in value]
    return _json(value)


def _json(value: Any) -> Any:
    """Data (examples, defaults, enums) with tuples as lists and mappings as dicts."""
    if isinstance(value, tuple | list):
        return [_json(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _json(item) for key, item in value.items()}
    return value


def default_of(node: Node, *path: str) -> Any:
    """The default declared at `path` (property names) under `node`, looking through `OneOf`
    branches by name, so reordering a union cannot move a default.

    A path that leads nowhere, or to a key without a default, raises KeyError: a default that
    code relies on must be declared.
    """
    node = declaration_at(node, *path)
    if node.default is NO_DEFAULT:
        raise KeyError(f"no default declared for {'/'.join(path)}")
    return node.default


def declaration_at(node: Node, *path: str) -> Node:
    """The declaration at `path` (property names) under `node`, through unions and lists;
    KeyError when there is none."""
    for name in path:
        node = _property(node, name)
    return node


def _property(node: Node, name: str) -> Node:
    """The declaration of property `name` of `node`, inside its branches or (for a list) its
    items if need be."""
    if isinstance(node, Arr) and node.items is not None:
        node = node.items
    properties = getattr(node, "properties", None) or {}
    if name in properties:
        found: Node = properties[name]
        return found
    for branch in getattr(node, "branches", ()):
        try:
            return _property(branch, name)
        except KeyError:
            continue
    raise KeyError(name)
