"""The signet-0.58 pool reproduces the daemon's session start (docs/specification.md §3.9)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.ranking.compat import PredictorScores, signet058_session_start
from signet_bench.store.corpus import Corpus

DAY = 86_400.0
NOW = 1_800_000_000.0


def _corpus(n=200, d=4):
    ids = np.array([f"m{i:03d}" for i in range(n)])
    created = NOW - (np.arange(n) + 1) * 0.01 * DAY  # m000 newest
    importance = np.full(n, 0.9)
    pinned = np.zeros(n, dtype=bool)
    project = np.array([None] * n, dtype=object)
    contents = ["x" * 10] * n
    emb = np.zeros((n, d), dtype=np.float32)
    has = np.zeros(n, dtype=bool)
    return ids, created, importance, pinned, project, contents, emb, has


def _run(
    corpus, session_project=None, *, created_at_text=None, predictor_scores=None, alpha=1.0, **kw
):
    ids, created, importance, pinned, project, contents, emb, has = corpus
    c = Corpus.from_arrays(
        ids,
        created,
        importance,
        emb,
        contents=contents,
        has_embedding=has,
        pinned=pinned,
        project=project,
    )
    if created_at_text is not None:
        c = dataclasses.replace(c, created_text=np.asarray(created_at_text, dtype=object))
    pred = None if predictor_scores is None else PredictorScores(predictor_scores, alpha)
    return signet058_session_start(c, session_project, NOW, predictor=pred, **kw)


def test_window_filter_slice_and_fused_scores():
    c = _corpus()
    ids, importance, pinned = c[0], c[2], c[3]
    importance[5] = 0.1  # effScore < 0.2: dropped
    importance[6], pinned[6] = 0.01, True  # pinned: kept with effScore 1.0
    pinned[190] = True  # pinned but outside the newest 150: never a candidate
    r = _run(c)
    assert r.window_size == 150 and r.kept_size == 149
    assert len(r.index) == 100 and r.rank.tolist() == list(range(100))
    assert ids[r.index[0]] == "m006" and r.effective_score[0] == 1.0
    assert "m005" not in r.memory_id and "m190" not in r.memory_id
    assert r.fused_score.tolist() == pytest.approx((1 / (12 + np.arange(100) + 1)).tolist())
    assert r.final_score.tolist() == r.fused_score.tolist()
    assert np.all(r.predictor_rank == -1) and np.isnan(r.predictor_score).all()


def test_project_rows_first_then_effective_score():
    c = _corpus()
    c[4][10] = "proj"
    c[4][20] = "proj"
    c[4][11] = "other"
    r = _run(c, "proj")
    assert r.memory_id[:2].tolist() == ["m010", "m020"]
    assert _run(c, None).memory_id[0] == "m000"


def test_ties_keep_created_at_order_not_id_order():
    c = _corpus(n=5)
    c[3][:] = True  # all pinned: effScore 1.0 everywhere
    c[1][:] = NOW - np.array([5.0, 1.0, 3.0, 2.0, 4.0]) * DAY
    assert _run(c).memory_id.tolist() == ["m001", "m003", "m002", "m004", "m000"]


def test_budget_selects_a_prefix_of_the_fused_order():
    c = _corpus()
    contents = ["y" * 600] * 200
    r = _run(c[:5] + (contents,) + c[6:])
    assert r.injected_order.tolist() == [0, 1, 2]  # 3 * 600 = 1800 <= 2000 < 2400
    assert r.was_injected.sum() == 3 and r.injected_ids == ["m000", "m001", "m002"]


def test_topic_diversity_reorders_like_signet():
    c = _corpus()
    emb, has = c[6], c[7]
    emb[0] = emb[1] = [1, 0, 0, 0]
    emb[2] = [0, 1, 0, 0]
    has[:3] = True
    r = _run(c)
    assert r.overlap_count[:3].tolist() == [0, 1, 0]
    assert r.final_score[1] == pytest.approx(0.55 / 14)
    assert r.final_order[:3].tolist() == [0, 2, 3]


def test_predictor_scores_with_alpha_one_match_the_no_predictor_path():
    c = _corpus()
    scores = np.random.default_rng(0).random(200)
    with_pred = _run(c, predictor_scores=scores, alpha=1.0)
    assert with_pred.fused_score.tolist() == pytest.approx(_run(c).fused_score.tolist())
    assert sorted(with_pred.predictor_rank.tolist()) == list(range(1, 101))
    pred_only = _run(c, predictor_scores=scores, alpha=0.0)
    best = int(np.argmax(pred_only.predictor_score))
    assert pred_only.final_order[0] == best and pred_only.predictor_rank[best] == 1


def test_deleted_rows_do_not_use_window_slots():
    c = _corpus()
    deleted = np.zeros(200, dtype=bool)
    deleted[:10] = True
    r = _run(c, is_deleted=deleted)
    assert r.window_size == 150 and "m000" not in r.memory_id
    assert r.memory_id[0] == "m010"


def test_text_order_follows_sqlite_for_mixed_formats():
    c = _corpus(n=4)
    # m000 is the newest in time, but SQLite sorts its 'YYYY-MM-DD HH:MM:SS' text below the
    # same day's ISO 'T' values, so a 3-row window (recallLimit 1) leaves it out
    text = [
        "2026-03-01 10:00:00",
        "2026-03-01T09:00:00.000Z",
        "2026-03-01T08:00:00.000Z",
        "2026-03-01T07:00:00.000Z",
    ]
    c[1][:] = NOW - np.array([1.0, 2.0, 3.0, 4.0]) * 3600
    cfg = DEFAULT_CONFIG.replace(signet_recall_limit=1)
    by_text = _run(c, cfg=cfg, created_at_text=text)
    assert by_text.window_size == 3
    assert sorted(by_text.memory_id.tolist()) == ["m001", "m002", "m003"]
    assert sorted(_run(c, cfg=cfg).memory_id.tolist()) == ["m000", "m001", "m002"]
