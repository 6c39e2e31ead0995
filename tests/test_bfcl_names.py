"""BFCL's name rule per checker: an answer naming a function by another spelling of an offered
function, judged as BFCL's checker for the record's category judges it.

The records are BFCL's own (tests/data/bfcl_faults, v3 simple_363: the possible answer names
`find_closest`, the record offers `restaurant_search.find_closest`). BFCL's simple checker
compares the model's call with the record's first function, whatever the answer calls it; the
multiple and parallel checkers look the answer's name up among the offered functions, find
nothing, and no call passes (BFCL's checker raises there: an errored record fails). The oracle
is bfcl-eval's own `ast_checker`.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from support import BFCL_EVAL_ABSENT, bfcl_checker, bfcl_transcript, read_records, write_suite_yaml

from evalspec.api import load_suite, score

DATA = Path(__file__).resolve().parent / "data" / "bfcl_faults"
SIMPLE = read_records(DATA / "BFCL_v3_simple.json")
ANSWERS = read_records(DATA / "possible_answer/BFCL_v3_simple.json")
TRUTH = {a["id"]: a["ground_truth"] for a in ANSWERS}
RECORD = next(r for r in SIMPLE if r["id"] == "simple_363")
ARGS = {"location": "Boston", "cuisine": "Sushi", "amenities": ["Patio"]}

OUTPUTS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "offered_name": [("restaurant_search.find_closest", ARGS)],
    "answer_spelling": [("find_closest", ARGS)],
    "underscored": [("restaurant_search_find_closest", ARGS)],
    "offered_name_other_value": [("restaurant_search.find_closest", {**ARGS, "location": "NYC"})],
    "offered_name_no_optional": [
        ("restaurant_search.find_closest", {"location": "Boston, MA", "cuisine": "sushi"})
    ],
    "two_calls": [("restaurant_search.find_closest", ARGS)] * 2,
    "no_call": [],
}


def bfcl_verdict(category: str, record: dict[str, Any], calls: list[Any]) -> bool:
    """bfcl-eval's ast_checker on the calls; a checker that raises is an errored record: fail."""
    checker, python = bfcl_checker()
    output = [{name: args} for name, args in calls]
    try:
        verdict = checker(record["function"], output, TRUTH["simple_363"], python, category, "m")
    except Exception:
        return False
    return bool(verdict["valid"])


def evalspec_verdicts(tmp_path: Path, category: str) -> dict[str, bool]:
    """`import bfcl` of the record under `category`'s id, every output scored."""
    rid = f"{category}_363"
    record = {**RECORD, "id": rid}
    answer = {"id": rid, "ground_truth": TRUTH["simple_363"]}
    (path,) = write_suite_yaml([record], [answer], tmp_path / f"{category}.yaml", name=category)
    transcripts = [bfcl_transcript(rid, name, calls) for name, calls in OUTPUTS.items()]
    results = score(load_suite(path), transcripts).results
    return {r.item_id.split(":")[1]: r.status in ("pass", "warn") for r in results}


@pytest.mark.timeout(120)
@pytest.mark.skipif(importlib.util.find_spec("bfcl_eval") is None, reason=BFCL_EVAL_ABSENT)
@pytest.mark.parametrize("category", ["simple", "multiple", "parallel", "parallel_multiple"])
def test_another_spelling_is_judged_as_bfcls_checker_for_the_category(category, tmp_path):
    ours = evalspec_verdicts(tmp_path, category)
    theirs = {name: bfcl_verdict(category, RECORD, calls) for name, calls in OUTPUTS.items()}
    assert ours == theirs
    # The rule itself: the simple checker passes the offered function; the others pass nothing.
    assert theirs["offered_name"] is (category == "simple")
    if category != "simple":
        assert not any(theirs.values())


def test_simple_363_expects_the_offered_function(tmp_path):
    """What the imported suite says (it expected no call and was tagged for a parameter)."""
    (path,) = write_suite_yaml(SIMPLE, ANSWERS, tmp_path / "s.yaml", name="s", names="dotted")
    case = next(c for c in load_suite(path).cases if c.name == "simple_363")
    assert case.tags == ("simple",)
    (call,) = case.expect.tool_calls
    assert call.tool == "restaurant_search.find_closest"
    assert json.loads(json.dumps(call.args)) == ARGS
