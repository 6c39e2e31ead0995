"""What every command shares: the error wrapper, options declared once, and result output.

A command never shows a traceback for evalspec's own errors: `reports_errors` turns them into
`file:line:col: ...` lines and a documented exit code.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer
from typer.core import TyperCommand

from evalspec._cli.flags import exit_code, flag_text
from evalspec._util.collector import collector_paused
from evalspec._util.errors import EvalspecError, SpecError
from evalspec._util.outputs import check_output_dir, check_output_file

__all__ = ["check_output_dir", "check_output_file"]  # re-exported for the command modules

if TYPE_CHECKING:
    from evalspec.records import Report, ReportFiles

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
LabelsOpt = Annotated[
    Path | None,
    typer.Option(
        help="The people's verdicts the report's judge calibration reads (a JSON Lines labels "
        "file), in place of the suite's labels: or <suite>.labels.jsonl beside it."
    ),
]


@dataclass(frozen=True)
class ReportOptions:
    """How a command shows and writes its results: the options every scoring command takes."""

    as_json: bool = False
    verbose: bool = False
    junit: Path | None = None
    markdown: Path | None = None
    html: Path | None = None

    def files(self, results: Path | None = None) -> ReportFiles:
        """The report files these options ask for (and results.json at `results`)."""
        from evalspec.records import ReportFiles

        return ReportFiles(
            results=results, junit=self.junit, markdown=self.markdown, html=self.html
        )


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
                print_error(flag_text(str(p), exc.params))
            n = len(exc.problems)
            print_error(f"{n} problem{'s' if n != 1 else ''} found")
            raise typer.Exit(exit_code(exc)) from None
        except EvalspecError as exc:
            print_error(f"error: {flag_text(str(exc), exc.params)}")
            raise typer.Exit(exit_code(exc)) from None
        except KeyboardInterrupt as exc:
            print_error("interrupted")
            raise typer.Exit(exit_code(exc)) from None
        except MemoryError as exc:  # behind the size limits: never a traceback, never 1
            print_error(
                "error: out of memory: the input is larger than this machine can hold; "
                "split it, or run on a machine with more memory"
            )
            raise typer.Exit(exit_code(exc)) from None
        except OSError as exc:  # a full disk, a read-only directory: a message, not a traceback
            where = f" {exc.filename}" if exc.filename else ""
            print_error(f"error: cannot write or read{where}: {exc.strerror or exc}")
            raise typer.Exit(exit_code(exc)) from None

    return wrapper


def check_report_files(options: ReportOptions) -> None:
    """Every report file asked for can be written (checked before a command spends anything)."""
    check_output_file(options.junit, "junit")
    check_output_file(options.markdown, "markdown")
    check_output_file(options.html, "html")


class _InertFormatter(logging.Formatter):
    """Log lines quote servers and models: their control characters are shown, not sent."""

    def format(self, record: logging.LogRecord) -> str:
        from evalspec._util.terminal import plain

        return plain(super().format(record))


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is when a line is logged: a command run in-process (a
    test's runner, a notebook) replaces and closes its stderr, and a handler that kept the old
    one printed "Logging error" into the next command's output."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def configure_logging(verbose: bool) -> None:
    """`-v` shows evalspec's log: retries with their reason and wait, cache use, skipped input.

    One handler at most, whichever commands ran before in this process."""
    root = logging.getLogger("evalspec")
    for old in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(old)
    if not verbose:
        return
    handler = _StderrHandler()
    handler.setFormatter(_InertFormatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def show(report: Report, options: ReportOptions) -> None:
    """Results on stdout: JSON for tools, or the console tables for people."""
    # Printing results makes many small objects and no cycles, while every result is alive:
    # collections would rescan them all (a replay of the Slack suite spent ~8% more CPU).
    with collector_paused():
        if options.as_json:
            from evalspec._util.json_values import dumps_indented

            sys.stdout.write(dumps_indented(report.to_dict()) + "\n")
            return
        from evalspec._report.console import print_report

        print_report(report, verbose=options.verbose)


def print_run(
    report: Report,
    run_dir: Path,
    options: ReportOptions,
    *,
    seconds: float | None = None,
    note: str = "",
) -> int:
    """Print a scored run (its files are written) and the line that says where it is; the
    exit code."""
    show(report, options)
    if not options.as_json:
        took = f" in {seconds:.2f}s" if seconds is not None else ""
        n = len(report.results)
        sys.stdout.write(
            f"{n} {'item' if n == 1 else 'items'} (case × model × trial){took}"
            + (f" {note}" if note else "")
            + f" · results: {run_dir / 'results.json'}\n"
        )
    return report.exit_code


class OneValueEach(TyperCommand):
    """A command that refuses an option given twice when it takes one value: the parser keeps
    the last one silently, so `judge SUITE -t a.jsonl -t b.jsonl` judged b only, exit 0."""

    def make_parser(self, ctx: Any) -> Any:
        parser = super().make_parser(ctx)
        parse = parser.parse_args

        def checked(args: list[str]) -> Any:
            opts, rest, order = parse(args=args)
            refuse_repeats(ctx, order)
            return opts, rest, order

        setattr(parser, "parse_args", checked)  # noqa: B010 - the parser's own hook
        return parser


def refuse_repeats(ctx: typer.Context, order: list[Any]) -> None:
    """BadParameter (exit 2, the option named) for a one-value option given more than once."""
    seen = Counter(order)
    for param, times in seen.items():
        single = param.param_type_name == "option" and not param.is_eager
        if single and times > 1 and not (param.multiple or getattr(param, "count", False)):
            raise typer.BadParameter(
                f"given {times} times, but it takes one value (only the last would count): "
                "give it once",
                ctx=ctx,
                param=param,
            )


def one_value_each(app: typer.Typer) -> None:
    """Every command of `app` and of its groups refuses a one-value option given twice."""
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = OneValueEach
    for group in app.registered_groups:
        if group.typer_instance is not None:
            one_value_each(group.typer_instance)
