"""Where a suite sends API keys: every endpoint it can call, with the variable its key comes from.

A suite decides which host receives which environment variable. Review compares these lists
between two versions (a changed endpoint is a security-relevant change), and `run` refuses to
send a key in clear text over the network.
"""

from __future__ import annotations

import ipaddress
import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from evalspec._language.defaults import DEFAULT_API_KEY_ENV
from evalspec._suite.model import LLMSimulation, ModelSpec, Suite, UserCheck
from evalspec._suite.walk import Path, callers
from evalspec._suite.walk import where as walk_where
from evalspec._util.errors import UsageError

DEFAULT_ENDPOINT = "the provider's default (OPENAI_BASE_URL or OpenAI)"
DEFAULT_ENDPOINTS = {
    "openai": DEFAULT_ENDPOINT,
    "anthropic": "the provider's default (ANTHROPIC_BASE_URL or Anthropic)",
}
ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""`${NAME}` in a header value: filled from the environment when sending."""


@dataclass(frozen=True)
class DeclaredEndpoint:
    """One place the suite sends requests (and so a key): what calls it, and where to."""

    where: str
    """What calls it: `model gpt-4o`, `judge of case 'x'`, `simulator of tool y`."""
    base_url: str | None
    """None: the client's default endpoint."""
    api_key_env: str
    header_names: tuple[str, ...] = ()
    """Names of extra headers sent with every request (values are not shown: they may be keys)."""
    header_values: tuple[str, ...] = ()
    provider: str = "openai"
    """Wire protocol; with no base_url it also decides the host (OpenAI's or Anthropic's)."""

    def describe(self) -> str:
        url = self.base_url or DEFAULT_ENDPOINTS.get(self.provider, DEFAULT_ENDPOINT)
        via = f" ({self.provider} protocol)" if self.base_url and self.provider != "openai" else ""
        headers = f", headers {', '.join(self.header_names)}" if self.header_names else ""
        return f"{url}{via} with the key in ${self.api_key_env}{headers}"

    def settings(self) -> tuple[object, ...]:
        """What decides where the key goes: compared between versions."""
        return (
            self.base_url,
            self.api_key_env,
            self.header_names,
            self.header_values,
            self.provider,
        )

    def secret_variables(self) -> list[str]:
        """The environment variables this endpoint sends: its key's and its headers' `${VAR}`."""
        return [self.api_key_env] + [v for h in self.header_values for v in ENV_REF.findall(h)]


def endpoints(suite: Suite) -> dict[str, DeclaredEndpoint]:
    """Every endpoint of the suite, by what uses it: models, LLM tool simulators, judges and
    any check, evaluator or critic given a `base_url` or `api_key_env`, wherever the suite
    nests them (a case, a turn, a conversation's evaluators): found by one walk of the whole
    suite, the same that finds every judge the scorer runs."""
    if _LAST and _LAST[0][0]() is suite:  # a run asks twice: to refuse keys in clear, to scrub
        return dict(_LAST[0][1])
    out: dict[str, DeclaredEndpoint] = {}
    for path, record in callers(suite):
        found = _endpoint_of(record, path)
        label, n = found.where, 2
        while label in out:  # two of one name (equal case names): both listed
            label, n = f"{found.where} ({n})", n + 1
        out[label] = replace(found, where=label)
    # Models first: what a reader checks first, and what every case sends to.
    ordered = dict(sorted(out.items(), key=lambda item: not item[0].startswith("model ")))
    _LAST[:] = [(weakref.ref(suite), ordered)]
    return dict(ordered)


_LAST: list[tuple[weakref.ref[Suite], dict[str, DeclaredEndpoint]]] = []
"""The last suite asked about (by identity, not kept alive) and its endpoints."""


def _endpoint_of(record: object, path: Path) -> DeclaredEndpoint:
    """The endpoint of a record `callers` found, named by where it sits."""
    if isinstance(record, ModelSpec):
        names = tuple(sorted(record.headers))
        values = tuple(str(record.headers[n]) for n in names)
        where = f"model {record.name}"
        return DeclaredEndpoint(
            where, record.base_url, record.api_key_env, names, values, record.provider
        )
    if isinstance(record, LLMSimulation):
        return DeclaredEndpoint(
            f"simulator of {walk_where(path)}", record.base_url, record.api_key_env
        )
    if isinstance(record, UserCheck):
        settings = dict(record.judge)
        return DeclaredEndpoint(
            f"judge of {walk_where(path[:-1])}",
            settings.get("base_url") or None,
            settings.get("api_key_env") or DEFAULT_API_KEY_ENV,
        )
    params: dict[str, object] = getattr(record, "params", {})
    kind = getattr(record, "kind", None)
    base_url, key_env = params.get("base_url"), params.get("api_key_env")
    what = "judge" if kind == "judge" else path[-1]
    return DeclaredEndpoint(
        f"{what} of {walk_where(path[:-1])}",
        str(base_url) if base_url else None,
        str(key_env) if key_env else DEFAULT_API_KEY_ENV,
    )


def is_loopback(base_url: str | None) -> bool:
    """True for http(s)://localhost, 127.x.x.x and [::1] endpoints: requests that stay here."""
    if not base_url:
        return False
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def sends_key_in_clear(base_url: str | None) -> bool:
    """A plain-http URL to a host off this machine: a key sent there can be read on the way."""
    if not base_url:
        return False
    return urlsplit(base_url).scheme.lower() == "http" and not is_loopback(base_url)


def _clear_text_problem(
    where: str, url: str | None, variables: list[str], environ: Mapping[str, str]
) -> str | None:
    """Why sending these set variables to `url` is refused (plain http off this machine)."""
    if not sends_key_in_clear(url):
        return None
    sent = [v for v in dict.fromkeys(variables) if environ.get(v, "").strip()]
    if not sent:
        return None
    host = urlsplit(url or "").hostname
    what = ", ".join(f"${v}" for v in sent)
    return (
        f"{where}: refusing to send the secret in {what} over plain http to {host}, where "
        "anyone on the way can read it; use an https:// URL, or a loopback address "
        "(localhost, 127.0.0.1) for a local server"
    )


def refuse_keys_in_clear(suite: Suite, environ: Mapping[str, str]) -> None:
    """UsageError when a run would send a secret that is set over plain http to another host:
    a model's, judge's or simulator's key or `${VAR}` header, or an MCP server's header."""
    checks = [(e.where, e.base_url, e.secret_variables()) for e in endpoints(suite).values()]
    checks += [
        (
            f"MCP server {t.mcp.url}",
            t.mcp.url,
            [v for h in t.mcp.headers.values() for v in ENV_REF.findall(h)],
        )
        for t in suite.tools
        if t.mcp is not None and t.mcp.url
    ]
    for where, url, variables in checks:
        problem = _clear_text_problem(where, url, variables, environ)
        if problem:
            raise UsageError(problem)
