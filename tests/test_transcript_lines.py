"""Transcript lines of stateful conversations: the same text `dumps_line` writes, however
many snapshots share a collection whose JSON text is made once.

A unit test of the transcript writer's internals, which it imports.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples

from evalspec._runner.transcript_lines import StateLines
from evalspec._util.files import dumps_line
from evalspec._util.finite import NotFiniteError

LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),  # lone surrogates and control characters included
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=20,
)
STATES = st.one_of(VALUES, st.dictionaries(st.text(max_size=4), VALUES, max_size=4))


def transcript(state: Any, turns: list[Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"case": "c", "latency_s": 0.25, "messages": [], "state": state}
    data["user_turns"] = [{"user": f"turn {i}", "changes": [s]} for i, s in enumerate(turns)]
    return data


def written(line: Any, data: dict[str, Any]) -> str | NotFiniteError:
    """The line, or the error that refuses a NaN or an infinity (JSON holds neither)."""
    try:
        return str(line(data))
    except NotFiniteError as exc:
        return exc


@pytest.mark.slow
@settings(max_examples=examples(200), deadline=None)
@given(STATES, st.lists(STATES, max_size=3))
def test_a_line_is_the_text_dumps_line_writes(state: Any, turns: list[Any]):
    lines = StateLines()
    for _ in range(2):  # the second time, collections come from what was kept
        data = transcript(state, turns)
        mine, theirs = written(lines.line, data), written(dumps_line, data)
        assert str(mine) == str(theirs)
        assert isinstance(mine, NotFiniteError) == isinstance(theirs, NotFiniteError)


def test_snapshots_sharing_records_write_each_snapshot_as_it_is():
    records = [{"id": i, "label": f"record {i}"} for i in range(100)]
    lines = StateLines()
    log: list[Any] = []
    snapshots = []
    for turn in range(5):  # as effects do: a new log each call, the records shared
        log = [*log, {"turn": turn, "text": "caf\u00e9 \ud83d"}]
        snapshots.append({"log": log, "records": records})
    data = transcript(snapshots[-1], snapshots)
    assert lines.line(data) == dumps_line(data)
    other = transcript({"log": [], "records": records}, [])
    assert lines.line(other) == dumps_line(other)


def test_a_value_freed_and_its_id_reused_is_not_mistaken_for_it():
    lines = StateLines()
    for i in range(3000):  # lists made and dropped: ids come back, texts must not
        data = transcript({"items": [i, i + 1]}, [])
        assert lines.line(data) == dumps_line(data)
