"""Pre-filter: top-50 by effectiveScore ∪ top-50 by context similarity over the top-200."""

from __future__ import annotations

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.ranking.baseline import rank_order
from signet_bench.daemon.ranking.prefilter import (
    MemoryStates,
    cosine_to,
    eligible_mask,
    prefilter,
    similarity_pool,
)

N = 4000


def _corpus(seed: int, n: int = N):
    rng = np.random.default_rng(seed)
    ids = np.array([f"{i:06d}-{seed}" for i in rng.permutation(n)])
    eff = rng.uniform(0.1, 1.0, n)
    sims = rng.uniform(-1, 1, n)
    return ids, eff, sims


def test_bounded_and_in_baseline_order_with_4000_memories():
    ids, eff, sims = _corpus(0)
    cand = prefilter(eff, sims, ids, MemoryStates(importance_decayed=eff))
    assert 50 <= len(cand) <= DEFAULT_CONFIG.candidate_pool_size
    assert len(set(cand.tolist())) == len(cand)
    assert cand.tolist() == cand[rank_order(eff[cand], ids[cand])].tolist()


def test_union_is_typically_70_to_90():
    sizes = []
    for seed in range(20):
        ids, eff, sims = _corpus(seed)
        sizes.append(len(prefilter(eff, sims, ids, MemoryStates(importance_decayed=eff))))
    assert max(sizes) <= 100
    assert 70 <= np.median(sizes) <= 90


def test_union_is_exactly_the_two_paths():
    ids, eff, sims = _corpus(3)
    cand = set(prefilter(eff, sims, ids, MemoryStates(importance_decayed=eff)).tolist())
    top_eff = set(rank_order(eff, ids)[:50].tolist())
    pool = rank_order(eff, ids)[:200]
    top_sim = set(pool[rank_order(sims[pool], ids[pool])[:50]].tolist())
    assert cand == top_eff | top_sim


def test_constraints_always_present_even_when_capped():
    ids, eff, sims = _corpus(1)
    cons = np.zeros(N, dtype=bool)
    low = np.argsort(eff)[:120]  # 120 weak constraints, more than the cap
    cons[low] = True
    cand = prefilter(eff, sims, ids, MemoryStates(is_constraint=cons, importance_decayed=eff))
    assert len(cand) == 100 and cons[cand].all()
    cons[:] = False
    cons[low[:10]] = True
    cand = prefilter(eff, sims, ids, MemoryStates(is_constraint=cons, importance_decayed=eff))
    assert set(low[:10].tolist()) <= set(cand.tolist())
    assert len(cand) <= 100


def test_decayed_importance_below_floor_is_excluded_but_pinned_kept():
    ids = np.array([f"m{i:02d}" for i in range(60)])
    dec = np.full(60, 0.5)
    dec[:5] = 0.05
    eff = dec.copy()
    eff[0] = 1.0  # m00 is pinned: effectiveScore 1.0, decayed importance 0.05
    pinned = np.zeros(60, dtype=bool)
    pinned[0] = True
    cand = prefilter(eff, None, ids, MemoryStates(importance_decayed=dec, pinned=pinned))
    assert 0 in cand and not set(range(1, 5)) & set(cand.tolist())
    assert eligible_mask(np.array([0.0999, 0.1, np.nan])).tolist() == [False, True, False]


def test_excluded_rows_never_enter():
    ids, eff, sims = _corpus(2, n=300)
    top = rank_order(eff, ids)[0]
    excluded = np.zeros(300, dtype=bool)
    excluded[top] = True
    cons = excluded.copy()
    cand = prefilter(
        eff, sims, ids, MemoryStates(is_constraint=cons, importance_decayed=eff, excluded=excluded)
    )
    assert top not in cand


def test_similarity_path_only_sees_the_pool():
    ids, eff, _ = _corpus(4, n=1000)
    sims = np.full(1000, np.nan)
    outside = rank_order(eff, ids)[500]
    sims[outside] = 1.0  # perfect match, but outside the top-200 by effectiveScore
    pool = similarity_pool(eff, ids, np.ones(1000, bool))
    assert len(pool) == 200 and outside not in pool
    assert outside not in prefilter(eff, sims, ids, MemoryStates(importance_decayed=eff))


def test_cosine_to_is_safe_for_zero_rows():
    m = np.array([[1.0, 0.0], [0.0, 0.0], [-2.0, 0.0]], dtype=np.float32)
    assert cosine_to(np.array([3.0, 0.0]), m).tolist() == pytest.approx([1.0, 0.0, -1.0])
    assert cosine_to(np.zeros(2), m).tolist() == [0.0, 0.0, 0.0]
    assert cosine_to(np.ones(2), np.zeros((0, 2))).shape == (0,)
