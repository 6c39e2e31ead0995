"""Size limits, set by trust: a person's own suites are bounded by their machine; a pull
request's (in `review` and `diff --base-ref`) by limits sized for a CI job.

Whoever runs evalspec may change a limit through the environment; a suite cannot. Own suites
of 10^6 cases validate and run with no setting; review refuses a suite of more than 10,000 cases
or a plan of more than 100,000 requests, and stops after REVIEW_SECONDS (exit 2, never a hang).

Sizes are bounded in total as well as per item: what a suite's templates render, what a
conversation's tools answer, what a review's replays hold and what a run's transcripts file
holds (a conversation's state is bounded in state/spec.py, in values and in characters).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from evalspec._util.errors import SpecError, UsageError

_untrusted = False
"""True while review reads a pull request (both its head and its base)."""


@contextmanager
def untrusted() -> Iterator[None]:
    """Apply the review limits to everything loaded and planned inside this block."""
    global _untrusted
    before, _untrusted = _untrusted, True
    try:
        yield
    finally:
        _untrusted = before


def by_trust(name: str, own: int, review: int) -> int:
    """The limit in environment variable `name`, else `own` or (while untrusted) `review`."""
    return env_limit(name, review if _untrusted else own)


OWN_MAX_CASES = 1_000_000
REVIEW_MAX_CASES = 10_000
MAX_CASES_ENV = "EVALSPEC_MAX_CASES"
OWN_MAX_PLAN_ITEMS = 1_000_000
REVIEW_MAX_PLAN_ITEMS = 100_000
MAX_PLAN_ITEMS_ENV = "EVALSPEC_MAX_PLAN_ITEMS"
OWN_MAX_TOOLS = 10_000
REVIEW_MAX_TOOLS = 1_000
MAX_TOOLS_ENV = "EVALSPEC_MAX_TOOLS"
REVIEW_SECONDS = 600
"""A review's whole budget: loading, replaying and scoring every suite, base and head."""
REVIEW_SECONDS_ENV = "EVALSPEC_REVIEW_SECONDS"


OWN_MAX_RENDERED_CHARS = 256_000_000
REVIEW_MAX_RENDERED_CHARS = 32_000_000
MAX_RENDERED_CHARS_ENV = "EVALSPEC_MAX_RENDERED_CHARS"
MAX_TOOL_OUTPUT_CHARS = 2_000_000
"""Characters every tool output of one conversation may add up to (about half a million tokens,
more than most models' context holds); a conversation that passes it stops, as one with too many
calls."""
MAX_TOOL_OUTPUT_CHARS_ENV = "EVALSPEC_MAX_TOOL_OUTPUT_CHARS"
REVIEW_MAX_REPLAY_CHARS = 100_000_000
"""Characters of model answers, tool outputs and states the replays of one suite's base and head
may hold in review (a tool's output counts twice: the call's output and the message the model
read)."""
MAX_REPLAY_CHARS_ENV = "EVALSPEC_MAX_REPLAY_CHARS"
MAX_TRANSCRIPTS_BYTES = 1024 * 1024 * 1024
"""The largest transcripts.jsonl: a run stops before writing past it, and `score`, `diff` and a
resumed run read no larger one (one constant, so a run never writes what they refuse)."""
MAX_TRANSCRIPTS_BYTES_ENV = "EVALSPEC_MAX_TRANSCRIPTS_BYTES"


def max_rendered_chars() -> int:
    """Characters all the templates of one suite may render together (a matrix renders each
    template once a row)."""
    return by_trust(MAX_RENDERED_CHARS_ENV, OWN_MAX_RENDERED_CHARS, REVIEW_MAX_RENDERED_CHARS)


def max_tool_output_chars() -> int:
    """Characters of tool output one conversation may receive, all its calls together."""
    return env_limit(MAX_TOOL_OUTPUT_CHARS_ENV, MAX_TOOL_OUTPUT_CHARS)


def max_replay_chars() -> int:
    """Characters of model answers, tool outputs and states one suite's replays may hold in
    review."""
    return env_limit(MAX_REPLAY_CHARS_ENV, REVIEW_MAX_REPLAY_CHARS)


def max_transcripts_bytes() -> int:
    """Bytes a transcripts file may hold, for the run that writes it and every reader."""
    return env_limit(MAX_TRANSCRIPTS_BYTES_ENV, MAX_TRANSCRIPTS_BYTES)


def max_cases() -> int:
    """Cases a suite may hold after matrix expansion."""
    return by_trust(MAX_CASES_ENV, OWN_MAX_CASES, REVIEW_MAX_CASES)


def max_plan_items() -> int:
    """Requests one plan may hold (cases x models x trials), counted before any is built."""
    return by_trust(MAX_PLAN_ITEMS_ENV, OWN_MAX_PLAN_ITEMS, REVIEW_MAX_PLAN_ITEMS)


def max_tools() -> int:
    """Tools one suite may define."""
    return by_trust(MAX_TOOLS_ENV, OWN_MAX_TOOLS, REVIEW_MAX_TOOLS)


class SuiteTooLarge(SpecError):
    """A suite over a limit: reported at once, never read a second way."""


class ReviewTimeUp(UsageError):
    """The review used its whole time budget."""


class _TimeUp(BaseException):
    """Raised by the timer wherever the review is: a BaseException, so no `except Exception`
    on the way (a runner that turns a failure into a case's error) can swallow it."""


@contextmanager
def review_budget(what: str, params: Sequence[str] = ()) -> Iterator[None]:
    """Stop the block with ReviewTimeUp (exit 2) once REVIEW_SECONDS have passed.

    A timer, not checks sprinkled through loading and scoring: whatever stage a hostile pull
    request makes slow, the review ends with a message. A timer signal where one is free (the
    main thread, the caller using none: it also cuts a blocking system call short); else a
    timer thread raises the time-up in the reviewing thread itself, whatever SIGINT is set to
    (a review in a worker thread is bounded too)."""
    seconds = env_seconds(REVIEW_SECONDS_ENV, REVIEW_SECONDS)
    time_up = ReviewTimeUp(
        f"{what} stopped after its time budget of {seconds:g} s; a pull request may not "
        f"make review take longer (whoever runs it may raise {REVIEW_SECONDS_ENV})",
        params=params,
    )

    class ThisTimeUp(_TimeUp):
        """This budget's own: a budget nested inside turns only its own into its message."""

    timer = _alarm if _alarm_free() else _timer_thread
    try:
        with timer(seconds, ThisTimeUp):
            yield
    except ThisTimeUp:
        raise time_up from None


@contextmanager
def _alarm(seconds: float, time_up: type[_TimeUp]) -> Iterator[None]:
    """Raise `time_up` from a SIGALRM handler after `seconds`; the caller's disposition of
    SIGALRM is put back after (a time-up raised while putting it back is still the budget's:
    review_budget's `except` is outside this block)."""

    def alarm(signum: int, frame: object) -> None:
        raise time_up

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, previous)


def _alarm_free() -> bool:
    """SIGALRM exists, this is the main thread (the only one a signal handler runs in), and the
    caller has no real-time timer running nor a SIGALRM handler of its own (a test runner's
    time-out, an application's watchdog): the review must neither replace nor cancel those."""
    import threading

    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        return False
    handler = signal.getsignal(signal.SIGALRM)
    own = handler is not signal.SIG_DFL and handler is not signal.SIG_IGN
    return not own and signal.getitimer(signal.ITIMER_REAL)[0] == 0


@contextmanager
def _timer_thread(seconds: float, time_up: type[_TimeUp]) -> Iterator[None]:
    """After `seconds`, a timer thread raises `time_up` in this thread as an asynchronous
    exception. Not `_thread.interrupt_main()`: that calls the caller's SIGINT
    handler, so it did nothing where SIGINT is ignored (`nohup`, `cmd &` in a script) or
    handled without raising, and the review ran unbounded. Once the block is left no time-up
    can arrive: one set but not yet raised is taken back."""
    import threading

    target = threading.get_ident()
    lock = threading.Lock()
    state = {"open": True, "fired": False}

    def fire() -> None:
        with lock:
            if state["open"]:
                state["fired"] = True
                _async_raise(target, time_up)

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            state["open"] = False
            if state["fired"]:
                _async_raise(target, None)


def _async_raise(thread_id: int, exc: type[BaseException] | None) -> None:
    """Have thread `thread_id` raise `exc` at its next bytecode (None: forget one pending)."""
    import ctypes

    value = None if exc is None else ctypes.py_object(exc)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), value)


def env_seconds(name: str, default: float) -> float:
    """The positive number of seconds in environment variable `name`, or `default`."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def env_limit(name: str, default: int) -> int:
    """The positive integer in environment variable `name`, or `default` (also when unreadable)."""
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


MAX_CALLS_PER_CASE = 100
"""Most tool calls one case may expect, and most one model answer may make in one case.

Pairing expected with actual calls scores every pair (n x m), then solves an assignment; at
100 x 100 that is 10,000 pair scores and well under a second, where 2,000 x 2,000 took two
minutes and 2.9 GB. Real tool-calling cases expect a handful of calls (BFCL's largest: 10)."""
