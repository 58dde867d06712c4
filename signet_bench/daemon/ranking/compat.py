"""The `signet-0.58` compatibility pool: what the real 0.58 daemon ranks and injects at session
start (docs/specification.md §3.9).

Newest `recallLimit * 3` (150) non-deleted rows by created_at DESC; effScore; keep if > 0.2 or
pinned; sort project-first, then effScore desc; slice to 100 (the baseline order, recorded as
session_memories.rank 0..N-1); fused score `1/(12 + i + 1)` (or RRF when predictor scores are
given); topic diversity; greedy 2,000-char budget. Ties follow Signet's stable JavaScript sorts,
not our (score desc, id asc) rule, so that ranks match the daemon's rows: equal keys keep the
created_at DESC window order, and equal created_at falls back to memory id asc.

With a knowledge graph (step 5, `traversal.py`): a traversal memory already in the kept window
takes max(its effScore, its traversal score); the others are appended with their traversal
score and source 'ka_traversal', before the project-first sort and the slice. The focal
entities' constraints join the same way; they survive the slice and are injected after the
budget (Signet keeps their section outside it). The share cap of our own session start is not
applied: this is Signet's pool, field failure included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.ranking.baseline import age_days, as_ids, effective_score, top_k_indices
from signet_bench.daemon.ranking.diversity import topic_diversity
from signet_bench.daemon.ranking.fusion import NOT_RANKED, baseline_only_scores, rrf_fuse
from signet_bench.daemon.ranking.select import (
    content_lengths,
    select_with_budget,
    with_constraints,
)
from signet_bench.daemon.ranking.session_start import (
    RankingSteps,
    SessionStartResult,
    ranked_result,
)
from signet_bench.daemon.ranking.traversal import (
    Traversal,
    TraversalFlags,
    candidate_flags,
    session_traversal,
)
from signet_bench.store.corpus import Corpus
from signet_bench.store.graph import EntityGraph
from signet_scorer.context import SessionContextVector

__all__ = ["PredictorScores", "signet058_session_start"]


def _stable_desc(scores: np.ndarray) -> np.ndarray:
    """Positions by score desc; equal scores keep their input order (JavaScript's stable sort)."""
    s = np.asarray(scores, dtype=np.float64)
    return np.lexsort((np.arange(len(s)), -s)).astype(np.int64)


def _recency_window(
    id_arr: np.ndarray,
    rows: np.ndarray,
    created_at_epoch: np.ndarray,
    created_at_text: Sequence[str] | np.ndarray | None,
    limit: int,
) -> np.ndarray:
    """`rows` as `... WHERE is_deleted = 0 ORDER BY created_at DESC LIMIT limit` returns them."""
    if created_at_text is not None:
        text = np.asarray(created_at_text, dtype=str)[rows]
        newest = np.unique(text, return_inverse=True)[1].astype(np.float64)  # text order
    else:
        newest = np.asarray(created_at_epoch, dtype=np.float64)[rows]
    return rows[top_k_indices(newest, id_arr[rows], limit)]


def _keep_effective(
    window: np.ndarray,
    importance: np.ndarray,
    pinned: np.ndarray,
    created_at_epoch: np.ndarray,
    now_epoch: float,
    cfg: PredictorConfig,
) -> tuple[np.ndarray, np.ndarray]:
    """The window rows with effScore above Signet's minimum or pinned, with their effScores."""
    imp = np.nan_to_num(np.asarray(importance, dtype=np.float64)[window], nan=0.0)
    pin = np.asarray(pinned, dtype=bool)[window]
    age = age_days(np.asarray(created_at_epoch, dtype=np.float64)[window], now_epoch)
    eff = effective_score(imp, age, pin, cfg)
    keep = (eff > cfg.signet_min_effective_score) | pin
    return window[keep], eff[keep]


def _project_first(
    window: np.ndarray,
    eff: np.ndarray,
    project: Sequence[str | None] | np.ndarray,
    session_project: str | None,
    pool_size: int,
    keep: np.ndarray | None = None,
) -> np.ndarray:
    """Positions in `window` of the first `pool_size` rows by project match (when a project is
    given), then effScore desc, stable; rows marked `keep` (constraints) survive the slice,
    taking the places of the last others."""
    if session_project:
        proj = np.asarray(project, dtype=object)[window]
        match = np.fromiter((p == session_project for p in proj), dtype=bool, count=len(proj))
    else:
        match = np.zeros(len(window), dtype=bool)
    order = np.lexsort((np.arange(len(window)), -eff, ~match))
    if keep is None:
        return order[:pool_size]
    kept = keep[order]
    others = max(pool_size - int(kept.sum()), 0)
    return order[kept | (np.cumsum(~kept) <= others)]


@dataclass(frozen=True, slots=True)
class _Joined:
    """The kept window with the graph's memories joined: rows, effScores, which joined through
    the graph alone, which owe their place to it (joined, or effScore raised), which are the
    focal entities' constraints."""

    rows: np.ndarray
    eff: np.ndarray
    joined: np.ndarray
    carried: np.ndarray
    forced: np.ndarray


def _join_traversal(window: np.ndarray, eff: np.ndarray, walked: Traversal | None) -> _Joined:
    """Step 5: traversal memories (and the focal entities' constraints) join the kept window."""
    none = np.zeros(len(window), dtype=bool)
    if walked is None:
        return _Joined(window, eff, none, none, none)
    extra = ~np.isin(walked.constraint_rows, walked.rows)
    rows = np.concatenate([walked.rows, walked.constraint_rows[extra]])
    score = np.concatenate([walked.score, walked.constraint_score[extra]])
    inside = np.isin(rows, window)
    by_row = np.argsort(window)
    pos = by_row[np.searchsorted(window, rows[inside], sorter=by_row)]
    raised = eff.copy()
    raised[pos] = np.maximum(eff[pos], score[inside])
    all_rows = np.concatenate([window, rows[~inside]])
    new = np.ones(int((~inside).sum()), dtype=bool)
    return _Joined(
        all_rows,
        np.concatenate([raised, score[~inside]]),
        np.concatenate([none, new]),
        np.concatenate([raised > eff, new]),
        np.isin(all_rows, walked.constraint_rows),
    )


def _predictor_fusion(
    predictor_scores: np.ndarray | None, cand: np.ndarray, alpha: float, cfg: PredictorConfig
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidates' predictor scores (NaN = not scored), 1-based predictor ranks and fused
    scores: RRF when any candidate is scored, else the baseline-only scores."""
    n = len(cand)
    pred = np.full(n, np.nan)
    prank = np.full(n, NOT_RANKED, dtype=np.int64)
    if predictor_scores is not None:
        pred = np.asarray(predictor_scores, dtype=np.float64)[cand]
        pred = np.where(np.isfinite(pred), pred, np.nan)
    if not np.isfinite(pred).any():
        return pred, prank, baseline_only_scores(n, cfg.rrf_k)
    scored = np.flatnonzero(np.isfinite(pred))
    prank = np.full(n, n + 1, dtype=np.int64)  # Signet's fallback: |union| + 1
    prank[scored[_stable_desc(pred[scored])]] = np.arange(1, len(scored) + 1)
    return pred, prank, rrf_fuse(np.arange(1, n + 1), prank, alpha, cfg.rrf_k, n)


def _budget_injection(
    final_order: np.ndarray,
    cand: np.ndarray,
    contents: Sequence[str] | np.ndarray,
    cfg: PredictorConfig,
    is_constraint: np.ndarray,
) -> np.ndarray:
    """Greedy character-budget injection in final order, then the constraints it did not
    reach: the injected mask in baseline order."""
    n = len(cand)
    lengths = content_lengths([contents[i] for i in cand]) if n else np.zeros(0, np.int64)
    injected_order = select_with_budget(final_order, lengths, cfg.injection_budget_chars)
    injected_order = with_constraints(injected_order, final_order, is_constraint)
    mask = np.zeros(n, dtype=bool)
    mask[injected_order] = True
    return mask


@dataclass(frozen=True, slots=True)
class PredictorScores:
    """A predictor's scores of the corpus rows (NaN = not scored) and the share `alpha` the
    baseline keeps when they are fused (RRF; alpha = 1 is the cold start)."""

    scores: np.ndarray
    alpha: float = 1.0


def signet058_session_start(
    corpus: Corpus,
    session_project: str | None,
    now_epoch: float,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    *,
    is_deleted: np.ndarray | None = None,
    predictor: PredictorScores | None = None,
    graph: EntityGraph | None = None,
    query_terms: Sequence[str] = (),
) -> SessionStartResult:
    """Reproduce Signet 0.58's session-start pool, fused scores and injected set.

    The corpus's `created_text`, when it has one (a corpus built from plain arrays has none),
    orders the window as SQLite does (by the TEXT value, which matters when both timestamp
    formats are present). A NULL importance (NaN) scores 0, as in JavaScript. `predictor`
    switches fusion to RRF with its alpha; with alpha = 1 (cold start) that equals the
    no-predictor scores; equal predictor scores rank in baseline order. candidatePoolLimit is
    `cfg.candidate_pool_size` (100 in both). Exploration is not applied: 0.58's cold start
    never exits by default. `graph` adds step 5's traversal (focal entities from the pinned
    ones, the project and `query_terms`)."""
    c = corpus
    created_at_text = c.created_text if any(c.created_text) else None
    predictor_scores = None if predictor is None else predictor.scores
    alpha = 1.0 if predictor is None else predictor.alpha
    id_arr = as_ids(c.ids)
    live = np.ones(len(id_arr), bool) if is_deleted is None else ~np.asarray(is_deleted, bool)
    rows = np.flatnonzero(live)
    limit = cfg.signet_recall_limit * 3
    window = _recency_window(id_arr, rows, c.created_at, created_at_text, limit)
    window, eff = _keep_effective(window, c.importance, c.pinned, c.created_at, now_epoch, cfg)
    walked = session_traversal(
        graph,
        c.ids,
        np.asarray(c.importance, float),
        session_project,
        query_terms,
        now_epoch,
        live,
        cfg,
    )
    pool = _join_traversal(window, eff, walked)
    at = _project_first(
        pool.rows,
        pool.eff,
        c.project,
        session_project,
        cfg.candidate_pool_size,
        keep=None if walked is None else pool.forced,
    )
    cand, eff, cons = pool.rows[at], pool.eff[at], pool.forced[at]
    n = len(cand)
    c_ids = id_arr[cand]
    pred, prank, fused = _predictor_fusion(predictor_scores, cand, alpha, cfg)

    emb = np.asarray(c.embeddings)[cand] if n else np.zeros((0, 1))
    final, overlaps = topic_diversity(
        fused, c_ids, emb, np.asarray(c.has_embedding, bool)[cand], cfg, order=_stable_desc(fused)
    )
    final_order = _stable_desc(final)  # re-sorted from baseline order, so ties keep it
    mask = _budget_injection(final_order, cand, c.contents, cfg, cons)
    flags = _flags(walked, pool, at, cand, len(id_arr))
    source = np.where(pool.joined[at], "ka_traversal", "effective").astype(object)
    steps = RankingSteps(cand, c_ids, eff, pred, prank, fused, final, overlaps, mask, final_order)
    return ranked_result(
        steps,
        is_constraint=cons,
        source=source,
        predictor_used=bool(np.isfinite(pred).any()),
        alpha=float(alpha),
        context_vector=SessionContextVector(None, "none"),
        corpus_size=len(rows),
        window_size=int(min(len(rows), limit)),
        kept_size=len(window),
        traversal=walked,
        flags=flags,
    )


def _flags(
    walked: Traversal | None, pool: _Joined, at: np.ndarray, cand: np.ndarray, n: int
) -> TraversalFlags | None:
    """The graph's flags of the candidates (None without a traversal)."""
    if walked is None:
        return None
    joined, carried = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    joined[cand] = pool.joined[at]
    carried[cand] = pool.carried[at]
    return candidate_flags(walked, cand, joined, carried, pool.forced[at])
