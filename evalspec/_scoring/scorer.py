"""Score transcripts against a suite: the whole of `evalspec score`, and the last stage of a run.

Per transcript: pair expected and actual calls (matching.py), judge every argument with its
critic, add the case's evaluators and final-answer checks, then place the score in a band.

Rules (documented in docs/reference/scoring.md):
- case score = Σ weight × score / Σ weight over every row: each matched pair's tool-selection
  row and argument rows, a zero row for each expected call with no partner (weighing its tool
  selection plus its critics), a zero row per extra call when `extra_calls: penalize`
  (weighing `tool_selection_weight`), and each evaluator and final-answer check with its weight.
- a case with nothing to weigh scores 1.0.
- fail outright: `fail_on_tool_call_quantity` and a different number of calls (score 0, as
  Arcade does); `fail_on_tool_selection` and an expected call unmatched or paired with another
  tool; a `required` evaluator below 1; a `required` critic that does not match (or whose call
  is missing); a transcript that carries a run error (status error).
- otherwise: below fail_threshold fails; from fail_threshold up to warn_threshold warns
  (passes, with a warning); at or above warn_threshold passes.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from collections.abc import Coroutine, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from evalspec._critics.base import Critic, Embedder
from evalspec._providers.calls import ModelCalls
from evalspec._scoring.budgets import over_case_budget
from evalspec._scoring.final_answer import JudgeUnavailable
from evalspec._scoring.matching import (
    ArgJudge,
    PairScore,
    assign,
    describe_calls,
    judges_for,
    same_tool,
    score_pair,
    texts_for_pair,
)
from evalspec._scoring.protocols import Judge
from evalspec._scoring.reasons import clause, join_reasons, with_detail
from evalspec._scoring.recovery import recovery_rows
from evalspec._scoring.robustness import KEY as ROBUSTNESS
from evalspec._scoring.robustness import may_have_facts, trial_facts
from evalspec._scoring.turns import (
    score_turns,
    turn_cases,
    turn_details,
    turn_views,
    turn_world,
    world_calls,
)
from evalspec._scoring.types import CaseResult, Row, Status
from evalspec._scoring.user_checks import UserRuleJudge, user_verdict
from evalspec._suite.limits import MAX_CALLS_PER_CASE
from evalspec._suite.model import (
    REFUSED_TAG,
    Case,
    CriticSpec,
    ExpectedCall,
    FinalAnswerCheck,
    Rubric,
    Suite,
    Tool,
    UserCheck,
)
from evalspec._suite.walk import judge_checks
from evalspec._tools.faults import reached_tool
from evalspec._transcript import ToolCall, Transcript
from evalspec._util.graph import GraphTooLarge
from evalspec._util.project import checked, kind
from evalspec._util.redaction import secret_scope

if TYPE_CHECKING:
    from evalspec._scoring.evaluators import EvaluatorResult
    from evalspec._scoring.final_answer import LLMJudge
    from evalspec._scoring.state_checks import StateJudge


def band(score: float, rubric: Rubric) -> Status:
    """The evaluation-framework bands: fail < fail_threshold <= warn < warn_threshold <= pass."""
    if score < rubric.fail_threshold:
        return "fail"
    if score < rubric.warn_threshold:
        return "warn"
    return "pass"


@dataclass
class _Explanation:
    """Rows of one transcript's explanation, with the running weighted sum."""

    rows: list[Row] = field(default_factory=list)
    earned: float = 0.0
    weight: float = 0.0
    selection_failures: list[str] = field(default_factory=list)
    required_failures: list[str] = field(default_factory=list)
    evaluators: dict[str, float] = field(default_factory=dict)
    details: dict[str, object] = field(default_factory=dict)
    state_score: float | None = None
    """The state checks' weighted mean, when the case judges the state."""
    state_weight: float = 0.0

    def add(self, row: Row) -> None:
        self.rows.append(row)
        self.earned += row.score * row.weight
        self.weight += row.weight

    @property
    def score(self) -> float:
        """Weighted mean of the rows (a case with nothing to weigh scores 1); with state
        checks, (1 - w) x that + w x the state's, or the state's alone when nothing else
        is weighed."""
        calls = min(1.0, max(0.0, self.earned / self.weight)) if self.weight > 0 else None
        if self.state_score is None:
            return 1.0 if calls is None else calls
        if calls is None:
            return self.state_score
        w = self.state_weight
        return min(1.0, max(0.0, (1 - w) * calls + w * self.state_score))


def _result(
    t: Transcript, score: float, status: Status, reason: str, tally: _Explanation | None = None
) -> CaseResult:
    tally = tally or _Explanation()
    return CaseResult(
        item_id=t.item_id,
        case=t.case,
        model=t.model,
        trial=t.trial,
        score=score,
        status=status,
        reason=reason,
        rows=tuple(tally.rows),
        evaluators=tally.evaluators,
        details=tally.details,
    )


K = TypeVar("K")
_SharedJudges = tuple[tuple[CriticSpec, ...], tuple[CriticSpec, ...], Tool | None, list[ArgJudge]]
"""What decides an expected call's argument judges (kept, so their ids stay theirs), and them."""
V = TypeVar("V")
T = TypeVar("T")
MEMO_CASES = 4096
"""Cases whose judges, turns and embedding needs a scorer remembers: an item's models and trials
are planned together and finish close together, so a few thousand cover every reuse, while a
50,000-case run would otherwise keep every case's critics to the end."""


def _remember(memo: OrderedDict[K, V], key: K, value: V) -> V:
    """Keep `value` under `key`, forgetting the oldest entry once `MEMO_CASES` are kept (an
    OrderedDict: a dict's first key, after thousands taken from its front, is found by a scan
    over the holes they left)."""
    if len(memo) >= MEMO_CASES:
        memo.popitem(last=False)
    memo[key] = value
    return value


@dataclass
class _Prepared:
    case: Case
    transcript: Transcript
    actual: list[ToolCall]
    judges: list[list[ArgJudge]]
    state_from: Transcript | None = None
    """For one turn of a conversation: the calls up to the turn's end, which the state the
    turn's `expect.state` judges is replayed from."""
    state_start: int = 0
    """For one turn of a conversation: how many of `state_from`'s calls came before the turn
    (the state changes shown are the turn's own)."""
    turn: int | None = None
    """For one turn of a conversation: its index, from 0 (a rubric judge sees the
    conversation up to its end)."""
    user_tools: frozenset[str] = frozenset()
    """The tools the user holds (dual control), whose calls `state_from` holds too."""
    whole: tuple[Case, Transcript] | None = None
    """For one turn of a conversation: the whole case and transcript (a rubric judge's
    state at the turn's start and end is replayed from them)."""


def score_transcripts(
    suite: Suite,
    transcripts: Sequence[Transcript],
    *,
    embedder: Embedder | None = None,
    judge: Judge | None = None,
    calls: ModelCalls | None = None,
) -> list[CaseResult]:
    """Score a batch under `suite`: what a report and each side of a diff are made from.

    Secrets a judge registers are the call's (`redaction.secret_scope`)."""
    with secret_scope():
        return Scorer(suite, embedder=embedder, judge=judge, calls=calls).score_all(
            list(transcripts)
        )


class Scorer:
    """Scores many transcripts of one suite, embedding all texts of the batch together."""

    def __init__(
        self,
        suite: Suite,
        embedder: Embedder | None = None,
        judge: Judge | None = None,
        *,
        calls: ModelCalls | None = None,
    ):
        """`calls` lets an LLM judge ask its model on a cache miss; without it (the default,
        and always in review) verdicts come only from the judge cache."""
        self.suite = suite
        self._calls = calls
        self.cases = {c.name: c for c in suite.cases}
        self.tools = {t.name: t for t in suite.tools}
        self._side_effects = any(t.idempotent is False for t in suite.tools)
        """Some tool repeats a side effect when called twice: duplicates are reported."""
        self.prices = {m.name: m.price for m in suite.models}
        self._embedder = embedder
        self._judge = judge
        self._judges: dict[str, LLMJudge] = {}
        self._turns: OrderedDict[str, list[tuple[int, Case]]] = OrderedDict()
        self._arg_judges: OrderedDict[int, tuple[Case, list[list[ArgJudge]]]] = OrderedDict()
        self._embeds: OrderedDict[str, bool] = OrderedDict()
        self._shared_judges: OrderedDict[tuple[object, ...], _SharedJudges] = OrderedDict()
        self._state_judge: StateJudge | None = None

    @property
    def embedder(self) -> Embedder | None:
        return self._embedder

    def needs_embeddings(self, transcripts: Iterable[Transcript]) -> list[str]:
        """Every text a similarity critic or check will embed for these transcripts."""
        texts: list[str] = []
        for t in transcripts:
            prep = self._prepare(t)
            if prep is not None:
                texts.extend(self._texts(prep))
        return texts

    def score_all(self, transcripts: Sequence[Transcript]) -> list[CaseResult]:
        """Score a batch: embed every needed text in one go, then judge each transcript."""
        preps = [self._prepare(t) for t in transcripts]
        texts = [text for prep in preps if prep is not None for text in self._texts(prep)]
        if texts:
            self._embedder = self._embedder or _default_embedder(self.suite)
            self._embedder.prefetch(texts)
        return [self._scored(t, prep) for t, prep in zip(transcripts, preps, strict=True)]

    def _prepare(self, t: Transcript, case: Case | None = None) -> _Prepared | None:
        case = case or self.cases.get(t.case)
        if case is None:
            return None
        # A call a fault answered in the tool's place is an attempt, not a call: the expected
        # calls are matched against the calls that reached the tools (the retry, not its fault).
        actual = [c for c in t.tool_calls if c.fault is None or reached_tool(c.fault)]
        if self.suite.run.mode == "single_turn":
            actual = [c for c in actual if c.turn == 0]
        return _Prepared(case, t, actual, self._judges_of(case))

    def _judges_of(self, case: Case) -> list[list[ArgJudge]]:
        """Each expected call's argument judges, made once per case object (every model,
        trial and, for a turn of a conversation, every transcript of it shares them; read
        only). Keyed by identity, the case kept beside them so its id stays its own."""
        made = self._arg_judges.get(id(case))
        if made is None:
            judges = [self._call_judges(call, case) for call in case.expect.tool_calls]
            made = _remember(self._arg_judges, id(case), (case, judges))
        return made[1]

    def _call_judges(self, call: ExpectedCall, case: Case) -> list[ArgJudge]:
        """`judges_for`, made once for every call that shares what decides it (its argument
        names, its critics, the case's, its tool): a suite's cases share their critics, so
        50,000 cases build their critics' table a handful of times, not 50,000."""
        tool = self.tools.get(call.tool)
        key = (tuple(call.args), id(call.critics), id(case.critics), id(tool))
        made = self._shared_judges.get(key)
        if made is None:
            judges = judges_for(call, case.critics, tool)
            made = _remember(self._shared_judges, key, (call.critics, case.critics, tool, judges))
        return made[3]

    def _turn_cases(self, case: Case) -> list[tuple[int, Case]]:
        """`turn_cases`, made once per case (every model and trial of it shares them)."""
        made = self._turns.get(case.name)
        if made is None:
            made = _remember(self._turns, case.name, turn_cases(case))
        return made

    def _may_embed(self, case: Case) -> bool:
        """Whether scoring the case can embed a text: a critic that names texts to embed, or a
        similarity check, in the case or one of its turns. Most cases have neither, and then
        nobody walks their transcripts (turn by turn, in a conversation) collecting texts."""
        made = self._embeds.get(case.name)
        if made is None:
            parts = [single for _, single in self._turn_cases(case)] if case.turns else [case]
            made = any(
                any(c.kind == "similarity" for c in part.expect.final_answer)
                or any(
                    type(j.critic).texts is not Critic.texts
                    for judges in self._judges_of(part)
                    for j in judges
                )
                for part in parts
            )
            _remember(self._embeds, case.name, made)
        return made

    def _texts(self, prep: _Prepared) -> list[str]:
        """`_texts_of`, turn by turn for a multi-turn case."""
        if not self._may_embed(prep.case):
            return []
        if not prep.case.turns:
            return _texts_of(prep)
        out: list[str] = []
        for view in turn_views(prep.case, prep.transcript, self._turn_cases(prep.case)):
            part = self._prepare(view.transcript, view.case) if view.transcript else None
            out.extend(_texts_of(part) if part else ())
        return out

    def score(self, t: Transcript) -> CaseResult:
        """Score one transcript (texts it needs are embedded on demand); a simulated user that
        failed its own checks takes the verdict (`user_checks.py`)."""
        return self._scored(t, self._prepare(t))

    def _scored(self, t: Transcript, prep: _Prepared | None) -> CaseResult:
        """`_judged`, with the tokens the suite's judges spent on this transcript (asked, or
        as their cached verdicts cost) in its details as `judge_tokens`: a budget counts them."""
        before = self._judge_spent() if self._judges else 0
        result = self._judged(t, prep)
        if not self._judges:  # no judge (most suites): nothing spent, nothing to add up
            return result
        spent = self._judge_spent() - before
        if not spent:
            return result
        return msgspec.structs.replace(result, details={**result.details, "judge_tokens": spent})

    def _judge_spent(self) -> int:
        return sum(j.spent for j in self._judges.values())

    def _judged(self, t: Transcript, prep: _Prepared | None) -> CaseResult:
        """The transcript's verdict: the model's, or the simulated user's fault."""
        result = self._score(t, prep)
        if prep is None:
            return result
        try:
            return user_verdict(prep.case, t, result, (self._user_judge, _drive))
        except JudgeUnavailable as exc:
            why = f"the simulated user's judged check {exc}"
            return msgspec.structs.replace(
                result,
                status="error",
                score=0.0,
                reason=why,
                details={**result.details, "needs_run": exc.needs_run},
            )

    def _user_judge(self, check: UserCheck) -> UserRuleJudge:
        """One judge per `judged:` check's settings, its verdicts in the suite's judge cache."""
        params = {"cache": str(judge_cache_path(self.suite)), **dict(check.judge)}
        key = json.dumps(["user rule", params], sort_keys=True)
        if key not in self._judges:
            self._judges[key] = UserRuleJudge.from_params(params, self._calls)
        judge = self._judges[key]
        assert isinstance(judge, UserRuleJudge)
        return judge

    def _score(self, t: Transcript, prep: _Prepared | None) -> CaseResult:
        if prep is None:
            return _result(t, 0.0, "error", f"the suite has no case named {t.case!r}")
        if REFUSED_TAG in prep.case.tags:  # an importer's stand-in for a record it refused
            return _result(t, 0.0, "error", prep.case.description or REFUSED_TAG)
        if t.error:
            return _result(t, 0.0, "error", f"the run failed: {t.error}")
        if prep.case.capture is not None:  # nothing to judge yet: what was called, recorded
            return _result(t, 0.0, "captured", captured_reason(prep.actual))
        if len(prep.actual) > MAX_CALLS_PER_CASE:
            n, cap = len(prep.actual), MAX_CALLS_PER_CASE
            why = f"the model made {n} tool calls; at most {cap} are scored in one case"
            return _result(t, 0.0, "error", why)
        if prep.case.turns:
            return self._score_turns(prep)
        tally = _Explanation()
        self._tool_call_rows(prep, tally)
        try:
            self._evaluator_rows(prep, tally)
        except JudgeUnavailable as exc:
            tally.details["needs_run"] = exc.needs_run
            return _result(t, 0.0, "error", str(exc), tally)
        if prep.case.expect.judges_state:
            try:
                self._state_rows(prep, tally)
            except GraphTooLarge as exc:  # the replayed calls make a state evalspec refuses
                return _result(t, 0.0, "error", f"the replayed state: {exc}", tally)
        self._budget_rows(prep, tally)
        if t.user_turns:  # a conversation with a simulated user: its lines, for reports
            tally.details["turns"] = turn_details(prep.case, t, {})
        self._robustness(prep, tally)
        return self._verdict(prep, tally)

    def _robustness(self, prep: _Prepared, tally: _Explanation) -> None:
        """The trial's faults, side effects and injections, for the robustness figures."""
        case, calls = prep.case, prep.transcript.tool_calls
        if not may_have_facts(case, calls, self._side_effects):
            return  # an ordinary trial (most): `trial_facts` would find nothing to count
        facts = trial_facts(case, calls, self.tools, tally.rows)
        if facts is not None:
            tally.details[ROBUSTNESS] = facts

    def _budget_rows(self, prep: _Prepared, tally: _Explanation) -> None:
        t = prep.transcript
        over = over_case_budget(t, prep.case.budget, self.prices.get(t.model))
        if over:
            why = "over budget: " + join_reasons(over)
            tally.rows.append(Row("budget", None, None, 0.0, 0.0, why, "budget", None, False))
            tally.required_failures.append(why)

    def _score_turns(self, prep: _Prepared) -> CaseResult:
        """A multi-turn case: each judged turn scored as a case of its own (turns.py)."""
        t = prep.transcript
        whole = prep.case

        def one(part: Transcript, case: Case, index: int) -> CaseResult:
            prep = self._prepare(part, case)
            if prep is not None:
                prep.turn = index
            if prep is not None:
                prep.whole = (whole, t)
            if prep is not None and case.expect.judges_state:
                done, prep.state_start = turn_world(whole, t, index)
                prep.user_tools = whole.user_tools
                prep.state_from = msgspec.structs.replace(t, tool_calls=done)
            return self._score(part, prep)

        conversation, required = self._conversation(prep) if whole.evaluators else (None, [])
        score, status, reason, rows, details = score_turns(
            prep.case, t, one, band, self._turn_cases(prep.case), conversation
        )
        tally = _Explanation(rows=rows, details=details)
        # A required evaluator gates the case, as in a single-turn case (a required check in a
        # turn gates that turn).
        tally.required_failures.extend(f"the conversation's {why}" for why in required)
        tally.evaluators = {r.field: r.score for r in rows if r.critic in _CHECK_KINDS}
        self._budget_rows(prep, tally)
        self._robustness(prep, tally)
        if tally.required_failures:
            return _result(t, score, "fail", join_reasons(tally.required_failures), tally)
        return _result(t, score, status, reason, tally)

    def _conversation(self, prep: _Prepared) -> tuple[CaseResult, list[str]]:
        """A multi-turn case's evaluators on the whole conversation: every call of every turn,
        against the calls all the turns expect, in order (their default criteria); with the
        required evaluators that failed."""
        whole, t = prep.case, prep.transcript
        expected = tuple(c for turn in whole.turns if turn.expect for c in turn.expect.tool_calls)
        case = replace(whole, expect=replace(whole.expect, tool_calls=expected, final_answer=()))
        tally = _Explanation()
        self._evaluator_rows(_Prepared(case, t, list(t.tool_calls), []), tally)
        required = tally.required_failures
        if required:
            return _result(t, tally.score, "fail", join_reasons(required), tally), required
        status = band(tally.score, whole.rubric)
        failed = [r.reason for r in tally.rows if not r.match]
        why = join_reasons(failed) if failed else "every evaluator passed"
        return _result(t, tally.score, status, why, tally), []

    def _tool_call_rows(self, prep: _Prepared, tally: _Explanation) -> None:
        """Rows for the expected calls: matched pairs, missing calls, extra calls."""
        case, actual, rubric = prep.case, prep.actual, prep.case.rubric
        expected = case.expect.tool_calls
        if case.expect.no_tool_calls:
            ok = not actual
            why = (
                "the model rightly called no tool"
                if ok
                else f"expected no tool call, the model called {describe_calls(actual)}"
            )
            tally.add(
                Row(
                    "no_tool_calls",
                    "no calls",
                    describe_calls(actual),
                    float(ok),
                    rubric.tool_selection_weight,
                    why,
                    "no_tool_calls",
                    None,
                    ok,
                )
            )
            if not ok:
                tally.selection_failures.append(why)
        if case.expect.min_calls:
            self._min_calls_row(prep, tally)
        if (
            case.expect.judges_recovery
            or self._side_effects
            or any(c.fault is not None for c in prep.transcript.tool_calls)
        ):
            for row in recovery_rows(case.expect, prep.transcript.tool_calls, self.tools):
                tally.add(row)
                if not row.match:
                    tally.required_failures.append(row.reason)
        pairs = self._pairs(prep)
        for i, _j, ps in pairs:
            for row in ps.rows:
                tally.add(row)
            if not ps.tool_ok:
                tally.selection_failures.append(ps.rows[0].reason)
            # Argument rows follow the tool-selection row, one per judge, in judge order.
            for judge, row in zip(prep.judges[i], ps.rows[1:], strict=False):
                if judge.spec.required and not row.match:
                    tally.required_failures.append(
                        f"required critic {judge.field} (call {i + 1}) did not match: {row.reason}"
                    )
        matched = {i for i, _, _ in pairs}
        for i, call in enumerate(expected):
            if i in matched:
                continue
            called = any(same_tool(call.tool, a.name, rubric) for a in actual)
            if called and case.expect.ordered:
                why = f"{call.tool} was called, but not in the expected order"
            elif called:
                why = f"{call.tool} was called fewer times than expected"
            else:
                why = f"{call.tool} was never called"
            w = rubric.tool_selection_weight + sum(j.spec.weight for j in prep.judges[i])
            tally.add(Row("missing_call", call.tool, None, 0.0, w, why, "tool_selection", i, False))
            tally.selection_failures.append(why)
            tally.required_failures += [
                f"required critic {j.field} (call {i + 1}) did not match: {why}"
                for j in prep.judges[i]
                if j.spec.required
            ]
        only_state = case.expect.only_state  # any calls that reach the state will do
        if rubric.extra_calls == "penalize" and not case.expect.no_tool_calls and not only_state:
            used = {j for _, j, _ in pairs}
            for j, a in enumerate(actual):
                if j not in used:
                    tally.add(
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

    def _min_calls_row(self, prep: _Prepared, tally: _Explanation) -> None:
        """`min_calls`: a condition, not a share of the score (a row weighing nothing, and an
        outright failure when the model made fewer calls)."""
        need, made = prep.case.expect.min_calls, len(prep.actual)
        ok = made >= need
        calls = f"{need} tool call{'s' if need != 1 else ''}"
        why = (
            f"the model made {made} tool call{'s' if made != 1 else ''}, at least {need} expected"
            if ok
            else f"expected at least {calls}, the model made {made}"
            + (f" ({describe_calls(prep.actual)})" if prep.actual else "")
        )
        tally.add(Row("min_calls", need, made, float(ok), 0.0, why, "min_calls", None, ok))
        if not ok:
            tally.required_failures.append(why)

    def _state_rows(self, prep: _Prepared, tally: _Explanation) -> None:
        """Rows for `expect.state` / `unchanged`, judged on the replayed final state."""
        from evalspec._scoring.state_checks import StateJudge

        if self._state_judge is None:
            self._state_judge = StateJudge(self.suite)
        replayed, held = prep.state_from, prep.user_tools
        if replayed is None:
            replayed, held = prep.transcript, prep.case.user_tools
            if held:  # a simulated user with tools: its calls changed the world too
                calls = world_calls(replayed, replayed.tool_calls, held)
                replayed = msgspec.structs.replace(replayed, tool_calls=tuple(calls))
        judged = self._state_judge.judge(
            prep.case, replayed, self._need_embedder, start=prep.state_start, also=held
        )
        tally.rows.extend(judged.rows)
        # The before -> after diff, as rows weighing nothing: every report shows rows.
        tally.rows.extend(
            Row("state change", None, None, 1.0, 0.0, line, "state_change", None, True)
            for line in judged.changes
        )
        tally.state_score = judged.score
        tally.state_weight = prep.case.rubric.state_weight
        tally.required_failures.extend(judged.required_failures)
        tally.details["state"] = judged.details()

    def _need_embedder(self) -> Embedder:
        self._embedder = self._embedder or _default_embedder(self.suite)
        return self._embedder

    def _evaluator_rows(self, prep: _Prepared, tally: _Explanation) -> None:
        """Rows for the case's evaluators and final-answer checks, each with its weight."""
        from evalspec._scoring.evaluators import run_evaluator

        case, t = prep.case, prep.transcript
        for spec in case.evaluators:
            res = run_evaluator(
                spec,
                t,
                case.expect.tool_calls,
                embedder=self._embedder,
                normalize_names=case.rubric.normalize_tool_names,
            )
            tally.evaluators[res.name] = res.score
            tally.details[res.name] = res.justification
            tally.add(
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
            if spec.required and res.score < 1.0:
                tally.required_failures.append(
                    f"required evaluator {res.name} scored {res.score:.2f}"
                )
        for check in case.expect.final_answer:
            if check.kind == "judge" and "rubric" in check.params:
                self._rubric_rows(check, t, case, tally, prep)
                continue
            res = self._final_answer(check, t, case)
            name = f"final_answer.{check.kind}"
            tally.evaluators[name] = res.score
            tally.add(
                Row(
                    name,
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

    def _verdict(self, prep: _Prepared, tally: _Explanation) -> CaseResult:
        """Outright failures first (quantity, selection, required evaluators), then the bands."""
        t, case, rubric = prep.transcript, prep.case, prep.case.rubric
        score = tally.score
        n_exp, n_act = len(case.expect.tool_calls), len(prep.actual)
        if (
            rubric.fail_on_tool_call_quantity
            and not case.expect.no_tool_calls
            and not case.expect.only_state
            and n_act != n_exp
        ):
            reason = (
                f"expected {n_exp} call{'s' if n_exp != 1 else ''}, the model made "
                f"{n_act}: {describe_calls(prep.actual)}"
            )
            tally.details["score_before_quantity_rule"] = score
            return _result(t, 0.0, "fail", reason, tally)
        if rubric.fail_on_tool_selection and tally.selection_failures:
            return _result(t, score, "fail", join_reasons(tally.selection_failures), tally)
        if tally.required_failures:
            return _result(t, score, "fail", join_reasons(tally.required_failures), tally)
        status = band(score, rubric)
        return _result(t, score, status, _band_reason(score, status, rubric, tally.rows), tally)

    def _pairs(self, prep: _Prepared) -> list[tuple[int, int, PairScore]]:
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
        if len(table) == 1 and len(table[0]) == 1:  # one call of each: the only pairing
            return [(0, 0, table[0][0])]
        # Right tool first, then argument agreement: a right-tool pair always beats a wrong one.
        big = 1.0 + sum(ps.weight for row in table for ps in row)
        values = [[(big if ps.tool_ok else 0.0) + ps.earned for ps in row] for row in table]
        return [(i, j, table[i][j]) for i, j in assign(values, case.expect.ordered)]

    @property
    def judge_requests(self) -> int:
        """Requests the suite's LLM judges sent while scoring (verdicts read from the cache
        are not requests)."""
        return sum(j.calls for j in self._judges.values())

    def _rubric_rows(
        self,
        check: FinalAnswerCheck,
        t: Transcript,
        case: Case,
        tally: _Explanation,
        prep: _Prepared,
    ) -> None:
        """A rubric judge's rows, one per criterion, and its verdicts in the details."""
        from evalspec._scoring.rubric import RubricJudge, answer_slot, judge_rubric

        name = str(check.params.get("name") or "final_answer.judge")
        judge = self._cached_judge(check)
        slot = answer_slot(t.case, t.model, t.trial, name, case_question(case))
        assert isinstance(judge, RubricJudge)
        overall, verdicts, rows = _drive(
            judge_rubric(judge, check, self.suite, case, t, slot, prep.turn, prep.whole)
        )
        for row in rows:
            tally.add(row)
        tally.evaluators[name] = overall
        tally.details[name] = {
            "score": overall,
            "rubric": {
                v.name: {"score": v.score, "passed": v.passed, "reason": v.reason} for v in verdicts
            },
        }

    def _cached_judge(self, check: FinalAnswerCheck) -> LLMJudge:
        """One LLM judge per judge configuration, with verdicts cached on disk."""
        from evalspec._scoring.rubric import judge_for

        params = judge_params(self.suite, check)
        key = json.dumps(params, sort_keys=True)
        if key not in self._judges:
            self._judges[key] = judge_for(params, self._calls, check)
        return self._judges[key]

    def _final_answer(self, check: FinalAnswerCheck, t: Transcript, case: Case) -> Any:
        from evalspec._scoring.final_answer import (
            acheck_final_answer,
            check_final_answer,
            is_async_check,
        )

        question = case_question(case)
        judge = (self._judge or self._cached_judge(check)) if check.kind == "judge" else None
        if is_async_check(check.kind):
            return _drive(
                acheck_final_answer(
                    check, t.final_answer, embedder=self._embedder, judge=judge, question=question
                )
            )
        return check_final_answer(check, t.final_answer, embedder=self._embedder, question=question)


def _drive(coro: Coroutine[Any, Any, T]) -> T:
    """Run a judge's coroutine to its end; called from inside an event loop, in a loop of its
    own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def check_judge_caches(suite: Suite) -> None:
    """Refuse, before a run calls anything, a judge cache that names a file of another kind,
    or a rubric the schema lets through (so a run never ends without results.json because of
    it)."""
    from evalspec._scoring.final_answer import JUDGE_CACHE_WHAT
    from evalspec._scoring.rubric import judge_for
    from evalspec._util.files import read_json_object

    for _, check in judge_checks(suite):
        path = Path(check.params.get("cache") or judge_cache_path(suite))
        read_json_object(path, JUDGE_CACHE_WHAT)
        if "rubric" in check.params:  # a rubric the schema cannot check (names alike)
            judge_for(dict(check.params), None, check)
    if any(_has_judged_user_check(c) for c in suite.cases):  # their verdicts live there too
        read_json_object(judge_cache_path(suite), JUDGE_CACHE_WHAT)


def _has_judged_user_check(case: Case) -> bool:
    sim = case.simulated_user
    return sim is not None and any(c.kind == "judged" for c in sim.checks)


def judge_params(suite: Suite, check: FinalAnswerCheck) -> dict[str, Any]:
    """A judge check's settings, its cache beside the suite unless it names one."""
    return {"cache": str(judge_cache_path(suite)), **check.params}


def case_question(case: Case) -> str:
    """What the judge is told the user asked: the case's last user message."""
    return next((m.content or "" for m in reversed(case.messages) if m.role == "user"), "")


JUDGE_CACHE = kind("judge cache")


def judge_cache_path(suite: Suite) -> Path:
    """Judge verdicts live beside the suite, so re-scoring never pays for the same verdict;
    held to the project's policy (a committed link in its place is refused)."""
    return checked(".evalspec-cache/judge.json", Path(suite.path).resolve().parent, JUDGE_CACHE)


_CHECK_KINDS = frozenset(("contains", "not_contains", "regex", "similarity", "judge", "equals"))
"""Final-answer check kinds: a turn's checks are listed among the case's evaluator scores."""


def _texts_of(prep: _Prepared) -> list[str]:
    """Texts the transcript's similarity critics and checks will compare."""
    texts: list[str] = []
    for i, call in enumerate(prep.case.expect.tool_calls):
        for a in prep.actual:
            if same_tool(call.tool, a.name, prep.case.rubric):
                texts.extend(texts_for_pair(prep.judges[i], call, a))
    answer = prep.transcript.final_answer
    for check in prep.case.expect.final_answer:
        if check.kind == "similarity" and answer:
            texts.extend([str(check.params.get("value", "")), answer])
    return texts


def _default_embedder(suite: Suite) -> Embedder:
    from evalspec._scoring.embeddings import EmbeddingStore, suite_cache_dir

    return EmbeddingStore(model=suite.embeddings.model, cache_dir=suite_cache_dir(suite))


def _evaluator_reason(res: EvaluatorResult) -> str:
    for row in res.rows:
        if row.reason and not row.match:
            return row.reason
    return res.rows[0].reason if res.rows else f"scored {res.score:.2f}"


def _check_expected(check: FinalAnswerCheck) -> object:
    p = check.params
    return p.get("values") or p.get("value") or p.get("pattern") or p.get("criteria")


def captured_reason(calls: Sequence[ToolCall]) -> str:
    """What a capture case's model called, in one line (the calls themselves are in the
    transcript, which `evalspec capture accept` reads)."""
    if not calls:
        return "captured: no tool call"
    shown = ", ".join(
        f"{c.name}({_cut(json.dumps(c.arguments, ensure_ascii=False))})" for c in calls[:5]
    )
    more = f" and {len(calls) - 5} more" if len(calls) > 5 else ""
    return f"captured: {shown}{more}"


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _band_reason(score: float, status: Status, rubric: Rubric, rows: list[Row]) -> str:
    # The rows that cost the most; below a threshold with every row matching, the partial ones.
    weighted = [r for r in rows if r.weight > 0]
    failed = [r for r in weighted if not r.match]
    if not failed and status != "pass":
        failed = [r for r in weighted if r.score < 1.0]
    worst = sorted(failed, key=lambda r: r.score * r.weight - r.weight)[:2]
    why = join_reasons(f"{r.field}: {clause(r.reason)}" for r in worst)
    if status == "pass":
        return f"score {score:.3f} ≥ warn threshold {rubric.warn_threshold:g}" + (
            f" ({why})" if why else ""
        )
    if status == "warn":
        head = f"score {score:.3f} is below the warn threshold {rubric.warn_threshold:g}"
    else:
        head = f"score {score:.3f} is below the fail threshold {rubric.fail_threshold:g}"
    return with_detail(head, why)
