"""Calls are paired with expected calls by the best total score, not greedily: small problems
by enumeration (no scipy import), larger ones by the Hungarian method, the same optimum.

A unit test of evalspec._scoring.matching's `assign`, which it imports: which pairing a
suite's scores lead to is checked through `score` in tests/test_scoring_engine.py.
"""

from __future__ import annotations

import pytest

from evalspec._scoring.matching import assign


def test_assignment_is_optimal_not_greedy():
    # Greedy row-by-row would take (0,0)=5 then (1,1)=1: total 6. Optimal: (0,1)+(1,0) = 4+4 = 8.
    assert sorted(assign([[5, 4], [4, 1]], ordered=False)) == [(0, 1), (1, 0)]


def test_small_and_large_assignments_agree_with_the_hungarian_method():
    """Small problems are solved by enumeration (no scipy import); the optimum is the same."""
    import random

    from scipy.optimize import linear_sum_assignment

    rng = random.Random(7)
    for n, m in [(1, 1), (1, 4), (4, 1), (2, 3), (3, 2), (3, 3), (5, 5), (6, 6), (7, 7), (8, 3)]:
        for _ in range(20):
            scores = [[rng.choice([0, 1, 2, 2.5, 3]) for _ in range(m)] for _ in range(n)]
            ours = assign(scores, ordered=False)
            rows, cols = linear_sum_assignment(scores, maximize=True)
            best = sum(scores[i][j] for i, j in zip(rows, cols, strict=True))
            assert sum(scores[i][j] for i, j in ours) == pytest.approx(best)
            assert len(ours) == min(n, m)
            assert len({i for i, _ in ours}) == len({j for _, j in ours}) == len(ours)
