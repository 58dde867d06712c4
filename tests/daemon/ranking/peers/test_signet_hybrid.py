"""Signet's hybrid recall: the contract, the merge rule and the rehearsal boost by hand."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.ranking.peers.signet_hybrid import (
    SignetHybridRanker,
    hybrid_merge,
    rehearsal_boost,
)
from signet_bench.daemon.ranking.ranker import Ranker
from tests.daemon.ranking.peers.sessions import before_start, tiny_session
from tests.daemon.ranking.ranker_contract import RankerContract

QUERY = "sqlite vector index budget"


class TestSignetHybridContract(RankerContract):
    def make_ranker(self) -> Ranker:
        return SignetHybridRanker(query=QUERY)


class TestSignetHybridWithAccessAndLimitsContract(RankerContract):
    def make_ranker(self) -> Ranker:
        accessed = {"m-07": before_start(3), "m-03": before_start(40), "dup-c": before_start(1)}
        return SignetHybridRanker(query=QUERY, leg_limit=3, last_accessed=accessed)


def test_merge_rule() -> None:
    vec = np.array([0.8, 0.5, 0.0, -0.2, 0.0, -0.1])
    kw = np.array([0.5, 0.0, 0.6, 0.4, 0.0, 0.0])
    merged = hybrid_merge(vec, kw, 0.7)
    # both legs: 0.7·0.8 + 0.3·0.5; vector only; keyword only; keyword beats a negative
    # cosine; neither; a negative cosine alone is Signet's `bm25` fallback, 0
    np.testing.assert_allclose(merged, [0.71, 0.5, 0.6, 0.4, 0.0, 0.0], rtol=1e-15)


def test_rehearsal_boost() -> None:
    count = np.array([0.0, 3.0, 3.0, 3.0, 3.0])
    days = np.array([0.0, 0.0, 30.0, 60.0, np.nan])
    boost = rehearsal_boost(count, days, weight=0.1, half_life_days=30.0)
    ln4 = math.log(4.0)
    expected = [1.0, 1 + 0.1 * ln4, 1 + 0.05 * ln4, 1 + 0.025 * ln4, 1 + 0.05 * ln4]
    np.testing.assert_allclose(boost, expected, rtol=1e-15)


def _session(**kw: Any) -> SessionInputs:
    """a: cosine 1 and "alpha"; b: cosine 0.6, no keyword; c: no embedding, "alpha"."""
    return tiny_session(
        ["a", "b", "c"],
        [(1.0, 0.0), (0.6, 0.8), (0.0, 0.0)],
        ["alpha beta", "gamma", "alpha delta"],
        **kw,
    )


def test_hybrid_scores_by_hand() -> None:
    scores = SignetHybridRanker(query="alpha").score(_session())
    # a: 0.7·1 + 0.3·1; b: vector only 0.6; c: keyword only (same tf and length as a) 1.0
    np.testing.assert_allclose(scores, [1.0, 0.6, 1.0], rtol=1e-6)


def test_keyword_leg_filters_importance_below_0_3() -> None:
    inputs = _session(importance=[0.5, 0.5, 0.2])
    scores = SignetHybridRanker(query="alpha").score(inputs)
    np.testing.assert_allclose(scores, [1.0, 0.6, 0.0], rtol=1e-6)
    unfiltered = SignetHybridRanker(query="alpha", importance_min=None).score(inputs)
    assert unfiltered[2] == 1.0


def test_rehearsal_uses_the_last_access_before_the_session() -> None:
    inputs = _session(access_count=[3, 0, 0])
    ln4 = math.log(4.0)
    seen_60_days_ago = SignetHybridRanker(query="alpha", last_accessed={"a": before_start(60)})
    assert seen_60_days_ago.score(inputs)[0] == pytest.approx(1 + 0.1 * ln4 * 0.25)
    in_the_future = SignetHybridRanker(query="alpha", last_accessed={"a": before_start(-1)})
    assert in_the_future.score(inputs)[0] == pytest.approx(1 + 0.1 * ln4 * 0.5)  # 30 days
    assert SignetHybridRanker(query="alpha").score(inputs)[0] == pytest.approx(1 + 0.05 * ln4)


def test_leg_limit_keeps_each_legs_top_only() -> None:
    scores = SignetHybridRanker(query="alpha", leg_limit=1).score(_session())
    # vector leg keeps a only; keyword leg keeps a (ties with c, id "a" first)
    np.testing.assert_allclose(scores, [1.0, 0.0, 0.0], rtol=1e-6)


def test_no_context_is_keyword_only() -> None:
    scores = SignetHybridRanker(query="alpha").score(_session(context=None))
    np.testing.assert_allclose(scores, [1.0, 0.0, 1.0], rtol=1e-12)
