"""The choice under a budget (`signet_scorer.budget`): K and the token budget respected, the
ranked order kept, a memory too long for what is left passed over, and the token estimate."""

from __future__ import annotations

import pytest

from signet_scorer.budget import Budget, choose, estimate_tokens, length_tokens, token_costs


def test_k_is_respected_and_the_order_kept():
    costs = [5, 1, 7, 2, 3]
    assert choose(costs, Budget(k=3)) == [0, 1, 2]
    assert choose(costs, Budget()) == [0, 1, 2, 3, 4]
    assert choose(costs, Budget(k=10)) == [0, 1, 2, 3, 4]
    assert choose(costs, Budget(k=0)) == []


def test_the_token_budget_is_respected_and_a_long_memory_passed_over():
    costs = [5, 9, 2, 4, 1]
    chosen = choose(costs, Budget(tokens=8))
    assert chosen == [0, 2, 4]  # 9 does not fit after 5, nor 4 after 5 + 2; 1 does
    assert sum(costs[i] for i in chosen) <= 8
    assert choose(costs, Budget(tokens=21)) == [0, 1, 2, 3, 4]  # exactly the whole list
    assert choose(costs, Budget(tokens=20)) == [0, 1, 2, 3]  # the last no longer fits


def test_both_caps_together_stop_at_k():
    costs = [3, 50, 3, 3, 3]
    assert choose(costs, Budget(k=2, tokens=10)) == [0, 2]
    assert choose(costs, Budget(k=4, tokens=10)) == [0, 2, 3]


def test_a_zero_budget_chooses_nothing_but_free_items():
    assert choose([1, 2, 3], Budget(tokens=0)) == []
    assert choose([0, 2, 0], Budget(tokens=0)) == [0, 2]
    assert choose([], Budget(k=5, tokens=100)) == []


def test_the_token_estimate_is_signets_quarter_of_the_utf16_length():
    assert [estimate_tokens(t) for t in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]
    assert estimate_tokens("😀😀") == 1  # two UTF-16 units each, as JavaScript counts
    assert estimate_tokens("é" * 8) == 2
    assert [length_tokens(n) for n in (0, 4, 5, 8, 9)] == [0, 1, 2, 2, 3]
    assert token_costs(["abcd", "abcdefghi"]) == [1, 3]


@pytest.mark.parametrize("bad", [{"k": -1}, {"tokens": -5}, {"k": 1.5}, {"tokens": "10"}])
def test_a_budget_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match="must be an integer >= 0 or None"):
        Budget(**bad)


def test_a_budget_says_what_it_is():
    assert str(Budget(15, 3000)) == "top 15, 3000 tokens"
    assert str(Budget()) == "top all, no token cap"
    assert Budget(15, 3000) == (15, 3000) and Budget(15).tokens is None
