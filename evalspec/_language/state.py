"""The state language: what a simulated tool checks, changes and answers (a tool's `behavior:`).

The computation it describes runs in evalspec._tools.state; `validate` checks the references and
computed values it holds in its own words (hence the `$comment`s).
"""

from __future__ import annotations

from evalspec._language.common import WORDED_BY_VALIDATE, state_pointer
from evalspec._language.vocabulary import Arr, Bool, Enum, Int, Mixed, Obj

CHECK_FOR_EACH = Mixed(
    description=(
        "A list (a reference, or a computed value such as `$each`; a mapping walks its "
        "values), or `{NAME: LIST, ...}`: up to 4 lists walked in step, each item read "
        "as `${each.NAME}` / `${each.NAME/POINTER}`. A plain LIST is the same walk of "
        "one list, its item `${each}` / `${each/POINTER}`. At most 1,000 items per "
        "list. `checks` are tested for each item in turn; the first that fails is the "
        "call's error. Nothing else but `checks` beside it."
    ),
    examples=("${args.flights}", {"item": "${let.old_items}", "new": "${args.new_item_ids}"}),
)

PRECONDITIONS = Arr(
    description="Checks made in order before anything changes.",
    items=Obj(
        comment=WORDED_BY_VALIDATE,
        description=(
            "One check before the call: a `path` of the state (a JSON Pointer, may "
            "hold `${args.NAME}` and `${state/...}`) or a `value`, and tests on it: "
            "exists, equals, not_equals, contains (a list holding a record that "
            "matches, a text holding a text, a mapping holding a key), not_contains, "
            "min, max. The first check that fails is the call's error observation "
            "(`error`, or a generated one); nothing changes. `any_of` (with `error`) "
            "holds when one of its checks does."
        ),
        additional=False,
        examples=(
            {
                "path": "/contacts",
                "contains": {"name": "${args.attendee}"},
                "error": "no contact named ${args.attendee}",
            },
        ),
        properties={
            "path": state_pointer(
                ("The place in the state to test: a JSON Pointer, may hold `${args.NAME}`."),
                "/contacts",
            ),
            "value": Mixed(
                description="A value to test instead of a path (with references).",
                examples=("${args.amount}",),
            ),
            "exists": Bool(
                comment=WORDED_BY_VALIDATE,
                description="true: something must be at the path; false: nothing may be.",
                examples=(True,),
            ),
            "equals": Mixed(description="The value there must equal this.", examples=("open",)),
            "not_equals": Mixed(
                description="The value there must not equal this.", examples=("cancelled",)
            ),
            "contains": Mixed(
                description=(
                    "A list holding a record that matches (as `when:` matches "
                    "arguments), a text holding a text, or a mapping holding a key."
                ),
                examples=({"name": "${args.attendee}"},),
            ),
            "not_contains": Mixed(
                description="The opposite of `contains`.", examples=({"date": "${args.date}"},)
            ),
            "min": Mixed(
                comment=WORDED_BY_VALIDATE,
                description=(
                    "The number there must be at least this (or a reference, or a "
                    "computed value such as `{$calc: ...}`)."
                ),
                types=("number", "string", "object"),
                examples=("${args.amount}",),
            ),
            "max": Mixed(
                comment=WORDED_BY_VALIDATE,
                description=(
                    "The number there must be at most this (or a reference, or a "
                    "computed value such as `{$calc: ...}`)."
                ),
                types=("number", "string", "object"),
                examples=(10,),
            ),
            "any_of": Arr(
                comment=WORDED_BY_VALIDATE,
                description=(
                    "Alternatives, each a precondition of its own (no `any_of` "
                    "inside): the check holds when one of them does. Nothing else but "
                    "`error` beside it."
                ),
                min_items=1,
                max_items=8,
                items=Obj(),
                examples=(
                    [
                        {"value": "${args.method}", "contains": "gift_card"},
                        {"path": "/orders/${args.order_id}/method", "equals": "${args.method}"},
                    ],
                ),
            ),
            "error": Mixed(
                description=(
                    "The error observation the model sees when this check fails (with "
                    "references); default: a generated one."
                ),
                examples=("no contact named ${args.attendee}",),
            ),
            "for_each": CHECK_FOR_EACH,
            "checks": Arr(
                description="With `for_each`: the preconditions tested for each item, in order.",
                min_items=1,
                items=Obj(),
                examples=(
                    [
                        {
                            "path": "/flights/${each/flight_number}",
                            "exists": True,
                            "error": "flight ${each/flight_number} not found",
                        }
                    ],
                ),
            ),
        },
    ),
    examples=(
        [
            {
                "path": "/contacts",
                "contains": {"name": "${args.attendee}"},
                "error": "no contact named ${args.attendee}",
            }
        ],
    ),
)

EFFECT_FOR_EACH = Mixed(
    description=(
        "A list (a reference, or a computed value such as `$each`; a mapping walks its "
        "values), or `{NAME: LIST, ...}`: up to 4 lists walked in step, each item read "
        "as `${each.NAME}` / `${each.NAME/POINTER}`. A plain LIST is the same walk of "
        "one list, its item `${each}` / `${each/POINTER}`. At most 1,000 items per "
        "list. The effect applies once per item (the lists as the effect found them), "
        "each on the state the one before left."
    ),
    examples=("${state/reservations/${args.id}/payment_history}",),
)

EFFECTS = Arr(
    description="Changes applied in order, all or nothing.",
    items=Obj(
        comment=WORDED_BY_VALIDATE,
        description=(
            "One change to the state: `set` / `append` / `remove` / `increment` / "
            "`decrement` at a JSON Pointer, with `value` (set, append), `by` "
            "(increment, decrement: default 1, with `round` decimal places), or "
            "`where` (act on each record of the list, or value of the mapping, that "
            "matches) and `at` (the place inside each such record). A call's effects "
            "apply all or nothing."
        ),
        additional=False,
        dependent_required={
            "set": ("value",),
            "append": ("value",),
            "at": ("where",),
            "first": ("where",),
        },
        examples=(
            {"append": "/events", "value": {"title": "${args.title}", "date": "${args.date}"}},
            {
                "set": "/events",
                "where": {"id": "${args.id}"},
                "at": "/status",
                "value": "cancelled",
            },
        ),
        properties={
            "set": state_pointer(
                ("Set the value at this JSON Pointer (a missing last key is created)."),
                "/events/0/status",
            ),
            "append": state_pointer("Append `value` to the list at this JSON Pointer.", "/events"),
            "remove": state_pointer(
                (
                    "Remove what is at this JSON Pointer (or, with `where`, the "
                    "matching records of the list there)."
                ),
                "/events/0",
            ),
            "increment": state_pointer("Add `by` to the number at this JSON Pointer.", "/balance"),
            "decrement": state_pointer(
                ("Take `by` off the number at this JSON Pointer (a payment from a balance)."),
                "/users/u1/payment_methods/gift_card_1/balance",
            ),
            "value": Mixed(
                description="What `set` writes or `append` adds (with references).",
                examples=({"title": "${args.title}"},),
            ),
            "where": Obj(
                comment=WORDED_BY_VALIDATE,
                description=(
                    "Act on each record of the list at the path (or each value of the "
                    "mapping there) that matches this mapping."
                ),
                examples=({"id": "${args.id}"},),
            ),
            "at": state_pointer("With `where`: the place inside each matching record.", "/status"),
            "first": Bool(
                comment=WORDED_BY_VALIDATE,
                description="With `where`: change only the first record that matches.",
                default=False,
                examples=(True,),
            ),
            "by": Mixed(
                comment=WORDED_BY_VALIDATE,
                description=(
                    "What `increment` adds or `decrement` takes off (default 1; a "
                    "reference such as `${args.amount}`, or a computed value such as "
                    "`{$calc: ...}`)."
                ),
                types=("number", "string", "object"),
                examples=(-1,),
            ),
            "round": Int(
                comment=WORDED_BY_VALIDATE,
                description=(
                    "`increment` / `decrement` only: round the result to this many "
                    "decimal places (2 keeps money in cents)."
                ),
                minimum=0,
                maximum=15,
                examples=(2,),
            ),
            "when": Mixed(
                description=(
                    "A precondition, or a list of them that must all hold, for the "
                    "effect to apply; when one fails the effect is skipped (no error)."
                ),
                examples=({"value": "${let.fee}", "not_equals": 0},),
            ),
            "for_each": EFFECT_FOR_EACH,
        },
    ),
    examples=(
        [
            {"append": "/events", "value": {"title": "${args.title}", "date": "${args.date}"}},
            {
                "set": "/events",
                "where": {"id": "${args.id}"},
                "at": "/status",
                "value": "cancelled",
            },
        ],
    ),
)

RESPONSE = Mixed(
    description=(
        "What the tool answers after its effects: any JSON value with references and "
        "computed values, and `{$select: POINTER, $where: {...}, $first: true}` for "
        "the records of a list (or values of a mapping) that match; `$key: true` gives "
        "their keys instead (the id of a record kept by id). `$select` may read a "
        'value instead of the state (`$select: "${args.item_ids}"`), and '
        "`$ignore_case: true` matches texts whatever their case."
    ),
    if_=Obj(required=("$select",)),
    then=Mixed(
        comment=WORDED_BY_VALIDATE,
        property_names=Enum(
            ("$select", "$where", "$first", "$key", "$ignore_case"), comment=WORDED_BY_VALIDATE
        ),
        properties={
            "$where": Mixed(
                comment=WORDED_BY_VALIDATE,
                description=(
                    "With `$select`: keep the records that match this mapping "
                    "(references allowed), or the items equal to this value."
                ),
                types=("object", "string", "number", "boolean", "null"),
                examples=({"date": "${args.date}"},),
            ),
            "$first": Bool(
                comment=WORDED_BY_VALIDATE,
                description=(
                    "With `$select`: true gives the first matching record (or null) "
                    "instead of a list."
                ),
                examples=(True,),
            ),
            "$key": Bool(
                comment=WORDED_BY_VALIDATE,
                description=(
                    "With `$select`: true gives the keys of the matching values of a "
                    "mapping (the indexes of a list's records) instead of the values."
                ),
                examples=(True,),
            ),
            "$ignore_case": Bool(
                comment=WORDED_BY_VALIDATE,
                description=(
                    "With `$select`: true matches the texts of `$where` whatever their "
                    "case (both sides lowercased)."
                ),
                examples=(True,),
            ),
        },
    ),
    examples=({"$select": "/events", "$where": {"date": "${args.date}"}},),
)

BEHAVIOR = Obj(
    comment=WORDED_BY_VALIDATE,
    description=(
        "Simulate the tool against the suite's `state:`: preconditions that "
        "turn into error observations, effects that change the state, and a "
        "response rendered from the new state. Run-time references: "
        "`${args.NAME}`, `${state/POINTER}`, `${count/POINTER}` (`$${` is a "
        "literal `${`); they are not `{{ }}` templates. `${let.NAME}` reads a "
        "`let:` value, `${each/POINTER}` or `${each.NAME/POINTER}` an item of "
        "a walk. Computed values (mappings whose first key starts with `$`): "
        "`$calc` (arithmetic, `len`, `sum`, `min`, `max`, `abs`, `round`, "
        "`float`, `int`; `$with` names operands), `$if` (`$then`, `$else`), "
        "`$each` (`$do`, `$when`, `$key`), `$sorted`, `$select`."
    ),
    additional=False,
    examples=(
        {
            "preconditions": [
                {
                    "path": "/contacts",
                    "contains": {"name": "${args.attendee}"},
                    "error": "no contact named ${args.attendee}",
                }
            ],
            "effects": [
                {
                    "append": "/events",
                    "value": {"attendee": "${args.attendee}", "date": "${args.date}"},
                }
            ],
            "response": {"$select": "/events", "$where": {"date": "${args.date}"}},
        },
    ),
    properties={
        "let": Obj(
            description=(
                "Named values the behaviour reads as `${let.NAME}` (a computed "
                "price, a chosen id), each computed when first read, on the "
                "state the call found. A value may read those listed before it."
            ),
            max_properties=32,
            examples=(
                {
                    "bags_fee": {
                        "$calc": ("50 * max(0, ${args.nonfree} - ${state/res/${args.id}/nonfree})")
                    }
                },
            ),
        ),
        "preconditions": PRECONDITIONS,
        "effects": EFFECTS,
        "response": RESPONSE,
    },
)
"""A tool's `behavior:`."""
