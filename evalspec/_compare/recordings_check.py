"""A pull request's recordings file, named and checked: its `request`s against their keys.

Replay reads only a line's key: the `request` beside it is there for people reading the diff.
A pull request could rewrite every request (other messages, other tools, a chain made a cycle)
while keeping the answers, and replay would not notice. So review names every recordings file
that differs from the base's (answers added, removed, changed) and hashes the request of every
line the pull request added or changed, and of every line whose chain (`after`) passes through
one, the way `evalspec._plan.request_key` does: a line whose request does not give its key, or
whose chain is broken or loops, is a finding (review exits 3, whatever --allow-stale says).

A request is verified with the trial its label names (0 without one) and either provider; a
line whose request had a secret scrubbed (`***`) cannot be verified and is reported too:
re-record it.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from evalspec._plan import ID_VERSION, _encode
from evalspec._providers.recordings import RecordedAnswer, _parse_line
from evalspec._util.files import pread

SHOWN = 10
"""Findings listed per file; the rest are counted."""

_TRIAL = re.compile(r"\(trial (\d{1,4}), trials 0-\d+\)$")
_PROVIDERS = ("openai", "anthropic")


@dataclass(frozen=True)
class RecordingsChange:
    """A recordings file that differs from the base's: answers by key, and false requests."""

    path: str
    added: int
    removed: int
    changed: int
    findings: tuple[str, ...] = ()
    """The first `SHOWN` lines whose request does not give their key, in words."""
    unverified: int = 0
    """How many such lines there are in all."""

    def text(self) -> str:
        counts = f"{self.added} added, {self.removed} removed, {self.changed} changed"
        if not self.unverified:
            return f"recorded answers: {counts}"
        return (
            f"recorded answers: {counts}; {self.unverified} recorded request"
            f"{'s do' if self.unverified != 1 else ' does'} not match the key of the answer "
            "beside it: the request shown is not the one that was answered (re-record it)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
            "unverified": self.unverified,
            "findings": list(self.findings),
        }


@dataclass
class _Line:
    number: int
    offset: int
    length: int
    digest: bytes


def _index(path: Path) -> dict[str, _Line]:
    """Each key's last line in a recordings file (key -> where it is and its digest)."""
    out: dict[str, _Line] = {}
    if not path.is_file():
        return out
    offset = 0
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            raw = line.rstrip(b"\r\n")
            parsed = _parse_line(raw) if raw.strip() else None
            if isinstance(parsed, RecordedAnswer):
                out[parsed.key] = _Line(number, offset, len(raw), hashlib.sha256(raw).digest())
            offset += len(line)
    return out


def recordings_change(base: Path | None, head: Path, rel: str) -> RecordingsChange | None:
    """How the head's recordings file differs from the base's (None: the same bytes)."""
    if _same_bytes(base, head):
        return None
    before = _index(base) if base is not None else {}
    after = _index(head)
    added = sum(1 for k in after if k not in before)
    removed = sum(1 for k in before if k not in after)
    changed = sum(1 for k, v in after.items() if k in before and before[k].digest != v.digest)
    touched = {k for k, v in after.items() if k not in before or before[k].digest != v.digest}
    findings = _Verifier(head, after).check(touched) if touched else []
    return RecordingsChange(rel, added, removed, changed, tuple(findings[:SHOWN]), len(findings))


def _same_bytes(base: Path | None, head: Path) -> bool:
    if base is None or not base.is_file():
        return not head.is_file()
    if not head.is_file():
        return False
    if base.stat().st_size != head.stat().st_size:
        return False
    return _digest(base) == _digest(head)


def _digest(path: Path) -> bytes:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.digest()


@dataclass
class _Prefix:
    """A request's messages hashed so far (`{"messages":[m1,...,mk`), for its continuations."""

    state: Any
    count: int
    tools: str
    dirty: bool


class _Verifier:
    """Hashes each line's request (its chain's messages first) against its key."""

    def __init__(self, path: Path, lines: dict[str, _Line]) -> None:
        self.path, self.lines = path, lines
        self.done: dict[str, _Prefix | str] = {}
        """Per key: its request's prefix, or why it has none (a finding)."""

    def check(self, touched: set[str]) -> list[str]:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            self.fd = fd
            out = []
            for key in self.lines:
                why = self._verify(key, touched)
                if why:
                    line = self.lines[key]
                    out.append(f"line {line.number} (key {key[:20]}): {why}")
            return out
        finally:
            os.close(fd)

    def _read(self, key: str) -> RecordedAnswer | None:
        line = self.lines[key]
        parsed = _parse_line(pread(self.fd, line.length, line.offset))
        return parsed if isinstance(parsed, RecordedAnswer) else None

    def _verify(self, key: str, touched: set[str]) -> str:
        prefix = self._prefix(key, touched)
        if isinstance(prefix, str):
            return prefix if self._touches(key, touched) else ""
        if not prefix.dirty:
            return ""
        answer = self._read(key)
        if answer is None or answer.request is None:
            return ""
        trial = _TRIAL.search(answer.label)
        for provider in _PROVIDERS:
            if _key(prefix, answer, provider, int(trial.group(1)) if trial else 0) == key:
                return ""
        return "its recorded request does not hash to its key"

    def _touches(self, key: str, touched: set[str]) -> bool:
        """Whether a line whose chain is broken was added or changed, or continues one that was."""
        seen: set[str] = set()
        while key in self.lines and key not in seen:
            if key in touched:
                return True
            seen.add(key)
            answer = self._read(key)
            after = answer.request.after if answer and answer.request else msgspec.UNSET
            if not isinstance(after, str):
                return False
            key = after
        return False

    def _prefix(self, key: str, touched: set[str]) -> _Prefix | str:
        """The hashed messages of `key`'s request, its chain's first; or why there are none."""
        chain: list[tuple[str, RecordedAnswer]] = []
        on_chain: set[str] = set()
        current: str | msgspec.UnsetType = key
        parent: _Prefix | None = None
        while isinstance(current, str):
            known = self.done.get(current)
            if known is not None:
                if isinstance(known, str):
                    return self._fail(chain, "its chain (`after`) continues a line that is broken")
                parent = known
                break
            if current in on_chain:
                return self._fail(chain, "its chain (`after`) loops back on itself")
            if current not in self.lines:
                return self._fail(chain, f"its `after` names {current[:20]!r}, no line of the file")
            answer = self._read(current)
            if answer is None or answer.request is None:
                return self._fail(chain, "its `after` names a line holding no request")
            on_chain.add(current)
            chain.append((current, answer))
            current = answer.request.after
        for name, answer in reversed(chain):
            parent = _extend(parent, answer, name in touched)
            self.done[name] = parent
        assert parent is not None
        return parent

    def _fail(self, chain: list[tuple[str, RecordedAnswer]], why: str) -> str:
        for name, _ in chain:
            self.done[name] = why
        return why


def _extend(parent: _Prefix | None, answer: RecordedAnswer, touched: bool) -> _Prefix:
    request = answer.request
    assert request is not None
    if parent is None:
        state, count = hashlib.sha256(b'{"messages":['), 0
        tools = "[]"
    else:
        state, count, tools = parent.state.copy(), parent.count, parent.tools
    for message in request.messages:
        text = _encode(message)
        state.update((b"," if count else b"") + text.encode("utf-8", "surrogatepass"))
        count += 1
    if not isinstance(request.tools, msgspec.UnsetType):
        tools = _encode(request.tools)
    return _Prefix(state, count, tools, touched or (parent is not None and parent.dirty))


def _key(prefix: _Prefix, answer: RecordedAnswer, provider: str, trial: int) -> str:
    """`evalspec._plan.request_key` of the line's request with this provider and trial."""
    assert answer.request is not None
    middle = f'],"model":{_encode(answer.model)},"params":{_encode(answer.request.params)}'
    if provider != "openai":
        middle += f',"provider":{_encode(provider)}'
    tail = f',"tools":{prefix.tools},"trial":{trial},"v":{_encode(ID_VERSION)}}}'
    state = prefix.state.copy()
    state.update((middle + tail).encode("utf-8", "surrogatepass"))
    return str(state.hexdigest()[:20])
