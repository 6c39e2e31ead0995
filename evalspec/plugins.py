"""Writing critics, evaluators, final-answer checks and tool environments: the interfaces, and
how to register one.

evalspec's own checks are registered exactly as a plugin's are (`@register(kind)`), in one
registry; `find(kind, name)` resolves either, and `evalspec schema` lists both. An installed
package makes its module known through the entry-point group ``evalspec.plugins``::

    [project.entry-points."evalspec.plugins"]
    my_checks = "my_checks"

so `pip install my-checks` makes `my_date: {...}` valid in suites: the schema, `validate` (with
did-you-mean) and scoring all read the registry. What each kind registers:

- ``critic``: a `Critic` subclass with ``kind`` and ``from_params(params)`` (raise ValueError
  for bad options), exactly like the built-in critics.
- ``evaluator``: an `Evaluator`, ``fn(EvaluatorInput) -> CheckReturn``.
- ``final_answer``: an `AnswerCheck`, ``fn(AnswerInput) -> CheckReturn``, or an async function
  (the LLM judge is one). A missing answer scores 0 before the function is called.
- ``environment``: a factory ``factory(state, params) -> ToolEnvironment`` (answering calls
  with a `ToolOutcome`), named by a suite's ``environment: {kind: ...}``.

`CheckReturn` is a score in [0, 1], ``(score, details)`` or a `Verdict` (with `Finding` rows
that explain it); raise ValueError for bad options. Plugins written for the older positional
forms, ``fn(transcript, expected_calls, params)`` and ``fn(answer, params)``, keep working.

`options` is the JSON Schema of the plugin's options in YAML (default: any mapping). A plugin may
not take a built-in's name. Plugins are code the user chose to install; nothing here loads a
module a suite names.
"""

from __future__ import annotations

from evalspec._critics.base import Critic, CriticOutcome, Params, outcome, show
from evalspec._scoring.protocols import (
    AnswerCheck,
    AnswerInput,
    CheckReturn,
    Evaluator,
    EvaluatorInput,
    Finding,
    Verdict,
)
from evalspec._tools.environment import ToolEnvironment, ToolOutcome
from evalspec._util.registry import (
    BUILTIN,
    DISABLE_ENV,
    ENTRY_POINT_GROUP,
    KINDS,
    Entry,
    Kind,
    Plugin,
    allow_only,
    find,
    load_entry_points,
    register,
    registered,
    unregister,
)

__all__ = [
    "BUILTIN",
    "DISABLE_ENV",
    "ENTRY_POINT_GROUP",
    "KINDS",
    "AnswerCheck",
    "AnswerInput",
    "CheckReturn",
    "Critic",
    "CriticOutcome",
    "Entry",
    "Evaluator",
    "EvaluatorInput",
    "Finding",
    "Kind",
    "Params",
    "Plugin",
    "ToolEnvironment",
    "ToolOutcome",
    "Verdict",
    "allow_only",
    "find",
    "load_entry_points",
    "outcome",
    "register",
    "registered",
    "show",
    "unregister",
]
