"""Computed values when a tool is called: `$calc`, `$if`, `$each`, `$sorted`, and the walks of
`for_each` and `$each` through their lists.

Compiled by `evalspec._suite.state.computed`; every problem a call brings (a text where a number
is needed, a division by zero, a number too large) is a `Failure`, the call's error
observation, never an exception out of the engine.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Callable, Iterator
from typing import Any

from evalspec._suite.state.computed import (
    CALCULATOR_KEYS,
    MAX_WALK_ITEMS,
    Calc,
    Each,
    ExpressionError,
    If,
    Sorted,
    Walk,
    parse,
)
from evalspec._suite.state.spec import MAX_RENDERED_VALUES
from evalspec._suite.state.types import Check, Tree

Number = int | float
_INT_LIMIT = 10**4300
"""As the engine's increments: JSON text holds no longer whole number that Python reads."""


def render_form(
    form: Tree,
    ctx: Any,
    render: Callable[[Any, Any], Any],
    holds: Callable[[tuple[Check, ...], Any], bool],
    fail: type[Exception],
) -> Any:
    """The value of a computed form; `render` renders a template, `holds` tells whether
    checks hold, in `ctx` (the engine's), and `fail` is the engine's error."""
    if isinstance(form, Calc):
        values = [render(ref, ctx) for ref in form.value]
        if form.parse_text and isinstance(values[0], str):
            if not set(values[0]) <= CALCULATOR_KEYS:
                raise fail("invalid characters in expression")
            try:
                tree = parse(values[0])
            except ExpressionError as exc:
                raise fail(f"{values[0][:80]!r}: {exc}") from None
            return _checked(_evaluate(tree, [], fail), fail)
        return _checked(_evaluate(form.tree, values, fail), fail)
    if isinstance(form, If):
        return render(form.then if holds(form.checks, ctx) else form.otherwise, ctx)
    if isinstance(form, Each):
        return _each(form, ctx, render, holds, fail)
    if isinstance(form, Sorted):
        return _sorted(render(form.value[0], ctx), fail)
    raise AssertionError(form)  # pragma: no cover - every compiled form is one of these


def walk(
    walk: Walk, ctx: Any, render: Callable[[Any, Any], Any], fail: type[Exception]
) -> Iterator[Any]:
    """The contexts a walk gives, one per item, its names bound; the lists are read once,
    before the first, and must be as long as each other (a mapping gives its values)."""
    lists = [
        _items(render(template, ctx), name, fail)
        for name, template in zip(walk.names, walk.value, strict=True)
    ]
    if len({len(items) for items in lists}) > 1:
        sizes = " and ".join(
            f"{name or 'the list'} ({len(items)} items)"
            for name, items in zip(walk.names, lists, strict=True)
        )
        raise fail(f"for_each walks lists of different lengths: {sizes}")
    for values in zip(*lists, strict=True):
        ctx.step(1)
        yield ctx.with_items(dict(zip(walk.names, values, strict=True)))


def _items(value: Any, name: str, fail: type[Exception]) -> list[Any]:
    what = f"for_each {name}" if name else "for_each"
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, list):
        raise fail(f"{what} needs a list, not {_shown(value)}")
    if len(value) > MAX_WALK_ITEMS:
        raise fail(f"{what}: {len(value)} items; the limit is {MAX_WALK_ITEMS}")
    return value


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _each(
    form: Each,
    ctx: Any,
    render: Callable[[Any, Any], Any],
    holds: Callable[[tuple[Check, ...], Any], bool],
    fail: type[Exception],
) -> Any:
    """A list of `$do` for each item `$when` keeps; with `$key`, a mapping key -> `$do` (a key
    met again keeps its place and takes the later value)."""
    listed: list[Any] = []
    keyed: dict[str, Any] = {}
    for inner in walk(form.walk, ctx, render, fail):
        if form.when and not holds(form.when, inner):
            continue
        if not form.keyed:
            listed.append(render(form.do, inner))
            continue
        key = render(form.key, inner)
        if not isinstance(key, str):
            raise fail(f"$each's $key is {_shown(key)}; a mapping's key must be text")
        keyed[key] = render(form.do, inner)
    return keyed if form.keyed else listed


def _sorted(value: Any, fail: type[Exception]) -> Any:
    """Texts by code point, numbers by value; a mapping keeps its values, its keys in order."""
    if isinstance(value, dict):
        return dict(sorted(value.items()))
    if not isinstance(value, list):
        raise fail(f"$sorted needs a list or mapping, not {_shown(value)}")
    if all(isinstance(v, str) for v in value):
        return sorted(value)
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return sorted(value)
    raise fail("$sorted: the list must hold only texts or only numbers")


def _checked(value: Any, fail: type[Exception]) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise fail("the result is not a finite number")
    if isinstance(value, int) and not -_INT_LIMIT < value < _INT_LIMIT:
        raise fail("the result has more than 4300 digits")
    return value


def _number(value: Any, fail: type[Exception]) -> Number:
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = repr(value)[:60]
        raise fail(f"{shown} is not a number")
    return value


def _evaluate(node: ast.expr, values: list[Any], fail: type[Exception]) -> Any:
    """The value of a parsed expression; `values` are the references' (`_0`, `_1`, ...)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in ("len", "sum", "min", "max", "abs", "round", "float", "int"):
            raise fail(f"{node.id} is a function: call it, as {node.id}(...)")
        return values[int(node.id[1:])]
    if isinstance(node, ast.UnaryOp):
        operand = _number(_evaluate(node.operand, values, fail), fail)
        return -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BinOp):
        left = _number(_evaluate(node.left, values, fail), fail)
        right = _number(_evaluate(node.right, values, fail), fail)
        return _checked(_binary(node.op, left, right, fail), fail)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        args = [_evaluate(a, values, fail) for a in node.args]
        return _checked(_call(node.func.id, args, fail), fail)
    raise fail(f"{type(node).__name__} is not arithmetic")  # pragma: no cover - parse refuses


def _binary(op: ast.operator, a: Number, b: Number, fail: type[Exception]) -> Number:
    try:
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, ast.Div):
            return a / b
        if isinstance(op, ast.FloorDiv):
            return a // b
        if isinstance(op, ast.Mod):
            return a % b
        return _power(a, b, fail)
    except ZeroDivisionError as exc:  # Python's words, as a calculator that runs it answers
        raise fail(str(exc)) from None
    except OverflowError:
        raise fail("the result is not a finite number") from None


def _power(a: Number, b: Number, fail: type[Exception]) -> Number:
    """`a ** b` when the result stays within the digits a whole number may have."""
    if a not in (0, 1, -1) and abs(b) * math.log10(abs(a)) > 4300:
        raise fail("the result has more than 4300 digits")
    result = a**b
    if isinstance(result, complex):
        raise fail("the result is not a real number")
    return result


def _call(name: str, args: list[Any], fail: type[Exception]) -> Any:
    if name == "len":
        if len(args) != 1 or not isinstance(args[0], list | dict | str):
            raise fail("len takes one list, mapping or text")
        return len(args[0])
    if name == "sum":
        if len(args) != 1 or not isinstance(args[0], list):
            raise fail("sum takes one list of numbers")
        if len(args[0]) > MAX_RENDERED_VALUES:
            raise fail(f"sum of more than {MAX_RENDERED_VALUES} numbers")
        total: Number = 0
        for value in args[0]:
            total = _checked(total + _number(value, fail), fail)
        return total
    if name in ("min", "max"):
        numbers = args[0] if len(args) == 1 and isinstance(args[0], list) else args
        if not numbers:
            raise fail(f"{name} of nothing")
        picked = [_number(v, fail) for v in numbers]
        return min(picked) if name == "min" else max(picked)
    if name == "round":
        if len(args) not in (1, 2):
            raise fail("round takes a number and, optionally, its decimal places")
        digits = int(_number(args[1], fail)) if len(args) == 2 else None
        if digits is not None and not -20 <= digits <= 20:
            raise fail("round to at most 20 decimal places")
        return round(_number(args[0], fail), digits)
    if len(args) != 1:
        raise fail(f"{name} takes one number")
    value = _number(args[0], fail)
    if name == "abs":
        return abs(value)
    try:
        return float(value) if name == "float" else int(value)
    except OverflowError:
        raise fail("the result is not a finite number") from None
