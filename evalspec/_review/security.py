"""What review must stop for: every place a suite sends a secret or starts a process.

A pull request that points a judge at its own server with `api_key_env: CI_DEPLOY_TOKEN`, changes
an MCP server's `command` to `sh -c "curl ...|sh"`, sends `${CI_DEPLOY_TOKEN}` as a header to
another host, or names an embedding model directory it ships (loading one can import its Python
code) is harmless in review, which calls and loads none of it, and dangerous the first time CI
runs the head suite. Listing every such change first, and exiting with its own code, lets CI stop
before anything runs the head suite with secrets.

Each place is a `Surface`: what uses it, how a reviewer reads it, and the settings compared.
"""

from __future__ import annotations

import hashlib
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path

from evalspec._suite.endpoints import ENV_REF, DeclaredEndpoint, endpoints, sends_key_in_clear
from evalspec._suite.model import McpServer, Suite

MAX_DIGESTED_BYTES = 16 * 1024 * 1024
"""A command argument naming a larger file is compared by size, not content."""


@dataclass(frozen=True)
class Surface:
    """One place a secret or a process can go."""

    where: str
    """What uses it: `model gpt-4o`, `MCP server of tool add`, `embedding model`."""
    text: str
    """How a reviewer reads it; never a secret's value."""
    settings: tuple[object, ...]
    """What decides where secrets go or what runs: compared between versions."""
    verb: str = "sends to"
    """Between `where` and `text` when the surface is new."""

    def new_text(self) -> str:
        return " ".join(part for part in (self.where, "(new)", self.verb, self.text) if part)


def _where(e: DeclaredEndpoint) -> str:
    clear = (
        " (plain http to another host: the key travels unencrypted)"
        if (sends_key_in_clear(e.base_url))
        else ""
    )
    return e.describe() + clear


def _endpoint_surfaces(suite: Suite) -> list[Surface]:
    return [Surface(name, _where(e), e.settings()) for name, e in endpoints(suite).items()]


def _file_digest(path: Path) -> str | None:
    """What a command runs when an argument is a file (`server.py`): its content's digest.

    None for no regular file; an empty one (as /proc's are) is not read, nor a huge one.
    """
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size == 0 or info.st_size > MAX_DIGESTED_BYTES:
            return f"{info.st_size} bytes"
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (OSError, ValueError):
        return None


def _command_files(server: McpServer) -> tuple[tuple[str, str], ...]:
    """(argument, digest) for each relative argument naming a file from the server's folder:
    a pull request that edits `server.py` changes what `python server.py` runs."""
    out = []
    for arg in server.command:
        if not arg or arg.startswith("-") or Path(arg).is_absolute():
            continue
        digest = _file_digest(Path(server.cwd) / arg)
        if digest is not None:
            out.append((arg, digest))
    return tuple(out)


def _server_text(server: McpServer) -> str:
    if server.command:
        what = f"runs `{shlex.join(server.command)}`"
    else:
        what = f"connects to {server.url}"
        if sends_key_in_clear(server.url) and server.headers:
            what += " (plain http to another host: headers travel unencrypted)"
    if server.headers:
        shown = []
        for name in sorted(server.headers):
            refs = ENV_REF.findall(server.headers[name])
            shown.append(name + (f" from {', '.join('$' + r for r in refs)}" if refs else ""))
        what += f" with headers {', '.join(shown)}"
    if server.execute:
        what += "; executes the model's calls in live runs"
    return what


def _mcp_surfaces(suite: Suite) -> list[Surface]:
    """One per MCP server, named after its first tool so a changed command pairs with the old."""
    servers: dict[tuple[object, ...], tuple[McpServer, list[str]]] = {}
    for t in suite.tools:
        if t.mcp is not None:
            server = t.mcp
            settings = (
                "mcp",
                server.command,
                server.url,
                tuple(sorted(server.headers.items())),
                server.execute,
            )
            servers.setdefault(settings, (server, []))[1].append(t.name)
    return [
        Surface(
            f"MCP server of tool {min(names)}",
            _server_text(server),
            (*settings, _command_files(server)),
            "",
        )
        for settings, (server, names) in servers.items()
    ]


def _embedding_surface(suite: Suite) -> list[Surface]:
    e = suite.embeddings
    if e.model is None and e.cache_dir is None:
        return []  # the bundled model: nothing a suite chose
    text = f"embedding model {e.model or 'the bundled default'}" + (
        f", cache {e.cache_dir}" if e.cache_dir else ""
    )
    return [Surface("embeddings", text, ("embeddings", e.model, e.cache_dir), "")]


def surfaces(suite: Suite) -> dict[str, Surface]:
    """Every place of the suite that receives a secret or decides what runs, by what uses it."""
    found = _endpoint_surfaces(suite) + _mcp_surfaces(suite) + _embedding_surface(suite)
    return {s.where: s for s in found}


def known_settings(suites: list[Suite]) -> frozenset[tuple[object, ...]]:
    """The settings these (base) suites already use: a new suite may reuse them silently."""
    return frozenset(s.settings for suite in suites for s in surfaces(suite).values())


def security_changes(
    base: Suite | None, head: Suite, known: frozenset[tuple[object, ...]] = frozenset()
) -> list[str]:
    """One line per surface that differs; empty when none does.

    A suite new in this change lists every surface it has, except those `known` (settings other
    suites of the base already use): each is a new place keys go or a new process that runs.
    """
    after = surfaces(head)
    if base is None:
        return [
            "new suite: " + s.new_text().replace(" (new)", "", 1)
            for s in after.values()
            if s.settings not in known
        ]
    before = surfaces(base)
    out: list[str] = []
    for name, a in after.items():
        b = before.get(name)
        if b is None:
            out.append(a.new_text() + _note(None, a))
        elif b.settings != a.settings:
            out.append(f"{name}: {b.text} -> {a.text}{_note(b, a)}")
    return out


def _note(b: Surface | None, a: Surface) -> str:
    """What a change that reads the same in text did (a command's file was edited), or why an
    embedding model is here."""
    if b is not None and b.text == a.text and a.settings[:1] == ("mcp",):
        return " (a file its command runs was changed)"
    if a.settings[:1] == ("embeddings",):
        return " (review scored with the base's model; loading a model directory can run its code)"
    return ""
