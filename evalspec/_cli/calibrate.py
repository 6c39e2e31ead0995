"""`evalspec calibrate`: the judge against people, from the labels they gave recorded answers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalspec._cli.common import (
    JsonOpt,
    SuiteArg,
    VerboseOpt,
    configure_logging,
    print_error,
    reports_errors,
)

if TYPE_CHECKING:
    from evalspec.records import Calibration


@reports_errors
def calibrate(
    suite: SuiteArg,
    transcripts: Annotated[
        list[Path],
        typer.Option(
            "--transcripts",
            "-t",
            help="transcripts.jsonl or a run holding the labelled answers; give -t again for more.",
        ),
    ],
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels",
            "-l",
            help="The people's verdicts: a JSON Lines labels file (default: the suite's "
            "labels:, else <suite>.labels.jsonl beside it).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap interval.")] = 0,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """How often the suite's LLM judge agrees with people, per judge check.

    Compares the judge's cached verdicts (never asking it: `evalspec judge` fills the cache)
    with the verdicts in the labels file, answer by answer. Per labeller: the share of answers
    where judge and labeller agree, Cohen's kappa (agreement beyond chance) with a 95 %
    percentile bootstrap interval over answers, and the confusion matrix (judge's verdicts in
    rows, the labeller's in columns); with several labellers, Krippendorff's alpha among them
    and with the judge as one more rater.

    Exit codes: 0 every label compared; 2 invalid suite or labels file (file:line:col); 3 some
    labelled answer has no cached verdict (run `evalspec judge` first), or nothing compared.

    Example:

      evalspec calibrate suites/helpdesk.yaml --labels suites/helpdesk.labels.jsonl -t RUN

      evalspec calibrate suites/helpdesk.yaml -t RUN    (the suite's own labels)
    """
    configure_logging(verbose)
    from evalspec.api import calibrate as calibrate_judge

    result = calibrate_judge(suite, labels, transcripts, seed=seed)
    if as_json:
        _print_json(result)
    else:
        _print_text(result)
    _print_some("skipped label", result.unmatched)
    _print_some("error: no judge verdict", result.unjudged)
    if not result.judges:
        print_error("error: no labelled answer has a judge verdict to compare")
    raise typer.Exit(result.exit_code)


SHOWN = 20
"""Lines of one kind printed before `and N more` (a labels file may hold thousands)."""


def _print_some(prefix: str, lines: tuple[str, ...]) -> None:
    for line in lines[:SHOWN]:
        print_error(f"{prefix}: {line}")
    if len(lines) > SHOWN:
        print_error(f"{prefix}: and {len(lines) - SHOWN} more (--json lists every one)")


def _interval(value: Any) -> str:
    """An estimate with its interval (an Interval record), or why there is none."""
    if value is None:
        return "undefined (one verdict throughout)"
    return f"{value.estimate:.3f} ({value.confidence:.0%} CI {value.low:.3f} to {value.high:.3f})"


def _print_text(result: Calibration) -> None:
    from evalspec._util.terminal import plain

    for judge in result.judges:
        print(plain(f"{judge.check}: {judge.answers} labelled answers"))
        for each in judge.labellers:
            a = each.agreement
            print(
                plain(
                    f"  judge vs {each.labeller}: agreement {a.agreement:.3f} over {a.items}, "
                    f"Cohen's kappa {_interval(a.kappa)}"
                )
            )
            for line in _matrix(a, each.labeller):
                print(plain("    " + line))
        if judge.people_alpha is not None or judge.alpha is not None:
            print(plain(f"  Krippendorff's alpha, people: {_interval(judge.people_alpha)}"))
            print(plain(f"  Krippendorff's alpha, people and judge: {_interval(judge.alpha)}"))
        if judge.labellers and judge.labellers[0].agreement.kappa is not None:
            print(plain(f"  interval: {judge.labellers[0].agreement.kappa.method}"))


def _matrix(a: Any, labeller: str) -> list[str]:
    """The confusion matrix: the judge's verdicts down, the labeller's across."""
    width = max(len(x) for x in (*a.labels, "judge")) + 2
    head = "judge \\ " + labeller
    lines = [head.ljust(width + 8) + "".join(x.rjust(width) for x in a.labels)]
    for label, row in zip(a.labels, a.confusion, strict=True):
        lines.append(label.ljust(width + 8) + "".join(str(n).rjust(width) for n in row))
    return lines


def _print_json(result: Calibration) -> None:
    import msgspec

    from evalspec._util import finite

    data = msgspec.to_builtins(result)  # the dataclasses and their Interval structs alike
    sys.stdout.write(finite.dumps(data, "the --json output", indent=2, ensure_ascii=False) + "\n")
