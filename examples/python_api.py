"""The Python API in a page: run the Slack suite offline, then re-score it under a changed rubric.

    .venv/bin/python examples/python_api.py

The run replays the example recordings beside the suite (no network, no API key). Re-scoring
reads only the transcripts, so trying another rubric costs nothing: no model is called.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from evalspec.api import compile_plan, diff, load_suite, run_plan, score
from evalspec.records import RunOptions

SUITE = Path(__file__).resolve().parent.parent / "suites" / "slack.yaml"


def main() -> None:
    suite = load_suite(SUITE)
    plan = compile_plan(suite)
    outcome = run_plan(plan, RunOptions(record="offline"))  # replay only: never call a model
    report = score(suite, outcome.transcripts)

    print(f"{suite.name}: {len(plan.items)} items, {outcome.counts}")
    for case in report.cases:
        print(f"  {case.status.upper():5} {case.score:.3f}  {case.case}")
    for m in report.models:
        print(f"{m.model}: {m.passed} passed, {m.warned} warned, {m.failed} failed")

    # Weigh picking the right tool three times as much as each argument. Each case carries its
    # own rubric (suite defaults merged with case overrides), so change it case by case.
    stricter = replace(
        suite,
        cases=tuple(
            replace(c, rubric=replace(c.rubric, tool_selection_weight=3.0)) for c in suite.cases
        ),
    )
    rescored = score(stricter, outcome.transcripts)
    print("\nwith tool_selection_weight 3.0 (same transcripts, no model call):")
    for before, after in zip(report.cases, rescored.cases, strict=True):
        mark = "" if after.score == before.score else f"  (was {before.score:.3f})"
        print(f"  {after.status.upper():5} {after.score:.3f}  {after.case}{mark}")

    # The same comparison `evalspec diff` prints, as data.
    comparison = diff(suite, stricter, outcome.transcripts)
    print(f"\ndiff: {comparison.summary()}")


if __name__ == "__main__":
    main()
