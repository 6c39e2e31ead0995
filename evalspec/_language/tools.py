"""Tools: how each answers (simulated, scripted, MCP, a model)."""

from __future__ import annotations

from evalspec._language.state import BEHAVIOR
from evalspec._language.vocabulary import Arr, Bool, Const, Map, Mixed, Obj, Ref, Str

TOOL_NAME_PATTERN = "^[A-Za-z0-9_.-]{1,64}$"
"""A tool's name in a suite; importers refuse a record whose tools are named otherwise."""

TOOL = Obj(
    description=(
        "A tool the model may call: its OpenAI function definition plus how evalspec "
        "simulates it. Or `{include: file.yaml}` to take tools from another file. Or "
        "`{mcp: {command|url}}` to take tools from an MCP server."
    ),
    additional=False,
    examples=(
        {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    ),
    properties={
        "include": Str(
            description="A YAML file (relative to this one) holding a list of tools.",
            examples=("tools/slack.yaml",),
        ),
        "mcp": Obj(
            description=(
                "Take tool definitions from an MCP server, started with `command` or "
                "reached at `url` (one of the two). They are listed once by `evalspec "
                "tools refresh SUITE` into `<suite>.tools.lock.json` beside the suite "
                "(commit it); validate, plan, offline runs and review read only that "
                "lock file and never start the server."
            ),
            additional=False,
            examples=({"command": ["python", "-m", "my_server"], "include": ["Math.*"]},),
            properties={
                "command": Arr(
                    description=(
                        "Start the server as this program (stdio transport), run in "
                        "the suite's folder."
                    ),
                    min_items=1,
                    items=Str(),
                    examples=(["python", "-m", "my_server"],),
                ),
                "url": Str(
                    description="Connect to a running server over streamable HTTP.",
                    pattern="^https?://",
                    examples=("http://127.0.0.1:8000/mcp",),
                ),
                "headers": Map(
                    Str(),
                    description=(
                        "HTTP headers for `url`; `${NAME}` is replaced by environment "
                        "variable NAME when connecting, so secrets stay out of the "
                        "suite."
                    ),
                    examples=({"Authorization": "Bearer ${MCP_TOKEN}"},),
                ),
                "name": Str(
                    description=(
                        "Short name of the server, used for its response cache folder "
                        "(default: derived from the command or url)."
                    ),
                    pattern="^[A-Za-z0-9_-]{1,64}$",
                    examples=("math",),
                ),
                "include": Arr(
                    description=(
                        "Only tools whose name matches one of these patterns (`*` wildcards)."
                    ),
                    items=Str(min_length=1),
                    examples=(["Math.*"],),
                ),
                "exclude": Arr(
                    description="Leave out tools whose name matches one of these patterns.",
                    items=Str(min_length=1),
                    examples=(["Math.Divide"],),
                ),
                "execute": Bool(
                    description=(
                        "Run the model's calls on the server (live runs only) and "
                        "record the outputs in the response cache, so later runs "
                        "replay them offline. `responses` rules answer first."
                    ),
                    default=False,
                    examples=(True,),
                ),
                "cache": Str(
                    description=(
                        "Response cache folder (StableToolBench layout), relative to "
                        "the suite (default: `<suite>.mcp_cache/`)."
                    ),
                    examples=("mcp_cache/",),
                ),
                "responses": Map(
                    Arr(items=Ref("simulated_response")),
                    description=(
                        "Simulated answers per tool name, tried before the server "
                        "(first match wins)."
                    ),
                    examples=({"Math.Add": [{"when": {"a": 1, "b": 2}, "output": 3}]},),
                ),
            },
        ),
        "name": Str(
            description="Function name the model calls.",
            pattern=TOOL_NAME_PATTERN,
            examples=("send_dm_to_user",),
        ),
        "description": Str(
            description="What the tool does, as the model sees it.",
            examples=("Send a direct message to a user.",),
        ),
        "parameters": Obj(
            description="JSON Schema of the arguments (type: object).",
            examples=(
                {
                    "type": "object",
                    "properties": {"user_name": {"type": "string"}},
                    "required": ["user_name"],
                },
            ),
        ),
        "responses": Arr(
            description="Simulated answers, first match wins.",
            items=Ref("simulated_response"),
            examples=(
                [
                    {"when": {"user_name": "johndoe"}, "output": {"ok": True}},
                    {"output": {"ok": False, "error": "user_not_found"}},
                ],
            ),
        ),
        "cache": Obj(
            description=(
                "A StableToolBench response cache: `dir` (category/tool/api.json "
                "layout) or `file` (one api.json), relative to the suite."
            ),
            additional=False,
            examples=({"file": "cache/weather/get_weather.json"},),
            properties={
                "dir": Str(description="Cache directory.", examples=("stb_cache/",)),
                "file": Str(
                    description="One cache file.", examples=("cache/weather/get_weather.json",)
                ),
            },
        ),
        "simulate": Obj(
            description=(
                "Answer unmatched calls with an LLM that plays the API "
                "(MirrorAPI-like); answers are cached so the same call always gets the "
                "same answer."
            ),
            additional=False,
            required=("model",),
            examples=({"model": "gpt-4o-mini"},),
            properties={
                "model": Str(description="Model id.", examples=("gpt-4o-mini",)),
                "base_url": Str(
                    description="OpenAI-compatible endpoint.",
                    pattern="^(https?://|\\{\\{)",
                    examples=("http://localhost:8000/v1",),
                ),
                "api_key_env": Str(
                    description="Environment variable with the key.",
                    default="OPENAI_API_KEY",
                    examples=("OPENAI_API_KEY",),
                ),
                "cache": Str(description="Cache file path.", examples=("cache/simulated.jsonl",)),
            },
        ),
        "behavior": BEHAVIOR,
        "faults": Arr(
            description="Faults this tool's calls meet in every case that offers it.",
            max_items=100,
            items=Ref("fault"),
            examples=([{"kind": "error", "on_call": 1, "status": 503}],),
        ),
        "idempotent": Bool(
            description=(
                "false: the tool has a side effect that repeating doubles (a charge, a "
                "booking, an email), so a repeated identical call that reaches it is "
                "reported as a duplicate side effect (and fails "
                "`expect.no_duplicates`)."
            ),
            examples=(False,),
        ),
    },
)
"""`$defs/tool`: each entry of `tools:`."""

SIMULATED_RESPONSE = Obj(
    description=(
        "One rule of a simulated tool: when the call's arguments include `when`, "
        "answer `output` (or `error`). First match wins; a rule without `when` is the "
        "fallback."
    ),
    additional=False,
    examples=(
        {"when": {"city": "Paris"}, "output": {"temperature": 21, "unit": "C"}},
        {"error": "city not found"},
    ),
    properties={
        "when": Obj(
            description="Arguments the call must have (other arguments may be anything).",
            examples=({"city": "Paris"},),
        ),
        "output": Mixed(
            description="What the tool returns (any JSON value).", examples=({"ok": True},)
        ),
        "error": Str(
            description="An error message the tool returns instead of an output.",
            examples=("user_not_found",),
        ),
    },
)
"""`$defs/simulated_response`: each rule of a tool's `responses:`."""

TOOL_EDIT = Obj(
    description=(
        "What one tool looks like to the model in a variant. The model's calls of a "
        "renamed tool count as calls of the base tool: cases keep naming the base tool."
    ),
    additional=False,
    min_properties=1,
    examples=({"name": "Math.Sum", "description": "Sum of two numbers."},),
    properties={
        "name": Str(
            description="The name the model sees instead of the base tool's.",
            pattern="^[^\\s]{1,64}$",
            examples=("Math.Sum",),
        ),
        "description": Str(
            description="The description the model reads instead of the base tool's.",
            max_length=10000,
            examples=("Sum of two numbers.",),
        ),
        "input_schema": Obj(
            description=(
                "The JSON Schema of the arguments instead of the base tool's (an "
                "object schema). Expected arguments are still checked against the base "
                "tool's."
            ),
            examples=({"type": "object", "properties": {"a": {"type": "integer"}}},),
        ),
        "drop": Const(
            description="The tool is not offered in this variant.", value=True, examples=(True,)
        ),
    },
)
"""An edit of one base tool in a tool variant (`variants[].tools.NAME`)."""

VARIANT = Obj(
    description=(
        "One version of the suite's tools: the base tools, changed by another lock "
        "file of the same MCP servers (`lock`) and by edits of single tools (`tools`), "
        "applied in that order."
    ),
    additional=False,
    required=("name",),
    examples=(
        {
            "name": "clear",
            "tools": {"Math.Add": {"description": "Add two numbers; not for lists."}},
        },
    ),
    properties={
        "name": Str(
            description=(
                "Shown after the model's name in reports (`gpt-4o-mini@clear`); "
                "letters, digits, `_`, `.`, `-`."
            ),
            pattern="^[A-Za-z0-9_.-]{1,40}$",
            examples=("v2",),
        ),
        "lock": Str(
            description=(
                "A tool lock file (as `evalspec tools refresh` writes) relative to the "
                "suite file: each MCP tool of the suite takes the description and "
                "input schema this file lists for it under the same server. A tool it "
                "does not list is not offered in this variant."
            ),
            examples=("calc.v2.tools.lock.json",),
        ),
        "tools": Map(
            Ref("tool_edit"),
            description="Edits by base tool name.",
            examples=({"Math.Add": {"name": "Math.Sum"}},),
        ),
    },
)
"""One version of the suite's tools (`variants:`), run side by side with the others."""
