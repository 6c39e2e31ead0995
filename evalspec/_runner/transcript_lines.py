"""Transcript lines of stateful suites, without encoding the same records again.

Every transcript of a stateful suite holds the state its conversation ended in; with a suite's
state of 100 records, most of each line is records no call touched. The declared environment
never changes a state in place (an effect copies only the containers on its path), so a
top-level collection a call left alone is the same object in every conversation that shares
it: its JSON text is made once and reused. The line is the same text `dumps_line` writes.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from evalspec._util import finite
from evalspec._util.files import escape_surrogates

_ENCODER = finite.encoder(ensure_ascii=False, sort_keys=True, default=str)
"""`dumps_line`'s encoder: the texts joined here are the ones it writes for the same values."""

MAX_ENTRIES = 1024
MAX_CHARS = 16 << 20
"""What the texts kept may hold at once (each entry keeps its value alive); oldest go first."""


class StateLines:
    """`dumps_line` for transcripts whose states are never changed in place once made."""

    def __init__(self) -> None:
        self._texts: OrderedDict[int, tuple[Any, str]] = OrderedDict()  # oldest out first
        """By identity: the value (kept, so its id is not reused) and its JSON text."""
        self._chars = 0

    def line(self, data: dict[str, Any], what: str = "a JSON line") -> str:
        """The JSON line of `Transcript.to_dict()`, states' collections encoded once each;
        a non-finite number is a NotFiniteError, as `dumps_line` makes it."""
        with finite.writing(what, data):
            return self._line(data)

    def _line(self, data: dict[str, Any]) -> str:
        parts = []
        for key in sorted(data):
            value = data[key]
            text = self.state(value) if key == "state" else _ENCODER.encode(value)
            parts.append(f"{_ENCODER.encode(key)}: {text}")
        return escape_surrogates("{" + ", ".join(parts) + "}")

    def state(self, value: Any) -> str:
        """A state's JSON text; its top-level lists and mappings looked up by identity."""
        if type(value) is not dict or not value:
            return _ENCODER.encode(value)
        if not all(type(k) is str for k in value):
            return _ENCODER.encode(value)  # keys the encoder converts: leave it to it
        parts = [f"{_ENCODER.encode(key)}: {self._shared(value[key])}" for key in sorted(value)]
        return "{" + ", ".join(parts) + "}"

    def _shared(self, value: Any) -> str:
        if type(value) is not list and type(value) is not dict:
            return _ENCODER.encode(value)
        known = self._texts.get(id(value))
        if known is not None:
            if known[0] is value:
                return known[1]
            del self._texts[id(value)]  # a value since freed, its id now another's
            self._chars -= len(known[1])
        text = _ENCODER.encode(value)
        while self._texts and (
            len(self._texts) >= MAX_ENTRIES or self._chars + len(text) > MAX_CHARS
        ):
            _, (_, dropped) = self._texts.popitem(last=False)
            self._chars -= len(dropped)
        if len(text) <= MAX_CHARS:
            self._texts[id(value)] = (value, text)
            self._chars += len(text)
        return text
