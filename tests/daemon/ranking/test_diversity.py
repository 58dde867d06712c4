"""Topic diversity: multipliers 1, 0.55, 0.325, 0.2125 and near-duplicates pushed down."""

from __future__ import annotations

import numpy as np
import pytest

from signet_bench.daemon.ranking.baseline import rank_order
from signet_bench.daemon.ranking.diversity import (
    diversity_multiplier,
    topic_diversity,
    topic_overlaps,
)


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_multipliers_for_zero_to_three_overlaps():
    assert diversity_multiplier(np.arange(4)).tolist() == pytest.approx([1, 0.55, 0.325, 0.2125])


def test_near_duplicate_is_pushed_down():
    ids = np.array(["a", "b", "c"])
    emb = np.array([[1.0, 0.0, 0.0], [0.99, 0.05, 0.0], [0.0, 1.0, 0.0]], dtype=np.float32)
    fused = 1.0 / (12 + np.arange(3) + 1)
    scores, overlaps = topic_diversity(fused, ids, emb, np.ones(3, bool))
    assert overlaps.tolist() == [0, 1, 0]
    assert scores[1] == pytest.approx(fused[1] * 0.55)
    assert ids[rank_order(scores, ids)].tolist() == ["a", "c", "b"]


def test_counts_every_earlier_similar_candidate():
    emb = np.tile(_unit([1, 0.01, 0]), (4, 1))
    scores, overlaps = topic_diversity(
        np.array([4.0, 3, 2, 1]), list("abcd"), emb, np.ones(4, bool)
    )
    assert overlaps.tolist() == [0, 1, 2, 3]
    assert scores.tolist() == pytest.approx([4, 3 * 0.55, 2 * 0.325, 1 * 0.2125])


def test_candidates_without_embedding_are_ignored():
    emb = np.array([[1.0, 0], [1.0, 0], [0.0, 0.0]])
    _, overlaps = topic_diversity(
        np.array([3.0, 2, 1]), list("abc"), emb, np.array([False, True, True])
    )
    assert overlaps.tolist() == [0, 0, 0]


def test_threshold_is_strict_and_exact_near_the_boundary():
    def pair(cos):
        return np.array([[1.0, 0.0], [cos, np.sqrt(1 - cos * cos)]])

    order = np.array([0, 1])
    assert topic_overlaps(order, pair(0.85 + 1e-9), np.ones(2, bool))[1] == 1
    assert topic_overlaps(order, pair(0.85 - 1e-9), np.ones(2, bool))[1] == 0


def test_walk_follows_the_given_order():
    emb = np.array([[1.0, 0], [1.0, 0]])
    _, overlaps = topic_diversity(
        np.array([1.0, 1.0]), ["b", "a"], emb, np.ones(2, bool), order=np.array([0, 1])
    )
    assert overlaps.tolist() == [0, 1]
    _, by_id = topic_diversity(np.array([1.0, 1.0]), ["b", "a"], emb, np.ones(2, bool))
    assert by_id.tolist() == [1, 0]  # default walk: equal scores, id asc
