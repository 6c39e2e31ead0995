"""A multi-turn conversation: user turns sent in order over one conversation.

Each user turn is answered by the same agent loop as a single request (`run_item`), started
from the whole conversation so far: the model's earlier answers and tool traffic stay in the
history, and one tool object answers every turn's calls (a tool environment that keeps state
carries it across turns). The user's turns come from the case (`turns:`) or from a simulated
user (`user_simulator.py`). A scripted turn's requests offer the tools offered so far: the
item's, and those the turn and earlier ones add (`add_tools:`).

After each user turn the transcript records the turn (its text, its source, the answer that
ended it) and, when the tools keep a state (an object with a `snapshot()` method, or the
`snapshot` callable given), what the turn changed in it (a JSON Patch, `state_patch.py`); the
state the conversation ended in is the transcript's `state`. Each tool call is tagged with its
user turn.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Literal

import msgspec

from evalspec._plan import Plan, PlanItem, RequestKeys, turn_tools
from evalspec._providers.base import Provider, ProviderError
from evalspec._runner.user_simulator import UserSimulator, observed, over_output, user_call
from evalspec._suite.limits import MAX_CALLS_PER_CASE, max_tool_output_chars
from evalspec._tools.state_patch import changes
from evalspec._transcript import ToolCall, Transcript, Usage, UserTurn, tool_output_chars

Answer = Callable[[PlanItem, Plan, Provider, Any], Awaitable[Transcript]]
"""The agent loop: answers the last user message of an item's messages (`run_item`)."""
Snapshot = Callable[[], Any]
"""Returns the tools' state (a JSON value, a copy that later calls do not change): taken
before the first user turn and after each, the transcript's user turns record what changed."""


async def run_conversation(
    item: PlanItem,
    plan: Plan,
    provider: Provider,
    tools: Any,
    user_provider: Provider | None = None,
    *,
    answer: Answer,
    snapshot: Snapshot | None = None,
) -> Transcript:
    """Run a multi-turn case's conversation; the transcript carries every user turn.

    `answer` is the agent loop that answers one user turn (`execute.run_item`)."""
    case = item.case
    if snapshot is None and callable(getattr(tools, "snapshot", None)):
        snapshot = tools.snapshot
    simulated = _simulator(item, plan, user_provider, tools)
    offers = turn_tools(case, item.tools, plan.suite, item.model)  # a turn may add (`add_tools`)
    history: list[dict[str, Any]] = [dict(m) for m in item.messages]
    keys = RequestKeys(item.model, item.trial)  # each message encoded once, not once a turn
    calls: list[ToolCall] = []
    user_turns: list[UserTurn] = []
    prompt = completion = answers = 0
    latency = 0.0
    final: str | None = None
    finish: str | None = None
    error: str | None = None
    source = "live"
    stop: str | None = None
    origin: Literal["scripted", "simulated"] = "scripted"
    index = 0
    user_spent = 0  # characters the user's own tools answered (the output budget counts them)
    state = snapshot() if snapshot is not None else None
    while True:
        if simulated is None:
            if index >= len(case.turns):
                break
            text, origin = case.turns[index].user, "scripted"
            mine = await _scripted_calls(case.turns[index].user_calls, tools, plan)
            user_spent += sum(len(observed(c)) for c in mine)
            if user_spent + tool_output_chars(history) > max_tool_output_chars():
                error, finish, stop = over_output(len(mine), mine[-1].name), "error", "error"
                break
            if index > 0:  # the first turn's text already ends the case's messages
                history.append({"role": "user", "content": text})
        else:
            left = max_tool_output_chars() - tool_output_chars(history) - user_spent
            simulated.output_left = left
            try:
                said, stop = await simulated.next_message(history)
                user_spent += left - simulated.output_left
            except ProviderError as exc:
                error, finish, stop = f"the simulated user: {exc}", "error", "error"
                break
            if said is None:
                if simulated.calls and user_turns:  # calls made just before it stopped
                    after = tuple(simulated.calls)
                    user_turns[-1] = msgspec.structs.replace(user_turns[-1], calls_after=after)
                break
            text, origin, mine = said, "simulated", tuple(simulated.calls)
            history.append({"role": "user", "content": text})
        first_key = item.first_key if index == 0 and simulated is None else ""
        offered = offers[index] if index < len(offers) else item.tools
        turn_item = replace(
            item, messages=tuple(history), first_key=first_key, keys=keys, tools=offered
        )
        part = await answer(turn_item, plan, provider, tools)
        calls.extend(
            msgspec.structs.replace(c, turn=c.turn + answers, user_turn=index)
            for c in part.tool_calls
        )
        history = list(part.messages)
        prompt += part.usage.prompt_tokens
        completion += part.usage.completion_tokens
        latency += part.latency_s
        answers += part.turns
        final, finish, source = part.final_answer, part.finish_reason, part.source
        before, state = state, snapshot() if snapshot is not None else None
        changed = changes(before, state) if snapshot is not None else None
        user_turns.append(UserTurn(text, origin, part.final_answer, changed, calls=mine))
        index += 1
        if part.error:
            error, stop = part.error, "error"
            break
        if len(calls) > MAX_CALLS_PER_CASE:
            error, stop = (
                f"the model made {len(calls)} tool calls in one conversation; evalspec scores "
                f"at most {MAX_CALLS_PER_CASE}, so the conversation stopped there",
                "error",
            )
            del calls[MAX_CALLS_PER_CASE:]  # a transcript holds no more calls than are scored
            break
    if simulated is not None and not user_turns and error is None:
        error = "the simulated user ended the conversation before saying anything"
        finish = "error"
    if stop and user_turns:
        user_turns[-1] = msgspec.structs.replace(user_turns[-1], stop=stop)
    return Transcript(
        item_id=item.id,
        case=case.name,
        model=item.model.name,
        trial=item.trial,
        messages=tuple(history),
        tool_calls=tuple(calls),
        final_answer=final,
        finish_reason=finish,
        usage=Usage(prompt, completion),
        latency_s=round(latency, 4),
        turns=answers,
        error=error,
        source=source,
        user_turns=tuple(user_turns),
        user_usage=None if simulated is None else simulated.usage(),
    )


def _simulator(
    item: PlanItem, plan: Plan, provider: Provider | None, tools: Any
) -> UserSimulator | None:
    sim = item.case.simulated_user
    if sim is None:
        return None
    player = next((m for m in plan.suite.models if m.name == sim.model), None)
    if player is None or provider is None:
        raise ProviderError(f"{item.label}: no provider for the simulated user {sim.model!r}")
    own = user_tools(plan, sim.tools)
    return UserSimulator(sim, player, provider, item.trial, item.label, tools=own, world=tools)


def user_tools(plan: Plan, names: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    """The definitions of the user's own tools, in the order the suite names them."""
    by_name = {t.name: t for t in plan.suite.tools}
    return tuple(by_name[n].to_openai() for n in names if n in by_name)


async def _scripted_calls(
    wanted: tuple[tuple[str, dict[str, Any]], ...], tools: Any, plan: Plan
) -> tuple[ToolCall, ...]:
    """A scripted user's own calls of one turn, run on the shared world in order."""
    if not wanted:
        return ()
    own = user_tools(plan, tuple(name for name, _ in wanted))
    return tuple(
        [
            await user_call(tools, own, name, json.dumps(args), i)
            for i, (name, args) in enumerate(wanted)
        ]
    )
