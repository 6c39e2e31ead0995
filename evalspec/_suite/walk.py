"""Every configuration record of a suite, with where it sits: one traversal for all who ask.

What a suite lets evalspec do (call an endpoint with a key, start a process, read a cache) sits
in records nested at many depths: a judge in a case's `expect`, in a turn's `expect`, in a
conversation's evaluators. Code that lists such places by hand forgets the next nesting a new
feature adds (a turn judge once went to a pull request's server unlisted). This walk follows
every field whose declared type can hold a suite record, so a record is found wherever the
language puts it, and data (states, arguments, outputs, messages) is never mistaken for one.
"""

from __future__ import annotations

import dataclasses
import types
import typing
import weakref
from collections.abc import Callable
from typing import Any

from evalspec._suite import model

Path = tuple[str, ...]
"""Where a record sits, outermost first, as a reader names it: ("case 'refund'", "turn 2")."""


def _dataclasses_in(hint: Any) -> frozenset[type]:
    """The record (dataclass) types that values of this declared type can be or hold."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return frozenset((hint,))
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType, tuple, list):
        args = typing.get_args(hint)
        return frozenset().union(*(_dataclasses_in(a) for a in args if a is not Ellipsis))
    return frozenset()


_HINTS: dict[type, dict[str, frozenset[type]]] = {}


def _field_types(cls: type) -> dict[str, frozenset[type]]:
    """Each field of `cls` that can hold records, with their types (read once per class)."""
    known = _HINTS.get(cls)
    if known is None:
        from evalspec._suite.state.types import Behavior

        hints = typing.get_type_hints(cls, localns={"Behavior": Behavior})
        known = _HINTS[cls] = {
            f.name: found
            for f in dataclasses.fields(cls)
            if f.name != "loc"  # where a record came from in the YAML, not part of it
            and (found := _dataclasses_in(hints.get(f.name)))
        }
    return known


_REACH: dict[tuple[type, tuple[type, ...]], tuple[str, ...]] = {}


def _fields_towards(cls: type, kinds: tuple[type, ...]) -> tuple[str, ...]:
    """The fields of `cls` through which a record of one of `kinds` can be reached: the walk
    never enters what cannot hold one (a rubric, a budget, a case's messages)."""
    key = (cls, kinds)
    known = _REACH.get(key)
    if known is None:
        _REACH[key] = ()  # a type that holds itself: reached through its other fields
        known = _REACH[key] = tuple(
            name
            for name, held in _field_types(cls).items()
            if any(issubclass(t, kinds) or _fields_towards(t, kinds) for t in held)
        )
    return known


_NAMES: dict[type, Callable[[Any, int], str]] = {
    model.Case: lambda r, i: f"case {r.name!r}",
    model.Tool: lambda r, i: f"tool {r.name}",
    model.ModelSpec: lambda r, i: f"model {r.name}",
    model.Turn: lambda r, i: f"turn {i + 1}",
    model.UserSimulation: lambda r, i: "simulated user",
    model.ExpectedCall: lambda r, i: f"expected call {i + 1} ({r.tool})",
    model.CriticSpec: lambda r, i: f"critic of {r.field}",
    model.EvaluatorSpec: lambda r, i: f"evaluator {r.kind}",
    # one per kind: a case's `final_answer` is a mapping
    model.FinalAnswerCheck: lambda r, i: f"final-answer check {r.kind}",
    model.StateCheck: lambda r, i: f"state check {r.pointer}",
}
"""How a reader names a record inside its holder (given its index there); others need none."""


def record_name(record: object, index: int | None) -> str:
    named = _NAMES.get(type(record))
    return named(record, index or 0) if named else ""


_Found = list[tuple[Path, object]]
_WALKED: list[tuple[weakref.ref[Any], tuple[type, ...], Callable[[Any], bool], _Found]] = []
"""The last walks of a suite (by identity, not kept alive): a run asks for its judges from
the scorer and the report, and each walk of 50,000 cases costs about a second."""
_WALKS_KEPT = 4


def records(root: object, kinds: tuple[type, ...], keep: Callable[[Any], bool] = bool) -> _Found:
    """Every record of one of `kinds` in `root` (itself included) that `keep` accepts, in the
    order the suite declares them, each with its path. A suite's walk is remembered (records
    are frozen), so asking again with the same kinds and `keep` costs nothing."""
    if not isinstance(root, model.Suite):
        return _walk(root, kinds, keep)
    for ref, known_kinds, known_keep, known in _WALKED:
        if ref() is root and known_kinds == kinds and known_keep is keep:
            return list(known)
    found = _walk(root, kinds, keep)
    _WALKED[:] = [(weakref.ref(root), kinds, keep, found), *_WALKED[: _WALKS_KEPT - 1]]
    return list(found)


def _walk(root: object, kinds: tuple[type, ...], keep: Callable[[Any], bool]) -> _Found:
    """`records`, walked."""
    found: list[tuple[Path, object]] = []
    # (record, its index in the tuple that holds it, the entry of its holder)
    stack: list[tuple[object, int | None, Any]] = [(root, None, None)]
    held: list[tuple[object, int | None, Any]]
    # Records (by identity) that hold none and were not kept: one shared by many holders (a
    # suite's critics, shared by 50,000 cases) is looked at once, not once per holder.
    barren: set[int] = set()
    while stack:
        entry = stack.pop()
        record = entry[0]
        towards = _fields_towards(type(record), kinds)
        if isinstance(record, kinds) and keep(record):
            found.append((_path(entry), record))
        elif not towards:
            barren.add(id(record))  # alive as long as the walk: ids are not reused
        held = []
        for name in towards:
            value = getattr(record, name)
            if isinstance(value, (tuple, list)):
                held += [
                    (item, i, entry)
                    for i, item in enumerate(value)
                    if item is not None and id(item) not in barren
                ]
            elif value is not None and id(value) not in barren:
                held.append((value, None, entry))
        stack.extend(reversed(held))
    return found


def _path(entry: tuple[object, int | None, Any]) -> Path:
    parts: list[str] = []
    while entry[2] is not None:
        parts.append(record_name(entry[0], entry[1]))
        entry = entry[2]
    return tuple(reversed(parts))


def where(path: Path) -> str:
    """A path as one phrase: "case 'refund' turn 2 final-answer check judge"."""
    return " ".join(part for part in path if part)


CALLERS = (
    model.ModelSpec,
    model.LLMSimulation,
    model.FinalAnswerCheck,
    model.EvaluatorSpec,
    model.CriticSpec,
    model.UserCheck,
)
"""Records that can send a request: models, simulators, checks that take parameters, and a
simulated user's rule an LLM judges."""
ENDPOINT_PARAMS = frozenset(("base_url", "api_key_env"))
"""Parameters that send a check's or evaluator's requests somewhere (the judge's, a plugin's)."""


def callers(root: object) -> list[tuple[Path, object]]:
    """Every record in `root` that sends requests (a model, a simulator, a judge, a check
    given an endpoint's parameters): one walk a run shares between the endpoints it may send
    keys to and the judges it scores with."""
    return records(root, CALLERS, _calls_out)


def _calls_out(record: object) -> bool:
    """Whether this record sends requests: a model, a simulator, a judge, or a check given
    an endpoint's parameters."""
    if isinstance(record, (model.ModelSpec, model.LLMSimulation)):
        return True
    if isinstance(record, model.UserCheck):  # a rule an LLM judge holds the simulated user to
        return bool(record.judge)
    params = getattr(record, "params", None)
    return isinstance(params, dict) and (
        getattr(record, "kind", None) == "judge" or not ENDPOINT_PARAMS.isdisjoint(params)
    )


def judge_checks(root: object) -> list[tuple[Path, model.FinalAnswerCheck]]:
    """Every LLM-judge check in `root` (a suite or a case), in a case's expectation, a turn's
    or anywhere else the language nests one: a judge sends requests, so `callers` finds it."""
    return [
        (path, r)
        for path, r in callers(root)
        if isinstance(r, model.FinalAnswerCheck) and r.kind == "judge"
    ]
