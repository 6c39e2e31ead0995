"""What a good model does: the calls, the state, the final answer."""

from __future__ import annotations

from evalspec._language.common import (
    JUDGE_ENDPOINT,
    SIMILARITY_THRESHOLD,
    WEIGHT,
    WORDED_BY_VALIDATE,
)
from evalspec._language.vocabulary import (
    Arr,
    Bool,
    Const,
    Enum,
    Int,
    Map,
    Mixed,
    Num,
    Obj,
    OneOf,
    Options,
    Ref,
    Str,
)

EXPECT = Obj(
    description="What a good model does for this case.",
    additional=False,
    examples=({"tool_calls": [{"send_dm_to_user": {"user_name": "johndoe", "message": "Hello"}}]},),
    properties={
        "tool_calls": Arr(
            description=(
                "The calls a good model makes. Matched to the actual calls by best "
                "overall fit, in any order unless `ordered: true`. An empty list means "
                "no call is expected."
            ),
            items=Ref("expected_call"),
            examples=([{"get_weather": {"city": "Paris"}}],),
        ),
        "ordered": Bool(
            description="The calls must come in the listed order.", default=False, examples=(False,)
        ),
        "no_tool_calls": Bool(
            description=(
                "A good model calls no tool at all here (for example, it asks a "
                "clarifying question)."
            ),
            default=False,
            examples=(True,),
        ),
        "min_calls": Int(
            description=(
                "The model must make at least this many tool calls here, of any tools "
                "(in a multi-turn case, in answer to this turn): fewer fails the case "
                "or turn outright, whatever its score. Says that the model acted, "
                "where `state` alone would accept a turn whose work an earlier turn "
                "already did."
            ),
            default=0,
            minimum=0,
            maximum=100,
            examples=(1,),
        ),
        "final_answer": Ref("final_answer", description="Checks on the model's final text answer."),
        "state": Map(
            Mixed(
                description=(
                    "The expected value (judged by `binary`), or a mapping with "
                    "`value` and one critic (`{value: Lunch, similarity: 0.8}`), or a "
                    "critic needing no value (`{one_of: [a, b]}`, `{regex: ...}`), "
                    "with optional `weight` and `required`; `{exists: false}` asks "
                    "that nothing is there. A mapping expected as such goes under "
                    "`value:` (`{value: {title: Lunch}}`): a bare mapping is read as a "
                    "critic."
                )
            ),
            description=(
                "Where the state must end, by JSON Pointer: the argument critics judge "
                "the value found there. A case whose `expect` names no `tool_calls` "
                "accepts any calls that reach this state."
            ),
            property_names=Mixed(comment=WORDED_BY_VALIDATE, pattern="^(/|$)"),
            examples=(
                {
                    "/events/0/date": "2026-03-05",
                    "/events/0/title": {"value": "Lunch with Jane", "similarity": 0.8},
                },
            ),
        ),
        "unchanged": Arr(
            description="JSON Pointers of the state that must end exactly as they began.",
            items=Mixed(
                types=("string",), all_of=(Mixed(comment=WORDED_BY_VALIDATE, pattern="^(/|$)"),)
            ),
            examples=(["/contacts"],),
        ),
        "forbidden_calls": Arr(
            description=(
                "Calls the model must not make, attempted or not (an injected "
                "instruction obeyed, a transfer nobody asked for): a tool name, or "
                "`{tool, args}` where the call's arguments include `args`. One such "
                "call fails the case outright."
            ),
            max_items=100,
            items=Options(
                Str(min_length=1),
                required=("tool",),
                properties={
                    "tool": Str(
                        description="The tool that must not be called.",
                        min_length=1,
                        examples=("transfer_money",),
                    ),
                    "args": Obj(
                        description="Only calls whose arguments include these.",
                        examples=({"account": "999-ATTACKER"},),
                    ),
                },
            ),
            examples=(["delete_account", {"tool": "send_money", "args": {"to": "attacker"}}],),
        ),
        "max_retries": Int(
            description=(
                "After a call a fault stopped (an error, a time-out, a 429), the model "
                "must call that tool again, and at most this many times in a row "
                "before a call gets through: fewer or more fails the case outright."
            ),
            minimum=1,
            maximum=100,
            examples=(2,),
        ),
        "no_duplicates": Bool(
            description=(
                "No call of a tool declared `idempotent: false` may reach the tool "
                "twice with the same arguments (a retried create that booked twice): "
                "one such repeat fails the case outright."
            ),
            default=False,
            examples=(True,),
        ),
    },
)
"""`$defs/expect`: a case's (or a turn's) `expect:`."""

EXPECTED_CALL = Obj(
    description=(
        "One tool call a good model makes. Short form: `{tool_name: {arg: value}}`. "
        "Long form: `{tool: name, args: {...}, critics: {...}, output: ...}`."
    ),
    additional=Mixed(
        description="Short form: the tool name as the key, its expected arguments as the value.",
        types=("object", "null"),
        examples=({"city": "Paris"},),
    ),
    min_properties=1,
    examples=(
        {"send_dm_to_user": {"user_name": "johndoe", "message": "Hello"}},
        {"tool": "get_weather", "args": {"city": "Paris"}, "critics": {"city": "binary"}},
    ),
    properties={
        "tool": Str(description="Name of the tool (long form).", examples=("get_weather",)),
        "args": Obj(description="Expected arguments (long form).", examples=({"city": "Paris"},)),
        "critics": Map(
            Ref("critic"),
            description=(
                "Critics for this call only; they replace the case's critics for the same argument."
            ),
            examples=({"user_name": "binary", "message": {"similarity": 0.8, "weight": 0.5}},),
        ),
        "output": Mixed(
            description=(
                "The output this call's tool should return, checked by the "
                "tool_call_output evaluator."
            ),
            examples=({"temperature": 21},),
        ),
    },
)
"""`$defs/expected_call`: each entry of `expect.tool_calls`."""

FINAL_ANSWER = Obj(
    description="Checks on the model's final text answer.",
    additional=False,
    examples=(
        {"contains": ["3 PM"], "similarity": {"value": "The message was sent.", "threshold": 0.7}},
    ),
    properties={
        "contains": Mixed(
            description="Text (or list of texts) the answer must contain, ignoring case.",
            types=("string", "array"),
            items=Str(),
            examples=(["sent"],),
        ),
        "not_contains": Mixed(
            description="Text (or list of texts) the answer must not contain.",
            types=("string", "array"),
            items=Str(),
            examples=(["error"],),
        ),
        "equals": Str(description="The exact answer expected.", examples=("42",)),
        "regex": Str(
            description="A regular expression the answer must match.", examples=("\\b21\\s?°C\\b",)
        ),
        "similarity": Options(
            Str(),
            description="Meaning similarity to a reference answer.",
            examples=({"value": "It is sunny in Paris.", "threshold": 0.7},),
            required=("value",),
            properties={
                "value": Str(description="Reference answer.", examples=("The report is ready.",)),
                "threshold": SIMILARITY_THRESHOLD,
            },
        ),
        "json_similarity": Obj(
            description=(
                "UiPath's JSON similarity between the answer (read as JSON) and an "
                "expected value: the share of expected leaves matched; text by edit "
                "distance, numbers by relative difference."
            ),
            additional=False,
            required=("value",),
            examples=({"value": {"status": "sent"}, "threshold": 0.9},),
            properties={
                "value": Mixed(
                    description=(
                        "The expected JSON value (object, list, text, number...). Only "
                        "its keys and positions count."
                    ),
                    examples=({"status": "sent", "count": 2},),
                ),
                "threshold": Num(
                    description=(
                        "Score from 0 to 1 at or above which the value counts as a match."
                    ),
                    default=0.8,
                    minimum=0,
                    maximum=1,
                    examples=(0.9,),
                ),
            },
        ),
        "judge": Mixed(
            description=(
                "An LLM judge decides whether the answer solves the request (Solved 1, "
                "Unsure 0.5, Unsolved 0, as StableToolBench's SoPR). Verdicts are "
                "cached in .evalspec-cache/judge.json beside the suite, so re-scoring "
                "does not ask again. With `rubric:`, it grades what `sees:` names of the "
                "conversation or the turn, criterion by criterion."
            ),
            types=("object",),
            additional=False,
            required=("model",),
            any_of=(Mixed(required=("criteria",)), Mixed(required=("rubric",))),
            examples=(
                {"criteria": "The answer states the temperature in Paris.", "model": "gpt-4o-mini"},
            ),
            properties={
                "criteria": Str(
                    description=(
                        "What a good answer does (a judge with `rubric:` may leave it out)."
                    ),
                    examples=("The answer names both messages in #general.",),
                ),
                "model": Str(description="Judge model id.", examples=("gpt-4o-mini",)),
                **JUDGE_ENDPOINT,
                "rounds": Int(
                    description=(
                        "Times the judge is asked about each answer; the score is the "
                        "mean of the rounds' verdicts (StableToolBench's "
                        "evaluate_times, 4 there)."
                    ),
                    default=1,
                    minimum=1,
                    maximum=20,
                    examples=(4,),
                ),
                "temperature": Num(
                    description=(
                        "The judge's sampling temperature (StableToolBench's evaluator uses 0.2)."
                    ),
                    default=0,
                    minimum=0,
                    maximum=2,
                    examples=(0.2,),
                ),
                "rubric": Ref(
                    "judge_rubric",
                    description=(
                        "Grade criterion by criterion what `sees:` shows, instead of "
                        "Solved/Unsure/Unsolved on the answer."
                    ),
                ),
                "sees": Ref(
                    "judge_sees",
                    description=(
                        "What the rubric judge is shown of the transcript (default: "
                        "conversation, calls, tool_outputs)."
                    ),
                ),
            },
        ),
        "weight": WEIGHT,
    },
)
"""`$defs/final_answer`: `expect.final_answer`."""

JUDGE_CRITERION = Obj(
    description="One question of a rubric.",
    additional=False,
    required=("name", "ask"),
    properties={
        "name": Str(
            description=(
                "The criterion's name, in reports and in labels' `check` "
                "(`final_answer.judge.NAME`)."
            ),
            pattern="^[A-Za-z0-9_-]{1,60}$",
            examples=("resolved",),
        ),
        "ask": Str(
            description="The question the judge answers.",
            min_length=1,
            examples=("The customer's problem is solved by the end.",),
        ),
        "scale": OneOf(
            description="pass_fail, or the top of a 1..N scale (5: answers 1 to 5, scored 0 to 1).",
            default="pass_fail",
            examples=("pass_fail", 5),
            branches=(Const(value="pass_fail"), Int(minimum=2, maximum=10)),
        ),
        "weight": Num(
            description="The criterion's share of the rubric's score.",
            default=1,
            exclusive_minimum=0,
            maximum=1000,
            examples=(0.5,),
        ),
    },
)
"""`$defs/judge_criterion`: one question of a rubric judge."""

JUDGE_RUBRIC = Obj(
    description=(
        "A rubric the judge answers criterion by criterion over what `sees:` shows it; "
        "the check scores the criteria's weighted mean."
    ),
    additional=False,
    required=("criteria",),
    examples=(
        {
            "pass_mark": 0.75,
            "criteria": [
                {"name": "resolved", "ask": "The customer's problem is solved by the end."}
            ],
        },
    ),
    properties={
        "criteria": Arr(
            description="The questions the judge answers, each on its scale.",
            min_items=1,
            max_items=30,
            items=Ref("judge_criterion"),
            examples=(
                [{"name": "resolved", "ask": "The customer's problem is solved by the end."}],
            ),
        ),
        "pass_mark": Num(
            description=(
                "A criterion passes at this score (0 to 1, a scale's points spread "
                "evenly) or more, and so does the rubric's weighted mean."
            ),
            default=1,
            minimum=0,
            maximum=1,
            examples=(0.75,),
        ),
    },
)
"""`$defs/judge_rubric`: `expect.final_answer.judge.rubric`."""

JUDGE_SEES = Arr(
    description=(
        "What the rubric judge is shown: the user's and the assistant's messages, the "
        "calls with their arguments, the tools' outputs, the state the conversation "
        "started from and where it ended. In a turn's expect: the conversation up to "
        "that turn's end, that turn's own calls and outputs, and the state at its start "
        "and end."
    ),
    default=["conversation", "calls", "tool_outputs"],
    min_items=1,
    unique_items=True,
    items=Enum(("conversation", "calls", "tool_outputs", "state_before", "state_after")),
    examples=(["conversation", "calls", "tool_outputs", "state_after"],),
)
"""`$defs/judge_sees`: what a rubric judge is shown."""
