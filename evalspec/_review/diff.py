"""What a change does to the scores: re-score recorded transcripts under two suite versions.

`diff_suites` scores the same transcripts under a base and a head suite and pairs the results by
(case, model); `compare_runs` pairs results.json files by case, whatever their models are
called (see `evalspec._report.columns`). Both produce a `Comparison`, which the console,
Markdown and JSON renderers read. No model is called: the point
is that a reviewer sees the effect of a spec change without paying for the answers again.

A transcript counts for the head suite only when it answers the head's requests (see
runner/evidence.py); cases without such evidence are "re-run needed" or "needs a run", and
those gate like regressions unless the caller accepts them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import msgspec

from evalspec._report.columns import (
    EPS,
    KIND_ORDER,
    Column,
    Kind,
    RunData,
    Side,
    before_after_pairs,
    build_columns,
    case_order,
    classify,
)
from evalspec._review.noise import (
    ModelNoise,
    Spend,
    gate_failures,
    model_noise,
    side_counts,
    side_flaky,
)
from evalspec._review.recordings_check import RecordingsChange
from evalspec._scoring.results_file import ResultsFile
from evalspec._scoring.types import CaseResult, Row
from evalspec._suite.model import Gate, Suite
from evalspec._transcript import Transcript

if TYPE_CHECKING:
    from evalspec._scoring.protocols import Judge

EXIT_OK = 0
EXIT_REGRESSION = 1
"""The gate failed: by default, a case that passed now fails, on evidence that still answers
the head's requests (see the suite's `gate:`)."""
EXIT_UNVERIFIED = 3
"""Some case needs a run or a re-run, transcripts matched nothing, or nothing was scored."""
EXIT_SECURITY = 4
"""An endpoint, API-key variable or header changed: where keys go is different."""


@dataclass(frozen=True)
class RowChange:
    """One explanation row that differs between the sides (None: the row exists on one side)."""

    trial: int
    field: str
    call: int | None
    before: Row | None
    after: Row | None

    @property
    def flipped(self) -> bool:
        """The critic's verdict (matched or not) changed."""
        return (
            self.before is not None
            and self.after is not None
            and self.before.match != self.after.match
        )

    @property
    def verdict_only(self) -> bool:
        """The verdict flipped while the score stayed: a stricter threshold, for example."""
        return (
            self.flipped
            and self.before is not None
            and self.after is not None
            and abs(self.before.score - self.after.score) <= EPS
        )


@dataclass(frozen=True)
class CaseChange:
    case: str
    model: str
    kind: Kind
    before: Side | None
    after: Side | None
    rows: tuple[RowChange, ...] = ()
    rerun: bool = False
    """The head's requests differ from the ones the recorded transcript answered."""
    needs_run: bool = False
    """No recorded transcript answers this case (or one of its trials) yet."""
    stale: tuple[str, ...] = ()
    """Why the recorded evidence no longer answers the head's requests."""
    named: tuple[str, ...] = ()
    """The suite differences that affect this case: `fail_threshold 0.85 -> 0.97`, ..."""
    rerecorded: bool = False
    """The head side is scored on the head's own recordings (the base's were stale, or the
    pull request re-recorded them)."""
    known_flaky: bool = False
    """The suite (its base version, in a diff) marks the case `flaky: true`: never gates."""
    causes: tuple[str, ...] = ()
    """Which of `named` moved the verdict, proven by re-scoring with it alone (attribution.py);
    empty when the verdict did not move or nothing of the suite changed."""
    counterfactuals: tuple[tuple[str, str], ...] = ()
    """(what was applied to the base suite, the verdict it gives): the proof of `causes`."""
    trials_differ: str = ""
    """Why the sides are not compared: they hold different trials (`3 trials → 1 trial`).
    Such a case is `changed`, never better or worse, and stays out of the noise test."""

    @property
    def gating(self) -> bool:
        """A pass became a fail on evidence that still answers the question asked, in a case
        not known to be flaky."""
        return self.kind == "regression" and not self.rerun and not self.known_flaky

    @property
    def unverified(self) -> bool:
        """The head side has no evidence that answers its requests."""
        return self.rerun or self.needs_run


NEW_SUITE_NOTE = "the suite does not exist in the base version: every case is new"


@dataclass(frozen=True)
class Comparison:
    """What a change does to the scores: per case and model, before → after and why; the
    noise test per model, the gate's verdict and the exit code (diff, compare, review)."""

    title: str
    before_label: str
    after_label: str
    changes: tuple[CaseChange, ...]
    notes: tuple[str, ...] = ()
    added_label: str = "added"
    removed_label: str = "removed"
    columns: tuple[Column, ...] = ()
    """compare: every (run, model) column, for the model × case matrix."""
    security: tuple[str, ...] = ()
    """Security-relevant changes: endpoints, API-key variables, headers."""
    skipped: tuple[str, ...] = ()
    """Transcripts that matched no case and model, grouped with what did not match."""
    suite_wide: tuple[str, ...] = ()
    """Changes that touch every case (run settings, models)."""
    suite_changes: tuple[str, ...] = ()
    """Other changes to the suite that no case names: a tool's answers no recording reached,
    a tool no case offers, the description, a change to the file's text alone."""
    scored: int | None = None
    """How many transcripts were scored (None: not a re-scoring, as in `compare`)."""
    allow_stale: bool = False
    """Accept unverified cases and skipped transcripts (exit 0 instead of 3 for them)."""
    gate: Gate = field(default_factory=Gate)
    """When regressions fail the comparison (the suite's `gate:`, or --gate)."""
    noise: tuple[ModelNoise, ...] = ()
    """Per model: the paired change in pass rate, significant or within noise."""
    gate_notes: tuple[str, ...] = ()
    """What the change does to the gate itself (it applies only once merged)."""
    recordings: tuple[RecordingsChange, ...] = ()
    """review: the suite's recordings file, when it differs from the base's."""

    @property
    def false_requests(self) -> int:
        """Recorded requests the pull request added or changed that do not give their key."""
        return sum(r.unverified for r in self.recordings)

    @property
    def unverified(self) -> int:
        return sum(c.unverified for c in self.changes)

    @property
    def gate_failures(self) -> list[str]:
        """Why the gate fails this comparison; empty when it passes."""
        return gate_failures(self.gate, self.noise, self.changes)

    @property
    def exit_code(self) -> int:
        """Security first, then the gate, then missing evidence (`evalspec review --help`)."""
        if self.security:
            return EXIT_SECURITY
        if self.gate_failures:
            return EXIT_REGRESSION
        if self.scored == 0 or self.false_requests:  # never accepted by --allow-stale
            return EXIT_UNVERIFIED
        if not self.allow_stale and (self.unverified or self.skipped):
            return EXIT_UNVERIFIED
        return EXIT_OK

    def accepting_stale(self, allow: bool = True) -> Comparison:
        return replace(self, allow_stale=allow)

    def counts(self) -> dict[str, int]:
        counts = Counter(c.kind for c in self.changes)
        out: dict[str, int] = {k: counts.get(k, 0) for k in KIND_ORDER}
        out["rerun"] = sum(c.rerun for c in self.changes)
        out["needs_run"] = sum(c.needs_run for c in self.changes)
        out["security"] = len(self.security)
        return out

    def summary(self) -> str:
        """One line: `1 regression, 2 better, 5 unchanged, 1 re-run needed`."""
        n = self.counts()
        labels = {
            "regression": ("regression", "regressions"),
            "worse": ("worse", "worse"),
            "better": ("better", "better"),
            "changed": ("changed", "changed"),
            "added": (self.added_label, self.added_label),
            "missing": ("not run", "not run"),
            "removed": (self.removed_label, self.removed_label),
            "unchanged": ("unchanged", "unchanged"),
        }
        parts = []
        if n["security"]:
            s = n["security"]
            parts.append(f"{s} security-relevant change{'s' if s != 1 else ''}")
        parts += [f"{n[k]} {labels[k][n[k] != 1]}" for k in KIND_ORDER if n[k]]
        if n["needs_run"]:
            parts.append(f"{n['needs_run']} need{'s' if n['needs_run'] == 1 else ''} a run")
        if n["rerun"]:
            parts.append(f"{n['rerun']} re-run needed")
        if self.skipped:
            parts.append("transcripts skipped")
        if self.suite_changes:
            k = len(self.suite_changes)
            parts.append(f"{k} other suite change{'s' if k != 1 else ''}")
        if self.false_requests:
            k = self.false_requests
            parts.append(f"{k} recorded request{'s' if k != 1 else ''} not matching its key")
        elif self.recordings:
            parts.append("recordings changed")
        return ", ".join(parts) or "nothing to compare"

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "before": self.before_label,
            "after": self.after_label,
            "exit_code": self.exit_code,
            "counts": self.counts(),
            "security": list(self.security),
            "skipped": list(self.skipped),
            "suite_wide": list(self.suite_wide),
            "suite_changes": list(self.suite_changes),
            "scored": self.scored,
            "notes": list(self.notes),
            "gate": dict(vars(self.gate)),
            "gate_failures": self.gate_failures,
            "gate_notes": list(self.gate_notes),
            "recordings": [r.to_dict() for r in self.recordings],
            "noise": [m.to_dict() for m in self.noise],
            "changes": [_change_dict(c) for c in self.changes],
            **({"matrix": matrix_dict(self)} if self.columns else {}),
        }


def _side_dict(side: Side | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {"status": side.status, "score": side.score, "reason": side.reason}


def _change_dict(c: CaseChange) -> dict[str, Any]:
    return {
        "case": c.case,
        "model": c.model,
        "kind": c.kind,
        "before": _side_dict(c.before),
        "after": _side_dict(c.after),
        "rerun_needed": c.rerun,
        "needs_run": c.needs_run,
        "stale": list(c.stale),
        "named": list(c.named),
        "causes": list(c.causes),
        "counterfactuals": [{"applied": a, "verdict": v} for a, v in c.counterfactuals],
        "rerecorded": c.rerecorded,
        "known_flaky": c.known_flaky,
        "trials_differ": c.trials_differ,
        "flaky": [side_flaky(c.before), side_flaky(c.after)],
        "rows": [
            {
                "trial": r.trial,
                "field": r.field,
                "call": r.call,
                "before": msgspec.structs.asdict(r.before) if r.before else None,
                "after": msgspec.structs.asdict(r.after) if r.after else None,
            }
            for r in c.rows
        ],
    }


# ---------------------------------------------------------------- classification


def row_changes(before: Sequence[CaseResult], after: Sequence[CaseResult]) -> list[RowChange]:
    """Rows whose score, weight, verdict or expected value differ, trial by trial.

    Rows pair by (expected call, field, occurrence), so a renamed critic keeps its row.
    """
    out: list[RowChange] = []
    b_by_trial = {r.trial: r for r in before}
    a_by_trial = {r.trial: r for r in after}
    for trial in sorted(set(b_by_trial) | set(a_by_trial)):
        b_rows = _keyed(b_by_trial[trial].rows if trial in b_by_trial else ())
        a_rows = _keyed(a_by_trial[trial].rows if trial in a_by_trial else ())
        keys = list(a_rows) + [k for k in b_rows if k not in a_rows]
        for key in keys:
            b, a = b_rows.get(key), a_rows.get(key)
            if _differs(b, a):
                out.append(RowChange(trial, key[1], key[0], b, a))
    return out


def _differs(b: Row | None, a: Row | None) -> bool:
    """A row explains a change when its score, weight or verdict moved (not just its wording)."""
    if b is None or a is None:
        return b is not a
    return (b.score, b.weight, b.match) != (a.score, a.weight, a.match) or b.expected != a.expected


def _keyed(rows: Sequence[Row]) -> dict[tuple[int | None, str, int], Row]:
    seen: Counter[tuple[int | None, str]] = Counter()
    out: dict[tuple[int | None, str, int], Row] = {}
    for r in rows:
        seen[(r.call, r.field)] += 1
        out[(r.call, r.field, seen[(r.call, r.field)])] = r
    return out


class _Flags(TypedDict, total=False):
    """What a CaseChange says besides its two sides (see its fields)."""

    rerun: bool
    needs_run: bool
    stale: tuple[str, ...]
    named: tuple[str, ...]
    rerecorded: bool
    known_flaky: bool
    trials_differ: str


def _change(
    case: str, model: str, before: Side | None, after: Side | None, **flags: Unpack[_Flags]
) -> CaseChange:
    """Classify one pair; an unmoved score whose rows or suite definition changed is `changed`,
    and so is a pair whose sides hold different trials (they are not compared)."""
    kind = classify(before, after)
    rows: tuple[RowChange, ...] = ()
    if before is not None and after is not None:
        rows = tuple(row_changes(before.results, after.results))
        if kind == "unchanged" and (rows or flags.get("named")):
            kind = "changed"
        differ = trials_differ(before, after)
        if differ:
            kind, flags["trials_differ"] = "changed", differ
    return CaseChange(case, model, kind, before, after, rows, **flags)


def trials_differ(before: Side, after: Side) -> str:
    """Why two sides cannot be compared trial for trial, or empty: a case passing 2 of 3
    trials and one passing 1 of 1 are not better or worse than each other."""
    if not before.results or not after.results:
        return ""
    b, a = ({r.trial for r in s.results} for s in (before, after))
    if b == a:
        return ""
    from evalspec._review.noise import count

    shown = f"{count(len(b), 'trial')} → {count(len(a), 'trial')}"
    if len(b) == len(a):
        shown = f"trials {_trial_list(b)} → {_trial_list(a)}"
    return (
        f"not compared: the sides ran different trials ({shown}); run both with the same --trials"
    )


def _trial_list(trials: set[int]) -> str:
    return ", ".join(str(t + 1) for t in sorted(trials)[:5]) + (", ..." if len(trials) > 5 else "")


def _ordered(changes: list[CaseChange]) -> tuple[CaseChange, ...]:
    """By severity: gating regressions, then cases without evidence, then by kind."""
    indexed = sorted(enumerate(changes), key=lambda ic: (severity(ic[1]), ic[0]))
    return tuple(c for _, c in indexed)


def severity(c: CaseChange) -> tuple[int, int]:
    """Sort key, lower first: what a reviewer must act on comes first."""
    group = 0 if c.gating else 1 if c.unverified else 2
    return group, KIND_ORDER.index(c.kind)


# ---------------------------------------------------------------- diff of two suites


def _sides(
    suite: Suite, transcripts: Sequence[Transcript], embedder: Any, judge: Judge | None
) -> dict[tuple[str, str], Side]:
    """Score the transcripts this suite has a case and model for; Side per (case, model)."""
    from evalspec._report.records import build_report

    cases = {c.name for c in suite.cases}
    models = {m.name for m in suite.models}
    kept = [t for t in transcripts if t.case in cases and t.model in models]
    if not kept:
        return {}
    report = build_report(suite, kept, embedder=embedder, judge=judge)
    return {
        (c.case, c.model): Side(c.status, c.score, c.reason, tuple(c.results)) for c in report.cases
    }


def _behaviors_reached(
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


def _plan_ids(suite: Suite) -> dict[tuple[str, str], dict[int, str]]:
    from evalspec._plan import compile_plan

    ids: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    for it in compile_plan(suite).items:
        ids[(it.case.name, it.model.name)][it.trial] = it.id
    return ids


@dataclass
class _Evidence:
    """The transcripts chosen for the head side of one (case, model), and what is wrong."""

    transcripts: list[Transcript]
    stale: list[str]
    missing_trials: int = 0
    rerecorded: bool = False
    tools: set[str] = field(default_factory=set)
    """Tools whose recorded outputs differ from what they answer now."""


def _head_evidence(
    head: Suite,
    head_ids: dict[tuple[str, str], dict[int, str]],
    transcripts: Sequence[Transcript],
    head_transcripts: Sequence[Transcript],
) -> dict[tuple[str, str], _Evidence]:
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
    out: dict[tuple[str, str], _Evidence] = {}
    held: dict[tuple[str, str], set[int]] = defaultdict(set)
    for case, model, trial in [*recorded, *fresh]:
        held[(case, model)].add(trial)
    for key, planned in head_ids.items():
        ev = _Evidence([], [])
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


def review_embedder(base: Suite | None, root: Path | None = None) -> Any:
    """The embedder that scores both sides: the base's model and cache, else the bundled default.

    Never the head's: a model directory's `modules.json` names Python code that loading it
    imports, so a pull request naming a model it ships would run that code in review (a changed
    model is listed as a security-relevant change instead). A relative path is the base's file
    under `root`, never the checkout's file of that name.
    """
    from evalspec._scoring.embeddings import EmbeddingStore

    if base is None:
        return EmbeddingStore()
    model, cache = base.embeddings.model, base.embeddings.cache_dir
    if root is not None:
        if (
            model
            and not Path(model).is_absolute()
            and (Path(model).exists() or (root / model).exists())
        ):
            model = str(root / model)
        if cache and not Path(cache).is_absolute():
            cache = str(root / cache)
    return EmbeddingStore(model=model, cache_dir=Path(cache) if cache else None)


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
    from evalspec._review.changes import case_changes, suite_wide_changes, unnamed_changes
    from evalspec._review.security import security_changes

    if embedder is None:
        embedder = review_embedder(base, model_root)
    head_ids = _plan_ids(head)
    base_ids = _plan_ids(base) if base is not None else {}
    evidence = _head_evidence(head, head_ids, transcripts, head_transcripts)
    chosen = [t for ev in evidence.values() for t in ev.transcripts]
    after = _sides(head, chosen, embedder, judge)
    before = _sides(base, transcripts, embedder, judge) if base is not None else {}
    stale_tools: dict[str, set[str]] = defaultdict(set)
    for (case, _model), ev in evidence.items():
        stale_tools[case].update(ev.tools)
    if base is not None:
        for case, names in _behaviors_reached(base, head, chosen).items():
            stale_tools[case].update(names)
    named = case_changes(base, head, stale_tools) if base is not None else {}
    suite_wide = suite_wide_changes(base, head) if base is not None else []
    suite_wide += _common_to_all(named)
    said = [item for items in named.values() for item in items] + suite_wide
    others = unnamed_changes(base, head, said) if base is not None else []

    policy = gate or (base or head).gate
    known_flaky = frozenset(c.name for c in (base or head).cases if c.flaky)
    keys = list(head_ids) + [k for k in base_ids if k not in head_ids]
    changes: list[CaseChange] = []
    for key in keys:
        in_base, in_head = key in base_ids, key in head_ids
        b = before.get(key) if in_base else None
        a = after.get(key) if in_head else None
        ev = evidence.get(key, _Evidence([], []))
        flags: _Flags = {
            "rerun": bool(ev.stale),
            # No transcript, a trial missing, or a judge verdict / simulated answer missing
            # from its cache.
            "needs_run": in_head
            and (
                a is None
                or ev.missing_trials > 0
                or any(r.details.get("needs_run") for r in a.results)
            ),
            "stale": tuple(ev.stale),
            "named": tuple(named.get(key[0], ())) if in_head else (),
            "rerecorded": ev.rerecorded,
            "known_flaky": key[0] in known_flaky,
        }
        if a is None and b is None:
            kind: Kind = "added" if not in_base else "removed" if not in_head else "missing"
            changes.append(CaseChange(key[0], key[1], kind, None, None, **flags))
        else:
            changes.append(_change(key[0], key[1], b, a, **flags))
    used = {id(t) for t in transcripts if (t.case, t.model) in base_ids} | {id(t) for t in chosen}
    skipped = unmatched_transcripts(
        transcripts, [s for s in (base, head) if s is not None], "the suite"
    )
    notes = [
        f"scored {len(used)} recorded transcript{'s' if len(used) != 1 else ''}"
        + (f" from {source}" if source else "")
        + "; no model was called"
    ]
    if base is None:
        notes.append(NEW_SUITE_NOTE)
    if not used:
        notes.append("nothing was scored: no transcript answers a case of either version")
    gate_notes = []
    if base is not None and gate is None and head.gate != base.gate:
        from evalspec._review.edits import edits

        moved = "; ".join(e.text for e in edits(base.gate, head.gate))
        gate_notes.append(
            f"the change edits the suite's gate ({moved}): it applies once merged; this uses "
            "the base's"
        )
    head_marked = sorted(c.name for c in head.cases if c.flaky and c.name not in known_flaky)
    if base is not None and head_marked:
        gate_notes.append(
            f"marked flaky by this change (still gated until merged): {', '.join(head_marked[:10])}"
        )
    if base is not None:
        changes = _attributed(base, head, changes, transcripts, evidence, embedder, judge)
    ordered = _ordered(changes)
    spend = _spend(base, head, transcripts, chosen, ordered)
    noise = tuple(
        model_noise(
            model,
            [c for c in ordered if c.model == model],
            policy,
            known_flaky=known_flaky,
            spend=spend.get(model),
        )
        for model in dict.fromkeys(m for _c, m in keys)
    )
    return Comparison(
        title=f"evalspec diff: {head.name}",
        before_label=base_label or (base.path if base is not None else "(none)"),
        after_label=head_label or head.path,
        changes=ordered,
        notes=tuple(notes),
        security=tuple(security_changes(base, head, known_endpoints)),
        skipped=tuple(skipped),
        suite_wide=tuple(suite_wide),
        suite_changes=tuple(others),
        scored=len(used),
        allow_stale=allow_stale,
        gate=policy,
        noise=noise,
        gate_notes=tuple(gate_notes),
    )


def _attributed(
    base: Suite,
    head: Suite,
    changes: list[CaseChange],
    transcripts: Sequence[Transcript],
    evidence: dict[tuple[str, str], _Evidence],
    embedder: Any,
    judge: Judge | None,
) -> list[CaseChange]:
    """Each verdict that moved, with the change(s) that moved it, proven by re-scoring."""
    from evalspec._review.attribution import Budget, SuiteEdits, attribute, same_verdict

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
        if c.before is None or c.after is None or ev is None or c.rerun:
            continue
        if same_verdict(c.before, c.after):
            continue

        def score(suite: Suite, chosen: Sequence[Transcript], key: tuple[str, str] = key) -> Any:
            return _sides(suite, chosen, embedder, judge).get(key)

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


# ---------------------------------------------------------------- compare two results files


def compare_results(
    a: ResultsFile, b: ResultsFile, *, a_label: str = "A", b_label: str = "B"
) -> Comparison:
    """Two results files, A before and B after."""
    return compare_runs([RunData(a_label, a), RunData(b_label, b)])


def compare_runs(runs: Sequence[RunData], *, gate: Gate | None = None) -> Comparison:
    """Pair runs by case, whatever the models are called; the matrix of every column.

    The gate is `gate`, else the one the earliest run's suite had (its results file records
    it), else the default.

    Which columns are before and after: see `before_after_pairs`. A change's `model` is the
    model both sides share, or `before → after` when their labels differ.
    """
    columns = build_columns(runs)
    pairs = before_after_pairs(runs, columns)
    cases = case_order(columns)
    changes: list[CaseChange] = []
    for i, j in pairs:
        b_col, a_col = columns[i], columns[j]
        label = _pair_label(runs, b_col, a_col)
        for case in cases:
            before, after = b_col.cells.get(case), a_col.cells.get(case)
            if before is not None or after is not None:
                changes.append(_change(case, label, before, after))
    suites = list(dict.fromkeys(r.data.suite or "" for r in runs))
    notes = []
    if len(suites) > 1:
        notes.append(f"different suites: {', '.join(suites)}")
    if pairs:
        shown = "; ".join(f"{columns[i].label} → {columns[j].label}" for i, j in pairs)
        notes.append(f"compared {shown}")
    before_label = runs[0].label if runs else ""
    after_label = runs[-1].label if runs else ""
    if len(runs) == 1 and len(columns) > 1:
        before_label, after_label = columns[0].label, ", ".join(c.label for c in columns[1:])
    policy, gate_note = _runs_gate(runs, gate)
    if gate_note:
        notes.append(gate_note)
    ordered = _ordered(changes)
    noise = tuple(
        model_noise(
            label,
            [c for c in ordered if c.model == label],
            policy,
            spend=_column_spend(columns[i], columns[j]),
        )
        for label, (i, j) in _pair_labels(runs, columns, pairs).items()
    )
    return Comparison(
        title=f"evalspec compare: {suites[-1] if suites else ''}".rstrip(": "),
        before_label=before_label,
        after_label=after_label,
        changes=ordered,
        notes=tuple(notes),
        added_label=f"only in {after_label}",
        removed_label=f"only in {before_label}",
        columns=tuple(columns),
        gate=policy,
        noise=noise,
    )


def recorded_gate(runs: Sequence[RunData]) -> Gate | None:
    """The gate the earliest run was judged under, as its results file records it (None: a
    file written before results carried their gate). The earliest, as review takes the
    base's: the run being compared cannot loosen the gate it is judged by."""
    for run in runs[:1]:
        if not isinstance(run.data.gate, msgspec.UnsetType):
            return Gate(**msgspec.structs.asdict(run.data.gate))
    return None


def recorded_gates(runs: Sequence[RunData]) -> set[Gate]:
    return {
        Gate(**msgspec.structs.asdict(r.data.gate))
        for r in runs
        if not isinstance(r.data.gate, msgspec.UnsetType)
    }


def _runs_gate(runs: Sequence[RunData], given: Gate | None) -> tuple[Gate, str]:
    """The gate that applies (`given`, else the earliest run's) and a note when the runs were
    judged under different gates or the earliest records none."""
    if given is not None:
        return given, ""
    recorded = recorded_gate(runs)
    if recorded is None:
        return Gate(), "the earliest run records no gate (written before results carried it): " + (
            f"gate {Gate().mode}"
        )
    others = recorded_gates(runs[1:]) - {recorded}
    note = "later runs were judged under another gate; this is the earliest's" if others else ""
    return recorded, note


def _pair_label(runs: Sequence[RunData], b_col: Column, a_col: Column) -> str:
    """A change's model: the one both columns share, or `before → after`."""
    if b_col.model == a_col.model and len(runs) > 1:
        return a_col.model
    return a_col.label if b_col.label == a_col.label else f"{b_col.label} → {a_col.label}"


def _pair_labels(
    runs: Sequence[RunData], columns: Sequence[Column], pairs: Sequence[tuple[int, int]]
) -> dict[str, tuple[int, int]]:
    return {_pair_label(runs, columns[i], columns[j]): (i, j) for i, j in pairs}


def _column_spend(before: Column, after: Column) -> tuple[Spend, Spend] | None:
    """Whole-run tokens and cost of two columns, from their results.json summaries."""

    def spend(col: Column) -> Spend | None:
        m = col.summary
        return None if m is None else Spend(m.tokens, m.cost)

    b, a = spend(before), spend(after)
    return (b, a) if b is not None and a is not None else None


def matrix_rows(comparison: Comparison) -> list[tuple[str, Kind, list[Side | None]]]:
    """The model × case matrix: (case, its most pressing change, a cell per column).

    Ordered as the changes are: regressions first.
    """
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    kind_of: dict[str, Kind] = {}
    for c in comparison.changes:
        if c.case not in kind_of or rank[c.kind] < rank[kind_of[c.case]]:
            kind_of[c.case] = c.kind
    cases = case_order(comparison.columns)
    order = {case: i for i, case in enumerate(cases)}
    cases.sort(key=lambda case: (rank[kind_of.get(case, "unchanged")], order[case]))
    return [
        (case, kind_of.get(case, "unchanged"), [col.cells.get(case) for col in comparison.columns])
        for case in cases
    ]


def matrix_dict(comparison: Comparison) -> dict[str, Any]:
    return {
        "columns": [{"label": c.label, "run": c.run, "model": c.model} for c in comparison.columns],
        "rows": [
            {"case": case, "change": kind, "cells": [_side_dict(s) for s in cells]}
            for case, kind, cells in matrix_rows(comparison)
        ],
    }


# ---------------------------------------------------------------- rendering helpers


def shown_changes(comparison: Comparison, *, show_unchanged: bool) -> list[CaseChange]:
    """Changes worth a line: anything but unchanged, and unchanged ones without evidence."""
    return [
        c
        for c in comparison.changes
        if show_unchanged or c.kind != "unchanged" or c.unverified or c.named
    ]


def side_text(side: Side | None) -> str:
    return "-" if side is None else f"{side.status.upper()} {side.score:.3f}"


def kind_label(c: CaseChange, comparison: Comparison) -> str:
    return {
        "regression": "REGRESSION",
        "worse": "worse",
        "better": "better",
        "changed": "changed",
        "added": comparison.added_label,
        "removed": comparison.removed_label,
        "missing": "not run",
        "unchanged": "unchanged",
    }[c.kind]


def evidence_text(c: CaseChange) -> str:
    """`re-run needed`, `needs a run`, `re-recorded`, or empty: the state of the evidence."""
    parts = []
    if c.needs_run:
        parts.append("needs a run")
    if c.rerun:
        parts.append("re-run needed: the recording answers other requests")
    if c.rerecorded and not c.rerun:
        parts.append("scored on the head's own recordings")
    if c.trials_differ:
        parts.append(c.trials_differ)
    flaky = flaky_text(c)
    if flaky:
        parts.append(flaky)
    return "; ".join(parts)


def flaky_text(c: CaseChange) -> str:
    """`marked flaky, not gated` or `flaky: 3/5 → 1/5 trials passed`, or empty."""
    if c.known_flaky:
        return "marked flaky in the suite: not gated"
    if side_flaky(c.before) or side_flaky(c.after):
        sides = [
            "-" if side is None else "{}/{}".format(*side_counts(side))
            for side in (c.before, c.after)
        ]
        return f"flaky: {' → '.join(sides)} trials passed"
    return ""


def change_text(c: CaseChange, comparison: Comparison) -> str:
    """The change column: what happened, and what to do about it."""
    label = kind_label(c, comparison)
    extra = evidence_text(c)
    return f"{label} ({extra})" if extra else label


def row_text(r: RowChange) -> str:
    """`city: 1.00 → 0.00 (Got 'Paris', expected 'Lyon' ...)`; a flipped verdict says so even
    when the score did not move."""
    where = r.field + (f" (call {r.call + 1})" if r.call is not None else "")
    row = r.after or r.before
    why = row.reason if row else ""
    if r.verdict_only and r.after is not None:
        verdict = "matched" if r.after.match else "not matched"
        return f"{where}: {r.after.critic} {r.after.score:.2f} now {verdict}" + (
            f": {why}" if why else ""
        )
    b = f"{r.before.score:.2f}×{r.before.weight:g}" if r.before else "-"
    a = f"{r.after.score:.2f}×{r.after.weight:g}" if r.after else "-"
    return f"{where}: {b} → {a}" + (f": {why}" if why else "")
