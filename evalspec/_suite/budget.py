"""How much work a suite's templates may do: time, loop iterations and size of what they build.

A template is code from a pull request. Jinja's sandbox stops it reaching Python internals but not
from spending: nested loops, `(10**100000)**100000` or `'a' * 300000000` would hang `validate` or
take gigabytes. The sandbox (sandbox.py) reports every step to the budget of the rendering in
progress, which stops the rendering with a `TemplateBudgetError` naming the limit.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from evalspec._suite.limits import MAX_RENDERED_CHARS_ENV, max_rendered_chars

MAX_TEMPLATE_SECONDS = 2.0
"""Processor time one template may take to render (processor time, not wall time, so a busy
machine does not turn a valid suite into an invalid one)."""

MAX_SUITE_TEMPLATE_SECONDS = 10.0
"""Time every template of one suite may take together (a matrix renders them many times)."""

MAX_TEMPLATE_STEPS = 1_000_000
"""Loop iterations and calls one template may make."""

MAX_TEMPLATE_TEXT = 1_000_000
"""Characters (or items) in any text or list a template builds, and in what it renders."""

MAX_TEMPLATE_INT_BITS = 100_000
"""Bits in any integer a template computes (about 30,000 digits)."""

_CHECK_EVERY = 32
"""Steps between clock reads: reading the clock costs more than counting."""


class TemplateBudgetError(Exception):
    """A template went over one of the limits above; the message names which."""


@dataclass
class SuiteBudget:
    """The time left for all the templates of one suite."""

    seconds: float = MAX_SUITE_TEMPLATE_SECONDS
    used: float = 0.0
    chars: int = 0
    """Characters rendered so far, every template and matrix row together."""
    max_chars: int = field(default_factory=max_rendered_chars)

    @property
    def spent(self) -> bool:
        """True once the templates have used all their time or characters: rendering more is
        pointless."""
        return self.used > self.seconds or self.chars > self.max_chars

    def add_chars(self, count: int) -> None:
        """Charge `count` rendered characters; TemplateBudgetError past the suite's total (a
        matrix of 5,000 rows rendering a text of a million characters each took 4.4 GB)."""
        self.chars += count
        if self.chars > self.max_chars:
            raise TemplateBudgetError(
                f"the suite's templates render more than {self.max_chars} characters in all "
                f"(whoever runs evalspec may raise {MAX_RENDERED_CHARS_ENV})"
            )


@dataclass
class RenderBudget:
    """The limits of one rendering in progress."""

    suite: SuiteBudget = field(default_factory=SuiteBudget)
    started: float = field(default_factory=time.process_time)
    steps: int = 0

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_TEMPLATE_STEPS:
            raise TemplateBudgetError(
                f"the template makes more than {MAX_TEMPLATE_STEPS} loop iterations or calls"
            )
        if self.steps % _CHECK_EVERY == 0:
            self.check_time()

    def check_time(self) -> None:
        took = time.process_time() - self.started
        if took > MAX_TEMPLATE_SECONDS:
            raise TemplateBudgetError(
                f"the template takes longer than {MAX_TEMPLATE_SECONDS:g} seconds to render"
            )
        if self.suite.used + took > self.suite.seconds:
            raise TemplateBudgetError(
                f"the suite's templates take longer than {self.suite.seconds:g} seconds "
                "to render in all"
            )


_current: ContextVar[RenderBudget | None] = ContextVar("evalspec_template_budget", default=None)


@contextmanager
def rendering(suite: SuiteBudget) -> Iterator[RenderBudget]:
    """Make a fresh budget current while one template renders; charge its time to the suite."""
    budget = RenderBudget(suite)
    budget.check_time()  # the suite's time may be spent already
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)
        suite.used += time.process_time() - budget.started


def step() -> None:
    """Count one loop iteration or call against the current rendering (none: no limit)."""
    budget = _current.get()
    if budget is not None:
        budget.step()


def check_size(value: object) -> object:
    """`value` itself, if it is not a text, list or integer over the limits."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_TEMPLATE_INT_BITS:
            raise TemplateBudgetError(
                f"the template computes a number larger than {MAX_TEMPLATE_INT_BITS} bits"
            )
    elif isinstance(value, str | list | tuple | dict | bytes) and len(value) > MAX_TEMPLATE_TEXT:
        raise TemplateBudgetError(
            f"the template builds a value longer than {MAX_TEMPLATE_TEXT} characters or items"
        )
    return value
