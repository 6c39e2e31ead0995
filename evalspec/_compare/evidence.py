"""Which recorded transcripts answer the head suite: the evidence each (case, model) is scored on.

A transcript counts for the head only when it answers the head's requests (content id and every
tool output, see evalspec._runner.evidence); when it does not, the head's own recordings stand in
if they answer, else the case is "re-run needed" (stale) or "needs a run" (missing).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalspec._suite.model import Suite
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
