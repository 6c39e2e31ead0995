"""BFCL's multi-turn tool classes as a tool environment (kind `environment`, name `bfcl`).

BFCL judges its multi-turn categories on the state its own Python classes end in (a file system,
a trading bot, a travel agency...). A suite imported from BFCL names them with `environment:
{kind: bfcl, params: {classes: [...], long_context: ...}}` and its `state:` is BFCL's
`initial_config`. A call runs the public method of that name with the call's arguments (BFCL
builds a Python expression and `eval`s it; nothing here evaluates text), and the output is the
text BFCL would show the model. `bfcl-eval` is an optional extra (`pip install --no-deps
bfcl-eval`), imported only when a conversation is built.
"""

from __future__ import annotations

import copy
import decimal
import importlib
import inspect
import json
import math
from typing import Any

from evalspec._tools.environment import ToolOutcome
from evalspec._tools.state import MAX_INT_DIGITS
from evalspec._util.errors import UsageError
from evalspec._util.graph import GraphTooLarge, to_json
from evalspec._util.registry import register

CLASSES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
"""BFCL's multi-turn classes and the module of `func_source_code` each lives in."""
STATELESS = frozenset({"MathAPI"})
"""Classes BFCL builds without loading a scenario."""
_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"

OUTPUTS = "$outputs"
"""The snapshot's key for the outputs given so far (no BFCL class has a `$` in its name)."""
MAX_EXPONENT = 10_000
"""MathAPI.power: a larger integer exponent could build a number without bound."""
MAX_POWER_BITS = 1_000_000
"""MathAPI.power with whole numbers: the size of the result."""
MAX_PRECISION = 1_000
"""MathAPI.logarithm / square_root: digits of precision asked for."""
MAX_DEPTH = 64
"""Nesting of a snapshot below an attribute (BFCL's file system is a tree of objects)."""
_INT_LIMIT = 10**MAX_INT_DIGITS
_MPMATH_DPS = 15
"""mpmath's default precision (`mpmath.mp.dps` in a fresh process)."""


@register("environment", "bfcl")
def bfcl_environment(state: Any, params: dict[str, Any]) -> BfclEnvironment:
    """One conversation's BFCL instances, loaded from `state` (BFCL's `initial_config`); the
    classes are `params.classes`, else the state's keys (an imported case has one per class)."""
    if not isinstance(state, dict):
        raise UsageError("environment bfcl: the state must be a mapping of BFCL class names")
    classes = params.get("classes", list(state))
    if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
        raise UsageError("environment bfcl: params.classes must be a list of BFCL class names")
    unknown = [c for c in classes if c not in CLASSES]
    if unknown:
        raise UsageError(
            f"environment bfcl: unknown class {unknown[0]!r}; use one of {', '.join(CLASSES)}"
        )
    return BfclEnvironment(state, classes, params)


class BfclEnvironment:
    """The instances of the classes a BFCL conversation involves, carried across its turns."""

    def __init__(self, state: dict[str, Any], classes: list[str], params: dict[str, Any]):
        try:
            importlib.import_module(_PACKAGE)
        except ImportError:
            raise UsageError(
                "the suite's tool environment 'bfcl' needs bfcl-eval: "
                "pip install --no-deps 'bfcl-eval==2026.3.23'"
            ) from None
        long_context = bool(params.get("long_context", False))
        self.outputs: list[str] = []
        """Every output given so far: BFCL's response check looks for the ground truth's."""
        self.instances: dict[str, Any] = {}
        self._refused: str | None = None
        """Why the state can no longer be copied: every later call and snapshot says so."""
        self._methods: dict[str, Any] = {}
        for name in classes:
            instance = getattr(importlib.import_module(f"{_PACKAGE}.{CLASSES[name]}"), name)()
            if name not in STATELESS:
                config = copy.deepcopy(state.get(name, {}))
                instance._load_scenario(config, long_context=long_context)
            self.instances[name] = instance
            for method, bound in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method.startswith("_"):
                    self._methods[method] = bound  # a later class wins, as in BFCL's mapping

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        method = self._methods.get(name)
        if method is None:
            return ToolOutcome(error=f"no BFCL function named {name!r} in this conversation")
        if self._refused is not None:
            return ToolOutcome(error=self._refused)
        refused = _unbounded(name, arguments)
        if refused is not None:
            return ToolOutcome(error=refused)
        import mpmath

        dps = mpmath.mp.dps
        context = decimal.getcontext().copy()
        # A fresh process's precision for every call: MathAPI sets it globally and never puts
        # it back, so an output would otherwise depend on what ran before in the process.
        mpmath.mp.dps = _MPMATH_DPS
        decimal.setcontext(decimal.Context())
        _restore_defaults(method)
        try:
            # The text too: an mpmath number prints at the precision the call set, as in BFCL.
            # Keyword arguments in name order: Python's error for an unexpected one names the
            # first, and a transcript keeps arguments sorted, so a replay must see that order.
            ordered = {k: arguments[k] for k in sorted(arguments)}
            text = bfcl_text(method(**copy.deepcopy(ordered)))
        except Exception as exc:  # BFCL shows the model its own error text
            text = f"Error during execution: {exc}"
        finally:
            mpmath.mp.dps = dps
            decimal.setcontext(context)
        try:  # BFCL's own methods (find, du) walk the tree: it must stay within the budget
            self._state()
        except GraphTooLarge:
            return ToolOutcome(error=self._refused)
        self.outputs.append(text)
        return ToolOutcome(output=text)

    def parameter_names(self, name: str) -> list[str]:
        """The parameters a positional argument of this method binds to, in order."""
        method = self._methods.get(name)
        if method is None:
            return []
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        return [p.name for p in inspect.signature(method).parameters.values() if p.kind in kinds]

    def snapshot(self) -> Any:
        """Each instance's public attributes (those BFCL's state checker compares) as JSON, and
        under `$outputs` the outputs given so far (what BFCL's response check reads).
        GraphTooLarge when the instances hold more than evalspec copies (see `_state`)."""
        state = self._state()
        state[OUTPUTS] = list(self.outputs)
        return state

    def _state(self) -> dict[str, Any]:
        """The instances as the tree BFCL's `==` compares, bounded (`_util/graph.py`): calls
        can make a graph whose tree is exponential (`cp` of a directory shares its children)
        or infinite (`cp d d` puts a directory inside itself)."""
        if self._refused is not None:
            raise GraphTooLarge(self._refused)
        instances = {
            name: {k: v for k, v in vars(obj).items() if not k.startswith("_")}
            for name, obj in self.instances.items()
        }
        try:
            shown: dict[str, Any] = to_json(
                instances,
                objects=True,
                max_depth=MAX_DEPTH + 2,
                too_deep="<too deep>",
                number=_number,
            )
        except GraphTooLarge as exc:
            self._refused = f"the BFCL state grew beyond what evalspec copies ({exc})"
            raise GraphTooLarge(self._refused) from None
        return shown


_DEFAULTS: dict[Any, tuple[Any, Any]] = {}
"""Each BFCL method's default argument values as first seen, before any call could change
them."""


def _restore_defaults(method: Any) -> None:
    """Give the method fresh copies of its declared defaults. Some are lists a call changes
    (`TwitterAPI.post_tweet(mentions=[])` keeps that very list in the tweet, and `mention`
    extends it), so without this an output would depend on every conversation the process
    ran before, and a transcript would not replay the same in another process."""
    func = method.__func__
    if func not in _DEFAULTS:
        _DEFAULTS[func] = copy.deepcopy((func.__defaults__, func.__kwdefaults__))
    func.__defaults__, func.__kwdefaults__ = copy.deepcopy(_DEFAULTS[func])


def bfcl_text(result: Any) -> str:
    """What BFCL's executor makes of a method's return value."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:  # an object inside: BFCL falls back to str() too
            return str(result)
    return str(result)


def _unbounded(name: str, arguments: dict[str, Any]) -> str | None:
    """Why a MathAPI call would take unbounded time or memory (None when it would not)."""
    if name == "power":
        base, exponent = arguments.get("base"), arguments.get("exponent")
        if isinstance(exponent, int | float) and abs(exponent) > MAX_EXPONENT:
            return f"exponent {exponent} is beyond evalspec's limit of {MAX_EXPONENT}"
        if (
            isinstance(base, int)
            and isinstance(exponent, int)
            and abs(base).bit_length() * abs(exponent) > MAX_POWER_BITS
        ):
            return f"{base}**{exponent} would have more than {MAX_POWER_BITS} bits"
    if name in ("logarithm", "square_root"):
        precision = arguments.get("precision")
        if isinstance(precision, int | float) and abs(precision) > MAX_PRECISION:
            return f"precision {precision} is beyond evalspec's limit of {MAX_PRECISION}"
    return None


def _number(value: int | float) -> Any:
    """A number as a transcript can hold it."""
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no such number: a transcript holding one could not be read back
        return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, int) and abs(value) >= _INT_LIMIT:
        return f"<a whole number of more than {MAX_INT_DIGITS} digits>"
    return value
