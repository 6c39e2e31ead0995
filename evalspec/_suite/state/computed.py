"""Computed values in a tool's behavior: arithmetic, a choice, one value per item of a list.

A booking tool prices a reservation from its flights (the sum of each flight's fare, times the
passengers, plus the bags), refunds every payment of a cancelled one, and picks the first free
id; plain references cannot say any of that. These forms can, each a mapping whose first key
starts with `$` (compiled here, applied by `evalspec._suite.state.evaluate`):

- `{$calc: "EXPRESSION", $with: {NAME: VALUE}}`: arithmetic on numbers (`+ - * / // % **`,
  parentheses, `len`, `sum`, `min`, `max`, `abs`, `round`, `float`, `int`), with references
  as operands: `{$calc: "50 * max(0, ${args.bags} - ${state/res/bags})"}`; `$with` names
  values a reference cannot be (a `$select`, a `$each`), read in the expression by NAME. An
  expression that is exactly one reference to a text parses that text when the tool is
  called: a calculator (its text holds only CALCULATOR_KEYS).
- `{$if: CHECK, $then: VALUE, $else: VALUE}`: CHECK is a precondition (or a list of them, all
  of which must hold).
- `{$each: LIST, $do: VALUE, $when: CHECK, $key: TEXT}`: one value per item of LIST (`$when`
  keeps only the items for which it holds; with `$key`, a mapping of key to value);
  `${each/POINTER}` reads the item, `${each}` is the item itself.
- `{$sorted: VALUE}`: a list of texts or of numbers in order, a mapping by its keys.

Wherever a list is walked (`$each`, and `for_each` on preconditions and effects), it may be
written `{NAME: LIST, ...}`: up to MAX_WALK_NAMES lists walked in step, `${each.NAME/POINTER}`
reading each one's item. A plain LIST is the same walk with one unnamed list (`${each}`).
A mapping is walked by its values.

Nothing here is evaluated as code: an expression is parsed once into a small tree of the
operations above and walked; anything else is refused with its place. This module imports
only the shapes (`types`): the compiler hands in its own functions (`Compilers`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evalspec._suite.state.types import (
    Check,
    Effect,
    Path,
    Ref,
    Select,
    SpecProblem,
    Text,
    Tree,
    references,
)

FORMS = ("$calc", "$if", "$each", "$sorted")
"""First keys of a computed value."""
_KEYS = {
    "$calc": ("$calc", "$with"),
    "$if": ("$if", "$then", "$else"),
    "$each": ("$each", "$do", "$when", "$key"),
    "$sorted": ("$sorted",),
}
FUNCTIONS = ("len", "sum", "min", "max", "abs", "round", "float", "int")
CALCULATOR_KEYS = frozenset("0123456789+-*/(). ")
"""The characters a calculator's text may hold (its keys): anything else is refused before the
text is parsed, as a calculator that runs Python refuses it."""
MAX_EXPRESSION = 2_000
"""Characters of one expression (a calculator's text too)."""
MAX_NODES = 200
"""Operations and operands in one expression."""
MAX_WALK_NAMES = 4
"""Lists one walk (`for_each`, `$each`) goes through in step."""
MAX_WALK_ITEMS = 1_000
"""Items of one list a walk goes through."""
MAX_CALL_STEPS = 1_000_000
"""Items walked and records scanned by one call, all its checks, effects and answer together:
a walk inside a walk, each scanning a large list, stops here."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_NAME_CHARS = "letters, digits, _ and -, starting with a letter or _"
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_CALC_HINT = (
    "an expression holds numbers, references, $with names, + - * / // % **, parentheses and "
    + ", ".join(f"{f}(...)" for f in FUNCTIONS)
)


@dataclass(frozen=True, slots=True)
class Compilers:
    """The compiler's own functions (`spec`), handed in so this module never imports
    it: a computed form holds templates and checks, which hold computed forms."""

    value: Callable[[Any, tuple[Any, ...]], Any]
    check: Callable[[Any, tuple[Any, ...], bool], Check]
    tokens: Callable[[str, tuple[Any, ...]], list[str | Ref]]


class ExpressionError(ValueError):
    """An expression outside the arithmetic `$calc` accepts."""


@dataclass(frozen=True, slots=True)
class Calc(Tree):
    """`$calc`: `value` lists the operands, `_0`, `_1`... in `tree` (its references, then its
    `$with` values)."""

    tree: ast.expr = field(compare=False)
    """Parsed once; two Calcs are the same when their texts and operands are."""
    parse_text: bool = False
    """The expression is one reference: a text it holds is parsed when the tool is called."""
    text: str = ""
    """The expression as written."""
    names: tuple[str, ...] = ()
    """The `$with` names, in the order of their operands (after the references)."""


@dataclass(frozen=True, slots=True)
class If(Tree):
    """`$if`: `value` is [*checks, then, otherwise] (so walkers see every reference)."""

    checks: tuple[Check, ...]
    then: Any
    otherwise: Any


@dataclass(frozen=True, slots=True)
class Walk(Tree):
    """The lists a `for_each` or `$each` goes through in step: `value` holds their templates,
    `names` the name each item is read by ("" for a plain LIST: `${each}`)."""

    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Each(Tree):
    """`$each`: `value` is [walk, do, key, *when]; with `keyed`, a mapping key -> do."""

    walk: Walk
    do: Any
    when: tuple[Check, ...]
    key: Any = None
    keyed: bool = False


@dataclass(frozen=True, slots=True)
class Sorted(Tree):
    """`$sorted`: `value` is [the template to sort]."""


def is_form(value: dict[str, Any]) -> bool:
    return any(key in value for key in FORMS)


def compile_form(value: dict[str, Any], where: tuple[Any, ...], c: Compilers) -> Tree:
    """The computed value a `$calc` / `$if` / `$each` / `$sorted` mapping stands for."""
    forms = [k for k in FORMS if k in value]
    if len(forms) > 1:
        raise SpecProblem(
            where,
            f"one value is both {forms[0]} and {forms[1]}",
            "nest them: the value of one may be the other",
        )
    form = forms[0]
    allowed = _KEYS[form]
    extra = [k for k in value if k not in allowed]
    if extra:
        raise SpecProblem(
            (*where, extra[0]),
            f"unknown key {extra[0]!r} in a {form}",
            f"a {form} takes " + ", ".join(allowed),
        )
    if form == "$calc":
        return _calc(value, where, c)
    if form == "$sorted":
        return Sorted([c.value(value["$sorted"], (*where, "$sorted"))])
    if form == "$if":
        checks = conditions(value["$if"], (*where, "$if"), c)
        then = c.value(value.get("$then"), (*where, "$then"))
        otherwise = c.value(value.get("$else"), (*where, "$else"))
        return If([*checks, then, otherwise], checks, then, otherwise)
    return _each(value, where, c)


def _each(value: dict[str, Any], where: tuple[Any, ...], c: Compilers) -> Each:
    if "$do" not in value:
        raise SpecProblem(where, "$each needs $do: the value made for each item", "$do: ${each/id}")
    walk = compile_walk(value["$each"], (*where, "$each"), c)
    do = c.value(value["$do"], (*where, "$do"))
    when = conditions(value["$when"], (*where, "$when"), c) if "$when" in value else ()
    key = c.value(value["$key"], (*where, "$key")) if "$key" in value else None
    return Each([walk, do, key, *when], walk, do, when, key, "$key" in value)


def compile_walk(raw: Any, where: tuple[Any, ...], c: Compilers) -> Walk:
    """`LIST` or `{NAME: LIST, ...}`: the lists a `for_each` or `$each` walks in step."""
    if not isinstance(raw, dict) or any(k in raw for k in (*FORMS, "$select")):
        return Walk([c.value(raw, where)], ("",))
    example = 'for_each: {item_id: "${args.item_ids}"}'
    if not raw:
        raise SpecProblem(where, "an empty mapping of lists to walk", example)
    if len(raw) > MAX_WALK_NAMES:
        raise SpecProblem(
            where,
            f"{len(raw)} lists walked in step; the limit is {MAX_WALK_NAMES}",
            "walk fewer lists in step; read the others through the item's fields",
        )
    for name in raw:
        if not isinstance(name, str) or not _is_name(name):
            raise SpecProblem(
                (*where, name),
                f"{name!r} cannot name an item",
                f"a name is {_NAME_CHARS}: {example}",
            )
    return Walk([c.value(v, (*where, k)) for k, v in raw.items()], tuple(raw))


def _is_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def conditions(raw: Any, where: tuple[Any, ...], c: Compilers) -> tuple[Check, ...]:
    """A precondition, or a list of them (all must hold), as `$if`, `$when` and `when:` take."""
    listed = raw if isinstance(raw, list) else [raw]
    if not listed:
        raise SpecProblem(where, "an empty list of conditions", "{path: /a, exists: true}")
    return tuple(
        c.check(x, (*where, i) if isinstance(raw, list) else where, False)
        for i, x in enumerate(listed)
    )


# ------------------------------------------------------------------ expressions


def _calc(value: dict[str, Any], where: tuple[Any, ...], c: Compilers) -> Calc:
    raw = value["$calc"]
    where = (*where, "$calc")
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
    for token in c.tokens(text, where):
        if isinstance(token, Ref):
            source.append(f" _{len(refs)} ")
            refs.append(token)
        else:
            source.append(token)
    named = _with(value, (*where[:-1], "$with"), c)
    try:
        tree = parse("".join(source), len(refs), tuple(named))
    except ExpressionError as exc:
        raise SpecProblem(where, f"{text!r}: {exc}", _CALC_HINT) from None
    tree = _numbered(tree, {name: f"_{len(refs) + i}" for i, name in enumerate(named)})
    one_ref = len(refs) == 1 and not named and isinstance(tree, ast.Name)
    return Calc([*refs, *named.values()], tree, one_ref, text, tuple(named))


def _with(value: dict[str, Any], where: tuple[Any, ...], c: Compilers) -> dict[str, Any]:
    """`$with: {NAME: VALUE}`: operands a reference cannot be, named in the expression."""
    raw = value.get("$with", {})
    if not isinstance(raw, dict):
        raise SpecProblem(where, "$with must be a mapping of name: value", "$with: {n: ...}")
    for name in raw:
        if not isinstance(name, str) or not name.isidentifier() or name in FUNCTIONS:
            raise SpecProblem(
                (*where, name),
                f"{name!r} cannot name an operand",
                "a name is letters, digits and _, and not one of " + ", ".join(FUNCTIONS),
            )
        if name.startswith("_"):
            raise SpecProblem((*where, name), f"{name!r} starts with _", "name it without _")
    return {name: c.value(v, (*where, name)) for name, v in raw.items()}


def _numbered(tree: ast.expr, names: dict[str, str]) -> ast.expr:
    """The tree with each `$with` name replaced by its operand's number."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            node.id = names[node.id]
    return tree


def parse(text: str, names: int = 0, words: tuple[str, ...] = ()) -> ast.expr:
    """The expression's tree, every node one `$calc` allows; ExpressionError otherwise.
    `names`: how many placeholders (`_0`...) it may hold; `words`: the `$with` names."""
    if len(text) > MAX_EXPRESSION:
        raise ExpressionError(f"longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ExpressionError("not an arithmetic expression") from None
    for seen, node in enumerate(ast.walk(tree), 1):
        if seen > MAX_NODES:
            raise ExpressionError(f"more than {MAX_NODES} operations and operands")
        _allowed(node, names, words)
    return tree


def _allowed(node: ast.AST, names: int, words: tuple[str, ...]) -> None:
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
        known = node.id in (*FUNCTIONS, *words) or (
            node.id.startswith("_") and node.id[1:].isdigit() and int(node.id[1:]) < names
        )
        if not known:
            raise ExpressionError(f"{node.id!r} is not a number or a reference")
    elif not isinstance(node, ast.operator | ast.unaryop | ast.expr_context):
        raise ExpressionError(f"{type(node).__name__} is not arithmetic")


# ------------------------------------------------------------------ let, for_each

MAX_LETS = 32
"""`let:` values of one tool."""


def compile_lets(raw: Any, c: Compilers) -> tuple[tuple[str, Any], ...]:
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
        out.append((name, c.value(value, ("let", name))))
    return tuple(out)


def check_names(
    lets: tuple[tuple[str, Any], ...], places: list[tuple[tuple[Any, ...], Any]]
) -> None:
    """Every `${let.NAME}` names a `let:` value; a value reads only those before it (so none
    reads itself); every `${each...}` has a walk around it that names its item. `places`:
    each compiled part of the behaviour with where it is written."""
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
            raise SpecProblem(where, *_stray(stray))
    for where, node in places:
        for ref in references(node):
            if ref.kind == "let" and ref.name not in known:
                raise SpecProblem(
                    where,
                    f"{ref} names no let value (defined: {', '.join(known) or 'none'})",
                    f"add `let: {{{ref.name}: ...}}` to the behavior",
                )


def _stray(ref: Ref) -> tuple[str, str]:
    if ref.name:
        return (
            f"{ref} reads the item {ref.name!r}, but no for_each or $each around it names one",
            f"name it where the list is walked: `for_each: {{{ref.name}: LIST}}`",
        )
    return (
        f"{ref} reads an item, but no $each or for_each gives one here",
        "read items inside `$each: LIST, $do: ...`, or in a precondition or effect with "
        "`for_each: LIST`; the items of `for_each: {NAME: LIST}` are ${each.NAME}",
    )


def item_outside_each(node: Any, bound: frozenset[str] = frozenset()) -> Ref | None:
    """The first `${each...}` reference of a compiled part that no walk around it names its
    item for (`bound`: the names walks around `node` give); None when every one has one."""
    if isinstance(node, Ref):
        if node.kind == "each" and node.name not in bound:
            return node
        return item_outside_each(node.path, bound) if node.path is not None else None
    inner: list[Any] = []
    walk: Walk | None = None
    if isinstance(node, Each):
        walk, inner = node.walk, [node.do, node.key, *node.when]
    elif isinstance(node, Check):
        if node.for_each is not None:
            walk, inner = node.for_each, list(node.checks)
        else:
            inner = [node.path, node.value, node.error, *(t[1] for t in node.tests), *node.any_of]
    elif isinstance(node, Effect):
        walk = node.for_each
        inner = [node.path, node.value, node.where, node.at, node.by, *node.when]
    elif isinstance(node, Tree):
        inner = list(node.value.values() if isinstance(node.value, dict) else node.value)
    elif isinstance(node, Text | Path):
        inner = list(node.parts)
    elif isinstance(node, Select):
        inner = [node.path, node.where, node.source]
    if walk is not None:
        found = item_outside_each(walk, bound)  # its lists are read outside it
        if found is not None:
            return found
        bound = bound | set(walk.names)
    for child in inner:
        found = item_outside_each(child, bound)
        if found is not None:
            return found
    return None


def for_each_check(
    raw: dict[str, Any], where: tuple[Any, ...], nested: bool, c: Compilers
) -> Check:
    """`{for_each: LIST, checks: [...]}`: each item in turn, its checks in order; the first
    that fails (its `error:`, `${each/...}` reading the item) is the call's error."""
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
    checks = tuple(c.check(x, (*where, "checks", i), nested) for i, x in enumerate(listed))
    walk = compile_walk(raw["for_each"], (*where, "for_each"), c)
    return Check(None, None, (), None, (), walk, checks)
