"""The scoring engine as a user sees it: matching, rubric rules, bands, trials, re-scoring.

The assignment of calls to expected calls and the pass@k estimators are unit-tested beside
them, in tests/test_call_assignment.py and tests/test_pass_at_k.py."""

from __future__ import annotations

import json

import pytest
from support import in_process, transcript

from evalspec import api
from evalspec.api import load_suite, score

SUITE = """
suite: s
models: [m]
rubric: {{fail_threshold: {fail}, warn_threshold: {warn}, fail_on_tool_selection: {fos},
          fail_on_tool_call_quantity: {foq}, extra_calls: {extra_calls},
          extra_args: {extra_args}, normalize_tool_names: {norm}}}
tools:
  - name: send_dm
    parameters:
      type: object
      properties: {{user: {{type: string}}, text: {{type: string}}, urgent: {{type: boolean}}}}
  - name: post
    parameters:
      type: object
      properties: {{channel: {{type: string}}, text: {{type: string}}}}
cases:
  - name: one
    user: tell bob hi
    expect:
      tool_calls:
        - send_dm: {{user: bob, text: hi}}
  - name: two
    user: tell bob and ann
    expect:
      tool_calls:
        - send_dm: {{user: bob, text: hello bob}}
        - send_dm: {{user: ann, text: hello ann}}
  - name: ordered
    user: post then dm
    expect:
      ordered: true
      tool_calls:
        - post: {{channel: general, text: x}}
        - send_dm: {{user: bob, text: x}}
  - name: none
    user: just chat
    expect: {{no_tool_calls: true}}
"""


def make(write_suite, **kw):
    opts = dict(
        fail=0.8,
        warn=0.9,
        fos="true",
        foq="false",
        extra_calls="penalize",
        extra_args="allow",
        norm="true",
    )
    opts.update(kw)
    return load_suite(write_suite(SUITE.format(**opts)))


def result(suite, t):
    return score(suite, [t]).results[0]


def test_exact_call_passes_with_full_score(write_suite):
    r = result(make(write_suite), transcript("one", ("send_dm", {"user": "bob", "text": "hi"})))
    assert (r.status, r.score) == ("pass", 1.0)
    assert [row.field for row in r.rows] == ["tool_selection", "user", "text"]


def test_bands_follow_the_seed_not_the_inverted_comparison(write_suite):
    # 2 of 3 rows right (tool + user, text wrong) = 0.667.
    t = transcript("one", ("send_dm", {"user": "bob", "text": "bye"}))
    assert result(make(write_suite, fail=0.6, warn=0.7), t).status == "warn"
    assert result(make(write_suite, fail=0.5, warn=0.6), t).status == "pass"
    assert result(make(write_suite, fail=0.7, warn=0.8), t).status == "fail"
    # Exactly at a threshold: fail_threshold warns, warn_threshold passes.
    assert result(make(write_suite, fail=2 / 3, warn=0.9), t).status == "warn"
    assert result(make(write_suite, fail=0.5, warn=2 / 3), t).status == "pass"


def test_optimal_assignment_pairs_calls_in_any_order(write_suite):
    t = transcript(
        "two",
        ("send_dm", {"user": "ann", "text": "hello ann"}),
        ("send_dm", {"user": "bob", "text": "hello bob"}),
    )
    r = result(make(write_suite), t)
    assert (r.status, r.score) == ("pass", 1.0)


def test_missing_expected_call_counts_as_zero_with_its_weight(write_suite):
    t = transcript("two", ("send_dm", {"user": "bob", "text": "hello bob"}))
    r = result(make(write_suite, fos="false"), t)
    assert r.score == pytest.approx(0.5)  # 3 earned of 6: the missing call weighs 1 + 2 critics
    missing = [row for row in r.rows if row.field == "missing_call"]
    assert missing and missing[0].weight == 3.0
    assert "fewer times than expected" in missing[0].reason


def test_fail_on_tool_selection_fails_a_missing_call_whatever_the_score(write_suite):
    t = transcript("two", ("send_dm", {"user": "bob", "text": "hello bob"}))
    r = result(make(write_suite, fail=0.1, warn=0.2), t)
    assert r.status == "fail" and "fewer times" in r.reason


def test_wrong_tool_fails_and_explains(write_suite):
    r = result(make(write_suite), transcript("one", ("post", {"channel": "bob", "text": "hi"})))
    assert r.status == "fail"
    assert r.reason == "expected send_dm, the model called post"
    assert r.rows[1].reason == "not compared: wrong tool"


def test_extra_calls_penalized_or_allowed(write_suite):
    t = transcript("one", ("send_dm", {"user": "bob", "text": "hi"}), ("post", {"channel": "x"}))
    penalized = result(make(write_suite), t)
    assert penalized.score == pytest.approx(3 / 4)
    assert any(row.field == "extra_call" for row in penalized.rows)
    assert result(make(write_suite, extra_calls="allow"), t).score == 1.0


def test_quantity_rule_fails_with_zero_like_arcade(write_suite):
    t = transcript(
        "one",
        ("send_dm", {"user": "bob", "text": "hi"}),
        ("send_dm", {"user": "bob", "text": "hi"}),
    )
    r = result(make(write_suite, foq="true", extra_calls="allow"), t)
    assert (r.status, r.score) == ("fail", 0.0)
    assert r.reason == "expected 1 call, the model made 2: send_dm, send_dm"


def test_extra_arguments_allowed_or_penalized(write_suite):
    t = transcript("one", ("send_dm", {"user": "bob", "text": "hi", "urgent": True}))
    assert result(make(write_suite), t).score == 1.0
    r = result(make(write_suite, extra_args="penalize"), t)
    assert r.score == pytest.approx(3 / 4)
    assert [row.reason for row in r.rows if row.field == "urgent"] == [
        "unexpected argument (extra_args: penalize)"
    ]


def test_tool_name_normalization_can_be_turned_off(write_suite):
    t = transcript("one", ("Send-DM", {"user": "bob", "text": "hi"}))
    assert result(make(write_suite), t).status == "pass"
    assert result(make(write_suite, norm="false"), t).status == "fail"


def test_ordered_expectation_rejects_swapped_calls(write_suite):
    right = transcript(
        "ordered",
        ("post", {"channel": "general", "text": "x"}),
        ("send_dm", {"user": "bob", "text": "x"}),
    )
    swapped = transcript(
        "ordered",
        ("send_dm", {"user": "bob", "text": "x"}),
        ("post", {"channel": "general", "text": "x"}),
    )
    suite = make(write_suite)
    assert result(suite, right).status == "pass"
    r = result(suite, swapped)
    assert r.status == "fail" and "not in the expected order" in r.reason


def test_no_tool_calls_expectation(write_suite):
    suite = make(write_suite)
    assert result(suite, transcript("none", final="hello")).status == "pass"
    r = result(suite, transcript("none", ("post", {"channel": "x", "text": "y"})))
    assert r.status == "fail" and "expected no tool call" in r.reason


def test_malformed_arguments_score_zero_with_reason(write_suite):
    r = result(make(write_suite, fos="false"), transcript("one", ("send_dm", None)))
    assert r.status == "fail"
    assert r.rows[1].reason.startswith("arguments were not valid JSON")


def test_run_error_is_an_error_status(write_suite):
    r = result(make(write_suite), transcript("one", error="HTTP 500 after 5 attempts"))
    assert r.status == "error" and "HTTP 500" in r.reason


@pytest.mark.parametrize(
    ("rule", "statuses", "expected"),
    [
        ("all", ["pass", "pass", "fail"], "fail"),
        ("any", ["fail", "fail", "pass"], "pass"),
        ("majority", ["pass", "pass", "fail"], "pass"),
        ("majority", ["pass", "fail", "fail"], "fail"),
        ("mean", ["pass", "pass", "pass"], "pass"),  # mean 1.0 >= warn 0.9
        ("mean", ["pass", "pass", "fail"], "warn"),  # mean 0.889: below warn 0.9, not fail 0.8
        ("mean", ["pass", "fail", "fail"], "fail"),  # mean 0.778 < fail 0.8
    ],
)
def test_pass_rules_over_trials(write_suite, rule, statuses, expected):
    text = (
        SUITE.format(
            fail=0.8,
            warn=0.9,
            fos="true",
            foq="false",
            extra_calls="penalize",
            extra_args="allow",
            norm="true",
        )
        + f"trials: 3\npass_rule: {rule}\n"
    )
    suite = load_suite(write_suite(text))
    good = ("send_dm", {"user": "bob", "text": "hi"})
    bad = ("send_dm", {"user": "bob", "text": "bye"})
    ts = [transcript("one", good if s == "pass" else bad, trial=i) for i, s in enumerate(statuses)]
    summary = score(suite, ts).cases[0]
    assert summary.status == expected
    assert summary.trials == 3 and summary.passed == statuses.count("pass")


def test_score_command_rescores_without_a_model(write_suite, tmp_path):
    """Loosening a threshold changes the verdict of recorded transcripts; no model is called."""
    suite_path = write_suite(
        SUITE.format(
            fail=0.8,
            warn=0.9,
            fos="true",
            foq="false",
            extra_calls="penalize",
            extra_args="allow",
            norm="true",
        )
    )
    t = transcript("one", ("send_dm", {"user": "bob", "text": "bye"}))
    tfile = tmp_path / "t.jsonl"
    tfile.write_text(json.dumps(t.to_dict()) + "\n")
    cmd = [
        "score",
        suite_path,
        "--transcripts",
        tfile,
        "--json",
        "--allow-stale",  # a hand-written transcript: its id is no plan item's
    ]
    first = in_process(*cmd)
    assert first.returncode == 1, first.stderr
    assert json.loads(first.stdout)["results"][0]["status"] == "fail"
    suite_path.write_text(
        suite_path.read_text().replace("fail_threshold: 0.8", "fail_threshold: 0.6")
    )
    second = in_process(*cmd)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["results"][0]["status"] == "warn"


def test_judge_verdicts_are_cached_beside_the_suite(write_suite, tmp_path, monkeypatch):
    """Judging an answer asks the judge once; scoring it, again and again, reads the cache."""
    from fake_openai import FakeOpenAI, text_reply

    verdict = text_reply('{"verdict": "Solved", "reason": "states the temperature"}')
    with FakeOpenAI(lambda body: verdict) as judge_server:
        path = write_suite(f"""
            suite: judged
            models: [m]
            tools:
              - name: get_weather
                parameters: {{type: object, properties: {{city: {{type: string}}}}}}
            cases:
              - name: weather
                user: How warm is Paris?
                expect:
                  tool_calls: [{{get_weather: {{city: Paris}}}}]
                  final_answer:
                    judge: {{criteria: gives the temperature, model: judge-1,
                             base_url: "{judge_server.base_url}"}}
            """)
        t = transcript("weather", ("get_weather", {"city": "Paris"}), final="It is 21 °C.")
        api.write_transcripts(tmp_path / "t.jsonl", [t])
        assert api.judge(path, tmp_path / "t.jsonl").exit_code == 0  # the one call that asks
        suite = load_suite(path)
        first = score(suite, [t]).results[0]  # from the cache: no call needed
        second = score(suite, [t]).results[0]
    assert first.status == second.status == "pass"
    assert first.evaluators["final_answer.judge"] == 1.0
    assert len(judge_server.requests) == 1
    assert (tmp_path / ".evalspec-cache" / "judge.json").exists()


def test_fuzzy_weight_names_are_normalised_like_arcade(write_suite):
    """HIGH and LOW in one critics mapping weigh 5/8 and 3/8, beside tool selection's 1."""
    suite = load_suite(
        write_suite(
            """
            suite: s
            models: [m]
            tools:
              - name: send_dm
                parameters: {type: object, properties: {user: {type: string}, text: {type: string}}}
            cases:
              - name: one
                user: tell bob hi
                critics:
                  user: {binary: true, weight: HIGH}
                  text: {binary: true, weight: low}
                expect:
                  tool_calls:
                    - send_dm: {user: bob, text: hi}
            """
        )
    )
    [case] = suite.cases
    assert [c.weight for c in case.critics] == [5 / 8, 3 / 8]
    r = result(suite, transcript("one", ("send_dm", {"user": "bob", "text": "bye"})))
    assert r.score == pytest.approx((1 + 5 / 8) / 2)
