"""Computed values in a tool's behavior: arithmetic, a choice, one value per item of a list.

A booking tool prices a reservation from its flights (the sum of each flight's fare, times the
passengers, plus the bags), refunds every payment of a cancelled one, and picks the first free
id; plain references cannot say any of that. These forms can, each a mapping whose first key
starts with `$` (compiled here, applied by `evalspec._tools.state_compute`):

- `{$calc: "EXPRESSION"}`: arithmetic on numbers (`+ - * / // % **`, parentheses, `len`,
  `sum`, `min`, `max`, `abs`, `round`, `float`, `int`), with references as operands:
  `{$calc: "50 * max(0, ${args.bags} - ${state/res/bags})"}`. An expression that is exactly
  one reference to a text parses that text when the tool is called: a calculator.
- `{$if: CHECK, $then: VALUE, $else: VALUE}`: CHECK is a precondition (or a list of them, all
  of which must hold).
- `{$each: LIST, $do: VALUE, $when: CHECK}`: one value per item of LIST (`$when` keeps only the
  items for which it holds); `${each/POINTER}` reads the item, `${each}` is the item itself.

Nothing here is evaluated as code: an expression is parsed once into a small tree of the
operations above and walked; anything else is refused with its place.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from evalspec._suite.state_spec import Check, Ref, SpecProblem, Tree, compile_value, tokens

FORMS = ("$calc", "$if", "$each")
"""First keys of a computed value."""
FUNCTIONS = ("len", "sum", "min", "max", "abs", "round", "float", "int")
MAX_EXPRESSION = 2_000
"""Characters of one expression (a calculator's text too)."""
MAX_NODES = 200
"""Operations and operands in one expression."""
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_CALC_HINT = (
    "an expression holds numbers, references, + - * / // % **, parentheses and "
    + ", ".join(f"{f}(...)" for f in FUNCTIONS)
)


class ExpressionError(ValueError):
    """An expression outside the arithmetic `$calc` accepts."""


@dataclass(frozen=True, slots=True)
class Calc(Tree):
    """`$calc`: `value` lists the references, `_0`, `_1`... in `tree`."""

    tree: ast.expr
    parse_text: bool
    """The expression is one reference: a text it holds is parsed when the tool is called."""


@dataclass(frozen=True, slots=True)
class If(Tree):
    """`$if`: `value` is [*checks, then, otherwise] (so walkers see every reference)."""

    checks: tuple[Check, ...]
    then: Any
    otherwise: Any


@dataclass(frozen=True, slots=True)
class Each(Tree):
    """`$each`: `value` is [source, do, *when]."""

    source: Any
    do: Any
    when: tuple[Check, ...]


def is_form(value: dict[str, Any]) -> bool:
    return any(key in value for key in FORMS)


def compile_form(value: dict[str, Any], where: tuple[Any, ...]) -> Tree:
    """The computed value a `$calc` / `$if` / `$each` mapping stands for."""
    forms = [k for k in FORMS if k in value]
    if len(forms) > 1:
        raise SpecProblem(
            where,
            f"one value is both {forms[0]} and {forms[1]}",
            "nest them: the value of one may be the other",
        )
    form = forms[0]
    allowed = {
        "$calc": ("$calc",),
        "$if": ("$if", "$then", "$else"),
        "$each": ("$each", "$do", "$when"),
    }[form]
    extra = [k for k in value if k not in allowed]
    if extra:
        raise SpecProblem(
            (*where, extra[0]),
            f"unknown key {extra[0]!r} in a {form}",
            f"a {form} takes " + ", ".join(allowed),
        )
    if form == "$calc":
        return _calc(value["$calc"], (*where, "$calc"))
    if form == "$if":
        checks = conditions(value["$if"], (*where, "$if"))
        then = compile_value(value.get("$then"), (*where, "$then"))
        otherwise = compile_value(value.get("$else"), (*where, "$else"))
        return If([*checks, then, otherwise], checks, then, otherwise)
    if "$do" not in value:
        raise SpecProblem(where, "$each needs $do: the value made for each item", "$do: ${each/id}")
    source = compile_value(value["$each"], (*where, "$each"))
    do = compile_value(value["$do"], (*where, "$do"))
    when = conditions(value["$when"], (*where, "$when")) if "$when" in value else ()
    return Each([source, do, *when], source, do, when)


def conditions(raw: Any, where: tuple[Any, ...]) -> tuple[Check, ...]:
    """A precondition, or a list of them (all must hold), as `$if`, `$when` and `when:` take."""
    from evalspec._suite.state_spec import _check

    listed = raw if isinstance(raw, list) else [raw]
    if not listed:
        raise SpecProblem(where, "an empty list of conditions", "{path: /a, exists: true}")
    return tuple(
        _check(c, (*where, i) if isinstance(raw, list) else where) for i, c in enumerate(listed)
    )


# ------------------------------------------------------------------ expressions


def _calc(raw: Any, where: tuple[Any, ...]) -> Calc:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise SpecProblem(where, "$calc must be an expression text", '$calc: "2 * ${args.n}"')
    text = str(raw)
    if len(text) > MAX_EXPRESSION:
        raise SpecProblem(
            where,
            f"the expression has {len(text)} characters; the limit is {MAX_EXPRESSION}",
            "split it: a `let:` value can hold a part",
        )
    refs: list[Ref] = []
    source = []
    for token in tokens(text, where):
        if isinstance(token, Ref):
            source.append(f" _{len(refs)} ")
            refs.append(token)
        else:
            source.append(token)
    try:
        tree = parse("".join(source), len(refs))
    except ExpressionError as exc:
        raise SpecProblem(where, f"{text!r}: {exc}", _CALC_HINT) from None
    one_ref = len(refs) == 1 and isinstance(tree, ast.Name)
    return Calc(list(refs), tree, one_ref)


def parse(text: str, names: int = 0) -> ast.expr:
    """The expression's tree, every node one `$calc` allows; ExpressionError otherwise.
    `names`: how many placeholders (`_0`...) it may hold."""
    if len(text) > MAX_EXPRESSION:
        raise ExpressionError(f"longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        raise ExpressionError("not an arithmetic expression") from None
    for seen, node in enumerate(ast.walk(tree), 1):
        if seen > MAX_NODES:
            raise ExpressionError(f"more than {MAX_NODES} operations and operands")
        _allowed(node, names)
    return tree


def _allowed(node: ast.AST, names: int) -> None:
    if isinstance(node, ast.BinOp):
        if not isinstance(node.op, _OPERATORS):
            raise ExpressionError(f"the operator {type(node.op).__name__} is not arithmetic")
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.USub | ast.UAdd):
            raise ExpressionError(f"the operator {type(node.op).__name__} is not arithmetic")
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise ExpressionError(f"{node.value!r} is not a number")
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
            raise ExpressionError("only " + ", ".join(FUNCTIONS) + " may be called")
    elif isinstance(node, ast.Name):
        known = node.id in FUNCTIONS or (
            node.id.startswith("_") and node.id[1:].isdigit() and int(node.id[1:]) < names
        )
        if not known:
            raise ExpressionError(f"{node.id!r} is not a number or a reference")
    elif not isinstance(node, ast.operator | ast.unaryop | ast.expr_context):
        raise ExpressionError(f"{type(node).__name__} is not arithmetic")


# ------------------------------------------------------------------ let, for_each

MAX_LETS = 32
"""`let:` values of one tool."""


def compile_lets(raw: Any) -> tuple[tuple[str, Any], ...]:
    """`let: {NAME: VALUE, ...}`: named values a behaviour reads as `${let.NAME}`."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise SpecProblem(("let",), "let must be a mapping of name: value", "let: {n: 1}")
    if len(raw) > MAX_LETS:
        raise SpecProblem(
            ("let",), f"{len(raw)} let values; the limit is {MAX_LETS} per tool", "split the tool"
        )
    out = []
    for name, value in raw.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise SpecProblem(
                ("let", name), f"{name!r} is not a name", "a name is letters, digits and _"
            )
        out.append((name, compile_value(value, ("let", name))))
    return tuple(out)


def check_names(
    lets: tuple[tuple[str, Any], ...], places: list[tuple[tuple[Any, ...], Any]]
) -> None:
    """Every `${let.NAME}` names a `let:` value; a value reads only those before it (so none
    reads itself). `places`: each compiled part of the behaviour with where it is written."""
    from evalspec._suite.state_spec import references

    known: list[str] = []
    for name, value in lets:
        for ref in references(value):
            if ref.kind == "let" and ref.name not in known:
                raise SpecProblem(
                    ("let", name),
                    f"{ref} is read before it is defined",
                    "a let value may read the ones listed above it",
                )
        known.append(name)
    for where, node in [(("let", name), value) for name, value in lets] + places:
        stray = item_outside_each(node)
        if stray is not None:
            raise SpecProblem(
                where,
                f"{stray} reads an item, but no $each or for_each gives one here",
                "read items inside `$each: LIST, $do: ...`, or in a precondition or effect "
                "with `for_each: LIST`",
            )
    for where, node in places:
        for ref in references(node):
            if ref.kind == "let" and ref.name not in known:
                raise SpecProblem(
                    where,
                    f"{ref} names no let value (defined: {', '.join(known) or 'none'})",
                    f"add `let: {{{ref.name}: ...}}` to the behavior",
                )


def item_outside_each(node: Any) -> Ref | None:
    """The first `${each...}` reference of a compiled part that no `$each` or `for_each`
    around it gives an item to; None when every one has one."""
    from evalspec._suite.state_spec import Effect, Path, Select, Text

    if isinstance(node, Ref):
        if node.kind == "each":
            return node
        return item_outside_each(node.path) if node.path is not None else None
    inner: list[Any] = []
    if isinstance(node, Each):
        inner = [node.source]  # `$do` and `$when` have the item
    elif isinstance(node, Check):
        if node.for_each is not None:
            inner = [node.for_each]
        else:
            inner = [node.path, node.value, node.error, *(t[1] for t in node.tests), *node.any_of]
    elif isinstance(node, Effect):
        inner = [node.for_each]
        if node.for_each is None:
            inner += [node.path, node.value, node.where, node.at, node.by, *node.when]
    elif isinstance(node, Tree):
        inner = list(node.value.values() if isinstance(node.value, dict) else node.value)
    elif isinstance(node, Text | Path):
        inner = list(node.parts)
    elif isinstance(node, Select):
        inner = [node.path, node.where]
    for child in inner:
        found = item_outside_each(child)
        if found is not None:
            return found
    return None


def for_each_check(raw: dict[str, Any], where: tuple[Any, ...], nested: bool) -> Check:
    """`{for_each: LIST, checks: [...]}`: each item in turn, its checks in order; the first
    that fails (its `error:`, `${each/...}` reading the item) is the call's error."""
    from evalspec._suite.state_spec import _check

    extra = [k for k in raw if k not in ("for_each", "checks")]
    if extra:
        raise SpecProblem(
            (*where, extra[0]),
            f"{extra[0]!r} beside for_each",
            "a for_each precondition holds `checks:`, a list of preconditions (each with its "
            "own error) tested for each item",
        )
    listed = raw.get("checks")
    if not isinstance(listed, list) or not listed:
        raise SpecProblem(
            (*where, "checks"),
            "for_each needs checks: a list of preconditions",
            'checks: [{path: "/flights/${each/id}", exists: true, error: ...}]',
        )
    checks = tuple(_check(c, (*where, "checks", i), nested) for i, c in enumerate(listed))
    source = compile_value(raw["for_each"], (*where, "for_each"))
    return Check(None, None, (), None, (), source, checks)
