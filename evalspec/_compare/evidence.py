"""Which recorded transcripts answer the head suite: the evidence each (case, model) is scored on.

A transcript counts for the head only when it answers the head's requests (content id and every
tool output, see evalspec._runner.evidence); when it does not, the head's own recordings stand in
if they answer, else the case is "re-run needed" (stale) or "needs a run" (missing).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from evalspec._suite.model import Case, ModelSpec, Suite
from evalspec._transcript import Transcript


def behaviors_reached(
    base: Suite, head: Suite, transcripts: Sequence[Transcript]
) -> dict[str, set[str]]:
    """Per case, the stateful tools its recorded calls reach whose preconditions or effects
    changed: every output may stay the same (nothing is stale) while the state the case ends
    in moves, so the change is the case's, not one "no recorded call reaches"."""
    before = {t.name: t.behavior for t in base.tools}
    changed = set()
    for tool in head.tools:
        old, new = before.get(tool.name), tool.behavior
        if old is None or new is None:
            continue  # a behaviour added or removed changes the outputs: stale, named there
        if (old.preconditions, old.effects) != (new.preconditions, new.effects):
            changed.add(tool.name)
    out: dict[str, set[str]] = defaultdict(set)
    for t in transcripts if changed else ():
        out[t.case].update(c.name for c in t.tool_calls if c.name in changed)
    return out


def plan_ids(suite: Suite) -> dict[tuple[str, str], dict[int, str]]:
    from evalspec._plan import compile_plan

    ids: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    for it in compile_plan(suite).items:
        ids[(it.case.name, it.model.name)][it.trial] = it.id
    return ids


@dataclass
class Evidence:
    """The transcripts chosen for the head side of one (case, model), and what is wrong."""

    transcripts: list[Transcript]
    stale: list[str]
    missing_trials: int = 0
    rerecorded: bool = False
    tools: set[str] = field(default_factory=set)
    """Tools whose recorded outputs differ from what they answer now."""


def head_evidence(
    head: Suite,
    head_ids: dict[tuple[str, str], dict[int, str]],
    transcripts: Sequence[Transcript],
    head_transcripts: Sequence[Transcript],
) -> dict[tuple[str, str], Evidence]:
    """Per head (case, model): the recorded transcripts when they answer the head's requests,
    else the head's own recordings when those do, else the stale ones (flagged)."""
    from evalspec._runner.evidence import EvidenceCheck

    check = EvidenceCheck(head)
    recorded = {(t.case, t.model, t.trial): t for t in transcripts}
    fresh = {
        (t.case, t.model, t.trial): t
        for t in head_transcripts
        if not t.error and not check.problems(t)
    }
    out: dict[tuple[str, str], Evidence] = {}
    held: dict[tuple[str, str], set[int]] = defaultdict(set)
    for case, model, trial in [*recorded, *fresh]:
        held[(case, model)].add(trial)
    for key, planned in head_ids.items():
        ev = Evidence([], [])
        # Every trial the suite asks for, and every trial recorded (a run with --trials): each
        # is checked, so both sides are scored on the same trials.
        trials = set(planned) | held.get(key, set())
        for trial in sorted(trials):
            t = recorded.get((*key, trial))
            problems = check.problems_by_tool(t) if t is not None else []
            new = fresh.get((*key, trial))
            # The head's own recording stands in when the recorded one is stale or missing,
            # and when the pull request re-recorded the item (it answers differently).
            if new is not None and (t is None or problems or _answered_differently(t, new)):
                # Still name the tools the change was about.
                ev.tools.update(tool for tool, _ in problems if tool is not None)
                t, problems, ev.rerecorded = new, [], True
            if t is None:
                ev.missing_trials += 1
                continue
            prefix = f"trial {trial + 1}: " if len(trials) > 1 else ""
            ev.stale += [prefix + p for _, p in problems if prefix + p not in ev.stale]
            ev.tools.update(tool for tool, _ in problems if tool is not None)
            ev.transcripts.append(t)
        out[key] = ev
    return out


def _answered_differently(a: Transcript, b: Transcript) -> bool:
    """Two transcripts of one item whose model answered differently (a re-recording)."""
    return (a.messages, a.tool_calls, a.final_answer) != (b.messages, b.tool_calls, b.final_answer)


def request_changes(base: Suite, head: Suite, case: str, model: str) -> list[str]:
    """Which parts of a case's opening request differ between the two versions: what made
    its recording stale, said instead of every part it might have been."""
    bc, hc = _case(base, case), _case(head, case)
    bm, hm = _model(base, model), _model(head, model)
    if bc is None or hc is None or bm is None or hm is None:
        return []
    parts = {
        "its messages": (bc.messages, hc.messages),
        "the tools offered": (_offered(base, bc, bm), _offered(head, hc, hm)),
        "the model or its parameters": (
            (bm.model, bm.params, bm.provider),
            (hm.model, hm.params, hm.provider),
        ),
        "the run settings": (
            (base.run.mode, base.run.max_turns),
            (head.run.mode, head.run.max_turns),
        ),
        "the faults its tools meet": (_faults(base, bc), _faults(head, hc)),
        "its later user turns": (_later_turns(bc), _later_turns(hc)),
    }
    return [name for name, (b, a) in parts.items() if b != a] + _player(base, head, bc, hc)


def _player(base: Suite, head: Suite, before: Case, after: Case) -> list[str]:
    """The simulated user's settings that differ (`the simulated user's goal`), and the model
    that plays it."""
    sb, sa = before.simulated_user, after.simulated_user
    if sb is None or sa is None:
        return [] if sb is sa else ["the simulated user"]
    names = [f.name for f in fields(sa) if f.compare and getattr(sb, f.name) != getattr(sa, f.name)]
    out = (
        [f"the simulated user's {', '.join(n for n in names if n != 'model')}"]
        if [n for n in names if n != "model"]
        else []
    )
    mb, ma = _model(base, sb.model), _model(head, sa.model)
    if "model" in names or (mb and ma and (mb.model, mb.params) != (ma.model, ma.params)):
        out.append("the model that plays the simulated user")
    return out


def _case(suite: Suite, name: str) -> Case | None:
    return next((c for c in suite.cases if c.name == name), None)


def _model(suite: Suite, name: str) -> ModelSpec | None:
    return next((m for m in suite.models if m.name == name), None)


def _names(suite: Suite, case: Case) -> list[str]:
    names = [t.name for t in suite.tools] if case.tools is None else list(case.tools)
    return names + [n for t in case.turns for n in t.add_tools]


def _offered(suite: Suite, case: Case, model: ModelSpec) -> tuple[dict[str, Any], ...]:
    """The definitions the model reads: the variant's, with text injected into them."""
    from evalspec._plan import described, variant_tools

    by_name = {t.name: t.to_openai() for t in suite.tools}
    offered = tuple(by_name[n] for n in _names(suite, case) if n in by_name)
    return described(variant_tools(offered, model), case.described)


def _faults(suite: Suite, case: Case) -> tuple[Any, ...]:
    tools = {t.name: t.faults for t in suite.tools}
    return case.faults + tuple(
        f for n in dict.fromkeys(_names(suite, case)) for f in tools.get(n, ())
    )


def _later_turns(case: Case) -> list[Any]:
    return [(t.user, t.user_calls) for t in case.turns[1:]]
