"""Importers against random JSON: a few hundred documents per importer (seeded: derandomized),
random values and real records of each benchmark with parts replaced, removed or retyped.

Each import either imports (exit 0; a suite it writes validates) or is a usage error (exit 2,
nothing written); never another exception, never a traceback, and no control character of the
file reaches the terminal (each is shown as an escape).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import BUMP_TOOLS, fuzz_settings, in_process

from evalspec import api

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parent / "data"
FUZZ = fuzz_settings()
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""What no message may hold: control characters, and the marks that reorder text."""

NAMES = ["\x1b[31m", "\u202e", "a\x07b", "\r", "x" * 300, ""]
KEYS = [
    *("id", "question", "function", "ground_truth", "result", "name", "parameters"),
    *("role", "content", "properties", "type", "required", "api_list", "query", "query_id"),
    *("relevant APIs", "tool_name", "api_name", "answer", "answer_details", "message", "next"),
    *("final_answer", "task_id", "trial", "reward", "info", "task", "actions", "kwargs"),
    *("outputs", "traj", "tool_calls", "arguments", "tool_call_id", "reward_info"),
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(NAMES),
)
deep = st.integers(40, 260).map(lambda n: json.loads("[" * n + "]" * n))
"""A list nested deeper than any benchmark nests (past 200 levels: refused when parsed)."""
keys = st.one_of(st.sampled_from(KEYS), st.sampled_from(NAMES), st.text(max_size=6))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=20,
)


def _mutate(node: Any, draw: Callable[[Any], Any]) -> Any:
    """`node` with one part somewhere in it replaced by a random value, or removed."""
    if isinstance(node, dict | list) and node and draw(st.integers(0, 9)):  # mostly deep
        at = draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
        if draw(st.integers(0, 4)) == 0:
            del node[at]
        else:
            node[at] = _mutate(node[at], draw)
        return node
    return draw(st.one_of(json_values, json_values, json_values, deep))


@st.composite
def mutated(draw: Callable[[Any], Any], base: Any) -> Any:
    """`base` with one to three parts replaced or removed."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        doc = _mutate(doc, draw)
    return doc


def documents(base: Any) -> st.SearchStrategy[Any]:
    """Random JSON documents, and real ones made wrong in places."""
    return st.one_of(json_values, deep, mutated(base), mutated(base), mutated(base))


def as_text(doc: Any, lines: bool) -> str:
    """A document as a file: JSON Lines (a record per line) when `lines` and it is a list."""
    if lines and isinstance(doc, list):
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in doc)
    return json.dumps(doc, ensure_ascii=False)


def first_lines(path: Path, count: int) -> list[Any]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()[:count]]


BFCL_Q = first_lines(DATA / "bfcl" / "BFCL_v4_multiple.json", 3)
BFCL_A = first_lines(DATA / "bfcl" / "possible_answer" / "BFCL_v4_multiple.json", 3)
BFCL_R = [{"id": q["id"], "result": "[f(a=1)]"} for q in BFCL_Q]
STB_Q = json.loads(
    (
        DATA / "stabletoolbench/solvable_queries_example/test_instruction/G1_instruction.json"
    ).read_text("utf-8")
)[:2]
STB_A = dict(
    list(
        json.loads(
            (
                DATA / "stabletoolbench/data_example/model_predictions_converted"
                / "virtual_chatgpt_cot/G1_instruction.json"
            ).read_text("utf-8")
        ).items()
    )[:2]
)  # fmt: skip
CALL = {"id": "c1", "type": "function", "function": {"name": "bump", "arguments": '{"by": 2}'}}
TAU = [
    {**run, "trial": trial}
    for trial in range(2)
    for run in [
        {
            "task_id": 0,
            "trial": 0,
            "reward": 1.0,
            "info": {
                "task": {"actions": [{"name": "bump", "kwargs": {"by": 2}}], "outputs": ["2"]}
            },
            "traj": [
                {"role": "user", "content": "bump it"},
                {"role": "assistant", "content": None, "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "c1", "name": "bump", "content": "2"},
                {"role": "assistant", "content": "done: 2"},
            ],
        }
    ]
]


@pytest.fixture(scope="module")
def work() -> Any:
    """A folder of the files every import reads besides the fuzzed one."""
    folder = Path(tempfile.mkdtemp(prefix="evalspec-import-fuzz-"))
    (folder / "q.json").write_text(as_text(BFCL_Q, True), "utf-8")
    (folder / "a.json").write_text(as_text(BFCL_A, True), "utf-8")
    api.import_bfcl(folder / "q.json", folder / "bfcl.yaml", folder / "a.json", names="dotted")
    (folder / "world.json").write_text(json.dumps({"counters": {"c": 0}}), "utf-8")
    (folder / "tools.yaml").write_text(BUMP_TOOLS, "utf-8")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def imported(work: Path, text: str, *args: str) -> None:
    """Import `text` (written to fuzzed.json) with `args`: exit 0 or 2 only, no traceback, no
    control character shown; on 0, every suite written validates; on 2, nothing written."""
    (work / "fuzzed.json").write_text(text, "utf-8")
    imported_bytes(work, list(args))


def imported_bytes(work: Path, args: list[str]) -> None:
    """`imported`, of the fuzzed.json already written."""
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    done = in_process("import", *args, cwd=work)  # any other exception fails the test
    said = done.stdout + done.stderr
    assert done.returncode in (0, 2), said
    assert "Traceback" not in said
    assert not CONTROL.search(said), said
    written = sorted(out.glob("*")) if out.exists() else []
    if done.returncode == 2:
        assert not written, (said, written)
    else:
        for path in written:
            if path.suffix == ".yaml":
                api.load_suite(path)  # validates


@FUZZ
@given(documents(BFCL_Q), st.booleans())
def test_bfcl_questions(work: Path, doc: Any, lines: bool) -> None:
    out = ["--names", "dotted", "--out", "out/s.yaml"]
    imported(work, as_text(doc, lines), "bfcl", "fuzzed.json", "a.json", *out)


@FUZZ
@given(documents(BFCL_A), st.booleans())
def test_bfcl_answers(work: Path, doc: Any, lines: bool) -> None:
    out = ["--names", "dotted", "--out", "out/s.yaml"]
    imported(work, as_text(doc, lines), "bfcl", "q.json", "fuzzed.json", *out)


@FUZZ
@given(documents(BFCL_R), st.booleans())
def test_bfcl_results(work: Path, doc: Any, lines: bool) -> None:
    args = ["bfcl-results", "bfcl.yaml", "fuzzed.json", "--out", "out/t.jsonl"]
    imported(work, as_text(doc, lines), *args)


@FUZZ
@given(documents(STB_Q))
def test_stabletoolbench_queries(work: Path, doc: Any) -> None:
    imported(work, as_text(doc, False), "stabletoolbench", "fuzzed.json", "--out", "out/s.yaml")


@FUZZ
@given(documents(STB_A), st.booleans())
def test_stabletoolbench_answers(work: Path, doc: Any, suite: bool) -> None:
    """With a suite of the answers' queries (judged), or transcripts only."""
    args = ["stabletoolbench-answers", "fuzzed.json", "--out", "out/t.jsonl"]
    judged = ["--suite-out", "out/s.yaml", "--judge", "judge-model"] if suite else []
    imported(work, as_text(doc, False), *args, *judged)


@FUZZ
@given(documents(TAU))
def test_tau_bench_trajectories(work: Path, doc: Any) -> None:
    args = ["tau-bench", "fuzzed.json", "--world", "world.json", "--tools", "tools.yaml"]
    imported(work, as_text(doc, False), *args, "--suite-out", "out/s.yaml", "--out", "out/t.jsonl")


IMPORTS = {
    "bfcl": ["bfcl", "fuzzed.json", "a.json", "--names", "dotted", "--out", "out/s.yaml"],
    "bfcl-results": ["bfcl-results", "bfcl.yaml", "fuzzed.json", "--out", "out/t.jsonl"],
    "stabletoolbench": ["stabletoolbench", "fuzzed.json", "--out", "out/s.yaml"],
    "stabletoolbench-answers": ["stabletoolbench-answers", "fuzzed.json", "--out", "out/t.jsonl"],
    "tau-bench": [
        *("tau-bench", "fuzzed.json", "--world", "world.json", "--tools", "tools.yaml"),
        *("--suite-out", "out/s.yaml", "--out", "out/t.jsonl"),
    ],
}


@FUZZ
@given(st.sampled_from(list(IMPORTS)), st.binary(max_size=200), st.sampled_from(["", "[", "{"]))
def test_any_bytes(work: Path, importer: str, data: bytes, start: str) -> None:
    """Bytes that are not UTF-8, not JSON, torn: refused whole or line by line."""
    (work / "fuzzed.json").write_bytes(start.encode() + data)
    imported_bytes(work, IMPORTS[importer])
