"""Every difference between two versions of a suite, by content, and applicable one at a time.

Review names a change by what it was and what it is (`tool place_order · effect 1 (set
/orders/-/status) · value: "placed" -> "pending"`), never by position alone; and to say which
change moved a verdict it re-scores with each change applied alone. Both need the same thing:
the differences as edits that know where they sit (`steps`, to apply them to a copy of the
base) and how a reader names that place (`where`). One generic walk over the suite's records
finds them all, so a new element of the language is named the day it exists.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evalspec._compare.words import clipped
from evalspec._suite import model
from evalspec._suite.state import computed as compute
from evalspec._suite.state import types as spec
from evalspec._suite.walk import record_name
from evalspec._util.json_values import MAX_SHORT, short

Step = str | int
"""A field's name, an index in a tuple, or a key of a mapping."""


class _Missing:
    def __repr__(self) -> str:
        return "(none)"


MISSING: Any = _Missing()
"""The absent side of an added or removed mapping key."""

MAX_EDITS = 200
"""Edits listed between two versions of one record; past it, one line says how many more."""


@dataclass(frozen=True)
class Edit:
    """One difference: where it sits, its value before and after."""

    steps: tuple[Step, ...]
    """Where it sits, from the record the edits were taken of: to apply it to a copy."""
    where: tuple[str, ...]
    """How a reader names the place: ("tool place_order", "effect 1 (set /orders/-/status)",
    "value")."""
    before: Any
    after: Any
    summary: str = ""
    """For a whole list that changed: `tool lookup added`, said instead of before -> after."""
    view: tuple[Any, Any] | None = None
    """Both sides as the suite writes them, when the record holds them otherwise (a check's
    `reaches: {/a: 1}` is held as pairs): shown instead of `before` and `after`."""

    @property
    def text(self) -> str:
        place = " · ".join(clipped(part, MAX_SHORT) for part in self.where if part)
        if self.summary:
            return f"{place} · {self.summary}" if place else self.summary
        before, after = self.view or (self.before, self.after)
        return f"{place}: {moved(before, after)}"

    def within(self, n: int) -> Edit:
        """The same edit named from `n` steps down (a case's edits without `case 'x'`)."""
        return dataclasses.replace(self, where=self.where[n:])


def shown(value: Any) -> str:
    """A value as a reviewer reads it, state-language templates as written in the YAML."""
    if value is MISSING:
        return "(none)"
    return short(_source(value))


def moved(before: Any, after: Any, limit: int = MAX_SHORT) -> str:
    """`before -> after`, each shortened; when both run past `limit` and begin alike, the
    part they share is elided, so the shortened sides never read the same while the values
    differ (two long judge criteria that differ in their last words)."""
    return elided(_texts(before), _texts(after), limit)


def elided(b: str, a: str, limit: int = MAX_SHORT) -> str:
    """`b -> a` for two texts already as shown (see `moved`)."""
    if len(b) <= limit and len(a) <= limit:
        return f"{b} -> {a}"
    pairs = enumerate(zip(b, a, strict=False))
    same = next((i for i, (x, y) in pairs if x != y), min(len(b), len(a)))
    start = same - _CONTEXT if same > _CONTEXT + 3 else 0
    if start and b[start:] and a[start:]:
        b, a = "..." + b[start:], "..." + a[start:]
    return f"{clipped(b, limit)} -> {clipped(a, limit)}"


_CONTEXT = 20
"""Characters kept before the first difference of two long values."""


def _texts(value: Any) -> str:
    return "(none)" if value is MISSING else short(_source(value), 1 << 30)


def _source(value: Any) -> Any:
    """Compiled state-language values back to what the suite says (`${args.id}`)."""
    if isinstance(value, spec.Ref | spec.Path):
        return str(value)
    if isinstance(value, spec.Text):
        return "".join(str(p) for p in value.parts)
    if isinstance(value, compute.Calc | compute.If | compute.Each | compute.Walk | compute.Sorted):
        return _computed(value)
    if isinstance(value, spec.Tree):
        return _source(value.value)
    if isinstance(value, spec.Select):
        source = value.path if value.source is None else value.source
        out: dict[str, Any] = {"$select": str(source)}
        if value.where is not None:
            out["$where"] = _source(value.where)
        out |= {"$first": True} if value.first else {}
        out |= {"$ignore_case": True} if value.ignore_case else {}
        return out | ({"$key": True} if value.key else {})
    if isinstance(value, dict):
        return {k: _source(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_source(v) for v in value]
    if isinstance(value, set | frozenset):  # never Python's repr in a review
        return sorted((_source(v) for v in value), key=str)
    if isinstance(value, model.CriticSpec | model.FinalAnswerCheck | model.EvaluatorSpec):
        return _as_written(value)
    if isinstance(value, model.StateCheck):  # `/a/b: value`, `{exists: false}` or a critic
        if value.absent:
            return {"exists": False}
        spec_ = value.spec
        if spec_.kind == "binary" and spec_.weight == 1.0 and not spec_.required:
            return _source(value.expected)
        return _as_written(spec_) | ({"value": _source(value.expected)} if value.expected else {})
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _source(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.compare and getattr(value, f.name) != f.default
        }
    return value


def _computed(
    value: compute.Calc | compute.If | compute.Each | compute.Walk | compute.Sorted,
) -> Any:
    """A computed value as the suite writes it: `{$calc: "round(${let.x}, 2)"}`."""
    if isinstance(value, compute.Calc):
        named = value.value[len(value.value) - len(value.names) :]
        out: dict[str, Any] = {"$calc": value.text}
        return out | (
            {"$with": dict(zip(value.names, _source(named), strict=True))} if named else {}
        )
    if isinstance(value, compute.Walk):
        lists = _source(value.value)
        return lists[0] if value.names == ("",) else dict(zip(value.names, lists, strict=True))
    if isinstance(value, compute.Sorted):
        return {"$sorted": _source(value.value[0])}
    if isinstance(value, compute.If):
        checks = _source(value.checks)
        return {
            "$if": checks[0] if len(checks) == 1 else checks,
            "$then": _source(value.then),
            "$else": _source(value.otherwise),
        }
    out = {"$each": _computed(value.walk), "$do": _source(value.do)}
    out |= {"$when": _source(value.when)} if value.when else {}
    return out | ({"$key": _source(value.key)} if value.keyed else {})


def _as_written(check: model.CriticSpec | model.FinalAnswerCheck | model.EvaluatorSpec) -> Any:
    """A critic or check as the suite writes it: `{regex: {pattern: "^P"}}`, with its weight
    and `required` when they are not the defaults."""
    out: dict[str, Any] = {check.kind: _source(check.params) or True}
    for name in ("weight", "required"):
        f = next((f for f in dataclasses.fields(check) if f.name == name), None)
        if f is not None and getattr(check, name) != f.default:
            out[name] = getattr(check, name)
    return out


# ---------------------------------------------------------------- names of list items


def _key_of(item: Any) -> Any:
    """What pairs an item of a list across versions: a tool by name, a critic by field; None
    for items paired by position (turns, effects, messages)."""
    if isinstance(item, model.Tool | model.Case | model.ModelSpec):
        return item.name
    if isinstance(item, model.CriticSpec):
        return item.field
    if isinstance(item, model.StateCheck):
        return item.pointer
    if isinstance(item, model.FinalAnswerCheck):
        return item.kind
    if isinstance(item, dict) and isinstance(item.get("name"), str):
        return item["name"]  # a judge rubric's criterion
    return None


def _item_name(item: Any, index: int, field: str) -> str:
    """How a reader names an item of a list, at most MAX_SHORT characters (a state check's
    pointer, a case's name are the suite's text, of any length)."""
    return clipped(_named_item(item, index, field), MAX_SHORT)


def _named_item(item: Any, index: int, field: str) -> str:
    if isinstance(item, spec.Effect):
        at = f" ... {item.at}" if item.at is not None else ""
        return f"effect {index + 1} ({item.op} {item.path}{at})"
    if isinstance(item, spec.Check):
        return f"precondition {index + 1}" + (f" ({item.path})" if item.path else "")
    if isinstance(item, model.SimulatedResponse):
        return f"response {index + 1}" + (f" (when {short(item.when)})" if item.when else "")
    if isinstance(item, model.Message):
        return f"{item.role} message {index + 1}"
    if isinstance(item, model.UserCheck):
        return f"check {index + 1} ({item.kind})"
    if isinstance(item, model.Fault) and item.kind == "inject":
        return f"injection into {item.tool}'s output"  # a case's `inject:`, kept as a fault
    if isinstance(item, model.Fault):
        return f"fault {index + 1} ({item.tool} {item.kind})"
    if isinstance(item, model.ForbiddenCall):
        return f"forbidden call {index + 1} ({item.tool})"
    if isinstance(item, dict) and isinstance(item.get("name"), str):
        return f"{_SINGULAR.get(field, field)} {item['name']}"
    return record_name(item, index) or f"{_SINGULAR.get(field, field)} {index + 1}"


_SINGULAR: Mapping[str, str] = {
    "criteria": "criterion",
    "faults": "fault",
    "forbidden_calls": "forbidden call",
    "checks": "check",
    "turns": "turn",
}
"""A list's item named as the suite's reader says one of them."""


_FIELD_NAMES: Mapping[str, str] = {"behavior": "", "params": "", "expect": "", "args": ""}
"""Fields said otherwise than by their name ("" for none: a tool's behaviour is its parts, a
critic's parameters are the critic's, an expected call's arguments are the call's)."""


# ---------------------------------------------------------------- the walk


def edits(before: Any, after: Any) -> list[Edit]:
    """Every difference between two versions of a record (a suite, a case, a tool)."""
    out: list[Edit] = []
    _diff(before, after, (), (), out)
    if len(out) > MAX_EDITS:
        more = len(out) - MAX_EDITS
        out = out[:MAX_EDITS]
        out.append(Edit((), (), None, None, f"... and {more} more differences"))
    return out


def _diff(b: Any, a: Any, steps: tuple[Step, ...], where: tuple[str, ...], out: list[Edit]) -> None:
    if b is a or b == a:
        return
    if type(b) is spec.Tree and type(a) is spec.Tree:  # a value with `${...}` in it: its parts
        _diff(b.value, a.value, (*steps, "value"), where, out)
        return
    if _is_record(b) and type(b) is type(a) and _kind(b) == _kind(a):
        for f in dataclasses.fields(b):
            if f.compare:
                _field(getattr(b, f.name), getattr(a, f.name), f.name, steps, where, out)
        return
    if isinstance(b, dict) and isinstance(a, dict):
        for key in list(b) + [k for k in a if k not in b]:
            label = "" if _named_items(b.get(key)) or _named_items(a.get(key)) else str(key)
            _diff(b.get(key, MISSING), a.get(key, MISSING), (*steps, key), (*where, label), out)
        return
    if (
        isinstance(b, tuple | list)
        and isinstance(a, tuple | list)
        and _items(b, a, steps, where, out)
    ):
        return
    out.append(Edit(steps, where, b, a))


def _field(
    b: Any, a: Any, name: str, steps: tuple[Step, ...], where: tuple[str, ...], out: list[Edit]
) -> None:
    if b == a:
        return
    written = _WRITTEN.get(name)
    if written is not None and (held := written(b, a)) is not None:
        label, view = held
        out.append(Edit((*steps, name), (*where, label), b, a, view=view))
        return
    if name == "params" and _shorthand(b) and _shorthand(b) == _shorthand(a):
        key = _shorthand(b)  # `{one_of: [7, 35]}` is held as {"values": [7, 35]}
        _diff(b[key], a[key], (*steps, name, key), where, out)
        return
    label = _FIELD_NAMES.get(name, name)
    if (b is None) != (a is None) and not (_is_record(b) or _is_record(a)):
        view = (MISSING if b is None else b, MISSING if a is None else a)  # a key not set
        out.append(Edit((*steps, name), (*where, label), b, a, view=view))
        return
    if _is_record(b) or _is_record(a):
        label = record_name(a if a is not None else b, None) or label
    elif isinstance(b, tuple) and isinstance(a, tuple) and any(map(_is_record, (*b, *a))):
        label = ""  # each item says what it is: `tool lookup`, `effect 1 (...)`
    _diff(b, a, (*steps, name), (*where, label), out)


def _items(
    b: tuple[Any, ...] | list[Any],
    a: tuple[Any, ...] | list[Any],
    steps: tuple[Step, ...],
    where: tuple[str, ...],
    out: list[Edit],
) -> bool:
    """Pair two lists' records (by name where they have one, else by position) and diff each
    pair; False for lists of plain values, which are one edit with both sides shown."""
    if not any(_is_record(x) for x in (*b, *a)):
        keys = [_key_of(x) for x in (*b, *a)]
        if not keys or None in keys:  # plain values: one edit, both sides shown
            return False
    field = steps[-1] if steps and isinstance(steps[-1], str) else ""
    keys_b, keys_a = [_key_of(x) for x in b], [_key_of(x) for x in a]
    keyed = None not in keys_b + keys_a
    if keyed and len(set(keys_b)) == len(b) and len(set(keys_a)) == len(a):
        _keyed_items(b, a, keys_b, keys_a, steps, where, out)
        return True
    n = min(len(b), len(a))
    for i in range(n):
        _diff(b[i], a[i], (*steps, i), (*where, _item_name(a[i], i, field)), out)
    if len(b) != len(a):  # the items past the shorter list: added, or removed, as one edit
        extra = a[n:] if len(a) > n else b[n:]
        names = [_item_name(x, n + i, field) for i, x in enumerate(extra)]
        verb = "added" if len(a) > n else "removed"
        after = _like(b, (*b[:n], *a[n:])) if len(a) > n else b[:n]
        out.append(Edit(steps, where, b, after, f"{', '.join(names)} {verb}"))
    return True


def _keyed_items(
    b: tuple[Any, ...] | list[Any],
    a: tuple[Any, ...] | list[Any],
    keys_b: list[Any],
    keys_a: list[Any],
    steps: tuple[Step, ...],
    where: tuple[str, ...],
    out: list[Edit],
) -> None:
    """Items paired by name: each pair diffed; those added or removed (or a new order) one
    edit of the list, which applied alone adds and removes them and keeps the base's order."""
    field = steps[-1] if steps and isinstance(steps[-1], str) else ""
    at = {k: i for i, k in enumerate(keys_b)}
    for j, key in enumerate(keys_a):
        if key in at:
            i = at[key]
            _diff(b[i], a[j], (*steps, i), (*where, _item_name(a[j], j, field)), out)
    added = [j for j, k in enumerate(keys_a) if k not in at]
    gone = [i for i, k in enumerate(keys_b) if k not in set(keys_a)]
    said = [f"{_item_name(a[j], j, field)} added{_whole(a[j], ': {}')}" for j in added]
    said += [f"{_item_name(b[i], i, field)} removed{_whole(b[i], ' (was {})')}" for i in gone]
    if said:
        kept = tuple(x for i, x in enumerate(b) if i not in gone)
        after = _like(b, (*kept, *(a[j] for j in added)))
        out.append(Edit(steps, where, b, after, "; ".join(said)))
    elif keys_a != keys_b:
        out.append(Edit(steps, where, b, b, f"{field} reordered"))


def _like(held: Any, items: tuple[Any, ...]) -> Any:
    """`items` as the kind of sequence `held` is: a judge's criteria stay a list when applied."""
    return list(items) if isinstance(held, list) else items


def _whole(item: Any, form: str) -> str:
    """An added or removed item shown whole, but for a case or a tool: its name says it, and
    the review lists a case added with its own row."""
    return "" if isinstance(item, model.Case | model.Tool) else form.format(shown(item))


def _kind(record: Any) -> Any:
    """What a record is (a critic's `kind`, an effect's `op`): when it changes, the record's
    other fields mean other things, so the record is one edit, never applied in parts."""
    return getattr(record, "kind", None), getattr(record, "op", None)


def _is_record(value: Any) -> bool:
    """A record of the suite, diffed field by field; a state-language value (`${args.id}`,
    a template text, a `$select`) is one value, shown as the suite writes it."""
    return (
        dataclasses.is_dataclass(value)
        and not isinstance(value, type)
        and not isinstance(value, _STATE_VALUES)
    )


_STATE_VALUES = (spec.Ref, spec.Path, spec.Text, spec.Select, spec.Tree)


def _named_items(value: Any) -> bool:
    """A list whose items say what they are (`criterion truthful`): its own name is not said."""
    return isinstance(value, list) and bool(value) and None not in map(_key_of, value)


def _shorthand(params: Any) -> str:
    """The one parameter a check's short form holds (`{one_of: [7, 35]}`, `{contains: [a]}`):
    said by its value alone, never by the name evalspec keeps it under."""
    if isinstance(params, dict) and len(params) == 1 and "values" in params:
        return "values"
    return ""


def _pairs_as_mapping(b: Any, a: Any) -> tuple[str, tuple[Any, Any]]:
    """A simulated user's `reaches: {/a: 1}`, held as ((pointer, value), ...)."""
    return "reaches", (dict(b), dict(a))


def _calls_as_written(b: Any, a: Any) -> tuple[str, tuple[Any, Any]]:
    """A turn's `user_calls: [{toggle: {on: false}}]`, held as ((name, arguments), ...)."""
    return "user_calls", ([{n: args} for n, args in b], [{n: args} for n, args in a])


def _is_pairs(value: Any) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) for x in value
    )


def _into_description(described: Any) -> list[dict[str, str]]:
    """A case's `inject: [{tool: t, into: description, text: ...}]`, held as (tool, text)."""
    return [{"tool": tool, "into": "description", "text": text} for tool, text in described]


_WRITTEN: Mapping[str, Callable[[Any, Any], tuple[str, tuple[Any, Any]] | None]] = {
    "state": lambda b, a: _pairs_as_mapping(b, a) if _is_pairs(b) and _is_pairs(a) else None,
    "user_calls": lambda b, a: _calls_as_written(b, a) if _is_pairs(b) and _is_pairs(a) else None,
    "described": lambda b, a: ("inject", (_into_description(b), _into_description(a))),
}
"""Fields the records hold otherwise than the suite writes them: one edit, shown as written."""


# ---------------------------------------------------------------- applying one edit


def apply(root: Any, edit: Edit) -> Any:
    """A copy of `root` (the record the edit was taken of, in its `before` version) with this
    one edit made."""
    return _set(root, edit.steps, edit.after)


def _set(node: Any, steps: tuple[Step, ...], value: Any) -> Any:
    if not steps:
        return value
    step, rest = steps[0], steps[1:]
    if _is_record(node):
        assert isinstance(step, str)
        return dataclasses.replace(node, **{step: _set(getattr(node, step), rest, value)})
    if isinstance(node, tuple):
        assert isinstance(step, int)
        return (*node[:step], _set(node[step], rest, value), *node[step + 1 :])
    if isinstance(node, list):
        assert isinstance(step, int)
        return [*node[:step], _set(node[step], rest, value), *node[step + 1 :]]
    copy = dict(node)
    new = _set(copy.get(step, MISSING), rest, value)
    if new is MISSING:
        copy.pop(step, None)
    else:
        copy[step] = new
    return copy
