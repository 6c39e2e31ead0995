"""Which change moved a verdict: computed by re-scoring, never guessed from what a case reaches.

A pull request that edits a threshold, a critic and an effect at once moves verdicts for three
different reasons. Naming every change a case touches says nothing about which one did it
(a case that went WARN -> FAIL at the same score was once blamed on an effect its calls reach,
when the threshold had moved). Here each verdict change is explained by counterfactuals on the
same recorded transcripts: the base suite with one change applied (then two), re-scored; a
change that alone gives the head's verdict is its cause. A re-recorded answer is tested the
same way (the base suite on the new recording). The work is bounded; past the bound the row
says so instead of guessing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations

from evalspec._compare.edits import Edit, apply, edits
from evalspec._compare.records import EPS, Side
from evalspec._compare.words import clipped
from evalspec._suite.model import Case, Suite
from evalspec._transcript import Transcript

MAX_SINGLE = 16
"""Changes tried one by one for one verdict; a case reached by more is not attributed."""
MAX_PAIRED = 6
"""When no change alone explains a verdict, pairs are tried among at most this many."""
MAX_RESCORES = 400
"""Re-scorings of one case and model (all its trials) per comparison, in all."""

Score = Callable[[Suite, Sequence[Transcript]], Side | None]
"""Scores one case's transcripts under a suite restricted to that case: the comparison's own
scoring (its embedder and judge cache), so a counterfactual is scored as the sides were."""


@dataclass
class Budget:
    """Re-scorings left for this comparison."""

    left: int = MAX_RESCORES

    def take(self, n: int) -> bool:
        """Spend `n` re-scorings; False (nothing spent) when fewer are left."""
        if n > self.left:
            return False
        self.left -= n
        return True


@dataclass(frozen=True)
class Attribution:
    """Why one case's verdict moved, in a reviewer's words, with the counterfactual behind it."""

    causes: tuple[str, ...]
    proven: bool = True
    """False when the bound stopped the search (the causes then say so)."""
    tried: int = 0
    """Counterfactual re-scorings made for this verdict."""
    counterfactuals: tuple[tuple[str, str], ...] = field(default=())
    """(what was applied, the verdict it gives): the evidence for the causes."""


class SuiteEdits:
    """The edits between two versions of a suite, by the case they can reach: a case's own (its
    rubric, critics, expectations, state, turns: defaults are merged into each case) and those
    of the tools it offers (definitions, responses, behaviours), each applicable to the base
    suite alone. A tool's edits are found once, however many cases offer it."""

    def __init__(self, base: Suite, head: Suite) -> None:
        self.base, self.head = base, head
        self._b_cases = {c.name: i for i, c in enumerate(base.cases)}
        self._h_cases = {c.name: c for c in head.cases}
        self._b_tools = {t.name: j for j, t in enumerate(base.tools)}
        self._h_tools = {t.name: t for t in head.tools}
        self._tools: dict[str, list[Edit]] = {}
        env = edits(base.environment, head.environment)
        self._environment = [_under(("environment",), ("environment",), e) for e in env]

    def for_case(self, case: str) -> list[Edit]:
        i, h_case = self._b_cases.get(case), self._h_cases.get(case)
        if i is None or h_case is None:
            return []
        found = [_under(("cases", i), (), e) for e in edits(self.base.cases[i], h_case)]
        for name in sorted(_offered(self.base, self.base.cases[i]) | _offered(self.head, h_case)):
            found += self._tool(name)
        found += self._environment
        return [e for e in found if e.steps and e.steps[-1] != "loc"]

    def _tool(self, name: str) -> list[Edit]:
        known = self._tools.get(name)
        if known is None:
            j, after = self._b_tools.get(name), self._h_tools.get(name)
            known = []
            if j is not None and after is not None:
                named = (f"tool {name}",)
                known = [_under(("tools", j), named, e) for e in edits(self.base.tools[j], after)]
            self._tools[name] = known
        return known


def _under(steps: tuple[str | int, ...], where: tuple[str, ...], e: Edit) -> Edit:
    """An edit of a part of the suite, made applicable to (and named from) the whole suite."""
    return replace(e, steps=(*steps, *e.steps), where=(*where, *e.where))


def _offered(suite: Suite, case: Case) -> set[str]:
    if case.tools is None:
        return {t.name for t in suite.tools}
    return set(case.tools) | {n for t in case.turns for n in t.add_tools}


def same_verdict(a: Side | None, b: Side | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.status == b.status and abs(a.score - b.score) <= EPS


def verdict(side: Side | None) -> str:
    return "-" if side is None else f"{side.status.upper()} {side.score:.3f}"


def attribute(
    base: Suite,
    case: str,
    before: Side,
    after: Side,
    transcripts: Sequence[Transcript],
    changes: list[Edit],
    score: Score,
    budget: Budget,
    *,
    new_evidence: bool,
) -> Attribution:
    """Why `case` went from `before` to `after`: `transcripts` are those the head side was
    scored on; `new_evidence` when they are not the ones the base side was scored on."""
    tried: list[tuple[str, str]] = []

    def counterfactual(suite: Suite, label: str) -> Side | None:
        restricted = replace(suite, cases=tuple(c for c in suite.cases if c.name == case))
        try:
            side = score(restricted, transcripts)
        except Exception as exc:  # a change that means nothing alone (a reference it needs)
            tried.append((label, f"cannot be scored alone ({type(exc).__name__})"))
            return None
        tried.append((label, verdict(side)))
        return side

    def done(causes: list[str], proven: bool = True) -> Attribution:
        return Attribution(tuple(causes), proven, len(tried), tuple(tried))

    on_new: Side | None = None
    if new_evidence:
        if not budget.take(1):
            return done([_spent_text()], proven=False)
        on_new = counterfactual(base, "the base suite on the head's recordings")
        if same_verdict(on_new, after):
            return done([f"re-recorded answer (the base suite scores it {verdict(on_new)})"])
        evidence_moved = not same_verdict(on_new, before)
    else:
        evidence_moved = False
    recorded = _with_new(on_new) if evidence_moved else ""
    if not changes:
        return done(["re-recorded answer"] if evidence_moved else [])
    if len(changes) > MAX_SINGLE:
        return done([_bound_text(len(changes))], proven=False)
    if not budget.take(len(changes)):
        return done([_spent_text()], proven=False)
    alone: list[tuple[Edit, Side | None]] = [
        (e, counterfactual(apply(base, e), e.text)) for e in changes
    ]
    causes = [_cause(e, side, before, recorded) for e, side in alone if same_verdict(side, after)]
    if causes:
        return done(causes)
    pairs = list(combinations(changes, 2)) if len(changes) <= MAX_PAIRED else []
    if pairs and budget.take(len(pairs)):
        alone_gives = {id(e): side for e, side in alone}
        for a, b in pairs:
            side = counterfactual(apply(apply(base, a), b), f"{a.text} and {b.text}")
            if same_verdict(side, after):
                said = _together(a, b, alone_gives[id(a)], alone_gives[id(b)], before)
                return done([said + (f", {recorded})" if recorded else "")])
    with_new = f", {recorded})" if recorded else ""
    return done(
        [
            f"the {len(changes)} changes together{with_new} (no one or two of them alone give "
            f"{verdict(after)})"
        ]
    )


def _with_new(on_new: Side | None) -> str:
    """Said of a change whose effect was measured on a re-recorded answer that itself moved
    the verdict: the two are not apart, and what the answer alone gives is said."""
    return f"with the re-recorded answer (which alone gives {verdict(on_new)}"


def _together(a: Edit, b: Edit, a_alone: Side | None, b_alone: Side | None, before: Side) -> str:
    """Two changes that give the head's verdict only together: whether neither alone moves it
    (an interaction) or each moves it part of the way, with what each alone gives."""
    if same_verdict(a_alone, before) and same_verdict(b_alone, before):
        return f"interaction of {a.text} and {b.text} (neither alone moves it)"
    if verdict(a_alone) == verdict(b_alone):
        return f"{a.text} and {b.text} together (alone, each gives {verdict(a_alone)})"
    return (
        f"{a.text} and {b.text} together (alone, the first gives {verdict(a_alone)}, "
        f"the second {verdict(b_alone)})"
    )


def _cause(e: Edit, alone: Side | None, before: Side, recorded: str = "") -> str:
    """`rubric · fail_threshold: 0.8 -> 0.85 (alone: WARN 0.833 -> FAIL 0.833)`, with the first
    row whose verdict or value the change moved when the score moved; `recorded` when it was
    measured on a re-recorded answer that moved the verdict too (then not alone)."""
    if recorded:
        text = f"{e.text}, {recorded}; together: {verdict(before)} -> {verdict(alone)}"
    else:
        text = f"{e.text} (alone: {verdict(before)} -> {verdict(alone)}"
    if alone is not None and abs(alone.score - before.score) <= EPS:
        return text + ", score unchanged)"
    moved = _moved_row(before, alone)
    return text + (f"; {moved})" if moved else ")")


def _moved_row(before: Side, after: Side | None) -> str:
    """The first explanation row whose actual value or verdict differs: `/orders/0/status:
    "placed" -> "pending"`."""
    from evalspec._util.json_values import short

    if after is None or not before.results or not after.results:
        return ""
    b_rows = {(r.field, r.call): r for r in before.results[0].rows}
    for r in after.results[0].rows:
        old = b_rows.get((r.field, r.call))
        if old is not None and (old.actual != r.actual or old.match != r.match):
            if old.actual != r.actual:
                return f"{clipped(r.field)}: {short(old.actual)} -> {short(r.actual)}"
            return f"{clipped(r.field)} now {'matched' if r.match else 'not matched'}"
    return ""


def _bound_text(n: int) -> str:
    return (
        f"cause not computed: {n} changes reach this case, more than the {MAX_SINGLE} tried "
        "one by one"
    )


def _spent_text() -> str:
    return (
        f"cause not computed: this comparison's {MAX_RESCORES} re-scorings are spent on the "
        "cases above"
    )
