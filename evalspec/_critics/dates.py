"""datetime: dates and times within a tolerance, falling to 0 at a maximum difference.

Arcade's DatetimeCritic semantics. Two of Arcade's choices are options rather than defaults:
`falloff: from_zero` (Arcade's partial score `1 - d/max`; evalspec's default falls from the
tolerance, so the score has no jump there) and `parse: dateutil` (Arcade reads values with
`dateutil.parser`, so "March 5, 2024 3pm" is a time; evalspec's default reads ISO 8601 only,
so "03/04/2024" is never guessed as March or April).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, ClassVar

from evalspec._critics.base import (
    Critic,
    CriticOutcome,
    Embedder,
    Params,
    is_number,
    outcome,
    show,
)
from evalspec._util.registry import register

_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_SHORT_PART = re.compile(r"(\d+(?:\.\d+)?)([wdhms])", re.IGNORECASE)
_ISO_DURATION = re.compile(
    r"P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE,
)


def parse_duration(value: Any) -> float:
    """Seconds in a duration: a number of seconds, "90s", "30m", "1h30m", "2d", "1w", "PT1H"."""
    if is_number(value):
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
                f"cannot read {show(value)} as a duration; write e.g. 90s, 30m, 1h30m, 2d, "
                "PT1H, or a number of seconds"
            )
    else:
        raise ValueError(f"cannot read {show(value)} as a duration")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"a duration must be zero or more, got {show(value)}")
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


_DATEUTIL_MAX_CHARS = 200
"""Longer text is not a date; keeps dateutil's tokenizer away from megabyte inputs."""


def _parse_dateutil(value: Any) -> datetime | None:
    """Arcade's reading: `dateutil.parser.parse` on text (missing parts from today); else None."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or len(value) > _DATEUTIL_MAX_CHARS:
        return None
    from dateutil import parser

    try:
        return parser.parse(value)
    except (ValueError, OverflowError, TypeError):
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


@register("critic")
@dataclass(frozen=True)
class DatetimeCritic(Critic):
    """Closeness of two dates or datetimes: full score within tolerance, 0 at max_difference."""

    kind: ClassVar[str] = "datetime"
    tolerance: float = 500.0
    max_difference: float = 7200.0
    falloff: str = "from_tolerance"
    parse: str = "iso"

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> DatetimeCritic:
        p = Params(cls.kind, params)
        try:
            tolerance = parse_duration(p.raw("tolerance", 500))
            max_difference = parse_duration(p.raw("max_difference", max(tolerance, 7200)))
        except ValueError as exc:
            raise ValueError(f"critic 'datetime': {exc}") from None
        falloff = p.choice("falloff", "from_tolerance", ("from_tolerance", "from_zero"))
        parse = p.choice("parse", "iso", ("iso", "dateutil"))
        p.finish()
        if max_difference < tolerance:
            raise ValueError(
                "critic 'datetime': max_difference must be at least the tolerance "
                f"({_fmt_duration(max_difference)} < {_fmt_duration(tolerance)})"
            )
        return cls(tolerance=tolerance, max_difference=max_difference, falloff=falloff, parse=parse)

    def reads(self, value: Any) -> bool:
        """Whether this critic reads `value` as a date or time (an expected value it cannot
        read fails every answer)."""
        read = _parse_dateutil if self.parse == "dateutil" else _parse_when
        return read(value) is not None

    def _judge(self, expected: Any, actual: Any, embedder: Embedder | None) -> CriticOutcome:
        read = _parse_dateutil if self.parse == "dateutil" else _parse_when
        exp, act = read(expected), read(actual)
        if exp is None:
            return outcome(0.0, False, f"The expected value {show(expected)} is not a date.")
        if act is None:
            return outcome(
                0.0,
                False,
                f"Expected a date/time near {show(expected)} but got {show(actual)}.",
            )
        apart = _seconds_apart(exp, act)
        head = f"Got {show(actual)}, expected {show(expected)}: {_fmt_duration(apart)} apart"
        if apart <= self.tolerance:
            return outcome(1.0, True, f"{head}, within {_fmt_duration(self.tolerance)}.")
        if apart >= self.max_difference:
            return outcome(
                0.0, False, f"{head}, at least the maximum {_fmt_duration(self.max_difference)}."
            )
        if self.falloff == "from_zero":
            score = 1.0 - apart / self.max_difference
        else:
            score = 1.0 - (apart - self.tolerance) / (self.max_difference - self.tolerance)
        return outcome(
            score,
            False,
            f"{head}, more than {_fmt_duration(self.tolerance)}: partial score {score:.2f}.",
        )
