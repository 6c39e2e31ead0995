"""evalspec: declarative, YAML-driven evaluation of LLM tool calling.

Everything public is importable from here: the Python API (`evalspec.api`: run, score, diff,
review, compare, merge, the importers and their records) and the plugin interface
(`evalspec.plugins`: register). Each name is loaded on first use, so `import evalspec` stays
cheap; the command line lives in `evalspec._cli`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalspec import api

if TYPE_CHECKING:
    from evalspec.api import *  # noqa: F403
    from evalspec.plugins import (
        AnswerCheck,
        AnswerInput,
        CheckReturn,
        Critic,
        CriticOutcome,
        Evaluator,
        EvaluatorInput,
        Finding,
        Plugin,
        ToolEnvironment,
        ToolOutcome,
        Verdict,
        find,
        register,
        registered,
        unregister,
    )

DISTRIBUTION = "evalspec-yaml"
"""The name on the package index (`evalspec` there is an unrelated project)."""

__all__ = list(api.__all__)
__all__ += [
    "AnswerCheck",
    "AnswerInput",
    "CheckReturn",
    "Critic",
    "CriticOutcome",
    "Evaluator",
    "EvaluatorInput",
    "Finding",
    "Plugin",
    "ToolEnvironment",
    "ToolOutcome",
    "Verdict",
    "find",
    "register",
    "registered",
    "unregister",
]
_PLUGIN_NAMES = frozenset(__all__) - frozenset(api.__all__)
"""The plugin interface, from `evalspec.plugins` (a list literal above, so checkers read it)."""


def __getattr__(name: str) -> Any:
    """Public names and `__version__` are looked up on first use: importlib.metadata alone
    costs ~30 ms at every start."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(DISTRIBUTION)
        except PackageNotFoundError:  # a source tree that was never installed
            return "0.0.0+unknown"
    if name in _PLUGIN_NAMES:
        from evalspec import plugins

        return getattr(plugins, name)
    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'evalspec' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
