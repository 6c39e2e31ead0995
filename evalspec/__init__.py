"""evalspec: declarative, YAML-driven evaluation of LLM tool calling.

The Python API is in `evalspec.api`; the command line in `evalspec._cli`.
"""

from typing import Any

DISTRIBUTION = "evalspec-yaml"
"""The name on the package index (`evalspec` there is an unrelated project)."""


def __getattr__(name: str) -> Any:
    """`__version__` is looked up on first use: importlib.metadata costs ~30 ms at every start."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(DISTRIBUTION)
        except PackageNotFoundError:  # a source tree that was never installed
            return "0.0.0+unknown"
    raise AttributeError(f"module 'evalspec' has no attribute {name!r}")
