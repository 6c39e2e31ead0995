"""`evalspec tools ...`: the suite's tool definitions taken from MCP servers."""

from __future__ import annotations

import typer

from evalspec._cli.common import SuiteArg, reports_errors

tools_app = typer.Typer(
    help="Tool definitions from MCP servers: list them into the suite's lock file.",
    no_args_is_help=True,
)


@tools_app.command("refresh")
@reports_errors
def refresh(suite: SuiteArg) -> None:
    """List the tools of every MCP server the suite names, into SUITE's .tools.lock.json.

    This starts the servers (or connects to their urls); validate, plan, offline runs and review
    never do, they read the lock file. Commit it: a changed definition then shows in the diff.

    Examples:

      evalspec tools refresh suites/calc.yaml
    """
    from evalspec.api import refresh_tools

    outcome = refresh_tools(suite)
    if not outcome.servers:
        typer.echo(f"{suite} takes no tools from MCP servers; nothing to refresh")
        return
    for key, names in outcome.servers.items():
        typer.echo(f"{key}: {len(names)} tool{'s' if len(names) != 1 else ''}")
    changed = ", ".join(outcome.changed) if outcome.changed else "no changes"
    typer.echo(f"wrote {outcome.lock_file} ({changed})")
