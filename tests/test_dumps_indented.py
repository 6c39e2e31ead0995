"""`--json` output is the indented dump it always was, whatever the values hold.

A unit test of evalspec._util.json_values, whose writer it imports.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalspec._util.json_values import dumps_indented

VALUES: list[Any] = [
    {"empty": [], "obj": {}, "nested": [[], {}, [{"k": []}]]},
    [1, -0.0, 2.5, 1e16, 1.5e300, 10**40, None, True, False],
    {"text": 'é ü \u2028 \x01 " \\ / \n \t 日本', "é": "key not ascii"},
    {"constants": [float("nan"), float("inf"), -float("inf")]},
    {"unserialisable": {1, 2}.__class__, "path": __import__("pathlib").Path("a/b")},
    "just a string",
    [],
]


@pytest.mark.parametrize("value", VALUES)
def test_same_text_as_an_indented_dump(value: Any) -> None:
    assert dumps_indented(value) == json.dumps(value, indent=2, ensure_ascii=False, default=str)
