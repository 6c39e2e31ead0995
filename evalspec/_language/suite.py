"""The suite file: its top-level keys, and the named pieces (`$defs`) the areas declare."""

from __future__ import annotations

from dataclasses import replace

from evalspec._language.cases import (
    CAPTURE,
    CASE,
    MESSAGE,
    PASS_RULE,
    SIMULATED_USER,
    TRIALS,
    TURN,
    USER_CALL,
    USER_CHECK,
    USER_JUDGE,
)
from evalspec._language.critics import CRITIC, EVALUATOR, RUBRIC
from evalspec._language.expect import (
    EXPECT,
    EXPECTED_CALL,
    FINAL_ANSWER,
    JUDGE_CRITERION,
    JUDGE_RUBRIC,
    JUDGE_SEES,
)
from evalspec._language.faults import FAULT, INJECTION
from evalspec._language.models import BUDGET, MODEL, SUITE_BUDGET
from evalspec._language.tools import SIMULATED_RESPONSE, TOOL, TOOL_EDIT, VARIANT
from evalspec._language.vocabulary import Arr, Bool, Enum, Int, Map, Num, Obj, Ref, Str

SUITE = Obj(
    description=(
        "An evalspec suite: tools, what users ask, the tool calls a good model makes, "
        "and how strictly to judge them."
    ),
    additional=False,
    required=("suite", "cases"),
    properties={
        "$schema": Str(
            description="Schema URL for editors (optional).",
            examples=("../schemas/suite.schema.json",),
        ),
        "suite": Str(description="Name of the suite.", min_length=1, examples=("slack",)),
        "description": Str(
            description="What this suite checks.", examples=("Slack messaging tools.",)
        ),
        "labels": Ref(
            "labels_file",
            description=(
                "The labels file the reports' judge calibration reads, relative to the suite file."
            ),
        ),
        "system": Str(
            description="System message sent first in every case.",
            examples=("You are a helpful assistant with Slack tools.",),
        ),
        "models": Arr(
            description="Models to evaluate side by side.",
            min_items=1,
            items=Ref("model"),
            examples=(["gpt-4o-mini"],),
        ),
        "run": Obj(
            description="How to run the suite.",
            additional=False,
            examples=({"mode": "agent", "max_turns": 6, "concurrency": 8},),
            properties={
                "mode": Enum(
                    ("agent", "single_turn"),
                    description=(
                        "agent: feed tool outputs back until a final answer; "
                        "single_turn: score the first answer's calls only."
                    ),
                    default="agent",
                    examples=("agent",),
                ),
                "max_turns": Int(
                    description="Most model answers per case in agent mode.",
                    default=8,
                    minimum=1,
                    maximum=100,
                    examples=(8,),
                ),
                "concurrency": Int(
                    description="Requests in flight at once.",
                    default=8,
                    minimum=1,
                    maximum=1024,
                    examples=(8,),
                ),
                "timeout": Num(
                    description="Seconds to wait for one answer.",
                    default=60,
                    exclusive_minimum=0,
                    maximum=86400,
                    examples=(60,),
                ),
                "retries": Int(
                    description=(
                        "Retries of a failed request (429, 5xx, timeouts), with "
                        "exponential backoff."
                    ),
                    default=4,
                    minimum=0,
                    maximum=20,
                    examples=(4,),
                ),
                "requests_per_minute": Num(
                    description="Rate limit for all requests of the run.",
                    minimum=0.001,
                    maximum=1000000,
                    examples=(500,),
                ),
                "recordings": Str(
                    description=(
                        "JSONL file of recorded model answers, relative to the suite "
                        "(default: <suite>.recordings.jsonl beside it)."
                    ),
                    examples=("recordings/slack.jsonl",),
                ),
            },
        ),
        "rubric": Ref(
            "rubric",
            description=(
                "Scoring rules for every case: pass/warn/fail thresholds and what "
                "fails a case outright."
            ),
        ),
        "critics": Map(
            Ref("critic"),
            description=(
                "Critics by argument name for every case (a case's own critics take precedence)."
            ),
            examples=({"user_name": "binary", "message": {"similarity": 0.8, "weight": 0.5}},),
        ),
        "trials": replace(TRIALS, default=1),
        "pass_rule": replace(PASS_RULE, default="all"),
        "budgets": Obj(
            description=(
                "Budgets checked like expectations: `case` for every trial of every "
                "case (a case's own `budget:` overrides keys of it), `suite` for each "
                "model's whole run."
            ),
            additional=False,
            examples=(
                {"case": {"max_tokens": 20000, "max_cost": 0.05}, "suite": {"max_cost": 2.0}},
            ),
            properties={
                "case": Ref(
                    "budget",
                    description=(
                        "Limits every trial of every case must stay within (a case's "
                        "own `budget:` overrides keys of it)."
                    ),
                ),
                "suite": Ref("suite_budget", description="Limits for each model's whole run."),
            },
        ),
        "gate": Obj(
            description=(
                "When `diff`, `review` and `compare` fail (exit 1). Review reads the "
                "gate of the base version: a pull request cannot loosen its own gate."
            ),
            additional=False,
            examples=({"mode": "significant_drop", "min_pass_rate": 0.8},),
            properties={
                "mode": Enum(
                    ("any_regression", "significant_drop", "none"),
                    description=(
                        "any_regression: any case that passed and now fails (cases "
                        "marked `flaky: true` excepted); significant_drop: the pass "
                        "rate fell and the paired exact test says the drop is not "
                        "noise; none: only the thresholds below gate."
                    ),
                    default="any_regression",
                    examples=("significant_drop",),
                ),
                "min_pass_rate": Num(
                    description=(
                        "Fail when a model's pass rate (trials passed over trials run) "
                        "after the change is below this."
                    ),
                    minimum=0,
                    maximum=1,
                    examples=(0.8,),
                ),
                "max_drop": Num(
                    description=(
                        "Fail when a model's pass rate falls by more than this (a "
                        "fraction: 0.05 is 5 points)."
                    ),
                    minimum=0,
                    maximum=1,
                    examples=(0.05,),
                ),
                "confidence": Num(
                    description=(
                        "Confidence of every interval and test (the test's "
                        "significance level is 1 − confidence)."
                    ),
                    default=0.95,
                    exclusive_minimum=0.5,
                    exclusive_maximum=1,
                    examples=(0.95,),
                ),
                "power": Num(
                    description="Power for the cases or trials needed to detect a difference.",
                    default=0.8,
                    exclusive_minimum=0,
                    exclusive_maximum=1,
                    examples=(0.8,),
                ),
            },
        ),
        "embeddings": Obj(
            description="The sentence-embedding model of similarity critics.",
            additional=False,
            examples=({"model": "all-MiniLM-L6-v2"},),
            properties={
                "model": Str(
                    description=(
                        "sentence-transformers model name or path; default: the "
                        "bundled all-MiniLM-L6-v2."
                    ),
                    examples=("all-MiniLM-L6-v2",),
                ),
                "cache_dir": Str(
                    description="Where embeddings are cached.", examples=(".evalspec/embeddings",)
                ),
            },
        ),
        "vars": Obj(
            description="Variables for {{ }} templates anywhere in the suite.",
            examples=({"user": "johndoe"},),
        ),
        "state": Obj(
            description=(
                "The world the tools start from (any JSON object). Tools with "
                "`behavior:` read and change it, one copy per conversation; "
                "`expect.state` judges where it ends. A case's own `state:` is merged "
                "over it key by key."
            ),
            examples=({"contacts": [{"name": "Jane Doe"}], "events": []},),
        ),
        "environment": Obj(
            description=(
                "Answer every tool call with a tool environment written in Python, "
                "registered by a plugin (kind `environment`), instead of the tools' "
                "`responses` and `behavior`. It starts from `state:` and is asked for "
                "its state after each conversation."
            ),
            additional=False,
            required=("kind",),
            examples=({"kind": "bank", "params": {"currency": "EUR"}},),
            properties={
                "kind": Str(
                    description="The registered environment's name.",
                    min_length=1,
                    examples=("bank",),
                ),
                "params": Obj(
                    description="Options the environment takes (its plugin says which).",
                    examples=({"currency": "EUR"},),
                ),
                "validate_arguments": Bool(
                    description=(
                        "Refuse calls whose arguments break the tool's schema before "
                        "the environment sees them (the default). false hands every "
                        "call to the environment as the model sent it, as BFCL runs "
                        "its multi-turn calls: an unknown tool or arguments that are "
                        "not a JSON object are still refused."
                    ),
                    default=True,
                    examples=(False,),
                ),
            },
        ),
        "tools": Arr(
            description="Tools the model may call.",
            items=Ref("tool"),
            examples=(
                [
                    {
                        "name": "get_weather",
                        "description": "Weather for a city.",
                        "parameters": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                        },
                    }
                ],
            ),
        ),
        "variants": Arr(
            description=(
                "Versions of the suite's tools to run every case against, side by side: each "
                "model runs each case once per variant (as `MODEL@VARIANT`), paired by case "
                "and trial, so `evalspec compare RUN` says which version's tools models use "
                "better. The first variant is the baseline."
            ),
            min_items=1,
            max_items=20,
            items=Ref("variant"),
            examples=([{"name": "v1"}, {"name": "v2", "lock": "calc.v2.tools.lock.json"}],),
        ),
        "cases": Arr(
            description="What users ask, and what a good model does.",
            min_items=1,
            items=Ref("case"),
            examples=(
                [
                    {
                        "name": "weather in Paris",
                        "user": "How warm is it in Paris?",
                        "expect": {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
                    }
                ],
            ),
        ),
    },
)
"""A suite file."""

LABELS_FILE = Str(
    description=(
        "The people's verdicts the judges are held against (JSON Lines, see evalspec "
        "calibrate): a path relative to the suite file, beside it or below it. Default: "
        "<suite>.labels.jsonl beside the suite; --labels of run and score names another."
    ),
    min_length=1,
    examples=("helpdesk.labels.jsonl", "labels/helpdesk.labels.jsonl"),
)
"""Where a suite's labels are (read, never written: held inside the suite's folder)."""

DEFS = {
    "critic": CRITIC,
    "rubric": RUBRIC,
    "message": MESSAGE,
    "expected_call": EXPECTED_CALL,
    "final_answer": FINAL_ANSWER,
    "expect": EXPECT,
    "turn": TURN,
    "simulated_user": SIMULATED_USER,
    "evaluator": EVALUATOR,
    "simulated_response": SIMULATED_RESPONSE,
    "tool": TOOL,
    "case": CASE,
    "model": MODEL,
    "budget": BUDGET,
    "suite_budget": SUITE_BUDGET,
    "fault": FAULT,
    "injection": INJECTION,
    "capture": CAPTURE,
    "variant": VARIANT,
    "tool_edit": TOOL_EDIT,
    "judge_rubric": JUDGE_RUBRIC,
    "judge_criterion": JUDGE_CRITERION,
    "judge_sees": JUDGE_SEES,
    "user_call": USER_CALL,
    "user_check": USER_CHECK,
    "user_judge": USER_JUDGE,
    "labels_file": LABELS_FILE,
}
"""The named pieces, in the order the schema lists them."""
