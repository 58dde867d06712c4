"""Reciprocal Rank Fusion (k = 12, 1-based ranks, missing rank = n + 1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from signet_bench.daemon.ranking.baseline import rank_order
from signet_bench.daemon.ranking.fusion import baseline_only_scores, ranks_from_scores, rrf_fuse


def test_rrf_seed_example():
    fused = rrf_fuse(np.array([1]), np.array([3]), 0.5, k=12)
    assert fused[0] == pytest.approx(0.5 / 13 + 0.5 / 15)


def test_rrf_alpha_splits_weight():
    fused = rrf_fuse(np.array([2, 5]), np.array([4, 1]), 0.8)
    assert fused.tolist() == pytest.approx([0.8 / 14 + 0.2 / 16, 0.8 / 17 + 0.2 / 13])


def test_rrf_missing_rank_is_candidate_count_plus_one():
    fused = rrf_fuse(np.array([1.0, 2.0, 3.0]), np.array([1.0, np.nan, -1.0]), 0.5)
    assert fused[1] == pytest.approx(0.5 / 14 + 0.5 / 16)
    assert fused[2] == pytest.approx(0.5 / 15 + 0.5 / 16)
    assert rrf_fuse(np.array([1]), np.array([-1]), 0.0, n=80)[0] == pytest.approx(1 / (12 + 81))


def test_rrf_rejects_bad_alpha():
    with pytest.raises(ValueError):
        rrf_fuse(np.array([1]), np.array([1]), 1.5)


def test_no_predictor_scores_are_rrf_with_alpha_one():
    n = 7
    expected = 1.0 / (12 + np.arange(n) + 1)
    assert baseline_only_scores(n).tolist() == pytest.approx(expected.tolist())
    ranks = np.arange(1, n + 1)
    assert rrf_fuse(ranks, ranks[::-1], 1.0).tolist() == pytest.approx(expected.tolist())


def test_ranks_from_scores_one_based_with_unranked():
    ranks = ranks_from_scores(np.array([0.2, np.nan, 0.7, 0.2]), np.array(["b", "x", "c", "a"]))
    assert ranks.tolist() == [3, -1, 1, 2]


@given(
    st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=40, unique=True),
    st.data(),
)
def test_rrf_alpha_one_preserves_baseline_order(baseline_scores, data):
    n = len(baseline_scores)
    ids = np.array([f"mem-{i:03d}" for i in range(n)])
    scores = np.array(baseline_scores)
    base_order = rank_order(scores, ids)
    brank = np.empty(n, dtype=np.int64)
    brank[base_order] = np.arange(1, n + 1)
    prank = np.array(data.draw(st.permutations(list(range(1, n + 1)))))
    missing = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    prank[np.array(missing, dtype=bool)] = -1
    fused = rrf_fuse(brank, prank, 1.0)
    assert rank_order(fused, ids).tolist() == base_order.tolist()
