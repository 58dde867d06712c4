"""Ranking metrics (docs/specification.md §10; trec_eval and sklearn cross-checks)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score

from signet_bench.daemon.metrics import (
    RANKING_METRICS,
    ndcg_at_k,
    ndcg_of_ranking,
    ranked_ids,
    recall_at_k,
    reciprocal_rank,
    signet_ndcg_at_k,
)
from signet_bench.daemon.ranking.baseline import rank_order

NAN = math.nan

# cross-check fixture (trec_eval / ranx / sklearn agree after clipping)
QRELS = {"a": 2, "b": 1, "c": 0, "d": -1, "e": 1}
RUN = {"a": 0.1, "b": 0.9, "c": 0.8, "d": 0.7, "e": 0.2, "x": 0.5}
IDS = list(RUN)
REL = [QRELS.get(m, NAN) for m in IDS]  # x is unjudged
SCORES = [RUN[m] for m in IDS]

# float fixture
F_IDS = ["m0", "m1", "m2"]
F_REL = [0.7, 0.3, -0.3]
F_SCORES = [0.1, 0.9, 0.5]


# --- fixtures with verified numbers -------------------------------------------------------------


def test_ndcg_full_fixture():
    """Check trec_eval ndcg (whole list) on the cross-check fixture = 0.670493."""
    assert ndcg_at_k(REL, SCORES, IDS, k=None) == pytest.approx(0.670493, abs=1e-6)


def test_ndcg_at_3_fixture():
    """Check ndcg_cut_3 = 0.319394 (= sklearn with negatives clipped)."""
    assert ndcg_at_k(REL, SCORES, IDS, k=3) == pytest.approx(0.319394, abs=1e-6)
    clipped = np.clip(np.nan_to_num(REL), 0, None)
    assert ndcg_score([clipped], [SCORES], k=3) == pytest.approx(0.319394, abs=1e-6)


def test_recall_at_3_fixture():
    """Check recall_3 = 0.333333 (relevant = rel >= 1: a, b, e)."""
    assert recall_at_k(REL, SCORES, IDS, k=3) == pytest.approx(1 / 3)


def test_reciprocal_rank_fixture():
    """Check recip_rank = 1.0 (b, rel 1, is ranked first)."""
    assert reciprocal_rank(REL, SCORES, IDS) == 1.0
    assert reciprocal_rank(REL, SCORES, IDS, threshold=2) == pytest.approx(1 / 6)


def test_float_fixture_signet_formula():
    """Check Signet's computeNdcg on rel [0.7, 0.3, -0.3], scores [.1, .9, .5] = 0.623203."""
    ranking = ranked_ids(F_SCORES, F_IDS)
    assert ranking == ("m1", "m2", "m0")
    rel_map = dict(zip(F_IDS, F_REL, strict=True))
    assert signet_ndcg_at_k(ranking, rel_map) == pytest.approx(0.623203, abs=1e-6)


def test_float_fixture_clipped():
    """Check the bounded NDCG on the float fixture = 0.730929 (= sklearn after clipping)."""
    assert ndcg_at_k(F_REL, F_SCORES, F_IDS) == pytest.approx(0.730929, abs=1e-6)
    ranking = ranked_ids(F_SCORES, F_IDS)
    rel_map = dict(zip(F_IDS, F_REL, strict=True))
    assert ndcg_of_ranking(ranking, rel_map) == pytest.approx(0.730929, abs=1e-6)
    assert ndcg_score([np.clip(F_REL, 0, None)], [F_SCORES]) == pytest.approx(0.730929, abs=1e-6)


def test_signet_ndcg_keeps_negatives_and_can_exceed_one():
    """Check labels [0, -0.3] ranked worst-first give 1.585; an all-negative list gives 1.0."""
    assert signet_ndcg_at_k(["bad", "ok"], {"ok": 0.0, "bad": -0.3}) == pytest.approx(
        1.584963, abs=1e-6
    )
    assert signet_ndcg_at_k(["bad"], {"bad": -0.3}) == pytest.approx(1.0)


def test_signet_ndcg_missing_relevance_is_zero_and_idcg_over_all():
    """Check unjudged ranked ids count 0 and IDCG uses every judged value (first k)."""
    rel = {"a": 1.0, "b": 0.5}
    assert signet_ndcg_at_k(["x", "a"], rel, k=1) == 0.0
    assert signet_ndcg_at_k(["x", "a"], rel, k=2) == pytest.approx(
        (1 / math.log2(3)) / (1 + 0.5 / math.log2(3))
    )
    assert signet_ndcg_at_k([], rel) == 0.0
    assert signet_ndcg_at_k(["a"], {}) == 0.0


# --- definition choices -------------------------------------------------------------------------


def test_ties_broken_by_id_ascending():
    """Check equal scores rank by memory id ascending (docs/specification.md §10.3)."""
    assert rank_order([0.5, 0.5], ["d2", "d1"]).tolist() == [1, 0]
    assert reciprocal_rank([0, 1], [0.5, 0.5], ["d2", "d1"]) == 1.0
    assert ndcg_at_k([1, 0], [0.5, 0.5], ["d1", "d2"], k=1) == 1.0
    assert ndcg_at_k([0, 1], [0.5, 0.5], ["d1", "d2"], k=1) == 0.0


def test_nan_scores_rank_last():
    """Check unscored items rank after scored ones, and ranked_ids drops them."""
    assert rank_order([NAN, 0.1, 0.9], ["a", "b", "c"]).tolist() == [2, 1, 0]
    assert ranked_ids([NAN, 0.1], ["a", "b"]) == ("b",)
    assert ranked_ids([NAN, 0.1], ["a", "b"], drop_nan=False) == ("b", "a")


def test_zero_idcg_gives_zero():
    """Check no positive relevance -> 0.0 for the bounded NDCG."""
    assert ndcg_at_k([0, -1, NAN], [0.3, 0.2, 0.1], ["a", "b", "c"]) == 0.0
    assert ndcg_at_k([], [], []) == 0.0
    assert recall_at_k([0, 0], [1, 2], ["a", "b"]) == 0.0
    assert reciprocal_rank([0, 0], [1, 2], ["a", "b"]) == 0.0


def test_float_threshold_for_recall():
    """Check float labels with an explicit threshold."""
    assert recall_at_k([0.7, 0.3, 0.6], [3, 2, 1], ["a", "b", "c"], k=1, threshold=0.5) == 0.5


def test_bad_arguments():
    """Check k < 1, mismatched lengths and duplicate ranking ids raise."""
    with pytest.raises(ValueError, match="k must be"):
        ndcg_at_k([1], [1], ["a"], k=0)
    with pytest.raises(ValueError, match="one length"):
        ndcg_at_k([1, 2], [1], ["a"])
    with pytest.raises(ValueError, match="twice"):
        signet_ndcg_at_k(["a", "a"], {"a": 1})


# --- properties and the library cross-check -----------------------------------------------------

graded = st.integers(min_value=2, max_value=30).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 3), min_size=n, max_size=n),
        st.permutations(list(range(n))),
        st.sampled_from([1, 3, 5, 10, None]),
    )
)


@settings(max_examples=200, deadline=None)
@given(graded)
def test_ndcg_matches_sklearn_on_integer_grades(case):
    """Check against sklearn ndcg_score (distinct scores, ignore_ties) on random graded lists."""
    rel, perm, k = case
    scores = np.asarray(perm, dtype=float) / len(perm)
    ids = [f"m{i:02d}" for i in range(len(rel))]
    ours = ndcg_at_k(rel, scores, ids, k=k)
    if sum(rel) == 0:
        assert ours == 0.0
        return
    theirs = ndcg_score([rel], [scores], k=k, ignore_ties=True)
    assert ours == pytest.approx(theirs, abs=1e-12)
    ranking = ranked_ids(scores, ids)
    rel_map = dict(zip(ids, map(float, rel), strict=True))
    assert signet_ndcg_at_k(ranking, rel_map, k=k) == pytest.approx(theirs, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-1, 1), st.floats(-10, 10)),
        min_size=1,
        max_size=25,
    ),
    st.sampled_from([1, 5, 10, None]),
)
def test_metric_properties(rows, k):
    """Check bounds, perfect ranking = 1, and invariance to input order."""
    rel = np.array([r for r, _ in rows])
    scores = np.array([s for _, s in rows])
    ids = np.array([f"m{i:02d}" for i in range(len(rows))])
    for name, fn in RANKING_METRICS.items():
        kw = {"k": k} if name != "rr" else {}
        value = fn(rel, scores, ids, **kw)
        assert 0.0 <= value <= 1.0 + 1e-12
        perm = np.random.default_rng(len(rows)).permutation(len(rows))
        assert fn(rel[perm], scores[perm], ids[perm], **kw) == pytest.approx(value)
    if (rel > 0).any():
        assert ndcg_at_k(rel, rel, ids, k=k) == pytest.approx(1.0)


def test_coverage_recall_counts_targets_covered_by_the_top_k():
    from signet_bench.daemon.metrics import coverage_recall_at_k

    covers = [{"D1:1"}, {"D1:2", "D2:1"}, {"D3:3"}, set()]
    scores = np.array([0.1, 0.9, 0.5, 0.7])
    ids = np.array(["a", "b", "c", "d"])
    targets = {"D2:1", "D3:3", "D9:9"}  # D9:9 is covered by no item and still counts
    assert coverage_recall_at_k(covers, scores, ids, targets, k=1) == pytest.approx(1 / 3)
    assert coverage_recall_at_k(covers, scores, ids, targets, k=2) == pytest.approx(1 / 3)
    assert coverage_recall_at_k(covers, scores, ids, targets, k=3) == pytest.approx(2 / 3)
    assert coverage_recall_at_k(covers, scores, ids, targets, k=None) == pytest.approx(2 / 3)
    assert coverage_recall_at_k(covers, scores, ids, set(), k=3) == 0.0
    with pytest.raises(ValueError, match="cover sets"):
        coverage_recall_at_k(covers[:2], scores, ids, targets)


def test_bootstrap_interval_is_reproducible_for_a_seed_and_brackets_the_mean():
    from signet_bench.daemon.metrics import bootstrap_interval

    values = np.random.default_rng(3).normal(0.2, 1.0, size=200)
    lo, hi = bootstrap_interval(values, seed=7)
    assert (lo, hi) == bootstrap_interval(values, seed=7)
    assert (lo, hi) != bootstrap_interval(values, seed=8)
    assert lo < values.mean() < hi
    wide = bootstrap_interval(values, seed=7, level=0.99)
    assert wide[0] < lo and wide[1] > hi
    assert all(math.isnan(x) for x in bootstrap_interval([1.0], seed=0))


def _wilson_by_bisection(k: int, n: int, z: float) -> tuple[float, float]:
    """The Wilson bounds as the two roots of (k/n - p)^2 = z^2 p (1 - p) / n, found by
    bisection on either side of k/n (independent of the closed form)."""

    def gap(p: float) -> float:
        return (k / n - p) ** 2 - z * z * p * (1 - p) / n

    def root(lo: float, hi: float) -> float:  # gap(lo) and gap(hi) differ in sign
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if (gap(mid) > 0) == (gap(lo) > 0) else (lo, mid)
        return (lo + hi) / 2

    share = k / n
    low = 0.0 if k == 0 else root(0.0, share)
    high = 1.0 if k == n else root(share, 1.0)
    return low, high


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 3), (10, 20), (64, 100), (1, 50), (37, 40)])
def test_wilson_interval_matches_the_roots_of_its_defining_equation(k, n):
    from signet_bench.daemon.metrics import wilson_interval

    low, high = wilson_interval(k, n)
    ref_low, ref_high = _wilson_by_bisection(k, n, 1.959963984540054)
    assert low == pytest.approx(ref_low, abs=1e-9) and high == pytest.approx(ref_high, abs=1e-9)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_wilson_interval_hand_values_and_bad_input():
    from signet_bench.daemon.metrics import wilson_interval

    # 0 of 10: upper bound z^2 / (n + z^2) = 3.8415 / 13.8415
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    # 64 of 100, the textbook example
    assert wilson_interval(64, 100) == pytest.approx((0.54235, 0.72729), abs=1e-5)
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    wide = wilson_interval(10, 20, level=0.99)
    assert wide[0] < wilson_interval(10, 20)[0] and wide[1] > wilson_interval(10, 20)[1]
    with pytest.raises(ValueError, match="successes <= n"):
        wilson_interval(5, 4)
    with pytest.raises(ValueError, match="level"):
        wilson_interval(1, 4, level=1.0)
