"""Score transcripts against a suite: the whole of `evalspec score`, and the last stage of a run.

Per transcript: pair expected and actual calls (matching.py), judge every argument with its
critic, add the case's evaluators and final-answer checks, then place the score in a band.

Rules (documented in the README reference):
- case score = Σ weight × score / Σ weight over every row: each matched pair's tool-selection
  row and argument rows, a zero row for each expected call with no partner (weighing its tool
  selection plus its critics), a zero row per extra call when `extra_calls: penalize`
  (weighing `tool_selection_weight`), and each evaluator and final-answer check with its weight.
- a case with nothing to weigh scores 1.0.
- fail outright: `fail_on_tool_call_quantity` and a different number of calls (score 0, as
  Arcade does); `fail_on_tool_selection` and an expected call unmatched or paired with another
  tool; a `required` evaluator below 1; a transcript that carries a run error (status error).
- otherwise: below fail_threshold fails; from fail_threshold up to warn_threshold warns
  (passes, with a warning); at or above warn_threshold passes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evalspec.scoring.matching import (
    ArgJudge,
    assign,
    describe_calls,
    judges_for,
    same_tool,
    score_pair,
    texts_for_pair,
)
from evalspec.scoring.types import CaseResult, Embedder, Row, Status
from evalspec.spec.model import Case, Rubric, Suite
from evalspec.transcript import ToolCall, Transcript


def band(score: float, rubric: Rubric) -> Status:
    """The evaluation-framework bands: fail < fail_threshold <= warn < warn_threshold <= pass."""
    if score < rubric.fail_threshold:
        return "fail"
    if score < rubric.warn_threshold:
        return "warn"
    return "pass"


@dataclass
class _Prepared:
    case: Case
    transcript: Transcript
    actual: list[ToolCall]
    judges: list[list[ArgJudge]]


class Scorer:
    """Scores many transcripts of one suite, embedding all texts of the batch together."""

    def __init__(self, suite: Suite, embedder: Embedder | None = None, judge: object = None):
        self.suite = suite
        self.cases = {c.name: c for c in suite.cases}
        self.tools = {t.name: t for t in suite.tools}
        self._embedder = embedder
        self._judge = judge

    @property
    def embedder(self) -> Embedder | None:
        return self._embedder

    def needs_embeddings(self, transcripts: Iterable[Transcript]) -> list[str]:
        """Every text a similarity critic or check will embed for these transcripts."""
        texts: list[str] = []
        for t in transcripts:
            prep = self._prepare(t)
            if prep is None:
                continue
            for i, call in enumerate(prep.case.expect.tool_calls):
                for a in prep.actual:
                    if same_tool(call.tool, a.name, prep.case.rubric):
                        texts.extend(texts_for_pair(prep.judges[i], call, a))
            for check in prep.case.expect.final_answer:
                if check.kind == "similarity" and t.final_answer:
                    texts.extend([str(check.params.get("value", "")), t.final_answer])
        return texts

    def score_all(self, transcripts: Sequence[Transcript]) -> list[CaseResult]:
        """Score a batch: embed every needed text in one go, then judge each transcript."""
        texts = self.needs_embeddings(transcripts)
        if texts:
            self._embedder = self._embedder or _default_embedder(self.suite)
            self._embedder.prefetch(texts)
        return [self.score(t) for t in transcripts]

    def _prepare(self, t: Transcript) -> _Prepared | None:
        case = self.cases.get(t.case)
        if case is None:
            return None
        actual = list(t.tool_calls)
        if self.suite.run.mode == "single_turn":
            actual = [c for c in actual if c.turn == 0]
        judges = [
            judges_for(call, case.critics, self.tools.get(call.tool))
            for call in case.expect.tool_calls
        ]
        return _Prepared(case, t, actual, judges)

    def score(self, t: Transcript) -> CaseResult:
        prep = self._prepare(t)
        if prep is None:
            return CaseResult(
                t.item_id,
                t.case,
                t.model,
                t.trial,
                0.0,
                "error",
                f"the suite has no case named {t.case!r}",
            )
        if t.error:
            return CaseResult(
                t.item_id, t.case, t.model, t.trial, 0.0, "error", f"the run failed: {t.error}"
            )
        case, actual, rubric = prep.case, prep.actual, prep.case.rubric
        expected = case.expect.tool_calls
        rows: list[Row] = []
        earned = weight = 0.0
        fail_reasons: list[str] = []

        if case.expect.no_tool_calls:
            ok = not actual
            rows.append(
                Row(
                    "no_tool_calls",
                    "no calls",
                    describe_calls(actual),
                    1.0 if ok else 0.0,
                    rubric.tool_selection_weight,
                    "the model rightly called no tool"
                    if ok
                    else f"expected no tool call, the model called {describe_calls(actual)}",
                    "no_tool_calls",
                    None,
                    ok,
                )
            )
            earned += rows[-1].score * rows[-1].weight
            weight += rows[-1].weight
            if not ok and rubric.fail_on_tool_selection:
                fail_reasons.append(f"expected no tool call, got {describe_calls(actual)}")

        pairs = self._pairs(prep)
        matched_actual = {j for _, j, _ in pairs}
        matched_expected = {i for i, _, _ in pairs}
        for i, _j, ps in pairs:
            rows.extend(ps.rows)
            earned += ps.earned
            weight += ps.weight
            if not ps.tool_ok:
                fail_reasons.append(
                    f"expected {expected[i].tool}, the model called {ps.rows[0].actual}"
                )
        for i, call in enumerate(expected):
            if i in matched_expected:
                continue
            w = rubric.tool_selection_weight + sum(j.spec.weight for j in prep.judges[i])
            called = any(same_tool(call.tool, a.name, rubric) for a in actual)
            if called and case.expect.ordered:
                why = f"{call.tool} was called, but not in the expected order"
            elif called:
                why = f"{call.tool} was called fewer times than expected"
            else:
                why = f"{call.tool} was never called"
            rows.append(
                Row("missing_call", call.tool, None, 0.0, w, why, "tool_selection", i, False)
            )
            weight += w
            fail_reasons.append(why)
        if rubric.extra_calls == "penalize" and not case.expect.no_tool_calls:
            for j, a in enumerate(actual):
                if j not in matched_actual:
                    rows.append(
                        Row(
                            "extra_call",
                            None,
                            a.name,
                            0.0,
                            rubric.tool_selection_weight,
                            f"unexpected call to {a.name}",
                            "extra_calls",
                            None,
                            False,
                        )
                    )
                    weight += rubric.tool_selection_weight

        evaluator_scores: dict[str, float] = {}
        details: dict[str, object] = {}
        for spec in case.evaluators:
            from evalspec.scoring.evaluators import run_evaluator

            res = run_evaluator(
                spec,
                t,
                expected,
                embedder=self._embedder,
                normalize_names=rubric.normalize_tool_names,
            )
            evaluator_scores[res.name] = res.score
            details[res.name] = res.justification
            rows.append(
                Row(
                    res.name,
                    None,
                    None,
                    res.score,
                    spec.weight,
                    _evaluator_reason(res),
                    spec.kind,
                    None,
                    res.passed,
                )
            )
            earned += res.score * spec.weight
            weight += spec.weight
            if spec.required and res.score < 1.0:
                fail_reasons.append(f"required evaluator {res.name} scored {res.score:.2f}")
        for check in case.expect.final_answer:
            res = self._final_answer(check, t, case)
            evaluator_scores[f"final_answer.{check.kind}"] = res.score
            rows.append(
                Row(
                    f"final_answer.{check.kind}",
                    _check_expected(check),
                    t.final_answer,
                    res.score,
                    check.weight,
                    _evaluator_reason(res),
                    check.kind,
                    None,
                    res.passed,
                )
            )
            earned += res.score * check.weight
            weight += check.weight

        score = earned / weight if weight > 0 else 1.0
        score = min(1.0, max(0.0, score))
        n_exp = len(expected)
        if (
            rubric.fail_on_tool_call_quantity
            and not case.expect.no_tool_calls
            and len(actual) != n_exp
        ):
            reason = (
                f"expected {n_exp} call{'s' if n_exp != 1 else ''}, the model made "
                f"{len(actual)}: {describe_calls(actual)}"
            )
            return CaseResult(
                t.item_id,
                t.case,
                t.model,
                t.trial,
                0.0,
                "fail",
                reason,
                tuple(rows),
                evaluator_scores,
                {**details, "score_before_quantity_rule": score},
            )
        if rubric.fail_on_tool_selection and fail_reasons:
            return CaseResult(
                t.item_id,
                t.case,
                t.model,
                t.trial,
                score,
                "fail",
                "; ".join(fail_reasons),
                tuple(rows),
                evaluator_scores,
                details,
            )
        required_failed = [r for r in fail_reasons if r.startswith("required evaluator")]
        if required_failed:
            return CaseResult(
                t.item_id,
                t.case,
                t.model,
                t.trial,
                score,
                "fail",
                "; ".join(required_failed),
                tuple(rows),
                evaluator_scores,
                details,
            )
        status = band(score, rubric)
        return CaseResult(
            t.item_id,
            t.case,
            t.model,
            t.trial,
            score,
            status,
            _band_reason(score, status, rubric, rows),
            tuple(rows),
            evaluator_scores,
            details,
        )

    def _pairs(self, prep: _Prepared) -> list[tuple[int, int, object]]:
        case = prep.case
        expected = case.expect.tool_calls
        if not expected or not prep.actual:
            return []
        table = [
            [
                score_pair(i, call, prep.judges[i], a, case.rubric, self._embedder)
                for a in prep.actual
            ]
            for i, call in enumerate(expected)
        ]
        # Right tool first, then argument agreement: a right-tool pair always beats a wrong one.
        big = 1.0 + sum(ps.weight for row in table for ps in row)
        values = [[(big if ps.tool_ok else 0.0) + ps.earned for ps in row] for row in table]
        return [(i, j, table[i][j]) for i, j in assign(values, case.expect.ordered)]

    def _final_answer(self, check, t: Transcript, case: Case):
        from evalspec.scoring.final_answer import acheck_final_answer, check_final_answer

        question = next((m.content or "" for m in reversed(case.messages) if m.role == "user"), "")
        if check.kind == "judge":
            return asyncio.run(
                acheck_final_answer(check, t.final_answer, judge=self._judge, question=question)
            )
        return check_final_answer(check, t.final_answer, embedder=self._embedder, question=question)


def _default_embedder(suite: Suite) -> Embedder:
    from pathlib import Path

    from evalspec.scoring.embeddings import EmbeddingStore

    cache = Path(suite.embeddings.cache_dir) if suite.embeddings.cache_dir else None
    return EmbeddingStore(model=suite.embeddings.model, cache_dir=cache)


def _evaluator_reason(res) -> str:
    for row in res.rows:
        if row.reason and not row.match:
            return row.reason
    return res.rows[0].reason if res.rows else f"scored {res.score:.2f}"


def _check_expected(check) -> object:
    p = check.params
    return p.get("values") or p.get("value") or p.get("pattern") or p.get("criteria")


def _band_reason(score: float, status: Status, rubric: Rubric, rows: list[Row]) -> str:
    worst = sorted(
        (r for r in rows if not r.match and r.weight > 0),
        key=lambda r: r.score * r.weight - r.weight,
    )[:2]
    why = "; ".join(f"{r.field}: {r.reason}" for r in worst)
    if status == "pass":
        return f"score {score:.3f} ≥ warn threshold {rubric.warn_threshold:g}" + (
            f" ({why})" if why else ""
        )
    if status == "warn":
        return f"score {score:.3f} is below the warn threshold {rubric.warn_threshold:g}: {why}"
    return f"score {score:.3f} is below the fail threshold {rubric.fail_threshold:g}: {why}"
