"""Keep secrets out of everything evalspec writes or prints.

Every secret evalspec sends is registered here once, when the request that carries it is built
(an API key, a header value taken from the environment, the user:password part of a URL and its
Basic encoding). Every writer then scrubs what it writes: transcripts, recordings, caches,
results and reports, and the CLI's stdout and stderr. A server that echoes a key back, in an
error or in a 200 answer, cannot get it onto disk or a terminal.

The registry belongs to the call that registers: `secret_scope()` (opened by `run_plan`, report
building and every CLI command) holds it in a context variable, and a call returns leaving the
caller's registry as it found it. Scopes nest by joining: a run inside a CLI command registers
into the command's scope, so what the command prints after the run is scrubbed too. A thread
started without the scope's context (a plain thread pool) scrubs with every open scope's secrets:
more is hidden, never less.
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TextIO
from urllib.parse import unquote, urlsplit

MIN_SECRET_LENGTH = 4
"""Shorter values are not treated as secrets: replacing them would garble ordinary text."""

MASK = "***"


class _Secrets:
    """Registered secret forms, longest first (so no secret is half-replaced)."""

    def __init__(self, forms: tuple[str, ...] = ()) -> None:
        self.forms = forms
        self._lock = threading.Lock()

    def add(self, new: set[str]) -> None:
        if not new - set(self.forms):
            return
        with self._lock:
            self.forms = tuple(sorted(set(self.forms) | new, key=len, reverse=True))


_root = _Secrets()
"""Secrets registered outside any scope (a provider built by hand): kept for the process."""
_current: ContextVar[_Secrets | None] = ContextVar("evalspec_secrets", default=None)
_open: list[_Secrets] = []
_open_lock = threading.Lock()


@contextmanager
def secret_scope() -> Iterator[None]:
    """Secrets registered inside the block are scrubbed inside it and forgotten after it;
    inside an open scope, the block joins it. Secrets registered before are scrubbed too."""
    if _current.get() is not None:
        yield
        return
    scope = _Secrets(_root.forms)
    token = _current.set(scope)
    with _open_lock:
        _open.append(scope)
    try:
        yield
    finally:
        with _open_lock:
            _open.remove(scope)
        _current.reset(token)


def _targets() -> list[_Secrets]:
    scope = _current.get()
    if scope is not None:
        return [scope]
    with _open_lock:
        return list(_open) or [_root]


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
    """Treat these values (and their encoded forms) as secrets in everything written from now
    (until the current scope ends)."""
    register_forms(form for v in values if v for form in secret_forms(v))


def register_forms(forms: Iterable[str]) -> None:
    """Register already-derived forms (from `url_secrets`) as they are."""
    new = {f for f in forms if len(f) >= MIN_SECRET_LENGTH}
    if new:
        for target in _targets():
            target.add(new)


def registered() -> tuple[str, ...]:
    """The secret forms scrubbed here and now, longest first."""
    scope = _current.get()
    if scope is not None:
        return scope.forms
    with _open_lock:
        if not _open:
            return _root.forms
        merged = {f for s in (_root, *_open) for f in s.forms}
    return tuple(sorted(merged, key=len, reverse=True))


def scrub(text: str) -> str:
    """`text` with every registered secret replaced by `***`."""
    for secret in registered():
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub_value(value: Any) -> Any:
    """A JSON-like value with every registered secret removed from its strings (keys too)."""
    if not registered():
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

    def __init__(self, inner: TextIO) -> None:
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
