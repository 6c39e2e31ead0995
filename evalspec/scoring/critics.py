"""Argument critics: each judges one argument value of a tool call, expected against actual.

A critic returns an unweighted score in [0, 1], whether it counts as a match, and one sentence a
person can read. Weights belong to the scorer. Critics never raise on odd actual values (None,
nested structures, huge strings): those score 0 with a reason. Bad critic parameters raise
ValueError from `make_critic`, with a message meant for the person who wrote the YAML.

Semantics follow public implementations where one exists:
- binary, numeric, similarity (tfidf), datetime: Arcade's evals critics (BinaryCritic,
  NumericCritic, SimilarityCritic, DatetimeCritic), with the typing and clamping fixes noted below.
- one_of: BFCL, berkeley-function-call-leaderboard
  `bfcl_eval/eval_checker/ast_eval/ast_checker.py` (type_checker, standardize_string,
  string_checker, list_checker, dict_checker, list_dict_checker), Python rules, for one value.
- json_similarity: UiPath's `uipath/eval/evaluators/json_similarity_evaluator.py`
  (`_compare_tokens`: leaf-weighted tree similarity).

Heavy libraries (scikit-learn) are imported inside the functions that need them.
"""

from __future__ import annotations

import json
import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, ClassVar

from evalspec.scoring.types import CriticOutcome, Embedder

MISSING = "argument missing"


class EmbedderRequired(RuntimeError):
    """The embedding similarity critic was asked to judge without an embedder."""


# ---------------------------------------------------------------------------------------------
# Small helpers shared by several critics
# ---------------------------------------------------------------------------------------------


def _show(value: Any, limit: int = 60) -> str:
    """A short, readable rendering of a value for reasons: JSON-like, truncated."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    if isinstance(value, str):
        text = "'" + text[1:-1].replace('\\"', '"') + "'"
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _kind(value: Any) -> str:
    """JSON-ish kind of a value; bool is its own kind, never a number."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "other"


_KIND_WORDS = {
    "null": "null",
    "bool": "true/false",
    "int": "a whole number",
    "float": "a decimal number",
    "str": "text",
    "list": "a list",
    "dict": "an object",
    "other": "an unsupported value",
}


def _is_number(value: Any) -> bool:
    return _kind(value) in ("int", "float")


_NUMBER_TEXT = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")


def _number_from_text(text: str) -> int | float | None:
    """The number a string spells in JSON number syntax, exactly; None otherwise."""
    m = _NUMBER_TEXT.fullmatch(text)
    if not m:
        return None
    if m.group(1) is None and m.group(2) is None:
        return int(text)
    value = float(text)
    return value if math.isfinite(value) else None


def _as_number(value: Any) -> int | float | None:
    """A number, or a string that spells one exactly; never a bool."""
    if _is_number(value):
        return value
    if isinstance(value, str):
        return _number_from_text(value.strip())
    return None


def _text(value: Any) -> str:
    """Text form of a value for text critics: strings as is, JSON for everything else."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _maybe_json(value: Any) -> Any:
    """Parse a string holding a JSON object or array; anything else is returned unchanged."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class _Params:
    """Reads a critic's parameters and rejects unknown ones, with messages for YAML authors."""

    def __init__(
        self, kind: str, params: dict[str, Any] | None, aliases: dict[str, str] | None = None
    ):
        aliases = aliases or {}
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise ValueError(f"critic '{kind}': parameters must be a mapping, got {_show(params)}")
        self.kind = kind
        self.values: dict[str, Any] = {}
        for key, value in params.items():
            name = aliases.get(key, key)
            if name in self.values:
                raise ValueError(f"critic '{kind}': '{key}' is given twice (under another name)")
            self.values[name] = value
        self.used: set[str] = set()

    def has(self, name: str) -> bool:
        return name in self.values

    def raw(self, name: str, default: Any = None) -> Any:
        self.used.add(name)
        return self.values.get(name, default)

    def number(
        self, name: str, default: float | None, lo: float | None = None, hi: float | None = None
    ) -> float | None:
        value = self.raw(name, default)
        if value is None:
            return None
        if not _is_number(value) or not math.isfinite(value):
            raise ValueError(f"critic '{self.kind}': '{name}' must be a number, got {_show(value)}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
            raise ValueError(f"critic '{self.kind}': '{name}' must be {bounds}, got {value}")
        return float(value)

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw(name, default)
        if not isinstance(value, bool):
            raise ValueError(
                f"critic '{self.kind}': '{name}' must be true or false, got {_show(value)}"
            )
        return value

    def choice(self, name: str, default: str, allowed: tuple[str, ...]) -> str:
        value = self.raw(name, default)
        if value not in allowed:
            raise ValueError(
                f"critic '{self.kind}': '{name}' must be one of {', '.join(allowed)}, "
                f"got {_show(value)}"
            )
        return value

    def finish(self) -> None:
        unknown = sorted(set(self.values) - self.used)
        if unknown:
            allowed = ", ".join(sorted(self.used)) or "none"
            raise ValueError(
                f"critic '{self.kind}': unknown parameter {', '.join(repr(u) for u in unknown)}; "
                f"allowed: {allowed}"
            )


def _outcome(score: float, match: bool, reason: str) -> CriticOutcome:
    if not math.isfinite(score):
        score = 0.0
    return CriticOutcome(score=max(0.0, min(1.0, float(score))), match=bool(match), reason=reason)


# ---------------------------------------------------------------------------------------------
# Base class
# ---------------------------------------------------------------------------------------------


class Critic(ABC):
    """Judges one argument. Subclasses implement `_judge` for a present argument."""

    kind: ClassVar[str]

    def texts(self, expected: Any, actual: Any) -> list[str]:
        """Texts needing embeddings, so the scorer can embed a whole run in a few batches."""
        return []

    def evaluate(
        self, expected: Any, actual: Any, *, present: bool, embedder: Embedder | None = None
    ) -> CriticOutcome:
        """Score `actual` against `expected`; `present=False` means the call left it out."""
        if not present:
            return self._missing(expected)
        try:
            return self._judge(expected, actual, embedder)
        except (TypeError, ValueError, ArithmeticError, RecursionError) as exc:
            return _outcome(0.0, False, f"Could not compare {_show(actual)}: {exc}.")

    def _missing(self, expected: Any) -> CriticOutcome:
        return _outcome(0.0, False, f"{MISSING} (expected {_show(expected)}).")

    @abstractmethod
    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        """Score a present argument."""


# ---------------------------------------------------------------------------------------------
# binary
# ---------------------------------------------------------------------------------------------


def _binary_equal(expected: Any, actual: Any, cast: bool) -> bool:
    """Deep equality with one numeric rule: 5 == 5.0, bools are never numbers."""
    ke, ka = _kind(expected), _kind(actual)
    if ke == "bool" or ka == "bool":
        if ke == ka:
            return expected == actual
        if cast and {ke, ka} == {"bool", "str"}:
            flag, word = (expected, actual) if ke == "bool" else (actual, expected)
            return word == ("true" if flag else "false")
        return False
    if ke in ("int", "float") and ka in ("int", "float"):
        return expected == actual
    if ke == "str" and ka == "str":
        return expected == actual
    if cast and {ke, ka} <= {"int", "float", "str"} and "str" in {ke, ka}:
        number, text = (expected, actual) if ka == "str" else (actual, expected)
        parsed = _number_from_text(text)
        return parsed is not None and parsed == number
    if ke == "null" or ka == "null":
        return ke == ka
    if ke == "list" and ka == "list":
        return len(expected) == len(actual) and all(
            _binary_equal(e, a, cast) for e, a in zip(expected, actual, strict=True)
        )
    if ke == "dict" and ka == "dict":
        return set(expected) == set(actual) and all(
            _binary_equal(expected[k], actual[k], cast) for k in expected
        )
    if cast and {ke, ka} & {"list", "dict"} and "str" in {ke, ka}:
        e2, a2 = _maybe_json(expected), _maybe_json(actual)
        if _kind(e2) == _kind(a2) and (e2 is not expected or a2 is not actual):
            return _binary_equal(e2, a2, cast)
        return False
    if ke == "other" and ka == "other":
        return expected == actual
    return False


@dataclass(frozen=True)
class BinaryCritic(Critic):
    """Exact equality after casting, as Arcade's BinaryCritic, with sane typing."""

    kind: ClassVar[str] = "binary"
    cast: bool = True

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> BinaryCritic:
        p = _Params(cls.kind, params)
        critic = cls(cast=p.flag("cast", True))
        p.finish()
        return critic

    def _missing(self, expected: Any) -> CriticOutcome:
        if expected is None:
            return _outcome(1.0, True, "Left out, and null was expected.")
        return super()._missing(expected)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        if _binary_equal(expected, actual, self.cast):
            return _outcome(1.0, True, f"Got {_show(actual)}, as expected.")
        ke, ka = _kind(expected), _kind(actual)
        why = ""
        if ke != ka and not ({ke, ka} <= {"int", "float"}):
            why = f", which is {_KIND_WORDS[ka]}, not {_KIND_WORDS[ke]}"
        return _outcome(0.0, False, f"Expected {_show(expected)} but got {_show(actual)}{why}.")


# ---------------------------------------------------------------------------------------------
# numeric
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NumericCritic(Critic):
    """Closeness of two numbers: over a value range (Arcade) or within an absolute tolerance.

    With `min`/`max`: score = 1 - |expected - actual| / (max - min), clamped to [0, 1], and match
    when score >= threshold. With `tolerance`: score 1 when |expected - actual| <= tolerance, else
    0 (unless a range is also given, which then supplies the partial score); match is then
    decided by the tolerance alone. Numeric strings ("5", "2.5") count as numbers; bools never.
    """

    kind: ClassVar[str] = "numeric"
    min: float | None = None
    max: float | None = None
    threshold: float = 0.8
    tolerance: float | None = None

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> NumericCritic:
        p = _Params(cls.kind, params, {"match_threshold": "threshold"})
        lo, hi = p.number("min", None), p.number("max", None)
        value_range = p.raw("value_range")
        if value_range is not None:
            if lo is not None or hi is not None:
                raise ValueError("critic 'numeric': give either value_range or min/max, not both")
            if not (isinstance(value_range, list | tuple) and len(value_range) == 2):
                raise ValueError("critic 'numeric': value_range must be a list [min, max]")
            lo, hi = (p.number(n, v) for n, v in zip(("min", "max"), value_range, strict=True))
        threshold = p.number("threshold", 0.8, 0.0, 1.0)
        tolerance = p.number("tolerance", None, 0.0)
        p.finish()
        if (lo is None) != (hi is None):
            raise ValueError("critic 'numeric': give both min and max (the range of values)")
        if lo is not None and hi is not None and not lo < hi:
            raise ValueError(f"critic 'numeric': min ({lo:g}) must be less than max ({hi:g})")
        if lo is None and tolerance is None:
            raise ValueError(
                "critic 'numeric' needs min and max (the range of values), or a tolerance"
            )
        assert threshold is not None
        return cls(min=lo, max=hi, threshold=threshold, tolerance=tolerance)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        exp, act = _as_number(expected), _as_number(actual)
        if exp is None:
            return _outcome(0.0, False, f"The expected value {_show(expected)} is not a number.")
        if act is None:
            return _outcome(
                0.0, False, f"Expected a number near {exp:g} but got {_show(actual)}, not a number."
            )
        diff = abs(float(exp) - float(act))
        if not math.isfinite(diff):
            return _outcome(0.0, False, f"Expected {exp:g} but got {act!r}.")
        head = f"Got {act:g}, expected {exp:g}"
        within = self.tolerance is not None and diff <= self.tolerance
        if self.min is not None and self.max is not None:
            span = self.max - self.min
            score = max(0.0, min(1.0, 1.0 - diff / span))
            scale = f"off by {diff:g} on a range of {self.min:g} to {self.max:g}"
        else:
            score = 1.0 if within else 0.0
            scale = f"off by {diff:g}"
        if self.tolerance is not None:
            match = within
            rule = f"{'within' if within else 'beyond'} the tolerance of {self.tolerance:g}"
        else:
            match = score >= self.threshold
            rule = f"score {score:.2f} {'≥' if match else '<'} threshold {self.threshold:g}"
        if diff == 0:
            return _outcome(1.0, True, f"{head}: the same number.")
        return _outcome(score, match, f"{head}: {scale}, {rule}.")


# ---------------------------------------------------------------------------------------------
# similarity
# ---------------------------------------------------------------------------------------------


def tfidf_similarity(expected: str, actual: str) -> float:
    """Arcade's SimilarityCritic: TF-IDF (sklearn defaults) fit on both texts, cosine of rows."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    matrix = TfidfVectorizer().fit_transform([expected, actual])
    return float(cosine_similarity(matrix[0], matrix[1])[0][0])


@dataclass(frozen=True)
class SimilarityCritic(Critic):
    """Meaning (embedding cosine) or word overlap (TF-IDF cosine) between two texts."""

    kind: ClassVar[str] = "similarity"
    threshold: float = 0.75
    metric: str = "embedding"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> SimilarityCritic:
        p = _Params(cls.kind, params, {"similarity_threshold": "threshold"})
        threshold = p.number("threshold", 0.75, -1.0, 1.0)
        metric = p.choice("metric", "embedding", ("embedding", "tfidf"))
        p.finish()
        assert threshold is not None
        return cls(threshold=threshold, metric=metric)

    def texts(self, expected: Any, actual: Any) -> list[str]:
        if self.metric != "embedding" or actual is None or expected is None:
            return []
        exp, act = _text(expected), _text(actual)
        return [] if exp == act else [exp, act]

    def evaluate(
        self, expected: Any, actual: Any, *, present: bool, embedder: Embedder | None = None
    ) -> CriticOutcome:
        if present and self.metric == "embedding" and embedder is None:
            exp, act = _text(expected), _text(actual)
            if actual is not None and expected is not None and exp != act:
                raise EmbedderRequired(
                    "the similarity critic (metric: embedding) needs an embedding model, "
                    "but none was provided; use metric: tfidf to judge without one"
                )
        return super().evaluate(expected, actual, present=present, embedder=embedder)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        if actual is None:
            return _outcome(0.0, False, f"Expected text like {_show(expected)} but got null.")
        if expected is None:
            return _outcome(0.0, False, f"Expected null but got {_show(actual)}.")
        exp, act = _text(expected), _text(actual)
        if exp == act:
            return _outcome(1.0, True, f"Got {_show(actual)}, exactly as expected.")
        if self.metric == "tfidf":
            try:
                sim = tfidf_similarity(exp, act)
            except ValueError:  # no word in either text: nothing to compare
                sim = 0.0
        else:
            assert embedder is not None
            sim = float(embedder.similarity(exp, act))
        match = sim >= self.threshold
        verdict = "similar enough" if match else "not similar enough"
        return _outcome(
            sim,
            match,
            f"Got {_show(actual)}, expected {_show(expected)}: {self.metric} similarity "
            f"{sim:.2f} {'≥' if match else '<'} {self.threshold:g}, {verdict}.",
        )


# ---------------------------------------------------------------------------------------------
# datetime
# ---------------------------------------------------------------------------------------------

_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_SHORT_PART = re.compile(r"(\d+(?:\.\d+)?)([wdhms])", re.IGNORECASE)
_ISO_DURATION = re.compile(
    r"P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE,
)


def parse_duration(value: Any) -> float:
    """Seconds in a duration: a number of seconds, "90s", "30m", "1h30m", "2d", "1w", "PT1H"."""
    if _is_number(value):
        seconds = float(value)
    elif isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, str):
        text = value.strip().replace(" ", "")
        iso = _ISO_DURATION.fullmatch(text)
        if iso and text.upper() not in ("P", "PT") and not text.upper().endswith("T"):
            weeks, days, hours, minutes, secs = (float(g) if g else 0.0 for g in iso.groups())
            seconds = weeks * 604800 + days * 86400 + hours * 3600 + minutes * 60 + secs
        elif text and re.fullmatch(r"(?:\d+(?:\.\d+)?[wdhms])+", text, re.IGNORECASE):
            seconds = sum(float(n) * _UNIT_SECONDS[u.lower()] for n, u in _SHORT_PART.findall(text))
        else:
            raise ValueError(
                f"cannot read {_show(value)} as a duration; write e.g. 90s, 30m, 1h30m, 2d, "
                "PT1H, or a number of seconds"
            )
    else:
        raise ValueError(f"cannot read {_show(value)} as a duration")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"a duration must be zero or more, got {_show(value)}")
    return seconds


def _fmt_duration(seconds: float) -> str:
    if seconds == 0:
        return "0s"
    parts = []
    rest = seconds
    for unit in ("d", "h", "m"):
        size = _UNIT_SECONDS[unit]
        if rest >= size:
            count = int(rest // size)
            parts.append(f"{count}{unit}")
            rest -= count * size
    if rest or not parts:
        parts.append(f"{rest:g}s")
    return "".join(parts)


def _parse_when(value: Any) -> date | datetime | None:
    """A date (date-only text) or datetime from ISO-8601 text ("Z" allowed); None if neither."""
    if isinstance(value, datetime | date):
        return value
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _seconds_apart(a: date | datetime, b: date | datetime) -> float:
    if not isinstance(a, datetime) or not isinstance(b, datetime):
        da = a.date() if isinstance(a, datetime) else a
        db = b.date() if isinstance(b, datetime) else b
        return abs((da - db).days) * 86400.0
    if (a.tzinfo is None) != (b.tzinfo is None):
        # Naive means "the same zone as the other value": compare wall clocks (as Arcade does).
        a, b = a.replace(tzinfo=None), b.replace(tzinfo=None)
    return abs((a - b).total_seconds())


@dataclass(frozen=True)
class DatetimeCritic(Critic):
    """Closeness of two dates or datetimes: full score within tolerance, 0 at max_difference."""

    kind: ClassVar[str] = "datetime"
    tolerance: float = 500.0
    max_difference: float = 7200.0

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> DatetimeCritic:
        p = _Params(cls.kind, params)
        try:
            tolerance = parse_duration(p.raw("tolerance", 500))
            max_difference = parse_duration(p.raw("max_difference", max(tolerance, 7200)))
        except ValueError as exc:
            raise ValueError(f"critic 'datetime': {exc}") from None
        p.finish()
        if max_difference < tolerance:
            raise ValueError(
                "critic 'datetime': max_difference must be at least the tolerance "
                f"({_fmt_duration(max_difference)} < {_fmt_duration(tolerance)})"
            )
        return cls(tolerance=tolerance, max_difference=max_difference)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        exp, act = _parse_when(expected), _parse_when(actual)
        if exp is None:
            return _outcome(0.0, False, f"The expected value {_show(expected)} is not a date.")
        if act is None:
            return _outcome(
                0.0, False, f"Expected a date/time near {_show(expected)} but got {_show(actual)}."
            )
        apart = _seconds_apart(exp, act)
        head = f"Got {_show(actual)}, expected {_show(expected)}: {_fmt_duration(apart)} apart"
        if apart <= self.tolerance:
            return _outcome(1.0, True, f"{head}, within {_fmt_duration(self.tolerance)}.")
        if apart >= self.max_difference:
            return _outcome(
                0.0, False, f"{head}, at least the maximum {_fmt_duration(self.max_difference)}."
            )
        score = 1.0 - (apart - self.tolerance) / (self.max_difference - self.tolerance)
        return _outcome(
            score,
            False,
            f"{head}, more than {_fmt_duration(self.tolerance)}: partial score {score:.2f}.",
        )


# ---------------------------------------------------------------------------------------------
# regex, exact, contains, ignore
# ---------------------------------------------------------------------------------------------


def _scalar_text(value: Any) -> str | None:
    """Text a pattern can be matched against: strings and numbers; None for anything else."""
    if isinstance(value, str):
        return value
    if _is_number(value):
        return str(value)
    return None


@dataclass(frozen=True)
class RegexCritic(Critic):
    """The actual value matches a pattern (searched anywhere, or the whole value with full)."""

    kind: ClassVar[str] = "regex"
    pattern: str = ""
    full: bool = False
    ignore_case: bool = False

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> RegexCritic:
        p = _Params(cls.kind, params)
        pattern = p.raw("pattern")
        full, ignore_case = p.flag("full", False), p.flag("ignore_case", False)
        p.finish()
        if not isinstance(pattern, str):
            raise ValueError("critic 'regex' needs a 'pattern' (a regular expression as text)")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"critic 'regex': the pattern {pattern!r} is invalid: {exc}") from None
        return cls(pattern=pattern, full=full, ignore_case=ignore_case)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        text = _scalar_text(actual)
        if text is None:
            return _outcome(
                0.0,
                False,
                f"Expected text matching /{self.pattern}/ but got "
                f"{_show(actual)} ({_KIND_WORDS[_kind(actual)]}).",
            )
        flags = re.IGNORECASE if self.ignore_case else 0
        found = (re.fullmatch if self.full else re.search)(self.pattern, text, flags)
        how = "wholly " if self.full else ""
        if found:
            return _outcome(1.0, True, f"Got {_show(actual)}, which {how}matches /{self.pattern}/.")
        return _outcome(
            0.0, False, f"Got {_show(actual)}, which does not {how}match /{self.pattern}/."
        )


def _fold(text: str, case_sensitive: bool, strip: bool) -> str:
    if strip:
        text = text.strip()
    return text if case_sensitive else text.casefold()


@dataclass(frozen=True)
class ExactCritic(Critic):
    """Text equality with options; non-text values compare by their JSON text (5 vs "5" match)."""

    kind: ClassVar[str] = "exact"
    case_sensitive: bool = True
    strip: bool = True

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> ExactCritic:
        p = _Params(cls.kind, params)
        critic = cls(case_sensitive=p.flag("case_sensitive", True), strip=p.flag("strip", True))
        p.finish()
        return critic

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        exp = _fold(_text(expected), self.case_sensitive, self.strip)
        act = _fold(_text(actual), self.case_sensitive, self.strip)
        if exp == act:
            return _outcome(1.0, True, f"Got {_show(actual)}, as expected.")
        case = "" if self.case_sensitive else " (ignoring case)"
        return _outcome(0.0, False, f"Expected {_show(expected)}{case} but got {_show(actual)}.")


@dataclass(frozen=True)
class ContainsCritic(Critic):
    """The actual text contains the expected piece(s); score = share of pieces found."""

    kind: ClassVar[str] = "contains"
    values: tuple[str, ...] | None = None
    case_sensitive: bool = True

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> ContainsCritic:
        p = _Params(cls.kind, params, {"value": "values"})
        raw = p.raw("values")
        case_sensitive = p.flag("case_sensitive", True)
        p.finish()
        values: tuple[str, ...] | None = None
        if raw is not None:
            items = raw if isinstance(raw, list | tuple) else [raw]
            if not items or not all(isinstance(v, str | int | float) for v in items):
                raise ValueError("critic 'contains': 'values' must be text or a list of texts")
            values = tuple(_text(v) for v in items)
        return cls(values=values, case_sensitive=case_sensitive)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        if self.values is not None:
            pieces = list(self.values)
        elif isinstance(expected, list | tuple):
            pieces = [_text(v) for v in expected]
        else:
            pieces = [_text(expected)]
        if not pieces:
            return _outcome(1.0, True, "Nothing to look for.")
        if actual is None:
            return _outcome(0.0, False, f"Expected text containing {_show(pieces)} but got null.")
        text = _fold(_text(actual), self.case_sensitive, False)
        missing = [v for v in pieces if _fold(v, self.case_sensitive, False) not in text]
        found = len(pieces) - len(missing)
        if not missing:
            return _outcome(1.0, True, f"Got {_show(actual)}, which contains {_show(pieces)}.")
        return _outcome(
            found / len(pieces),
            False,
            f"Got {_show(actual)}, which lacks {_show(missing)} ({found} of {len(pieces)} found).",
        )


@dataclass(frozen=True)
class IgnoreCritic(Critic):
    """Excludes an argument from judgement: always a full match."""

    kind: ClassVar[str] = "ignore"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> IgnoreCritic:
        _Params(cls.kind, params).finish()
        return cls()

    def evaluate(
        self, expected: Any, actual: Any, *, present: bool, embedder: Embedder | None = None
    ) -> CriticOutcome:
        return _outcome(1.0, True, "not checked")

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        return _outcome(1.0, True, "not checked")


# ---------------------------------------------------------------------------------------------
# one_of (BFCL possible answers)
# ---------------------------------------------------------------------------------------------

_TYPE_NAMES = {
    "string": "str",
    "integer": "int",
    "float": "float",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "tuple": "list",
    "dict": "dict",
    "object": "dict",
    "null": "null",
    "any": None,
}


def standardize_string(text: str) -> str:
    """BFCL's standardize_string: drop spaces and ,./-_*^, lowercase, ' becomes "."""
    return re.sub(r"[ \,\.\/\-\_\*\^]", "", text).lower().replace("'", '"')


def _compatible(actual: Any, candidate: Any) -> bool:
    """BFCL's Python typing for one value: int is fine for float, not the reverse; bool ≠ int."""
    ka, kc = _kind(actual), _kind(candidate)
    if kc == "float":
        return ka in ("int", "float")
    return ka == kc


def _value_ok(actual: Any, candidate: Any, normalize: bool) -> str | None:
    """None if `actual` equals one concrete acceptable value (dicts are {key: [choices]})."""
    if not _compatible(actual, candidate):
        return (
            f"expected {_KIND_WORDS[_kind(candidate)]} but got {_show(actual)}, "
            f"which is {_KIND_WORDS[_kind(actual)]}"
        )
    kind = _kind(candidate)
    if kind == "str":
        same = (
            standardize_string(actual) == standardize_string(candidate)
            if normalize
            else actual == candidate
        )
        return None if same else f"got {_show(actual)}, expected {_show(candidate)}"
    if kind == "list":
        if len(actual) != len(candidate):
            return f"got {len(actual)} items, expected {len(candidate)}"
        for index, (a, c) in enumerate(zip(actual, candidate, strict=True)):
            problem = (
                _dict_ok(a, c, normalize) if isinstance(c, dict) else _value_ok(a, c, normalize)
            )
            if problem:
                return f"item {index}: {problem}"
        return None
    if kind == "dict":
        return _dict_ok(actual, candidate, normalize)
    return None if actual == candidate else f"got {_show(actual)}, expected {_show(candidate)}"


def _dict_ok(actual: Any, spec: dict[str, Any], normalize: bool) -> str | None:
    """BFCL dict_checker: every key given must be allowed and acceptable; missing keys need ""."""
    if not isinstance(actual, dict):
        return f"expected an object but got {_show(actual)}, which is {_KIND_WORDS[_kind(actual)]}"
    for key, value in actual.items():
        if key not in spec:
            return f"unexpected key {key!r}"
        problem = _choices_ok(value, True, _as_choices(spec[key]), normalize, None)
        if problem:
            return f"key {key!r}: {problem}"
    for key, choices in spec.items():
        if key not in actual and "" not in _as_choices(choices):
            return f"key {key!r} is missing"
    return None


def _as_choices(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _choices_ok(
    actual: Any, present: bool, choices: list[Any], normalize: bool, declared: str | None
) -> str | None:
    """None if `actual` is acceptable among `choices` ("" = may be left out); else why not."""
    optional = "" in choices
    candidates = [c for c in choices if not (isinstance(c, str) and c == "")]
    if not present:
        return None if optional else MISSING
    if optional and actual == "" and isinstance(actual, str):
        return None
    if not candidates:
        return f"should be left out, but got {_show(actual)}"
    # BFCL type_checker: a value of the listed answers' type is accepted even when the declared
    # type differs (BFCL calls that a variable), e.g. None for a float listed as ["", None].
    if declared is not None and _kind(actual) != _kind(candidates[0]):
        if declared == "float" and _kind(actual) == "int":
            actual = float(actual)
        if _kind(actual) != declared:
            return (
                f"expected {_KIND_WORDS[declared]} but got {_show(actual)}, "
                f"which is {_KIND_WORDS[_kind(actual)]}"
            )
    if declared in ("int", "float") and _is_number(actual):
        if declared == "float":
            actual = float(actual)
        if any(_is_number(c) and c == actual for c in candidates):
            return None
        return f"got {_show(actual)}, not one of {_show(candidates)}"
    problems = [_value_ok(actual, c, normalize) for c in candidates]
    if any(p is None for p in problems):
        return None
    typed = [p for c, p in zip(candidates, problems, strict=True) if _compatible(actual, c)]
    if not typed:
        return problems[0]
    if len(candidates) == 1:
        return problems[0]
    return f"got {_show(actual)}, not one of {_show(candidates)}"


@dataclass(frozen=True)
class OneOfCritic(Critic):
    """BFCL possible answers: the value must be one of the acceptable values; "" = may omit."""

    kind: ClassVar[str] = "one_of"
    values: tuple[Any, ...] | None = None
    normalize: bool = False
    type: str | None = None

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> OneOfCritic:
        p = _Params(cls.kind, params)
        raw = p.raw("values")
        normalize = p.flag("normalize", False)
        type_name = p.raw("type")
        p.finish()
        if raw is not None and not isinstance(raw, list | tuple):
            raise ValueError("critic 'one_of': 'values' must be a list of acceptable values")
        if type_name is not None and type_name not in _TYPE_NAMES:
            raise ValueError(
                f"critic 'one_of': unknown type {_show(type_name)}; use one of "
                + ", ".join(_TYPE_NAMES)
            )
        values = tuple(raw) if raw is not None else None
        return cls(values=values, normalize=normalize, type=type_name)

    def _choices(self, expected: Any) -> list[Any]:
        return list(self.values) if self.values is not None else _as_choices(expected)

    def evaluate(
        self, expected: Any, actual: Any, *, present: bool, embedder: Embedder | None = None
    ) -> CriticOutcome:
        choices = self._choices(expected)
        shown = _show(choices, 120)
        declared = _TYPE_NAMES.get(self.type) if self.type else None
        try:
            problem = _choices_ok(actual, present, choices, self.normalize, declared)
        except (TypeError, ValueError, ArithmeticError, RecursionError) as exc:
            problem = f"could not compare {_show(actual)}: {exc}"
        if problem is None:
            if not present:
                return _outcome(1.0, True, f"Left out, which is allowed (acceptable: {shown}).")
            return _outcome(1.0, True, f"Got {_show(actual)}, one of the acceptable {shown}.")
        if problem == MISSING:
            return _outcome(0.0, False, f"{MISSING} (acceptable: {shown}).")
        return _outcome(0.0, False, f"{problem[0].upper()}{problem[1:]} (acceptable: {shown}).")

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        return self.evaluate(expected, actual, present=True)


# ---------------------------------------------------------------------------------------------
# json_similarity (UiPath)
# ---------------------------------------------------------------------------------------------


def _string_similarity(a: str, b: str) -> float:
    """1 - Levenshtein distance / longer length (UiPath's string leaf score)."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    distance = _levenshtein(a, b)
    if distance is None:  # too big for an exact edit distance: character-overlap estimate
        from difflib import SequenceMatcher

        return SequenceMatcher(None, a, b, autojunk=False).quick_ratio()
    return max(0.0, 1.0 - distance / longest)


_LEVENSHTEIN_CELLS = 100_000_000
"""Above this many character pairs (after trimming the common ends) the edit table is skipped."""


def _levenshtein(a: str, b: str) -> int | None:
    """Edit distance; row by row with numpy for long texts; None when the table is too big."""
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    a, b = a[prefix:], b[prefix:]
    suffix = 0
    while suffix < min(len(a), len(b)) and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    if suffix:
        a, b = a[:-suffix], b[:-suffix]
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    if len(a) * len(b) > _LEVENSHTEIN_CELLS:
        return None
    if len(a) * len(b) <= 10_000:
        previous = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            current = [i]
            for j, cb in enumerate(b, 1):
                current.append(
                    min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
                )
            previous = current
        return previous[-1]
    import numpy as np

    # Rows run over the shorter text; the insertion step is a running minimum of (row - index).
    row_chars = np.frombuffer(a.encode("utf-32-le"), dtype=np.uint32)
    index = np.arange(len(a) + 1)
    row = index.copy()
    for i, ch in enumerate(b, 1):
        cost = row_chars != ord(ch)
        step = np.empty_like(row)
        step[0] = i
        np.minimum(row[1:] + 1, row[:-1] + cost, out=step[1:])
        row = np.minimum.accumulate(step - index) + index
    return int(row[-1])


def _count_leaves(node: Any) -> float:
    if isinstance(node, dict):
        return sum(_count_leaves(v) for v in node.values())
    if isinstance(node, list | tuple):
        return sum(_count_leaves(v) for v in node)
    return 1.0


def _compare_tokens(expected: Any, actual: Any) -> tuple[float, float]:
    """(matched leaves, total leaves) of `expected`, UiPath's tree comparison."""
    if _is_number(expected) and _is_number(actual):
        exp, act = float(expected), float(actual)
        if not (math.isfinite(exp) and math.isfinite(act)):
            return (1.0 if exp == act else 0.0), 1.0
        if math.isclose(exp, 0.0, abs_tol=1e-12):
            return (1.0 if math.isclose(act, 0.0, abs_tol=1e-12) else 0.0), 1.0
        return max(0.0, min(1.0, 1.0 - abs(exp - act) / abs(exp))), 1.0
    if _kind(expected) != _kind(actual):
        return 0.0, _count_leaves(expected)
    if isinstance(expected, dict):
        matched = total = 0.0
        for key, value in expected.items():
            m, t = (
                _compare_tokens(value, actual[key])
                if key in actual
                else (0.0, _count_leaves(value))
            )
            matched, total = matched + m, total + t
        return matched, total
    if isinstance(expected, list | tuple):
        matched = total = 0.0
        common = min(len(expected), len(actual))
        for index in range(common):
            m, t = _compare_tokens(expected[index], actual[index])
            matched, total = matched + m, total + t
        for item in expected[common:]:
            total += _count_leaves(item)
        return matched, total
    if isinstance(expected, bool):
        return (1.0 if expected == actual else 0.0), 1.0
    if isinstance(expected, str):
        return _string_similarity(expected, actual), 1.0
    return (1.0 if str(expected) == str(actual) else 0.0), 1.0


def json_similarity(expected: Any, actual: Any) -> tuple[float, float, float]:
    """(score, matched leaves, total leaves); JSON text holding an object/array is parsed first."""
    expected, actual = _maybe_json(expected), _maybe_json(actual)
    matched, total = _compare_tokens(expected, actual)
    if total == 0:
        return 1.0, 0.0, 0.0
    return max(0.0, min(1.0, matched / total)), matched, total


@dataclass(frozen=True)
class JsonSimilarityCritic(Critic):
    """Partial credit over the leaves of the expected JSON value (UiPath's json-similarity).

    Strings score by normalized Levenshtein similarity, numbers by 1 - relative difference,
    booleans and null exactly; lists compare by position; only the expected keys and positions
    count (extra keys or items in the actual value are free).
    """

    kind: ClassVar[str] = "json_similarity"
    threshold: float = 0.8

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> JsonSimilarityCritic:
        p = _Params(cls.kind, params)
        threshold = p.number("threshold", 0.8, 0.0, 1.0)
        p.finish()
        assert threshold is not None
        return cls(threshold=threshold)

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        score, matched, total = json_similarity(expected, actual)
        match = score >= self.threshold
        if score == 1.0:
            return _outcome(1.0, match, f"Got {_show(actual)}, matching every expected value.")
        return _outcome(
            score,
            match,
            f"Got {_show(actual)}, expected {_show(expected)}: {matched:.2g} of {total:g} values "
            f"match, score {score:.2f} {'≥' if match else '<'} threshold {self.threshold:g}.",
        )


# ---------------------------------------------------------------------------------------------
# Registry and defaults
# ---------------------------------------------------------------------------------------------

_CRITICS: dict[str, Any] = {
    c.kind: c
    for c in (
        BinaryCritic,
        NumericCritic,
        SimilarityCritic,
        DatetimeCritic,
        RegexCritic,
        ExactCritic,
        ContainsCritic,
        OneOfCritic,
        JsonSimilarityCritic,
        IgnoreCritic,
    )
}

CRITIC_KINDS: frozenset[str] = frozenset(_CRITICS)


def make_critic(kind: str, params: dict[str, Any]) -> Critic:
    """Build a critic from its YAML name and parameters; ValueError says what to fix."""
    cls = _CRITICS.get(kind)
    if cls is None:
        raise ValueError(
            f"unknown critic {_show(kind)}; use one of: {', '.join(sorted(CRITIC_KINDS))}"
        )
    return cls.from_params(params or {})


def default_critic(param_schema: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The critic used when none is named: datetime for date formats, binary otherwise.

    Objects and arrays default to binary (deep equality with the 5 == 5.0 rule) rather than
    json_similarity, because json_similarity ignores extra keys and items, which would let a
    wrong value pass silently.
    """
    if not isinstance(param_schema, dict):
        return "binary", {}
    types = param_schema.get("type")
    if isinstance(types, list):
        types = next((t for t in types if t != "null"), None)
    if (types in (None, "string")) and param_schema.get("format") in ("date", "date-time"):
        return "datetime", {}
    return "binary", {}
