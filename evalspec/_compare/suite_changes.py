"""Name the change: what differs between two versions of a suite, case by case.

A reviewer reads `fail_threshold 0.85 -> 0.97` or `message: similarity 0.75 -> 0.9` above the
score movements, so a comment says what was changed as well as what it did.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from evalspec._compare.edits import MISSING, Edit, edits, elided, moved
from evalspec._suite.mcp_drift import tool_drift
from evalspec._suite.model import (
    Case,
    CriticSpec,
    EvaluatorSpec,
    ExpectedCall,
    FinalAnswerCheck,
    ModelSpec,
    Suite,
    Tool,
    ToolVariant,
)
from evalspec._util.json_values import difference, short


def critic_text(spec: CriticSpec | None) -> str:
    """`similarity 0.75`, `exact {"case_sensitive": false}`, `regex "^P" (weight 2, required)`."""
    if spec is None:
        return "(none)"
    params = spec.params
    if list(params) in (["threshold"], ["pattern"], ["values"]):
        text = f"{spec.kind} {short(next(iter(params.values())))}"
    elif params:
        text = f"{spec.kind} {short(params)}"
    else:
        text = spec.kind
    extras = [f"weight {spec.weight:g}"] if spec.weight != 1.0 else []
    extras += ["required"] if spec.required else []
    return text + (f" ({', '.join(extras)})" if extras else "")


def _moved(label: str, before: Any, after: Any) -> list[str]:
    return [] if before == after else [f"{label} {moved(before, after)}"]


def _critics(
    before: tuple[CriticSpec, ...], after: tuple[CriticSpec, ...], prefix: str = ""
) -> list[str]:
    b = {c.field: c for c in before}
    a = {c.field: c for c in after}
    out = []
    for name in list(a) + [n for n in b if n not in a]:
        if b.get(name) != a.get(name):
            out.append(
                f"{prefix}{name}: {elided(critic_text(b.get(name)), critic_text(a.get(name)))}"
            )
    return out


def _call_text(call: ExpectedCall | None) -> str:
    return "(none)" if call is None else f"{call.tool} {short(call.args)}"


def _expected_calls(before: Case, after: Case) -> list[str]:
    b, a = before.expect.tool_calls, after.expect.tool_calls
    out = []
    for i in range(max(len(b), len(a))):
        cb = b[i] if i < len(b) else None
        ca = a[i] if i < len(a) else None
        where = f"expected call {i + 1}"
        if cb is None or ca is None or cb.tool != ca.tool:
            if cb != ca:
                out.append(f"{where}: {_call_text(cb)} -> {_call_text(ca)}")
            continue
        for arg in list(ca.args) + [k for k in cb.args if k not in ca.args]:
            if cb.args.get(arg, None) != ca.args.get(arg, None) or (arg in cb.args) != (
                arg in ca.args
            ):
                out.append(
                    f"{where} ({ca.tool}) {arg}: "
                    + moved(cb.args.get(arg, MISSING), ca.args.get(arg, MISSING))
                )
        out += _critics(cb.critics, ca.critics, f"{where} critic ")
        if (cb.has_output, cb.output) != (ca.has_output, ca.output):
            out += _edited(f"{where} expected output", cb.output, ca.output)
    out += _moved("ordered", before.expect.ordered, after.expect.ordered)
    out += _moved("no_tool_calls", before.expect.no_tool_calls, after.expect.no_tool_calls)
    out += _moved("min_calls", before.expect.min_calls, after.expect.min_calls)
    return out


def _check_text(check: FinalAnswerCheck | EvaluatorSpec | None) -> str:
    if check is None:
        return "(none)"
    extra = f" (weight {check.weight:g})" if check.weight != 1.0 else ""
    if isinstance(check, EvaluatorSpec) and check.required:
        extra += " (required)"
    params = check.params
    if list(params) == ["values"]:  # the short form: `contains: [Paris]`
        return short(params["values"]) + extra
    return (short(params) if params else "on") + extra


def _keyed_checks(items: tuple[Any, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, n = item.kind, 2
        while key in out:
            key, n = f"{item.kind} #{n}", n + 1
        out[key] = item
    return out


def _checks(before: tuple[Any, ...], after: tuple[Any, ...], prefix: str) -> list[str]:
    """Each final-answer check or evaluator added, removed or changed; a changed one by what
    in it changed (`final_answer.judge · rubric · criterion truthful · ask: ...`)."""
    b, a = _keyed_checks(before), _keyed_checks(after)
    out = []
    for key in list(a) + [k for k in b if k not in a]:
        cb, ca = b.get(key), a.get(key)
        if cb == ca:
            continue
        if cb is None or ca is None or cb.kind != ca.kind:
            out.append(f"{prefix}{key}: {_check_text(cb)} -> {_check_text(ca)}")
        else:
            out += _edited(f"{prefix}{key}", cb, ca)
    return out


def _messages(before: Case, after: Case) -> list[str]:
    out = []
    b, a = before.messages, after.messages
    for i in range(max(len(b), len(a))):
        mb = b[i] if i < len(b) else None
        ma = a[i] if i < len(a) else None
        if mb == ma:
            continue
        either = ma or mb
        role = either.role if either else "message"
        out.append(
            f"{role} message: "
            + moved(mb.content if mb else MISSING, ma.content if ma else MISSING)
        )
    return out


def _conversation(before: Case, after: Case) -> list[str]:
    """A multi-turn case's changes by turn (text, tools added, expected calls, checks), its
    turn rule and its simulated user's settings."""
    out = _moved("turn_rule", before.turn_rule, after.turn_rule)
    for k in range(max(len(before.turns), len(after.turns))):
        tb = before.turns[k] if k < len(before.turns) else None
        ta = after.turns[k] if k < len(after.turns) else None
        where = f"turn {k + 1}"
        if tb is None or ta is None:
            out.append(f"{where} {'added' if tb is None else 'removed'}")
            continue
        if k > 0:  # the first turn's text is the case's user message, named above
            out += _moved(f"{where} user", tb.user, ta.user)
        out += _moved(f"{where} add_tools", list(tb.add_tools), list(ta.add_tools))
        if (tb.expect is None) != (ta.expect is None):
            out.append(f"{where} {'now judged' if tb.expect is None else 'no longer judged'}")
            continue
        if tb.expect is None or ta.expect is None or tb.expect == ta.expect:
            continue
        pb, pa = replace(before, expect=tb.expect), replace(after, expect=ta.expect)
        out += [f"{where} {item}" for item in _expected_calls(pb, pa)]
        out += _checks(tb.expect.final_answer, ta.expect.final_answer, f"{where} final_answer.")
    sb, sa = before.simulated_user, after.simulated_user
    if sb != sa:
        if sb is None or sa is None:
            out.append(f"simulated user {'added' if sb is None else 'removed'}")
        else:
            out += _edited("simulated user", sb, sa)
    return out


def _rubric(before: Case, after: Case) -> list[str]:
    out = []
    for f in fields(before.rubric):
        out += _moved(f.name, getattr(before.rubric, f.name), getattr(after.rubric, f.name))
    return out


def _tool_definition(before: Tool | None, after: Tool | None) -> list[str]:
    if before is None or after is None:
        return []
    out = []
    if before.description != after.description:
        out.append(f"tool {after.name} description: {moved(before.description, after.description)}")
    if before.parameters != after.parameters:
        out += _edited(f"tool {after.name} · parameters", before.parameters, after.parameters)
    return out


def _edited(where: str, before: Any, after: Any) -> list[str]:
    """Each difference inside two versions of a value, by content: `tool t · parameters ·
    properties · city · type: "string" -> "integer"`."""
    return [_placed(where, e) for e in edits(before, after)]


def _placed(where: str, e: Edit) -> str:
    """An edit's text said from `where` (`final_answer.contains: ["a"] -> ["b"]`)."""
    if e.where:
        return f"{where} · {e.text}"
    return f"{where}{e.text}" if e.text.startswith(":") else f"{where} {e.text}"


def _tool_answers(before: Tool | None, after: Tool | None) -> list[str]:
    """What the simulated tool answers: rules, caches, LLM simulator."""
    if before is None or after is None:
        return []
    out = []
    b_rules = {short(r.when): r for r in before.responses}
    a_rules = {short(r.when): r for r in after.responses}
    for key in list(a_rules) + [k for k in b_rules if k not in a_rules]:
        rb, ra = b_rules.get(key), a_rules.get(key)
        if rb == ra:
            continue
        when = "fallback" if key == "null" else f"when {key}"
        if rb is not None and ra is not None and rb.error is None and ra.error is None:
            what = difference(rb.output, ra.output)
        else:
            what = f"{_rule_text(rb)} -> {_rule_text(ra)}"
        out.append(f"tool {after.name} response {when}: {what}")
    for name in ("cache_dir", "cache_file", "simulate"):
        b, a = getattr(before, name), getattr(after, name)
        if b != a:
            named = _moved(f"tool {after.name} {name}", b, a) if b is None or a is None else []
            out += named or _edited(f"tool {after.name} · {name}", b, a)
    out += _behavior(after.name, before.behavior, after.behavior)
    return out


def _behavior(tool: str, before: Any, after: Any) -> list[str]:
    """Which precondition, effect or response of a stateful tool changed, by place."""
    if before == after:
        return []
    if before is None or after is None:
        return [f"tool {tool} behavior {'added' if before is None else 'removed'}"]
    return _edited(f"tool {tool}", before, after)


def _state(before: Case, after: Case) -> list[str]:
    """The case's initial state and its state checks, before -> after."""
    from evalspec._scoring.state_checks import changes

    out = [f"initial state {line}" for line in changes(before.state, after.state, limit=5)]
    b = {c.pointer: c for c in before.expect.state}
    a = {c.pointer: c for c in after.expect.state}
    for pointer in list(a) + [p for p in b if p not in a]:
        cb, ca = b.get(pointer), a.get(pointer)
        if cb is None or ca is None:
            out.append(f"expect.state {pointer} {'added' if cb is None else 'removed'}")
        elif (cb.expected, cb.absent, cb.spec) != (ca.expected, ca.absent, ca.spec):
            out.append(
                f"expect.state {pointer}: {short(cb.expected)} ({critic_text(cb.spec)}) -> "
                f"{short(ca.expected)} ({critic_text(ca.spec)})"
            )
    out += _moved("expect.unchanged", list(before.expect.unchanged), list(after.expect.unchanged))
    return out


def _rule_text(rule: Any) -> str:
    if rule is None:
        return "(none)"
    return f"error {short(rule.error)}" if rule.error is not None else short(rule.output, 100)


def _offered(suite: Suite, case: Case) -> list[str]:
    """Every tool the case offers in some turn (a turn's `add_tools` too)."""
    if case.tools is None:
        return [t.name for t in suite.tools]
    return list(case.tools) + [n for t in case.turns for n in t.add_tools]


def _models(before: Mapping[str, ModelSpec], after: Mapping[str, ModelSpec]) -> list[str]:
    out = []
    for name in list(after) + [n for n in before if n not in after]:
        mb, ma = before.get(name), after.get(name)
        if mb is None or ma is None:
            out.append(f"model {name} {'added' if mb is None else 'removed'}")
            continue
        out += _moved(f"model {name} id", mb.model, ma.model)
        for key in sorted(set(mb.params) | set(ma.params)):
            out += _moved(f"model {name} {key}", mb.params.get(key), ma.params.get(key))
    return out


def _held(case: Case) -> list[str]:
    """The tools the case's user holds (dual control): never offered to the model."""
    sim = case.simulated_user
    names = list(sim.tools) if sim is not None else []
    return names + [n for t in case.turns for n, _ in t.user_calls if n not in names]


def _player(base: Suite, head: Suite, old: Case, case: Case) -> list[str]:
    """The model that plays the case's simulated user, when its id or settings changed: its
    conversations are not the same experiment, whatever the model under test did."""
    sb, sa = old.simulated_user, case.simulated_user
    if sb is None or sa is None:
        return []
    mb = next((m for m in base.models if m.name == sb.model), None)
    ma = next((m for m in head.models if m.name == sa.model), None)
    if mb is None or ma is None or (mb.model, mb.params) == (ma.model, ma.params):
        return []
    return [
        f"the simulated user's model: {mb.model} {_settings(mb.params)} -> "
        f"{ma.model} {_settings(ma.params)} (the conversations are another experiment)"
    ]


def _settings(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True, default=str)


def suite_wide_changes(base: Suite, head: Suite) -> list[str]:
    """Changes that touch every case: run settings, models and their parameters."""
    out = []
    for f in fields(base.run):
        out += _moved(f"run.{f.name}", getattr(base.run, f.name), getattr(head.run, f.name))
    out += _models({m.name: m for m in base.models}, {m.name: m for m in head.models})
    return out + variant_changes(base, head)  # embedding settings: security.py


def variant_changes(base: Suite, head: Suite) -> list[str]:
    """What each tool variant offers differently, said as `tools refresh --check` says a
    server's drift (`variant v2: Docs.Search: description "a" -> "b"`)."""
    before = {v.name: _offered_by(base, v) for v in base.variants}
    after = {v.name: _offered_by(head, v) for v in head.variants}
    out = [
        f"variant {name} {'added' if name in after else 'removed'}"
        for name in [*(n for n in after if n not in before), *(n for n in before if n not in after)]
    ]
    for name in (n for n in after if n in before):
        for drift in tool_drift({name: before[name]}, {name: after[name]}):
            out += [f"variant {name}: {line}" for line in drift.lines()]
    return out


def _offered_by(suite: Suite, variant: ToolVariant) -> list[dict[str, Any]]:
    """The definitions a variant offers, as a lock lists a server's tools."""
    return [
        {"name": f["name"], "description": f["description"], "inputSchema": f["parameters"]}
        for f in (d["function"] for d in variant.apply(tuple(t.to_openai() for t in suite.tools)))
    ]


def case_changes(
    base: Suite, head: Suite, stale_tools: Mapping[str, set[str]] | None = None
) -> dict[str, list[str]]:
    """Per head case present in both versions, the differences that affect it.

    `stale_tools` names, per case, the tools whose recorded outputs the head's tools no longer
    give: a change to what a tool answers is listed only for the cases whose calls it affects.
    """
    base_cases = {c.name: c for c in base.cases}
    b_tools, a_tools = _tools(base), _tools(head)
    tool_rest = {name: _tool_rest(b_tools.get(name), tool) for name, tool in a_tools.items()}
    out: dict[str, list[str]] = {}
    for case in head.cases:
        old = base_cases.get(case.name)
        if old is None:
            continue
        items = [] if old == case else _own(old, case)
        before_offered, after_offered = _offered(base, old), _offered(head, case)
        if sorted(before_offered) != sorted(after_offered):
            items.append(
                f"tools offered: {', '.join(before_offered) or '(none)'} -> "
                f"{', '.join(after_offered) or '(none)'}"
            )
        held = _held(case)
        for name in after_offered + [n for n in held if n in _held(old)]:
            if name in before_offered or name in held:
                items += _tool_definition(b_tools.get(name), a_tools.get(name))
        items += _player(base, head, old, case)
        for name in sorted((stale_tools or {}).get(case.name, set())):
            items += _tool_answers(b_tools.get(name), a_tools.get(name))
        for name in after_offered:
            items += tool_rest.get(name, [])
        out[case.name] = list(dict.fromkeys(items))
    return out


def _own(old: Case, case: Case) -> list[str]:
    """The differences of the case itself: its messages, rubric, critics, expectations,
    checks, turns, simulated user, state, and all the rest the generic walk finds."""
    items = _messages(old, case) + _rubric(old, case)
    items += _moved("trials", old.trials, case.trials)
    items += _moved("pass_rule", old.pass_rule, case.pass_rule)
    items += _critics(old.critics, case.critics)
    items += _expected_calls(old, case)
    items += _checks(old.expect.final_answer, case.expect.final_answer, "final_answer.")
    items += _checks(old.evaluators, case.evaluators, "evaluator ")
    items += _conversation(old, case)
    stateful = old.state is not None or case.state is not None
    if stateful:
        items += _state(old, case)
    return items + _rest(old, case, stateful=stateful)


ANY = -1
"""In a place said above: any item of a list (a turn)."""

_SAID_ABOVE: tuple[tuple[str | int, ...], ...] = (
    ("messages",),
    ("rubric",),
    ("trials",),
    ("pass_rule",),
    ("critics",),
    ("evaluators",),
    ("tools",),
    ("turn_rule",),
    ("state",),
    ("simulated_user",),
    *(("expect", key) for key in ("tool_calls", "ordered", "no_tool_calls", "min_calls")),
    *(("expect", key) for key in ("final_answer", "state", "unchanged")),
    ("turns", ANY, "user"),
    ("turns", ANY, "add_tools"),
    *(("turns", ANY, "expect", key) for key in ("tool_calls", "ordered", "no_tool_calls")),
    *(("turns", ANY, "expect", key) for key in ("min_calls", "final_answer")),
    ("name",),  # a case's name pairs it; its description and tags change no score
    ("description",),
    ("tags",),
)
"""The places of a case the functions above name in their own words."""
_SAID_WHOLE: tuple[tuple[str | int, ...], ...] = (("turns",), ("turns", ANY, "expect"))
"""Places named above only as a whole: a turn added, a turn now judged."""


_STATE_PLACES = (("state",), ("expect", "state"), ("expect", "unchanged"))
"""Named above (`_state`) only for a case with a state."""


def _said_above(steps: tuple[str | int, ...], stateful: bool) -> bool:
    def matches(place: tuple[str | int, ...], exact: bool) -> bool:
        if len(steps) < len(place) or (exact and len(steps) != len(place)):
            return False
        return all(p in (ANY, s) for p, s in zip(place, steps, strict=False))

    said = [p for p in _SAID_ABOVE if stateful or p not in _STATE_PLACES]
    return any(matches(p, False) for p in said) or any(matches(p, True) for p in _SAID_WHOLE)


def _rest(before: Case, after: Case, *, stateful: bool) -> list[str]:
    """Every other difference of the case, named by the generic walk: a turn's state checks,
    its scripted user calls, the case's faults, retries allowed, forbidden calls. A new part
    of the language is named here the day it exists, never only in the suite's lines."""
    return [
        e.text for e in edits(before, after) if not _said_above(e.steps, stateful) and _shown(e)
    ]


def _shown(e: Edit) -> bool:
    return bool(e.steps) and e.steps[-1] != "loc"


_TOOL_SAID: tuple[str, ...] = ("name", "description", "parameters", "responses", "cache_dir")
_TOOL_SAID += ("cache_file", "simulate", "behavior", "mcp")
"""A tool's fields named above (its definition), or only where its answers reach a case."""


def _tool_rest(before: Tool | None, after: Tool | None) -> list[str]:
    """What else of an offered tool changed (`idempotent`, its faults): it moves the scoring
    of every case that offers the tool, whatever its calls."""
    if before is None or after is None or before == after:
        return []
    same = replace(before, **{name: getattr(after, name) for name in _TOOL_SAID})
    return _edited(f"tool {after.name}", same, after)


def _tools(suite: Suite) -> dict[str, Tool]:
    """The suite's tools by name, their files named relative to the suite's folder, so two
    versions read from different folders (a git export and the work tree) compare equal."""
    folder = Path(suite.path).resolve().parent

    def relative(path: str | None) -> str | None:
        if path is None or not Path(path).is_absolute() or not Path(path).is_relative_to(folder):
            return path
        return Path(path).relative_to(folder).as_posix()

    out = {}
    for t in suite.tools:
        mcp = replace(t.mcp, cwd=relative(t.mcp.cwd) or ".") if t.mcp is not None else None
        out[t.name] = replace(
            t, cache_file=relative(t.cache_file), cache_dir=relative(t.cache_dir), mcp=mcp
        )
    return out


def tool_changes(base: Suite, head: Suite) -> list[str]:
    """Every difference in the suite's tools: added, removed, definition, answers, sources."""
    b_tools, a_tools = _tools(base), _tools(head)
    out: list[str] = []
    for name in list(a_tools) + [n for n in b_tools if n not in a_tools]:
        before, after = b_tools.get(name), a_tools.get(name)
        if before == after:
            continue
        if before is None or after is None:
            out.append(f"tool {name} {'added' if before is None else 'removed'}")
            continue
        items = _tool_definition(before, after) + _tool_answers(before, after)
        if before.mcp != after.mcp:
            items += _edited(f"tool {name} · MCP server", before.mcp, after.mcp)
        out += items or _edited(f"tool {name}", before, after)
    return out


def unnamed_changes(base: Suite, head: Suite, named: Iterable[str]) -> list[str]:
    """What differs between the versions that no line of `named` (the per-case and suite-wide
    changes) says: a tool's answers that no recording reached, a tool no case offers, the
    description. A suite that differs though nothing can be named says so, never nothing."""
    seen = set(named)
    out = [item for item in tool_changes(base, head) if item not in seen]
    out += _moved("description", base.description, head.description)
    relocated = replace(base, path=head.path, tools=tuple(_tools(base).values()))
    if not out and not seen:
        out += [e.text for e in edits(relocated, replace(head, tools=tuple(_tools(head).values())))]
    return out
