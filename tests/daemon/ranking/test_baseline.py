"""effectiveScore, ages and the (score desc, id asc) ordering."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.ranking.baseline import (
    age_days,
    baseline_ranking,
    decayed_importance,
    effective_score,
    rank_order,
    top_k_indices,
)

DAY = 86_400.0


def test_effective_score_pinned_is_one():
    eff = effective_score(np.array([0.1, 0.0]), np.array([400.0, 3.0]), np.array([True, True]))
    assert eff.tolist() == [1.0, 1.0]


def test_effective_score_decays_importance():
    eff = effective_score(np.array([0.8]), np.array([10.0]), np.array([False]))
    assert eff[0] == pytest.approx(0.8 * 0.95**10)
    assert eff[0] == pytest.approx(0.478989551, abs=1e-9)


def test_effective_score_uses_config_decay():
    cfg = DEFAULT_CONFIG.replace(effective_score_decay=0.5)
    assert effective_score(np.array([1.0]), np.array([2.0]), np.array([False]), cfg)[0] == 0.25


def test_age_days_is_fractional_wall_time():
    now = 1_700_000_000.0
    ages = age_days(np.array([now - 1.5 * DAY, now, now - 36 * 3600]), now)
    assert ages.tolist() == pytest.approx([1.5, 0.0, 1.5])


def test_decayed_importance_ignores_pins():
    assert decayed_importance(np.array([0.2]), np.array([20.0]))[0] == pytest.approx(0.2 * 0.95**20)


def test_rank_order_breaks_ties_by_id():
    scores = np.array([0.5, 0.9, 0.5, np.nan, 0.9])
    ids = np.array(["c", "z", "a", "b", "y"])
    assert rank_order(scores, ids).tolist() == [4, 1, 2, 0, 3]


def test_baseline_ranking_orders_by_effective_score():
    now = 1_000 * DAY
    order, eff = baseline_ranking(
        ["m1", "m2", "m3"],
        np.array([0.9, 0.9, 0.1]),
        np.array([now - 30 * DAY, now, now - 500 * DAY]),
        np.array([False, False, True]),
        now,
    )
    assert order.tolist() == [2, 1, 0]
    assert eff[2] == 1.0


@given(
    st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, float("nan")]), min_size=1, max_size=60),
    st.integers(min_value=0, max_value=70),
)
def test_top_k_matches_full_sort(values, k):
    scores = np.array(values)
    ids = np.array([f"m{(i * 7919) % 101:03d}" for i in range(len(values))])
    full = rank_order(np.where(np.isnan(scores), -np.inf, scores), ids)
    assert top_k_indices(scores, ids, k).tolist() == full[:k].tolist()
