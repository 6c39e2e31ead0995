"""Transcript lines of a stateful conversation, without encoding the same records again.

A multi-turn transcript holds the state after every user turn and at the end; with a suite's
state of 100 records that is six copies of the records per line, and encoding them was a
quarter of a five-turn replay. The declared environment never changes a state in place (an
effect copies only the containers on its path), so a top-level collection a call left alone is
the same object in every later snapshot, and in every conversation that shares it: its JSON
text is made once and reused. The line is the same text `dumps_line` writes.
"""

from __future__ import annotations

import json
from typing import Any

from evalspec._util.files import escape_surrogates

_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)
"""`dumps_line`'s encoder: the texts joined here are the ones it writes for the same values."""

MAX_ENTRIES = 1024
MAX_CHARS = 16 << 20
"""What the texts kept may hold at once (each entry keeps its value alive); oldest go first."""


class StateLines:
    """`dumps_line` for transcripts whose states are never changed in place once made."""

    def __init__(self) -> None:
        self._texts: dict[int, tuple[Any, str]] = {}
        """By identity: the value (kept, so its id is not reused) and its JSON text."""
        self._chars = 0

    def line(self, data: dict[str, Any]) -> str:
        """The JSON line of `Transcript.to_dict()`, states' collections encoded once each."""
        parts = []
        for key in sorted(data):
            value = data[key]
            if key == "state":
                text = self.state(value)
            elif key == "user_turns" and type(value) is list:
                text = "[" + ", ".join(self._turn(turn) for turn in value) + "]"
            else:
                text = _ENCODER.encode(value)
            parts.append(f"{_ENCODER.encode(key)}: {text}")
        return escape_surrogates("{" + ", ".join(parts) + "}")

    def _turn(self, turn: Any) -> str:
        if type(turn) is not dict or "state" not in turn:
            return _ENCODER.encode(turn)
        return self._mapping(turn, {"state"})

    def state(self, value: Any) -> str:
        """A state's JSON text; its top-level lists and mappings looked up by identity."""
        if type(value) is not dict or not value:
            return _ENCODER.encode(value)
        return self._mapping(value, None)

    def _mapping(self, value: dict[Any, Any], states: set[str] | None) -> str:
        """A mapping as the encoder writes it (sorted keys); `states` names the keys holding a
        state, None: every value is a collection to look up."""
        if not all(type(k) is str for k in value):
            return _ENCODER.encode(value)  # keys the encoder converts: leave it to it
        parts = []
        for key in sorted(value):
            item = value[key]
            if states is not None:
                text = self.state(item) if key in states else _ENCODER.encode(item)
            else:
                text = self._shared(item)
            parts.append(f"{_ENCODER.encode(key)}: {text}")
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
            _, dropped = self._texts.pop(next(iter(self._texts)))
            self._chars -= len(dropped)
        if len(text) <= MAX_CHARS:
            self._texts[id(value)] = (value, text)
            self._chars += len(text)
        return text
