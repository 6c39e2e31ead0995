"""The two test lanes (tests/conftest.py): the default one leaves out the tests marked slow,
`--all` (the README's command, run by CI) keeps them."""

from __future__ import annotations

from pathlib import Path

import pytest

FAULTS = Path(__file__).with_name("test_call_faults.py")


def collected(capsys: pytest.CaptureFixture[str], *args: str) -> set[str]:
    """Test ids a pytest session with these arguments would run, over test_call_faults.py."""
    capsys.readouterr()
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", str(FAULTS), *args])
    assert code == 0
    return {line for line in capsys.readouterr().out.splitlines() if "::" in line}


def test_the_default_lane_leaves_out_the_slow_tests(capsys: pytest.CaptureFixture[str]) -> None:
    everything = collected(capsys, "--all")
    fast = collected(capsys)
    assert fast < everything
    assert any("test_a_faulty_endpoint_is_its_callers_error[model]" in t for t in everything)
    assert not any("test_a_faulty_endpoint_is_its_callers_error" in t for t in fast)
    assert any("test_every_fault_is_one_requests_error[drip]" in t for t in fast)
