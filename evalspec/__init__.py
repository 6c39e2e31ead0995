"""evalspec: declarative, YAML-driven evaluation of LLM tool calling.

The Python API is in `evalspec.api`; the command line in `evalspec.cli`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("evalspec-yaml")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"
