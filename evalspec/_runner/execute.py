"""Execute a plan: each item is a conversation between a model and the simulated tools.

Items run concurrently under a limit. Each finished transcript is appended to the run
directory's transcripts.jsonl and flushed at once, so a crash or kill -9 loses no finished item
and `--resume` runs only what is missing. A `RunError` (no API key, endpoint down) stops the run;
a `ProviderError`, or any other failure of one item, fails only that item, whose transcript then
carries the error. On resume an errored item counts as missing and runs again.

The run directory also holds run.json (suite name and path, selection, shard), written before
the first item, so shards of one run can be recognised and merged.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from evalspec._plan import Earlier, Plan, PlanItem, RequestKeys, request_key
from evalspec._providers.base import ChatRequest, Provider, ProviderError
from evalspec._providers.calls import ModelCalls, model_endpoint, register_suite_secrets
from evalspec._runner.run_dir import (
    TRANSCRIPTS_FILE,
    ResumeState,
    Selection,
    read_manifest,
    recordings_path,
    resume_state,
    run_file,
    write_manifest,
)
from evalspec._runner.transcript_lines import StateLines
from evalspec._suite.endpoints import refuse_keys_in_clear
from evalspec._suite.limits import (
    MAX_CALLS_PER_CASE,
    MAX_TOOL_OUTPUT_CHARS_ENV,
    MAX_TRANSCRIPTS_BYTES_ENV,
    max_tool_output_chars,
    max_transcripts_bytes,
)
from evalspec._suite.model import ModelSpec, Suite
from evalspec._tools.faults import FaultPlan, stops
from evalspec._tools.faults import apply as apply_fault
from evalspec._tools.llm_sim import SimulatorMissing
from evalspec._tools.result import ToolResult
from evalspec._tools.stb_cache import ResponseCache
from evalspec._transcript import (
    ToolCall,
    Transcript,
    Usage,
    call_arguments,
    tool_output_chars,
)
from evalspec._util import redaction
from evalspec._util.errors import RunError, UsageError
from evalspec._util.files import FILE_MODE, NOFOLLOW, dumps_line
from evalspec._util.graph import GraphTooLarge
from evalspec._util.redaction import redact, secrets_from_env

if TYPE_CHECKING:
    from evalspec._providers.base import RecordMode

_OBSERVATION = json.JSONEncoder(ensure_ascii=False)

TOO_MANY_CALLS = "too_many_calls"
"""The finish reason of a case whose model asked for more tool calls than evalspec scores."""
STATE_TOO_LARGE = "state_too_large"
"""The finish reason of an item whose final state evalspec refused to copy."""
TOO_MUCH_OUTPUT = "too_much_tool_output"
"""The finish reason of a conversation whose tools answered more than MAX_TOOL_OUTPUT_CHARS."""
OVER_LIMIT = (TOO_MANY_CALLS, TOO_MUCH_OUTPUT, STATE_TOO_LARGE)
"""Finish reasons of a case stopped at one of evalspec's limits (review refuses them)."""
"""What a tool answered, as the text of its tool message (one encoder for every call)."""


@dataclass
class RunOptions:
    """How `run_plan` runs: recordings mode, concurrency, run directory, resume."""

    record: RecordMode = "auto"
    """auto: replay recorded answers, call for the rest; offline: replay only; record: refresh."""
    concurrency: int | None = None
    run_dir: Path | None = None
    resume: bool = False
    recordings: Path | None = None
    selection: Selection = field(default_factory=Selection)
    """What was selected (cases, models, trials, shard), kept in run.json for merging."""
    keep_transcripts: bool = True
    """False: the outcome lists no transcripts (a caller that scores them as they finish,
    through `on_done`, then never holds a whole run in memory)."""


@dataclass
class RunOutcome:
    """What `run_plan` did: the transcripts (unless streamed), and what was replayed or called."""

    transcripts: list[Transcript]
    run_dir: Path | None
    resumed: int = 0
    rerun: int = 0
    """Finished items run again on resume because a tool now answers them differently."""
    counts: dict[str, int] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    calls: ModelCalls | None = None
    """The run's call policy, for scoring (an LLM judge); None when it may call nothing."""


class Sink:
    """Appends transcripts to the run directory as they finish.

    Lines are written with one `write` on an O_APPEND descriptor, secrets scrubbed and lone
    surrogates escaped. In a run that may call a model (or a simulated user, a simulated tool)
    each is written the moment it finishes: it may have cost calls. With `hold` (a run that
    calls nothing: `--record offline`) lines wait for the next write, up to `HOLD_BYTES` (a
    write a line was a twentieth of a 50,000-case replay), and all are written when the run
    ends or is interrupted: a crash loses only answers a resume replays again for nothing. A
    torn last line (a crash, a full disk) stays where it is: on resume it is skipped with a
    note, and the next line starts on a line of its own.
    """

    HOLD_BYTES = 64 * 1024
    """With `hold`, the bytes of lines held before they are written together."""

    def __init__(self, run_dir: Path | None, *, frozen_states: bool = False, hold: bool = False):
        self.fd: int | None = None
        self._hold = hold
        self._states = StateLines() if frozen_states else None
        """With states never changed in place (the declared environment's), their
        collections are encoded once however many snapshots share them."""
        if run_dir is not None:
            run_dir.mkdir(parents=True, exist_ok=True)
            path = run_file(run_dir, TRANSCRIPTS_FILE)
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | NOFOLLOW, FILE_MODE)
            self._torn = _ends_torn(path)
            self._size = os.fstat(self.fd).st_size
        self._limit = max_transcripts_bytes()
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._last_case = ""
        """The case of the last line held (a failed write names it)."""

    def write(self, t: Transcript) -> None:
        if self.fd is None:
            return
        fields = t.to_dict()
        if self._states is not None and t.state is not None:
            text = self._states.line(fields, TRANSCRIPTS_FILE)
        else:
            text = dumps_line(fields, TRANSCRIPTS_FILE)
        line = redaction.scrub(text) + "\n"
        if self._torn and not self._held:
            line = "\n" + line
        data = line.encode("utf-8")
        if self._size + self._held_bytes + len(data) > self._limit:  # `score` and `--resume`
            self.flush()  # would refuse the file: what came before is saved, this is not
            raise UsageError(
                f"the transcript of {t.case!r} would take transcripts.jsonl past "
                f"{self._limit} bytes, the most `score` and `resume=` read, so the run stopped "
                f"before writing it; every transcript saved before is intact. Run fewer cases "
                f"(cases=, shard=) or raise {MAX_TRANSCRIPTS_BYTES_ENV}",
                params=["resume", "cases", "shard"],
            )
        self._held.append(data)
        self._held_bytes += len(data)
        self._last_case = t.case
        if not self._hold or self._held_bytes >= self.HOLD_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write the lines held so far."""
        if self.fd is None or not self._held:
            return
        data = b"".join(self._held) if len(self._held) > 1 else self._held[0]
        lines, self._held, self._held_bytes = len(self._held), [], 0
        try:
            written = os.write(self.fd, data)
            while written < len(data):
                written += os.write(self.fd, data[written:])
        except OSError as exc:
            self._torn = True
            earlier = f" (and of {lines - 1} held before it)" if lines > 1 else ""
            raise RunError(
                f"cannot save the transcript of {self._last_case!r}{earlier} "
                f"({exc.strerror or exc}); every transcript saved before is intact"
            ) from None
        self._size += len(data)
        self._torn = False

    def close(self, *, quiet: bool = False) -> None:
        """Write what is held and close; `quiet` (the run is ending with an error of its
        own): a failure to write is not raised over that error."""
        if self.fd is not None:
            try:
                self.flush()
            except RunError:
                if not quiet:
                    raise
            finally:
                os.close(self.fd)
                self.fd = None


def _ends_torn(path: Path) -> bool:
    """Whether the file's last byte is not a newline (a line cut by a crash)."""
    size = path.stat().st_size
    if not size:
        return False
    with path.open("rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) != b"\n"


def model_calls(suite: Suite, options: RunOptions) -> ModelCalls | None:
    """The run's call policy, or None when this run may call no model (--record offline)."""
    return None if options.record == "offline" else ModelCalls.for_run(suite.run, suite.models)


def make_providers(
    suite: Suite, options: RunOptions, calls: ModelCalls | None = None
) -> dict[str, Provider]:
    """One provider per model, each answering from the suite's recordings where it can.

    Every live call, the judge's and the simulator's included, goes through `calls`: one rate
    limiter, so `requests_per_minute` holds for the whole run, except that a model with its own
    `requests_per_minute` is held to that by its endpoint's limiter.
    """
    from evalspec._providers.recordings import RecordingProvider, Recordings

    recordings = Recordings(recordings_path(suite, options.recordings))
    calls = calls or ModelCalls.for_run(suite.run, suite.models)
    providers: dict[str, Provider] = {}
    for model in suite.models:
        providers[model.name] = RecordingProvider(
            recordings,
            live_factory(model, calls),
            mode=options.record,
        )
    return providers


def live_factory(model: ModelSpec, calls: ModelCalls) -> Callable[[], Provider]:
    def build() -> Provider:
        return calls.provider(model_endpoint(model), model.model)

    return build


async def run_item(item: PlanItem, plan: Plan, provider: Provider, simulator: Any) -> Transcript:
    """The agent loop: ask the model, answer its tool calls, repeat until it answers in text.

    In a stateful suite the transcript also records the state the conversation ended in."""
    if not plan.suite.stateful:
        return await _conversation(item, plan, provider, simulator)
    from evalspec._tools.environment import conversations

    conversation = conversations(plan.suite, simulator).open(item.case)
    t = await _conversation(item, plan, provider, conversation)
    return with_final_state(t, conversation)


def with_final_state(t: Transcript, conversation: Any) -> Transcript:
    """`t` with the state its conversation ended in; a state evalspec refuses to copy (a
    Python environment's graph past the budget, `_util/graph.py`) is the item's error, and
    the transcript keeps its calls (a replay meets the same refusal)."""
    try:
        return msgspec.structs.replace(t, state=conversation.snapshot())
    except GraphTooLarge as exc:
        why = f"case {t.case!r} on model {t.model!r}: the final state: {exc}"
        return msgspec.structs.replace(t, error=t.error or why, finish_reason=STATE_TOO_LARGE)


async def _conversation(
    item: PlanItem, plan: Plan, provider: Provider, simulator: Any
) -> Transcript:
    suite = plan.suite
    # The history's own dicts (nothing changes a sent message): the request keys reuse the
    # encoding of each message object they have seen.
    messages: list[dict[str, Any]] = list(item.messages)
    tools = list(item.tools)  # the plan resolved them: a case offering none offers none
    keys = item.keys  # a conversation's, shared by its user turns; None for one request
    back = item.renamed  # a tool variant's renamed tools are called by their offered names
    offered = item.offered_names
    calls: list[ToolCall] = []
    prompt = completion = 0
    latency = 0.0
    final: str | None = None
    finish: str | None = None
    turns = 0
    source = "live"
    max_turns = 1 if suite.run.mode == "single_turn" else suite.run.max_turns
    previous = keys.last if keys is not None else None  # the conversation's request before
    output_left = max_tool_output_chars() - tool_output_chars(messages)  # earlier turns' count too
    faults = _fault_plan(item, messages, back)
    for turn in range(max_turns):
        request = ChatRequest(
            key=_request_key(item, turn, messages, tools, keys),
            model=item.model.model,
            messages=tuple(messages),
            tools=tuple(tools),
            params=dict(item.model.params),
            label=item.label,
            continues=previous,
        )
        if keys is not None or max_turns > 1:  # a later request continues this one
            previous = Earlier(request.key, len(messages), request.tools)  # messages only grow
        if keys is not None:
            keys.last = previous
        try:
            response = await provider.complete(request)
        except ProviderError as exc:
            return _transcript(
                item,
                messages,
                calls,
                final,
                "error",
                prompt,
                completion,
                latency,
                turns,
                source,
                error=str(exc),
            )
        turns += 1
        source = "replay" if response.from_recording else "live"
        prompt += int(response.usage.get("prompt_tokens", 0) or 0)
        completion += int(response.usage.get("completion_tokens", 0) or 0)
        latency += response.latency_s
        message = dict(response.message)
        messages.append(message)
        finish = response.finish_reason
        tool_calls = message.get("tool_calls") or []
        if not tool_calls:
            final = message.get("content")
            break
        if len(calls) + len(tool_calls) > MAX_CALLS_PER_CASE:
            return _transcript(
                item,
                messages,
                calls,
                final,
                TOO_MANY_CALLS,
                prompt,
                completion,
                latency,
                turns,
                source,
                error=f"the model asked for {len(calls) + len(tool_calls)} tool calls in one "
                f"case; evalspec scores at most {MAX_CALLS_PER_CASE}, so the case stopped there",
            )
        for i, tc in enumerate(tool_calls):
            fn = tc.get("function") or {}
            name = str(fn.get("name", ""))
            name = back.get(name, name)  # cases, answers and scores know the base name
            raw = fn.get("arguments") or ""
            raw = raw if isinstance(raw, str) else json.dumps(raw)
            args = call_arguments(raw)
            call_id = tc.get("id") or f"call_{turn}_{i}"
            fault = faults.decide(name, args) if faults is not None and name in offered else None
            if fault is not None:
                result = apply_fault(
                    fault, None if stops(fault) else await simulator.call(name, args, raw)
                )
            elif name in offered:
                result = await simulator.call(name, args, raw)  # SimulatorMissing passes up
            else:  # a suite tool this case does not offer is as unknown as any other name
                available = ", ".join(sorted(t["function"]["name"] for t in tools))  # as shown
                result = ToolResult(
                    None,
                    f"unknown tool '{name}'; available tools: {available}",
                    "error:unknown_tool",
                )
            observation = result.text if result.text is not None else _observation(result)
            output_left -= len(observation)
            if output_left < 0:
                return _transcript(
                    item,
                    messages,
                    calls,
                    final,
                    TOO_MUCH_OUTPUT,
                    prompt,
                    completion,
                    latency,
                    turns,
                    source,
                    error=f"the tools answered more than {max_tool_output_chars()} characters "
                    f"in one conversation (at call {len(calls) + 1}, {name!r}), so the case "
                    f"stopped there; answer with less, or raise {MAX_TOOL_OUTPUT_CHARS_ENV}",
                )
            calls.append(
                ToolCall(
                    name=name,
                    arguments=args,
                    raw_arguments=raw,
                    id=call_id,
                    output=result.output,
                    error=result.error,
                    turn=turn,
                    fault=result.fault,
                )
            )
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": observation,
                }
            )
        if suite.run.mode == "single_turn":
            finish = finish or "tool_calls"
            break
    else:
        finish = "max_turns"
    return _transcript(
        item, messages, calls, final, finish, prompt, completion, latency, turns, source
    )


_RULE_TEXTS: OrderedDict[int, tuple[Any, str]] = OrderedDict()
"""A rule's output (the suite's own object, held here so its id is not reused) -> its text:
every call a rule answers reads the same text, encoded once, not once per call."""
_RULE_TEXTS_KEPT = 256


def _observation(result: ToolResult) -> str:
    """The text of the tool message for `result`."""
    if result.source != "rule" or result.error is not None:
        return _OBSERVATION.encode(result.observation())
    known = _RULE_TEXTS.get(id(result.output))
    if known is not None and known[0] is result.output:
        return known[1]
    text = _OBSERVATION.encode(result.output)
    _RULE_TEXTS[id(result.output)] = (result.output, text)
    if len(_RULE_TEXTS) > _RULE_TEXTS_KEPT:
        _RULE_TEXTS.popitem(last=False)
    return text


def _fault_plan(
    item: PlanItem, messages: list[dict[str, Any]], back: dict[str, str]
) -> FaultPlan | None:
    """The item's faults, counting the calls of earlier user turns (by their base names);
    None without faults."""
    if not item.faults:
        return None
    called = (
        str((tc.get("function") or {}).get("name", ""))
        for m in messages
        if m.get("role") == "assistant"
        for tc in m.get("tool_calls") or ()
    )
    earlier = (back.get(n, n) for n in called)
    return FaultPlan(item.faults, item.case.name, item.trial, earlier)


def _request_key(
    item: PlanItem,
    turn: int,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    keys: RequestKeys | None,
) -> str:
    """The request's content id; the plan computed the first one already (when it offered
    exactly these tools), which saves encoding every tool schema again."""
    if turn == 0 and item.first_key:
        return item.first_key
    if keys is not None:
        return keys.key(messages, tools)
    return request_key(item.model, messages, tools, item.trial)


def _transcript(
    item: PlanItem,
    messages: list[dict[str, Any]],
    calls: list[ToolCall],
    final: str | None,
    finish: str | None,
    prompt: int,
    completion: int,
    latency: float,
    turns: int,
    source: str,
    error: str | None = None,
) -> Transcript:
    return Transcript(
        item_id=item.id,
        case=item.case.name,
        model=item.model.name,
        trial=item.trial,
        messages=tuple(messages),
        tool_calls=tuple(calls),
        final_answer=final,
        finish_reason=finish,
        usage=Usage(prompt, completion),
        latency_s=round(latency, 4),
        turns=turns,
        error=error,
        source=source,
    )


def _failed(item: PlanItem, error: str, source: str) -> Transcript:
    """The transcript of an item that failed before its conversation could be kept."""
    return _transcript(item, list(item.messages), [], None, "error", 0, 0, 0.0, 0, source, error)


async def run_one(
    item: PlanItem,
    plan: Plan,
    provider: Provider,
    simulator: Any,
    secrets: list[str],
    missing: list[str],
    user_provider: Provider | None = None,
) -> Transcript:
    """One item, never raising for its own failure: the error is in its transcript, redacted.

    The one item runner of every engine (this process, or a worker of a Ray cluster); an item
    that needs a simulator answer the run may not ask for is added to `missing`. A multi-turn
    case runs as a conversation (`conversation.py`), its simulated user on `user_provider`.
    """
    try:
        if item.case.multi_turn:
            from evalspec._runner.conversation import run_conversation

            tools = simulator
            if plan.suite.stateful:  # one environment for the whole conversation
                from evalspec._tools.environment import conversations

                tools = conversations(plan.suite, simulator).open(item.case)
            t = await run_conversation(
                item, plan, provider, tools, user_provider, answer=_conversation
            )
            if plan.suite.stateful:
                t = with_final_state(t, tools)
        else:
            t = await run_item(item, plan, provider, simulator)
    except (RunError, asyncio.CancelledError):
        raise
    except GraphTooLarge as exc:  # a turn's state (the final one is `with_final_state`'s)
        t = _failed(item, f"{item.label}: a turn's state: {exc}", "live")
        t = msgspec.structs.replace(t, finish_reason=STATE_TOO_LARGE)
    except SimulatorMissing as exc:  # needs a run that may call the simulator
        missing.append(f"{item.label}: {exc}")
        t = _failed(item, str(exc), "replay")
    except Exception as exc:  # one item's failure must not end the run
        problem = redact(f"{type(exc).__name__}: {exc}", secrets)
        t = _failed(item, f"{item.label}: unexpected failure ({problem})", "live")
    if t.error:
        t = msgspec.structs.replace(t, error=redact(t.error, secrets))
    return t


async def run_plan_async(
    plan: Plan,
    options: RunOptions | None = None,
    *,
    providers: dict[str, Provider] | None = None,
    on_done: Callable[[Transcript], None] | None = None,
    calls: ModelCalls | None = None,
    resumed: ResumeState | None = None,
) -> RunOutcome:
    """Run every item not yet finished in the run directory; return all transcripts.

    `calls` is the run's call policy when the caller made it (to score with the same one);
    by default it is made here from the suite (none with --record offline). `resumed` is what
    the caller already read of the run directory (`resume_state`), else it is read here.
    Secrets the run registers are the run's (`redaction.secret_scope`)."""
    with redaction.secret_scope():
        return await _run_plan(
            plan, options, providers=providers, on_done=on_done, calls=calls, resumed=resumed
        )


async def _run_plan(
    plan: Plan,
    options: RunOptions | None,
    *,
    providers: dict[str, Provider] | None,
    on_done: Callable[[Transcript], None] | None,
    calls: ModelCalls | None,
    resumed: ResumeState | None,
) -> RunOutcome:
    from evalspec._tools.mcp_exec import live_executor
    from evalspec._tools.simulated import ToolSimulator

    options = options or RunOptions()
    suite = plan.suite
    if options.record != "offline":
        refuse_keys_in_clear(suite, os.environ)
    resumed = resumed or resume_of(plan, options)
    finished = resumed.kept
    done_ids = set(finished)
    todo = (it for it in plan.items if it.id not in done_ids)  # taken lazily by the workers
    if options.run_dir is not None and not (options.resume and read_manifest(options.run_dir)):
        write_manifest(options.run_dir, suite, options.selection)
    register_suite_secrets(suite)
    secrets = secrets_from_env(m.api_key_env for m in suite.models)
    calls = calls or model_calls(suite, options)
    base_dir = Path(suite.path).resolve().parent
    _check_simulator_caches(suite, base_dir)
    own_providers = providers is None
    providers = providers or make_providers(suite, options, calls)
    simulator = ToolSimulator(
        suite.tools, base_dir, calls=calls, mcp=live_executor(suite, options.record)
    )
    # A run that may call nothing holds its lines a while: none of them cost a call.
    sink = Sink(options.run_dir, frozen_states=suite.environment is None, hold=calls is None)
    left = sum(1 for it in plan.items if it.id not in done_ids)
    width = min(options.concurrency or suite.run.concurrency, left)
    keep = options.keep_transcripts
    results: dict[str, Transcript] = dict(finished) if keep else {}
    outcome = RunOutcome(
        [], options.run_dir, resumed=len(finished), rerun=len(resumed.stale), calls=calls
    )
    del finished, resumed  # without keep_transcripts, resumed transcripts are not held either

    async def worker() -> None:
        """Runs items one after another: `width` workers, not one task per item, so a
        50,000-item plan costs `width` coroutines, not 50,000."""
        for item in todo:
            provider = providers[item.model.name]
            player = item.case.simulated_user
            user_provider = providers.get(player.model) if player is not None else None
            t = await run_one(
                item, plan, provider, simulator, secrets, outcome.missing, user_provider
            )
            if keep:
                results[item.id] = t
            sink.write(t)
            if on_done:
                on_done(t)

    tasks = [asyncio.create_task(worker()) for _ in range(width)]
    ended = False
    try:
        if tasks:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                exc = task.exception()
                if exc is not None:
                    raise exc
        ended = True
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        try:
            # On the way out with an error (Ctrl-C, a failed write), the held lines are still
            # written where they can be, and the first error is the one said.
            sink.close(quiet=not ended)
        finally:
            await simulator.aclose()
            if own_providers:
                for p in providers.values():
                    await p.aclose()
            for p in providers.values():
                for k, v in getattr(p, "counts", {}).items():
                    outcome.counts[k] = outcome.counts.get(k, 0) + v
                outcome.missing.extend(getattr(p, "missing", []))
    outcome.transcripts = [results[it.id] for it in plan.items if it.id in results]
    return outcome


def resume_of(plan: Plan, options: RunOptions) -> ResumeState:
    """What a run keeps of its run directory: nothing unless it resumes."""
    if options.resume and options.run_dir is not None:
        return resume_state(options.run_dir, plan)
    return ResumeState()


def _check_simulator_caches(suite: Suite, base_dir: Path) -> None:
    """Refuse, before any call, a simulator cache setting that names a file of another kind."""
    from evalspec._tools.llm_sim import LLMSimulatorBackend

    backend = LLMSimulatorBackend(base_dir)
    for tool in suite.tools:
        if tool.simulate is not None:
            ResponseCache(backend.cache_path(tool)).check()


def run_plan(plan: Plan, options: RunOptions | None = None, **kwargs: Any) -> RunOutcome:
    """Synchronous wrapper for scripts and the CLI."""
    with redaction.secret_scope():
        return asyncio.run(run_plan_async(plan, options, **kwargs))
