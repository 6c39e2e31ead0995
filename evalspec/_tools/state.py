"""The state engine: one call of a stateful tool against one conversation's state.

`run_behavior` checks the preconditions in order (the first that fails is the call's error
observation), applies the effects all or nothing, then renders the response from the new state.
It never raises on what a model sends: every problem is an error observation and the state is
left as it was.

States are never changed in place. An effect copies only the containers on its path and shares
the rest, so the state before a call stays intact (all or nothing costs nothing, and a snapshot
is the root itself), and a call's cost depends on what it touches, never on how many
conversations a run holds. Callers must not mutate a state they are given.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalspec._suite.state import evaluate
from evalspec._suite.state.computed import MAX_CALL_STEPS, Calc, Each, If, Sorted
from evalspec._suite.state.spec import (
    MAX_DEPTH,
    MAX_RENDERED_VALUES,
    MAX_STATE_CHARS,
    MAX_STATE_VALUES,
    MAX_TEXT,
    NUMERIC_OPS,
    measure,
    weigh,
)
from evalspec._suite.state.types import (
    Behavior,
    Check,
    Effect,
    Path,
    Ref,
    Select,
    Text,
    Tree,
    escape,
)
from evalspec._tools.simulated import values_match

Computed = Calc | If | Each | Sorted

DEFAULT_OUTPUT = "ok"
"""What a stateful tool without `response:` answers when its call succeeds."""
_MISSING = object()
_DELETE = object()
_TEXT = json.JSONEncoder(ensure_ascii=False, sort_keys=True)
MAX_INT_DIGITS = 4300
"""Digits of a whole number an increment may make: JSON text holds no longer one that Python
reads or writes (its int/str conversion limit), and a larger one in the state failed the run
when the transcript was written."""
_INT_LIMIT = 10**MAX_INT_DIGITS


class Failure(Exception):
    """A call that cannot be done: its message is the error observation."""


@dataclass(frozen=True, slots=True)
class Outcome:
    output: Any
    error: str | None
    state: Any
    """The state after the call (the same object when nothing changed)."""
    size: int
    """Values the state holds (tracked, so limits cost nothing per call)."""
    chars: int = 0
    """Characters the state holds written as JSON, about (tracked too)."""


def run_behavior(
    behavior: Behavior, state: Any, size: int, arguments: Any, chars: int | None = None
) -> Outcome:
    """Do one call; never raises, and on any error the state is the one given. `size` and
    `chars` are the state's values and characters (`chars` None: measured here)."""
    if chars is None:
        chars = weigh(state, MAX_STATE_VALUES)[2]
    if not isinstance(arguments, dict):
        return Outcome(None, "arguments must be a JSON object", state, size, chars)
    try:
        lets = _Lets(behavior.lets, arguments, state)
        failed = _first_failure(behavior.preconditions, _Context(arguments, state, lets))
        if failed is not None:
            return Outcome(None, failed, state, size, chars)
        new, new_size = state, _Size(size, chars)
        for effect in behavior.effects:
            new, new_size = _apply_effect(effect, _Context(arguments, new, lets), new_size)
        ctx = _Context(arguments, new, lets)
        output = render(behavior.response, ctx) if behavior.has_response else DEFAULT_OUTPUT
        return Outcome(output, None, new, new_size.values, new_size.chars)
    except Failure as exc:
        return Outcome(None, str(exc), state, size, chars)
    except RecursionError:  # pragma: no cover - depths are bounded; kept as a last guard
        return Outcome(None, "the value is nested too deeply", state, size, chars)


@dataclass(slots=True)
class _Size:
    """What the state holds while a call's effects apply: values and characters."""

    values: int
    chars: int


# ------------------------------------------------------------------ reading


class _Context:
    """What references read: the call's arguments, the current state, the call's `let:`
    values and the item of a `$each` or `for_each`; a budget shared with the item's."""

    __slots__ = ("args", "items", "lets", "spent", "state", "steps")

    def __init__(self, args: dict[str, Any], state: Any, lets: _Lets | None = None):
        self.args = args
        self.state = state
        self.lets = lets
        self.items: dict[str, Any] = {}
        """The items of the walks around: by name, "" for a walk of one plain list."""
        self.spent = [0, 0]  # values, characters: of one rendered value
        self.steps = lets.steps if lets is not None else [0]
        """Items walked and records scanned: one count for the whole call, its lets too."""

    def with_items(self, items: dict[str, Any], state: Any = _MISSING) -> _Context:
        """The same call, with a walk's items named (on `state` when given)."""
        inner = _Context(self.args, self.state if state is _MISSING else state, self.lets)
        inner.items = {**self.items, **items}
        inner.spent = self.spent
        inner.steps = self.steps
        return inner

    def step(self, count: int) -> None:
        """Items walked or records scanned: bounded for the whole call."""
        self.steps[0] += count
        if self.steps[0] > MAX_CALL_STEPS:
            raise Failure(
                f"the call would walk or scan more than {MAX_CALL_STEPS} items and records"
            )

    def spend(self, values: int = 0, chars: int = 0) -> None:
        self.spent[0] += values
        self.spent[1] += chars
        if self.spent[0] > MAX_RENDERED_VALUES:
            raise Failure(f"the value would hold more than {MAX_RENDERED_VALUES} values")
        if self.spent[1] > MAX_TEXT:
            raise Failure(f"the text would be longer than {MAX_TEXT} characters")


class _Lets:
    """A call's `let:` values, each computed when first read, on the state the call found
    (so a value reads the same in the preconditions, every effect and the response). It holds
    the call's count of steps, which every context of the call shares."""

    __slots__ = ("args", "known", "raw", "state", "steps")

    def __init__(self, raw: tuple[tuple[str, Any], ...], args: Any, state: Any):
        self.raw = dict(raw)
        self.args = args
        self.state = state
        self.known: dict[str, Any] = {}
        self.steps = [0]

    def get(self, name: str) -> Any:
        if name not in self.known:
            if name not in self.raw:
                raise Failure(f"no let value {name}")
            self.known[name] = render(self.raw[name], _Context(self.args, self.state, self))
        return self.known[name]


def pointer_text(parts: tuple[str, ...] | list[str]) -> str:
    return "".join("/" + escape(p) for p in parts) or "/"


def _index(node: list[Any], key: str) -> int | None:
    """A list index as RFC 6901 writes it (digits, no leading zero), if in range."""
    if not key.isdigit() or not key.isascii() or (len(key) > 1 and key[0] == "0"):
        return None
    i = int(key)
    return i if i < len(node) else None


def lookup(state: Any, parts: tuple[str, ...] | list[str]) -> Any:
    """The value at a pointer, or `_MISSING`."""
    node = state
    for key in parts:
        if isinstance(node, dict):
            node = node.get(key, _MISSING)
            if node is _MISSING:
                return _MISSING
        elif isinstance(node, list):
            i = _index(node, key)
            if i is None:
                return _MISSING
            node = node[i]
        else:
            return _MISSING
    return node


def get(state: Any, parts: tuple[str, ...] | list[str], default: Any = None) -> Any:
    found = lookup(state, parts)
    return default if found is _MISSING else found


def exists(state: Any, parts: tuple[str, ...] | list[str]) -> bool:
    return lookup(state, parts) is not _MISSING


def _ref_value(ref: Ref, ctx: _Context) -> Any:
    if ref.kind == "args":
        return ctx.args.get(ref.name)
    if ref.kind == "let":
        if ctx.lets is None:
            raise Failure(f"{ref} is read where no let value is defined")
        return ctx.lets.get(ref.name)
    parts = ref.pointer if ref.path is None else path_parts(ref.path, ctx)
    if ref.kind == "each":
        item = ctx.items.get(ref.name, _MISSING)
        if item is _MISSING:
            raise Failure(f"{ref} is read outside a $each or for_each that names its item")
        found = lookup(item, parts)
        if found is _MISSING:
            what = f"the item {ref.name}" if ref.name else "the item"
            raise Failure(f"{what} has nothing at {pointer_text(parts)}")
        return found
    found = lookup(ctx.state, parts)
    if found is _MISSING:
        raise Failure(f"the state has nothing at {pointer_text(parts)}")
    if ref.kind == "count":
        if not isinstance(found, list | dict):
            raise Failure(f"{pointer_text(parts)} is not a list or mapping to count")
        return len(found)
    return found


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else _TEXT.encode(value)


def render(template: Any, ctx: _Context) -> Any:
    """The JSON value a compiled template stands for, within the rendering budget."""
    if isinstance(template, Ref):
        value = _ref_value(template, ctx)
        count, depth = measure(value, MAX_RENDERED_VALUES)
        if depth > MAX_DEPTH:
            raise Failure(f"{template} is nested {depth} deep; the limit is {MAX_DEPTH}")
        ctx.spend(values=count, chars=len(value) if isinstance(value, str) else 0)
        return value
    if isinstance(template, Text):
        out = []
        for part in template.parts:
            text = part if isinstance(part, str) else _as_text(_ref_value(part, ctx))
            ctx.spend(chars=len(text))
            out.append(text)
        ctx.spend(values=1)
        return "".join(out)
    if isinstance(template, Computed):
        return evaluate.render_form(template, ctx, render, _holds, Failure)
    if isinstance(template, Tree):
        ctx.spend(values=1)
        if isinstance(template.value, dict):
            return {k: render(v, ctx) for k, v in template.value.items()}
        return [render(v, ctx) for v in template.value]
    if isinstance(template, Select):
        return _select(template, ctx)
    count, _ = measure(template, MAX_RENDERED_VALUES)
    ctx.spend(values=count)
    return template


def _select(sel: Select, ctx: _Context) -> Any:
    if sel.source is not None:
        found, name = _ref_value(sel.source, ctx), str(sel.source)
    else:
        parts = path_parts(sel.path, ctx)
        found, name = lookup(ctx.state, parts), pointer_text(parts)
        if found is _MISSING:
            raise Failure(f"the state has nothing at {name}")
    records = list(found.values()) if isinstance(found, dict) else found
    if not isinstance(records, list):
        raise Failure(f"{name} is not a list to select from")
    if sel.where is not None:
        pattern = render(sel.where, ctx)
        ctx.step(len(records))
        places = _positions(records, pattern, sel.ignore_case, found, first=sel.first)
    else:
        places = list(range(len(records)))
    if sel.key:
        keys: list[Any] = list(found) if isinstance(found, dict) else list(range(len(found)))
        records = [keys[i] for i in places]
    elif sel.where is not None:
        records = [records[i] for i in places]
    if sel.first:
        records = records[:1]
        value = records[0] if records else None
    else:
        value = records
    count, _ = measure(value, MAX_RENDERED_VALUES)
    ctx.spend(values=count)
    return value


def path_parts(path: Path, ctx: _Context) -> list[str]:
    """The literal parts of a path; a reference fills one part, whatever it holds."""
    out: list[str] = []
    for part in path.parts:
        if isinstance(part, str):
            out.append(part)
            continue
        pieces = []
        for piece in part.parts:
            if isinstance(piece, str):
                pieces.append(piece)
                continue
            value = _ref_value(piece, ctx)
            if isinstance(value, bool) or not isinstance(value, str | int):
                shown = _TEXT.encode(value)[:60] if value is not None else "nothing"
                raise Failure(f"{piece} is {shown}; a path part must be text or a whole number")
            pieces.append(str(value))
        text = "".join(pieces)
        if len(text) > MAX_TEXT:
            raise Failure(f"a path part is longer than {MAX_TEXT} characters")
        out.append(text)
    return out


# ------------------------------------------------------------------ preconditions


def same(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(same(v, b[k]) for k, v in a.items())
        )
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    return type(a) is type(b) and a == b


def _scalar_test(expected: Any) -> Callable[[Any], bool] | None:
    """A test equal to `values_match(expected, value)` for a scalar `expected`, without its
    generic dispatch; None for a list or mapping."""
    kind = type(expected)
    if kind is bool:
        return lambda value: value is expected
    if kind is int or kind is float:
        return lambda value: (type(value) is int or type(value) is float) and value == expected
    if kind is str:
        return lambda value: type(value) is str and value == expected
    if expected is None:
        return lambda value: value is None
    return None


def matcher(pattern: Any, fold: bool = False) -> Callable[[Any], bool]:
    """`values_match(pattern, record)` as a predicate, fast for the usual `where` (a mapping
    of field to scalar), which list scans call once per record. `fold`: texts match whatever
    their case (both sides lowercased, as Python's str.lower does)."""
    if fold:
        lowered = _lowered(pattern)
        texts = _folded_fields(lowered)
        if texts is not None:
            return lambda record: (
                type(record) is dict
                and all(type(record.get(k)) is str and record[k].lower() == v for k, v in texts)
            )
        return lambda record: values_match(lowered, record, fold=True)
    if type(pattern) is dict:
        tests = [(key, _scalar_test(value)) for key, value in pattern.items()]
        if all(test is not None for _, test in tests):
            fields = [(key, test) for key, test in tests if test is not None]

            def match(record: Any) -> bool:
                if type(record) is not dict:
                    return isinstance(record, dict) and values_match(pattern, record)
                for key, test in fields:
                    value = record.get(key, _MISSING)
                    if value is _MISSING or not test(value):
                        return False
                return True

            return match
    return lambda record: values_match(pattern, record)


def _folded_fields(pattern: Any) -> list[tuple[str, str]] | None:
    """A lowercased pattern that is a mapping of field to text, as pairs (the usual
    case-insensitive `$where`: an e-mail); None for any other."""
    if type(pattern) is not dict or not all(type(v) is str for v in pattern.values()):
        return None
    return list(pattern.items())


def _lowered(value: Any) -> Any:
    """A pattern with its texts lowercased."""
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, dict):
        return {k: _lowered(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lowered(v) for v in value]
    return value


_INDEXED_LEN = 16
"""Lists shorter than this are scanned: an index would not pay."""
_INDEXED_LISTS = 32
"""Lists indexed at once (each index keeps its list alive); the oldest goes first."""


class _FieldIndex:
    """Where a list's records hold each scalar value of one field, in list order."""

    __slots__ = ("positions", "records")

    def __init__(self, records: Any):
        self.records = records
        """The list indexed, or the mapping whose values are (kept alive, compared by id)."""
        self.positions: dict[str, list[int]] | None = None
        """None until the list is scanned a second time."""


_SCALAR_TYPES = (str, bool, int, float)
_INDEXES: dict[tuple[int, str, bool], _FieldIndex] = {}
"""By (list identity, field). States are never changed in place, so a list that a call leaves
alone is the same object in every later state and every conversation that shares it (a suite's
records): its index, built on its second scan, stays right for as long as the list lives."""


def _typed(value: Any) -> str | None:
    """A key under which `_scalar_test` equality is dict equality (numbers by value, true
    apart from 1); None for a value no scalar test matches (or NaN, equal to nothing).

    Text, never a number: Python hashes a number as itself modulo 2**61-1, so ids a state
    chooses as multiples of it all collide and an index of 20,000 records took quadratic
    time; a string's hash is keyed per process (SipHash), so no state can choose collisions.
    """
    kind = type(value)
    if kind is str:
        return "s" + str(value)
    if kind is bool:
        return "b1" if value else "b0"
    if kind is int:
        return "n" + format(value, "x")  # hexadecimal: linear in the digits, unlike decimal
    if kind is float and value == value:
        # equal numbers, one key: 2.0 is 2 (exactly, as a whole number), 2.5 its repr
        return "n" + format(int(value), "x") if value.is_integer() else "f" + repr(value)
    if value is None:
        return "z"
    return None


def _candidates(
    records: list[Any], pattern: Any, fold: bool = False, owner: Any = None
) -> list[int] | None:
    """Positions of the only records that can match `pattern` (all others fail its first
    scalar field), from an index; None when the list is to be scanned whole. `owner`: the
    mapping whose values `records` lists (indexed by its identity); `fold`: texts lowercased."""
    if len(records) < _INDEXED_LEN or type(pattern) is not dict:
        return None
    scalar = [(k, v) for k, v in pattern.items() if type(v) in _SCALAR_TYPES or v is None]
    if not scalar:
        return None
    field, expected = scalar[0]
    owner = records if owner is None else owner
    key = (id(owner), field, fold)
    index = _INDEXES.get(key)
    if index is None or index.records is not owner:
        if len(_INDEXES) >= _INDEXED_LISTS:
            del _INDEXES[next(iter(_INDEXES))]
        _INDEXES[key] = _FieldIndex(owner)
        return None  # a list scanned once is not worth indexing yet
    if index.positions is None:
        positions: dict[str, list[int]] = {}
        for i, record in enumerate(records):
            if type(record) is not dict:
                if isinstance(record, dict):  # a mapping type of its own: scan, as values_match
                    del _INDEXES[key]
                    return None
                continue  # not a record: matches no mapping pattern
            value = record.get(field, _MISSING)
            typed = _typed(value.lower() if fold and type(value) is str else value)
            if typed is not None:
                positions.setdefault(typed, []).append(i)
        index.positions = positions
    typed = _typed(expected.lower() if fold and type(expected) is str else expected)
    return [] if typed is None else index.positions.get(typed, [])


def _positions(
    records: list[Any], pattern: Any, fold: bool, owner: Any, *, first: bool = False
) -> list[int]:
    """Where the records that match `pattern` are, in order (only the first if `first`).

    A list scanned again (a suite's records, shared by every conversation and call that leaves
    them alone) is looked up in an index instead of matched record by record."""
    match = matcher(pattern, fold)
    candidates = _candidates(records, pattern, fold, owner)
    pool = range(len(records)) if candidates is None else candidates
    if first:
        return next(([i] for i in pool if match(records[i])), [])
    return [i for i in pool if match(records[i])]


def matching(records: list[Any], pattern: Any, *, first: bool = False) -> list[Any]:
    """The records that `values_match(pattern, record)`, in order (only the first if `first`)."""
    return [records[i] for i in _positions(records, pattern, False, None, first=first)]


def _contains(subject: Any, operand: Any) -> bool:
    if isinstance(subject, list):
        return bool(matching(subject, operand, first=True))
    if isinstance(subject, str):
        return isinstance(operand, str) and operand in subject
    if isinstance(subject, dict):
        return isinstance(operand, str) and operand in subject
    return False


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _first_failure(checks: tuple[Check, ...], ctx: _Context) -> str | None:
    for check in checks:
        why = _failure(check, ctx)
        if why is not None:
            if check.error is None:
                return why
            message = render(check.error, ctx)
            return _as_text(message)[:MAX_TEXT]
    return None


def _holds(checks: tuple[Check, ...], ctx: _Context) -> bool:
    return all(_failure(check, ctx) is None for check in checks)


def _failure(check: Check, ctx: _Context) -> str | None:
    """Why the check fails (a generated message), or None when it holds."""
    if check.checks:
        return _each_failure(check, ctx)
    if check.any_of:
        reasons = []
        for alternative in check.any_of:
            why = _failure(alternative, ctx)
            if why is None:
                return None
            reasons.append(why)
        return "none of these holds: " + "; ".join(reasons)
    if check.path is not None:
        parts = path_parts(check.path, ctx)
        subject = lookup(ctx.state, parts)
        name = pointer_text(parts)
    else:
        subject = render(check.value, ctx)
        name = "the value"
    for op, raw in check.tests:
        if op == "exists":
            if (subject is not _MISSING) != raw:
                return f"{name} does not exist" if raw else f"{name} already exists"
            continue
        if subject is _MISSING:
            return f"{name} does not exist"
        operand = render(raw, ctx)
        if op == "equals" and not same(subject, operand):
            return f"{name} is {_short(subject)}, not {_short(operand)}"
        if op == "not_equals" and same(subject, operand):
            return f"{name} is {_short(subject)}"
        if op == "contains" and not _contains(subject, operand):
            return f"{name} has nothing matching {_short(operand)}"
        if op == "not_contains" and _contains(subject, operand):
            return f"{name} already has something matching {_short(operand)}"
        if op in ("min", "max"):
            value, bound = _number(subject), _number(operand)
            if value is None or bound is None:
                why = f"not a number to compare with {_short(operand)}"
                return f"{name} is {_short(subject)}, {why}"
            if op == "min" and value < bound:
                return f"{name} is {_short(subject)}, below the minimum {_short(operand)}"
            if op == "max" and value > bound:
                return f"{name} is {_short(subject)}, above the maximum {_short(operand)}"
    return None


def _each_failure(check: Check, ctx: _Context) -> str | None:
    """A `for_each` precondition: the first item's first failing check (its error)."""
    for inner in evaluate.walk(check.for_each, ctx, render, Failure):
        failed = _first_failure(check.checks, inner)
        if failed is not None:
            return failed
    return None


def _short(value: Any) -> str:
    if value is _MISSING:
        return "nothing"
    if isinstance(value, list | dict) and len(value) > 20:
        kind = "list" if isinstance(value, list) else "mapping"
        return f"a {kind} of {len(value)}"
    text = _TEXT.encode(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ------------------------------------------------------------------ effects


def _apply_effect(effect: Effect, ctx: _Context, size: _Size) -> tuple[Any, _Size]:
    """One effect as written: skipped when its `when:` fails; once per item of its
    `for_each:` (the list as the effect found it), each on the state the one before left."""
    if effect.for_each is None:
        if effect.when and not _holds(effect.when, ctx):
            return ctx.state, size
        return _apply(effect, ctx, size)
    state = ctx.state
    for item in list(evaluate.walk(effect.for_each, ctx, render, Failure)):
        inner = item.with_items({}, state)
        if effect.when and not _holds(effect.when, inner):
            continue
        state, size = _apply(effect, inner, size)
    return state, size


def _apply(effect: Effect, ctx: _Context, size: _Size) -> tuple[Any, _Size]:
    parts = path_parts(effect.path, ctx)
    delta = [0]
    chars = [size.chars]

    def counted(value: Any, at_depth: int) -> Any:
        count, depth, length = weigh(value, MAX_STATE_VALUES)
        if at_depth + depth > MAX_DEPTH:
            raise Failure(f"the state would be nested deeper than {MAX_DEPTH}")
        delta[0] += count
        chars[0] += length
        if chars[0] > MAX_STATE_CHARS:  # at once: a `where` may copy a text into every record
            raise Failure(
                f"the state would hold more than {MAX_STATE_CHARS} characters written as JSON"
            )
        return value

    def dropped(value: Any) -> None:
        count, _, length = weigh(value, MAX_STATE_VALUES, 1 << 62)
        delta[0] -= count
        chars[0] -= length

    op = effect.op
    if op == "append":
        value = render(effect.value, ctx)

        def add(old: Any) -> Any:
            if old is _MISSING or not isinstance(old, list):
                raise Failure(f"{pointer_text(parts)} is not a list to append to")
            return [*old, counted(value, len(parts) + 1)]

        new = _update(ctx.state, parts, add)
    elif effect.where is not None:
        new = _apply_where(effect, ctx, parts, counted, dropped)
    elif op == "set":
        value = render(effect.value, ctx)

        def put(old: Any) -> Any:
            if old is not _MISSING:
                dropped(old)
            return counted(value, len(parts))

        new = _update(ctx.state, parts, put, creating=True)
    elif op == "remove":

        def drop(old: Any) -> Any:
            if old is _MISSING:
                raise Failure(f"nothing to remove at {pointer_text(parts)}")
            dropped(old)
            return _DELETE

        new = _update(ctx.state, parts, drop)
    else:  # increment, decrement
        by = _step(effect, ctx)
        new = _update(ctx.state, parts, _renumber(by, parts, effect.round, counted, dropped))
    values = size.values + delta[0]
    if values > MAX_STATE_VALUES:
        raise Failure(f"the state would hold more than {MAX_STATE_VALUES} values")
    return new, _Size(values, chars[0])


def _renumber(
    by: int | float,
    parts: Any,
    digits: int | None,
    counted: Callable[[Any, int], Any],
    dropped: Callable[[Any], None],
) -> Callable[[Any], Any]:
    """An increment's change, its number's characters charged (a number may grow digits)."""

    def change(old: Any) -> Any:
        new = _incremented(old, by, parts, digits)
        dropped(old)
        return counted(new, 0)

    return change


def _step(effect: Effect, ctx: _Context) -> int | float:
    by = _number(render(effect.by, ctx))
    if by is None:
        raise Failure(f"{effect.op}'s `by` is not a number")
    return -by if effect.op == "decrement" else by


def _incremented(old: Any, by: int | float, parts: Any, digits: int | None = None) -> Any:
    if old is _MISSING:
        raise Failure(f"the state has nothing at {pointer_text(parts)}")
    value = _number(old)
    if value is None:
        raise Failure(f"{pointer_text(parts)} is {_short(old)}, not a number to increment")
    try:
        result = value + by
    except OverflowError:  # a whole number too large for a float, plus a fraction
        raise Failure(f"{pointer_text(parts)} would not be a finite number") from None
    if result != result or result in (float("inf"), float("-inf")):
        raise Failure(f"{pointer_text(parts)} would not be a finite number")
    if type(result) is int and not -_INT_LIMIT < result < _INT_LIMIT:
        raise Failure(f"{pointer_text(parts)} would have more than {MAX_INT_DIGITS} digits")
    return result if digits is None or type(result) is int else round(result, digits)


def _apply_where(
    effect: Effect,
    ctx: _Context,
    parts: list[str],
    counted: Callable[[Any, int], Any],
    dropped: Callable[[Any], None],
) -> Any:
    """set / increment / decrement / remove on every record of the list at `parts` matching `where`;
    on a mapping, on every value that matches (its key kept; removed with it)."""
    match = matcher(render(effect.where, ctx))
    at = path_parts(effect.at, ctx) if effect.at is not None else []
    value = render(effect.value, ctx) if effect.op == "set" else None
    by = _step(effect, ctx) if effect.op in NUMERIC_OPS else 0

    def changed(record: Any) -> Any:
        """The record after the effect; _DELETE when it goes."""
        if effect.op == "remove":
            if at:
                return _update(record, at, _remover(at, dropped))
            dropped(record)
            return _DELETE
        if effect.op == "set":
            return _update(record, at, _setter(value, len(parts) + 1 + len(at)))
        return _update(record, at, _renumber(by, [*parts, *at], effect.round, counted, dropped))

    todo = [1 if effect.first else -1]  # matching records still to change (-1: all)

    def picked(record: Any) -> bool:
        if todo[0] == 0 or not match(record):
            return False
        todo[0] -= 1
        return True

    def each(old: Any) -> Any:
        if isinstance(old, dict):
            ctx.step(len(old))
            kept = {}
            for key, record in old.items():
                new = changed(record) if picked(record) else record
                if new is not _DELETE:
                    kept[key] = new
            return kept
        if old is _MISSING or not isinstance(old, list):
            raise Failure(f"{pointer_text(parts)} is not a list or mapping of records")
        ctx.step(len(old))
        out = []
        for record in old:
            new = changed(record) if picked(record) else record
            if new is not _DELETE:
                out.append(new)
        return out

    def _setter(v: Any, depth: int) -> Callable[[Any], Any]:
        def put(o: Any) -> Any:
            if o is not _MISSING:
                dropped(o)
            return counted(v, depth)

        return put

    return _update(ctx.state, parts, each)


def _remover(at: list[str], dropped: Callable[[Any], None]) -> Callable[[Any], Any]:
    def drop(old: Any) -> Any:
        if old is _MISSING:
            raise Failure(f"nothing to remove at {pointer_text(at)} in a matching record")
        dropped(old)
        return _DELETE

    return drop


def _update(
    node: Any,
    parts: list[str],
    change: Callable[[Any], Any],
    *,
    creating: bool = False,
    above: tuple[str, ...] = (),
) -> Any:
    """A copy of `node` with the value at `parts` replaced by `change(old)` (old `_MISSING`
    when absent; `_DELETE` removes it). Only containers on the path are copied."""
    if not parts:
        result = change(node)
        if result is _DELETE:
            raise Failure("the whole state cannot be removed")
        return result
    key, rest = parts[0], parts[1:]
    if isinstance(node, dict):
        copy = dict(node)
        if rest:
            if key not in node:
                raise Failure(f"the state has nothing at {pointer_text([*above, key])}")
            copy[key] = _update(node[key], rest, change, creating=creating, above=(*above, key))
            return copy
        result = change(node.get(key, _MISSING))
        if result is _DELETE:
            copy.pop(key, None)
        else:
            copy[key] = result
        return copy
    if isinstance(node, list):
        items = list(node)
        if key == "-" and not rest and creating:
            result = change(_MISSING)
            if result is not _DELETE:
                items.append(result)
            return items
        i = _index(node, key)
        if i is None:
            where = pointer_text(above)
            raise Failure(f"{key!r} is not an index of the {len(node)} items at {where}")
        if rest:
            items[i] = _update(node[i], rest, change, creating=creating, above=(*above, key))
            return items
        result = change(node[i])
        if result is _DELETE:
            del items[i]
        else:
            items[i] = result
        return items
    raise Failure(f"{pointer_text(above)} is {_short(node)}, not a list or mapping")
