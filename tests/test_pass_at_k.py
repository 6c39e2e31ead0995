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
