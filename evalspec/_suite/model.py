"""The typed, immutable suite: what the validator produces and every later stage reads.

Plain frozen dataclasses, so a Suite can be hashed into plan ids, passed between stages and
built by hand from Python without YAML.
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from evalspec._language.cases import CASE, SIMULATED_USER
from evalspec._language.critics import CRITIC, EVALUATOR, RUBRIC
from evalspec._language.defaults import DEFAULT_API_KEY_ENV
from evalspec._language.expect import EXPECT, FINAL_ANSWER
from evalspec._language.faults import FAULT
from evalspec._language.models import MODEL
from evalspec._language.suite import SUITE
from evalspec._language.tools import TOOL
from evalspec._language.vocabulary import default_of

if TYPE_CHECKING:
    from evalspec._suite.state.types import Behavior

Mode = Literal["agent", "single_turn"]
PassRule = Literal["all", "any", "majority", "mean"]

# Records made for every case (Case, its messages, expectation, calls, places) have slots: no
# per-instance dict, a third less memory for a 50,000-case suite. A field's default is then
# read with `default(Cls, "name")`, not `Cls.name` (that is the slot).


def slot_init(cls: type[_T]) -> type[_T]:
    """Give a frozen dataclass with slots an `__init__` that sets each slot through its own
    descriptor: what the generated one does through `object.__setattr__`, which looks the
    name up on the class for every field (a 50,000-case suite builds ~300,000 such records,
    and this halves the cost of each). Same parameters, defaults and factories."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]  # a dataclass, by contract
    env: dict[str, Any] = {"_FACTORY": _FACTORY}
    params, body = [], []
    for f in fields(cls):  # type: ignore[arg-type]
        env[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        if f.default is not MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_FACTORY")
            body.append(f"    if {f.name} is _FACTORY: {f.name} = _factory_{f.name}()")
        else:
            params.append(f.name)
    body.extend(f"    _set_{n}(self, {n})" for n in names)
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(source, env)  # the code above, made from the class's own field names
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = cls.__init__.__annotations__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


_T = TypeVar("_T")


class _Factory:
    """The default of a parameter whose field has a default factory: the factory is called."""

    def __repr__(self) -> str:
        return "<factory>"  # as dataclasses shows it in a signature


_FACTORY = _Factory()


REFUSED_TAG = "import-refused"
"""Tag of a case an importer made to stand for a record it refused: scored as an error."""


@slot_init
@dataclass(frozen=True, slots=True)
class Loc:
    """Where a node came from, for messages that point back into the YAML."""

    file: str = "<python>"
    line: int = 0
    column: int = 0
    path: str = ""


@dataclass(frozen=True)
class SimulatedResponse:
    """One rule of a simulated tool: if the call's arguments match `when`, answer this."""

    when: dict[str, Any] | None = None
    """Arguments that must equal the call's (a subset); None matches every call."""
    output: Any = None
    error: str | None = None


FaultKind = Literal["error", "timeout", "rate_limit", "latency", "malformed", "partial", "inject"]


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault a tool call meets (`faults:`), decided from the data alone so replays meet it."""

    tool: str
    kind: FaultKind
    on_call: int | None = None
    """Only the n-th call of the tool in the conversation (from 1)."""
    when: dict[str, Any] | None = None
    rate: float | None = None
    seed: int = default_of(FAULT, "seed")
    message: str | None = None
    status: int | None = None
    seconds: float | None = None
    retry_after: float = default_of(FAULT, "retry_after")
    applied: bool = default_of(FAULT, "applied")
    """The call took effect before its answer was lost."""
    form: Literal["cut_json", "wrong_types", "empty"] | None = None
    keep: int | None = None
    field: str | None = None
    text: str | None = None
    """inject: the text added to the output (`inject:` of a case)."""
    # `dataclasses.field` by its full name: this class's own `field` shadows it.
    loc: Loc = dataclasses.field(default=Loc(), compare=False)

    def to_id(self) -> dict[str, Any]:
        """What the fault contributes to a case's content id (everything but where it is)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "loc" and getattr(self, f.name) is not None
        }


@dataclass(frozen=True)
class LLMSimulation:
    """Answer calls no rule matches with a model that pretends to be the API (cached)."""

    model: str
    base_url: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    cache: str | None = None


@dataclass(frozen=True)
class McpServer:
    """An MCP server a suite takes tools from; started only by `tools refresh` and live calls."""

    key: str
    """How the lock file names this server: its command line, or its url."""
    command: tuple[str, ...] = ()
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    """Header values may hold `${NAME}`, filled from the environment when connecting."""
    cwd: str = "."
    """Folder a command server starts in (the suite's)."""
    execute: bool = default_of(TOOL, "mcp", "execute")
    """Run the model's calls on the server in live runs, recording outputs in the cache."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    responses: tuple[SimulatedResponse, ...] = ()
    cache_dir: str | None = None
    """A StableToolBench-layout response cache: <dir>/<category>/<tool>/<api>.json."""
    cache_file: str | None = None
    """One StableToolBench cache file for this tool (keyed by stringified arguments)."""
    simulate: LLMSimulation | None = None
    mcp: McpServer | None = None
    """The MCP server this tool's definition came from (via the suite's lock file)."""
    loc: Loc = field(default=Loc(), compare=False)
    behavior: Behavior | None = None
    """What the tool does to the suite's state (`behavior:`); None: a stateless tool."""
    faults: tuple[Fault, ...] = ()
    """Faults its calls meet in every case that offers it (`faults:`)."""
    idempotent: bool | None = None
    """False: repeating an identical call repeats a side effect (reported as a duplicate)."""

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@slot_init
@dataclass(frozen=True, slots=True)
class CriticSpec:
    """How to judge one argument: the critic kind, its weight and its own parameters."""

    field: str
    kind: str
    weight: float = float(default_of(CRITIC, "weight"))
    # `dataclasses.field` by its full name: this class's own `field` shadows it for a checker.
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    loc: Loc = dataclasses.field(default=Loc(), compare=False)
    required: bool = default_of(CRITIC, "required")
    """When true, the case fails unless this critic matches, whatever the total score."""


@slot_init
@dataclass(frozen=True, slots=True)
class ExpectedCall:
    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    critics: tuple[CriticSpec, ...] = ()
    """Critics for this call only; they take precedence over the case's critics."""
    output: Any = None
    """Expected tool output (for the tool_call_output evaluator); None means not checked."""
    has_output: bool = False
    loc: Loc = field(default=Loc(), compare=False)


@dataclass(frozen=True, slots=True)
class EvaluatorSpec:
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    weight: float = float(default_of(EVALUATOR, "weight"))
    required: bool = default_of(EVALUATOR, "required")
    """When true, the case fails unless this evaluator scores 1, whatever the total."""
    loc: Loc = field(default=Loc(), compare=False)


@dataclass(frozen=True, slots=True)
class FinalAnswerCheck:
    kind: str
    """A built-in ("contains", "not_contains", "regex", "similarity", "judge", "equals") or a
    registered plugin's name."""
    params: dict[str, Any] = field(default_factory=dict)
    weight: float = float(default_of(FINAL_ANSWER, "weight"))
    loc: Loc = field(default=Loc(), compare=False)


@dataclass(frozen=True, slots=True)
class Rubric:
    fail_threshold: float = float(default_of(RUBRIC, "fail_threshold"))
    warn_threshold: float = float(default_of(RUBRIC, "warn_threshold"))
    fail_on_tool_selection: bool = default_of(RUBRIC, "fail_on_tool_selection")
    fail_on_tool_call_quantity: bool = default_of(RUBRIC, "fail_on_tool_call_quantity")
    tool_selection_weight: float = float(default_of(RUBRIC, "tool_selection_weight"))
    extra_args: Literal["allow", "penalize"] = default_of(RUBRIC, "extra_args")
    extra_calls: Literal["allow", "penalize"] = default_of(RUBRIC, "extra_calls")
    normalize_tool_names: bool = default_of(RUBRIC, "normalize_tool_names")
    state_weight: float = float(default_of(RUBRIC, "state_weight"))


@dataclass(frozen=True, slots=True)
class StateCheck:
    """How to judge one place of the final state: a JSON Pointer and its critic."""

    pointer: str
    parts: tuple[str, ...]
    spec: CriticSpec
    """Its `field` is the pointer."""
    expected: Any = None
    absent: bool = False
    """`{exists: false}`: nothing may be there."""
    loc: Loc = field(default=Loc(), compare=False)


@dataclass(frozen=True, slots=True)
class ForbiddenCall:
    """A call the model must not make: this tool, with arguments that include `args`."""

    tool: str
    args: dict[str, Any] | None = None
    loc: Loc = field(default=Loc(), compare=False)


@slot_init
@dataclass(frozen=True, slots=True)
class Expectation:
    tool_calls: tuple[ExpectedCall, ...] = ()
    ordered: bool = default_of(EXPECT, "ordered")
    no_tool_calls: bool = default_of(EXPECT, "no_tool_calls")
    min_calls: int = default_of(EXPECT, "min_calls")
    """Fewest tool calls (of any tools) the model must make: fewer fails outright."""
    final_answer: tuple[FinalAnswerCheck, ...] = ()
    state: tuple[StateCheck, ...] = ()
    unchanged: tuple[tuple[str, ...], ...] = ()
    """Places of the state (pointer parts) that must end as they began."""
    forbidden_calls: tuple[ForbiddenCall, ...] = ()
    """Calls the model must not make, attempted or not: one fails the case outright."""
    max_retries: int | None = None
    """After a call a fault stopped, the model must call that tool again, at most this many
    times in a row before a call gets through; None: retries are not judged."""
    no_duplicates: bool = default_of(EXPECT, "no_duplicates")
    """No call of an `idempotent: false` tool may reach it twice with the same arguments."""

    @property
    def judges_state(self) -> bool:
        return bool(self.state or self.unchanged)

    @property
    def judges_recovery(self) -> bool:
        return bool(self.forbidden_calls or self.max_retries or self.no_duplicates)

    @property
    def only_state(self) -> bool:
        """Nothing but the state, or what calls must not do, is expected: any other calls
        will do."""
        return (self.judges_state or self.judges_recovery) and not (
            self.tool_calls or self.no_tool_calls or self.final_answer
        )


@slot_init
@dataclass(frozen=True, slots=True)
class Message:
    role: str
    content: str | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = list(self.tool_calls)
        if self.tool_call_id is not None:
            msg["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            msg["name"] = self.name
        return msg


@dataclass(frozen=True, slots=True)
class Turn:
    """One user turn of a multi-turn case: what the user says and, if judged, what a good model
    does in answer (its calls in this turn only, its answer at the turn's end)."""

    user: str
    expect: Expectation | None = None
    """None: the turn is sent but not judged."""
    loc: Loc = field(default=Loc(), compare=False)
    add_tools: tuple[str, ...] = ()
    """Suite tools offered from this turn on, besides those offered before it (`add_tools:`)."""
    user_calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    """(tool, arguments) the user calls on the shared world before saying `user` (dual control:
    the user's own tools, `user_calls:`)."""


UserCheckKind = Literal["hides", "reaches", "never", "on_script", "judged"]


@dataclass(frozen=True, slots=True)
class UserCheck:
    """A check on the simulated user's own conduct (`simulate: {checks: ...}`); a failed one
    makes the trial the simulated user's fault, not the model's."""

    kind: UserCheckKind
    pattern: str = ""
    """A regular expression over the user's messages (hides, never, on_script); judged: the
    rule in words."""
    until: str = ""
    """hides: the pattern may appear once the assistant's text has matched this one ("" never)."""
    state: tuple[tuple[str, Any], ...] = ()
    """reaches: (JSON Pointer, value) pairs the world must hold when the user ends on its own."""
    refusal: str = ""
    """reaches: an assistant answer matching this refused or handed over ("" the default)."""
    why: str = ""
    """What the rule is, in the suite's words, for the report."""
    loc: Loc = field(default=Loc(), compare=False)
    judge: tuple[tuple[str, str], ...] = ()
    """judged: the judge model's settings (model, base_url, api_key_env)."""


@dataclass(frozen=True, slots=True)
class UserSimulation:
    """A model that plays the user (`user: {simulate: ...}`); it is not evaluated itself."""

    goal: str
    model: str
    """The `name` of the suite's model entry that plays the user."""
    persona: str = ""
    instructions: str = ""
    stop_when: str = ""
    max_turns: int = default_of(SIMULATED_USER, "max_turns")
    loc: Loc = field(default=Loc(), compare=False)
    tools: tuple[str, ...] = ()
    """Suite tools the user calls on the shared world (dual control); never the model's."""
    checks: tuple[UserCheck, ...] = ()
    """Checks on the user's own turns (`checks:`)."""


TurnRule = Literal["partial", "all_or_nothing"]


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits one conversation (or, for a suite budget, one model's whole run) must stay within;
    None leaves a figure unchecked."""

    max_tokens: int | None = None
    max_cost: float | None = None
    max_latency_s: float | None = None
    max_turns: int | None = None

    def __bool__(self) -> bool:
        return any(
            v is not None
            for v in (self.max_tokens, self.max_cost, self.max_latency_s, self.max_turns)
        )


GateOn = Literal["any_regression", "significant_drop", "none"]


@dataclass(frozen=True)
class Gate:
    """When a comparison (diff, review, compare) fails: see the schema's `gate`."""

    mode: GateOn = default_of(SUITE, "gate", "mode")
    min_pass_rate: float | None = None
    max_drop: float | None = None
    confidence: float = default_of(SUITE, "gate", "confidence")
    power: float = default_of(SUITE, "gate", "power")


@slot_init
@dataclass(frozen=True, slots=True)
class Case:
    name: str
    messages: tuple[Message, ...]
    """Everything sent before the model's first answer: system, earlier turns, the user."""
    expect: Expectation
    critics: tuple[CriticSpec, ...] = ()
    evaluators: tuple[EvaluatorSpec, ...] = ()
    rubric: Rubric = Rubric()
    trials: int = default_of(SUITE, "trials")
    pass_rule: PassRule = default_of(SUITE, "pass_rule")
    tags: tuple[str, ...] = ()
    description: str = ""
    tools: tuple[str, ...] | None = None
    """Names of the tools offered to the model in this case; None offers every suite tool."""
    loc: Loc = field(default=Loc(), compare=False)
    flaky: bool = default_of(CASE, "flaky")
    """Known to vary between trials: reported, never gated on in comparisons."""
    budget: Budget = Budget()
    """Limits each trial must stay within (the suite's `budgets.case`, overridden by the case's)."""
    state: Any = None
    """The state this case starts from (the suite's with the case's merged over it); None in a
    suite without state."""
    turns: tuple[Turn, ...] = ()
    """A multi-turn case's user turns (the first one's text ends `messages`); () otherwise."""
    turn_rule: TurnRule = default_of(CASE, "turn_rule")
    simulated_user: UserSimulation | None = None
    """The model playing the user, for a case whose user is simulated."""
    faults: tuple[Fault, ...] = ()
    """Faults this case's tool calls meet, tried before the tools' own (`faults:`); text
    injected into outputs (`inject:`) comes last, as faults of kind `inject`."""
    described: tuple[tuple[str, str], ...] = ()
    """(tool, text) appended to a tool's description in this case (`inject: into: description`)."""
    capture: Loc | None = field(default=None, compare=False)
    """Where `capture: true` is written: a capture-mode case, whose calls are recorded and not
    judged until `evalspec capture accept` writes its expectations there; None otherwise."""

    @property
    def expected_calls(self) -> tuple[ExpectedCall, ...]:
        """Every call the case expects, over all its turns."""
        if not self.turns:
            return self.expect.tool_calls
        return tuple(c for t in self.turns if t.expect for c in t.expect.tool_calls)

    @property
    def user_tools(self) -> frozenset[str]:
        """The tools the user holds (dual control): its simulated user's, its turns'."""
        sim = self.simulated_user
        names = set(sim.tools) if sim is not None else set()
        names.update(name for turn in self.turns for name, _ in turn.user_calls)
        return frozenset(names)

    @property
    def multi_turn(self) -> bool:
        """Whether the runner talks over several user turns (scripted or simulated)."""
        return bool(self.turns) or self.simulated_user is not None

    def offered_in_turn(self, k: int) -> tuple[str, ...] | None:
        """The tools offered in user turn k: `tools` and what turns up to k add (`add_tools`);
        None when the case offers every tool of the suite."""
        if self.tools is None:
            return None
        added = tuple(n for t in self.turns[1 : k + 1] for n in t.add_tools)
        return (*self.tools, *added) if added else self.tools


@dataclass(frozen=True)
class Price:
    """What a million tokens cost, in the suite's currency."""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000


@dataclass(frozen=True)
class ModelSpec:
    """One model under test, on any OpenAI-compatible endpoint."""

    name: str
    """Label shown in reports; unique in a suite."""
    model: str
    """Model id sent to the endpoint."""
    base_url: str | None = None
    api_key_env: str = DEFAULT_API_KEY_ENV
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    """temperature, seed, tool_choice, parallel_tool_calls, max_tokens, ..."""
    provider: Literal["openai", "anthropic"] = default_of(MODEL, "provider")
    """Wire protocol: OpenAI chat completions, or Anthropic's Messages API."""
    price: Price | None = None
    """Per million tokens, for the cost in reports; not part of the request."""
    requests_per_minute: float | None = None
    """This model's own rate limit, in place of the run's, shared by models of one endpoint."""
    loc: Loc = field(default=Loc(), compare=False)
    variant: ToolVariant | None = None
    """The version of the suite's tools this model is run with (`variants:`); its name is
    then `<model>@<variant>`."""
    base_name: str = ""
    """The model's own name in the suite when it runs a variant."""


@dataclass(frozen=True)
class ToolVariant:
    """One version of the suite's tools (`variants:`): the definitions the model reads.

    Cases and the tools' answers keep the base names: `back` maps a renamed tool's name, as
    the model calls it, to its base name."""

    name: str
    edits: tuple[tuple[str, dict[str, Any]], ...] = ()
    """Base tool name -> the function definition offered instead (OpenAI format)."""
    dropped: frozenset[str] = frozenset()
    """Base tools not offered in this variant."""
    loc: Loc = field(default=Loc(), compare=False)

    @property
    def back(self) -> dict[str, str]:
        """Offered name -> base name, for the tools the variant renames."""
        return {fn["name"]: base for base, fn in self.edits if fn["name"] != base}

    def apply(self, offered: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
        """The definitions offered under this variant, in the base tools' order."""
        edits = dict(self.edits)
        out = []
        for d in offered:
            name = d["function"]["name"]
            if name in self.dropped:
                continue
            out.append({**d, "function": edits[name]} if name in edits else d)
        return tuple(out)


@dataclass(frozen=True)
class RunSettings:
    mode: Mode = default_of(SUITE, "run", "mode")
    max_turns: int = default_of(SUITE, "run", "max_turns")
    concurrency: int = default_of(SUITE, "run", "concurrency")
    timeout_s: float = float(default_of(SUITE, "run", "timeout"))
    retries: int = default_of(SUITE, "run", "retries")
    requests_per_minute: float | None = None
    recordings: str | None = None
    """JSONL file of recorded model answers, relative to the suite file."""


@dataclass(frozen=True)
class EmbeddingSettings:
    model: str | None = None
    """Any sentence-transformers model name or path; None = bundled all-MiniLM-L6-v2."""
    cache_dir: str | None = None


@dataclass(frozen=True)
class EnvironmentSpec:
    """A tool environment written in Python, from the plugin registry (kind `environment`)."""

    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    loc: Loc = field(default=Loc(), compare=False)
    validate_arguments: bool = default_of(SUITE, "environment", "validate_arguments")
    """False: calls reach the environment whatever their arguments (BFCL runs any call)."""


@dataclass(frozen=True)
class Suite:
    """A loaded, validated suite: models, tools, cases (defaults merged in), settings."""

    name: str
    path: str
    tools: tuple[Tool, ...]
    cases: tuple[Case, ...]
    models: tuple[ModelSpec, ...]
    rubric: Rubric = Rubric()
    run: RunSettings = RunSettings()
    embeddings: EmbeddingSettings = EmbeddingSettings()
    description: str = ""
    budget: Budget = Budget()
    """Limits for each model's whole run (`budgets.suite`)."""
    gate: Gate = Gate()
    state: Any = None
    """The initial state (`state:`); None when no tool keeps state."""
    environment: EnvironmentSpec | None = None
    variants: tuple[ToolVariant, ...] = ()
    """Versions of the tools each model runs every case with; `models` holds one entry per
    model and variant."""
    labels: str | None = None
    """The people's verdicts the judges are held against (`labels:`, inside the suite's
    folder; `--labels` of run and score); None: `<suite>.labels.jsonl` beside the suite."""
    labels_named: bool = False
    """`labels` came from the command line: the caller's own file, wherever it is."""

    @property
    def stateful(self) -> bool:
        """Conversations carry a state: each gets its own tool environment."""
        return self.state is not None or self.environment is not None

    def tool(self, name: str) -> Tool | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None


def default(cls: type, name: str) -> Any:
    """The default of a dataclass field (with slots, `cls.name` is not the default)."""
    for f in fields(cls):
        if f.name == name and f.default is not MISSING:
            return f.default
    raise KeyError(f"{cls.__name__}.{name} has no plain default")
