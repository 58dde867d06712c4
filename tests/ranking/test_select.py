"""Selection: Signet's greedy budget prefix, top-k, constraints kept."""

from __future__ import annotations

import numpy as np

from signet_bench.ranking.select import (
    content_lengths,
    select_top_k,
    select_with_budget,
    with_constraints,
)


def test_budget_stops_at_first_row_that_does_not_fit():
    contents = ["a" * 900, "b" * 900, "c" * 300, "d" * 50]
    order = np.array([0, 1, 2, 3])
    # 900 + 900 = 1800; the 300-char row does not fit, and the 50-char one is never tried
    assert select_with_budget(order, contents, 2000).tolist() == [0, 1]
    assert select_with_budget(np.array([3, 2, 0, 1]), contents, 2000).tolist() == [3, 2, 0]


def test_budget_is_inclusive_and_follows_order():
    assert select_with_budget(np.array([1, 0]), [1000, 1000], 2000).tolist() == [1, 0]
    assert select_with_budget(np.array([0]), ["x" * 2001], 2000).tolist() == []


def test_lengths_count_utf16_code_units_like_javascript():
    assert content_lengths(["abc", "é", "😀"]).tolist() == [3, 1, 2]


def test_top_k_and_constraints():
    order = np.array([4, 2, 0, 1, 3])
    assert select_top_k(order, 2).tolist() == [4, 2]
    cons = np.array([False, True, False, True, False])
    assert with_constraints(np.array([4, 2]), order, cons).tolist() == [4, 2, 1, 3]
    assert with_constraints(np.array([4, 1]), order, cons).tolist() == [4, 1, 3]
