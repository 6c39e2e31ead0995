"""What the API raises: every error evalspec reports without a traceback derives from
`EvalspecError`, and its message names the function's parameter it is about (``gate=``).

Each name is imported on first use; the imports below are the one list of public names.
"""

from typing import TYPE_CHECKING

from evalspec._util.lazy import lazy_names

if TYPE_CHECKING:
    from evalspec._util.errors import EvalspecError as EvalspecError
    from evalspec._util.errors import Problem as Problem
    from evalspec._util.errors import RecordingsMissing as RecordingsMissing
    from evalspec._util.errors import RunError as RunError
    from evalspec._util.errors import RunInterrupted as RunInterrupted
    from evalspec._util.errors import SpecError as SpecError
    from evalspec._util.errors import UsageError as UsageError

__getattr__, __dir__ = lazy_names(__name__, __file__, globals())
