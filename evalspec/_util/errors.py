"""Errors a user can act on: file, line, column, where in the document, what, how to fix."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a suite, pinned to a place in a file."""

    file: str
    line: int
    column: int
    path: str
    """Where in the document, e.g. ``cases[2].expect.tool_calls[0]``; empty for the whole file."""
    message: str
    hint: str = ""
    shape_ok: bool = field(default=False, compare=False, repr=False)
    """The value is of the right type, only not written the expected way (a pattern): the
    document's shape is sound, so the rest of the suite can still be checked."""

    @classmethod
    def at(cls, pos: Any, path: str, message: str, hint: str = "") -> Problem:
        """A problem at a position (anything with file, line and column)."""
        return cls(pos.file, pos.line, pos.column, path, message, hint)

    def __str__(self) -> str:
        return self.describe()

    def describe(self, kind: str = "") -> str:
        """`file:line:col: [kind: ]where: what; how to fix`."""
        label = f"{kind}: " if kind else ""
        where = f"{self.path}: " if self.path else ""
        hint = f"; {self.hint}" if self.hint else ""
        return f"{self.file}:{self.line}:{self.column}: {label}{where}{self.message}{hint}"


class EvalspecError(Exception):
    """Base class of every error evalspec reports without a traceback.

    An error about an argument names the function's parameter as a Python caller writes it,
    `name=` then the value (``gate='strict': choose one of ...``), and lists the names in
    `params`: the command line shows its own option there instead (``--gate 'strict'``), and
    maps each kind of error to its exit code (evalspec._cli.flags)."""

    def __init__(self, *args: object, params: Sequence[str] = ()) -> None:
        super().__init__(*args)
        self.params = tuple(params)
        """The parameters the message names, each written `name=` in it."""


class SpecError(EvalspecError):
    """A suite (or a file it includes) is invalid; carries every problem found."""

    def __init__(self, problems: list[Problem], *, params: Sequence[str] = ()):
        self.problems = sorted(problems, key=lambda p: (p.file, p.line, p.column, p.message))
        super().__init__("\n".join(str(p) for p in self.problems), params=params)


class UsageError(EvalspecError):
    """The command line asks for something that cannot be done."""


class RunError(EvalspecError):
    """The run could not proceed: endpoint unreachable, API key missing, recording missing."""


class InputError(SpecError):
    """A file evalspec was asked to read is not what it should be: not a regular file, too
    large, not UTF-8, not JSON, nested too deeply, or holding NaN. Same exit code and format as
    a suite mistake, since the fix is the same kind: change the file or the path."""


class RunInterrupted(EvalspecError):
    """The run was interrupted (Ctrl-C); what finished is saved in its run directory."""

    def __init__(self, done: int, total: int, run_dir: Path):
        self.done, self.total, self.run_dir = done, total, run_dir
        super().__init__(f"interrupted: {done} of {total} items finished and saved in {run_dir}")


class RecordingsMissing(RunError):
    """Requests without a recorded answer, in a mode that may not call the model.

    Nothing is scored and no results.json is written: a score without those items would be a
    score of another selection."""

    def __init__(self, labels: Sequence[str], record: str):
        self.labels = tuple(labels)
        super().__init__(
            f"{len(self.labels)} request(s) have no recorded answer and record={record} may "
            "not call the model; run with record=auto and an API key",
            params=["record"],
        )
