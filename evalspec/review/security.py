"""Where keys go is part of the review: endpoint and key changes between two suite versions.

A pull request that points a judge at its own server with `api_key_env: CI_DEPLOY_TOKEN` would
receive that secret the first time CI runs the head suite. Listing every such change first, and
exiting with its own code, lets CI stop before anything runs the head suite with secrets.
"""

from __future__ import annotations

from evalspec.suite.endpoints import Endpoint, endpoints, sends_key_in_clear
from evalspec.suite.model import Suite


def _where(e: Endpoint) -> str:
    clear = (
        " (plain http to another host: the key travels unencrypted)"
        if (sends_key_in_clear(e.base_url))
        else ""
    )
    return e.describe() + clear


def security_changes(
    base: Suite | None, head: Suite, known: frozenset[tuple[object, ...]] = frozenset()
) -> list[str]:
    """One line per endpoint, key variable or header that differs; empty when none does.

    A suite new in this change lists every endpoint it would call, except those `known` (the
    `Endpoint.settings()` other suites of the base already use): each is a new place keys go.
    """
    after = endpoints(head)
    if base is None:
        return [
            f"new suite: {name} sends to {_where(e)}"
            for name, e in after.items()
            if e.settings() not in known
        ]
    before = endpoints(base)
    out: list[str] = []
    for name in list(after) + [n for n in before if n not in after]:
        b, a = before.get(name), after.get(name)
        if a is None:
            continue  # an endpoint that is gone sends nothing
        if b is None:
            out.append(f"{name} (new) sends to {_where(a)}")
        elif b.settings() != a.settings():
            out.append(f"{name}: {b.describe()} -> {_where(a)}")
    return out
