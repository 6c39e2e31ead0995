"""The Jinja environment suites render in: sandboxed, strict, and on a budget (budget.py).

Jinja's immutable sandbox already refuses Python internals. On top of it, every loop iteration,
call and filter counts against the rendering's budget, and the operations that can build a huge
value in one step (`*`, `**`, `+`, `%`, `~`, padding filters, format widths) are checked before
they run, so a hostile template fails fast with a clear message instead of hanging.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sized
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from evalspec._suite.budget import (
    MAX_TEMPLATE_INT_BITS,
    MAX_TEMPLATE_TEXT,
    TemplateBudgetError,
    check_size,
    step,
)

_SIZE_ARGUMENT_FILTERS = {"center", "indent", "wordwrap", "truncate", "batch", "slice", "format"}
"""Filters whose number arguments set the size of what they build."""

_BIG_WIDTH = re.compile(r"%[-+ #0]*\d*\.?\d{7,}|\{[^{}]*:[^{}]*\d{7,}[^{}]*\}")
"""A width or precision of a million or more in a format string: `'%0300000000d'`."""


def _too_big(message: str) -> TemplateBudgetError:
    return TemplateBudgetError(message)


def _check_repeat(count: Any, sequence: Any) -> None:
    repeats = isinstance(count, int) and isinstance(sequence, str | list | tuple)
    if repeats and len(sequence) * max(count, 0) > MAX_TEMPLATE_TEXT:
        raise _too_big(
            f"the template repeats a value to more than {MAX_TEMPLATE_TEXT} characters or items"
        )


def _check_format(pattern: Any) -> None:
    if isinstance(pattern, str) and _BIG_WIDTH.search(pattern):
        raise _too_big("the template formats with a width of a million or more")


def _multiply(left: Any, right: Any) -> Any:
    _check_repeat(left, right)
    _check_repeat(right, left)
    both_ints = isinstance(left, int) and isinstance(right, int)
    if both_ints and left.bit_length() + right.bit_length() > MAX_TEMPLATE_INT_BITS:
        raise _too_big(f"the template computes a number larger than {MAX_TEMPLATE_INT_BITS} bits")
    return left * right


def _power(left: Any, right: Any) -> Any:
    both_ints = isinstance(left, int) and isinstance(right, int)
    if (
        both_ints
        and abs(left) > 1
        and right > 0
        and (left.bit_length() - 1) * right > MAX_TEMPLATE_INT_BITS
    ):
        raise _too_big(f"the template computes a number larger than {MAX_TEMPLATE_INT_BITS} bits")
    return left**right


def _modulo(left: Any, right: Any) -> Any:
    _check_format(left)
    return left % right


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` counting as a step, with size-setting numbers and its result checked."""

    def bounded(*args: Any, **kwargs: Any) -> Any:
        step()
        if name in _SIZE_ARGUMENT_FILTERS:
            for value in (*args, *kwargs.values()):
                number = isinstance(value, int) and not isinstance(value, bool)
                if number and abs(value) > MAX_TEMPLATE_TEXT:
                    raise _too_big(
                        f"the filter {name} is given {value}; sizes above "
                        f"{MAX_TEMPLATE_TEXT} are refused"
                    )
                _check_format(value)
        _check_amplifying(name, [a for a in args if not _is_context(a)], kwargs)
        return check_size(func(*args, **kwargs))

    for attr in ("jinja_pass_arg",):
        if hasattr(func, attr):
            setattr(bounded, attr, getattr(func, attr))
    return bounded


def _is_context(value: Any) -> bool:
    """The environment or evaluation context Jinja passes some filters first."""
    return type(value).__name__ in ("EvalContext", "BudgetedSandbox", "Context")


def _check_amplifying(name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """Refuse, before it runs, a filter whose result would be far larger than its input.

    `'a'*999999 | replace('a', 'b'*999999)`, `| join('x'*999999)` on a long list, `| indent`
    with a huge prefix, or `| wordwrap(1, wrapstring=...)` would each build terabytes in one
    call, which no check afterwards could stop.
    """
    estimate = 0
    if name == "replace" and len(args) >= 3 and all(isinstance(a, str) for a in args[:3]):
        text, old, new = args[:3]
        estimate = len(text) + text.count(old) * max(len(new) - len(old), 0)
    elif name == "join" and args and isinstance(args[0], Sized):
        separator = kwargs.get("d", args[1] if len(args) > 1 else "")
        estimate = len(str(separator)) * len(args[0])
    elif name == "indent" and args and isinstance(args[0], str):
        width = kwargs.get("width", args[1] if len(args) > 1 else 4)
        prefix = len(width) if isinstance(width, str) else int(width)
        estimate = (args[0].count("\n") + 1) * prefix
    elif name == "wordwrap" and args and isinstance(args[0], str):
        wrap = kwargs.get("wrapstring", args[4] if len(args) > 4 else None)
        estimate = len(args[0]) * len(wrap) if isinstance(wrap, str) else 0
    elif name == "tojson":
        indent = kwargs.get("indent", args[1] if len(args) > 1 else None)
        if isinstance(indent, int) and indent > MAX_JSON_INDENT:
            raise _too_big(f"the filter tojson is given an indent above {MAX_JSON_INDENT}")
    if estimate > MAX_TEMPLATE_TEXT:
        raise _too_big(f"the filter {name} would build more than {MAX_TEMPLATE_TEXT} characters")


MAX_JSON_INDENT = 16


def _counted(items: Iterable[Any]) -> Iterator[Any]:
    """A loop's items, each counted as a step."""
    for item in items:
        step()
        yield item


def _joined(parts: list[Any]) -> str:
    """`a ~ b`, with the result's size checked."""
    step()
    total = 0
    texts = []
    for part in parts:
        text = str(part)
        total += len(text)
        if total > MAX_TEMPLATE_TEXT:
            raise _too_big(f"the template builds a text longer than {MAX_TEMPLATE_TEXT} characters")
        texts.append(text)
    return "".join(texts)


class _BoundNodes(NodeTransformer):
    """Rewrites a parsed template so that loops, `~` and `{% set %}` blocks report to the budget."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = _filter(node.iter, "_evalspec_counted", node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _filter(nodes.List(node.nodes, lineno=node.lineno), "_evalspec_joined", node.lineno)

    def visit_AssignBlock(self, node: nodes.AssignBlock) -> nodes.Node:
        self.generic_visit(node)
        if node.filter is None:
            node.filter = nodes.Filter(
                None, "_evalspec_sized", [], [], None, None, lineno=node.lineno
            )
        return node


def _filter(node: nodes.Node, name: str, lineno: int) -> nodes.Filter:
    return nodes.Filter(node, name, [], [], None, None, lineno=lineno)


class BudgetedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, with every costly step checked against the current budget."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False)
        self.binop_table["*"] = _multiply
        self.binop_table["**"] = _power
        self.binop_table["%"] = _modulo
        # A namespace would let a loop carry a growing value from one iteration to the next.
        self.globals.pop("namespace", None)
        self.globals.pop("lipsum", None)
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}
        self.filters["_evalspec_counted"] = _counted
        self.filters["_evalspec_joined"] = _joined
        self.filters["_evalspec_sized"] = check_size

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        step()
        return check_size(self.binop_table[operator](left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        step()
        wrapped = getattr(__obj, "__wrapped__", None)
        owner = getattr(wrapped, "__self__", None)
        if isinstance(owner, str):  # 'pattern'.format(...)
            _check_format(owner)
        return check_size(super().call(__context, __obj, *args, **kwargs))

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        return self._bound(super()._parse(source, name, filename))

    def compile(self, source: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(source, nodes.Template):  # compile_expression builds the tree itself
            source = self._bound(source)
        return super().compile(source, *args, **kwargs)

    def _bound(self, template: nodes.Template) -> nodes.Template:
        bound: nodes.Template = _BoundNodes().visit(template)
        bound.set_environment(self)
        return bound


@lru_cache(maxsize=1)
def sandbox() -> BudgetedSandbox:
    return BudgetedSandbox()
