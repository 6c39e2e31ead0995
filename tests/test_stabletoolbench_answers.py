"""StableToolBench's published converted answers (tool nodes as cut-off `str(dict)` text)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support import evalspec_cli, has_finish

from evalspec.api import load_transcripts

PUBLISHED = (
    Path(__file__).resolve().parent
    / "data/stabletoolbench/toolbench/tooleval/results/default_evalset/gpt-3.5-turbo_CoT"
    / "G2_instruction.json"
)


def _stb_finish_rule(record: dict) -> bool:
    """StableToolBench's own test (tooleval/utils.py get_steps + eval_pass_rate.py)."""
    node, final = record["answer"]["answer_details"][0], ""
    while "next" in node:
        if node["message"] and node["role"] == "tool":
            final = f"Final step: {node['message']}"
        if not node["next"]:
            break
        node = node["next"][0]
    return "'name': 'Finish'" in final


def test_published_text_nodes_keep_every_call(tmp_path: Path) -> None:
    """Tool nodes as cut-off `str(dict)` text: every call kept, cut-off arguments unreadable."""

    raw = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    nodes = [
        n["message"]
        for r in raw.values()
        for n in _walk(r["answer"]["answer_details"])
        if n["role"] == "tool"
    ]
    out = tmp_path / "t.jsonl"
    res = evalspec_cli(["import", "stabletoolbench-answers", str(PUBLISHED), "--out", str(out)])
    assert res.exit_code == 0, res.output
    transcripts = load_transcripts(out)  # what the command wrote
    calls = [c for t in transcripts for c in t.tool_calls]
    assert len(calls) == len(nodes) > 30
    assert [c.name for c in calls] == [re.search(r"'name': '(.*?)'", m).group(1) for m in nodes]
    cut = [c for c in calls if c.arguments is None]
    assert cut and all(
        c.raw_arguments and c.raw_arguments.replace("\n", "\\n") in m
        for c, m in zip(calls, nodes, strict=True)
        if c in cut
    )
    finished = sum(_stb_finish_rule(r) for r in raw.values())
    assert [has_finish(t) for t in transcripts] == [_stb_finish_rule(r) for r in raw.values()]
    assert (
        f"{len(nodes)} tool nodes read, {len(calls)} calls kept ({len(cut)} with cut-off "
        f"arguments, kept as unreadable), 0 dropped; {finished} runs end with Finish"
    ) in res.output


def _walk(nodes: list[dict]):
    for n in nodes:
        yield n
        yield from _walk(n.get("next") or [])


def test_node_text_is_never_run_and_unreadable_nodes_stop_the_import(tmp_path: Path) -> None:

    marker = tmp_path / "ran"
    evil = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"
    tree = [
        {"role": "system", "message": "", "next": [{"role": "tool", "message": evil, "next": []}]}
    ]
    path = tmp_path / "run" / "G1.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"1": {"query": "q", "answer": {"answer_details": tree}}}))
    out = tmp_path / "t.jsonl"
    res = evalspec_cli(["import", "stabletoolbench-answers", str(path), "--out", str(out)])
    assert res.exit_code == 2 and "1 tool node(s) name no call" in res.output
    assert "Traceback" not in res.output
    assert not out.exists() and not marker.exists()


def test_a_tree_too_deep_to_read_is_a_clear_error(tmp_path: Path) -> None:

    node: dict = {"role": "tool", "message": "{'name': 'f', 'arguments': '{}'}", "next": []}
    text = json.dumps(node)
    for _ in range(5000):  # nested deeper than any JSON reader recurses
        text = '{"role": "tool", "message": "{\'name\': \'f\'}", "next": [' + text + "]}"
    path = tmp_path / "run" / "G1.json"
    path.parent.mkdir()
    path.write_text('{"1": {"query": "q", "answer": {"answer_details": [' + text + "]}}}")
    out = tmp_path / "t.jsonl"
    res = evalspec_cli(["import", "stabletoolbench-answers", str(path), "--out", str(out)])
    assert res.exit_code == 2 and "nests deeper" in res.output
    assert not out.exists()


def test_imported_suite_and_answers_score_without_naming_the_model(tmp_path: Path) -> None:
    """`import stabletoolbench` then `import stabletoolbench-answers`, neither given -m: the
    answers (labelled by their folder) score under the suite's one model, as it says."""

    data = Path(__file__).parent / "data" / "stabletoolbench"
    queries = data / "solvable_queries_example"
    answers = data / "data_example" / "model_predictions_converted" / "virtual_chatgpt_cot"
    suite = tmp_path / "stb.yaml"
    made = evalspec_cli([
            "import", "stabletoolbench", str(queries / "test_instruction" / "G1_instruction.json"),
            "--ids", str(queries / "test_query_ids" / "G1_instruction.json"), "--out", str(suite),
        ],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    transcripts = tmp_path / "t.jsonl"
    got = evalspec_cli([
            "import", "stabletoolbench-answers", str(answers / "G1_instruction.json"),
            "--out", str(transcripts),
        ],
    )  # fmt: skip
    assert got.exit_code == 0, got.output
    results = tmp_path / "results.json"
    scored = evalspec_cli(["score", str(suite), "-t", str(transcripts), "--out", str(results)])
    assert "nothing to score" not in scored.output
    assert "3 imported transcripts labelled 'virtual_chatgpt_cot' scored as" in scored.output
    cases = json.loads(results.read_text(encoding="utf-8"))["cases"]
    assert sorted(c["case"] for c in cases) == ["1073", "588", "608"]
