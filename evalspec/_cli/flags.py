"""Where the command line and the Python API differ in words: parameters and exit codes.

The library names a parameter as a Python caller writes it (``gate='strict': choose one of
...``, the error's `params` listing `gate`); the command shows its own option there instead
(``--gate 'strict': ...``). These two tables are the only place that knows both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from evalspec._util.errors import EvalspecError, RunError, RunInterrupted

FLAGS: dict[str, str] = {
    "base_ref": "--base-ref",
    "cases": "--case",
    "full_markdown": "--full-markdown",
    "gate": "--gate",
    "html": "--html",
    "judge": "--judge",
    "judge_base_url": "--judge-base-url",
    "judge_key_env": "--judge-key-env",
    "judge_rounds": "--judge-rounds",
    "junit": "--junit",
    "kind": "--kind",
    "labels": "--labels",
    "markdown": "--markdown",
    "model": "--model",
    "names": "--names",
    "out": "--out",
    "ray": "--ray",
    "record": "--record",
    "redact": "--redact",
    "recordings": "--recordings",
    "results": "--out",
    "resume": "--resume",
    "shard": "--shard",
    "suite": "--suite",
    "suite_out": "--suite-out",
    "tools": "--tools",
    "transcripts": "--transcripts",
    "trials": "--trials",
}
"""Each API parameter an error may name, and the option of the command that sets it."""

EXIT_CODES: dict[type[BaseException], int] = {
    RunInterrupted: 130,
    KeyboardInterrupt: 130,
    RunError: 3,
    EvalspecError: 2,
    MemoryError: 2,
    OSError: 3,
}
"""The exit code of each kind of error a command reports, most specific first: 2 the input
(`SpecError`, `UsageError`, an input too large to hold), 3 the run or the machine (`RunError`,
a full disk), 130 interrupted. A result's own code (0 pass, 1 fail, review's 3 and 4) is the
result's."""

_FOLLOWS_VALUE = re.compile(r"[^\s,;:)`.]|\.\S")
"""What starts a value after `name=` (not a space or the punctuation that ends a phrase)."""


def exit_code(exc: BaseException) -> int:
    """The command's exit code for an error it reports."""
    return next(code for kind, code in EXIT_CODES.items() if isinstance(exc, kind))


def flag_text(text: str, params: Sequence[str]) -> str:
    """An error's text with each parameter it names (`params`) said as the command's option."""
    for param in params:
        flag = FLAGS.get(param)
        if flag is not None:
            text = re.sub(rf"(?<![\w.]){re.escape(param)}=(?=(.?.?))", _as_flag(flag), text)
    return text


def _as_flag(flag: str) -> Callable[[re.Match[str]], str]:
    """`name=value` becomes `--flag value`, and `name=` alone `--flag`."""

    def replace(match: re.Match[str]) -> str:
        return flag + (" " if _FOLLOWS_VALUE.match(match.group(1)) else "")

    return replace
