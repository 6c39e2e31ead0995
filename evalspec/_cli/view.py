"""`evalspec view`: the HTML report of one or more runs, opened in the browser."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalspec._cli.common import reports_errors


def default_output(first: Path, several: bool) -> Path:
    """Beside the first run's results: report.html for one run, compare.html for several."""
    folder = first if first.is_dir() else first.parent
    return folder / ("compare.html" if several else "report.html")


@reports_errors
def view(
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="Run directories (or results.json files), side by side in this order.",
            show_default=False,
            metavar="RUN_DIR...",
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Where to write the page (default: report.html in the run)."
        ),
    ] = None,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open the page in the browser.")
    ] = True,
) -> None:
    """Write the HTML report of one or more runs and open it in the browser.

    One run shows its models side by side; several runs put every (run, model) in a column,
    paired by case. The page is one file that works offline: filter by status, model and tag,
    search, sort by score or change, and open a case to read the conversation.

    Examples:

      evalspec view runs/slack/20261121-101500

      evalspec view runs/slack/20261120-090000 runs/slack/20261121-101500 -o slack.html
    """
    import webbrowser

    from evalspec.api import write_runs_page

    target = write_runs_page(runs, out or default_output(runs[0], len(runs) > 1))
    typer.echo(f"report: {target}")
    if open_browser and not webbrowser.open(target.resolve().as_uri()):
        typer.echo("no browser found: open the file above in one")
