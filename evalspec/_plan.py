"""Compile a Suite into a Plan: one item per case × model × trial, each with a content id.

The id is a hash of everything that shapes the model's answer — model id and parameters,
messages, tool definitions, run mode and the trial index — and nothing else. Critics,
thresholds and weights are scoring settings: changing them never changes an id, so re-scoring
never needs a new model call. Recordings key each request the same way (`request_key`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalspec._suite.limits import max_plan_items
from evalspec._suite.model import Case, Fault, Message, ModelSpec, Suite
from evalspec._util.errors import UsageError

ID_VERSION = 1


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
"""The one text of a value that ids hash (one encoder, not one per call)."""


def _encode(value: Any) -> str:
    return _CANONICAL.encode(value)


def _encode_int(value: int) -> str:
    """`_encode` of a trial index, without json's machinery for the one kind it can be."""
    return str(value) if type(value) is int else _encode(value)


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def request_key(
    model: ModelSpec, messages: list[dict[str, Any]], tools: list[dict[str, Any]], trial: int
) -> str:
    """Content id of one model request: same request, same key, across runs and machines.

    The provider joins the key only when it is not the default, so ids recorded before
    providers existed stay valid and an OpenAI and an Anthropic model with the same id do not
    share answers. A tool variant's name joins it likewise: two variants that offer the same
    definitions still never answer for each other.
    """
    return _request_key_of_encoded(model, _encode(messages), _encode(tools), trial)


def _request_key_of_encoded(
    model: ModelSpec, messages_json: str, tools_json: str, trial: int
) -> str:
    """`request_key` from messages and tools already encoded: a plan encodes each case's
    messages once and each set of offered tools once, not once per item.

    The text is exactly what `_encode` makes of the whole payload: its keys sorted, each
    value encoded the same way."""
    return _KeyText(model).key(messages_json, tools_json, trial)


class _KeyText:
    """The text of one model's request payloads around the parts that vary per request.

    The payload's keys sorted are messages, model, params, [provider,] tools, trial, v,
    [variant]: the
    model's parts sit between the messages and the tools, encoded once per model here, not
    once per item (12 encodings per item were a tenth of a 50,000-case replay)."""

    def __init__(self, model: ModelSpec) -> None:
        middle = f',"model":{_encode(model.model)},"params":{_encode(model.params)}'
        if model.provider != "openai":
            middle += f',"provider":{_encode(model.provider)}'
        self.middle = middle + ',"tools":'
        variant = f',"variant":{_encode(model.variant.name)}' if model.variant else ""
        self.tail = f',"v":{_encode(ID_VERSION)}{variant}}}'

    def key(self, messages_json: str, tools_json: str, trial: int) -> str:
        return _hash(
            f'{{"messages":{messages_json}{self.middle}{tools_json},"trial":{_encode_int(trial)}'
            + self.tail
        )


@dataclass(frozen=True)
class Earlier:
    """The request before a request in the same conversation."""

    key: str
    sent: int
    """How many messages it sent: the later request's messages start with them."""
    tools: tuple[dict[str, Any], ...]
    """The tools it offered."""


class RequestKeys:
    """`request_key` of each request of one conversation, each message encoded once.

    A conversation only grows: each request sends the last one's messages and a few more, the
    same dict objects. Encoding the whole history again per request made keys quadratic in
    the turns (8% of a five-turn replay). A message is reused only while it is the very object
    encoded (kept alive here, so its id cannot be reused); anything else is encoded afresh, so
    a key is always `request_key` of what is sent.
    """

    def __init__(self, model: ModelSpec, trial: int) -> None:
        self._text = _KeyText(model)
        self._trial = trial
        self._messages: list[dict[str, Any]] = []
        self._parts: list[str] = []
        self._tools: list[dict[str, Any]] = []
        self._tools_json = ""
        self.last: Earlier | None = None
        """The conversation's last request (the next user turn's first request continues it:
        `ChatRequest.continues`)."""

    def key(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        same = 0
        for message, seen in zip(messages, self._messages, strict=False):
            if message is not seen:
                break
            same += 1
        del self._messages[same:], self._parts[same:]
        for message in messages[same:]:
            self._messages.append(message)
            self._parts.append(_encode(message))
        if not self._tools_json or not _same_objects(tools, self._tools):
            self._tools, self._tools_json = list(tools), _encode(tools)
        return self._text.key(f"[{','.join(self._parts)}]", self._tools_json, self._trial)


def _same_objects(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def offered_names(tools: Sequence[dict[str, Any]], model: ModelSpec) -> frozenset[str]:
    """The names of these tools as a call to them is recorded: a tool variant's base names."""
    back = model.variant.back if model.variant is not None else {}
    return frozenset(back.get(n, n) for n in (t["function"]["name"] for t in tools))


@dataclass(frozen=True)
class PlanItem:
    """One case × model × trial, with the content id of its request to the model."""

    id: str
    case: Case
    model: ModelSpec
    trial: int
    messages: tuple[dict[str, Any], ...]
    """The opening messages sent to the model."""
    trials: int = 1
    """How many trials of this case the plan holds (the suite's, or --trials)."""
    tools: tuple[dict[str, Any], ...] = ()
    """Tool definitions (OpenAI format) offered in this item's requests."""
    first_key: str = ""
    """`request_key` of the item's first request, computed once with its id."""
    keys: RequestKeys | None = field(default=None, compare=False, repr=False)
    """The keys of a conversation's requests so far, shared by its user turns."""
    faults: tuple[Fault, ...] = ()
    """The faults its tool calls may meet: the case's, then those of the tools it offers."""
    names: tuple[tuple[dict[str, Any], ...], frozenset[str]] | None = field(
        default=None, compare=False, repr=False
    )
    """`offered_names` with the tools it was made of, once per set of offered tools by the plan
    (a copy of the item offering other tools, as a later user turn does, makes its own)."""

    @property
    def renamed(self) -> dict[str, str]:
        """Offered name -> base name of the tools its model's tool variant renames."""
        return self.model.variant.back if self.model.variant is not None else {}

    @property
    def offered_names(self) -> frozenset[str]:
        """The names of the tools it offers as its calls are recorded: base names."""
        if self.names is not None and self.names[0] is self.tools:
            return self.names[1]
        return offered_names(self.tools, self.model)

    @property
    def label(self) -> str:
        trial = f" (trial {self.trial}, trials 0-{self.trials - 1})" if self.trials > 1 else ""
        return f"case {self.case.name!r} on model {self.model.name!r}{trial}"


@dataclass(frozen=True)
class Plan:
    """Every (case, model, trial) a run does, in order, with the tools offered."""

    suite: Suite
    items: tuple[PlanItem, ...]
    tools: tuple[dict[str, Any], ...]
    """Tool definitions in OpenAI format, sent with every request."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite.name,
            "path": self.suite.path,
            "items": [
                {
                    "id": it.id,
                    "case": it.case.name,
                    "model": it.model.name,
                    "trial": it.trial,
                    "expected_calls": [c.tool for c in it.case.expected_calls],
                    "tags": list(it.case.tags),
                }
                for it in self.items
            ],
        }


def compile_plan(
    suite: Suite,
    *,
    cases: list[str] | None = None,
    models: list[str] | None = None,
    trials: int | None = None,
    shard: tuple[int, int] | None = None,
) -> Plan:
    """Every (case, model, trial) to run, filtered by case patterns, model names and shard."""
    tools = tuple(t.to_openai() for t in suite.tools)
    selected_models = _select_models(suite, models)
    chosen = select_cases(suite, cases)
    total = sum(len(selected_models) * (trials or c.trials) for c in chosen)
    limit = max_plan_items()  # counted before any is built, so a typo cannot exhaust memory
    if total > limit:
        raise UsageError(
            f"the plan has {total} items (cases × models × trials); the limit is "
            f"{limit}: run fewer trials or models, or split the suite"
        )
    items: list[PlanItem] = []
    names: dict[tuple[int, int], tuple[tuple[dict[str, Any], ...], frozenset[str]]] = {}
    """Offered names by (tools, model): the tuples live in the items, so their ids hold."""
    ids = _IdParts(suite)
    key_texts = [(model, _KeyText(model)) for model in selected_models]
    for case in chosen:
        messages, messages_json, *base_offered = ids.request(case)
        n_trials = trials or case.trials
        for m, (model, key_text) in enumerate(key_texts):
            offered, offered_json = ids.variant(case, model, base_offered)
            known = names.get((id(offered), id(model)))
            if known is None:
                known = names[(id(offered), id(model))] = (offered, offered_names(offered, model))
            for trial in range(n_trials):
                first = ids.openings.key(key_text, messages_json, offered_json, (m, trial))
                item_id = ids.item_id(case, first)
                items.append(
                    PlanItem(
                        item_id,
                        case,
                        model,
                        trial,
                        messages,
                        n_trials,
                        offered,
                        first,
                        faults=ids.faults(case),
                        names=known,
                    )
                )

    if shard:
        index, count = shard
        items = [it for it in items if int(it.id, 16) % count == index - 1]
    return Plan(suite, tuple(items), tools)


class _Openings:
    """The opening messages of cases, encoded, and their first requests' keys, once for each
    distinct opening: matrix rows share their texts (the same objects), and a 3 MB message in
    10,000 rows was encoded and hashed 10,000 times (30 GB of work for one review)."""

    _LONG = 4096
    """Texts at least this long are told apart by identity; shorter ones by value."""

    def __init__(self) -> None:
        self._json: dict[tuple[Any, ...], tuple[tuple[dict[str, Any], ...], str]] = {}
        self._keys: dict[tuple[int, str, tuple[int, int]], str] = {}
        self._kept: list[Any] = []
        """Every long text and encoding named by identity above, kept so no id is reused."""
        self._system: tuple[Message, dict[str, Any]] | None = None

    def of(self, case: Case) -> tuple[tuple[dict[str, Any], ...], str]:
        """The case's opening messages (as sent) and their canonical JSON text."""
        if not any(
            isinstance(m.content, str) and len(m.content) >= self._LONG for m in case.messages
        ):
            messages = tuple(self._sent(m) for m in case.messages)
            return messages, _encode(list(messages))
        ident = tuple(
            (m.role, id(m.content), m.tool_call_id, m.name, _encode(m.tool_calls))
            if isinstance(m.content, str) and len(m.content) >= self._LONG
            else (m.role, m.content, m.tool_call_id, m.name, _encode(m.tool_calls))
            for m in case.messages
        )
        known = self._json.get(ident)
        if known is None:
            messages = tuple(m.to_openai() for m in case.messages)
            known = self._json[ident] = (messages, _encode(list(messages)))
            self._kept.append(case.messages)
        return known

    def _sent(self, message: Message) -> dict[str, Any]:
        """The message as sent; a system message shared by cases (the suite's) made once, not
        once per case (the plan holds every item's opening messages)."""
        if message.role != "system":
            return message.to_openai()
        last = self._system
        if last is None or last[0] is not message:
            last = self._system = (message, message.to_openai())
        return last[1]

    def key(
        self, key_text: _KeyText, messages_json: str, tools_json: str, at: tuple[int, int]
    ) -> str:
        """`key_text.key(...)`, hashed once for each long opening, model and trial."""
        if len(messages_json) < self._LONG:
            return key_text.key(messages_json, tools_json, at[1])
        ident = (id(messages_json), tools_json, at)
        known = self._keys.get(ident)
        if known is None:
            known = self._keys[ident] = key_text.key(messages_json, tools_json, at[1])
            self._kept.append(messages_json)
        return known


class _IdParts:
    """What an item's content id is made of, per case: its opening request and, around the
    first request's key, the run settings (and a multi-turn case's later turns)."""

    def __init__(self, suite: Suite) -> None:
        self.suite = suite
        self.openings = _Openings()
        self._tools = tuple(t.to_openai() for t in suite.tools)
        self._by_name = {t.name: t.to_openai() for t in suite.tools}
        self._offered: dict[tuple[str, ...] | None, tuple[tuple[dict[str, Any], ...], str]] = {}
        self._tool_faults = {t.name: t.faults for t in suite.tools if t.faults}
        self._offered_faults: dict[Any, tuple[tuple[Fault, ...], list[str]]] = {}
        self._last: tuple[Case, tuple[tuple[Fault, ...], str]] | None = None
        self._all_names = tuple(t.name for t in suite.tools)
        self._variants: dict[Any, tuple[tuple[dict[str, Any], ...], str]] = {}
        # The id's payload, keys sorted: {"first": <hex key>, "max_turns": ..., "mode": ...}.
        self._tail = (
            f',"max_turns":{_encode(suite.run.max_turns)},"mode":{_encode(suite.run.mode)}}}'
        )

    def request(
        self, case: Case
    ) -> tuple[tuple[dict[str, Any], ...], str, tuple[dict[str, Any], ...], str]:
        """The opening messages and the tools offered, each with its encoding."""
        messages, messages_json = self.openings.of(case)
        key = tuple(case.tools) if case.tools is not None else None
        if key not in self._offered:
            offered = self._base_offered(case)
            self._offered[key] = (offered, _encode(list(offered)))
        offered, offered_json = self._offered[key]
        if case.described:  # text injected into descriptions: this case's own definitions
            offered = described(offered, case.described)
            offered_json = _encode(list(offered))
        return messages, messages_json, offered, offered_json

    def variant(
        self, case: Case, model: ModelSpec, base: list[Any]
    ) -> tuple[tuple[dict[str, Any], ...], str]:
        """The tools offered to `model` and their encoding: the case's, as its tool variant
        defines them (each variant's once per set of offered tools)."""
        offered, offered_json = base
        if model.variant is None:
            return offered, offered_json
        key = (model.variant.name, case.tools, case.described)
        known = self._variants.get(key)
        if known is None:
            tools = variant_tools(self._base_offered(case), model)
            if case.described:
                back = {b: n for n, b in model.variant.back.items()}
                tools = described(tools, tuple((back.get(t, t), x) for t, x in case.described))
            known = self._variants[key] = (tools, _encode(list(tools)))
        return known

    def _base_offered(self, case: Case) -> tuple[dict[str, Any], ...]:
        return (
            tuple(self._by_name[n] for n in case.tools) if case.tools is not None else self._tools
        )

    def faults(self, case: Case) -> tuple[Fault, ...]:
        """The faults the case's calls may meet: its own, then its offered tools' (a tool's
        faults concern only the cases that offer it)."""
        return self._faults_of(case)[0]

    def _faults_of(self, case: Case) -> tuple[tuple[Fault, ...], str]:
        """The case's faults and their text in its ids; each case's once (a plan asks per
        model and trial), each set of offered tools' once."""
        if not self._tool_faults and not case.faults:
            return (), ""
        if self._last is not None and self._last[0] is case:
            return self._last[1]
        added = tuple(n for t in case.turns for n in t.add_tools)
        key = (case.tools, added)
        tools = self._offered_faults.get(key)
        if tools is None:
            names = self._all_names if case.tools is None else case.tools
            faults = tuple(
                f for n in dict.fromkeys((*names, *added)) for f in self._tool_faults.get(n, ())
            )
            # Encoded once per set of offered tools: the text of a list is its items' texts
            # joined, so each case adds only its own faults' (as `_encode` of the whole list).
            tools = self._offered_faults[key] = (faults, [_encode(f.to_id()) for f in faults])
        every = case.faults + tools[0]
        own = [_encode(f.to_id()) for f in case.faults]
        text = "[" + ",".join([*own, *tools[1]]) + "]" if every else ""
        self._last = (case, (every, text))
        return every, text

    def item_id(self, case: Case, first: str) -> str:
        """The item's id from its first request's key.

        Stateful cases may open with the same request from different states: the case's
        name keeps their ids apart (not the state, so a changed state keeps the ids). Faults
        shape what the model reads, so they join the id (absent without any: ids stay)."""
        case_part = f'"case":{_encode(case.name)},' if self.suite.stateful else ""
        tail = self._tail
        faults, text = self._faults_of(case)
        if faults:  # the case's name too: a rate's draws depend on it
            tail = f',"fault_case":{_encode(case.name)},"faults":{text}{tail}'
        if case.multi_turn:  # the later user turns shape the answers too
            tail = tail[:-1] + conversation_id_part(case, self.suite) + "}"
        return _hash(f'{{{case_part}"first":"{first}"{tail}')


def variant_tools(
    offered: tuple[dict[str, Any], ...], model: ModelSpec
) -> tuple[dict[str, Any], ...]:
    """The definitions offered to `model`: the base tools, as its tool variant has them."""
    return model.variant.apply(offered) if model.variant is not None else offered


def described(
    offered: tuple[dict[str, Any], ...], injected: tuple[tuple[str, str], ...]
) -> tuple[dict[str, Any], ...]:
    """Tool definitions with injected text appended to the descriptions it names."""
    extra: dict[str, list[str]] = {}
    for tool, text in injected:
        extra.setdefault(tool, []).append(text)
    out = []
    for d in offered:
        fn = d["function"]
        more = extra.get(fn["name"])
        if more:
            text = "\n\n".join([fn.get("description") or "", *more]).strip()
            d = {**d, "function": {**fn, "description": text}}
        out.append(d)
    return tuple(out)


def trial_id(suite: Suite, case: Case, model: ModelSpec, trial: int) -> str:
    """The content id of one (case, model, trial), whatever trials the suite asks for: a
    recording of trial 3 is checked against trial 3's request even when the suite has one
    trial (the run said --trials)."""
    ids = _IdParts(suite)
    _messages, messages_json, *base = ids.request(case)
    _offered, offered_json = ids.variant(case, model, base)
    return ids.item_id(case, _KeyText(model).key(messages_json, offered_json, trial))


def select_cases(suite: Suite, patterns: list[str] | None) -> list[Case]:
    """The cases `--case` patterns choose (every case without patterns), in suite order; a
    UsageError naming the cases when no case matches."""
    if not patterns:
        return list(suite.cases)
    chosen = [c for c in suite.cases if _case_matches(c, patterns)]
    if not chosen:
        raise UsageError(
            f"no case matches {', '.join(patterns)}; "
            f"cases: {', '.join(c.name for c in suite.cases)}"
        )
    return chosen


def conversation_id_part(case: Case, suite: Suite) -> str:
    """What a multi-turn case adds to its items' ids (keys sorted after `mode`): the later
    turns' texts and, when a turn adds tools, the definitions each later turn adds; or the
    simulated user's settings and the request payload of its model."""
    if case.simulated_user is None:
        part = f',"turns":{_encode([t.user for t in case.turns[1:]])}'
        if any(t.add_tools for t in case.turns):  # absent otherwise: ids stay as they were
            by_name = {t.name: t for t in suite.tools}
            added = [[by_name[n].to_openai() for n in t.add_tools] for t in case.turns[1:]]
            part += f',"turns_tools":{_encode(added)}'
        if any(t.user_calls for t in case.turns):  # what the user did shapes the answers too
            part += (
                f',"user_calls":{_encode([[list(c) for c in t.user_calls] for t in case.turns])}'
            )
        return part
    sim = case.simulated_user
    player = next((m for m in suite.models if m.name == sim.model), None)
    settings = {
        "goal": sim.goal,
        "instructions": sim.instructions,
        "max_turns": sim.max_turns,
        "model": [player.model, player.params, player.provider] if player else sim.model,
        "persona": sim.persona,
        "stop_when": sim.stop_when,
    }
    if sim.tools:  # absent otherwise: ids stay as they were
        by_name = {t.name: t for t in suite.tools}
        settings["tools"] = [by_name[n].to_openai() for n in sim.tools if n in by_name]
    return f',"user":{_encode(settings)}'


def turn_tools(
    case: Case, first: tuple[dict[str, Any], ...], suite: Suite, model: ModelSpec | None = None
) -> list[tuple[dict[str, Any], ...]]:
    """The tools offered in each user turn of a scripted conversation: the first turn offers
    `first` (the item's), each later one what the turn before offered and its `add_tools` (as
    `model`'s tool variant defines them)."""
    by_name = {t.name: t for t in suite.tools} if any(t.add_tools for t in case.turns) else {}
    out: list[tuple[dict[str, Any], ...]] = []
    offered = first
    for k, turn in enumerate(case.turns):
        if k > 0 and turn.add_tools:
            added = tuple(by_name[n].to_openai() for n in turn.add_tools)
            offered = (*offered, *(variant_tools(added, model) if model else added))
        out.append(offered)
    return out


def user_models(suite: Suite) -> set[str]:
    """Names of the models that play a simulated user: they are not evaluated."""
    return {c.simulated_user.model for c in suite.cases if c.simulated_user is not None}


def _select_models(suite: Suite, names: list[str] | None) -> list[ModelSpec]:
    players = user_models(suite)
    if not names:
        return [m for m in suite.models if m.name not in players]
    known = {m.name: m for m in suite.models}
    out = []
    for name in names:
        variants = [m for m in suite.models if m.base_name == name and m.variant is not None]
        if name not in known and variants:  # the model's name: every variant of it
            out.extend(variants)
            continue
        if name not in known:
            raise UsageError(f"model {name!r} is not in the suite; models: {', '.join(known)}")
        if name in players:
            raise UsageError(
                f"model {name!r} plays the simulated user, so it is not evaluated; "
                f"models to evaluate: {', '.join(k for k in known if k not in players)}"
            )
        out.append(known[name])
    return out


def _case_matches(case: Case, patterns: list[str]) -> bool:
    """A pattern matches a case name (glob, case-insensitive substring) or one of its tags."""
    name = case.name.lower()
    for p in patterns:
        p_low = p.lower()
        if p_low in name or fnmatch.fnmatch(name, p_low) or p in case.tags:
            return True
    return False


def parse_shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise UsageError(f"shard= takes i/n, like 1/4; got {text!r}", params=["shard"]) from None
    if not (1 <= i <= n):
        raise UsageError(f"shard={text}: i must be between 1 and n", params=["shard"])
    return i, n
