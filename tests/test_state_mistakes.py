"""Mistakes made writing a stateful suite from the documentation, each answered where it is
written with what is wrong and how to fix it (exit 2, no traceback), and report rows about the
state said in the state's words."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evalspec._cli import app
from evalspec._suite.state_spec import SpecProblem, compile_behavior

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
    return CliRunner().invoke(app, [str(a) for a in args])


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
def test_every_behavior_problem_says_how_to_fix_it(raw):
    with pytest.raises(SpecProblem) as info:
        compile_behavior(raw)
    assert info.value.hint.strip(), info.value.message


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
