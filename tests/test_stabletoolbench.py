"""StableToolBench interop, checked against its real data in tests/data: the 3-query example
and its runs, and 12 of the 163 G1 queries (chosen to cover every parameter type and quirk).

A unit test of the StableToolBench reader (`evalspec._interop.stabletoolbench`) and of
ToolBench's function names (`evalspec._tools.toolbench_names`), which it imports: each piece
(queries, gold APIs, parameter names, converted answers, the API-call score) is held to
StableToolBench's own data and rules on its own, which the import as a whole cannot show;
`evalspec import stabletoolbench` end to end is in tests/test_bfcl_import.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from support import (
    called_apis,
    has_finish,
    majority_status,
    sopr_from_pass_rate_results,
    sopr_score,
)

from evalspec._interop.stabletoolbench import (
    api_to_tool,
    gold_apis,
    param_name,
    placed_queries,
    read_converted_answers,
)
from evalspec._tools.toolbench_names import api_call_score, function_name
from evalspec.records import ToolCall, Transcript

DATA = Path(__file__).resolve().parent / "data" / "stabletoolbench"


def load_queries(path: Path, ids: Path) -> list[dict]:
    """The queries of a test_instruction file whose ids `ids` (a test_query_ids file) lists."""
    return [q for _, q in placed_queries(path, ids)[0]]


EXAMPLE_QUERIES = DATA / "solvable_queries_example/test_instruction/G1_instruction.json"
EXAMPLE_IDS = DATA / "solvable_queries_example/test_query_ids/G1_instruction.json"
EXAMPLE = DATA / "data_example"
# 12 records of the G1 file, unchanged (tests/data/README.md says which and why).
G1 = DATA / "solvable_queries/test_instruction/G1_instruction.json"
G1_IDS = DATA / "solvable_queries/test_query_ids/G1_instruction.json"


@pytest.fixture(scope="module")
def queries() -> list[dict]:
    return load_queries(G1, G1_IDS)


@pytest.fixture(scope="module")
def example_queries() -> dict[str, dict]:
    return {str(q["query_id"]): q for q in load_queries(EXAMPLE_QUERIES, EXAMPLE_IDS)}


def converted(method: str) -> list[Transcript]:
    path = EXAMPLE / f"model_predictions_converted/virtual_chatgpt_{method}/G1_instruction.json"
    return read_converted_answers(path).transcripts


# ------------------------------------------------------------------------------------------
# Queries and tools


def test_id_filter_files_in_both_forms(tmp_path: Path, queries: list[dict]) -> None:
    assert len(queries) == 12
    example = load_queries(G1, EXAMPLE_IDS)  # {"588": 0, "608": 0, "1073": 0}
    assert [q["query_id"] for q in example] == [588, 608, 1073]
    as_list = tmp_path / "ids.json"
    as_list.write_text(json.dumps(["1073", 608]))
    assert [q["query_id"] for q in load_queries(G1, as_list)] == [608, 1073]


def test_every_g1_api_converts_to_a_valid_json_schema_tool(queries: list[dict]) -> None:
    converted_apis = 0
    for query in queries:
        for api in query["api_list"]:
            tool = api_to_tool(api)
            Draft202012Validator.check_schema(tool.parameters)
            params = api["required_parameters"] + api["optional_parameters"]
            assert tool.parameters["type"] == "object"
            assert len(tool.parameters["properties"]) <= len(params)
            assert len(tool.parameters.get("required", [])) <= len(api["required_parameters"])
            assert tool.name == function_name(api["tool_name"], api["api_name"])
            assert len(tool.name) <= 64
            converted_apis += 1
    assert converted_apis == 83


def test_rapidapi_types_become_json_schema_types(queries: list[dict]) -> None:
    seen: dict[str, set[str]] = {}
    duplicates = 0
    for query in queries:
        for api in query["api_list"]:
            properties = api_to_tool(api).parameters["properties"]
            names: set[str] = set()
            for param in api["required_parameters"] + api["optional_parameters"]:
                name = param_name(param["name"])
                if name in names:
                    duplicates += 1  # the first of two same-named parameters is kept
                    continue
                names.add(name)
                seen.setdefault(param["type"], set()).add(properties[name]["type"])
    # "Reqres - dont change!/User by id" lists array[] twice, "Riddlie/Riddle by ID" id twice.
    assert duplicates == 2
    assert seen == {
        "STRING": {"string"},
        "string": {"string"},
        "NUMBER": {"number"},
        "BOOLEAN": {"boolean"},
        "ENUM": {"string"},
        "DATE (YYYY-MM-DD)": {"string"},
        "OBJECT": {"object"},
        "ARRAY": {"array"},
    }


def test_conversion_matches_stabletoolbench_function_definitions(
    example_queries: dict[str, dict],
) -> None:
    """The answer files hold the functions StableToolBench showed the model; ours must agree."""
    for path in sorted((EXAMPLE / "answer").glob("*/G1_instruction/*.json")):
        data = json.loads(path.read_text())
        functions = {
            f["name"]: f for f in data["answer_generation"]["function"] if f["name"] != "Finish"
        }
        query = example_queries[path.name.split("_")[0]]
        tools = {t.name: t for t in map(api_to_tool, query["api_list"])}
        assert set(tools) == set(functions), path.name
        for name, tool in tools.items():
            fn = functions[name]
            assert tool.description == fn["description"]
            assert tool.parameters.get("required", []) == fn["parameters"]["required"]
            theirs = list(fn["parameters"]["properties"])
            ours = list(tool.parameters["properties"])
            if name == "get_channel_links_for_kick_com_api_kick_api":
                # ToolBench drops optional parameters of APIs that have no required ones; the
                # API's only parameter, channel_name (optional), is kept here.
                assert (theirs, ours) == ([], ["channel_name"])
            else:
                assert ours == theirs


def test_function_names() -> None:
    assert function_name("TheClique", "Transfermarkt details") == (
        "transfermarkt_details_for_theclique"
    )
    assert function_name("Kick.com API | Kick API", "Get Chat User (like user from chat)") == (
        "get_chat_user_like_user_from_chat_for_kick_com_api_kick_api"
    )
    assert function_name("Tool", "id") == "is_id_for_tool"
    assert function_name("Tool", "3D render") == "get_3d_render_for_tool"
    long = function_name("A" * 40, "B" * 40)
    assert len(long) == 64 and long.endswith("_for_" + "a" * 40)


# ------------------------------------------------------------------------------------------
# Converted answers, by hand
#
# Gold ("relevant APIs" in G1_instruction.json):
#   588:  (TheClique, Transfermarkt search), (TheClique, Transfermarkt details)
#   608:  (Kick.com API | Kick API, Get Channel Clips), (..., Get Channel Details)
#   1073: (Keyword Analysis, PopularSitesForQuery), (Keyword Analysis, QueryKeywords)
# Tool nodes of answer_details, read from model_predictions_converted/*/G1_instruction.json:
#   cot 588:  transfermarkt_search, transfermarkt_details, songkick_search_artist,
#             get_artist_overview, songkick_artist, list_artist_concerts (no Finish: the CoT run
#             stopped after 6 steps, final_answer "")
#   cot 608:  get_channel_clips, get_channel_details, Finish
#   cot 1073: popularsitesforquery, querykeywords, Finish
#   dfs 588:  transfermarkt_search, list_artist_concerts, transfermarkt_details,
#             get_artist_overview, Finish
#   dfs 608:  get_channel_clips, get_channel_details, Finish
#   dfs 1073: popularsitesforquery, querykeywords, Finish
# Both gold APIs are called in every run, so every API call score is 2/2 = 1.0; only cot 588
# has no Finish.
EXPECTED = {
    ("cot", "588"): (6, 1.0, False),
    ("cot", "608"): (3, 1.0, True),
    ("cot", "1073"): (3, 1.0, True),
    ("dfs", "588"): (5, 1.0, True),
    ("dfs", "608"): (3, 1.0, True),
    ("dfs", "1073"): (3, 1.0, True),
}


@pytest.mark.parametrize("method", ["cot", "dfs"])
def test_converted_answers_scores(method: str, example_queries: dict[str, dict]) -> None:
    transcripts = converted(method)
    assert sorted(t.case for t in transcripts) == ["1073", "588", "608"]
    for t in transcripts:
        query = example_queries[t.case]
        calls, score, finished = EXPECTED[(method, t.case)]
        assert len(t.tool_calls) == calls
        assert api_call_score(called_apis(t, [query]), gold_apis(query)) == score
        assert has_finish(t) is finished
        assert t.model == f"virtual_chatgpt_{method}"


def test_converted_answer_details(example_queries: dict[str, dict]) -> None:
    by_case = {t.case: t for t in converted("dfs")}
    t588 = by_case["588"]
    assert [c.name for c in t588.tool_calls][:3] == [
        "transfermarkt_search_for_theclique",
        "list_artist_concerts_for_theclique",
        "transfermarkt_details_for_theclique",
    ]
    details = t588.tool_calls[2]
    assert details.arguments == {
        "type_s": "players",
        "other": "",
        "id_talent": "28003",
        "part_slug": "",
    }
    assert details.output["name"] == "Cristiano Ronaldo"  # the virtual API's response object
    assert details.error is None
    assert t588.final_answer.startswith("Lionel Messi has had a remarkable career in football.")
    assert called_apis(t588, [example_queries["588"]]) == {
        ("TheClique", "Transfermarkt search"),
        ("TheClique", "Transfermarkt details"),
        ("TheClique", "List Artist Concerts"),
        ("TheClique", "Get Artist Overview"),
    }
    assert converted("cot")[1].final_answer is None  # cot 588: final_answer ""


# ------------------------------------------------------------------------------------------
# Scores and SoPR


def transcript(*names: str) -> Transcript:
    calls = tuple(ToolCall(name=n, arguments={}, raw_arguments="{}") for n in names)
    return Transcript(item_id="x", case="588", model="m", tool_calls=calls)


def test_seed_api_call_score_example() -> None:
    gold = {("TheClique", "Transfermarkt details"), ("TheClique", "Songkick concert")}
    called = {("TheClique", "Transfermarkt details"), ("TheClique", "Songkick concert")}
    assert api_call_score(called, gold) == 1.0
    assert api_call_score({("TheClique", "Transfermarkt details")}, gold) == 0.5
    assert api_call_score(called, set()) == 0.0


def test_called_apis_excludes_finish_and_accepts_seed_names(
    example_queries: dict[str, dict],
) -> None:
    query = example_queries["588"]
    t = transcript(
        "TheClique_Transfermarkt search",  # the seed's "<tool>_<api>" form
        "transfermarkt_search_for_theclique",
        "not_an_api_of_this_query",
        "Finish",
    )
    assert called_apis(t, [query]) == {("TheClique", "Transfermarkt search")}
    assert api_call_score(called_apis(t, [query]), gold_apis(query)) == 0.5


def test_finishless_run_is_unsolved(example_queries: dict[str, dict]) -> None:
    cot588 = next(t for t in converted("cot") if t.case == "588")
    assert not has_finish(cot588)
    query = example_queries["588"]
    assert api_call_score(called_apis(cot588, [query]), gold_apis(query)) == 1.0
    assert sopr_score("AnswerStatus.Solved", finished=has_finish(cot588)) == 0.0
    assert sopr_score("Solved", finished=False) == 0.0
    assert (sopr_score("Solved"), sopr_score("Unsure"), sopr_score("Unsolved")) == (1.0, 0.5, 0.0)


def test_pass_rate_results_files() -> None:
    # is_solved holds 3 evaluator votes per query; cot 588 is Unsolved x3, the rest Solved x3.
    cot = sopr_from_pass_rate_results(
        EXAMPLE / "pass_rate_results/virtual_chatgpt_cot/G1_instruction_virtual_chatgpt_cot.json"
    )
    dfs = sopr_from_pass_rate_results(
        EXAMPLE / "pass_rate_results/virtual_chatgpt_dfs/G1_instruction_virtual_chatgpt_dfs.json"
    )
    assert {q: (r["status"], r["sopr"]) for q, r in cot.items()} == {
        "588": ("Unsolved", 0.0),
        "608": ("Solved", 1.0),
        "1073": ("Solved", 1.0),
    }
    assert {q: r["sopr"] for q, r in dfs.items()} == {"588": 1.0, "608": 1.0, "1073": 1.0}
    assert cot["608"]["votes"] == ["Solved", "Solved", "Solved"]


def test_vote_aggregation(tmp_path: Path) -> None:
    path = tmp_path / "pr.json"
    path.write_text(
        json.dumps(
            {
                "1": {"is_solved": {"0": "AnswerStatus.Solved", "1": "AnswerStatus.Unsure"}},
                "2": {
                    "is_solved": {
                        "0": "AnswerStatus.Solved",
                        "1": "AnswerStatus.Unsolved",
                        "2": "AnswerStatus.Solved",
                    }
                },
            }
        )
    )
    result = sopr_from_pass_rate_results(path)
    assert result["1"] == {"votes": ["Solved", "Unsure"], "status": "Unsure", "sopr": 0.75}
    assert result["2"]["status"] == "Solved"
    assert result["2"]["sopr"] == pytest.approx(2 / 3)
    assert majority_status([]) == "Unsolved"


def test_converted_messages_may_be_json_strings(tmp_path: Path) -> None:
    """The seed shows answer_details messages as JSON strings; the real files use objects."""
    step = {
        "name": "transfermarkt_search_for_theclique",
        "arguments": '{"name": "messi"}',
        "response": '{"error": "timeout", "response": ""}',
    }
    finish = {
        "name": "Finish",
        "arguments": '{"return_type": "give_answer", "final_answer": "x"}',
        "response": "",
    }
    tree = [
        {
            "role": "system",
            "message": "",
            "next": [
                {
                    "role": "tool",
                    "message": json.dumps(step),
                    "next": [{"role": "tool", "message": json.dumps(finish), "next": []}],
                }
            ],
        }
    ]
    path = tmp_path / "run" / "G1_instruction.json"
    path.parent.mkdir()
    path.write_text(
        json.dumps(
            {
                "7": {
                    "query": "q",
                    "answer": {
                        "method": "CoT@1",
                        "final_answer": finish["arguments"],
                        "answer_details": tree,
                    },
                }
            }
        )
    )
    (t,) = read_converted_answers(path).transcripts
    assert (t.case, t.model, t.final_answer) == ("7", "run", "x")
    assert t.tool_calls[0].arguments == {"name": "messi"}
    assert t.tool_calls[0].error == "timeout" and t.tool_calls[0].output is None
    assert has_finish(t)
