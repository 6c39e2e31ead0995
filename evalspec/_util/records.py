"""Reading declared records from files someone else wrote: typed decoding, errors in words.

Transcripts, results files, run manifests and recordings are each declared once, as msgspec
Structs; msgspec decodes a line straight into them and checks every field's type on the way
(three times faster than `json.loads` into dicts). When it refuses a value, its message
(``Expected `object | null`, got `str` - at `$.tool_calls[0].arguments```) is said again in a
reader's words, from the declared type at that path and the value found there:
``tool_calls[0].arguments: expected a JSON object or null, got text ('city=Paris')``.

What msgspec accepts but evalspec's JSON reader refuses (nesting deeper than MAX_JSON_DEPTH,
NaN, lone surrogates) goes through `parse_json`, so those keep their file:line:column errors.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, TypeVar

import msgspec

from evalspec._util.reading import MAX_JSON_DEPTH, parse_json

T = TypeVar("T")

Count = Annotated[int, msgspec.Meta(ge=0)]
"""How many of something a record holds (tokens, turns, a trial's number): never negative,
checked as the record is read."""


MAX_ANSWER_SECONDS = 1e6
"""The most seconds a recorded answer's latency may hold (some 11 days; a request times out
after at most a day)."""

MAX_SECONDS = 1e12
"""The most seconds a transcript's latency may hold: a conversation of a million answers of
`MAX_ANSWER_SECONDS`; a million transcripts of it still add up to a finite number."""

AnswerSeconds = Annotated[float, msgspec.Meta(ge=0, le=MAX_ANSWER_SECONDS)]
"""One recorded answer's latency; a larger one is refused where it is read, as a negative or
overflowing token count is."""

Seconds = Annotated[float, msgspec.Meta(ge=0, le=MAX_SECONDS)]
"""A transcript's latency (its answers' added up), held as `AnswerSeconds` is."""


class RecordError(ValueError):
    """A JSON value that the declared record cannot hold; `where` is its path, e.g.
    `tool_calls[0].name` (empty for the value itself)."""

    def __init__(self, where: str, message: str):
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


def kind(value: Any) -> str:
    """A JSON value's type in words, with a short sample."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"true/false ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r:.20})"
    if isinstance(value, str):
        return f"text ({value!r:.30})"
    if isinstance(value, list | tuple):
        return "a list"
    return "an object"


_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def decode(raw: bytes | str, record: type[T], name: str, line: int = 1, root: str = "") -> T:
    """One record from JSON text: InputError (with its place) when the text is not JSON,
    RecordError (with the field's path) when the JSON is not a `record`.

    `root` names the value itself in messages ("the line", "the file")."""
    decoder = _DECODERS.get(record)
    if decoder is None:
        decoder = _DECODERS[record] = msgspec.json.Decoder(record)
    try:
        value: T = decoder.decode(raw)
    except msgspec.ValidationError as exc:
        # Said in words from the JSON as evalspec's own reader parses it (which also gives
        # the placed error if the text is too deep or holds NaN).
        data = parse_json(_text(raw), name, line)
        raise _in_words(exc, record, data, root) from None
    except (msgspec.DecodeError, RecursionError):
        # Not JSON to msgspec: too deep, or lone surrogates, which evalspec's reader mends.
        return convert(parse_json(_text(raw), name, line), record, root)
    if _maybe_deep(raw) and _too_deep(raw):
        parse_json(_text(raw), name, line)  # raises the placed "nests deeper" error
    return value


def convert(data: Any, record: type[T], root: str = "") -> T:
    """A record from JSON already parsed (by `parse_json`); RecordError when it is not one."""
    try:
        return msgspec.convert(data, record, strict=True)
    except msgspec.ValidationError as exc:
        raise _in_words(exc, record, data, root) from None


def _text(raw: bytes | str) -> str:
    return raw if isinstance(raw, str) else raw.decode("utf-8")


_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_STRING = re.compile(rb'"[^"]*"')
_EMPTY_PAIR = re.compile(rb"\[\]|\{\}")


def _too_deep(raw: bytes | str) -> bool:
    """Whether JSON text (already parsed, so well formed) nests deeper than MAX_JSON_DEPTH.

    All in C, a tenth of a second for a 5 MB results file: escaped quotes and backslashes are
    cut, then every byte but quotes and brackets; what strings still hold is cut; then each
    pass removes the innermost empty pairs, and a text still holding brackets after
    MAX_JSON_DEPTH passes is too deep (a results file nests six levels: six passes)."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    rest = _STRING.sub(b"", data.translate(None, _NOT_STRUCTURE).replace(b'""', b""))
    for _ in range(MAX_JSON_DEPTH):
        if not rest:
            return False
        rest = _EMPTY_PAIR.sub(b"", rest)
    return bool(rest)


def _maybe_deep(raw: bytes | str) -> bool:
    """Whether the text has enough brackets to nest too deep: most lines have a few dozen, so
    the exact scan runs only on the rare line that might."""
    if isinstance(raw, str):
        return raw.count("[") + raw.count("{") > MAX_JSON_DEPTH
    return raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH


_AT = re.compile(r" - at `\$(.*)`$")
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_UNKNOWN = re.compile(r"^Object contains unknown field `(.*)`$")
_MISSING = re.compile(r"^Object missing required field `(.*)`$")
_LENGTH = re.compile(r"^Expected `(?:array|object)` of length <= (\d+)$")
_BOUND = re.compile(r"^Expected `float` (>=|<=|>|<) (\S+)$")
_BOUND_WORDS = {">=": "at least", "<=": "at most", ">": "more than", "<": "less than"}


def _in_words(exc: msgspec.ValidationError, record: Any, data: Any, root: str) -> RecordError:
    message = str(exc)
    found = _AT.search(message)
    path = found.group(1) if found else ""
    message = message[: found.start()] if found else message
    steps: list[str | int] = []
    value, typ = data, msgspec.inspect.type_info(record)
    for key, index in _STEP.findall(path):
        step: str | int = key or (int(index) if index != "..." else "...")
        typ = _child_type(typ, step)
        if step == "...":  # a value of a mapping: msgspec does not say which key
            step = _misfit_key(value, typ)
        steps.append(step)
        value = _child(value, step)
    where = _where(steps, root)
    if m := _UNKNOWN.match(message):
        return RecordError(where, f"unknown key {m.group(1)!r}")
    if m := _MISSING.match(message):
        return RecordError(_where([*steps, m.group(1)], root), "is missing")
    if m := _LENGTH.match(message):
        count = len(value) if isinstance(value, list | dict) else 0
        return RecordError(where, f"{count} items; evalspec reads at most {m.group(1)}")
    if m := _BOUND.match(message):
        limit = _BOUND_WORDS[m.group(1)]
        return RecordError(where, f"{value!r:.40} is out of range: it must be {limit} {m.group(2)}")
    if message.startswith(("Expected", "Invalid enum value")):
        return RecordError(where, f"expected {words(typ)}, got {kind(value)}")
    return RecordError(where, message[:1].lower() + message[1:])


def _where(steps: list[str | int], root: str) -> str:
    text = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps)
    if not text:
        return root
    return f"{root}{text}" if root.startswith("[") else text.lstrip(".")


def _child(value: Any, step: str | int) -> Any:
    if isinstance(step, int):
        return value[step] if isinstance(value, list) and step < len(value) else None
    return value.get(step) if isinstance(value, dict) else None


def _misfit_key(mapping: Any, typ: Any) -> str:
    """The first key of `mapping` whose value is not of the simple type `typ`."""
    ti = msgspec.inspect
    checks: dict[type, type | tuple[type, ...]] = {
        ti.StrType: str,
        ti.FloatType: (int, float),
        ti.IntType: int,
        ti.BoolType: bool,
    }
    wanted = next((t for k, t in checks.items() if isinstance(typ, k)), object)
    for key, value in mapping.items() if isinstance(mapping, dict) else ():
        if not isinstance(value, wanted) or (wanted is not bool and isinstance(value, bool)):
            return str(key)
        if not _within(value, typ):
            return str(key)
    return "..."


def _within(value: Any, typ: Any) -> bool:
    """Whether a number keeps its declared bounds (`Meta(ge=0)` and the like)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return True
    ge, gt = getattr(typ, "ge", None), getattr(typ, "gt", None)
    le, lt = getattr(typ, "le", None), getattr(typ, "lt", None)
    return (
        (ge is None or value >= ge)
        and (gt is None or value > gt)
        and (le is None or value <= le)
        and (lt is None or value < lt)
    )


def _child_type(typ: Any, step: str | int) -> Any:
    """The declared type one step down (a field, an item, a value), through `X | None`."""
    ti = msgspec.inspect
    if isinstance(typ, ti.UnionType):
        inner = [t for t in typ.types if not isinstance(t, ti.NoneType)]
        typ = inner[0] if len(inner) == 1 else typ
    if isinstance(typ, ti.StructType):
        return next((f.type for f in typ.fields if f.encode_name == step), ti.AnyType())
    if isinstance(typ, ti.ListType | ti.VarTupleType | ti.SetType):
        return typ.item_type
    if isinstance(typ, ti.DictType):
        return typ.value_type
    return ti.AnyType()


def words(typ: Any) -> str:
    """A declared type as a reader says it: `text or null`, `a whole number of 0 or more`."""
    ti = msgspec.inspect
    if isinstance(typ, ti.UnionType):
        parts = [words(t) for t in typ.types if not isinstance(t, ti.NoneType)]
        if any(isinstance(t, ti.NoneType) for t in typ.types):
            parts.append("null")
        return " or ".join(parts)
    if isinstance(typ, ti.IntType):
        return "a whole number of 0 or more" if typ.ge == 0 else "a whole number"
    if isinstance(typ, ti.LiteralType):
        return "one of " + ", ".join(sorted(str(v) for v in typ.values))
    simple = {
        ti.StrType: "text",
        ti.FloatType: "a number",
        ti.BoolType: "true or false",
        ti.NoneType: "null",
        ti.DictType: "a JSON object",
        ti.StructType: "a JSON object",
        ti.ListType: "a list",
        ti.VarTupleType: "a list",
    }
    return next((w for t, w in simple.items() if isinstance(typ, t)), "a JSON value")
