"""Personal data taken out of imported traces before anything is written (`--redact`).

Each rule names what to replace in every text of a conversation (what the user said, the
model's answers, call arguments, tool outputs): a kind evalspec knows (`email`, `phone`,
`ip`, `card`) or `regex:PATTERN` (Python syntax). A match becomes `[redacted:KIND]`
(`[redacted]` for a pattern of yours), the same text in the suite and in the transcripts, so
an expected argument still matches the call it came from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalspec._util.errors import UsageError

_AT = "[@\uff20\ufe6b]"
_DOT = "[.\u3002\uff0e\uff61]"
"""`@` and the dots that separate a domain's labels (IDNA reads `。` and `．` as dots), as they
may be written: an address with a full-width `＠` or a non-ASCII name is still an address."""

KINDS: dict[str, str] = {
    # The address starts where its run of name characters starts (the look-behind): trying
    # each position inside a long run would make one word of a million letters take hours.
    "email": rf"(?<![\w.%+-])[\w.%+-]+{_AT}[\w-]+(?:{_DOT}[\w-]+)*{_DOT}[^\W\d_]{{2,}}",
    "phone": r"(?<![\w.])\+?\d(?:[\s().-]?\d){7,14}(?![\w.])",
    "ip": r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])",
    "card": r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)",
}
"""What each named rule replaces (phone: 8 to 15 digits, separators allowed)."""


@dataclass(frozen=True)
class Redactor:
    """The rules of one import, applied to every string of a value."""

    rules: tuple[tuple[re.Pattern[str], str], ...] = ()

    def text(self, value: str) -> str:
        for pattern, mark in self.rules:
            value = pattern.sub(mark, value)
        return value

    def value(self, value: Any) -> Any:
        """`value` with every string in it redacted, keys of mappings included."""
        if not self.rules:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):  # a key may be data too (contacts keyed by address)
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


def redactor(specs: Sequence[str]) -> Redactor:
    """The rules `--redact` names, in order; a rule that is not one is a UsageError."""
    rules = []
    for spec in specs:
        if spec.startswith("regex:"):
            try:
                rules.append((re.compile(spec.removeprefix("regex:")), "[redacted]"))
            except re.error as exc:
                raise UsageError(
                    f"redact={spec!r}: the pattern does not compile ({exc}); write a Python "
                    "regular expression after `regex:`",
                    params=["redact"],
                ) from None
        elif spec in KINDS:
            rules.append((re.compile(KINDS[spec]), f"[redacted:{spec}]"))
        else:
            raise UsageError(
                f"redact={spec!r}: use one of {', '.join(KINDS)}, or regex:PATTERN",
                params=["redact"],
            )
    return Redactor(tuple(rules))
