"""`evalspec tools ...`: the suite's tool definitions taken from MCP servers."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from evalspec._cli.common import JsonOpt, SuiteArg, reports_errors

if TYPE_CHECKING:
    from evalspec.records import RefreshOutcome

tools_app = typer.Typer(
    help="Tool definitions from MCP servers: list them into the suite's lock file.",
    no_args_is_help=True,
)

EXIT_DRIFT = 1
"""`--check`: a server's tool list differs from the lock (0: it does not)."""


@tools_app.command("refresh")
@reports_errors
def refresh(
    suite: SuiteArg,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Only compare the servers' tools with the lock file; exit 1 if they differ.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """List the tools of every MCP server the suite names, into SUITE's .tools.lock.json.

    This starts the servers (or connects to their urls); validate, plan, offline runs and review
    never do, they read the lock file. Commit it: a changed definition then shows in the diff.

    With --check the lock file is left as it is: what differs is printed (tools added, removed,
    renamed, descriptions, input schemas by JSON pointer). Exit codes: 0 no server changed,
    1 a server's tools differ from the lock, 2 invalid suite, 3 a server could not be reached.

    Examples:

      evalspec tools refresh suites/calc.yaml

      evalspec tools refresh --check suites/calc.yaml
    """
    from evalspec._util.terminal import plain  # rich: loaded by the commands that print
    from evalspec.api import refresh_tools

    outcome = refresh_tools(suite, check=check)
    if as_json:
        typer.echo(json.dumps(_as_dict(outcome), indent=2, ensure_ascii=True))
    elif not outcome.servers:
        typer.echo(f"{suite} takes no tools from MCP servers; nothing to refresh")
    elif check:
        _say_drift(outcome)
    else:
        for key, names in outcome.servers.items():
            typer.echo(f"{plain(key, single_line=True)}: {_tools(len(names))}")
        changed = ", ".join(outcome.changed) if outcome.changed else "no changes"
        typer.echo(plain(f"wrote {outcome.lock_file} ({changed})", single_line=True))
    if check and outcome.drift:
        raise typer.Exit(EXIT_DRIFT)


def _tools(n: int) -> str:
    return f"{n} tool{'s' if n != 1 else ''}"


def _say_drift(outcome: RefreshOutcome) -> None:
    """Each server, unchanged or with every difference; the lock file is named, not written."""
    from evalspec._util.terminal import plain

    drifted = {d.server: d for d in outcome.drift}
    for key, names in outcome.servers.items():
        found = drifted.pop(key, None)
        state = "unchanged" if found is None else f"changed: {found.counts()}"
        typer.echo(plain(f"{key}: {_tools(len(names))}, {state}", single_line=True))
        for line in found.lines() if found is not None else []:
            typer.echo("    " + plain(line, single_line=True))
    for found in drifted.values():  # in the lock, no longer named by the suite
        typer.echo(plain(f"{found.server}: no longer a server of the suite", single_line=True))
    verdict = "differs from the servers" if outcome.drift else "matches the servers"
    typer.echo(plain(f"{outcome.lock_file} {verdict} (not written)", single_line=True))


def _as_dict(outcome: RefreshOutcome) -> dict[str, object]:
    return {
        "lock_file": outcome.lock_file.as_posix(),
        "written": outcome.written,
        "servers": outcome.servers,
        "drift": [d.to_dict() for d in outcome.drift],
    }
