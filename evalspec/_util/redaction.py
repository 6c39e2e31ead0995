"""Keep secrets out of everything evalspec writes or prints.

Every secret evalspec sends is registered here once, when the request that carries it is built
(an API key, a header value taken from the environment, the user:password part of a URL and its
Basic encoding). Every writer then scrubs what it writes: transcripts, recordings, caches,
results and reports, and the CLI's stdout and stderr. A server that echoes a key back, in an
error or in a 200 answer, cannot get it onto disk or a terminal.
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Iterable, Sequence
from typing import IO, Any
from urllib.parse import unquote, urlsplit

MIN_SECRET_LENGTH = 4
"""Shorter values are not treated as secrets: replacing them would garble ordinary text."""

MASK = "***"

_lock = threading.Lock()
_registered: tuple[str, ...] = ()
"""Every registered secret form, longest first (so no secret is half-replaced)."""


def secrets_from_env(variables: Iterable[str]) -> list[str]:
    """The values of these environment variables, longest first (so no secret is half-replaced)."""
    values = {os.environ.get(name, "").strip() for name in variables}
    return sorted((v for v in values if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True)


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret replaced by `***`."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


def secret_forms(value: str) -> list[str]:
    """The ways a secret can show up in text: as it is, and base64-encoded (Basic auth)."""
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH:
        return []
    encoded = base64.b64encode(value.encode("utf-8")).decode("ascii")
    return [value, encoded, encoded.rstrip("=")]


def url_secrets(url: str | None) -> list[str]:
    """The user:password part of a URL in every form it is sent or echoed in."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return []
    forms: list[str] = []
    if password:
        for pw in {password, unquote(password)}:
            forms += secret_forms(pw)
        for user, pw in {(username or "", password), (unquote(username or ""), unquote(password))}:
            forms += secret_forms(f"{user}:{pw}")
    elif username:
        forms += secret_forms(username)
        forms += secret_forms(unquote(username))
    return forms


def register(*values: str | None) -> None:
    """Treat these values (and their encoded forms) as secrets in everything written from now."""
    global _registered
    forms = {form for v in values if v for form in secret_forms(v)}
    if not forms - set(_registered):
        return
    with _lock:
        merged = set(_registered) | forms
        _registered = tuple(sorted(merged, key=len, reverse=True))


def register_forms(forms: Iterable[str]) -> None:
    """Register already-derived forms (from `url_secrets`) as they are."""
    global _registered
    new = {f for f in forms if len(f) >= MIN_SECRET_LENGTH}
    if not new - set(_registered):
        return
    with _lock:
        _registered = tuple(sorted(set(_registered) | new, key=len, reverse=True))


def registered() -> tuple[str, ...]:
    return _registered


def forget_all() -> None:
    """Drop every registered secret (tests run many suites in one process)."""
    global _registered
    with _lock:
        _registered = ()


def scrub(text: str) -> str:
    """`text` with every registered secret replaced by `***`."""
    for secret in _registered:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub_value(value: Any) -> Any:
    """A JSON-like value with every registered secret removed from its strings (keys too)."""
    if not _registered:
        return value
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub_value(k): scrub_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub_value(v) for v in value)
    return value


class ScrubbingStream:
    """A text stream that scrubs registered secrets from everything written to it."""

    def __init__(self, inner: IO[str]) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        text = scrub(text)
        try:
            self._inner.write(text)
        except UnicodeEncodeError:  # a lone surrogate, or a character the terminal lacks
            encoding = getattr(self._inner, "encoding", None) or "utf-8"
            self._inner.write(text.encode(encoding, "backslashreplace").decode(encoding))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
