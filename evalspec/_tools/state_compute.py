"""Computed values when a tool is called: `$calc`, `$if` and `$each`.

Compiled by `evalspec._suite.state_compute`; every problem a call brings (a text where a number
is needed, a division by zero, a number too large) is a `Failure`, the call's error
observation, never an exception out of the engine.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

from evalspec._suite.state_compute import Calc, Each, ExpressionError, If, parse
from evalspec._suite.state_spec import MAX_RENDERED_VALUES, Check, Tree

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
            try:
                tree = parse(values[0])
            except ExpressionError as exc:
                raise fail(f"{values[0][:80]!r}: {exc}") from None
            return _checked(_evaluate(tree, [], fail), fail)
        return _checked(_evaluate(form.tree, values, fail), fail)
    if isinstance(form, If):
        return render(form.then if holds(form.checks, ctx) else form.otherwise, ctx)
    if isinstance(form, Each):
        items = render(form.source, ctx)
        if not isinstance(items, list):
            raise fail(f"$each needs a list, not {type(items).__name__}")
        out = []
        for item in items:
            inner = ctx.with_item(item)
            if form.when and not holds(form.when, inner):
                continue
            out.append(render(form.do, inner))
        return out
    raise AssertionError(form)  # pragma: no cover - every compiled form is one of these


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
    except ZeroDivisionError:
        raise fail("division by zero") from None
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
