"""Decide and apply the faults a conversation's tool calls meet (`faults:`).

A fault is decided from the data alone — the tool's call index in the conversation, the call's
arguments and, for a rate, a hash of its seed, the case, the trial and that index — so a replay
meets exactly the faults the recorded run met, and deciding costs O(1) per call. Nothing here
sleeps: added latency and time-outs are recorded, never waited for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from http import HTTPStatus
from typing import Any, get_args

from evalspec._suite.build_faults import NEEDS, ONLY_FOR
from evalspec._suite.model import Fault, FaultKind
from evalspec._tools.result import ToolResult
from evalspec._tools.simulated import values_match

STOPPING = frozenset({"error", "timeout", "rate_limit"})
"""Kinds that answer instead of the tool: the call does not reach it (unless `applied`)."""

DEFAULT_TIMEOUT_S = 30.0

_JSON = json.JSONEncoder(ensure_ascii=False)


def raised(fault: Mapping[str, Any] | None) -> bool:
    """The fault was raised by a Python tool environment (`ToolFault`), which saw the call:
    a replay hands it the call again, so it decides again."""
    return fault is not None and bool(fault.get("raised"))


def reached_tool(fault: Mapping[str, Any] | None) -> bool:
    """Whether a recorded call reached its tool (and so changed its state)."""
    if fault is None:
        return True
    return fault.get("kind") not in STOPPING or bool(fault.get("applied"))


def _draw(seeded: Any, n: int) -> float:
    """A number in [0, 1) fixed by its inputs: the same in every run and on every machine.
    `seeded` is `_seeded(seed, case, trial, tool)`, made once per conversation and tool: the
    hash of "seed NUL case NUL trial NUL tool NUL n" is that of its prefix, then n."""
    h = seeded.copy()
    h.update(b"%d" % n)
    return int.from_bytes(h.digest(), "big") / 2.0**64


def _seeded(seed: int, case: str, trial: int, tool: str) -> Any:
    text = f"{seed}\x00{case}\x00{trial}\x00{tool}\x00".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=8)


_Check = tuple[Fault, int | None, Callable[[dict[str, Any]], bool] | None, float | None]
"""A fault as `decide` reads it: the fault, its `on_call`, its `when` as a test, its `rate`."""

_GROUPED: dict[int, tuple[Sequence[Fault], dict[str, tuple[_Check, ...]]]] = {}
"""Faults by tool, per faults tuple of a plan (every item of a case shares its tuple), so a
conversation's plan is made in O(1), however many tools have faults."""
_GROUPED_MAX = 4096


def _by_tool(faults: Sequence[Fault]) -> dict[str, tuple[_Check, ...]]:
    known = _GROUPED.get(id(faults))
    if known is not None and known[0] is faults:
        return known[1]
    grouped: dict[str, list[_Check]] = {}
    for f in faults:
        grouped.setdefault(f.tool, []).append((f, f.on_call, _when(f.when), f.rate))
    if len(_GROUPED) >= _GROUPED_MAX:
        _GROUPED.clear()
    result = {tool: tuple(found) for tool, found in grouped.items()}
    _GROUPED[id(faults)] = (faults, result)  # the tuple kept: its id names no other
    return result


def _when(when: dict[str, Any] | None) -> Callable[[dict[str, Any]], bool] | None:
    """`when` as a test of a call's arguments: texts compared in place (the common case),
    anything else as a response rule's `when` is (`values_match`)."""
    if when is None:
        return None
    if all(type(v) is str for v in when.values()):
        pairs = tuple(when.items())
        return lambda args: all(type(args.get(k)) is str and args[k] == v for k, v in pairs)
    return lambda args: values_match(when, args)


_RAISABLE = tuple(k for k in get_args(FaultKind) if k != "inject")
_FORMS = ("cut_json", "wrong_types", "empty")
_TYPES: dict[str, type | tuple[type, ...]] = {
    "status": int,
    "message": str,
    "seconds": (int, float),
    "retry_after": (int, float),
    "applied": bool,
    "form": str,
    "keep": int,
    "field": str,
}
_WORDS = {
    "status": "an HTTP status, a whole number",
    "message": "the text the model reads",
    "seconds": "a number of seconds, 0 or more",
    "retry_after": "a number of seconds, 0 or more",
    "applied": "True or False",
    "form": "cut_json, wrong_types or empty",
    "keep": "a whole number of items, 0 or more",
    "field": "a JSON Pointer, like /items",
}


class ToolFault(Exception):
    """Raised by a Python tool environment's `call`: the call meets a fault, recorded,
    replayed, scored and shown exactly as a declared one (`faults:` in the suite).

    The same kinds and keys as a declared fault: `ToolFault("rate_limit", retry_after=2)`,
    `ToolFault("timeout", applied=True)` after the environment took effect (a retry then
    repeats it), `ToolFault("partial", output=rows, keep=1)` for an answer cut short. A kind
    that answers in the tool's place (error, timeout, rate_limit) must leave the state as it
    was unless `applied`. A key the kind cannot use, or a kind that needs one and lacks it, is
    refused here (ValueError), as `evalspec validate` refuses it in a suite.
    """

    def __init__(
        self,
        kind: str,
        *,
        output: Any = None,
        status: int | None = None,
        message: str | None = None,
        seconds: float | None = None,
        retry_after: float | None = None,
        applied: bool | None = None,
        form: str | None = None,
        keep: int | None = None,
        field: str | None = None,
    ) -> None:
        keys = {
            "status": status,
            "message": message,
            "seconds": seconds,
            "retry_after": retry_after,
            "applied": applied,
            "form": form,
            "keep": keep,
            "field": field,
        }
        given = {k: v for k, v in keys.items() if v is not None}
        _check_raised(kind, given)
        super().__init__(f"{kind} fault")
        self.kind = kind
        self.output = output
        self.keys = given

    def fault(self, tool: str) -> Fault:
        """The fault as a suite would declare it, for the call of `tool` that raised it."""
        return Fault(tool=tool, kind=self.kind, **self.keys)  # type: ignore[arg-type]


def _check_raised(kind: str, given: Mapping[str, Any]) -> None:
    """A ToolFault's kind and keys, held to the rules a declared fault is held to."""
    if kind not in _RAISABLE:
        raise ValueError(f"ToolFault kind {kind!r}: choose one of {', '.join(_RAISABLE)}")
    for key in given:
        kinds = ONLY_FOR[key]
        if kind not in kinds:
            raise ValueError(
                f"ToolFault({kind!r}): `{key}` means nothing to this kind; it is for kind "
                + " or ".join(sorted(kinds))
            )
    need = NEEDS.get(kind)
    if need is not None and need not in given:
        raise ValueError(f"ToolFault({kind!r}) needs `{need}`")
    for key, value in given.items():
        want = _TYPES[key]
        if isinstance(value, bool) != (want is bool) or not isinstance(value, want):
            raise ValueError(f"ToolFault {key}={value!r}: {_WORDS[key]}")
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise ValueError(f"ToolFault {key}={value!r}: {_WORDS[key]}")
    if "form" in given and given["form"] not in _FORMS:
        raise ValueError(f"ToolFault form {given['form']!r}: choose one of {', '.join(_FORMS)}")


def raised_result(tool: str, exc: ToolFault, output: Any) -> ToolResult:
    """The answer a call gets when the environment raised `exc` (`output`: its answer as
    JSON, for the kinds that change an answer), recorded as raised."""
    fault = exc.fault(tool)
    result = apply(fault, None if fault.kind in STOPPING else ToolResult(output, None, "state"))
    record = {**(result.fault or {}), "raised": True}
    return ToolResult(result.output, result.error, result.source, result.text, record)


class FaultPlan:
    """The faults of one conversation, and how many calls each tool has had in it."""

    def __init__(
        self, faults: Sequence[Fault], case: str, trial: int, earlier: Iterable[str] = ()
    ) -> None:
        self._by_tool = _by_tool(faults)
        self._case = case
        self._trial = trial
        self._counts: dict[str, int] = {}
        for name in earlier:  # calls of earlier user turns count too
            self._counts[name] = self._counts.get(name, 0) + 1
        self._hashes: dict[tuple[int, str], Any] = {}

    def decide(self, tool: str, arguments: dict[str, Any] | None) -> Fault | None:
        """The fault this call meets, if any; every call of a tool counts, faulted or not."""
        n = self._counts.get(tool, 0) + 1
        self._counts[tool] = n
        for fault, on_call, when, rate in self._by_tool.get(tool, ()):
            if on_call is not None and on_call != n:
                continue
            if when is not None and (arguments is None or not when(arguments)):
                continue
            if rate is not None and _draw(self._seeded(fault.seed, tool), n) >= rate:
                continue
            return fault
        return None

    def _seeded(self, seed: int, tool: str) -> Any:
        key = (seed, tool)
        seeded = self._hashes.get(key)
        if seeded is None:
            seeded = self._hashes[key] = _seeded(seed, self._case, self._trial, tool)
        return seeded


def stops(fault: Fault) -> bool:
    """The fault answers before the tool runs (`applied` faults let it run first)."""
    return fault.kind in STOPPING and not fault.applied


def apply(fault: Fault, result: ToolResult | None) -> ToolResult:
    """The answer the model gets: `result` (the tool's, None when it did not run) with the
    fault applied, carrying a record of the fault for the transcript."""
    record: dict[str, Any] = {"kind": fault.kind}
    if fault.kind in STOPPING:
        record["applied"] = fault.applied
        return _stopping(fault, record)
    assert result is not None
    if result.error is not None:  # the tool refused: nothing to slow, break or cut
        return result
    if fault.kind == "latency":
        record["seconds"] = fault.seconds
        return ToolResult(result.output, None, result.source, fault=record)
    if fault.kind == "inject":
        return ToolResult(_injected(result.output, fault), None, "fault", fault=record)
    if fault.kind == "partial":
        record["keep"] = fault.keep
        if fault.field is not None:
            record["field"] = fault.field
        output = _cut(result.output, fault.field or "", fault.keep or 0)
        return ToolResult(output, None, "fault", fault=record)
    record["form"] = fault.form
    text = _JSON.encode(result.output)
    if fault.form == "cut_json":
        cut = text[: len(text) // 2]
        return ToolResult(cut, None, "fault", text=cut, fault=record)
    if fault.form == "empty":
        return ToolResult("", None, "fault", text="", fault=record)
    return ToolResult(_as_text(result.output), None, "fault", fault=record)


def _stopping(fault: Fault, record: dict[str, Any]) -> ToolResult:
    body: dict[str, Any]
    if fault.kind == "timeout":
        seconds = DEFAULT_TIMEOUT_S if fault.seconds is None else fault.seconds
        record["seconds"] = seconds
        message = fault.message or f"the call timed out after {seconds:g} s"
        body = {"error": message}
    elif fault.kind == "rate_limit":
        record["status"], record["retry_after"] = 429, fault.retry_after
        message = fault.message or "429 Too Many Requests"
        body = {"error": message, "status": 429, "retry_after": fault.retry_after}
    else:
        status = fault.status or 500
        record["status"] = status
        message = fault.message or f"{status} {_reason(status)}".rstrip()
        body = {"error": message, "status": status}
    return ToolResult(None, message, "fault", text=_JSON.encode(body), fault=record)


def _injected(output: Any, fault: Fault) -> Any:
    """`output` carrying the injected text: after a text, at `field` (default `note`) of an
    object, at the end of a list, or beside any other value."""
    text = fault.text or ""
    if isinstance(output, str):
        return f"{output}\n\n{text}" if output else text
    if isinstance(output, dict):
        return {**output, fault.field or "note": text}
    if isinstance(output, list):
        return [*output, text]
    return {"output": output, fault.field or "note": text}


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _cut(value: Any, pointer: str, keep: int) -> Any:
    """`value` with the list or text at `pointer` cut to `keep` items or characters."""
    if pointer in ("", "/"):
        if isinstance(value, list | str):
            return value[:keep]
        return value
    head, _, rest = pointer[1:].partition("/")
    key = head.replace("~1", "/").replace("~0", "~")
    tail = "/" + rest if rest else ""
    if isinstance(value, dict) and key in value:
        return {**value, key: _cut(value[key], tail, keep)}
    if isinstance(value, list) and key.isdigit() and int(key) < len(value):
        i = int(key)
        return [*value[:i], _cut(value[i], tail, keep), *value[i + 1 :]]
    return value


def _as_text(value: Any) -> Any:
    """`wrong_types`: every number and boolean turned into text, at every depth."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        return {k: _as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_text(v) for v in value]
    return value


def fault_text(fault: Mapping[str, Any]) -> str:
    """`error, status 503` or `latency, 2.5 s`: a recorded fault in a few words."""
    parts = [str(fault.get("kind"))]
    for key, word in (
        ("status", "status {}"),
        ("retry_after", "Retry-After {}"),
        ("seconds", "{} s"),
        ("form", "{}"),
        ("keep", "kept {}"),
        ("field", "at {}"),
    ):
        if fault.get(key) is not None:
            parts.append(word.format(fault[key]))
    if fault.get("applied"):
        parts.append("after the call took effect")
    return ", ".join(parts)
