"""Mistakes made writing a stateful suite from the documentation, each answered where it is
written with what is wrong and how to fix it (exit 2, no traceback), and report rows about the
state said in the state's words."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import evalspec_cli

from evalspec.api import load_suite
from evalspec.errors import SpecError

ROOT = Path(__file__).resolve().parent.parent
CALENDAR = ROOT / "suites" / "calendar.yaml"

SHOP = """\
suite: shop
models: [m]
state: {cart: [], items: 0%s}
tools:
  - name: add
    parameters: {type: object, properties: {sku: {type: string}}}
    behavior:
%s
cases:
  - name: c
    user: hi
%s    expect:
      tool_calls: [{add: {sku: MUG1}}]
%s
"""


def cli(*args: Any):
    return evalspec_cli([str(a) for a in args])


def validate(
    tmp_path: Path, behavior: str, expect: str = "", state: str = "", case: str = ""
) -> tuple[int, str]:
    path = tmp_path / "s.yaml"
    path.write_text(SHOP % (state, behavior, case, expect), encoding="utf-8")
    done = cli("validate", path)
    assert "Traceback" not in done.output
    return done.exit_code, " ".join(done.output.split())


APPEND = "      effects: [{append: /cart, value: {sku: '${args.sku}'}}]"


def test_a_record_expected_in_the_state_is_asked_for_under_value(tmp_path):
    code, out = validate(tmp_path, APPEND, "      state: {/cart/0: {sku: MUG1, qty: 2}}")
    assert code == 2, out
    assert "s.yaml:14:24: cases[0].expect.state./cart/0:" in out
    assert "'sku', 'qty' are no critics" in out
    assert 'write it under `value:`, e.g. {value: {"sku": "MUG1", "qty": 2}}' in out
    # Written as the message says, it is valid; a critic among record fields is still named.
    code, out = validate(tmp_path, APPEND, "      state: {/cart/0: {value: {sku: MUG1}}}")
    assert code == 0, out
    code, out = validate(tmp_path, APPEND, "      state: {/cart/0: {sku: MUG1, binary: true}}")
    assert code == 2 and "'sku' is no critic" in out, out


BAD_BEHAVIORS = [
    {"effects": [{"set": "/a", "value": 1, "at": "/b"}]},
    {"effects": [{"append": "/a", "value": 1, "where": {"x": 1}}]},
    {"effects": [{"set": "/a", "value": 1, "by": 2}]},
    {"effects": [{"increment": "/a", "by": "two"}]},
    {"effects": [{"increment": "/a", "by": True}]},
    {"effects": [{"remove": "/a", "where": "x"}]},
    {"effects": [{"set": "/a", "append": "/b", "value": 1}]},
    {"effects": [{"set": "/a~b", "value": 1}]},
    {"effects": [{"set": 5, "value": 1}]},
    {"effects": [{"set": "/" + "/".join("a" * 40), "value": 1}]},
    {"effects": [{"set": "/a", "value": 1}] * 40},
    {"preconditions": [{"path": "/a", "exists": "yes"}]},
    {"preconditions": [{"path": "/a", "min": [1]}]},
    {"preconditions": [{"path": "/a~x", "exists": True}]},
    {"response": {"$select": "/a", "$first": "yes"}},
    {"effects": [{"set": "/a", "value": 1, "were": {}}]},
]


@pytest.mark.parametrize("raw", BAD_BEHAVIORS, ids=range(len(BAD_BEHAVIORS)))
def test_every_behavior_problem_says_how_to_fix_it(raw, tmp_path):
    suite = {
        "suite": "s",
        "models": ["m"],
        "state": {"a": 0, "b": 0},
        "tools": [{"name": "t", "parameters": {"type": "object"}, "behavior": raw}],
        "cases": [{"name": "c", "user": "hi", "expect": {"no_tool_calls": True}}],
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_suite(path)
    problems = info.value.problems
    assert problems and all(p.path.startswith("tools[0].behavior") for p in problems), problems
    assert all(p.hint.strip() for p in problems), [p.message for p in problems if not p.hint]


def test_a_misspelt_effect_key_is_not_called_an_op(tmp_path):
    behavior = "      effects: [{remove: /cart, were: {sku: '${args.sku}'}}]"
    code, out = validate(tmp_path, behavior)
    assert code == 2, out
    assert "unknown key 'were' in an effect; did you mean 'where'?" in out
    assert "effect op" not in out


E = "tools[0].behavior."
MISSING_ROOTS = [
    ("effects: [{increment: /item}]", f"8:18: {E}effects[0].increment", "/item", "items"),
    ("effects: [{set: /coupon/code, value: x}]", f"8:18: {E}effects[0].set", "/coupon", ""),
    (
        "preconditions: [{path: /carts, contains: {sku: x}}]",
        f"8:24: {E}preconditions[0].path",
        "/carts",
        "cart",
    ),
    ("response: {$select: /kart}", f"8:7: {E}response", "/kart", "cart"),
    ("response: {n: '${count/itemz}'}", f"8:7: {E}response", "/itemz", "items"),
]


@pytest.mark.parametrize(("behavior", "where", "root", "close"), MISSING_ROOTS)
def test_a_fixed_path_into_a_key_no_state_has_is_refused(tmp_path, behavior, where, root, close):
    code, out = validate(tmp_path, "      " + behavior)
    assert code == 2, out
    assert f"s.yaml:{where}: {root} is not in the suite's `state:`" in out
    assert "fails at every call" in out
    if close:
        assert f"did you mean {close!r}?" in out
    assert f"add `{root[1:]}:` with its first value under `state:`" in out


@pytest.mark.parametrize(
    ("behavior", "state", "case"),
    [
        # a key a case's state brings, one a one-part `set` creates, a test that it is missing
        ("      effects: [{increment: /coupons}]", "", "    state: {coupons: 0}\n"),
        ("      effects: [{set: /coupon, value: x}, {set: /coupon, value: y}]", "", ""),
        ("      preconditions: [{path: /coupon, exists: false}]", "", ""),
        ("      effects: [{set: '/${args.sku}', value: 1}]", "", ""),
        ("      effects: [{increment: /coupons}]", ", coupons: 1", ""),
    ],
)
def test_keys_that_may_exist_are_not_refused(tmp_path, behavior, state, case):
    code, out = validate(tmp_path, behavior, state=state, case=case)
    assert code == 0, out


def test_a_state_check_on_nothing_says_the_state_has_nothing_there(tmp_path):
    run = tmp_path / "run"
    done = cli("run", CALENDAR, "--record", "offline", "--out", run, "--case", "book lunch*")
    assert done.exit_code == 0, done.output
    suite = tmp_path / "calendar.yaml"
    text = CALENDAR.read_text(encoding="utf-8")
    shutil.copy(CALENDAR.with_suffix(".recordings.jsonl"), tmp_path)
    old = "        /events/0/attendee: Jane Doe\n"
    assert old in text
    suite.write_text(text.replace(old, old + "        /events/3/title: Dinner\n"), "utf-8")
    done = cli("score", suite, "-t", run, "--case", "book lunch*", "--json")
    assert "Traceback" not in done.output
    result = json.loads(done.output)["results"][0]
    checks = {c["path"]: c for c in result["details"]["state"]["checks"]}
    why = checks["/events/3/title"]["reason"]
    assert not checks["/events/3/title"]["match"]
    assert why.startswith("the state has nothing at /events/3/title (expected 'Dinner')"), why
    assert "argument" not in why


def test_a_state_check_or_unchanged_path_into_a_key_no_state_has_is_refused(tmp_path):
    expect = "      state: {/itemz: 1, /gone: {exists: false}}\n      unchanged: [/cart, /carts]"
    code, out = validate(tmp_path, APPEND, expect)
    assert code == 2, out
    assert (
        "s.yaml:14:15: cases[0].expect.state./itemz: /itemz is not in the suite's `state:` "
        "(nor in any case's), so nothing is ever there to check; did you mean 'items'?"
    ) in out
    assert (
        "s.yaml:15:26: cases[0].expect.unchanged[1]: /carts is not in the suite's `state:` "
        "(nor in any case's), so it checks nothing; did you mean 'cart'?"
    ) in out
    assert "/gone" not in out  # asking that nothing is there is what `exists: false` is for
    # A key a `set` at a reference may create is anyone's guess: nothing is refused.
    behavior = "      effects: [{set: '/${args.sku}', value: 1}, {increment: /itemz}]"
    code, out = validate(tmp_path, behavior, expect)
    assert code == 0, out


SCHEMA = json.loads((ROOT / "schemas" / "suite.schema.json").read_text(encoding="utf-8"))


def schema_errors(text: str) -> list[str]:
    import yaml
    from jsonschema import Draft202012Validator

    doc = yaml.safe_load(text)
    return [
        "/".join(map(str, e.absolute_path)) for e in Draft202012Validator(SCHEMA).iter_errors(doc)
    ]


VALID = SHOP % (
    ", coupon: none",
    """\
      preconditions:
        - {path: /coupon, equals: none, error: a coupon is applied}
        - {path: '/${args.sku}', exists: false}
        - {value: '${args.sku}', not_equals: '', min: 0, max: '${state/items}'}
      effects:
        - {append: /cart, value: {sku: '${args.sku}'}}
        - {increment: /items, by: '${count/cart}'}
        - {set: /cart, where: {sku: x}, at: /n, value: 1}
        - {remove: /cart, where: {sku: y}}
        - {set: /coupon, value: '${args.sku}'}
      response: {$select: /cart, $where: {sku: '${args.sku}'}, $first: true}""",
    "",
    "      state: {/cart/0: {value: {sku: MUG1}}, /items: {value: 1, numeric: {min: 0, max: 9}}}\n"
    "      unchanged: [/coupon]",
)

MISTAKES = [
    ("    behavior:\n", "    behavior:\n      efects: []\n", "tools/0/behavior"),
    ("{append: /cart,", "{apend: /cart,", "tools/0/behavior/effects/0"),
    ("{remove: /cart, where:", "{remove: /cart, were:", "tools/0/behavior/effects/3"),
    ("{path: /coupon, equals:", "{path: /coupon, equal:", "tools/0/behavior/preconditions/0"),
    ("{path: /coupon,", "{path: coupon,", "tools/0/behavior/preconditions/0/path"),
    ("exists: false}", "exists: no way}", "tools/0/behavior/preconditions/1/exists"),
    ("{set: /coupon, value: '${args.sku}'}", "{set: /coupon}", "tools/0/behavior/effects/4"),
    ("{remove: /cart, where: {sku: y}}", "{remove: /cart, at: /n}", "tools/0/behavior/effects/3"),
    ("by: '${count/cart}'", "by: [1]", "tools/0/behavior/effects/1/by"),
    ("/items: {value: 1,", "items: {value: 1,", "cases/0/expect/state"),
    ("unchanged: [/coupon]", "unchanged: [coupon]", "cases/0/expect/unchanged/0"),
    ("    user: hi\n", "    user: hi\n    turns: [{user: hi}]\n", "cases/0"),
]


def test_the_schema_accepts_a_whole_stateful_suite_and_flags_what_validate_refuses(tmp_path):
    assert schema_errors(VALID) == []
    (tmp_path / "good.yaml").write_text(VALID, encoding="utf-8")
    done = cli("validate", tmp_path / "good.yaml")
    assert done.exit_code == 0, done.output
    for old, new, where in MISTAKES:
        assert old in VALID, old
        text = VALID.replace(old, new, 1)
        assert where in schema_errors(text), (new, schema_errors(text))
        path = tmp_path / "bad.yaml"
        path.write_text(text, encoding="utf-8")
        done = cli("validate", path)
        assert done.exit_code == 2, (new, done.output)
        assert "Traceback" not in done.output
        lines = done.output.strip().splitlines()[:-1]
        assert len(lines) == len(set(lines)), done.output  # each worded once, by validate
        for line in lines:
            assert "; " in line, line  # with a fix
            for raw in ("does not match", "is a dependency", "Additional properties", "valid"):
                assert raw not in line, line


def test_scripted_turns_beside_a_simulated_user_are_one_mistake_said_once(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "suite: s\nmodels: [m, u]\ntools: [{name: t}]\ncases:\n"
        "  - name: c\n"
        "    user: {simulate: {goal: get it done, model: u}}\n"
        "    turns: [{user: hi}]\n"
        "    expect: {tool_calls: [{t: {}}]}\n",
        encoding="utf-8",
    )
    done = cli("validate", path)
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert lines[-1] == "1 problem found", done.output
    assert "s.yaml:7:5: cases[0].turns: a case with a simulated user cannot also have scripted" in (
        " ".join(done.output.split())
    )


def test_a_path_written_with_dots_or_brackets_is_shown_as_a_json_pointer(tmp_path):
    expect = (
        "      state:\n        /cart[0].sku: MUG1\n        /cart.0.qty: 2\n        cart.0.sku: MUG1"
    )
    code, out = validate(tmp_path, APPEND, expect)
    assert code == 2, out
    assert "./cart[0].sku: /cart[0].sku is not in the suite's `state:`" in out
    assert "separates keys and indexes with '/': write /cart/0/sku" in out
    assert "separates keys and indexes with '/': write /cart/0/qty" in out
    assert (
        "'cart.0.sku' is not a JSON Pointer; start it with '/' and separate keys and indexes "
        "with '/', e.g. /cart/0/sku"
    ) in out
    behavior = "      effects: [{increment: 'items.count'}]"
    code, out = validate(tmp_path, behavior)
    assert code == 2 and "e.g. /items/count" in out, out


@pytest.mark.parametrize(
    ("value", "message", "fix"),
    [
        (
            "'{{ args.sku }}'",
            "template uses undefined variable 'args'",
            "a call's arguments and the state are run-time references in a behavior, not {{ }} "
            "templates: write ${args.sku}",
        ),
        (
            "'{{ sku }}'",
            "template uses undefined variable 'sku'",
            "for the call's argument sku, write the run-time reference ${args.sku}; else define",
        ),
        ("'${sku}'", "${sku} is not a reference", "for the call's argument sku write ${args.sku}"),
        (
            "'${state.cart}'",
            "${state.cart} is not a reference",
            "a pointer into the state is written with '/': ${state/cart}",
        ),
    ],
)
def test_a_load_time_template_or_a_bare_name_in_a_behavior_is_shown_the_reference_meant(
    tmp_path, value, message, fix
):
    code, out = validate(tmp_path, f"      effects: [{{append: /cart, value: {value}}}]")
    assert code == 2, out
    assert f"tools[0].behavior.effects[0].value: {message}; {fix}" in out


def test_a_template_outside_a_behavior_keeps_its_advice(tmp_path):
    code, out = validate(tmp_path, APPEND, case="    vars: {n: 1}\n    tags: ['{{ sku }}']\n")
    assert code == 2, out
    assert "undefined variable 'sku'; define it in vars or the case's matrix (defined: n)" in out
    assert "${args" not in out


def test_the_plan_counts_one_item_in_the_singular():
    done = cli("plan", ROOT / "suites" / "support.yaml")
    assert done.exit_code == 0, done.output
    said = " ".join(done.output.split())
    assert "customer (simulated user): 1 item, ~" in said
    assert "gpt-4o-mini: 3 items, ~" in said


def test_a_run_time_reference_in_an_expected_argument_is_refused(tmp_path):
    path = tmp_path / "s.yaml"
    text = (SHOP % ("", APPEND, "", "")).replace("{sku: MUG1}}]", "{sku: '${args.sku}'}}]")
    path.write_text(text, encoding="utf-8")
    done = cli("validate", path)
    assert done.exit_code == 2, done.output
    said = " ".join(done.output.split())
    assert "s.yaml:13:32: cases[0].expect.tool_calls[0].sku: '${args.sku}' is a run-time" in said
    assert "write the value a good model sends" in said
    # `$${` is a literal `${`, as in a behavior: an argument may say it.
    path.write_text(text.replace("'${args.sku}'", "'$${args.sku}'"), encoding="utf-8")
    assert cli("validate", path).exit_code == 0


def test_a_run_time_reference_as_an_expected_state_value_is_refused(tmp_path):
    expect = "      state: {/cart/0/sku: '${args.sku}', /items: {value: '${count/cart}'}}"
    code, out = validate(tmp_path, APPEND, expect)
    assert code == 2, out
    assert "./cart/0/sku: '${args.sku}' is a run-time reference" in out
    assert "./items: '${count/cart}' is a run-time reference" in out
    assert "write the value the state should hold" in out


def test_a_turn_rule_without_turns_is_refused(tmp_path):
    code, out = validate(tmp_path, APPEND, case="    turn_rule: all_or_nothing\n")
    assert code == 2, out
    assert "s.yaml:12:5: cases[0].turn_rule: `turn_rule` combines the scores of `turns:`" in out
    assert "remove `turn_rule:`, or write the conversation as `turns:`" in out


def test_a_key_a_case_state_adds_that_nothing_reads_is_refused(tmp_path):
    code, out = validate(tmp_path, APPEND, case="    state: {kart: [{sku: MUG1}]}\n")
    assert code == 2, out
    assert "s.yaml:12:13: cases[0].state.kart: the suite's `state:` has no 'kart'" in out
    assert "did you mean 'cart'?" in out
    # A key a behavior reads, even only through a reference in a value, is the case's to add.
    behavior = "      effects: [{append: /cart, value: {cut: '${state/discount}'}}]"
    code, out = validate(tmp_path, behavior, case="    state: {discount: 5}\n")
    assert code == 0, out
    code, out = validate(
        tmp_path, APPEND, case="    state: {seen: 1}\n", expect="      unchanged: [/seen]"
    )
    assert code == 0, out


@pytest.mark.parametrize(
    ("behavior", "expect"),
    [
        ("      response: {$select: ''}", ""),  # the whole state, answered to the model
        ("      response: {all: '${state}'}", ""),
        ("      response: {$select: '/${args.sku}'}", ""),  # a key the call names
        ("      effects: [{increment: '/${args.sku}'}]", ""),
        (APPEND, "      unchanged: ['']"),  # the whole state judged
    ],
)
def test_a_key_a_case_adds_is_the_cases_own_when_any_key_may_be_read(tmp_path, behavior, expect):
    """A behaviour reading the whole state, or a key a reference names, reads every key a case
    adds; so does a check of the whole state."""
    code, out = validate(tmp_path, behavior, case="    state: {coupon: 5}\n", expect=expect)
    assert code == 0, out


def test_a_state_check_that_unchanged_forbids_is_refused(tmp_path):
    expect = (
        "      state: {/cart/0/sku: MUG1, /items: 0, /cart/1: {exists: false}}\n"
        "      unchanged: [/cart, /items]"
    )
    code, out = validate(tmp_path, APPEND, expect)
    assert code == 2, out
    assert (
        'cases[0].expect.state./cart/0/sku: /cart/0/sku is expected to end as "MUG1", but '
        "`unchanged` keeps /cart as it began (/cart/0/sku: nothing), so the two can never both "
        "hold; remove /cart from `unchanged`, or this state check"
    ) in out
    assert "/items is expected" not in out  # 0 is what it began with: no clash
    assert "/cart/1 is expected" not in out
    # Against the case's own initial state, which may hold what the check asks for.
    code, out = validate(
        tmp_path,
        APPEND,
        case="    state: {cart: [{sku: TEA}]}\n",
        expect="      state: {/cart/0/sku: TEA, /cart/1: {exists: false}}\n"
        "      unchanged: [/cart]",
    )
    assert code == 0, out


def test_a_turn_state_check_that_its_unchanged_forbids_is_refused(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "suite: s\nmodels: [m]\nstate: {n: 0}\n"
        "tools: [{name: t, behavior: {effects: [{increment: /n}]}}]\n"
        "cases:\n  - name: c\n    turns:\n      - user: hi\n"
        "        expect: {state: {/n: 1}, unchanged: ['']}\n",
        encoding="utf-8",
    )
    done = cli("validate", path)
    assert done.exit_code == 2, done.output
    said = " ".join(done.output.split())
    assert "s.yaml:9:30: cases[0].turns[0].expect.state./n: /n is expected to end as 1" in said
    assert "`unchanged` keeps the whole state as it began (/n: 0)" in said
    assert "remove '' from `unchanged`, or this state check" in said
