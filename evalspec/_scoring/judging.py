"""Ask a suite's LLM judge about recorded answers, wherever they came from, filling its cache.

`score`, `diff` and `review` never call a model: their judge reads verdicts from the cache
beside the suite (`.evalspec-cache/judge.json`) and a miss is "needs a run". A run asks the
judge for its own transcripts; this is the one other step allowed to ask, for transcripts of
any origin (an import from StableToolBench, a merged run, an OpenTelemetry trace). It asks
only for verdicts the cache lacks, through the run's call policy (`ModelCalls`: the suite's
timeout, retries and rate limit, secrets redacted), so scoring afterwards reads every verdict.

It also reports the solvable pass rate (SoPR) of StableToolBench: per answer Solved 1, Unsure
0.5, Unsolved 0, averaged over answers; a run that gave no answer is Unsolved, and an imported
StableToolBench run that did not end with a Finish call is Unsolved whatever the verdict.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from evalspec._providers.calls import ModelCalls
from evalspec._scoring.final_answer import (
    JudgeError,
    JudgeUnavailable,
    LLMJudge,
    judge_criteria,
)
from evalspec._scoring.rubric import (
    RubricJudge,
    answer_slot,
    judge_for,
    judged_states,
    shown_parts,
)
from evalspec._scoring.scorer import case_question, judge_params
from evalspec._scoring.turns import turn_views
from evalspec._suite.model import Case, FinalAnswerCheck, Suite
from evalspec._transcript import Transcript

Source = Literal["cache", "asked", "no answer", "failed"]
VERDICTS = {1.0: "Solved", 0.5: "Unsure", 0.0: "Unsolved"}


@dataclass(frozen=True)
class JudgedAnswer:
    """One judge check of one transcript: its verdict and where the verdict came from."""

    case: str
    model: str
    trial: int
    check: str
    source: Source
    score: float | None
    """1.0 / 0.5 / 0.0, or None when no verdict could be had (`source` failed)."""
    reason: str
    finished: bool
    """False only for an imported StableToolBench run without a Finish call."""
    verdict: str | None = None
    """A rubric criterion's verdict, pass or fail (None for a SoPR judge: its score says)."""

    @property
    def sopr(self) -> float:
        """This answer's share of the SoPR: its verdict, Unsolved without Finish or verdict."""
        return self.score if (self.finished and self.score is not None) else 0.0


@dataclass(frozen=True)
class JudgeOutcome:
    """Every judged answer's verdict and where it came from (asked, cache, no answer, failed)."""

    answers: tuple[JudgedAnswer, ...]

    def count(self, source: Source) -> int:
        return sum(a.source == source for a in self.answers)

    @property
    def failed(self) -> list[tuple[str, int]]:
        """Why verdicts could not be had, most common first (one line per distinct reason)."""
        reasons = Counter(a.reason for a in self.answers if a.source == "failed")
        return reasons.most_common()

    def sopr(self) -> list[tuple[str, str, float, Counter[str], int]]:
        """Per (model, check): the SoPR, the verdicts counted, and how many answers."""
        groups: dict[tuple[str, str], list[JudgedAnswer]] = {}
        for a in self.answers:
            groups.setdefault((a.model, a.check), []).append(a)
        out = []
        for (model, check), answers in groups.items():
            verdicts: Counter[str] = Counter(
                "no verdict"
                if a.source == "failed"
                else a.verdict or VERDICTS.get(a.sopr, "mixed rounds")
                for a in answers
            )
            mean = sum(a.sopr for a in answers) / len(answers)
            out.append((model, check, mean, verdicts, len(answers)))
        return out


def _finished(t: Transcript) -> bool:
    """An imported StableToolBench run carries StableToolBench's Finish verdict (its import
    marks a run without Finish `incomplete`); every other run counts as finished."""
    return not t.source.startswith("import:stabletoolbench") or t.finish_reason == "finish"


def judged_answers(
    case: Case, t: Transcript
) -> Iterator[tuple[str, Case, Transcript | None, FinalAnswerCheck, int | None]]:
    """Each judge check the scorer runs on this transcript, with the answer it judges, as the
    scorer cuts them: a multi-turn case's turn judges each see their own turn's answer and
    question. Named as the scorer names them (`turn 2 final_answer.judge`), with the turn's
    index (None for the whole case)."""
    if not case.turns:
        for check in case.expect.final_answer:
            if check.kind == "judge":
                yield "", case, t, check, None
        return
    for view in turn_views(case, t):
        for check in view.case.expect.final_answer:
            if check.kind == "judge":
                yield f"turn {view.index + 1} ", view.case, view.transcript, check, view.index


async def judge_transcripts(
    suite: Suite,
    transcripts: Sequence[Transcript],
    calls: ModelCalls | None,
    *,
    concurrency: int | None = None,
) -> JudgeOutcome:
    """Every judge check of every transcript: from the cache, else asked (when `calls` allows).

    At most `concurrency` (default: the suite's run concurrency) verdicts are asked at once;
    each new verdict is written to the cache as it arrives, so an interrupted pass keeps them.
    """
    cases = {c.name: c for c in suite.cases}
    judges: dict[str, LLMJudge] = {}
    limit = asyncio.Semaphore(max(1, concurrency or suite.run.concurrency))

    def judge_of(check: FinalAnswerCheck) -> LLMJudge:
        params = judge_params(suite, check)
        key = repr(sorted((k, repr(v)) for k, v in params.items()))
        if key not in judges:
            judges[key] = judge_for(params, calls, check)
        return judges[key]

    async def one(
        whole: Transcript,
        prefix: str,
        case: Case,
        t: Transcript | None,
        check: FinalAnswerCheck,
        turn: int | None,
    ) -> tuple[JudgedAnswer, ...]:
        name = prefix + str(check.params.get("name") or "final_answer.judge")
        finished = _finished(whole)

        def answer(source: Source, score: float | None, reason: str) -> tuple[JudgedAnswer, ...]:
            return (
                JudgedAnswer(
                    whole.case, whole.model, whole.trial, name, source, score, reason, finished
                ),
            )

        if t is None:
            return answer("no answer", 0.0, "the conversation ended before this turn")
        judge = judge_of(check)
        if isinstance(judge, RubricJudge):
            async with limit:
                return await _rubric_answers(
                    suite, (cases[whole.case], whole), (prefix, turn), case, t, judge
                )
        if t.final_answer is None or not t.final_answer.strip():
            return answer("no answer", 0.0, "the model gave no final answer")
        question, criteria = case_question(case), judge_criteria(check)
        hit = judge.cached(question, t.final_answer, criteria)
        if hit is not None:
            return answer("cache", *hit)
        async with limit:
            try:
                score, reason = await judge.judge(question, t.final_answer, criteria)
            except (JudgeUnavailable, JudgeError) as exc:
                return answer("failed", None, str(exc))
        return answer("asked", score, reason)

    tasks = [
        one(t, prefix, case, part, check, turn)
        for t in transcripts
        if t.case in cases and not t.error
        for prefix, case, part, check, turn in judged_answers(cases[t.case], t)
    ]
    return JudgeOutcome(tuple(a for got in await asyncio.gather(*tasks) for a in got))


async def _rubric_answers(
    suite: Suite,
    conversation: tuple[Case, Transcript],
    where: tuple[str, int | None],
    case: Case,
    t: Transcript,
    judge: RubricJudge,
) -> tuple[JudgedAnswer, ...]:
    """A rubric judge's verdict on one transcript, one answer per criterion (`NAME.criterion`,
    pass or fail), so each criterion is calibrated on its own."""
    prefix, turn = where
    whole = conversation[1]
    states = judged_states(judge.spec, suite, case, t, (turn, *conversation))
    parts = shown_parts(judge.spec, t, states, turn)
    check = "final_answer.judge"
    name = prefix + check
    slot = answer_slot(whole.case, whole.model, whole.trial, check, case_question(case))
    source: Source = "cache" if judge.cached_verdict(parts) is not None else "asked"
    finished = _finished(whole)
    try:
        _, verdicts = await judge.verdict(parts, slot)
    except (JudgeUnavailable, JudgeError) as exc:
        return tuple(
            JudgedAnswer(
                whole.case, whole.model, whole.trial, f"{name}.{c.name}", "failed", None,
                str(exc), finished,
            )
            for c in judge.spec.criteria
        )  # fmt: skip
    return tuple(
        JudgedAnswer(
            whole.case, whole.model, whole.trial, f"{name}.{v.name}", source, v.score, v.reason,
            finished, "pass" if v.passed else "fail",
        )
        for v in verdicts
    )  # fmt: skip
