"""BFCL model results read as BFCL's own decoders read them, without running any of it.

BFCL decodes a result by the kind of model that produced it:

- a prompting model answers with text: `[f(a=1), mod.g(b='x')]`. BFCL strips back-ticks,
  newlines and spaces from both ends, adds the brackets when they are missing (so
  `f(a=1),\\ng(b=2)` is two calls), and reads the text as Python: keyword arguments only;
  bare names become their text; a nested call with keywords becomes `{name: {args}}`, without
  keywords its source text. BFCL evaluates arithmetic (`height=5*12+11` is 71) with Python's
  `eval`; here only constant arithmetic is computed, by walking the tree, within size bounds.
  What BFCL's decoder cannot read (a lambda, an attribute such as `Units.METRIC`, a name inside
  arithmetic, a comprehension) makes the whole output undecodable, here as there.
- a function-calling (FC) model answers with a list of `{name: "JSON arguments"}`; anything
  else (text, arguments that are not a JSON object) is not a call. Arguments already decoded
  (`{name: {...}}`, which BFCL's own files never hold) are taken as they are.

- a model whose handler has it write calls as JSON text answers `{"name": f, "arguments":
  {...}}`, one such object or a list of them (`json`: BFCL's xLAM handlers read the text as
  JSON, or else as JSON objects separated by `;`). Llama 3.1's handler (`llama`) reads
  `{"name": f, "parameters": {...}}` after removing `<|python_tag|>`: objects separated by
  `;` as JSON, anything else as a Python expression, so `true`, `false` and `null` (names
  Python lacks) make the output undecodable there, and here; constants and constant
  arithmetic are read as in prompting text, never evaluated.

Undecodable output is no call: it fails a case that expects calls and passes one that expects
none, as in BFCL.
"""

from __future__ import annotations

import ast
import contextlib
import json
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeGuard

from evalspec._util.reading import MAX_VALUE_DEPTH, loads_untrusted, nests_deeper

ResultFormat = Literal["prompting", "fc", "json", "llama"]
RESULT_FORMATS: tuple[ResultFormat, ...] = ("prompting", "fc", "json", "llama")
_ARGUMENTS: dict[str, str] = {"json": "arguments", "llama": "parameters"}
"""The key under which each JSON-text kind writes a call's arguments."""

MAX_TEXT = 1_000_000
"""Longer outputs are not decoded (no model answers a BFCL question with a megabyte)."""

MAX_INT_BITS = 4096
MAX_TEXT_RESULT = 100_000
"""Bounds on what arithmetic may build: `9**9**9` or `'x'*10**9` is refused, not computed."""


class DecodeError(ValueError):
    """A BFCL model output that is not a list of function calls."""


Call = tuple[str, dict[str, Any]]


def decode(result: Any, kind: ResultFormat) -> list[Call]:
    """A result as (name, arguments) pairs by BFCL's decoder for `kind`; DecodeError if none."""
    if kind == "fc":
        return decode_fc(result)
    if not isinstance(result, str):
        raise DecodeError(f"a {kind} model's result is text, got {type(result).__name__}")
    if kind in _ARGUMENTS:
        return decode_json_text(result, kind)
    return decode_prompting(result)


def text_kind(texts: Sequence[str]) -> ResultFormat:
    """The decoder for a model whose answers are text: `json` or `llama` when more of them are
    JSON call objects (or lists of them) with the key that kind's handler reads than are call
    text such as `[f(a=1)]` (never such JSON), else `prompting`. A prompting model that
    sometimes answers in JSON keeps its kind."""
    votes = {"prompting": 0, "json": 0, "llama": 0}
    for text in texts:
        if len(text) > MAX_TEXT:
            continue
        try:
            value = loads_untrusted(text.replace("<|python_tag|>", "").strip(), MAX_VALUE_DEPTH)
        except ValueError:
            with contextlib.suppress(DecodeError):
                votes["prompting"] += bool(decode_prompting(text))
            continue
        first = value[0] if isinstance(value, list) and value else value
        if isinstance(first, dict) and isinstance(first.get("name"), str):
            for kind, key in _ARGUMENTS.items():
                votes[kind] += isinstance(first.get(key), dict)
    best = max(votes, key=lambda k: (votes[k], k == "prompting"))
    return best  # type: ignore[return-value]


def decode_json_text(text: str, kind: ResultFormat) -> list[Call]:
    """Calls written as JSON text, as BFCL's handler for `kind` reads them (module docstring)."""
    if len(text) > MAX_TEXT:
        raise DecodeError("output too long to decode")
    if kind == "llama":
        text = text.replace("<|python_tag|>", "")
        items = _json_pieces(text) if ";" in text else _python_literal(text)
    else:
        try:
            items = loads_untrusted(text, MAX_VALUE_DEPTH)
        except ValueError:
            items = _json_pieces(text)
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list | tuple):
        raise DecodeError("not a JSON call object or a list of them")
    key = _ARGUMENTS[kind]
    calls = []
    for item in items:
        if not isinstance(item, dict) or "name" not in item or key not in item:
            raise DecodeError(f'each call must be {{"name": ..., "{key}": {{...}}}}')
        name, args = item["name"], item[key]
        if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
            raise DecodeError(f"the {key} of {str(name)[:60]} are not an object")
        if nests_deeper(args, MAX_VALUE_DEPTH):
            raise DecodeError(f"the arguments of {name} nest deeper than {MAX_VALUE_DEPTH}")
        calls.append((str(name), args))
    return calls


def _json_pieces(text: str) -> list[Any]:
    """Objects separated by `;`, each JSON; one that is not fails the whole output."""
    try:
        return [loads_untrusted(piece.strip(), MAX_VALUE_DEPTH) for piece in text.split(";")]
    except ValueError as exc:
        raise DecodeError(f"not JSON call objects separated by ';': {exc}") from None


def _python_literal(text: str) -> Any:
    """A Python expression of constants, lists, tuples and dicts (what `eval` gives for it),
    read from its tree; a name, a call or anything else that is not data is undecodable."""
    try:
        return _literal(ast.parse(text.strip(), mode="eval").body)
    except DecodeError:
        raise
    except (SyntaxError, ValueError, MemoryError, RecursionError, UnicodeError) as exc:
        raise DecodeError(f"not a Python literal: {str(exc)[:60]}") from None


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return _constant(node.value)
    if isinstance(node, ast.UnaryOp):
        return _unary(node)
    if isinstance(node, ast.BinOp):
        return _constant(_arithmetic(node))
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(v) for v in node.elts]
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        keys = [_literal(k) for k in node.keys if k is not None]
        if not all(isinstance(k, str | int | float | bool) or k is None for k in keys):
            raise DecodeError("a dict key must be a single value")
        return {
            (k if isinstance(k, str) else json.dumps(k)): _literal(v)
            for k, v in zip(keys, node.values, strict=True)
        }
    raise DecodeError(f"{_source(node)} is not a Python literal")


def decode_fc(result: Any) -> list[Call]:
    """`[{name: "JSON arguments"}, ...]`, as BFCL's function-calling handlers decode it."""
    if not isinstance(result, list):
        raise DecodeError("a function-calling result is a list of calls")
    calls = []
    for item in result:
        if not isinstance(item, dict) or not item:
            raise DecodeError(f"each call must be {{name: arguments}}, got {str(item)[:60]}")
        name, args = next(iter(item.items()))
        try:
            params = loads_untrusted(args, MAX_VALUE_DEPTH) if isinstance(args, str) else args
        except ValueError:  # NaN, too deep: nothing a transcript may hold (score refused it)
            raise DecodeError(f"the arguments of {name} are not JSON: {args[:60]}") from None
        if not isinstance(params, dict):
            raise DecodeError(f"the arguments of {name} are not a JSON object")
        if nests_deeper(params, MAX_VALUE_DEPTH):
            raise DecodeError(f"the arguments of {name} nest deeper than {MAX_VALUE_DEPTH}")
        calls.append((str(name), params))
    return calls


def decode_prompting(text: str) -> list[Call]:
    """`[f(a=1), g(b=2)]` (brackets optional) as BFCL's prompting decoder reads it."""
    if len(text) > MAX_TEXT:
        raise DecodeError("output too long to decode")
    text = text.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    text = text.strip().strip("'")
    try:
        body = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError, UnicodeError) as exc:
        raise DecodeError(f"not python function calls: {exc}") from None
    if isinstance(body, ast.Call):
        nodes: Sequence[ast.expr] = [body]
    elif isinstance(body, ast.List | ast.Tuple | ast.Set):
        nodes = body.elts
    else:
        raise DecodeError("not a list of function calls")
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            raise DecodeError(f"not a function call: {_source(node)}")
        try:
            name, args = _call(node)
        except RecursionError:
            raise DecodeError("arguments nested too deeply") from None
        if nests_deeper(args, MAX_VALUE_DEPTH):
            raise DecodeError(f"the arguments of {name} nest deeper than {MAX_VALUE_DEPTH}")
        calls.append((name, args))
    return calls


def _source(node: ast.AST) -> str:
    try:
        return ast.unparse(node)[:60]
    except (ValueError, RecursionError):
        return type(node).__name__


def _call(node: ast.Call) -> Call:
    """Name and keyword arguments; positional arguments are ignored, as BFCL does.

    `**kwargs` has no name: it is kept as an argument named `**`, which no function defines,
    so the call fails as BFCL fails it (an unexpected parameter)."""
    parts = []
    func: ast.expr = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    name = ".".join(reversed(parts))
    args = {kw.arg if kw.arg is not None else "**": _value(kw.value) for kw in node.keywords}
    return name, args


def _value(node: ast.expr) -> Any:
    """An argument's value, by BFCL's rules (see the module docstring), as JSON data."""
    if isinstance(node, ast.Constant):
        return _constant(node.value)
    if isinstance(node, ast.UnaryOp):
        return _unary(node)
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        keys = [k for k in node.keys if k is not None]
        if len(keys) < len(node.keys):
            raise DecodeError("a `**` inside a dict is not a value")
        return {_key(k): _value(v) for k, v in zip(keys, node.values, strict=True)}
    if isinstance(node, ast.BinOp):
        return _constant(_arithmetic(node))
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        if not node.keywords:
            return ast.unparse(node)
        name, args = _call(node)
        return {name: args}
    if isinstance(node, ast.Subscript):
        return ast.unparse(node)
    raise DecodeError(f"{_source(node)} is not a value BFCL's decoder reads")


def _constant(value: Any) -> Any:
    if value is Ellipsis:
        return "..."
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)  # bytes, complex: JSON has no word for them


def _key(node: ast.expr) -> str:
    key = _value(node)
    if isinstance(key, list | dict):
        raise DecodeError("a dict key must be a single value")
    return key if isinstance(key, str) else json.dumps(key)


def _unary(node: ast.UnaryOp) -> Any:
    """`-5` and `+5`; BFCL reads a unary operator only on a constant (and negates every one)."""
    operand = node.operand
    value = operand.value if isinstance(operand, ast.Constant) else None
    if not _is_number(value):
        raise DecodeError(f"{_source(node)} is not a value BFCL's decoder reads")
    if isinstance(node.op, ast.USub):
        return -value
    if isinstance(node.op, ast.UAdd):
        return value
    raise DecodeError(f"{_source(node)} is not a value BFCL's decoder reads")


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _arithmetic(node: ast.expr) -> Any:
    """Constant arithmetic on numbers and text, computed by walking the tree (never `eval`)."""
    if isinstance(node, ast.Constant) and (_is_number(node.value) or isinstance(node.value, str)):
        return node.value
    if isinstance(node, ast.UnaryOp):
        return _unary(node)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        _check_size(node.op, left, right)
        try:
            return _OPERATORS[type(node.op)](left, right)
        except (ArithmeticError, TypeError, ValueError) as exc:
            raise DecodeError(f"{_source(node)}: {exc}") from None
    raise DecodeError(f"{_source(node)} is not constant arithmetic")


def _check_size(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse results beyond the bounds before computing them."""
    too_big = False
    if isinstance(op, ast.Pow) and _is_number(left) and _is_number(right):
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            too_big = right * max(abs(left).bit_length(), 1) > MAX_INT_BITS
        else:
            too_big = abs(right) > MAX_INT_BITS
    elif isinstance(op, ast.Mult):
        text, count = (left, right) if isinstance(left, str) else (right, left)
        if isinstance(text, str) and isinstance(count, int):
            too_big = len(text) * count > MAX_TEXT_RESULT
        elif isinstance(left, int) and isinstance(right, int):
            too_big = left.bit_length() + right.bit_length() > MAX_INT_BITS
    elif isinstance(op, ast.Add) and isinstance(left, str) and isinstance(right, str):
        too_big = len(left) + len(right) > MAX_TEXT_RESULT
    if too_big:
        raise DecodeError("arithmetic result too large")
