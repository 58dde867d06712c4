"""Selection: Signet's greedy budget prefix, top-k, constraints kept, superseded left out."""

from __future__ import annotations

import numpy as np

from signet_bench.daemon.ranking.select import (
    content_lengths,
    select_injected,
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


def test_a_constraint_inside_the_prefix_is_charged_one_beyond_it_is_appended_free():
    lengths = np.array([900, 900, 300, 100])
    cons = np.array([False, True, False, True])
    order = np.array([0, 1, 2, 3])
    # the walk charges constraint 1 (900 + 900 = 1800), so row 2 (300) no longer fits;
    # constraint 3, never reached by the walk, is appended outside the budget
    assert select_injected(order, lengths, cons, budget_chars=2000).tolist() == [0, 1, 3]
    # were constraints never charged, row 2 would fit (900 + 300): that is not the rule
    free = select_with_budget(order[~cons[order]], lengths, 2000)
    assert free.tolist() == [0, 2] and 2 not in select_injected(order, lengths, cons).tolist()


def test_superseded_rows_take_no_budget_and_are_never_injected():
    lengths = np.array([1500, 400, 400, 50])
    order = np.array([0, 1, 2, 3])
    stale = np.array([True, False, False, False])
    none = np.zeros(4, dtype=bool)
    assert select_injected(order, lengths, none, budget_chars=2000).tolist() == [0, 1]
    kept = select_injected(order, lengths, none, is_superseded=stale, budget_chars=2000)
    assert kept.tolist() == [1, 2, 3]
    unbudgeted = select_injected(order, lengths, none, is_superseded=stale, budget_chars=None)
    assert unbudgeted.tolist() == [1, 2, 3]


def test_a_superseded_constraint_is_not_injected():
    lengths = np.array([100, 100, 100])
    order = np.array([2, 1, 0])
    cons = np.array([True, True, False])
    stale = np.array([True, False, False])
    out = select_injected(order, lengths, cons, is_superseded=stale, budget_chars=0)
    assert out.tolist() == [1]


def test_top_k_applies_after_the_budget_and_before_constraints():
    lengths = np.array([100, 100, 100, 100])
    cons = np.array([False, False, False, True])
    out = select_injected(np.array([3, 0, 1, 2]), lengths, cons, budget_chars=250, top_k=1)
    assert out.tolist() == [3]  # the constraint walked first and took the top-1 slot
    out = select_injected(np.array([0, 1, 2, 3]), lengths, cons, budget_chars=250, top_k=1)
    assert out.tolist() == [0, 3]
