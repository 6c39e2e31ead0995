"""How every HTTP client that carries a secret is made: no redirect, no proxy for loopback.

The clients' defaults leak. `openai`, `anthropic` and the MCP SDK follow redirects, and httpx
drops only `Authorization` when one leaves the origin: Anthropic's `x-api-key` and a suite's own
`${VAR}` headers go along to whatever host a 307 names. And with `HTTP_PROXY` set, a request to a
loopback endpoint (where plain http is allowed because it never leaves the machine) goes in
clear to the proxy, key included. So: redirects are never followed (a 3xx is an error that says
where it pointed), loopback endpoints ignore the proxy settings of the environment, and a
secret never goes over plain http to another host.
"""

from __future__ import annotations

import os
import ssl
import sys
from collections.abc import Mapping
from functools import lru_cache
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from evalspec._suite.endpoints import is_loopback, sends_key_in_clear
from evalspec._util.errors import RunError


def client_options(url: str | None, http: ModuleType) -> dict[str, Any]:
    """Keyword arguments for a client of `http` (httpx or httpx2) sending secrets to `url`."""
    trust_env = not is_loopback(url)
    return {
        "follow_redirects": False,
        "trust_env": trust_env,
        "verify": ssl_context(http, trust_env),
    }


def ssl_context(http: ModuleType, trust_env: bool) -> ssl.SSLContext:
    """The TLS settings `http` would make for a client, made once per process (again when
    SSL_CERT_FILE or SSL_CERT_DIR change): httpx makes them anew for every client, reading the
    whole certificate store, 25-55 ms of CPU each, and a run makes a client per model, judge and
    simulated user. Shared safely: no client here asks for HTTP/2, so every connection sets the
    same ALPN protocols on it."""
    env = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    return _ssl_context(http.__name__, trust_env, env)


@lru_cache(maxsize=8)
def _ssl_context(http: str, trust_env: bool, env: tuple[str | None, str | None]) -> ssl.SSLContext:
    context: ssl.SSLContext = sys.modules[http].create_ssl_context(trust_env=trust_env)
    return context


MAX_CONNECTIONS = 1000
"""As the SDKs' own clients allow: a run's concurrency is bounded elsewhere."""


def sdk_http_client(sdk_default: type, url: str | None) -> Any:
    """An HTTP client for an SDK (`openai`, `anthropic`) made from the httpx class its
    `DefaultAsyncHttpxClient` extends, not from that class: anthropic's mounts the
    environment's proxies whatever `trust_env` says."""
    base = next(
        c
        for c in sdk_default.__mro__
        if c.__name__ == "AsyncClient" and c.__module__.split(".")[0] in ("httpx", "httpx2")
    )
    http = sys.modules[base.__module__.split(".")[0]]
    limits = http.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=100)
    return base(limits=limits, **client_options(url, http))


def refuse_clear_text(url: str | None, secrets: list[str], where: str) -> None:
    """RunError when secrets would travel over plain http to another host."""
    if any(secrets) and sends_key_in_clear(url):
        host = urlsplit(url or "").hostname
        raise RunError(
            f"{where}: refusing to send its key or `${{VAR}}` headers over plain http to {host}, "
            "where anyone on the way can read them; use an https:// URL, or a loopback address "
            "(localhost, 127.0.0.1) for a local server"
        )


def redirect_message(status: int, headers: Mapping[str, str], where: str) -> str:
    """Why a redirect stops here, and what to do instead."""
    target = headers.get("location") or "(no Location)"
    parts = urlsplit(target)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    shown = f"{parts.scheme}://{host}{parts.path}" if host else parts.path
    return (
        f"{where} answered HTTP {status}, a redirect to {shown[:200]}; evalspec follows no "
        "redirect, since it would carry the key and headers there: set base_url to the "
        "address that answers"
    )
