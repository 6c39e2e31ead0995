"""Pieces several areas of the language share, declared once."""

from __future__ import annotations

from dataclasses import replace

from evalspec._language.vocabulary import Num, Str

WORDED_BY_VALIDATE = "validate: evalspec validate reports this in its own words"
"""The `$comment` of a schema node whose every check the semantic pass makes too, with a
message written for it (a behaviour's keys, a state pointer): the schema's error is left to
it, so editors flag the mistake and `validate` words it once."""

WEIGHT = Num(
    description=(
        "How much this counts toward the case score, relative to the other weights (0 "
        "= not at all)."
    ),
    default=1,
    maximum=1000000,
    minimum=0,
    examples=(0.5,),
)
"""The weight of a final-answer check or an evaluator."""

MATCH_THRESHOLD = Num(
    description="Score from 0 to 1 at or above which the value counts as a match.",
    maximum=1,
    minimum=0,
    examples=(0.8,),
)
"""A match threshold with no default: the critic or check it belongs to sets one."""

SIMILARITY_THRESHOLD = replace(MATCH_THRESHOLD, default=0.75)
"""The threshold of meaning similarity, critic or final-answer check."""


POINTER = "^(/|$)"
"""A JSON Pointer into the state: empty (the whole state) or starting with `/`."""


def state_pointer(description: str, example: str) -> Str:
    """A place in the state, written as a JSON Pointer; `validate` words its own message for a
    bad one (with the reference it may hold), so the schema's is not shown."""
    return Str(
        comment=WORDED_BY_VALIDATE, description=description, pattern=POINTER, examples=(example,)
    )


JUDGE_ENDPOINT = {
    "base_url": Str(
        description="OpenAI-compatible endpoint of the judge.",
        pattern="^(https?://|\\{\\{)",
        examples=("http://localhost:8000/v1",),
    ),
    "api_key_env": Str(
        description="Environment variable holding the judge's API key.",
        default="OPENAI_API_KEY",
        examples=("OPENAI_API_KEY",),
    ),
}
"""Where an LLM judge is asked (a final-answer judge, a simulated user's `judged:` check)."""
