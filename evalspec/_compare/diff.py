"""What a change does to the scores: re-score recorded transcripts under two suite versions.

`diff_suites` scores the same transcripts under a base and a head suite and pairs the results by
(case, model), in steps: choose the head's evidence and score both sides, name the suite changes
each case sees, classify each pair, attribute each moved verdict to its cause, then the paired
noise test per model. No model is called: the point is that a reviewer sees the effect of a
spec change without paying for the answers again.

A transcript counts for the head suite only when it answers the head's requests (see
evidence.py); cases without such evidence are "re-run needed" or "needs a run", and those gate
like regressions unless the caller accepts them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalspec._compare.classify import Flags, case_change, ordered, severity
from evalspec._compare.evidence import (
    Evidence,
    behaviors_reached,
    head_evidence,
    plan_ids,
    request_changes,
)
from evalspec._compare.noise import model_noise
from evalspec._compare.records import (
    NEW_SUITE_NOTE,
    CaseChange,
    Comparison,
    Kind,
    ModelNoise,
    Side,
    Spend,
)
from evalspec._compare.scoring import review_embedder, score_sides
from evalspec._compare.variants import variant_noise
from evalspec._suite.model import Gate, Suite
from evalspec._transcript import Transcript

if TYPE_CHECKING:
    from evalspec._scoring.protocols import Judge

Key = tuple[str, str]
"""(case, model)."""


@dataclass(frozen=True)
class _Scored:
    """Both sides scored, and the evidence the head side was scored on."""

    head_ids: dict[Key, dict[int, str]]
    base_ids: dict[Key, dict[int, str]]
    evidence: dict[Key, Evidence]
    chosen: list[Transcript]
    """The transcripts the head side was scored on."""
    before: dict[Key, Side]
    after: dict[Key, Side]

    def pairs(self) -> list[Key]:
        """The head's (case, model) pairs in plan order, then those only the base has."""
        return list(self.head_ids) + [k for k in self.base_ids if k not in self.head_ids]

    def used(self, transcripts: Sequence[Transcript]) -> int:
        """How many transcripts were scored: those of the base's cases, and the head's evidence."""
        ids = {id(t) for t in transcripts if (t.case, t.model) in self.base_ids}
        return len(ids | {id(t) for t in self.chosen})


@dataclass(frozen=True)
class _Named:
    """The suite's changes in words: per case, those every case shares, and the rest."""

    per_case: dict[str, list[str]] = field(default_factory=dict)
    suite_wide: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)


def diff_suites(
    base: Suite | None,
    head: Suite,
    transcripts: Sequence[Transcript],
    *,
    head_transcripts: Sequence[Transcript] = (),
    base_label: str | None = None,
    head_label: str | None = None,
    source: str = "",
    embedder: Any = None,
    judge: Judge | None = None,
    allow_stale: bool = False,
    known_endpoints: frozenset[tuple[object, ...]] = frozenset(),
    gate: Gate | None = None,
    model_root: Path | None = None,
) -> Comparison:
    """Score `transcripts` under `base` and `head`; one CaseChange per (case, model).

    `base` None means the suite is new (every case is added). The head side uses a transcript
    only when it answers the head's requests (content id and every tool output, see
    runner/evidence.py); when one does not, the head's own recordings (`head_transcripts`, a
    replay of the head suite) stand in if they answer it, else the case is "re-run needed".
    `known_endpoints` are endpoints a new suite may use without a security-relevant change
    (those the base's other suites already use). Both sides are scored with the base's
    embedding model (see `review_embedder`; `model_root` is where the base's files are).
    The gate and the cases marked flaky are the base's (a pull request cannot loosen its own
    gate); `gate` overrides the suite's.
    """
    from evalspec._compare.security import security_changes

    if embedder is None:
        embedder = review_embedder(base, model_root)
    scored = _score_both(base, head, transcripts, head_transcripts, embedder, judge)
    if base is not None:
        _say_what_changed(base, head, scored.evidence)
    named = _named_changes(base, head, scored)
    known_flaky = frozenset(c.name for c in (base or head).cases if c.flaky)
    changes = _case_changes(scored, named, known_flaky)
    used = scored.used(transcripts)
    suites = [s for s in (base, head) if s is not None]
    if base is not None:
        changes = _attributed(base, head, changes, transcripts, scored.evidence, embedder, judge)
    in_order = ordered(changes)
    policy = gate or (base or head).gate
    spend = _spend(base, head, transcripts, scored.chosen, in_order)
    return Comparison(
        title=f"evalspec diff: {head.name}",
        before_label=base_label or (base.path if base is not None else "(none)"),
        after_label=head_label or head.path,
        changes=in_order,
        notes=tuple(_notes(base, used, source)),
        security=tuple(security_changes(base, head, known_endpoints)),
        skipped=tuple(unmatched_transcripts(transcripts, suites, "the suite")),
        suite_wide=tuple(named.suite_wide),
        suite_changes=tuple(named.others),
        scored=used,
        allow_stale=allow_stale,
        gate=policy,
        noise=_noise(scored, in_order, policy, known_flaky, spend),
        variants=variant_noise(head, in_order, policy, known_flaky),
        gate_notes=tuple(_gate_notes(base, head, gate, known_flaky)),
    )


def _score_both(
    base: Suite | None,
    head: Suite,
    transcripts: Sequence[Transcript],
    head_transcripts: Sequence[Transcript],
    embedder: Any,
    judge: Judge | None,
) -> _Scored:
    """Choose the head's evidence, then score the head on it and the base on the recordings."""
    head_ids = plan_ids(head)
    base_ids = plan_ids(base) if base is not None else {}
    evidence = head_evidence(head, head_ids, transcripts, head_transcripts)
    chosen = [t for ev in evidence.values() for t in ev.transcripts]
    after = score_sides(head, chosen, embedder, judge)
    before = score_sides(base, transcripts, embedder, judge) if base is not None else {}
    return _Scored(head_ids, base_ids, evidence, chosen, before, after)


def _say_what_changed(base: Suite, head: Suite, evidence: dict[Key, Evidence]) -> None:
    """A recording is stale because its opening request changed: say which part of it did
    (`its messages`, `the tools offered`), not every part it might have been."""
    from evalspec._runner.evidence import REQUEST_CHANGED

    vague = (REQUEST_CHANGED, "the simulated user's settings or its model changed")
    for (case, model), ev in evidence.items():
        if not any(s.endswith(vague) for s in ev.stale):
            continue
        parts = ", ".join(request_changes(base, head, case, model))
        if parts:
            request, player = f"the request to the model changed: {parts}", f"{parts} changed"
            ev.stale = [s.replace(vague[0], request).replace(vague[1], player) for s in ev.stale]


def _named_changes(base: Suite | None, head: Suite, scored: _Scored) -> _Named:
    """What of the suite changed, per case (with the tools whose recorded answers or stateful
    behaviour moved under it), then what every case shares and what no case names."""
    from evalspec._compare.suite_changes import case_changes, suite_wide_changes, unnamed_changes

    if base is None:
        return _Named()
    stale_tools: dict[str, set[str]] = defaultdict(set)
    for (case, _model), ev in scored.evidence.items():
        stale_tools[case].update(ev.tools)
    for case, names in behaviors_reached(base, head, scored.chosen).items():
        stale_tools[case].update(names)
    per_case = case_changes(base, head, stale_tools)
    suite_wide = suite_wide_changes(base, head)
    suite_wide += _common_to_all(per_case)
    said = [item for items in per_case.values() for item in items] + suite_wide
    return _Named(per_case, suite_wide, unnamed_changes(base, head, said))


def _case_changes(scored: _Scored, named: _Named, known_flaky: frozenset[str]) -> list[CaseChange]:
    """One change per (case, model) of either version, in the head's plan order."""
    changes: list[CaseChange] = []
    for key in scored.pairs():
        in_base, in_head = key in scored.base_ids, key in scored.head_ids
        b = scored.before.get(key) if in_base else None
        a = scored.after.get(key) if in_head else None
        ev = scored.evidence.get(key, Evidence([], []))
        flags = _flags(key, ev, a, in_head, named, known_flaky)
        if a is None and b is None:
            kind: Kind = "added" if not in_base else "removed" if not in_head else "missing"
            changes.append(CaseChange(key[0], key[1], kind, None, None, **flags))
        else:
            changes.append(_unscored(case_change(key[0], key[1], b, a, **flags)))
    return changes


def _unscored(c: CaseChange) -> CaseChange:
    """A head side that could not be scored (a judge verdict or a simulated answer missing
    from its cache) is no regression, nor any move: its ERROR is a score review has not got,
    and the row says it needs a run."""
    moved = c.kind in ("regression", "worse", "better")
    if moved and c.after is not None and any(r.details.get("needs_run") for r in c.after.results):
        return replace(c, kind="changed")
    return c


def _flags(
    key: Key,
    ev: Evidence,
    after: Side | None,
    in_head: bool,
    named: _Named,
    known_flaky: frozenset[str],
) -> Flags:
    """What one pair's change says about its evidence and the suite, besides its two sides."""
    return {
        "rerun": bool(ev.stale),
        # No transcript, a trial missing, or a judge verdict / simulated answer missing
        # from its cache.
        "needs_run": in_head
        and (
            after is None
            or ev.missing_trials > 0
            or any(r.details.get("needs_run") for r in after.results)
        ),
        "stale": tuple(ev.stale),
        "named": tuple(named.per_case.get(key[0], ())) if in_head else (),
        "rerecorded": ev.rerecorded,
        "known_flaky": key[0] in known_flaky,
    }


def _noise(
    scored: _Scored,
    changes: Sequence[CaseChange],
    gate: Gate,
    known_flaky: frozenset[str],
    spend: dict[str, tuple[Spend, Spend]],
) -> tuple[ModelNoise, ...]:
    """The paired noise test of each model, in the order the suites name them."""
    return tuple(
        model_noise(
            model,
            [c for c in changes if c.model == model],
            gate,
            known_flaky=known_flaky,
            spend=spend.get(model),
        )
        for model in dict.fromkeys(m for _c, m in scored.pairs())
    )


def _notes(base: Suite | None, used: int, source: str) -> list[str]:
    """What was scored, from where; that the suite is new; that nothing was scored."""
    notes = [
        f"scored {used} recorded transcript{'s' if used != 1 else ''}"
        + (f" from {source}" if source else "")
        + "; no model was called"
    ]
    if base is None:
        notes.append(NEW_SUITE_NOTE)
    if not used:
        notes.append("nothing was scored: no transcript answers a case of either version")
    return notes


def _gate_notes(
    base: Suite | None, head: Suite, gate: Gate | None, known_flaky: frozenset[str]
) -> list[str]:
    """What the change does to the gate itself: it applies only once merged."""
    if base is None:
        return []
    gate_notes = []
    if gate is None and head.gate != base.gate:
        from evalspec._compare.edits import edits

        moved = "; ".join(e.text for e in edits(base.gate, head.gate))
        gate_notes.append(
            f"the change edits the suite's gate ({moved}): it applies once merged; this uses "
            "the base's"
        )
    head_marked = sorted(c.name for c in head.cases if c.flaky and c.name not in known_flaky)
    if head_marked:
        gate_notes.append(
            f"marked flaky by this change (still gated until merged): {', '.join(head_marked[:10])}"
        )
    return gate_notes


def _attributed(
    base: Suite,
    head: Suite,
    changes: list[CaseChange],
    transcripts: Sequence[Transcript],
    evidence: dict[Key, Evidence],
    embedder: Any,
    judge: Judge | None,
) -> list[CaseChange]:
    """Each verdict that moved, with the change(s) that moved it, proven by re-scoring."""
    from evalspec._compare.attribution import Budget, SuiteEdits, attribute, same_verdict

    budget, suite_edits = Budget(), SuiteEdits(base, head)
    recorded = defaultdict(set)
    for t in transcripts:
        recorded[(t.case, t.model)].add(id(t))
    out = list(changes)
    # Most severe first: when the re-scoring budget runs out, it is the least severe that say so.
    for i in sorted(range(len(changes)), key=lambda i: severity(changes[i])):
        c = changes[i]
        key = (c.case, c.model)
        ev = evidence.get(key)
        if c.before is None or c.after is None or ev is None or c.unverified:
            continue  # no head verdict to explain: the row says what evidence it needs
        if same_verdict(c.before, c.after):
            continue

        def score(suite: Suite, chosen: Sequence[Transcript], key: tuple[str, str] = key) -> Any:
            return score_sides(suite, chosen, embedder, judge).get(key)

        found = attribute(
            base,
            c.case,
            c.before,
            c.after,
            ev.transcripts,
            suite_edits.for_case(c.case),
            score,
            budget,
            new_evidence={id(t) for t in ev.transcripts} != recorded[key],
        )
        out[i] = replace(c, causes=found.causes, counterfactuals=found.counterfactuals)
    return out


def _spend(
    base: Suite | None,
    head: Suite,
    before: Sequence[Transcript],
    after: Sequence[Transcript],
    changes: Sequence[CaseChange],
) -> dict[str, tuple[Spend, Spend]]:
    """Per model, tokens and cost of each side over the cases both sides scored on evidence."""
    if base is None:
        return {}
    paired = {
        (c.case, c.model)
        for c in changes
        if c.before is not None and c.after is not None and not c.unverified
    }
    out: dict[str, tuple[Spend, Spend]] = {}
    for model in {m for _c, m in paired}:
        sides = []
        for suite, transcripts in ((base, before), (head, after)):
            price = next((m.price for m in suite.models if m.name == model), None)
            mine = [t for t in transcripts if (t.case, t.model) in paired and t.model == model]
            cost = (
                sum(price.cost(t.usage.prompt_tokens, t.usage.completion_tokens) for t in mine)
                if price
                else None
            )
            sides.append(Spend(sum(t.usage.total_tokens for t in mine), cost))
        out[model] = (sides[0], sides[1])
    return out


def unmatched_transcripts(
    transcripts: Sequence[Transcript], suites: Sequence[Suite], where: str
) -> list[str]:
    """What did not match, for transcripts whose (case, model) is in none of `suites`."""
    cases = {c.name for s in suites for c in s.cases}
    models = {m.name for s in suites for m in s.models}
    by_model: Counter[str] = Counter()
    by_case: Counter[str] = Counter()
    for t in transcripts:
        if t.model not in models:
            by_model[t.model] += 1
        elif t.case not in cases:
            by_case[t.case] += 1
    out = []
    if by_model:
        shown = ", ".join(f"{n} of model {m!r}" for m, n in by_model.most_common(5))
        out.append(
            f"{sum(by_model.values())} transcripts have a model label that {where} does not "
            f"name ({shown}); its models: {', '.join(sorted(models)) or '(none)'}"
        )
    if by_case:
        shown = ", ".join(f"{c!r}" for c, _ in by_case.most_common(5))
        more = f" and {len(by_case) - 5} more" if len(by_case) > 5 else ""
        out.append(
            f"{sum(by_case.values())} transcripts are of cases {where} does not have: {shown}{more}"
        )
    if out and (sum(by_model.values()) + sum(by_case.values())) == len(transcripts):
        out.append(f"no transcript matches {where}: are they a run of another suite?")
    return out


def _common_to_all(named: dict[str, list[str]]) -> list[str]:
    """Changes every case shares (a suite rubric, a suite critic): said once, not per case.

    Removes them from each case's list in place.
    """
    lists = list(named.values())
    if len(lists) < 2:
        return []
    common = [item for item in lists[0] if all(item in other for other in lists[1:])]
    for name, items in named.items():
        named[name] = [item for item in items if item not in common]
    return common
