"""What an evaluator and a final-answer check are, for evalspec's own and for plugins alike.

An evaluator judges a whole transcript; a final-answer check judges the model's last text. Each
takes one input record and returns a `CheckReturn`: a score in [0, 1], a ``(score, details)``
pair, or a `Verdict` that also explains itself with `Finding` rows. A check may be async (the
LLM judge is one). Plugins written before these records, taking positional arguments, keep
working (see `evalspec._util.registry.Plugin.legacy`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from evalspec._scoring.tool_names import tool_name_key

if TYPE_CHECKING:
    from evalspec._critics.base import Embedder
    from evalspec._suite.model import ExpectedCall
    from evalspec._transcript import Transcript


@dataclass(frozen=True)
class Finding:
    """One row explaining a verdict: what was expected of one item, what was found, its score."""

    item: str
    expected: Any
    actual: Any
    score: float
    reason: str = ""


@dataclass(frozen=True)
class Verdict:
    """A check's full answer. `passed` None: passes at score 1.0, or at the check's `threshold`
    when the suite gives one."""

    score: float
    details: dict[str, Any] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    passed: bool | None = None
    reason: str = ""


CheckReturn: TypeAlias = float | tuple[float, dict[str, Any] | str] | Verdict
"""What an evaluator or check returns: a score, (score, details or a reason), or a Verdict."""


@dataclass(frozen=True)
class EvaluatorInput:
    """What an evaluator sees: the transcript, the case's expected calls (the default criteria)
    and its options from YAML (`name` and `threshold` are evalspec's, not passed on)."""

    transcript: Transcript
    expected_calls: Sequence[ExpectedCall]
    params: Mapping[str, Any]
    normalize_names: bool = True
    """The rubric's `normalize_tool_names`: compare tool names through `key`."""

    def key(self, name: str) -> str:
        """A tool name as the rubric compares it."""
        return tool_name_key(name, self.normalize_names)


@dataclass(frozen=True)
class AnswerInput:
    """What a final-answer check sees: the answer (never empty: a missing answer scores 0
    before any check runs), its options, the user's request, and the run's embedder and judge
    when it has them."""

    answer: str
    params: Mapping[str, Any]
    question: str = ""
    embedder: Embedder | None = None
    judge: Judge | None = None


class Judge(Protocol):
    """Anything that grades a final answer against criteria: a score in [0, 1] and the
    reason. The judge check's LLM is the one evalspec uses; `score(..., judge=)` takes your own
    (a scripted judge in a test, another grader)."""

    async def judge(self, question: str, answer: str, criteria: str) -> tuple[float, str]: ...


class Evaluator(Protocol):
    """``fn(EvaluatorInput) -> CheckReturn``; raise ValueError for bad options."""

    def __call__(self, inp: EvaluatorInput, /) -> CheckReturn: ...


class AnswerCheck(Protocol):
    """``fn(AnswerInput) -> CheckReturn``, or an async function returning one; raise ValueError
    for bad options."""

    def __call__(self, inp: AnswerInput, /) -> CheckReturn | Awaitable[CheckReturn]: ...


def as_verdict(result: Any) -> Verdict:
    """Any `CheckReturn` as a Verdict; ValueError names a return that is none of them."""
    if isinstance(result, Verdict):
        return result
    details: Any = {}
    if isinstance(result, tuple):
        if len(result) != 2:
            raise ValueError(f"returned a tuple of {len(result)}; return (score, details)")
        result, details = result
    try:
        score = float(result)
    except (TypeError, ValueError):
        raise ValueError(f"returned {type(result).__name__} as its score, not a number") from None
    if isinstance(details, str):
        return Verdict(score, {}, reason=details)
    if not isinstance(details, dict):
        details = {}
    return Verdict(score, dict(details), reason=str(details.get("reason", "")))
