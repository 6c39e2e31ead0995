"""Traced conversations written as a suite (one case per conversation) and its transcripts.

Each conversation becomes a case: its user messages the case's turns, the calls the model made
in answer to each its expected calls (critics suggested from the arguments, as capture mode
suggests them), or none with `capture: true` (left for `evalspec capture accept` after a run).
Each tool the conversations call becomes a suite tool answering every recorded call with what
the tool answered then. The conversation itself becomes a transcript, so `evalspec score` judges
what happened in production without calling a model.

Written as the traces are read: cases and each tool's answers go to temporary files beside the
suite, and the suite is put together from them at the end, so memory does not grow with the
number of conversations. Personal data is redacted from each conversation before any of it is
written.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from evalspec._interop.capture import Run, comment_text, expectation, literal, readable
from evalspec._interop.pii import Redactor
from evalspec._interop.records import Refusal, errored_transcript, refused_case
from evalspec._interop.traces import Call, Conversation
from evalspec._providers.base import ChatRequest, ChatResponse
from evalspec._transcript import ToolCall, Transcript, UserTurn
from evalspec._util.files import dumps_line

DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
"""libyaml's dumper where installed: ten times faster for the many small items written."""
NO_ANSWER = "no answer to these arguments was recorded in the traces"
_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}


@dataclass
class ToolSeen:
    """What the conversations say of one tool: its definition, or the arguments it got."""

    definition: dict[str, Any] | None = None
    properties: dict[str, str | None] = field(default_factory=dict)
    rules: Path | None = None


@dataclass
class Written:
    """What `write_trace_suite` wrote."""

    cases: int = 0
    refused: list[Refusal] = field(default_factory=list)
    model: str = ""


@dataclass
class SuiteWriter:
    """Collects conversations into the parts of a suite (see the module docstring)."""

    name: str
    model: str
    capture: bool
    redactor: Redactor
    source: str
    work: Path
    transcripts: IO[str] | None
    cases: IO[str]
    tools: dict[str, ToolSeen] = field(default_factory=dict)
    count: int = 0
    refused: list[Refusal] = field(default_factory=list)
    answers: AnswerStore | None = None
    """With recordings asked for: each case's answers, turn by turn (on disk)."""
    longest: int = 0
    """The most model answers in one conversation: the suite's `max_turns`."""

    def add(self, conv: Conversation) -> None:
        """One conversation: its case, its tools' answers and its transcript, redacted."""
        conv = redacted(conv, self.redactor)
        self.model = self.model or conv.model or "traced"
        turns = user_turns(conv)
        for definition_name, definition in conv.tools.items():
            self.tool(definition_name).definition = definition
        for _, calls, _ in turns:
            for call in calls:
                self.record_answer(call)
        self.write_case(case_dict(conv, turns, self.capture, self.parameters(), self.source))
        steps = steps_of(conv)
        self.longest = max(self.longest, sum(len(s) for s in steps))
        if self.answers is not None:
            self.answers.put(case_name(conv), steps)
        if self.transcripts is not None:
            line = dumps_line(transcript(conv, turns, self.model).to_dict(), "transcripts")
            self.transcripts.write(line + "\n")
        self.count += 1

    def tool(self, name: str) -> ToolSeen:
        if name not in self.tools:
            rules = self.work / f"tool-{len(self.tools)}.yaml"
            self.tools[name] = ToolSeen(rules=rules)
        return self.tools[name]

    def parameters(self) -> dict[str, dict[str, Any]]:
        return {name: tool_parameters(seen) for name, seen in self.tools.items()}

    def record_answer(self, call: Call) -> None:
        seen = self.tool(call.name)
        if not isinstance(call.arguments, dict):
            return
        for key, value in call.arguments.items():
            kind = _JSON_TYPES.get(type(value), "object" if isinstance(value, dict) else None)
            if seen.properties.get(key, kind) != kind:
                kind = None  # calls disagree on its type: any type
            seen.properties[key] = kind
        rule: dict[str, Any] = {"when": call.arguments}
        rule.update({"error": call.error} if call.error else {"output": call.output})
        assert seen.rules is not None
        with seen.rules.open("a", encoding="utf-8") as fh:
            fh.write(_items([literal(rule)], 6))

    def write_case(self, case: dict[str, Any]) -> None:
        # A capture case in block style: `capture accept` writes where each key stands.
        self.cases.write(_items([literal(case)], 2, flow=False if self.capture else None))

    def write_refused(self, refusals: Iterable[Refusal], model: str) -> int:
        """Each refused record as a case that fails, and (with transcripts) an errored one."""
        named: set[str] = set()
        for refusal in refusals:
            if refusal.record in named:
                continue
            named.add(refusal.record)
            case = refused_case(refusal)
            self.write_case(case)
            if self.transcripts is not None:
                why = str(refusal)
                t = errored_transcript(f"trace:{refusal.record}", case["name"], model, why, SOURCE)
                self.transcripts.write(dumps_line(t.to_dict(), "transcripts") + "\n")
        return len(named)

    def suite_text(self, out: IO[str]) -> None:
        """The suite, from its parts: header, models, tools with their answers, cases."""
        out.write(
            f"# Imported from {comment_text(self.source)} by `evalspec import traces`:\n"
            "# one case per traced conversation. Review it: the expected calls are what\n"
            "# happened in production, not necessarily what is right.\n"
        )
        head = {
            "suite": self.name,
            "models": [{"name": self.model, "model": self.model}],
            "run": {"max_turns": min(MAX_TURNS, max(DEFAULT_TURNS, self.longest))},
        }
        head = literal(head)
        out.write(
            yaml.safe_dump(
                head, sort_keys=False, allow_unicode=readable(head), default_flow_style=None
            )
        )
        out.write("tools:\n" if self.tools else "tools: []\n")  # no call in any conversation
        for name, seen in self.tools.items():
            definition = seen.definition or {}
            tool = {
                "name": name,
                "description": definition.get("description") or f"{name} (from traces)",
                "parameters": tool_parameters(seen),
            }
            out.write(_items([literal(tool)], 2))
            out.write("    responses:\n")
            if seen.rules is not None and seen.rules.exists():
                with seen.rules.open(encoding="utf-8") as fh:
                    for line in fh:
                        out.write(line)
            out.write(_items([{"error": NO_ANSWER}], 6))
        out.write("cases:\n")


SOURCE = "import:otel"
DEFAULT_TURNS, MAX_TURNS = 8, 100
"""The suite language's default and largest `run.max_turns`."""

Step = tuple[str, tuple[Call, ...]]
"""One answer of the model: its text and its calls."""


def steps_of(conv: Conversation) -> list[list[Step]]:
    """The model's answers, turn by turn."""
    out: list[list[Step]] = []
    for message in conv.messages:
        if message.role == "user":
            out.append([])
        elif out and message.role == "assistant":
            out[-1].append((message.text, tuple(message.calls)))
    return out


class AnswerStore:
    """Each case's answers, turn by turn, in a temporary database on disk (gone once
    closed): recording the traced answers keeps no conversation in memory."""

    def __init__(self) -> None:
        # "": a private database in a file deleted on close; one thread at a time uses it
        import sqlite3  # only when needed: its import costs memory

        self.db = sqlite3.connect("", check_same_thread=False)
        self.db.execute("CREATE TABLE answers (name TEXT PRIMARY KEY, steps TEXT)")

    def put(self, case: str, steps: list[list[Step]]) -> None:
        rows = [
            [[text, [[c.id, c.name, c.arguments] for c in calls]] for text, calls in turn]
            for turn in steps
        ]
        self.db.execute(
            "INSERT OR REPLACE INTO answers VALUES (?, ?)", (case, json.dumps(rows, default=str))
        )

    def get(self, case: str) -> list[list[Step]]:
        found = self.db.execute("SELECT steps FROM answers WHERE name = ?", (case,)).fetchone()
        rows = json.loads(found[0]) if found else []
        return [
            [(text, tuple(Call(i, n, a) for i, n, a in calls)) for text, calls in turn]
            for turn in rows
        ]

    def close(self) -> None:
        self.db.close()


_LABEL = re.compile(r"^case ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") on model ")


class TraceAnswers:
    """A stand-in model that answers each case's requests with what the traced model
    answered (`evalspec import traces --record` writes its answers as the recordings)."""

    def __init__(self, answers: AnswerStore) -> None:
        self.answers = answers

    async def complete(self, request: ChatRequest) -> ChatResponse:
        match = _LABEL.match(request.label)
        case = ast.literal_eval(match.group(1)) if match else ""
        turns = self.answers.get(case) or [[]]  # read again for each request: memory stays flat
        users = [i for i, m in enumerate(request.messages) if m.get("role") == "user"]
        steps = turns[min(max(len(users) - 1, 0), len(turns) - 1)]
        after = request.messages[users[-1] :] if users else ()
        n = sum(1 for m in after if m.get("role") == "assistant")
        text, calls = steps[n] if n < len(steps) else ("", ())
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if not calls:
            message["content"] = text
            return ChatResponse(message, "stop", {}, 0.0)
        message["tool_calls"] = [
            {
                "id": c.id or f"call_{n}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": _text(c.arguments)},
            }
            for i, c in enumerate(calls)
        ]
        return ChatResponse(message, "tool_calls", {}, 0.0)

    async def aclose(self) -> None:
        return None


def _text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _items(values: list[Any], indent: int, flow: bool | None = None) -> str:
    """YAML list items at `indent` spaces (`flow` None: small mappings on one line)."""
    text = yaml.dump(
        values,
        Dumper=DUMPER,
        sort_keys=False,
        allow_unicode=readable(values),
        width=100,
        default_flow_style=flow,
    )
    pad = " " * indent
    return "".join(pad + line + "\n" for line in text.splitlines())


def tool_parameters(seen: ToolSeen) -> dict[str, Any]:
    """The declared parameters, else the ones the calls used (each with the type they agree
    on), none required: a call's arguments are judged by the case, not the schema."""
    if seen.definition and isinstance(seen.definition.get("parameters"), dict):
        params = dict(seen.definition["parameters"])
        if params.get("type") == "object" or "properties" in params:
            return params
    properties = {k: ({"type": t} if t else {}) for k, t in seen.properties.items()}
    return {"type": "object", "properties": properties}


def redacted(conv: Conversation, redactor: Redactor) -> Conversation:
    """The conversation with every text in it redacted."""
    if not redactor.rules:
        return conv
    conv.trace = redactor.text(conv.trace)  # it names the case
    conv.system = redactor.text(conv.system)
    conv.tools = {name: redactor.value(d) for name, d in conv.tools.items()}  # examples in them
    for message in conv.messages:
        message.text = redactor.text(message.text)
        message.response = redactor.value(message.response)
        for call in message.calls:
            call.arguments = redactor.value(call.arguments)
            call.output = redactor.value(call.output)
            call.error = redactor.text(call.error) if call.error else None
    return conv


def redacted_refusals(refused: list[Refusal], redactor: Redactor) -> list[Refusal]:
    """Refusals as printed and written into the suite: their trace ids and reasons quote the
    file, so they are redacted like the conversations."""
    if not redactor.rules:
        return refused
    return [
        dataclasses.replace(r, record=redactor.text(r.record), reason=redactor.text(r.reason))
        for r in refused
    ]


Turn = tuple[str, list[Call], str | None]
"""(what the user said, the calls made in answer, the model's last text answer)."""


def user_turns(conv: Conversation) -> list[Turn]:
    """The conversation split at each user message: a turn's answer is the last text the
    model wrote without calling anything."""
    out: list[list[Any]] = []
    for message in conv.messages:
        if message.role == "user":
            out.append([message.text, [], None])
        elif out and message.role == "assistant":
            out[-1][1].extend(message.calls)
            if message.text and not message.calls:
                out[-1][2] = message.text
    return [(user, calls, answer) for user, calls, answer in out]


def case_dict(
    conv: Conversation,
    turns: list[Turn],
    capture: bool,
    parameters: dict[str, dict[str, Any]],
    source: str,
) -> dict[str, Any]:
    """The case of one conversation (`capture`: with no expectations, for capture review)."""
    case: dict[str, Any] = {
        "name": case_name(conv),
        "description": f"{where(conv)} in {source}, line {conv.line}",
    }
    if conv.system:
        case["system"] = conv.system
    run = Run(
        "trace",
        tuple(tuple((c.name, json.dumps(c.arguments)) for c in calls) for _, calls, _ in turns),
    )
    expects = [expectation([run], k, parameters)[0] for k in range(len(turns))]
    if capture:
        case["capture"] = True
    if len(turns) == 1:
        case["user"] = turns[0][0]
        if not capture:
            case["expect"] = expects[0]
        return case
    case["turns"] = [
        {"user": user, **({} if capture else {"expect": expects[k]})}
        for k, (user, _, _) in enumerate(turns)
    ]
    return case


def case_name(conv: Conversation) -> str:
    return f"conversation {conv.trace}" if conv.grouped else f"trace {conv.trace}"


def where(conv: Conversation) -> str:
    """Which trace the case came from, or which conversation over how many traces."""
    return f"{case_name(conv)} ({conv.traces} traces)" if conv.grouped else case_name(conv)


def transcript(conv: Conversation, turns: list[Turn], model: str) -> Transcript:
    """What happened in the conversation, as evalspec records a run of its case."""
    multi = len(turns) > 1
    calls = []
    for k, (_, made, _) in enumerate(turns):
        for call in made:
            arguments = call.arguments if isinstance(call.arguments, dict) else None
            raw = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
            calls.append(
                ToolCall(
                    name=call.name,
                    arguments=arguments,
                    raw_arguments=raw,
                    id=call.id,
                    output=None if call.error else call.output,
                    error=call.error,
                    user_turn=k if multi else None,
                )
            )
    return Transcript(
        item_id=f"{'conversation' if conv.grouped else 'trace'}:{conv.trace}",
        case=case_name(conv),
        model=model,
        tool_calls=tuple(calls),
        final_answer=turns[-1][2] if turns else None,
        user_turns=tuple(UserTurn(u, final_answer=a) for u, _, a in turns) if multi else (),
        source=SOURCE,
    )


def work_dir(beside: Path) -> tempfile.TemporaryDirectory[str]:
    """A temporary folder beside the suite for its parts (removed at the end, whatever
    happens)."""
    return tempfile.TemporaryDirectory(dir=beside.parent, prefix=f".{beside.name}.")
