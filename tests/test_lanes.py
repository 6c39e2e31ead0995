"""The two test lanes (tests/conftest.py): the default one leaves out the tests marked slow,
`--all` (the README's command, run by CI) keeps them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import support
from support import EVERY_EXAMPLE, examples, marks_module_slow

HERE = Path(__file__)


def collected(capsys: pytest.CaptureFixture[str], *args: str) -> set[str]:
    """Test ids a pytest session with these arguments would run, over this module (collecting
    a module of real slow tests twice cost seconds)."""
    capsys.readouterr()
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", str(HERE), *args])
    assert code == 0
    return {line for line in capsys.readouterr().out.splitlines() if "::" in line}


@pytest.mark.slow  # four pytest sessions: seconds; the check below covers the fast lane
def test_the_default_lane_leaves_out_the_slow_tests(capsys: pytest.CaptureFixture[str]) -> None:
    everything = collected(capsys, "--all")
    fast = collected(capsys)
    assert fast < everything
    assert any("test_a_slow_test_runs_with_all_only" in t for t in everything)
    assert not any("test_a_slow_test_runs_with_all_only" in t for t in fast)
    assert any("test_this_session_runs_slow_tests_only_when_asked" in t for t in fast)
    assert collected(capsys, "-m", "slow") == everything - fast


def test_this_session_runs_slow_tests_only_when_asked(request: pytest.FixtureRequest) -> None:
    """The lanes of the session running this test, without starting another: in the default
    lane no test marked slow is left to run (test_a_slow_test_runs_with_all_only below was
    collected and deselected), and property tests run a share of their examples."""
    config = request.config
    asked = bool(config.getoption("--all") or config.getoption("markexpr"))
    assert EVERY_EXAMPLE is asked
    if not asked:
        assert [i.nodeid for i in request.session.items if "slow" in i.keywords] == []


@pytest.mark.slow
def test_a_slow_test_runs_with_all_only() -> None:
    """Marked slow, so the default lane leaves it out (the checks above)."""


def test_property_tests_run_a_tenth_of_their_examples_here() -> None:
    assert examples(300) == (300 if EVERY_EXAMPLE else 30) and examples(40) >= 10


def test_a_module_marked_slow_as_a_whole_is_not_even_imported_here(
    request: pytest.FixtureRequest,
) -> None:
    """The default lane does not import a module whose `pytestmark` marks it slow (unless it is
    named on the command line): collecting Ray's, a browser's or MkDocs's tests only to
    deselect them cost seconds of imports."""
    whole = [p for p in HERE.parent.glob("test_*.py") if marks_module_slow(p)]
    assert "test_ray_run.py" in {p.name for p in whole} and not marks_module_slow(HERE)
    config = request.config
    if not (config.getoption("--all") or config.getoption("markexpr")):
        imported = [p.stem for p in whole if p.stem in sys.modules]
        assert [
            m for m in imported if not request.session.isinitpath(HERE.parent / f"{m}.py")
        ] == []


def test_the_collector_is_on_while_tests_run() -> None:
    """conftest turns the garbage collector off while test modules are imported only."""
    import gc

    assert gc.isenabled()


def test_the_default_lane_keeps_its_temporary_files_in_memory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Where the machine has a roomy /dev/shm and TMPDIR chooses nothing, tmp_path is there in
    the default lane (the fsyncs of run files cost seconds on a disk); `--all` keeps the
    system's. The session decided where when it started: tmp_path follows that decision."""
    import os
    import tempfile

    config = request.config
    asked = bool(config.getoption("--all") or config.getoption("markexpr"))
    chosen = any(os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP"))
    in_memory = Path(tempfile.gettempdir()).resolve() == support.MEMORY.resolve()
    assert not (in_memory and (asked or chosen))
    assert tmp_path.resolve().is_relative_to(support.MEMORY.resolve()) == in_memory


@pytest.mark.parametrize(("free", "kept"), [(64 << 20, False), (8 << 30, True)])
def test_a_small_dev_shm_keeps_the_systems_place(
    monkeypatch: pytest.MonkeyPatch, free: int, kept: bool
) -> None:
    """A container's /dev/shm is 64 MiB by default, less than the lane leaves there over the
    three sessions pytest keeps: the lane uses it only with a gibibyte free."""
    import os

    for name in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.delenv(name, raising=False)
    if not (support.MEMORY.is_dir() and os.access(support.MEMORY, os.W_OK | os.X_OK)):
        pytest.skip("this machine has no writable /dev/shm")

    class Room:
        f_bavail, f_frsize = free // 4096, 4096

    monkeypatch.setattr(os, "statvfs", lambda path: Room())
    assert support.memory_may_hold_temporary_files() == kept
