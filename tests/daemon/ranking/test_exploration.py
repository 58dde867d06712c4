"""Exploration: after cold start with a predictor, swap in the largest rank disagreement."""

from __future__ import annotations

import numpy as np

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.ranking.exploration import RankedCandidates, maybe_explore

IDS = np.array(["a", "b", "c", "d", "e"])
FUSED = np.array([0.5, 0.4, 0.3, 0.2, 0.1])
BRANK = np.array([1, 2, 3, 4, 5])
PRANK = np.array([2, 1, 3, 5, -1])  # gaps: 1, 1, 0, 1, |5 - 6| = 1 (missing -> n + 1)
INJECTED = np.array([True, True, True, False, False])
ALWAYS = DEFAULT_CONFIG.replace(exploration_rate=1.0)


def _explore(
    rng, *, used=True, exited=True, prank=PRANK, protected=None, excluded=None, cfg=ALWAYS
):
    ranked = RankedCandidates(INJECTED, FUSED, BRANK, prank, IDS, protected, excluded)
    return maybe_explore(ranked, rng, predictor_used=used, cold_start_exited=exited, cfg=cfg)


def test_no_exploration_in_cold_start_or_without_predictor():
    for used, exited in [(False, True), (True, False), (False, False)]:
        rng = np.random.default_rng(0)
        out = _explore(rng, used=used, exited=exited)
        assert out.explored_id is None and out.injected.tolist() == INJECTED.tolist()
        assert rng.random() == np.random.default_rng(0).random()  # generator untouched


def test_swaps_lowest_injected_for_largest_gap():
    prank = np.array([1, 2, 3, 5, 1])  # gaps 0, 0, 0, 1, 4 -> 'e'
    out = _explore(np.random.default_rng(0), prank=prank)
    assert (out.explored_id, out.displaced_id) == ("e", "c")
    assert out.injected.tolist() == [True, True, False, False, True]


def test_gap_ties_go_to_the_better_fused_candidate():
    out = _explore(np.random.default_rng(0))
    assert out.explored_id == "d"  # 'd' and 'e' both have gap 1; 'd' has the higher fused score


def test_protected_candidates_are_never_displaced():
    out = _explore(np.random.default_rng(0), protected=np.array([False, False, True, False, False]))
    assert out.displaced_id == "b"


def test_excluded_candidates_are_never_explored_in():
    prank = np.array([1, 2, 3, 5, 1])  # gaps 0, 0, 0, 1, 4: 'e' unless it is excluded
    stale_e = np.array([False, False, False, False, True])
    assert _explore(np.random.default_rng(0), prank=prank, excluded=stale_e).explored_id == "d"
    stale_de = np.array([False, False, False, True, True])
    out = _explore(np.random.default_rng(0), prank=prank, excluded=stale_de)
    assert out.explored_id is None and out.injected.tolist() == INJECTED.tolist()


def test_no_disagreement_no_swap():
    out = _explore(np.random.default_rng(0), prank=np.array([1, 2, 3, 4, 5]))
    assert out.explored_id is None


def test_rate_with_seeded_generator():
    rate = DEFAULT_CONFIG.exploration_rate
    hits = [s for s in range(200) if np.random.default_rng(s).random() < rate]
    misses = [s for s in range(200) if s not in hits]
    assert hits and misses
    assert _explore(np.random.default_rng(hits[0]), cfg=DEFAULT_CONFIG).explored_id == "d"
    assert _explore(np.random.default_rng(misses[0]), cfg=DEFAULT_CONFIG).explored_id is None
    runs = [_explore(np.random.default_rng(s), cfg=DEFAULT_CONFIG).explored_id for s in range(2000)]
    assert 0.02 < np.mean([r is not None for r in runs]) < 0.08
