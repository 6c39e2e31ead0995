"""Simulated tool backends: rules, StableToolBench caches, and the LLM simulator over real HTTP.

A unit test of the tool simulator (`evalspec._tools.simulated`), its StableToolBench
cache reader (`evalspec._tools.stb_cache`) and the LLM simulator (`evalspec._tools.llm_sim`),
which it imports: rule matching, cache lookup and the simulator's request and reply parsing are
checked call by call, below what a run shows.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support import serve_in_thread

from evalspec._providers.calls import ModelCalls
from evalspec._suite.model import LLMSimulation, SimulatedResponse, Tool
from evalspec._tools.llm_sim import LLMSimulatorBackend, parse_reply
from evalspec._tools.result import ToolResult
from evalspec._tools.simulated import ToolSimulator, values_match
from evalspec._tools.stb_cache import ResponseCache, index_cache_dir
from evalspec._tools.toolbench_names import function_name

CALLS = ModelCalls(timeout_s=10, retries=0)
"""The LLM simulator may call its model (as in `evalspec run`), through the provider layer."""

SEND_DM = Tool(
    name="send_dm_to_user",
    description="Send a direct message",
    parameters={
        "type": "object",
        "properties": {
            "user_name": {"type": "string"},
            "message": {"type": "string"},
            "priority": {"type": "number"},
            "urgent": {"type": "boolean"},
            "meta": {"type": "object"},
        },
        "required": ["user_name", "message"],
    },
    responses=(
        SimulatedResponse(output={"ok": False, "error": "user_not_found"}),  # fallback listed first
        SimulatedResponse(when={"user_name": "johndoe"}, output={"ok": True, "ts": "1712.01"}),
        SimulatedResponse(when={"user_name": "blocked"}, error="user has blocked you"),
        SimulatedResponse(when={"user_name": "p", "priority": 5}, output="priority five"),
        SimulatedResponse(when={"user_name": "u", "urgent": True}, output="urgent"),
        SimulatedResponse(when={"user_name": "m", "meta": {"a": {"b": 1}}}, output="nested"),
    ),
)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def call(sim: ToolSimulator, name: str, args: dict[str, Any] | None, raw: str = "") -> ToolResult:
    return run(sim.call(name, args, raw or json.dumps(args)))


# ------------------------------------------------------------------------------------------
# Errors are observations


def test_unknown_tool_lists_available_tools(tmp_path: Path) -> None:
    sim = ToolSimulator([SEND_DM, Tool(name="get_weather")], tmp_path)
    result = call(sim, "send_message", {"x": 1})
    assert result.source == "error:unknown_tool"
    assert result.output is None
    assert "send_message" in result.error
    assert "get_weather" in result.error and "send_dm_to_user" in result.error
    assert result.observation() == {"error": result.error}


def test_arguments_that_are_not_json_are_an_observation(tmp_path: Path) -> None:
    sim = ToolSimulator([SEND_DM], tmp_path)
    bad = call(sim, "send_dm_to_user", None, '{"user_name": "johndoe",')
    assert bad.error.startswith("arguments are not valid JSON: ")
    not_object = call(sim, "send_dm_to_user", None, '["johndoe"]')
    assert not_object.error.startswith("arguments are not valid JSON: ")
    assert "list" in not_object.error


def test_schema_violations_say_what_is_wrong(tmp_path: Path) -> None:
    sim = ToolSimulator([SEND_DM], tmp_path)
    missing = call(sim, "send_dm_to_user", {"user_name": "johndoe"})
    assert missing.source == "error:schema"
    assert "'message' is a required property" in missing.error
    wrong_type = call(sim, "send_dm_to_user", {"user_name": 7, "message": "hi"})
    assert wrong_type.source == "error:schema"
    assert "user_name" in wrong_type.error and "not of type 'string'" in wrong_type.error


PLAIN = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "minLength": 2, "description": "the id"},
        "n": {"type": "integer", "minimum": 0, "exclusiveMaximum": 5},
        "tags": {"type": "array", "items": {"type": ["string", "null"]}, "maxItems": 2},
    },
    "required": ["id"],
    "additionalProperties": False,
}
NOT_PLAIN = {  # keywords the compiled check would judge differently, or would fill in
    "type": "object",
    "properties": {
        "flag": {"enum": [1]},
        "mail": {"type": "string", "format": "email"},
        "mode": {"type": "string", "default": "fast"},
    },
    "additionalProperties": False,
}


@pytest.mark.parametrize("schema", [PLAIN, NOT_PLAIN], ids=["plain", "not-plain"])
def test_schema_verdicts_are_jsonschemas_for_every_kind_of_value(
    schema: dict[str, Any], tmp_path: Path
) -> None:
    from jsonschema import Draft202012Validator

    tool = Tool(name="t", parameters=schema, responses=(SimulatedResponse(output="ok"),))
    sim = ToolSimulator([tool], tmp_path)
    reference = Draft202012Validator(schema)
    values = [None, True, 1, 1.0, 1.5, 5, -1, "", "a", "ab", "😀😀", [], ["a", None], [1], {}]
    arguments = [{}, {"id": "ab", "extra": 1}, {"mail": "not an email"}, {"mode": "x"}]
    arguments += [{"id": "ab", key: v} for key in ("id", "n", "tags", "flag") for v in values]
    for args in arguments:
        sent = json.loads(json.dumps(args))
        result = sim.answer_without_llm("t", sent, json.dumps(args))
        assert (result.source == "error:schema") == (not reference.is_valid(args)), args
        assert sent == args  # nothing filled in
        if result.source == "error:schema":
            assert result.error.startswith("arguments do not match the parameters of 't': ")


# ------------------------------------------------------------------------------------------
# Rules


def test_specific_rule_wins_over_a_fallback_listed_before_it(tmp_path: Path) -> None:
    sim = ToolSimulator([SEND_DM], tmp_path)
    hit = call(sim, "send_dm_to_user", {"user_name": "johndoe", "message": "Hello"})
    assert hit == ToolResult({"ok": True, "ts": "1712.01"}, None, "rule")
    other = call(sim, "send_dm_to_user", {"user_name": "someone", "message": "Hello"})
    assert other.output == {"ok": False, "error": "user_not_found"}


def test_rule_errors_are_error_observations(tmp_path: Path) -> None:
    sim = ToolSimulator([SEND_DM], tmp_path)
    result = call(sim, "send_dm_to_user", {"user_name": "blocked", "message": "x"})
    assert result == ToolResult(None, "user has blocked you", "rule")


def test_rule_values_numbers_by_value_strings_exactly(tmp_path: Path) -> None:
    sim = ToolSimulator([SEND_DM], tmp_path)
    assert call(sim, "send_dm_to_user", {"user_name": "p", "message": "", "priority": 5.0}).output
    assert (
        call(sim, "send_dm_to_user", {"user_name": "p", "message": "", "priority": 5.0}).output
        == "priority five"
    )
    # "JohnDoe" is not "johndoe": the fallback answers.
    assert call(sim, "send_dm_to_user", {"user_name": "JohnDoe", "message": ""}).output == {
        "ok": False,
        "error": "user_not_found",
    }


def test_nested_dicts_match_as_subsets(tmp_path: Path) -> None:
    sim = ToolSimulator([SEND_DM], tmp_path)
    args = {"user_name": "m", "message": "", "meta": {"a": {"b": 1.0, "c": 2}, "d": 3}}
    assert call(sim, "send_dm_to_user", args).output == "nested"
    args["meta"] = {"a": {"b": 2}}
    assert call(sim, "send_dm_to_user", args).output != "nested"


def test_values_match_edge_cases() -> None:
    assert values_match(True, True)
    assert not values_match(True, 1)  # booleans are not numbers
    assert not values_match(1, True)
    assert values_match(5, 5.0)
    assert not values_match("5", 5)
    assert values_match([1, {"a": 1}], [1.0, {"a": 1, "b": 2}])
    assert not values_match([1, 2], [1, 2, 3])
    assert values_match(None, None)


def test_no_answer_at_all_is_an_observation(tmp_path: Path) -> None:
    tool = Tool(name="lookup", responses=(SimulatedResponse(when={"q": "a"}, output=1),))
    sim = ToolSimulator([tool], tmp_path)
    result = call(sim, "lookup", {"q": "b"})
    assert result == ToolResult(
        None, "no simulated response for these arguments", "error:no_response"
    )


# ------------------------------------------------------------------------------------------
# StableToolBench caches


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_cache_file_exact_and_order_independent_keys(tmp_path: Path) -> None:
    write_json(
        tmp_path / "cache.json",
        {
            "{'player_id': 'messi'}": {"error": "", "response": {"name": "Lionel Messi"}},
            "{'type_s': 'players', 'id_talent': 28003}": {"error": "", "response": "ronaldo"},
            "{'player_id': 'nobody'}": {"error": "player not found", "response": ""},
        },
    )
    tool = Tool(name="transfermarkt_details_for_theclique", cache_file="cache.json")
    sim = ToolSimulator([tool], tmp_path)
    name = tool.name
    assert call(sim, name, {"player_id": "messi"}) == ToolResult(
        {"name": "Lionel Messi"}, None, "cache"
    )
    # Stored as "{'type_s': ..., 'id_talent': ...}"; asked in the other order.
    assert call(sim, name, {"id_talent": 28003, "type_s": "players"}).output == "ronaldo"
    assert call(sim, name, {"player_id": "nobody"}) == ToolResult(None, "player not found", "cache")
    assert call(sim, name, {"player_id": "x"}).source == "error:no_response"


def test_cache_dir_in_stabletoolbench_server_layout(tmp_path: Path) -> None:
    # The virtual API server writes <cache>/<category>/<tool>_for_<category>/<api>.json.
    write_json(
        tmp_path / "cache/Data/theclique_for_Data/transfermarkt_search.json",
        {"{'name': 'messi'}": {"error": "", "response": [{"slug": "lionel-messi"}]}},
    )
    # The seed's layout: <cache>/<category>/<tool>/<api>.json with the names as written.
    write_json(
        tmp_path / "cache/Data/Keyword Analysis/QueryKeywords.json",
        {"{'q': 'party'}": {"error": "", "response": "party,ideas"}},
    )
    # Any other depth: the file stem is the evalspec tool name.
    write_json(
        tmp_path / "cache/get_weather.json",
        {"{'city': 'Paris'}": {"error": "", "response": {"temp_c": 18}}},
    )
    tools = [
        Tool(name=function_name("TheClique", "Transfermarkt search"), cache_dir="cache"),
        Tool(name=function_name("Keyword Analysis", "QueryKeywords"), cache_dir="cache"),
        Tool(name="get_weather", cache_dir="cache"),
    ]
    assert tools[0].name == "transfermarkt_search_for_theclique"
    sim = ToolSimulator(tools, tmp_path)
    assert call(sim, tools[0].name, {"name": "messi"}).output == [{"slug": "lionel-messi"}]
    assert call(sim, "querykeywords_for_keyword_analysis", {"q": "party"}).output == "party,ideas"
    assert call(sim, "get_weather", {"city": "Paris"}).output == {"temp_c": 18}
    index = index_cache_dir(tmp_path / "cache")
    assert "transfermarkt_search" not in index  # a bare API stem never matches another tool


def test_rules_come_before_the_cache(tmp_path: Path) -> None:
    write_json(tmp_path / "c.json", {"{'q': 'a'}": {"error": "", "response": "from cache"}})
    tool = Tool(
        name="t",
        cache_file="c.json",
        responses=(SimulatedResponse(when={"q": "a"}, output="from rule"),),
    )
    assert call(ToolSimulator([tool], tmp_path), "t", {"q": "a"}).output == "from rule"


def test_response_cache_put_is_atomic_and_keeps_other_writers(tmp_path: Path) -> None:
    path = tmp_path / "sim" / "t.json"
    cache = ResponseCache(path)
    cache.put({"b": 2, "a": 1}, {"error": "", "response": "one"})
    # Another process adds an entry behind this cache's back.
    data = json.loads(path.read_text())
    data["{'z': 0}"] = {"error": "", "response": "other"}
    path.write_text(json.dumps(data))
    cache.put({"c": 3}, {"error": "", "response": "two"})
    stored = json.loads(path.read_text())
    assert stored == {
        "{'b': 2, 'a': 1}": {"error": "", "response": "one"},
        "{'z': 0}": {"error": "", "response": "other"},
        "{'c': 3}": {"error": "", "response": "two"},
    }
    assert not list(path.parent.glob("*.tmp"))
    assert ResponseCache(path).get({"a": 1, "b": 2}) == {"error": "", "response": "one"}


# ------------------------------------------------------------------------------------------
# LLM simulator against a local OpenAI-compatible server


class ChatServer:
    """A minimal /v1/chat/completions endpoint on loopback that records requests."""

    def __init__(self, reply: Callable[[dict[str, Any]], str]):
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                payload = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": server.reply(body)},
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = serve_in_thread(self.httpd)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    def reply(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        query = json.loads(user.rsplit("API input:\n", 1)[1])
        return json.dumps({"error": "", "response": {"sites": [f"{query['q']}.example.com"]}})

    server = ChatServer(reply)
    yield server
    server.close()


def keyword_tool(base_url: str, cache: str | None = None) -> Tool:
    return Tool(
        name="popularsitesforquery_for_keyword_analysis",
        description="Get the popular sites for a given search query.",
        parameters={
            "type": "object",
            "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["q"],
        },
        responses=(SimulatedResponse(when={"q": "cats"}, output={"sites": ["cats.example.org"]}),),
        simulate=LLMSimulation(model="sim-model", base_url=base_url, cache=cache),
    )


def test_llm_simulator_answers_then_serves_from_cache(
    chat_server: ChatServer, tmp_path: Path
) -> None:
    tool = keyword_tool(chat_server.base_url)
    sim = ToolSimulator([tool], tmp_path, calls=CALLS)

    async def scenario() -> list[ToolResult]:
        first = await sim.call(tool.name, {"q": "birthday", "n": 3}, "")
        second = await sim.call(tool.name, {"q": "birthday", "n": 3}, "")
        reordered = await sim.call(tool.name, {"n": 3, "q": "birthday"}, "")
        rule = await sim.call(tool.name, {"q": "cats"}, "")
        return [first, second, reordered, rule]

    first, second, reordered, rule = run(scenario())
    expected = ToolResult({"sites": ["birthday.example.com"]}, None, "llm")
    assert first == expected and second == expected and reordered == expected
    assert rule.source == "rule"
    assert len(chat_server.requests) == 1  # the repeats never reached the server

    request = chat_server.requests[0]
    assert request["model"] == "sim-model"
    assert request["temperature"] == 0
    system, user = request["messages"]
    assert "JSON" in system["content"] and '"error"' in system["content"]
    assert tool.name in user["content"] and tool.description in user["content"]
    assert "cats.example.org" in user["content"]  # rules are shown as examples

    # The cache is a StableToolBench cache file: str(dict) keys, {"error","response"} values.
    cache_file = tmp_path / ".evalspec-cache" / "sim" / f"{tool.name}.json"
    assert json.loads(cache_file.read_text()) == {
        "{'q': 'birthday', 'n': 3}": {
            "error": "",
            "response": {"sites": ["birthday.example.com"]},
        }
    }


def test_llm_cache_survives_a_new_run_without_the_server(
    chat_server: ChatServer, tmp_path: Path
) -> None:
    tool = keyword_tool(chat_server.base_url, cache="sim-cache/keywords.json")
    run(ToolSimulator([tool], tmp_path, calls=CALLS).call(tool.name, {"q": "tea"}, ""))
    assert (tmp_path / "sim-cache" / "keywords.json").exists()
    chat_server.close()
    again = run(ToolSimulator([tool], tmp_path, calls=CALLS).call(tool.name, {"q": "tea"}, ""))
    assert again == ToolResult({"sites": ["tea.example.com"]}, None, "llm")
    assert len(chat_server.requests) == 1


def test_concurrent_identical_calls_send_one_request(
    chat_server: ChatServer, tmp_path: Path
) -> None:
    tool = keyword_tool(chat_server.base_url)
    sim = ToolSimulator([tool], tmp_path, calls=CALLS)

    async def scenario() -> list[ToolResult]:
        return await asyncio.gather(*(sim.call(tool.name, {"q": "x"}, "") for _ in range(5)))

    results = run(scenario())
    assert {r.output["sites"][0] for r in results} == {"x.example.com"}
    assert len(chat_server.requests) == 1


def test_unparseable_reply_is_an_error_and_not_cached(tmp_path: Path) -> None:
    server = ChatServer(lambda body: "Sure! Here is the weather: sunny.")
    try:
        tool = keyword_tool(server.base_url)
        backend = LLMSimulatorBackend(tmp_path, CALLS)
        sim = ToolSimulator([tool], tmp_path, llm=backend)

        async def scenario() -> list[ToolResult]:
            return [await sim.call(tool.name, {"q": "y"}, "") for _ in range(2)]

        first, second = run(scenario())
    finally:
        server.close()
    assert first.source == "error:simulator" and "no JSON object" in first.error
    assert second.source == "error:simulator"
    assert len(server.requests) == 2 and backend.requests == 2
    assert not backend.cache_path(tool).exists()


def test_simulated_api_errors_are_observations(tmp_path: Path) -> None:
    server = ChatServer(lambda body: '```json\n{"error": "invalid query id", "response": ""}\n```')
    try:
        tool = keyword_tool(server.base_url)
        result = run(ToolSimulator([tool], tmp_path, calls=CALLS).call(tool.name, {"q": "z"}, ""))
    finally:
        server.close()
    assert result == ToolResult(None, "invalid query id", "llm")


def test_unreachable_simulator_is_an_observation(tmp_path: Path) -> None:
    server = ChatServer(lambda body: "{}")
    base_url = server.base_url
    server.close()  # nothing listens on this port any more
    backend = LLMSimulatorBackend(tmp_path, ModelCalls(timeout_s=5, retries=0))
    tool = keyword_tool(base_url)
    result = run(ToolSimulator([tool], tmp_path, llm=backend).call(tool.name, {"q": "w"}, ""))
    assert result.source == "error:simulator"
    assert result.error.startswith("tool simulator failed:")


def test_parse_reply_shapes() -> None:
    assert parse_reply('{"error": "", "response": [1]}') == {"error": "", "response": [1]}
    assert parse_reply('Here you go: {"response": "ok"} thanks') == {"error": "", "response": "ok"}
    assert parse_reply('{"answer": 1}') is None
    assert parse_reply("[1, 2]") is None
    assert parse_reply("") is None
