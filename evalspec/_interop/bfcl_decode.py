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

- a model whose handler finds calls between tags: `qwen_fc` (BFCL's Qwen FC handler, also the
  format of Hermes 2 Pro and Qwen 2.5/3 chat templates) reads every
  `<tool_call>\\n{"name": f, "arguments": {...}}\\n</tool_call>` block; a block that is not JSON
  is skipped, text around the blocks is ignored, and no block is no call. `granite` (BFCL's
  handler for granite-20b-functioncalling) splits the text at `<function_call>` and reads each
  piece as one `{"name": f, "arguments": {...}}` object; a piece that is not (text, the model's
  `no_function`) makes the whole output no call, as BFCL's format check makes it. `glm` (BFCL's
  GLM-4 handler) reads a name on the first line and its JSON arguments on the second; one line
  is no call, later lines are ignored. `hermes` (the handler BFCL used for Hermes 2 Pro
  until its v4 release removed it) reads the line after each line `<tool_call>` as one call,
  every `'` read as `"` (Hermes writes `{'a': 1}`); a line that is then not JSON makes the
  whole output no call. In a multi-turn step, `qwen_fc` also reads arguments
  written as JSON text, as that handler's `decode_execute` does (`decode(multi_turn=True)`).

- Nexusflow Raven's handler (`nexus`) reads call text separated by `;` (`f(a=1); g(b=2);`):
  one trailing `;` is dropped, every other `;` becomes a comma (one inside quoted text too, as
  there), and the result is read as prompting call text in brackets; an answer naming
  `out_of_domain` anywhere is no call.

JSON that BFCL reads but a transcript cannot hold (NaN, numbers beyond a float, deeper than
100 levels) makes the whole output no call here, where BFCL keeps it as arguments.

Undecodable output is no call: it fails a case that expects calls and passes one that expects
none, as in BFCL.
"""

from __future__ import annotations

import ast
import contextlib
import json
import math
import operator
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeGuard

from evalspec._util.reading import MAX_VALUE_DEPTH, loads_untrusted, nests_deeper

ResultFormat = Literal[
    "prompting", "fc", "json", "llama", "qwen_fc", "hermes", "granite", "glm", "nexus"
]
RESULT_FORMATS: tuple[ResultFormat, ...] = (
    "prompting",
    "fc",
    "json",
    "llama",
    "qwen_fc",
    "hermes",
    "granite",
    "glm",
    "nexus",
)
_ARGUMENTS: dict[ResultFormat, str] = {"json": "arguments", "llama": "parameters"}
"""The key under which each JSON-text kind writes a call's arguments."""

MAX_TEXT = 1_000_000
"""Longer outputs are not decoded (no model answers a BFCL question with a megabyte)."""

MAX_INT_BITS = 4096
MAX_TEXT_RESULT = 100_000
"""Bounds on what arithmetic may build: `9**9**9` or `'x'*10**9` is refused, not computed."""


class DecodeError(ValueError):
    """A BFCL model output that is not a list of function calls."""


Call = tuple[str, dict[str, Any]]


def decode(result: Any, kind: ResultFormat, *, multi_turn: bool = False) -> list[Call]:
    """A result as (name, arguments) pairs by BFCL's decoder for `kind`; DecodeError if none.

    `multi_turn`: a step of a multi-turn result, which BFCL reads with each handler's
    `decode_execute`; only `qwen_fc`'s differs (it also reads arguments given as JSON text)."""
    if kind == "qwen_fc" and multi_turn and isinstance(result, str) and len(result) <= MAX_TEXT:
        return decode_qwen(result, arguments_as_text=True)
    if kind == "fc":
        return decode_fc(result)
    if not isinstance(result, str):
        raise DecodeError(f"a {kind} model's result is text, got {type(result).__name__}")
    if len(result) > MAX_TEXT:
        raise DecodeError("output too long to decode")
    if kind in _ARGUMENTS:
        return decode_json_text(result, kind)
    if kind in _TAGGED:
        return _TAGGED[kind](result)
    return decode_prompting(result)


def text_kind(texts: Sequence[str]) -> ResultFormat:
    """The decoder for a model whose answers are text: the kind most of them are written for
    (`json` or `llama`: JSON call objects with the key that kind's handler reads; `qwen_fc`,
    `granite`, `glm`, `nexus`: their handler's markers, `_tagged_kind`), else `prompting` (call
    text such as `[f(a=1)]`). A prompting model that sometimes answers otherwise keeps its kind."""
    votes = dict.fromkeys(RESULT_FORMATS, 0)
    for text in texts:
        if len(text) > MAX_TEXT:
            continue
        if (tagged := _tagged_kind(text)) is not None:
            votes[tagged] += 1
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
    return best


def _tagged_kind(text: str) -> ResultFormat | None:
    """The kind whose handler looks for this text's markers: `<tool_call>` blocks, a
    `<function_call>` tag, or a bare name over a line of JSON arguments."""
    if _OPEN in text and _CLOSE in text:
        blocks = _tool_call_blocks(text)
        quoted = any(not _is_json(b) and _is_json(b.replace("'", '"')) for b in blocks)
        return "hermes" if quoted else "qwen_fc"
    if "<function_call>" in text:
        return "granite"
    with contextlib.suppress(DecodeError):
        name = decode_glm(text)[0][0]
        if _GLM_NAME.fullmatch(name):
            return "glm"
    if text.rstrip().endswith(";"):
        with contextlib.suppress(DecodeError):
            _nexus_calls(text)  # `out_of_domain(...);` too: Raven's answer to irrelevance
            return "nexus"
    return None


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
    ast.BitXor: operator.xor,  # `3 * 10^8` (Raven's answer for 3e8): 22 in BFCL's `eval`
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
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
    elif isinstance(op, ast.LShift) and isinstance(left, int) and isinstance(right, int):
        too_big = left.bit_length() + right > MAX_INT_BITS
    elif isinstance(op, ast.Add) and isinstance(left, str) and isinstance(right, str):
        too_big = len(left) + len(right) > MAX_TEXT_RESULT
    if too_big:
        raise DecodeError("arithmetic result too large")


# ------------------------------------------------------------------ calls between tags or lines

_OPEN, _CLOSE = "<tool_call>\n", "\n</tool_call>"
_GLM_NAME = re.compile(r"[A-Za-z_][\w.\-]{0,200}")
"""A first line the `glm` guess takes for a function name (BFCL's GLM handler takes any)."""


def decode_qwen(text: str, *, arguments_as_text: bool = False) -> list[Call]:
    """`<tool_call>` blocks as BFCL's Qwen FC handler reads them (module docstring).

    `arguments_as_text`: arguments written as JSON text (`"arguments": "{\\"a\\": 1}"`) are
    read as its `decode_execute` reads them for multi-turn steps; its `decode_ast` does not."""
    calls = []
    for block in _tool_call_blocks(text):
        try:
            item = loads_untrusted(block, MAX_VALUE_DEPTH)
        except ValueError as exc:
            if _is_json(block):  # JSON BFCL keeps, but a transcript cannot hold
                raise DecodeError(f"a tool call's JSON cannot be held: {exc}") from None
            continue  # BFCL skips a block that is not JSON
        if arguments_as_text and isinstance(item, dict) and isinstance(item.get("arguments"), str):
            item = item | {"arguments": _json_object(item["arguments"])}
        calls.append(_named_call(item, "arguments"))
    return calls


def _json_object(text: str) -> Any:
    """JSON text BFCL's `convert_to_function_call` reads; DecodeError where its reader fails."""
    try:
        return loads_untrusted(text, MAX_VALUE_DEPTH)
    except ValueError as exc:
        raise DecodeError(f"the arguments are not JSON: {str(exc)[:60]}") from None


def _tool_call_blocks(text: str) -> list[str]:
    """What `re.findall(r"<tool_call>\\n(.*?)\\n</tool_call>", text, re.DOTALL)` finds, by
    searching forward only: no backtracking, so an output of unclosed tags cannot hang it."""
    blocks, at = [], 0
    while (start := text.find(_OPEN, at)) >= 0:
        end = text.find(_CLOSE, start + len(_OPEN))
        if end < 0:  # no later tag can be closed either
            break
        blocks.append(text[start + len(_OPEN) : end])
        at = end + len(_CLOSE)
    return blocks


def _is_json(text: str) -> bool:
    """Whether Python's own reader (BFCL's) takes the text, without building what it holds."""
    try:
        json.loads(text, parse_constant=lambda _: None, parse_float=lambda _: None)
    except (ValueError, RecursionError):
        return False
    return True


def decode_hermes(text: str) -> list[Call]:
    """`<tool_call>` lines as BFCL's removed Hermes handler read them (module docstring)."""
    calls, inside = [], False
    for line in text.split("\n"):
        if line in ("<tool_call>", "</tool_call>"):
            inside = line == "<tool_call>"
            continue
        if inside:
            try:
                item = loads_untrusted(line.replace("'", '"'), MAX_VALUE_DEPTH)
            except ValueError as exc:
                raise DecodeError(f"a tool call line is not JSON: {str(exc)[:60]}") from None
            calls.append(_named_call(item))
        inside = False
    return calls


def decode_granite(text: str) -> list[Call]:
    """`<function_call> {...} <function_call> {...}` as BFCL's Granite handler reads it."""
    calls = []
    for piece in (p.strip() for p in text.split("<function_call>")):
        if not piece:
            continue
        try:
            item = loads_untrusted(piece, MAX_VALUE_DEPTH)
        except ValueError as exc:
            raise DecodeError(f"not a JSON call object: {str(exc)[:60]}") from None
        if not isinstance(item, dict) or not isinstance(item.get("name", ""), str):
            raise DecodeError('each call must be {"name": ..., "arguments": {...}}')
        name = item.get("name", "").strip()
        if name == "no_function":
            raise DecodeError("the model called no function (no_function)")
        calls.append(_named_call({"name": name, "arguments": item.get("arguments", {})}))
    return calls


def decode_glm(text: str) -> list[Call]:
    """A name on the first line, JSON arguments on the second, as BFCL's GLM handler reads it."""
    lines = text.split("\n", 2)
    if len(lines) < 2:
        raise DecodeError("a name and a line of JSON arguments are needed")
    try:
        args = loads_untrusted(lines[1], MAX_VALUE_DEPTH)
    except ValueError as exc:
        raise DecodeError(f"the arguments are not JSON: {str(exc)[:60]}") from None
    return [_named_call({"name": lines[0], "arguments": args})]


def decode_nexus(text: str) -> list[Call]:
    """`f(a=1); g(b=2);` as BFCL's Nexus (Raven) handler reads it (module docstring)."""
    calls = _nexus_calls(text)
    if "out_of_domain" in text:
        raise DecodeError("the model answered out_of_domain")
    return calls


def _nexus_calls(text: str) -> list[Call]:
    """The calls of `f(a=1); g(b=2);`: one trailing `;` dropped, the others commas."""
    body = text[:-1] if text.endswith(";") else text
    return decode_prompting("[" + body.replace(";", ",") + "]")


def _named_call(item: Any, key: str = "arguments") -> Call:
    """One `{"name": f, key: {...}}` object as a call; DecodeError for anything else."""
    if not isinstance(item, dict) or "name" not in item or key not in item:
        raise DecodeError(f'each call must be {{"name": ..., "{key}": {{...}}}}')
    name, args = item["name"], item[key]
    if isinstance(name, list | dict):  # BFCL makes it a mapping key: a TypeError there
        raise DecodeError("a function name must be a single value")
    if not isinstance(args, dict):
        raise DecodeError(f"the {key} of {str(name)[:60]} are not an object")
    return str(name), args


_TAGGED: dict[str, Callable[[str], list[Call]]] = {
    "qwen_fc": decode_qwen,
    "hermes": decode_hermes,
    "granite": decode_granite,
    "glm": decode_glm,
    "nexus": decode_nexus,
}
