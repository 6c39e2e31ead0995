"""One conversation's tools: its own state, carried from call to call (and, later, turn to turn).

A stateful suite gets one `Conversation` per conversation. Calls no tool may answer (an unknown
tool, arguments that are not a JSON object or break the schema) are refused exactly as for
stateless tools; the rest go to the suite's tool environment: the declared one (tools'
`behavior:` on the suite's `state:`), or a Python one a plugin registered (kind `environment`).
Tools without a behavior keep answering from their stateless rules. The runner asks for a
`snapshot()` when the conversation ends; scoring and review replay the recorded calls through a
fresh Conversation to get the same state without any request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from weakref import WeakKeyDictionary

from evalspec._suite.model import Case, Suite, Tool
from evalspec._suite.state.spec import MAX_STATE_VALUES, weigh, weigh_state
from evalspec._tools.faults import ToolFault, raised, raised_result, reached_tool
from evalspec._tools.result import ToolResult
from evalspec._tools.state import run_behavior
from evalspec._util.errors import UsageError
from evalspec._util.graph import GraphTooLarge, to_json

if TYPE_CHECKING:
    from evalspec._tools.simulated import ToolSimulator


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool environment answers: an output, or an error observation."""

    output: Any = None
    error: str | None = None


@runtime_checkable
class ToolEnvironment(Protocol):
    """A world the model's tool calls act on, for one conversation.

    A plugin registers a factory `factory(state, params) -> ToolEnvironment` with
    `@register("environment", "name")`; a suite selects it with `environment: {kind: name}`.
    `call` must not raise for what a model sends (answer with `ToolOutcome(error=...)`), and
    must be deterministic: review replays recorded calls to price a change.
    """

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome: ...

    def snapshot(self) -> Any:
        """The state as JSON (the conversation's final state is recorded from it)."""
        ...


class DeclaredEnvironment:
    """The environment a suite declares in YAML: its tools' `behavior:` on its `state:`."""

    def __init__(self, tools: dict[str, Tool], state: Any, size: tuple[int, int] | None = None):
        self._tools = tools
        self._state = state
        if size is None:  # (values, characters): tracked call by call from here
            values, _, chars = weigh(state, MAX_STATE_VALUES)
            size = (values, chars)
        self._size, self._chars = size

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        behavior = self._tools[name].behavior
        assert behavior is not None
        outcome = run_behavior(behavior, self._state, self._size, arguments, self._chars)
        self._state, self._size, self._chars = outcome.state, outcome.size, outcome.chars
        return ToolOutcome(outcome.output, outcome.error)

    def snapshot(self) -> Any:
        return self._state


class Conversation:
    """The tools of one conversation: stateless rules, and the environment that keeps state."""

    def __init__(
        self,
        simulator: ToolSimulator,
        environment: ToolEnvironment,
        answers_all: bool,
        validate: bool = True,
    ):
        self._simulator = simulator
        self._validate = validate
        """False: arguments that break a tool's schema still reach the environment."""
        self.environment = environment
        self._answers_all = answers_all
        """A Python environment answers every tool; the declared one only tools with behavior."""
        self._declared = type(environment) is DeclaredEnvironment
        self._stateful = {
            name for name, tool in simulator.tools.items() if tool.behavior is not None
        }

    def act(self, name: str, arguments: dict[str, Any] | None, raw: str) -> ToolResult | None:
        """The answer when the environment answers this call (or refuses it); else None (a
        stateless tool, answered by the simulator)."""
        refused = self._simulator.refusal(name, arguments, raw)
        if refused is not None and (
            self._validate or refused.source != "error:schema" or not isinstance(arguments, dict)
        ):
            return refused
        if not (self._answers_all or name in self._stateful):
            return None
        assert isinstance(arguments, dict)
        try:
            outcome = self.environment.call(name, arguments)
        except ToolFault as exc:  # a fault the environment raised: as a declared one
            return self._raised(name, exc)
        except Exception as exc:  # a plugin's own failure is the call's observation
            why = f"the tool environment failed: {type(exc).__name__}: {exc}"
            return ToolResult(None, why, "state")
        # Any object with `output` and `error` will do: a plugin need not import ToolOutcome.
        error = getattr(outcome, "error", None)
        output = getattr(outcome, "output", None)
        if error is None and not self._declared:
            try:  # a Python environment's answer is its objects: copied within the budget
                output = to_json(output)
            except GraphTooLarge as exc:
                return ToolResult(None, f"the tool environment's answer: {exc}", "state")
        return ToolResult(None if error is not None else output, _text(error), "state")

    def _raised(self, name: str, exc: ToolFault) -> ToolResult:
        try:  # its answer, for the kinds that change one, copied as any answer is
            output = to_json(exc.output)
        except GraphTooLarge as too_large:
            return ToolResult(None, f"the tool environment's answer: {too_large}", "state")
        return raised_result(name, exc, output)

    async def call(self, name: str, arguments: dict[str, Any] | None, raw: str) -> ToolResult:
        answered = self.act(name, arguments, raw)
        if answered is not None:
            return answered
        return await self._simulator.call(name, arguments, raw)

    def answer_without_llm(
        self, name: str, arguments: dict[str, Any] | None, raw: str
    ) -> ToolResult | None:
        answered = self.act(name, arguments, raw)
        if answered is not None:
            return answered
        return self._simulator.answer_without_llm(name, arguments, raw)

    async def aclose(self) -> None:
        return None

    def snapshot(self) -> Any:
        """The state now, as a value later calls cannot change. A plugin's environment may
        give its live state: it is copied, or each turn's snapshot would move with the next
        (the declared environment never changes a state in place). The copy is JSON within
        `_util/graph.py`'s budget (GraphTooLarge past it): the calls shape that graph."""
        state = self.environment.snapshot()
        return state if self._declared else to_json(state)


def _text(error: Any) -> str | None:
    return None if error is None else error if isinstance(error, str) else str(error)


def initial_state(suite: Suite, case: Case | None) -> Any:
    if case is not None and case.state is not None:
        return case.state
    return suite.state if suite.state is not None else {}


def environment_factory(suite: Suite) -> Callable[[Any], ToolEnvironment]:
    """How to make a fresh environment from an initial state, for this suite."""
    spec = suite.environment
    if spec is None:
        tools = {t.name: t for t in suite.tools}
        sizes: dict[int, tuple[Any, tuple[int, int]]] = {}

        def declared(state: Any) -> ToolEnvironment:
            # Cases share their initial state unless they override it: measure each once.
            known = sizes.get(id(state))
            if known is None or known[0] is not state:
                values, _, chars = weigh_state(state)
                known = sizes[id(state)] = (state, (values, chars))
            return DeclaredEnvironment(tools, state, known[1])

        return declared
    from evalspec._util import registry

    plugin = registry.find("environment", spec.kind)
    if plugin is None:
        raise UsageError(
            f"the suite's tool environment {spec.kind!r} is not installed; "
            "install the plugin that registers it"
        )
    params = dict(spec.params)

    def make(state: Any) -> ToolEnvironment:
        env = plugin.impl(state, params)
        if not isinstance(env, ToolEnvironment):
            raise UsageError(
                f"tool environment {spec.kind!r} gave a {type(env).__name__}, which has no "
                "call(name, arguments) and snapshot()"
            )
        return env

    return make


class Conversations:
    """Opens a Conversation per conversation of a stateful suite; shared by a whole run."""

    def __init__(self, suite: Suite, simulator: ToolSimulator):
        self.suite = suite
        self.simulator = simulator
        self._make = environment_factory(suite)
        self._answers_all = suite.environment is not None

    def open(self, case: Case | None) -> Conversation:
        state = initial_state(self.suite, case)
        spec = self.suite.environment
        validate = spec is None or spec.validate_arguments
        return Conversation(self.simulator, self._make(state), self._answers_all, validate)

    def replay(self, case: Case | None, calls: Any, offered: frozenset[str]) -> Any:
        """The state after these recorded calls, run again through a fresh environment."""
        return self.replay_from(case, calls, offered, 0)[1]

    def replay_from(
        self, case: Case | None, calls: Any, offered: frozenset[str], start: int
    ) -> tuple[Any, Any]:
        """The states after the first `start` of these recorded calls and after all of them,
        in one replay (a turn's state before and after it)."""
        conversation = self.open(case)
        before = conversation.snapshot() if start <= 0 else None
        for i, call in enumerate(calls, start=1):
            # Not a call a declared fault stopped; one the environment raised a fault on, it saw.
            if call.name in offered and (reached_tool(call.fault) or raised(call.fault)):
                conversation.act(call.name, call.arguments, call.raw_arguments)
            if i == start:
                before = conversation.snapshot()
        after = conversation.snapshot()
        return (after if before is None else before), after


_OPENED: WeakKeyDictionary[ToolSimulator, Conversations] = WeakKeyDictionary()


def conversations(suite: Suite, simulator: ToolSimulator) -> Conversations:
    """The run's Conversations for this simulator (made once, however many items run)."""
    found = _OPENED.get(simulator)
    if found is None or found.suite is not suite:
        found = _OPENED[simulator] = Conversations(suite, simulator)
    return found
