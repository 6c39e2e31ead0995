"""Three models side by side from the example recordings, then the HTML report of them.

    .venv/bin/python examples/three_models.py [OUT_DIR]

The shipped recordings answer for one model. Two more are derived from its transcripts so that
there is something to compare: `variant-typos` changes one string argument in every other case,
`variant-no-tools` answers every third case in text without calling a tool. They are made-up
answers, not models: the point is to show the report, not to rank anything. Each suite's
transcripts are scored as any run's are, and `evalspec view` opens the page.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from msgspec.structs import replace as changed

from evalspec.api import (
    compile_plan,
    load_suite,
    run_plan,
    score,
    write_reports,
    write_runs_page,
    write_transcripts,
)
from evalspec.records import ModelSpec, Price, ReportFiles, RunOptions, Transcript

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("slack", "weather", "math")
VARIANTS = ("variant-typos", "variant-no-tools")
PRICES = {
    "gpt-4o-mini": Price(0.15, 0.6),
    "variant-typos": Price(0.5, 1.5),
    "variant-no-tools": Price(0.05, 0.2),
}


def _typo(value: str) -> str:
    return value[:-1] if len(value) > 3 else value + "x"


def with_typo(t: Transcript) -> Transcript:
    """The first string argument of the first call loses its last letter, in the messages too."""
    for i, call in enumerate(t.tool_calls):
        args = dict(call.arguments or {})
        key = next((k for k, v in args.items() if isinstance(v, str)), None)
        if key is None:
            continue
        args[key] = _typo(args[key])
        raw = json.dumps(args, ensure_ascii=False)
        calls = list(t.tool_calls)
        calls[i] = changed(call, arguments=args, raw_arguments=raw)
        messages = [_retyped(m, call.id, raw) for m in t.messages]
        return changed(t, tool_calls=tuple(calls), messages=tuple(messages))
    return t


def _retyped(message: dict[str, Any], call_id: str, raw: str) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if not calls:
        return message
    out = []
    for c in calls:
        if c.get("id") == call_id:
            c = {**c, "function": {**c["function"], "arguments": raw}}
        out.append(c)
    return {**message, "tool_calls": out}


def without_tools(t: Transcript) -> Transcript:
    """Answers in text at once: the conversation stops after the user's message."""
    answer = "I can't reach that service right now; please try again later."
    kept = [m for m in t.messages if m.get("role") in ("system", "user")]
    kept.append({"role": "assistant", "content": answer})
    return changed(t, tool_calls=(), messages=tuple(kept), final_answer=answer, turns=1)


def three_model_run(suite_name: str, out: Path) -> Path:
    """Score the recorded model and two variants of it; write results.json and transcripts."""
    path = ROOT / "suites" / f"{suite_name}.yaml"
    suite = load_suite(path)
    outcome = run_plan(compile_plan(suite), RunOptions(record="offline"))
    base = suite.models[0]
    models = [replace(base, price=PRICES[base.name])] + [
        ModelSpec(name=v, model=v, params=dict(base.params), price=PRICES[v]) for v in VARIANTS
    ]
    suite = replace(suite, models=tuple(models))
    transcripts = list(outcome.transcripts)
    for n, t in enumerate(sorted(outcome.transcripts, key=lambda t: t.case)):
        typo = with_typo(t) if n % 2 == 0 else t
        plain = without_tools(t) if n % 3 == 0 else t
        transcripts.append(changed(typo, model=VARIANTS[0], item_id=t.item_id + "-typos"))
        transcripts.append(changed(plain, model=VARIANTS[1], item_id=t.item_id + "-no-tools"))
    report = score(suite, transcripts)
    out.mkdir(parents=True, exist_ok=True)
    write_reports(report, ReportFiles(results=out / "results.json"))
    write_transcripts(out / "transcripts.jsonl", transcripts)
    return out


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "runs" / "three-models"
    for name in SUITES:
        run = three_model_run(name, out / name)
        page = write_runs_page([run], run / "report.html")
        print(f"{name}: {page}  (evalspec view {run})")


if __name__ == "__main__":
    main()
