"""Cognitive Memory v9: the contract, and each formula of docs/specification.md §11.4 by hand (ACT-R
activation, FSRS retention, storage strength, shared ranks, RRF with K = 60, token cosine, MMR
order), then the composite and the MMR order of the ranker on a tiny session."""

from __future__ import annotations

import math

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.ranking.peers.cogmem_v9 import (
    CogMemV9Ranker,
    actr_activation,
    fsrs_retention,
    mmr_select,
    rrf_legs,
    shared_ranks,
    storage_strength,
    token_cosine,
)
from signet_bench.daemon.ranking.ranker import Ranker, ranking_order
from signet_scorer.tokenize import token_buckets
from tests.daemon.ranking.peers.sessions import DAY, before_start, tiny_session
from tests.daemon.ranking.ranker_contract import RankerContract

QUERY = "sqlite vector index budget"


class TestCogMemV9Contract(RankerContract):
    identical_inputs_tie = False  # MMR ranks a copy of a taken memory below it, by design

    def make_ranker(self) -> Ranker:
        return CogMemV9Ranker(query=QUERY)


class TestCogMemV9WithAccessDataContract(RankerContract):
    identical_inputs_tie = False

    def make_ranker(self) -> Ranker:
        accessed = {"m-07": before_start(3), "m-01": before_start(20), "dup-a": before_start(2)}
        return CogMemV9Ranker(query=QUERY, last_accessed=accessed)


def test_actr_activation() -> None:
    n = np.array([10.0, 100.0, 1.0, 0.0, 0.0, np.nan])
    age = np.array([100.0, 1e4, math.e**2, 0.0, -5.0, 1.0])
    # B = ln(max(n,1)) − 0.5·ln(age): ln10 − ln10 = 0; ln100 − ln100 = 0; 0 − 1 = −1;
    # ages under 1 s count as 1 s, so B = 0; a NaN count is no access
    expected = [0.5, 0.5, 1 / (1 + math.e), 0.5, 0.5, 0.5]
    np.testing.assert_allclose(actr_activation(n, age), expected, rtol=1e-12)


def test_fsrs_retention() -> None:
    days = np.array([9.0, 0.0, 27.0, -5.0, 81.0])
    stability = np.array([1.0, 1.0, 3.0, 1.0, 1.0])
    # (1 + t/(9S))^−2: (1+1)^−2, 1, (1+1)^−2, clamped to t = 0, (1+9)^−2
    expected = [0.25, 1.0, 0.25, 1.0, 0.01]
    np.testing.assert_allclose(fsrs_retention(days, stability), expected, rtol=1e-12)


def test_storage_strength() -> None:
    got = storage_strength(np.array([0.0, 4.0, 20.0, np.nan]))
    assert got.tolist() == [1.0, 5.0, 10.0, 1.0]


def test_shared_ranks() -> None:
    scores = np.array([0.3, 0.9, 0.3, 0.1, 0.95])
    present = np.array([True, True, True, True, False])
    assert shared_ranks(scores, present).tolist() == [1, 0, 1, 3, -1]


def test_rrf_with_k_60() -> None:
    vec = (np.array([0.9, 0.2, 0.5, 0.0]), np.array([True, True, True, False]))
    kw = (np.array([0.0, 1.0, 0.4, 0.0]), np.array([False, True, True, False]))
    # vector ranks 0, 2, 1; keyword ranks -, 0, 1: 1/(60 + rank + 1) summed per candidate
    expected = [1 / 61, 1 / 63 + 1 / 61, 1 / 62 + 1 / 62, 0.0]
    np.testing.assert_allclose(rrf_legs([vec, kw], 60), expected, rtol=1e-15)


def test_token_cosine() -> None:
    tokens = [np.array([1, 1, 2]), np.array([1, 2]), np.array([3]), np.array([], dtype=np.int64)]
    sims = token_cosine(tokens)
    assert sims[0, 1] == pytest.approx(3 / math.sqrt(10))  # (2·1 + 1·1) / (√5·√2)
    assert sims[0, 0] == pytest.approx(1.0)
    assert sims[0, 2] == 0.0 and sims[3].tolist() == [0.0] * 4
    np.testing.assert_array_equal(sims, sims.T)


def test_token_cosine_is_exact_under_permutation() -> None:
    rng = np.random.default_rng(5)
    tokens = [rng.integers(0, 40, size=int(rng.integers(0, 30))) for _ in range(60)]
    sims = token_cosine(tokens)
    perm = rng.permutation(60)
    np.testing.assert_array_equal(token_cosine([tokens[i] for i in perm]), sims[np.ix_(perm, perm)])
    assert token_cosine(tokens) is sims and not sims.flags.writeable  # cached, read-only


def test_mmr_prefers_a_different_candidate_over_a_near_copy() -> None:
    rel = np.array([0.9, 0.85, 0.5])
    sims = np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 1.0]])
    order, values = mmr_select(rel, sims, np.array(["a", "b", "c"]), 0.7)
    # step 1: 0.7·rel = 0.63, 0.595, 0.35 -> a; step 2: b 0.595 − 0.3·0.9 = 0.325 < c 0.35 -> c
    assert order.tolist() == [0, 2, 1]
    np.testing.assert_allclose(values, [0.63, 0.35, 0.325], rtol=1e-12)


def test_mmr_ties_go_to_the_smaller_id() -> None:
    order, _ = mmr_select(np.array([0.5, 0.5]), np.zeros((2, 2)), np.array(["b", "a"]), 0.7)
    assert order.tolist() == [1, 0]


def _session() -> SessionInputs:
    """a: cosine 1, 10 accesses, 100 s old; b: cosine 0.6, 1 access, e² s old, NULL importance."""
    return tiny_session(
        ["a", "b"],
        [(1.0, 0.0), (0.6, 0.8)],
        ["red apple", "blue sky"],
        importance=[0.8, np.nan],
        access_count=[10, 1],
        age_seconds=[100.0, math.e**2],
    )


def test_composite_by_hand() -> None:
    comp = CogMemV9Ranker().composite(_session())
    # a: cosine 1, vector rank 0, activation 0.5, importance 0.8
    # b: cosine 0.6, vector rank 1, activation 1/(1+e), NULL importance 0.5
    a = 0.40 * 1.0 + 0.30 * 0.5 + 0.15 * 0.8 + 0.15 / 61
    b = 0.40 * 0.6 + 0.30 / (1 + math.e) + 0.15 * 0.5 + 0.15 / 62
    np.testing.assert_allclose(comp, [a, b], rtol=1e-6)


def test_query_adds_the_keyword_legs_rrf() -> None:
    inputs = _session()
    without = CogMemV9Ranker().composite(inputs)
    with_query = CogMemV9Ranker(query="blue").composite(inputs)
    np.testing.assert_allclose(with_query - without, [0.0, 0.15 / 61], rtol=1e-9, atol=1e-15)


def test_fsrs_applies_only_with_access_data() -> None:
    inputs = tiny_session(
        ["a", "b"],
        [(1.0, 0.0), (0.6, 0.8)],
        ["red apple", "blue sky"],
        access_count=[0, 2],
        age_seconds=[9 * DAY, 27 * DAY],
    )
    off = CogMemV9Ranker().composite(inputs)
    # no one accessed: t = days since creation; S = 1 + count: (1 + 9/9)^−2, (1 + 27/27)^−2
    on = CogMemV9Ranker(last_accessed={}).composite(inputs)
    np.testing.assert_allclose(on, off * 0.25, rtol=1e-12)
    # b accessed 9 days before the start: S = 3, R = (1 + 9/27)^−2, and ACT-R age is 9 days
    seen = CogMemV9Ranker(last_accessed={"b": before_start(9)}).composite(inputs)
    act = 1 / (1 + math.exp(-(math.log(2) - 0.5 * math.log(9 * DAY))))
    b = 0.40 * 0.6 + 0.30 * act + 0.15 * 0.5 + 0.15 / 62
    assert seen[1] == pytest.approx(b * (4 / 3) ** -2, rel=1e-6)


def test_ranker_orders_by_mmr_over_contents() -> None:
    inputs = tiny_session(
        ["a", "b", "c"],
        [(1.0, 0.0), (0.99, 0.141), (0.9, 0.436)],
        ["red apple pie", "red apple pie", "blue sky rain"],
    )
    ranker = CogMemV9Ranker()
    comp = ranker.composite(inputs)
    assert comp[0] > comp[1] > comp[2]  # relevance alone: a, b, c
    assert ranking_order(ranker, inputs).tolist() == [0, 2, 1]  # b copies a's text
    assert token_cosine([token_buckets("red apple pie", DEFAULT_CONFIG.hash_buckets)] * 2)[
        0, 1
    ] == pytest.approx(1.0)
