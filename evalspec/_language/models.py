"""Models to evaluate and what they may spend."""

from __future__ import annotations

from evalspec._language.vocabulary import Bool, Enum, Int, Map, Num, Obj, OneOf, Options, Str

PARAMS = Obj(
    description="Request parameters.",
    additional=False,
    examples=({"temperature": 0, "seed": 7},),
    properties={
        "temperature": Num(
            description="Sampling temperature.", minimum=0, maximum=2, examples=(0,)
        ),
        "top_p": Num(description="Nucleus sampling.", minimum=0, maximum=1, examples=(1,)),
        "seed": Int(description="Seed for reproducible sampling, where supported.", examples=(7,)),
        "max_tokens": Int(description="Most tokens in one answer.", minimum=1, examples=(1024,)),
        "tool_choice": OneOf(
            description="auto, none, required, or a specific function.",
            examples=("auto",),
            branches=(Enum(("auto", "none", "required")), Obj()),
        ),
        "parallel_tool_calls": Bool(
            description="Allow several calls in one answer.", examples=(True,)
        ),
        "extra_body": Obj(description="Extra fields sent as they are.", examples=({"top_k": 20},)),
    },
)

PRICE = Obj(
    description=(
        "Price per million tokens, for the cost column of reports (any currency, the "
        "same for every model)."
    ),
    additional=False,
    required=("input", "output"),
    examples=({"input": 0.15, "output": 0.6},),
    properties={
        "input": Num(
            description="Cost of a million input (prompt) tokens.",
            minimum=0,
            maximum=1000000,
            examples=(0.15,),
        ),
        "output": Num(
            description="Cost of a million output (completion) tokens.",
            minimum=0,
            maximum=1000000,
            examples=(0.6,),
        ),
    },
)

MODEL = Options(
    Str(min_length=1),
    description=(
        "A model under test: its id (`gpt-4o-mini`), or a mapping with endpoint and parameters."
    ),
    examples=(
        "gpt-4o-mini",
        {
            "name": "local-llama",
            "model": "llama3.1",
            "base_url": "http://localhost:11434/v1",
            "params": {"temperature": 0},
        },
    ),
    required=("model",),
    properties={
        "name": Str(
            description="Label in reports (default: the model id). Unique in a suite.",
            examples=("gpt-4o-mini@t0",),
        ),
        "model": Str(description="Model id sent to the endpoint.", examples=("gpt-4o-mini",)),
        "provider": Enum(
            ("openai", "anthropic"),
            description=(
                "Wire protocol: `openai` (chat completions, any OpenAI-compatible "
                "endpoint) or `anthropic` (Messages API; key from "
                "ANTHROPIC_API_KEY unless `api_key_env` says otherwise)."
            ),
            default="openai",
            examples=("anthropic",),
        ),
        "base_url": Str(
            description=(
                "Endpoint (default: $OPENAI_BASE_URL or OpenAI; for provider "
                "anthropic, $ANTHROPIC_BASE_URL or Anthropic)."
            ),
            pattern="^(https?://|\\{\\{)",
            examples=("http://localhost:8000/v1",),
        ),
        "api_key_env": Str(
            description=(
                "Name of the environment variable holding the API key (the key "
                "itself never goes in a suite). Default OPENAI_API_KEY, or "
                "ANTHROPIC_API_KEY for provider anthropic."
            ),
            default="OPENAI_API_KEY",
            pattern="^[A-Za-z_][A-Za-z0-9_]*$",
            examples=("OPENAI_API_KEY",),
        ),
        "headers": Map(
            Str(),
            description=(
                "Extra HTTP headers sent with every request to this model. A value "
                "may read an environment variable with `${NAME}`, so secrets stay "
                "out of the suite; such values are treated as secrets (redacted "
                "everywhere)."
            ),
            examples=({"X-Team": "search", "X-Api-Token": "${TEAM_TOKEN}"},),
        ),
        "params": PARAMS,
        "price": PRICE,
        "requests_per_minute": Num(
            description=(
                "This model's own rate limit, in place of "
                "`run.requests_per_minute` for its requests (the judge and "
                "simulated tools keep the run's). Models with one `model` id, "
                "endpoint and `api_key_env` share the strictest of their limits, "
                "as a provider counts one quota. Held across every worker of a "
                "`--ray` run."
            ),
            minimum=0.001,
            maximum=1000000,
            examples=(60,),
        ),
    },
)
"""`$defs/model`: each entry of `models:` (a model id alone, or a mapping)."""

BUDGET = Obj(
    description=(
        "Limits one conversation (one trial of a case) must stay within; a trial over "
        "any of them fails, with the reason. Latency is checked only on live answers "
        "(a replay has no real latency)."
    ),
    additional=False,
    examples=({"max_tokens": 20000, "max_cost": 0.05, "max_latency_s": 30, "max_turns": 8},),
    properties={
        "max_tokens": Int(
            description="Most prompt plus completion tokens.", minimum=0, examples=(20000,)
        ),
        "max_cost": Num(
            description=(
                "Most cost, in the currency of the model's `price:` (models without a "
                "price are not checked)."
            ),
            minimum=0,
            examples=(0.05,),
        ),
        "max_latency_s": Num(
            description="Most seconds waiting for the model's answers (live runs only).",
            minimum=0,
            examples=(30,),
        ),
        "max_turns": Int(
            description="Most model answers in the conversation.", minimum=0, examples=(8,)
        ),
    },
)
"""`$defs/budget`: `budgets.case` of the suite, or a case's `budget:`."""

SUITE_BUDGET = Obj(
    description=(
        "Limits for a whole run of one model (every case and trial added up); a model "
        "over any of them fails the run, with the reason."
    ),
    additional=False,
    examples=({"max_tokens": 2000000, "max_cost": 2.0},),
    properties={
        "max_tokens": Int(
            description="Most tokens one model may use over the run.", minimum=0, examples=(20000,)
        ),
        "max_cost": Num(
            description="Most cost of one model's run, in the currency of its `price:`.",
            minimum=0,
            examples=(0.05,),
        ),
        "max_latency_s": Num(
            description=(
                "Most seconds one model may spend answering, all cases added (live runs only)."
            ),
            minimum=0,
            examples=(30,),
        ),
        "max_turns": Int(description="Most model answers over the run.", minimum=0, examples=(8,)),
    },
)
"""`$defs/suite_budget`: `budgets.suite`."""
