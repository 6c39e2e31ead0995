"""Argument critics: each judges one argument value of a tool call, expected against actual.

A critic returns an unweighted score in [0, 1], whether it counts as a match, and one sentence a
person can read. Weights belong to the scorer. Critics never raise on odd actual values (None,
nested structures, huge strings): those score 0 with a reason. Bad critic parameters raise
ValueError from `make_critic`, with a message meant for the person who wrote the YAML.

Semantics follow public implementations where one exists:
- binary, numeric, similarity (tfidf), datetime: Arcade's evals critics (BinaryCritic,
  NumericCritic, SimilarityCritic, DatetimeCritic), with the typing and clamping fixes noted below.
- one_of: BFCL, berkeley-function-call-leaderboard
  `bfcl_eval/eval_checker/ast_eval/ast_checker.py` (type_checker, standardize_string,
  string_checker, list_checker, dict_checker, list_dict_checker), Python rules, for one value.
- json_similarity: UiPath's `uipath/eval/evaluators/json_similarity_evaluator.py`
  (`_compare_tokens`: leaf-weighted tree similarity).

Heavy libraries (scikit-learn) are imported inside the functions that need them.
"""

from __future__ import annotations

from typing import Any

from evalspec._critics.base import MISSING, Critic, EmbedderRequired, show
from evalspec._critics.binary import BinaryCritic
from evalspec._critics.dates import DatetimeCritic, parse_duration
from evalspec._critics.json_similarity import JsonSimilarityCritic, json_similarity
from evalspec._critics.numeric import NumericCritic
from evalspec._critics.one_of import OneOfCritic, standardize_string
from evalspec._critics.similarity import SimilarityCritic, tfidf_similarity
from evalspec._critics.text import ContainsCritic, ExactCritic, IgnoreCritic, RegexCritic
from evalspec._util.registry import builtin_names, find, registered

__all__ = [
    "CRITIC_KINDS",
    "MISSING",
    "BinaryCritic",
    "ContainsCritic",
    "Critic",
    "DatetimeCritic",
    "EmbedderRequired",
    "ExactCritic",
    "IgnoreCritic",
    "JsonSimilarityCritic",
    "NumericCritic",
    "OneOfCritic",
    "RegexCritic",
    "SimilarityCritic",
    "default_critic",
    "json_similarity",
    "make_critic",
    "parse_duration",
    "standardize_string",
    "tfidf_similarity",
]

CRITIC_KINDS: frozenset[str] = builtin_names("critic")
"""The critics evalspec ships (each module above registers its own with `@register`)."""


def make_critic(kind: str, params: dict[str, Any]) -> Critic:
    """Build a critic from its YAML name and parameters; ValueError says what to fix.

    Built-in and installed critics are found alike, in the one registry."""
    entry = find("critic", kind)
    if entry is None:
        known = sorted(registered("critic"))
        raise ValueError(f"unknown critic {show(kind)}; use one of: {', '.join(known)}")
    critic: Critic = entry.impl.from_params(params or {})
    return critic


def default_critic(param_schema: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The critic used when none is named: datetime for date formats, binary otherwise.

    Objects and arrays default to binary (deep equality with the 5 == 5.0 rule) rather than
    json_similarity, because json_similarity ignores extra keys and items, which would let a
    wrong value pass silently.
    """
    if not isinstance(param_schema, dict):
        return "binary", {}
    types = param_schema.get("type")
    if isinstance(types, list):
        types = next((t for t in types if t != "null"), None)
    if (types in (None, "string")) and param_schema.get("format") in ("date", "date-time"):
        return "datetime", {}
    return "binary", {}
