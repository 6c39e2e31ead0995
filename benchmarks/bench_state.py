"""What a stateful tool call costs, and that the cost does not grow with the number of cases.

Run: ``.venv/bin/python benchmarks/bench_state.py [--small 10] [--large 1000] [--repeat 3]``

One suite (written to a temporary folder): a state of 100 records, tools whose `behavior:`
reads and changes it (a precondition scanning the records, an append, a set with `where`, a
`$select` response), and one stateless rule tool as the baseline. Each case is a conversation of
5 calls. Measured, in-process, alternating the sizes so machine noise hits both alike:

  (a) run path: a fresh conversation per case (`Conversations.open`), its 5 calls answered as
      the runner answers them (schema check, preconditions, effects, response), final snapshot;
  (b) scoring: `Scorer.score_all` on the recorded transcripts, which replays every call through
      a fresh environment and judges `expect.state`.

Goals: per-call cost at --large cases / per-call cost at --small cases <= 1.5 for (a) and (b):
state handling per call is independent of how many cases a run holds. Also printed: the cost of
a stateful call against a stateless rule call measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, goal, machine

sys.path.insert(0, str(REPO))

from evalspec._scoring.scorer import Scorer
from evalspec._tools.environment import Conversations
from evalspec._tools.simulated import ToolSimulator
from evalspec._transcript import ToolCall, Transcript
from evalspec.api import load_suite

RECORDS = 100
CALLS = [
    ("list_events", '{"date": "2026-03-07"}'),
    ("create_event", '{"title": "Sync", "date": "2026-09-01", "attendee": "Contact 42"}'),
    ("cancel_event", '{"id": 7}'),
    ("create_event", '{"title": "Sync", "date": "2026-09-01", "attendee": "Nobody"}'),
    ("list_events", '{"date": "2026-09-01"}'),
]

SUITE = """\
suite: bench-state
models: [m]
state:
  contacts: [%(contacts)s]
  events: [%(events)s]
tools:
  - name: create_event
    parameters:
      type: object
      properties: {title: {type: string}, date: {type: string}, attendee: {type: string}}
      required: [title, date, attendee]
    behavior:
      preconditions:
        - {path: /contacts, contains: {name: "${args.attendee}"}, error: "no ${args.attendee}"}
        - {path: /events, not_contains: {date: "${args.date}", status: confirmed}}
      effects:
        - append: /events
          value: {id: "${count/events}", title: "${args.title}", date: "${args.date}",
                  attendee: "${args.attendee}", status: confirmed}
      response: {$select: /events, $where: {date: "${args.date}"}, $first: true}
  - name: list_events
    parameters: {type: object, properties: {date: {type: string}}, required: [date]}
    behavior:
      response: {$select: /events, $where: {date: "${args.date}"}}
  - name: cancel_event
    parameters: {type: object, properties: {id: {type: integer}}, required: [id]}
    behavior:
      preconditions:
        - {path: /events, contains: {id: "${args.id}", status: confirmed}}
      effects:
        - {set: /events, where: {id: "${args.id}"}, at: /status, value: cancelled}
  - name: get_weather
    parameters: {type: object, properties: {city: {type: string}}}
    responses:
      - {when: {city: Paris}, output: {temp: 21}}
      - {output: {temp: 15}}
cases:
%(cases)s
"""


def write_suite(folder: Path, n_cases: int) -> Path:
    contacts = ", ".join(f"{{name: Contact {i}}}" for i in range(RECORDS))
    events = ", ".join(
        f'{{id: {i}, title: E{i}, date: "2026-03-{i % 28 + 1:02d}", attendee: Contact {i}, '
        "status: confirmed}"
        for i in range(RECORDS)
    )
    cases = "\n".join(
        f"  - name: case {i}\n    user: Do it {i}.\n"
        "    expect:\n      state: {/events/7/status: cancelled, /events/100/date: '2026-09-01'}\n"
        "      unchanged: [/contacts]"
        for i in range(n_cases)
    )
    path = folder / f"state-{n_cases}.yaml"
    path.write_text(
        SUITE % {"contacts": contacts, "events": events, "cases": cases}, encoding="utf-8"
    )
    return path


def transcripts(suite, calls) -> list[Transcript]:
    out = []
    for case in suite.cases:
        recorded = tuple(ToolCall(name, None, raw, f"c{i}") for i, (name, raw) in enumerate(calls))
        out.append(Transcript(f"id-{case.name}", case.name, "m", tool_calls=recorded))
    return out


def run_path(suite, calls) -> float:
    """Seconds to answer every case's calls as the runner does, one conversation per case."""
    import json

    simulator = ToolSimulator(suite.tools, Path(suite.path).parent)
    conversations = Conversations(suite, simulator)
    parsed = [(name, json.loads(raw), raw) for name, raw in calls]

    async def go() -> None:
        for case in suite.cases:
            conversation = conversations.open(case)
            for name, args, raw in parsed:
                await conversation.call(name, args, raw)
            conversation.snapshot()

    start = time.perf_counter()
    asyncio.run(go())
    return time.perf_counter() - start


def scoring(suite, recorded) -> float:
    start = time.perf_counter()
    results = Scorer(suite).score_all(recorded)
    elapsed = time.perf_counter() - start
    assert all(r.status == "pass" for r in results), results[0].reason
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=10)
    ap.add_argument("--large", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"bench_state: {machine()}; state of {RECORDS} records, {len(CALLS)} calls per case")
    with tempfile.TemporaryDirectory(prefix="bench-state-") as tmp:
        suites = {n: load_suite(write_suite(Path(tmp), n)) for n in (args.small, args.large)}
        parsed = {n: transcripts(s, CALLS) for n, s in suites.items()}
        # Fill the transcripts' arguments as a run records them.
        import json

        from msgspec.structs import replace

        for n in parsed:
            parsed[n] = [
                replace(
                    t,
                    tool_calls=tuple(
                        replace(c, arguments=json.loads(c.raw_arguments)) for c in t.tool_calls
                    ),
                )
                for t in parsed[n]
            ]
        stateless = [("get_weather", '{"city": "Paris"}')] * len(CALLS)
        per_call: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for n, suite in suites.items():
                calls = n * len(CALLS)
                per_call.setdefault(f"run {n}", []).append(run_path(suite, CALLS) / calls)
                per_call.setdefault(f"score {n}", []).append(scoring(suite, parsed[n]) / calls)
            per_call.setdefault("stateless", []).append(
                run_path(suites[args.large], stateless) / (args.large * len(CALLS))
            )
    med = {k: statistics.median(v) for k, v in per_call.items()}
    for k, v in med.items():
        runs = ", ".join(f"{x * 1e6:.1f}" for x in per_call[k])
        print(f"  per call, {k}: {v * 1e6:.1f} µs (runs: {runs})")
    print(
        f"  a stateful call costs {med[f'run {args.large}'] / med['stateless']:.1f}x a "
        "stateless rule call (run path)"
    )
    goal(
        f"run path per call, {args.large} / {args.small} cases",
        med[f"run {args.large}"] / med[f"run {args.small}"],
        "<=",
        1.5,
    )
    goal(
        f"scoring replay per call, {args.large} / {args.small} cases",
        med[f"score {args.large}"] / med[f"score {args.small}"],
        "<=",
        1.5,
    )


if __name__ == "__main__":
    main()
