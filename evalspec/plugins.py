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
  with a `ToolOutcome`), named by a suite's ``environment: {kind: ...}``. Its ``call`` may
  raise a `ToolFault` (a 429, a time-out, an answer cut short): recorded, replayed and scored
  exactly as a fault the suite declares.

`CheckReturn` is a score in [0, 1], ``(score, details)`` or a `Verdict` (with `Finding` rows
that explain it); raise ValueError for bad options. Plugins written for the older positional
forms, ``fn(transcript, expected_calls, params)`` and ``fn(answer, params)``, keep working.

`options` is the JSON Schema of the plugin's options in YAML (default: any mapping). A plugin may
not take a built-in's name. Plugins are code the user chose to install; nothing here loads a
module a suite names.

Model code that is not behind an OpenAI-compatible or Anthropic endpoint answers through a
`Provider` (``async complete(ChatRequest) -> ChatResponse``; `evalspec.api.record_answers`
records its answers), and a scorer can be given its own `Embedder` and LLM `Judge`.

Each name is imported on first use; the imports below are the one list of public names.
"""

from typing import TYPE_CHECKING

from evalspec._util.lazy import lazy_names

if TYPE_CHECKING:
    from evalspec._critics.base import Critic as Critic
    from evalspec._critics.base import CriticOutcome as CriticOutcome
    from evalspec._critics.base import Embedder as Embedder
    from evalspec._critics.base import Params as Params
    from evalspec._critics.base import outcome as outcome
    from evalspec._critics.base import show as show
    from evalspec._providers.base import ChatRequest as ChatRequest
    from evalspec._providers.base import ChatResponse as ChatResponse
    from evalspec._providers.base import Provider as Provider
    from evalspec._scoring.protocols import AnswerCheck as AnswerCheck
    from evalspec._scoring.protocols import AnswerInput as AnswerInput
    from evalspec._scoring.protocols import CheckReturn as CheckReturn
    from evalspec._scoring.protocols import Evaluator as Evaluator
    from evalspec._scoring.protocols import EvaluatorInput as EvaluatorInput
    from evalspec._scoring.protocols import Finding as Finding
    from evalspec._scoring.protocols import Judge as Judge
    from evalspec._scoring.protocols import Verdict as Verdict
    from evalspec._tools.environment import ToolEnvironment as ToolEnvironment
    from evalspec._tools.environment import ToolOutcome as ToolOutcome
    from evalspec._tools.faults import ToolFault as ToolFault
    from evalspec._util.registry import Plugin as Plugin
    from evalspec._util.registry import find as find
    from evalspec._util.registry import register as register
    from evalspec._util.registry import registered as registered
    from evalspec._util.registry import unregister as unregister

__getattr__, __dir__ = lazy_names(__name__, __file__, globals())
