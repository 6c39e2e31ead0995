"""The records loading makes for every case (Case, Expectation, ExpectedCall, Loc) set their
slots straight through each slot's descriptor, for speed: a unit test of evalspec._suite.model,
which it imports, since how a record is built is invisible to a user unless it goes wrong.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from evalspec._suite.model import Case, Expectation, ExpectedCall, Loc


def test_the_records_made_for_every_case_behave_as_their_dataclasses_say() -> None:
    """Case, Expectation, ExpectedCall, Loc (and the others made per case) set their slots
    straight through each slot's descriptor, for speed; nothing else about them changes."""
    call = ExpectedCall("add")
    assert call == ExpectedCall("add", {}, (), None, False, Loc())
    assert call.args == {} and call.args is not ExpectedCall("add").args  # a fresh factory dict
    assert ExpectedCall(tool="add", args={"a": 1}).args == {"a": 1}
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.tool = "mul"  # type: ignore[misc]
    assert dataclasses.replace(call, tool="mul") == ExpectedCall("mul")
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'tool'"):
        ExpectedCall()  # type: ignore[call-arg]
    case = Case("c", (), Expectation((call,)))
    assert case.trials == 1 and case.expect.tool_calls == (call,) and case.loc == Loc()
    shown = str(inspect.signature(ExpectedCall))
    assert shown.startswith("(tool: 'str', args: 'dict[str, Any]' = <factory>, critics:")
