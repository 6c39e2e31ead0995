"""How strictly to judge: argument critics, evaluators, the rubric."""

from __future__ import annotations

from evalspec._language.common import MATCH_THRESHOLD, SIMILARITY_THRESHOLD, WEIGHT
from evalspec._language.vocabulary import Arr, Bool, Enum, Map, Mixed, Num, Obj, OneOf, Options, Str

BFCL_TYPES = (
    "string",
    "integer",
    "float",
    "number",
    "boolean",
    "array",
    "tuple",
    "dict",
    "object",
    "null",
    "any",
)
"""The parameter types BFCL's possible answers name."""

CONTAINS = Options(
    Bool(),
    Str(),
    description=(
        "The actual text contains the expected text (or each of `values`; a value "
        "listed n times must occur n times)."
    ),
    examples=({"values": ["3 PM"], "case_sensitive": False},),
    properties={
        "values": Arr(description="Texts that must all appear.", items=Str(), examples=(["3 PM"],)),
        "case_sensitive": Bool(description="Upper and lower case must match.", examples=(False,)),
    },
)

SIMILARITY = Options(
    Num(minimum=0, maximum=1),
    Bool(),
    description=(
        "Meaning similarity of texts: a threshold number, or options. Embedding cosine "
        "by default; metric tfidf reproduces Arcade's TF-IDF cosine."
    ),
    examples=(0.8,),
    properties={
        "threshold": SIMILARITY_THRESHOLD,
        "metric": Enum(
            ("embedding", "tfidf"),
            description="embedding (sentence embeddings, default) or tfidf.",
            examples=("embedding",),
        ),
    },
)

NUMERIC = Options(
    Bool(),
    description=(
        "Numbers close enough: score = 1 - |expected - actual| / (max - min), clamped "
        "to [0, 1]; a match at or above threshold. Or an absolute tolerance."
    ),
    examples=({"min": 0, "max": 1000, "threshold": 0.9},),
    properties={
        "min": Num(description="Lower end of the value range.", examples=(0,)),
        "max": Num(description="Upper end of the value range.", examples=(1000,)),
        "threshold": MATCH_THRESHOLD,
        "tolerance": Num(
            description="Largest absolute difference that still matches fully.",
            minimum=0,
            examples=(0.01,),
        ),
    },
)

DATETIME = Options(
    Bool(),
    description=(
        "Dates and times close enough. tolerance: full score within it; "
        "max_difference: score falls to 0 there. Durations like 30s, 15m, 2h, 1d or "
        "ISO 8601 (PT1H)."
    ),
    examples=({"tolerance": "1h", "max_difference": "1d"},),
    properties={
        "tolerance": Mixed(
            description="Difference that still scores 1.",
            types=("string", "number"),
            examples=("1h",),
        ),
        "max_difference": Mixed(
            description="Difference at which the score reaches 0.",
            types=("string", "number"),
            examples=("1d",),
        ),
        "falloff": Enum(
            ("from_tolerance", "from_zero"),
            description=(
                "Partial score between tolerance and max_difference: "
                "from_tolerance = 1 - (d - tolerance)/(max - tolerance), no jump "
                "at the tolerance; from_zero = 1 - d/max, as Arcade's "
                "DatetimeCritic."
            ),
            default="from_tolerance",
            examples=("from_zero",),
        ),
        "parse": Enum(
            ("iso", "dateutil"),
            description=(
                "How values are read: iso = ISO 8601 only; dateutil = free text "
                "such as 'March 5, 2024 3pm', as Arcade (missing parts are taken "
                "from today)."
            ),
            default="iso",
            examples=("dateutil",),
        ),
    },
)

REGEX = Options(
    Str(),
    description="The actual value matches a regular expression (the expected value is not used).",
    examples=("^\\d{4}-\\d{2}-\\d{2}$",),
    required=("pattern",),
    properties={
        "pattern": Str(description="Python regular expression.", examples=("^[a-z]+$",)),
        "ignore_case": Bool(description="Ignore upper/lower case.", examples=(True,)),
        "full": Bool(description="The whole value must match, not just a part.", examples=(True,)),
    },
)

ONE_OF = Options(
    Bool(),
    Arr(),
    description=(
        'Any of a list of acceptable values (BFCL possible-answer semantics: "" means '
        "the argument may be left out; nested dicts and lists). Without `values`, the "
        "expected value itself is the list."
    ),
    examples=({"values": ["NYC", "New York", ""]},),
    properties={
        "values": Arr(description="Acceptable values.", examples=(["NYC", "New York"],)),
        "normalize": Bool(
            description=(
                "Compare text as BFCL does: lower case, without spaces and ,./-_*^ punctuation."
            ),
            examples=(True,),
        ),
        "type": Enum(
            BFCL_TYPES,
            description=(
                "The parameter's declared type (BFCL's names). A value is "
                'type-checked first, as BFCL does: "" for an array parameter is a '
                'type error even when "" is listed.'
            ),
            examples=("array",),
        ),
        "items": Enum(
            BFCL_TYPES,
            description=(
                "The declared type of an array's items (BFCL's names): each item "
                "must have it, or the type of a listed answer's items, as BFCL's "
                "nested type check requires (1 is not a float inside an array)."
            ),
            examples=("float",),
        ),
    },
)

CRITIC_WEIGHT = OneOf(
    description=(
        "How much this counts toward the case score, relative to the other weights (0 "
        "= not at all). Or Arcade's FuzzyWeight name (MINIMAL=1, VERY_LOW=2, LOW=3, "
        "MEDIUM=4, HIGH=5, VERY_HIGH=6, CRITICAL=7): a critics mapping that uses a "
        "name has its weights normalised to sum to 1, as Arcade does."
    ),
    default=1,
    examples=(0.5, "HIGH"),
    branches=(
        Num(minimum=0, maximum=1000000),
        Enum(
            (
                "MINIMAL",
                "VERY_LOW",
                "LOW",
                "MEDIUM",
                "HIGH",
                "VERY_HIGH",
                "CRITICAL",
                "minimal",
                "very_low",
                "low",
                "medium",
                "high",
                "very_high",
                "critical",
            )
        ),
    ),
)

CRITIC = OneOf(
    description=(
        "How to judge one argument: a critic name (`binary`), or a mapping with one "
        "critic and its options plus an optional weight (`{similarity: 0.8, weight: "
        "0.5}`)."
    ),
    examples=(
        "binary",
        {"similarity": 0.8, "weight": 0.5},
        {"numeric": {"min": 0, "max": 100, "threshold": 0.9}},
    ),
    branches=(
        Enum(
            (
                "binary",
                "exact",
                "contains",
                "similarity",
                "numeric",
                "datetime",
                "regex",
                "one_of",
                "json_similarity",
                "ignore",
            ),
            type="string",
        ),
        Obj(
            additional=False,
            min_properties=1,
            properties={
                "binary": Options(
                    Bool(),
                    description=(
                        'Exact match after sensible type casting (5 equals 5.0; "5" equals '
                        '5; "False" never equals true). `true` or a mapping of options.'
                    ),
                    examples=(True,),
                    properties={
                        "cast": Bool(
                            description=(
                                'Compare numbers written as text with numbers ("5" vs 5).'
                            ),
                            examples=(True,),
                        )
                    },
                ),
                "exact": Options(
                    Bool(),
                    description=(
                        "Text equality. Options: case_sensitive (default true), strip "
                        "(default true)."
                    ),
                    examples=({"case_sensitive": False},),
                    properties={
                        "case_sensitive": Bool(
                            description="Upper and lower case must match.",
                            examples=(False,),
                        ),
                        "strip": Bool(
                            description="Ignore leading and trailing spaces.",
                            examples=(True,),
                        ),
                    },
                ),
                "contains": CONTAINS,
                "similarity": SIMILARITY,
                "numeric": NUMERIC,
                "datetime": DATETIME,
                "regex": REGEX,
                "one_of": ONE_OF,
                "json_similarity": Options(
                    Num(minimum=0, maximum=1),
                    Bool(),
                    description=(
                        "Leaf-by-leaf similarity of JSON values (UiPath's JSON "
                        "similarity): a threshold number, or options."
                    ),
                    examples=(0.9,),
                    properties={"threshold": MATCH_THRESHOLD},
                ),
                "ignore": Bool(description="Do not check this argument.", examples=(True,)),
                "weight": CRITIC_WEIGHT,
                "required": Bool(
                    description=(
                        "Make this critic a gate: when it does not match, the case fails "
                        "whatever its score (the critic still counts with its weight). "
                        "Without it, the score is the similarity and the threshold only "
                        "decides the match."
                    ),
                    default=False,
                    examples=(True,),
                ),
            },
        ),
    ),
)
"""`$defs/critic`: each value of a `critics:` mapping (suite, case or expected call)."""

TOOL_CALL_ORDER = Options(
    Bool(),
    description=(
        "The calls come in the expected order: strict (exact sequence) or the longest "
        "common subsequence's share."
    ),
    examples=({"strict": False},),
    properties={
        "strict": Bool(
            description="Exact sequence (1 or 0) instead of the LCS share.",
            examples=(True,),
        ),
        "order": Arr(
            description="Tool names in order; default: the expected calls'.",
            items=Str(),
            examples=(["list_users", "send_dm_to_user"],),
        ),
    },
)

TOOL_CALL_COUNT = Options(
    Bool(),
    description='How often each tool is called: counts like ">=1", "==2", "<3", "!=0" or a number.',
    examples=({"counts": {"get_weather": ">=1"}},),
    properties={
        "counts": Map(
            Mixed(
                description=(
                    "a number, or an operator (==, = as in UiPath, !=, <, <=, >, "
                    ">=) followed by a number"
                ),
                types=("string", "integer"),
                # One `\s*` before the operator and one after it, never two in a row: with
                # no operator, `\s*\s*` splits a run of spaces every way (quadratic).
                pattern="^\\s*((==|!=|<=|>=|<|>|=)\\s*)?\\d+\\s*$",
                examples=(">=1", "==2", 3),
            ),
            description="Tool name to count condition.",
            examples=({"get_weather": ">=1"},),
        ),
        "strict": Bool(
            description="All conditions or nothing, instead of the share that holds.",
            examples=(True,),
        ),
    },
)

TOOL_CALL_OUTPUT = Options(
    Bool(),
    description=(
        "Tools returned the expected outputs (compared as JSON values): strict "
        "all-or-nothing, or the share matched."
    ),
    examples=(
        {"strict": False, "tool_outputs": [{"name": "get_user", "output": {"user_id": 123}}]},
    ),
    properties={
        "strict": Bool(description="All outputs must match (1 or 0).", examples=(False,)),
        "tool_outputs": Arr(
            description="Expected outputs; default: the expected calls' `output`.",
            items=Obj(
                additional=False,
                required=("name", "output"),
                properties={
                    "name": Str(
                        description="Name of the tool whose output is checked.",
                        examples=("get_user",),
                    ),
                    "output": Mixed(
                        description="The output it must return (compared as a JSON value).",
                        examples=({"user_id": 123},),
                    ),
                },
            ),
            examples=([{"name": "get_user", "output": {"user_id": 123}}],),
        ),
    },
)

EVALUATOR = OneOf(
    description=(
        "A whole-transcript check. A name (`no_tool_calls`) or `{name: options, "
        "weight: n, required: bool}`."
    ),
    examples=({"tool_call_order": {"strict": True}}, "no_tool_calls"),
    branches=(
        Enum(
            (
                "tool_call_order",
                "tool_call_count",
                "tool_call_args",
                "tool_call_output",
                "no_tool_calls",
                "api_call_score",
            ),
            type="string",
        ),
        Obj(
            additional=False,
            min_properties=1,
            properties={
                "tool_call_order": TOOL_CALL_ORDER,
                "tool_call_count": TOOL_CALL_COUNT,
                "tool_call_args": Options(
                    Bool(),
                    description=(
                        "Arguments of each expected call: strict (exactly equal) or subset "
                        "(expected ones present and equal, extras allowed)."
                    ),
                    examples=({"subset": True},),
                    properties={
                        "strict": Bool(description="All-or-nothing per call.", examples=(True,)),
                        "subset": Bool(
                            description="Extra actual arguments are allowed.",
                            examples=(True,),
                        ),
                    },
                ),
                "tool_call_output": TOOL_CALL_OUTPUT,
                "no_tool_calls": Bool(
                    description="Scores 1 only when the model called no tool.", examples=(True,)
                ),
                "api_call_score": Options(
                    Bool(),
                    description=(
                        "StableToolBench's API call score: share of the gold tools that "
                        "were called."
                    ),
                    examples=({"gold": ["get_weather"]},),
                    properties={
                        "gold": Arr(
                            description="Gold tool names; default: the expected calls'.",
                            items=Mixed(types=("string", "array")),
                            examples=(["get_weather"],),
                        )
                    },
                ),
                "weight": WEIGHT,
                "required": Bool(
                    description="A case whose evaluator scores below 1 fails, whatever the total.",
                    default=False,
                    examples=(True,),
                ),
            },
        ),
    ),
)
"""`$defs/evaluator`: each entry of a case's `evaluators:`."""

RUBRIC = Obj(
    description=(
        "Scoring rules: pass/warn/fail thresholds and what fails a case outright. "
        "Suite level; a case may override any key."
    ),
    additional=False,
    examples=({"fail_threshold": 0.85, "warn_threshold": 0.95, "fail_on_tool_selection": True},),
    properties={
        "fail_threshold": Num(
            description="A score below this fails.",
            default=0.8,
            minimum=0,
            maximum=1,
            examples=(0.85,),
        ),
        "warn_threshold": Num(
            description=(
                "A score from fail_threshold up to this passes with a warning; at or "
                "above it passes cleanly."
            ),
            default=0.9,
            minimum=0,
            maximum=1,
            examples=(0.95,),
        ),
        "fail_on_tool_selection": Bool(
            description=("Fail the case if any expected tool was not called (whatever the score)."),
            default=True,
            examples=(True,),
        ),
        "fail_on_tool_call_quantity": Bool(
            description=(
                "Fail the case if the model made a different number of calls than expected."
            ),
            default=True,
            examples=(True,),
        ),
        "tool_selection_weight": Num(
            description="Weight of choosing the right tool, against the critics' weights.",
            default=1.0,
            minimum=0,
            maximum=1000000,
            examples=(1.0,),
        ),
        "extra_args": Enum(
            ("allow", "penalize"),
            description=(
                "Arguments the expectation does not mention: allow them, or penalize "
                "each as a failed row."
            ),
            default="allow",
            examples=("allow",),
        ),
        "extra_calls": Enum(
            ("allow", "penalize"),
            description=(
                "Calls beyond the expected ones: allow them, or penalize each (a zero "
                "row weighing tool_selection_weight)."
            ),
            default="penalize",
            examples=("penalize",),
        ),
        "normalize_tool_names": Bool(
            description=(
                "Treat tool names equal ignoring case and the separators _ . - (send_dm = Send-DM)."
            ),
            default=True,
            examples=(True,),
        ),
        "state_weight": Num(
            description=(
                "Weight of `expect.state` and `unchanged` against the rest: score = (1 "
                "- w) x calls + w x state. A case that expects only a state is scored "
                "on it alone."
            ),
            default=0.5,
            minimum=0,
            maximum=1,
            examples=(0.5,),
        ),
    },
)
"""`$defs/rubric`: `rubric:` of the suite or of a case."""
