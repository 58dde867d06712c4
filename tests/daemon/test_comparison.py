"""The per-session comparison row: evaluation pool, NDCG columns, counts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from signet_bench.daemon.comparison import ComparisonInput, compare_session, evaluation_pool

NAN = math.nan


# --- evaluation pool and comparison -------------------------------------------------------------


def test_evaluation_pool_union_in_order():
    """Check union(top-k baseline, top-k predictor, injected), first occurrence order."""
    base = [f"b{i}" for i in range(12)]
    pred = ["p0", "b1", *[f"p{i}" for i in range(1, 12)]]
    pool = evaluation_pool(base, pred, ["b11", "z"], k=10)
    assert pool[:10] == tuple(base[:10])
    assert "b10" not in pool and "p10" not in pool
    assert pool[-2:] == ("b11", "z")
    assert len(pool) == 10 + 9 + 2


def _session(**kw) -> ComparisonInput:
    args = {
        "effective_score": [0.9, 0.8, 0.7, 0.6, 0.0],
        "predictor_score": [0.1, 0.2, 0.4, 0.3, NAN],
        "was_injected": [True, True, True, False, False],
        "fts_hit_count": [2, 0, 1, 0, 1],
        "relevance": [0.2, 0.0, 0.9, NAN, NAN],
        "has_entity_slot": [False, True, False, False, False],
        "is_constraint": [False, True, False, False, False],
        "scorer_confidence": 0.8,
        "project": "signetai",
    }
    args.update(kw)
    return ComparisonInput.build("s1", ["m1", "m2", "m3", "m4", "fts1"], **args)


def test_compare_session_columns():
    """Check every predictor_comparisons column on a hand-computed session."""
    c = compare_session(_session(), alpha=0.8, success_rate=0.55)
    rel = {"m1": 0.2, "m2": 0.0, "m3": 0.9}
    d = [1 / math.log2(i + 2) for i in range(4)]
    idcg = 0.9 * d[0] + 0.2 * d[1] + 0.0 * d[2]
    assert c.baseline_ndcg == pytest.approx((0.2 * d[0] + 0.0 * d[1] + 0.9 * d[2]) / idcg)
    assert c.predictor_ndcg == pytest.approx((0.9 * d[0] + 0.0 * d[2] + 0.2 * d[3]) / idcg)
    assert c.predictor_won and c.margin == pytest.approx(c.predictor_ndcg - c.baseline_ndcg)
    assert c.baseline_top_ids == ("m1", "m2", "m3", "m4", "fts1")
    assert c.predictor_top_ids == ("m3", "m4", "m2", "m1")
    assert c.relevance_scores == rel
    assert c.fts_overlap_score == pytest.approx(2 / 3)
    assert (c.candidate_count, c.traversal_count, c.constraint_count) == (5, 1, 1)
    assert (c.alpha, c.success_rate, c.scorer_confidence) == (0.8, 0.55, 0.8)
    assert c.ema_updated and c.has_predictor_scores and c.project == "signetai"
    row = c.to_row()
    assert json.loads(row["predictor_top_ids"]) == ["m3", "m4", "m2", "m1"]
    assert json.loads(row["relevance_scores"]) == rel
    assert row["predictor_won"] == 1 and row["ema_updated"] == 1
    assert set(row) >= {
        "predictor_ndcg",
        "baseline_ndcg",
        "margin",
        "alpha",
        "project",
        "candidate_count",
        "traversal_count",
        "constraint_count",
        "scorer_confidence",
        "success_rate",
        "baseline_top_ids",
        "fts_overlap_score",
    }


def test_candidate_count_is_the_session_start_pool():
    """Check fts_only rows (added by prompt-time recall) are not counted as candidates, while
    they still rank in the baseline order (effective score 0) as in Signet."""
    c = compare_session(
        _session(is_fts_only=[False, False, False, False, True]), alpha=0.8, success_rate=0.5
    )
    assert c.candidate_count == 4 and "fts1" in c.baseline_top_ids
    assert compare_session(_session(), alpha=0.8, success_rate=0.5).candidate_count == 5
    with pytest.raises(ValueError, match="is_fts_only"):
        _session(is_fts_only=[True, False])


def test_constraint_count_counts_the_flags_given():
    """Check constraint_count is the number of rows flagged, whatever else the rows are."""
    flags = [True, True, False, False, True]
    c = compare_session(_session(is_constraint=flags), alpha=1.0, success_rate=0.5)
    assert c.constraint_count == 3


def test_compare_without_predictor_scores():
    """Check no predictor scores -> predictor NDCG 0, no win, margin 0, no EMA update."""
    c = compare_session(_session(predictor_score=NAN), alpha=1.0, success_rate=0.5)
    assert (c.predictor_ndcg, c.predictor_won, c.margin) == (0.0, False, 0.0)
    assert not c.ema_updated and not c.has_predictor_scores
    assert c.predictor_top_ids == ()
    assert c.baseline_ndcg > 0


def test_compare_low_confidence_not_ema_updated():
    """Check confidence < 0.6 is recorded but flagged ema_updated = 0."""
    c = compare_session(_session(scorer_confidence=0.59), alpha=1.0, success_rate=0.5)
    assert c.has_predictor_scores and not c.ema_updated


def test_compare_bounded_variant_clips_negatives():
    """Check ndcg='bounded' clips negative relevance; 'signet' keeps it."""
    inp = _session(relevance=[-0.3, 0.0, 0.9, NAN, NAN])
    s = compare_session(inp, alpha=1.0, success_rate=0.5)
    b = compare_session(inp, alpha=1.0, success_rate=0.5, ndcg="bounded")
    d = [1 / math.log2(i + 2) for i in range(3)]
    assert b.baseline_ndcg == pytest.approx(0.9 * d[2] / 0.9)
    assert s.baseline_ndcg == pytest.approx((-0.3 + 0.9 * d[2]) / (0.9 + 0.0 * d[1] - 0.3 * d[2]))
    assert b.ndcg_variant == "bounded"
    with pytest.raises(ValueError, match="ndcg must be"):
        compare_session(inp, alpha=1.0, success_rate=0.5, ndcg="other")  # type: ignore[arg-type]


def test_compare_pool_restricts_relevance():
    """Check judged memories outside the evaluation pool leave the map unless pool_only=False."""
    n = 14
    ids = [f"m{i:02d}" for i in range(n)]
    eff = np.linspace(1.0, 0.1, n)
    rel = np.full(n, NAN)
    rel[13] = 1.0  # judged, not injected, outside both top-10s
    rel[0] = 0.5
    inp = ComparisonInput.build(
        "s",
        ids,
        effective_score=eff,
        predictor_score=eff,
        relevance=rel,
        scorer_confidence=0.9,
        was_injected=[True] + [False] * (n - 1),
    )
    c = compare_session(inp, alpha=1.0, success_rate=0.5)
    assert c.relevance_scores == {"m00": 0.5} and c.baseline_ndcg == 1.0
    wide = compare_session(inp, alpha=1.0, success_rate=0.5, pool_only=False)
    assert wide.relevance_scores == {"m00": 0.5, "m13": 1.0} and wide.baseline_ndcg < 1.0


def test_compare_no_injected_overlap_is_none():
    """Check fts_overlap_score is NULL when nothing was injected."""
    c = compare_session(_session(was_injected=False), alpha=1.0, success_rate=0.5)
    assert c.fts_overlap_score is None


def test_comparison_input_validation():
    """Check mismatched arrays and duplicate ids are rejected."""
    with pytest.raises(ValueError, match="relevance"):
        ComparisonInput.build(
            "s", ["a", "b"], effective_score=[1, 2], relevance=[1], scorer_confidence=1
        )
    with pytest.raises(ValueError, match="unique"):
        ComparisonInput.build(
            "s", ["a", "a"], effective_score=[1, 2], relevance=[1, 2], scorer_confidence=1
        )


def test_comparison_input_constructor_broadcasts_scalars_like_build():
    """Check the constructor takes array-likes, broadcasts scalars and defaults, and that `build`
    gives the same input."""
    args = {"effective_score": [0.5, 0.4], "relevance": NAN, "scorer_confidence": 1}
    direct = ComparisonInput("s", ["a", "b"], **args, was_injected=True)
    built = ComparisonInput.build("s", ["a", "b"], **args, was_injected=True)
    for inp in (direct, built):
        assert inp.memory_ids.tolist() == ["a", "b"]
        assert inp.effective_score.dtype == np.float64 and np.isnan(inp.relevance).all()
        assert inp.was_injected.tolist() == [True, True]
        assert np.isnan(inp.predictor_score).all() and inp.fts_hit_count.dtype == np.int64
        assert not inp.is_fts_only.any() and not inp.has_entity_slot.any()
        assert inp.scorer_confidence == 1.0 and inp.project is None
    with pytest.raises(TypeError, match="relevance"):
        ComparisonInput("s", ["a"], effective_score=1.0, scorer_confidence=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="is_fts_only"):
        ComparisonInput("s", ["a", "b"], **args, is_fts_only=[True])
