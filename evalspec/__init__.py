"""evalspec: declarative, YAML-driven evaluation of LLM tool calling.

The verbs are here: `run`, `merge`, `score`, `rescore`, `judge`, `diff`, `compare`, `review` and
the importers (`import_bfcl`, ...). The rest of the public surface is grouped by what it is:

- `evalspec.api`: the verbs and the stages one by one (load_suite, compile_plan, run_plan);
- `evalspec.records`: what they take and return (RunRequest, RunResult, Report, Suite, ...);
- `evalspec.errors`: what they raise (EvalspecError and its kinds);
- `evalspec.plugins`: the hooks for your own checks, tool environments and model code.

Each name is loaded on first use, so `import evalspec` stays cheap; the imports below are the
one list of the names offered here. The command line lives in `evalspec._cli`.
"""

from typing import TYPE_CHECKING, Any

from evalspec._util.lazy import lazy_names

if TYPE_CHECKING:
    from evalspec.api import compare as compare
    from evalspec.api import diff as diff
    from evalspec.api import import_bfcl as import_bfcl
    from evalspec.api import import_bfcl_results as import_bfcl_results
    from evalspec.api import import_otel as import_otel
    from evalspec.api import import_stabletoolbench as import_stabletoolbench
    from evalspec.api import import_stabletoolbench_answers as import_stabletoolbench_answers
    from evalspec.api import import_tau_bench as import_tau_bench
    from evalspec.api import import_traces as import_traces
    from evalspec.api import judge as judge
    from evalspec.api import merge as merge
    from evalspec.api import rescore as rescore
    from evalspec.api import review as review
    from evalspec.api import run as run
    from evalspec.api import score as score

DISTRIBUTION = "evalspec-yaml"
"""The name on the package index (`evalspec` there is an unrelated project)."""

_GROUPS = ("api", "records", "errors", "plugins")
"""The public modules, each a group of names."""

_public, __dir__ = lazy_names(__name__, __file__, globals())


def __getattr__(name: str) -> Any:
    """Public names and `__version__` are looked up on first use: importlib.metadata alone
    costs ~30 ms at every start."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version(DISTRIBUTION)
        except PackageNotFoundError:  # a source tree that was never installed
            return "0.0.0+unknown"
    if name in _GROUPS:  # `import evalspec` then `evalspec.records.Report`
        from importlib import import_module

        return import_module(f"evalspec.{name}")
    return _public(name)
