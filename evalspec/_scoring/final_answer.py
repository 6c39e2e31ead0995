"""Checks on the model's final answer: text rules, embedding similarity and an LLM judge.

The judge follows StableToolBench's solvable pass rate (SoPR): a verdict of Solved, Unsure or
Unsolved scores 1.0, 0.5 or 0.0. Verdicts are cached on disk by a hash of (model, prompt), so
re-scoring a run never pays for the same judgement twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evalspec._critics.base import Embedder
from evalspec._critics.json_similarity import json_similarity
from evalspec._critics.patterns import PatternError, compile_pattern
from evalspec._language.defaults import DEFAULT_API_KEY_ENV, DEFAULT_SIMILARITY_THRESHOLD
from evalspec._language.expect import FINAL_ANSWER
from evalspec._language.vocabulary import default_of
from evalspec._providers.base import ProviderError
from evalspec._providers.calls import Endpoint, ModelCalls
from evalspec._scoring.evaluators import EvaluatorResult, ParamError
from evalspec._scoring.protocols import AnswerInput, Finding, Judge, Verdict, as_verdict
from evalspec._scoring.types import Row
from evalspec._suite.model import FinalAnswerCheck
from evalspec._util import redaction
from evalspec._util.errors import Problem, RunError, SpecError
from evalspec._util.files import read_json_object, update_json_object
from evalspec._util.json_values import json_equal, parse_json_value
from evalspec._util.registry import Plugin, builtin_names, find, register

_log = logging.getLogger(__name__)

JSON_SIMILARITY_THRESHOLD = default_of(FINAL_ANSWER, "json_similarity", "threshold")

NO_ANSWER = "the model gave no final answer"
VERDICT_SCORES = {"solved": 1.0, "unsure": 0.5, "unsolved": 0.0}


class JudgeError(RuntimeError):
    """The judge answered, but with no verdict we can read; the check scores 0.0."""


def check_final_answer(
    check: FinalAnswerCheck,
    answer: str | None,
    *,
    embedder: Embedder | None = None,
    judge: Judge | None = None,
    question: str = "",
) -> EvaluatorResult:
    """Run one final-answer check, built-in or installed. For an async check (the judge) inside
    a running event loop, use `acheck_final_answer` instead (this one drives its own loop)."""
    if answer is None or not answer.strip():
        return _no_answer(check)
    entry = _entry(check)
    if entry.asynchronous:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(
                acheck_final_answer(
                    check, answer, embedder=embedder, judge=judge, question=question
                )
            )
        raise RuntimeError(
            f"check_final_answer called inside an event loop for the async check {check.kind!r}; "
            "await acheck_final_answer"
        )
    try:
        result = _call(entry, check, answer, embedder, judge, question)
        return _finish(check, entry, answer, result)
    except ValueError as exc:
        raise _check_error(check, entry, exc) from None


async def acheck_final_answer(
    check: FinalAnswerCheck,
    answer: str | None,
    *,
    embedder: Embedder | None = None,
    judge: Judge | None = None,
    question: str = "",
) -> EvaluatorResult:
    """Async form of `check_final_answer`; the only one that can run an async check (the judge)
    in a running loop."""
    if answer is None or not answer.strip():
        return _no_answer(check)
    entry = _entry(check)
    try:
        result = _call(entry, check, answer, embedder, judge, question)
        if inspect.isawaitable(result):
            result = await result
        return _finish(check, entry, answer, result)
    except ValueError as exc:
        raise _check_error(check, entry, exc) from None


def is_async_check(kind: str) -> bool:
    """Is the check of this name an async function (the judge, or a plugin's)? It then needs
    `acheck_final_answer`, or a loop of its own."""
    entry = find("final_answer", kind)
    return entry is not None and entry.asynchronous


def judge_criteria(check: FinalAnswerCheck) -> str:
    """A judge check's grading criteria (part of the verdict's cache key)."""
    try:
        return _str_param(check.params, "judge", "criteria", "")
    except ParamError as exc:
        raise _spec_error(check, str(exc)) from None


_RESERVED_PARAMS = ("name",)
"""Options evalspec reads for every check; `threshold` is passed on (a check may read it)."""


def _entry(check: FinalAnswerCheck) -> Plugin:
    entry = find("final_answer", check.kind)
    if entry is None:
        raise _spec_error(check, f"unknown final-answer check {check.kind!r}")
    return entry


def _call(
    entry: Plugin,
    check: FinalAnswerCheck,
    answer: str,
    embedder: Embedder | None,
    judge: Judge | None,
    question: str,
) -> Any:
    if entry.legacy:  # an older plugin: fn(answer, params) -> score | (score, reason)
        params = {k: v for k, v in check.params.items() if k not in ("name", "threshold")}
        return entry.impl(answer, params)
    params = {k: v for k, v in check.params.items() if k not in _RESERVED_PARAMS}
    return entry.impl(AnswerInput(answer, params, question, embedder, judge))


def _check_error(check: FinalAnswerCheck, entry: Plugin, exc: ValueError) -> Exception:
    """Bad options are the suite's mistake: reported at the check's place. A built-in's other
    ValueErrors are bugs and propagate as they are."""
    if isinstance(exc, ParamError) or not entry.builtin:
        return _spec_error(check, str(exc))
    return exc


def _finish(check: FinalAnswerCheck, entry: Plugin, answer: str, result: Any) -> EvaluatorResult:
    """A check's return as a result: a Verdict passes as it says, else at 1.0 or at the
    check's `threshold`."""
    verdict = as_verdict(result)
    score = min(1.0, max(0.0, float(verdict.score)))
    threshold = check.params.get("threshold")
    if verdict.passed is not None:
        passed = verdict.passed
    elif isinstance(threshold, int | float) and not isinstance(threshold, bool):
        passed = score >= threshold
    else:
        passed = score == 1.0
    if entry.legacy:
        expected: Any = {k: v for k, v in check.params.items() if k not in ("name", "threshold")}
    else:
        expected = _expected_of(check)
    findings = verdict.findings or (
        Finding("", expected, answer, score, verdict.reason or f"score {score:.2f}"),
    )
    name = str(check.params.get("name") or f"final_answer.{check.kind}")
    rows = tuple(
        Row(
            field=f"{name}.{f.item}" if f.item else name,
            expected=f.expected,
            actual=f.actual,
            score=f.score,
            weight=check.weight / len(findings),
            reason=f.reason,
            critic=f"final_answer.{check.kind}",
            match=passed if len(findings) == 1 else f.score == 1.0,
        )
        for f in findings
    )
    return EvaluatorResult(
        name=name, score=score, passed=passed, justification=verdict.details, rows=rows
    )


def _no_answer(check: FinalAnswerCheck) -> EvaluatorResult:
    """A missing answer scores 0 before any check runs."""
    name = str(check.params.get("name") or f"final_answer.{check.kind}")
    row = Row(
        field=name,
        expected=_expected_of(check),
        actual=None,
        score=0.0,
        weight=check.weight,
        reason=NO_ANSWER,
        critic=f"final_answer.{check.kind}",
        match=False,
    )
    return EvaluatorResult(
        name=name, score=0.0, passed=False, justification={"reason": NO_ANSWER}, rows=(row,)
    )


def _verdict(
    score: float, passed: bool, details: dict[str, Any], expected: Any, answer: str, reason: str
) -> Verdict:
    """A built-in check's verdict: one finding, the expected value against the answer."""
    return Verdict(score, details, (Finding("", expected, answer, score, reason),), passed)


# ---------------------------------------------------------------------------------------------
# text checks


@register("final_answer", "contains")
def _contains(inp: AnswerInput) -> Verdict:
    """The answer contains every value (`value` or `values`)."""
    values = _values(inp.params, "contains")
    fold = _fold(inp.params, default_sensitive=False)
    found = [v for v in values if fold(v) in fold(inp.answer)]
    score = len(found) / len(values)
    missing = [v for v in values if v not in found]
    reason = "answer contains every value" if not missing else f"answer lacks {missing}"
    return _verdict(
        score, score == 1.0, {"found": found, "missing": missing}, values, inp.answer, reason
    )


@register("final_answer", "not_contains")
def _not_contains(inp: AnswerInput) -> Verdict:
    """The answer contains none of the values."""
    values = _values(inp.params, "not_contains")
    fold = _fold(inp.params, default_sensitive=False)
    present = [v for v in values if fold(v) in fold(inp.answer)]
    score = 1.0 - len(present) / len(values)
    reason = "answer avoids every value" if not present else f"answer contains {present}"
    return _verdict(score, score == 1.0, {"present": present}, values, inp.answer, reason)


@register("final_answer", "equals")
def _equals(inp: AnswerInput) -> Verdict:
    """The answer equals `value` (text, or JSON compared as JSON)."""
    if "value" not in inp.params:
        raise ParamError("`equals` needs a `value`")
    want = inp.params["value"]
    answer = inp.answer
    if isinstance(want, str):
        fold = _fold(inp.params, default_sensitive=False)
        ok = fold(want.strip()) == fold(answer.strip())
    else:
        ok = json_equal(parse_json_value(answer), want)
    reason = "answer equals the expected value" if ok else "answer differs from the expected value"
    return _verdict(float(ok), ok, {}, want, answer, reason)


@register("final_answer", "regex")
def _regex(inp: AnswerInput) -> Verdict:
    """A regular expression matches somewhere in the answer."""
    pattern = _str_param(inp.params, "regex", "pattern", None)
    try:
        ignore_case = not inp.params.get("case_sensitive", True)
        m = compile_pattern(pattern, ignore_case).search(inp.answer)
    except PatternError as exc:
        raise ParamError(
            f"`pattern` {pattern!r} is not a valid regular expression: {exc}"
        ) from None
    reason = f"matched {m.group(0)!r}" if m else f"no match for /{pattern}/"
    return _verdict(
        float(bool(m)),
        bool(m),
        {"match": m.group(0) if m else None},
        pattern,
        inp.answer,
        reason,
    )


@register("final_answer", "similarity")
def _similarity(inp: AnswerInput) -> Verdict:
    """Pass when cosine similarity reaches `threshold`; the score is 1.0 or 0.0, and the
    similarity itself is in the justification."""
    want = _str_param(inp.params, "similarity", "value", None)
    threshold = inp.params.get("threshold", DEFAULT_SIMILARITY_THRESHOLD)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ParamError(f"`threshold` must be a number, not {threshold!r}")
    if inp.embedder is None:
        raise RuntimeError("a similarity check needs an embedder")
    inp.embedder.prefetch([want, inp.answer])
    sim = float(inp.embedder.similarity(want, inp.answer))
    ok = sim >= threshold
    reason = f"similarity {sim:.3f} {'>=' if ok else '<'} threshold {threshold}"
    details = {"similarity": sim, "threshold": threshold}
    return _verdict(float(ok), ok, details, want, inp.answer, reason)


@register("final_answer", "json_similarity")
def _json_similarity(inp: AnswerInput) -> Verdict:
    """UiPath's JSON-similarity evaluator over the answer: the share of expected leaves matched
    (text by edit distance, numbers by relative difference); passes at `threshold`."""
    if "value" not in inp.params:
        raise ParamError("`json_similarity` needs a `value` (the expected JSON)")
    want = inp.params["value"]
    threshold = inp.params.get("threshold", JSON_SIMILARITY_THRESHOLD)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise ParamError(f"`threshold` must be a number, not {threshold!r}")
    score, matched, total = json_similarity(want, parse_json_value(inp.answer))
    ok = score >= threshold
    reason = f"{matched:.2g} of {total:g} expected values match: {score:.3f}"
    justification = {"matched": matched, "total": total, "threshold": threshold}
    return _verdict(score, ok, justification, want, inp.answer, reason)


@register("final_answer", "judge")
async def _judge(inp: AnswerInput) -> Verdict:
    """An LLM grades the answer against the request (StableToolBench's SoPR verdicts)."""
    criteria = _str_param(inp.params, "judge", "criteria", "")
    judge = inp.judge or LLMJudge.from_params(dict(inp.params))
    try:
        score, reason = await judge.judge(inp.question, inp.answer, criteria)
        verdict = {1.0: "Solved", 0.5: "Unsure", 0.0: "Unsolved"}.get(score, "")
    except JudgeError as exc:
        score, reason, verdict = 0.0, str(exc), ""
    return _verdict(
        score,
        score == 1.0,
        {"verdict": verdict, "reason": reason},
        criteria,
        inp.answer,
        f"judge: {verdict or score}: {reason}",
    )


FINAL_ANSWER_KINDS: frozenset[str] = builtin_names("final_answer")
"""The final-answer checks evalspec ships (each registered above with `@register`)."""


def _values(params: Mapping[str, Any], kind: str) -> list[str]:
    raw: Any = params.get("values", params.get("value"))
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list | tuple) or not raw or not all(isinstance(v, str) for v in raw):
        raise ParamError(f"`{kind}` needs `value` (text) or `values` (a list of texts)")
    return list(raw)


def _fold(params: Mapping[str, Any], *, default_sensitive: bool) -> Callable[[str], str]:
    sensitive = params.get("case_sensitive", default_sensitive)
    return (lambda s: s) if sensitive else (lambda s: s.casefold())


def _str_param(params: Mapping[str, Any], kind: str, name: str, default: str | None) -> str:
    value = params.get(name, default)
    if not isinstance(value, str):
        raise ParamError(f"`{kind}` needs `{name}` as text, not {value!r}")
    return value


def _expected_of(check: FinalAnswerCheck) -> Any:
    p = check.params
    for key in ("values", "value", "pattern", "criteria"):
        if key in p:
            return p[key]
    return None


def _spec_error(check: FinalAnswerCheck, message: str) -> SpecError:
    loc = check.loc
    return SpecError(
        [Problem(loc.file, loc.line, loc.column, loc.path, f"final_answer {check.kind}: {message}")]
    )


# ---------------------------------------------------------------------------------------------
# LLM judge

JUDGE_SYSTEM = (
    "You grade whether an AI assistant's final answer solves a user's request. Reply with only a "
    'JSON object: {"verdict": "Solved" | "Unsure" | "Unsolved", "reason": "<one sentence>"}. '
    "Solved: the answer fully addresses every part of the request. Unsure: it addresses the "
    "request partly, or you cannot tell whether it is correct. Unsolved: it does not address the "
    "request, refuses, or only says it will try."
)


def judge_prompt(question: str, answer: str, criteria: str) -> str:
    """The user message the judge sees; part of the cache key, so keep it stable."""
    parts = [f"User request:\n{question or '(not given)'}", f"Final answer:\n{answer}"]
    if criteria:
        parts.append(f"Grading criteria:\n{criteria}")
    return "\n\n".join(parts)


def parse_verdict(text: str) -> tuple[float, str] | None:
    """(score, reason) from the judge's reply, or None when it holds no known verdict."""
    m = re.search(r"\{.*\}", text, re.DOTALL)
    data: Any = None
    if m:
        try:
            data = json.loads(m.group(0))
        except ValueError:
            data = None
    if isinstance(data, dict) and isinstance(data.get("verdict"), str):
        score = VERDICT_SCORES.get(data["verdict"].strip().lower())
        if score is not None:
            return score, str(data.get("reason", ""))
    bare = re.fullmatch(r"\W*(solved|unsure|unsolved)\W*", text.strip(), re.IGNORECASE)
    if bare:
        return VERDICT_SCORES[bare.group(1).lower()], ""
    return None


def combine_rounds(rounds: list[tuple[float, str]]) -> tuple[float, str]:
    """Several rounds' verdicts as one, by StableToolBench's rule (eval_pass_rate.py: a round
    scores Solved 1, Unsure 0.5, else 0, and the pass rate is the mean over rounds): the mean
    of the rounds' scores. One round is its own verdict."""
    if len(rounds) == 1:
        return rounds[0]
    names = {1.0: "Solved", 0.5: "Unsure", 0.0: "Unsolved"}
    shown = ", ".join(names.get(score, str(score)) for score, _ in rounds)
    mean = sum(score for score, _ in rounds) / len(rounds)
    return mean, f"mean of {len(rounds)} rounds ({shown}): {rounds[0][1]}"


def entry_tokens(entry: Mapping[str, Any]) -> int:
    """The tokens a cached verdict cost (0 for one cached before they were kept)."""
    tokens = entry.get("tokens", 0)
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else 0


class JudgeUnavailable(RuntimeError):
    """No verdict could be had: not cached where no call is allowed, or the call failed.

    The scorer makes it the case's error (``needs_run`` when only a run can fill the cache);
    it is never a silent 0.0."""

    def __init__(self, message: str, *, needs_run: bool) -> None:
        super().__init__(message)
        self.needs_run = needs_run


JUDGE_CACHE_WHAT = "a judge verdict cache (one JSON object of prompt hash -> verdict)"


class LLMJudge:
    """Grades answers through any OpenAI-compatible chat endpoint, caching every verdict.

    Calls go through the run's :class:`ModelCalls` (its timeout, retries, rate limit and
    redaction). Without one (``score``, ``diff``, ``compare``, ``merge``, offline runs) the
    cache is the only source and a miss is :class:`JudgeUnavailable` with ``needs_run``.
    """

    system = JUDGE_SYSTEM
    """The judge's instructions (part of every verdict's cache key)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        cache_path: str | Path | None = None,
        calls: ModelCalls | None = None,
        rounds: int = 1,
        temperature: float = 0.0,
    ):
        self.model = model
        self.rounds = rounds
        """How many times each answer is asked about; the score is their verdicts' mean."""
        self.temperature = temperature
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.cache_path = Path(cache_path) if cache_path else None
        self._calls = calls
        self._cache: dict[str, dict[str, Any]] | None = None
        self._lock = asyncio.Lock()
        self.calls = 0
        """Requests actually sent (cache hits excluded)."""
        self.spent = 0
        """Tokens of the verdicts this judge gave, asked or read from the cache (each cached
        verdict keeps the tokens it cost), so a budget counts a replay as it counted the run."""

    @classmethod
    def from_params(cls, params: dict[str, Any], calls: ModelCalls | None = None) -> LLMJudge:
        model = params.get("model")
        if not isinstance(model, str) or not model:
            raise ParamError("`judge` needs `model`, the judge model's id")
        rounds = params.get("rounds", default_of(FINAL_ANSWER, "judge", "rounds"))
        if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= 20:
            raise ParamError(
                f"`judge` needs `rounds` as a whole number from 1 to 20, not {rounds!r}"
            )
        temperature = params.get("temperature", default_of(FINAL_ANSWER, "judge", "temperature"))
        if isinstance(temperature, bool) or not isinstance(temperature, int | float):
            raise ParamError(f"`judge` needs `temperature` as a number, not {temperature!r}")
        if not 0 <= temperature <= 2:
            raise ParamError(f"`judge` needs `temperature` from 0 to 2, not {temperature!r}")
        return cls(
            model,
            base_url=params.get("base_url"),
            api_key_env=params.get("api_key_env", DEFAULT_API_KEY_ENV),
            cache_path=params.get("cache"),
            calls=calls,
            rounds=rounds,
            temperature=float(temperature),
        )

    def cached(self, question: str, answer: str, criteria: str) -> tuple[float, str] | None:
        """The cached verdict on this answer (every round's, combined), or None; never a
        request."""
        prompt = judge_prompt(question, answer, criteria)
        got = [self._cached_round(prompt, r) for r in range(self.rounds)]
        if any(g is None for g in got):
            return None
        return combine_rounds([g for g in got if g is not None])

    def cached_rounds(self, question: str, answer: str, criteria: str) -> list[float | None]:
        """Each round's cached score (None: not cached), in order."""
        prompt = judge_prompt(question, answer, criteria)
        return [
            g[0] if (g := self._cached_round(prompt, r)) is not None else None
            for r in range(self.rounds)
        ]

    def _cached_round(self, prompt: str, round_: int) -> tuple[float, str] | None:
        hit = self._load_cache().get(self._key(prompt, round_))
        if isinstance(hit, dict) and "score" in hit:
            return float(hit["score"]), str(hit.get("reason", ""))
        return None

    def _key(self, prompt: str, round_: int = 0) -> str:
        """One verdict's cache key: the model, the instructions and the prompt; a later round
        and a sampling temperature are part of it too (left out at their defaults, so verdicts
        cached by a single-round judge stay valid)."""
        parts: list[object] = [self.model, self.system, prompt]
        if self.temperature:
            parts.append({"temperature": self.temperature})
        if round_:
            parts.append({"round": round_})
        text = json.dumps(parts)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    async def judge(self, question: str, answer: str, criteria: str) -> tuple[float, str]:
        """The verdict on this answer: every round asked (or read from the cache), combined by
        StableToolBench's rule, the mean of the rounds' scores."""
        prompt = judge_prompt(question, answer, criteria)
        return combine_rounds([await self._round(prompt, r) for r in range(self.rounds)])

    async def _round(self, prompt: str, round_: int) -> tuple[float, str]:
        entry = await self._entry(prompt, round_)
        return float(entry["score"]), str(entry.get("reason", ""))

    async def _entry(
        self, prompt: str, round_: int, extra: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """One round's cache entry: read, or asked for and written (with `extra`, what the
        entry keeps beside the verdict) as soon as it arrives."""
        key = self._key(prompt, round_)
        cache = self._load_cache()
        hit = cache.get(key)
        if isinstance(hit, dict) and "score" in hit:
            _log.debug("judge verdict from %s", self.cache_path)
            self.spent += entry_tokens(hit)
            return hit
        if self._calls is None:
            raise JudgeUnavailable(
                f"the judge's verdict on this answer is not in {self.cache_path or 'the cache'}"
                " and this command calls no model; it needs a run, or `evalspec judge SUITE -t "
                f"TRANSCRIPTS`, with the judge's key in {self.api_key_env}, to fill the cache",
                needs_run=True,
            )
        _log.info("judge verdict not cached; asking %s", self.model)
        text, tokens = await self._ask(prompt)
        self.spent += tokens
        entry = {**self.parse_reply(text), **(extra or {}), "tokens": tokens}
        async with self._lock:
            cache[key] = entry
            if self.rounds > 1:
                cache[key]["round"] = round_ + 1
            if self.cache_path:
                update_json_object(self.cache_path, {key: cache[key]}, JUDGE_CACHE_WHAT)
        return entry

    def parse_reply(self, text: str) -> dict[str, Any]:
        """The cache entry of the judge's reply; JudgeError when it holds no verdict."""
        parsed = parse_verdict(text)
        if parsed is None:
            raise JudgeError(f"the judge's reply holds no verdict: {text[:200]!r}")
        return {"score": parsed[0], "reason": parsed[1]}

    async def _ask(self, prompt: str) -> tuple[str, int]:
        """The judge's reply to `prompt`, and the tokens it cost."""
        assert self._calls is not None
        self.calls += 1
        try:
            reply = await self._calls.ask(
                Endpoint(self.base_url, self.api_key_env),
                self.model,
                [
                    {"role": "system", "content": self.system},
                    {"role": "user", "content": prompt},
                ],
                params={"temperature": self.temperature},
                label=f"judge '{self.model}'",
            )
        except (ProviderError, RunError) as exc:
            raise JudgeUnavailable(f"the judge failed: {exc}", needs_run=False) from None
        except Exception as exc:  # anything else the transport raises is still one failure
            problem = redaction.scrub(f"{type(exc).__name__}: {exc}")
            raise JudgeUnavailable(f"the judge failed: {problem}", needs_run=False) from None
        content = reply.message.get("content")
        tokens = sum(
            v
            for k, v in reply.usage.items()
            if k in ("prompt_tokens", "completion_tokens") and isinstance(v, int) and v > 0
        )
        return (content if isinstance(content, str) else ""), tokens

    def _load_cache(self) -> dict[str, dict[str, Any]]:
        if self._cache is None:
            self._cache = {}
            if self.cache_path:
                self._cache = read_json_object(self.cache_path, JUDGE_CACHE_WHAT)
        return self._cache
