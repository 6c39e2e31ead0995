"""The comparison's words: the lines and cells the console and Markdown views both show."""

from __future__ import annotations

import math

from evalspec._compare.records import (
    CaseChange,
    Comparison,
    FigureChange,
    ModelNoise,
    RowChange,
    Side,
    Spend,
    side_counts,
    side_flaky,
)
from evalspec._compare.words import clipped, count, names, p_text, signed
from evalspec._scoring.confusion import changed_lines
from evalspec._scoring.robustness import FIGURES, HIGHER_IS_BETTER
from evalspec._stats import PairedResult
from evalspec._stats.paired import MAX_CASES, MAX_TRIALS


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
    where = clipped(r.field) + (f" (call {r.call + 1})" if r.call is not None else "")
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


VARIANTS_HEADING = "tool variants in the head, each model's first against the others:"
"""Above the variants' paired results in a diff or review (they never gate)."""


def noise_lines(m: ModelNoise) -> list[str]:
    """What a reviewer reads: the change with the interval of the test that decides, the
    verdict, and the power of that same test."""
    pr = m.pass_rate
    if pr.cases == 0:
        return [f"{m.model}: no case with evidence on both sides to compare"]
    d = pr.difference
    ci = f", {d.confidence:.0%} CI {interval(d.low, d.high, '%')}" if d is not None else ""
    trials = f" × {count(pr.trials, 'trial')}" if pr.trials > 1 else ""
    line = (
        f"{m.model}: {pr.rate} {pr.before:.1%} → {pr.after:.1%} "
        f"(Δ {signed(pr.after - pr.before, '.1%')}{ci}; {count(pr.cases, 'case')}{trials}; "
        f"{pr.improved} improved, {pr.regressed} regressed; {pr.test}, {p_text(pr.p_value)}): "
        f"{pr.verdict}"
    )
    lines = [line]
    power = _power_text(pr)
    if power:
        lines.append(
            f"{m.model}: "
            + "; ".join(power)
            + f" (the same test at power {pr.power:.0%}, α {1 - pr.confidence:.2g})"
        )
    if m.score is not None:
        s = m.score
        lines.append(
            f"{m.model}: mean score Δ {signed(s.estimate, '.3f')} "
            f"({s.confidence:.0%} CI {interval(s.low, s.high, 'f', 3)})"
        )
    if m.flaky:
        lines.append(f"{m.model}: flaky (trials disagree): {names(m.flaky)}")
    if m.known_flaky:
        lines.append(f"{m.model}: marked flaky in the suite, not gated: {names(m.known_flaky)}")
    if m.before_spend and m.after_spend:
        lines.append(f"{m.model}: {spend_text(m.before_spend, m.after_spend)}")
    for kind in dict.fromkeys(k for k, _case in m.moved):
        moved = [case for k, case in m.moved if k == kind]
        lines.append(f"{m.model}: {kind}: {names(moved)}")
    if m.confusion is not None:
        changed = changed_lines(*m.confusion)
        lines += [f"{m.model}: tool confusion (expected → called): {c}" for c in changed]
    lines += [f"{m.model}: {figure_text(f)}" for f in m.robustness]
    return lines


def figure_text(f: FigureChange) -> str:
    """`recovery rate 50.0% → 100.0% (Δ +50.0%, 95% CI …; 2 cases; exact McNemar, p = 1):
    within noise; moved: a retry 0/1 → 1/1`: a robustness figure, paired by case."""
    pr, d = f.result, f.result.difference
    ci = f", {d.confidence:.0%} CI {interval(d.low, d.high, '%')}" if d else ""
    verdict = "within noise"
    if pr.significant:
        up = pr.after > pr.before
        better = up == (f.figure in HIGHER_IS_BETTER)
        verdict = f"significant {'rise' if up else 'fall'} ({'better' if better else 'worse'})"
    moved = f"; moved: {names(f.moved)}" if f.moved else "; no case moved"
    return (
        f"{FIGURES[f.figure]} {pr.before:.1%} → {pr.after:.1%} "
        f"(Δ {signed(pr.after - pr.before, '.1%')}{ci}; {count(pr.cases, 'case')}; "
        f"{pr.test}, {p_text(pr.p_value)}): {verdict}{moved}"
    )


def interval(low: float, high: float, kind: str, places: int = 1) -> str:
    """`+0.01%…+0.08%`: an interval's ends with as many decimals as it takes (up to four
    more) for an end that is not 0 to read as not 0; past that, `+<0.1%`. At one decimal an
    interval of +0.009%…+0.08% read `0.0%…+0.1%` beside a verdict of "significant": it
    excludes 0, and the reader saw it include 0."""
    for extra in range(5):
        fmt = f".{places + extra}{kind}"
        if all(_reads_as_zero(x, fmt) == (x == 0) for x in (low, high)):
            return "…".join(signed(x, fmt) for x in (low, high))
    fmt = f".{places}{kind}"
    return "…".join(_end(x, fmt) for x in (low, high))


def _reads_as_zero(x: float, fmt: str) -> bool:
    return float(format(abs(x), fmt).rstrip("%")) == 0


def _end(x: float, fmt: str) -> str:
    """An interval's end: `+<0.1%` for one too small to show that is not 0."""
    if x == 0 or not _reads_as_zero(x, fmt):
        return signed(x, fmt)
    smallest = format(10 ** -int(fmt[1:-1]) / (100 if fmt.endswith("%") else 1), fmt)
    return f"{'+' if x > 0 else '−'}<{smallest}"


def _power_text(pr: PairedResult) -> list[str]:
    """The smallest change these cases detect, and what it takes to detect the change seen
    when it was not significant (always more than the sample that failed to)."""
    out = []
    cases = count(pr.cases, "case")
    if pr.detectable is not None and pr.detectable > 1:
        out.append(
            f"{cases} {'is' if pr.cases == 1 else 'are'} too few to detect a change of any size"
        )
    elif pr.detectable is not None:
        out.append(
            f"smallest change {cases} detect{'s' if pr.cases == 1 else ''}: {pr.detectable:.1%}"
        )
    if pr.cases_needed is not None and not pr.significant:
        need = (
            f"more than {count(MAX_CASES, 'case')}"
            if pr.cases_needed > MAX_CASES
            else count(pr.cases_needed, "case")
        )
        if pr.trials_needed is not None:
            per = (
                f"more than {count(MAX_TRIALS, 'trial')}"
                if pr.trials_needed > MAX_TRIALS
                else count(pr.trials_needed, "trial")
            )
            need += f" (or {per} per case on these {pr.cases})"
        out.append(f"to detect a change of {abs(pr.after - pr.before):.1%}: {need}")
    return out


def spend_text(before: Spend, after: Spend) -> str:
    """`tokens 1,200 → 1,500 (+25.0%) · cost 0.0012 → 0.0015 (+25.0%)`."""
    text = f"tokens {before.tokens:,} → {after.tokens:,}{_ratio(before.tokens, after.tokens)}"
    if before.cost is not None and after.cost is not None:
        text += f" · cost {before.cost:.4f} → {after.cost:.4f}{_ratio(before.cost, after.cost)}"
    return text


def _ratio(before: float, after: float) -> str:
    """` (+25.0%)`; nothing when there is no ratio to show (from 0, or one whose percentage
    is too large for a float: a cost of 1e-300 before)."""
    ratio = (after - before) / before if before else math.inf
    return f" ({signed(ratio, '.1%')})" if math.isfinite(ratio * 100) else ""
