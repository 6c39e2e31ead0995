"""The unbiased pass@k and pass^k estimators (n trials, c passed, k drawn).

A unit test of evalspec._scoring.trials, which it imports: a report shows them only for k equal
to the number of trials, so the other k are reachable here alone.
"""

from __future__ import annotations

import pytest

from evalspec._scoring.trials import pass_at_k, pass_hat_k


def test_pass_at_k_estimators():
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3)
    assert pass_at_k(3, 1, 3) == 1.0
    assert pass_at_k(5, 0, 2) == 0.0
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)
    assert pass_hat_k(3, 3, 3) == 1.0


@pytest.mark.parametrize("rule", ["all", "any", "majority", "mean"])
@pytest.mark.parametrize(
    ("status", "score"), [("pass", 1.0), ("warn", 0.8), ("fail", 0.2), ("error", 0.0)]
)
def test_one_trial_is_summarised_as_the_rules_summarise_it_twice(tmp_path, rule, status, score):
    """A case of one trial skips the many-trial statistics: its summary is what the general
    rule says of the same trial run twice (but for the counts and the reason)."""
    import dataclasses

    from support import many_cases_suite

    from evalspec._scoring.trials import combine_trials
    from evalspec._scoring.types import CaseResult
    from evalspec.api import load_suite

    path = tmp_path / "one.yaml"
    path.write_text(many_cases_suite(1), encoding="utf-8")
    case = dataclasses.replace(load_suite(path).cases[0], pass_rule=rule)
    r = CaseResult(case=case.name, model="m", score=score, status=status, reason="why")
    one, twice = combine_trials(case, [r]), combine_trials(case, [r, r])
    same = ("status", "score", "std", "pass_at_k", "pass_hat_k", "flaky", "model", "case")
    assert {f: getattr(one, f) for f in same} == {f: getattr(twice, f) for f in same}
    assert (one.trials, one.passed, one.reason, tuple(one.results)) == (
        1,
        twice.passed // 2,
        "why",
        (r,),
    )
