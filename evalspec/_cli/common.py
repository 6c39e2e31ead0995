"""What every command shares: the error wrapper, options declared once, and result output.

A command never shows a traceback for evalspec's own errors: `reports_errors` turns them into
`file:line:col: ...` lines and a documented exit code.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer

from evalspec._util.errors import EvalspecError, SpecError, UsageError

if TYPE_CHECKING:
    from evalspec._report.records import Report
    from evalspec._suite.model import Suite
    from evalspec._transcript import Transcript

P = ParamSpec("P")
R = TypeVar("R")

SuiteArg = Annotated[Path, typer.Argument(help="Suite file.", show_default=False, metavar="SUITE")]
CaseOpt = Annotated[list[str] | None, typer.Option("--case", help="Case name pattern or tag.")]
ModelOpt = Annotated[list[str] | None, typer.Option("--model", help="Model name.")]
TrialsOpt = Annotated[int | None, typer.Option(min=1, help="Trials per case.")]
ShardOpt = Annotated[str | None, typer.Option(help="Only shard i of n, as i/n.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print results as JSON.")]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show every row, and log retries and cache use.")
]
JunitOpt = Annotated[Path | None, typer.Option(help="Also write JUnit XML here.")]
MarkdownOpt = Annotated[Path | None, typer.Option(help="Also write a Markdown report here.")]
HtmlOpt = Annotated[Path | None, typer.Option(help="Also write an HTML report here.")]


@dataclass(frozen=True)
class ReportOptions:
    """How a command shows and writes its results: the options every scoring command takes."""

    as_json: bool = False
    verbose: bool = False
    junit: Path | None = None
    markdown: Path | None = None
    html: Path | None = None


def print_error(text: str) -> None:
    """One message on stderr; control characters from the data in it are shown, not sent."""
    from evalspec._util.terminal import plain

    sys.stderr.write(plain(text).rstrip("\n") + "\n")


def reports_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Run a command; evalspec errors become messages and exit codes, never tracebacks."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except SpecError as exc:
            for p in exc.problems:
                print_error(str(p))
            n = len(exc.problems)
            print_error(f"{n} problem{'s' if n != 1 else ''} found")
            raise typer.Exit(2) from None
        except EvalspecError as exc:
            print_error(f"error: {exc}")
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            print_error("interrupted")
            raise typer.Exit(130) from None
        except OSError as exc:  # a full disk, a read-only directory: a message, not a traceback
            where = f" {exc.filename}" if exc.filename else ""
            print_error(f"error: cannot write or read{where}: {exc.strerror or exc}")
            raise typer.Exit(3) from None

    return wrapper


def _blocking_ancestor(path: Path) -> Path | None:
    """The nearest existing ancestor of `path` when it is not a directory (nothing fits inside)."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def check_output_file(path: Path | None, option: str) -> None:
    """Refuse, before any work, a file option that cannot be written as a regular file."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(
            f"{option} {path} is a directory; name a file to write (in it or elsewhere)"
        )
    if path.exists() and not path.is_file():
        raise UsageError(f"{option} {path} is not a regular file; name a file to write")
    blocking = _blocking_ancestor(path)
    if blocking is not None:
        raise UsageError(f"{option} {path}: {blocking} is a file, so nothing can be written in it")


def check_output_dir(path: Path | None, option: str) -> None:
    """Refuse, before any work, a directory option that names an existing file."""
    if path is None:
        return
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path} is a file, not a directory; name a directory")
    blocking = _blocking_ancestor(path)
    if blocking is not None:
        raise UsageError(f"{option} {path}: {blocking} is a file, so nothing can be written in it")


def check_report_files(options: ReportOptions) -> None:
    """Every report file asked for can be written (checked before a run spends anything)."""
    check_output_file(options.junit, "--junit")
    check_output_file(options.markdown, "--markdown")
    check_output_file(options.html, "--html")


class _InertFormatter(logging.Formatter):
    """Log lines quote servers and models: their control characters are shown, not sent."""

    def format(self, record: logging.LogRecord) -> str:
        from evalspec._util.terminal import plain

        return plain(super().format(record))


def configure_logging(verbose: bool) -> None:
    """`-v` shows evalspec's log: retries with their reason and wait, cache use, skipped input."""
    if not verbose:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_InertFormatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("evalspec")
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def expand_globs(patterns: list[str]) -> list[Path]:
    """Files named by patterns; a pattern that matches nothing is a usage error."""
    from evalspec._util.globbing import TooManyMatches, expand, has_magic

    files: list[Path] = []
    for pattern in patterns:
        try:
            matches = expand(pattern) if has_magic(pattern) else []
        except TooManyMatches as exc:
            raise UsageError(f"{exc}; name fewer files") from None
        if has_magic(pattern) and not matches:
            raise UsageError(f"no file matches {pattern!r}")
        files.extend(Path(m) for m in matches) if matches else files.append(Path(pattern))
    return files


def show(report: Report, options: ReportOptions) -> None:
    """Results on stdout: JSON for tools, or the console tables for people."""
    if options.as_json:
        sys.stdout.write(
            json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"
        )
        return
    from evalspec._report.console import print_report

    print_report(report, verbose=options.verbose)


def write_and_show(report: Report, options: ReportOptions, results: Path | None) -> None:
    """Write results.json and every report file asked for, then print the results."""
    from evalspec._report.files import ReportFiles, write_reports

    write_reports(
        report,
        ReportFiles(
            results=results, junit=options.junit, markdown=options.markdown, html=options.html
        ),
    )
    show(report, options)


def finish_run(
    suite: Suite,
    transcripts: list[Transcript],
    run_dir: Path,
    options: ReportOptions,
    *,
    started: float | None = None,
    note: str = "",
    calls: Any = None,
) -> int:
    """Score a run's transcripts, write its results and reports, print; the exit code.

    `calls` (the run's ModelCalls) lets an LLM judge ask on a cache miss; without it the judge
    only reads its cache."""
    from evalspec.api import score

    report = score(suite, transcripts, calls=calls)
    return finish_report(report, run_dir, options, started=started, note=note)


def finish_report(
    report: Report,
    run_dir: Path,
    options: ReportOptions,
    *,
    started: float | None = None,
    note: str = "",
) -> int:
    """Write a scored run's results and reports, print them; the exit code."""
    import time

    write_and_show(report, options, run_dir / "results.json")
    if not options.as_json:
        took = f" in {time.perf_counter() - started:.2f}s" if started is not None else ""
        n = len(report.results)
        sys.stdout.write(
            f"{n} {'item' if n == 1 else 'items'} (case × model × trial){took}"
            + (f" {note}" if note else "")
            + f" · results: {run_dir / 'results.json'}\n"
        )
    return report.exit_code
