"""ToolBench's function names for RapidAPI tools, and its API-call score: written once, used by
the response cache, the StableToolBench importer and scorer, and the `api_call_score` evaluator.

The rule (ToolBench `toolbench/inference/Downstream_tasks/rapidapi.py`, `standardize` and
`change_name`): non-word runs become one `_`, lower case, trimmed; a name starting with a digit
gets `get_` in front; Python keywords get `is_`; the function is `<api>_for_<tool>`, last 64
characters kept. Older ToolBench runs left out the `get_` before a digit (`4_get_rewards`
where the current rule gives `get_4_get_rewards`): `name_key` reads both alike.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable

_NON_WORD = re.compile(r"[^\u4e00-\u9fa5a-zA-Z0-9_]")
_RESERVED = {"from", "class", "return", "false", "true", "id", "and"}
MAX_FUNCTION_NAME = 64
"""ToolBench keeps the last 64 characters of a function name (OpenAI's old limit)."""


def standardize(name: str) -> str:
    """ToolBench's identifier rule: non-word runs -> one '_', trimmed, lowercase, no digit start."""
    out = re.sub(r"_+", "_", _NON_WORD.sub("_", name)).lower().strip("_")
    if out and out[0].isdigit():
        out = "get_" + out
    return out


def api_identifier(api_name: str) -> str:
    """The API part of a function name; Python keywords get an ``is_`` prefix as in ToolBench."""
    pure = standardize(api_name)
    return "is_" + pure if pure in _RESERVED else pure


def function_name(tool_name: str, api_name: str) -> str:
    """ToolBench's function name for an API: ``<api>_for_<tool>``, last 64 characters."""
    return f"{api_identifier(api_name)}_for_{standardize(tool_name)}"[-MAX_FUNCTION_NAME:]


_GET_BEFORE_DIGIT = re.compile(r"(^|_for_)get_(?=\d)")


def name_key(name: str) -> str:
    """The form both ToolBench naming rules share, for comparing names across them.

    Older ToolBench code did not prefix ``get_`` to a part starting with a digit (StableToolBench's
    published G2/G3 answers name ``4_get_list_of_rewards_for_rewards_as_a_service`` where the
    current rule gives ``get_4_get_list_of_rewards_for_...``): the key drops that ``get_``.
    """
    return _GET_BEFORE_DIGIT.sub(r"\1", name)


FINISH = "Finish"
"""ToolBench's pseudo-call that ends a run; it is not an API."""


def is_api_call(name: str) -> bool:
    """Does a call by this name count as an API call? Everything but ``Finish``, matched exactly
    as ToolBench does (`rapidapi.py`, ``rapidapi_wrapper._step``: ``if action_name ==
    "Finish"``; THUNLP-MT/StableToolBench @ fcc2d76): a suite's own tool named ``finish`` is an
    API like any other."""
    return name != FINISH


def api_call_score(called: Iterable[Hashable], gold: Iterable[Hashable]) -> float:
    """StableToolBench's API call score: |called ∩ gold| / |gold| over distinct APIs; 0.0 when
    there is no gold, as its scorer does."""
    wanted = set(gold)
    if not wanted:
        return 0.0
    return len(wanted & set(called)) / len(wanted)
