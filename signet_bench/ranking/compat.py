"""The `signet-0.58` compatibility pool: what the real 0.58 daemon ranks and injects at session
start (reference §2 getAllScoredCandidates and handleSessionStart steps 6-8).

Newest `recallLimit * 3` (150) non-deleted rows by created_at DESC; effScore; keep if > 0.2 or
pinned; sort project-first, then effScore desc; slice to 100 (the baseline order, recorded as
session_memories.rank 0..N-1); fused score `1/(12 + i + 1)` (or RRF when predictor scores are
given); topic diversity; greedy 2,000-char budget. Ties follow Signet's stable JavaScript sorts,
not our (score desc, id asc) rule, so that ranks match the daemon's rows: equal keys keep the
created_at DESC window order, and equal created_at falls back to memory id asc.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.ranking.baseline import age_days, as_ids, effective_score, top_k_indices
from signet_bench.ranking.diversity import topic_diversity
from signet_bench.ranking.fusion import NOT_RANKED, baseline_only_scores, rrf_fuse
from signet_bench.ranking.select import content_lengths, select_with_budget

__all__ = ["CompatResult", "signet058_session_start"]


@dataclass(frozen=True, slots=True)
class CompatResult:
    """Per-candidate arrays in baseline order (position i has session_memories.rank i)."""

    index: np.ndarray  # row of each candidate in the input arrays
    memory_id: np.ndarray
    rank: np.ndarray  # 0-based baseline rank
    effective_score: np.ndarray
    predictor_score: np.ndarray  # NaN when not scored
    predictor_rank: np.ndarray  # 1-based as Signet records it; -1 when no predictor was used
    fused_score: np.ndarray  # before topic diversity
    final_score: np.ndarray  # after topic diversity: session_memories.final_score
    overlap_count: np.ndarray
    was_injected: np.ndarray
    final_order: np.ndarray  # candidate positions, best first
    injected_order: np.ndarray  # candidate positions in injection order
    window_size: int  # rows in the created_at DESC window
    kept_size: int  # rows passing effScore > 0.2 or pinned, before the 100 cap

    @property
    def injected_ids(self) -> list[str]:
        """Injected memory ids in injection order."""
        return [str(x) for x in self.memory_id[self.injected_order]]


def _stable_desc(scores: np.ndarray) -> np.ndarray:
    """Positions by score desc; equal scores keep their input order (JavaScript's stable sort)."""
    s = np.asarray(scores, dtype=np.float64)
    return np.lexsort((np.arange(len(s)), -s)).astype(np.int64)


def signet058_session_start(
    ids: Sequence[str] | np.ndarray,
    created_at_epoch: np.ndarray,
    importance: np.ndarray,
    pinned: np.ndarray,
    project: Sequence[str | None] | np.ndarray,
    contents: Sequence[str] | np.ndarray,
    embeddings: np.ndarray,
    has_emb: np.ndarray,
    session_project: str | None,
    now_epoch: float,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    *,
    is_deleted: np.ndarray | None = None,
    created_at_text: Sequence[str] | np.ndarray | None = None,
    predictor_scores: np.ndarray | None = None,
    alpha: float = 1.0,
) -> CompatResult:
    """Reproduce Signet 0.58's session-start pool, fused scores and injected set.

    `created_at_text`, if given, orders the window as SQLite does (by the TEXT value, which
    matters when both timestamp formats are present). A NULL importance (NaN) scores 0, as in
    JavaScript. `predictor_scores` (aligned with the inputs, NaN = not scored) switch fusion to
    RRF with `alpha`; with alpha = 1 (cold start) that equals the no-predictor scores; equal
    predictor scores rank in baseline order. candidatePoolLimit is `cfg.candidate_pool_size`
    (100 in both). Exploration is not applied: 0.58's cold start never exits by default."""
    id_arr = as_ids(ids)
    n_all = len(id_arr)
    live = np.ones(n_all, dtype=bool) if is_deleted is None else ~np.asarray(is_deleted, bool)
    rows = np.flatnonzero(live)

    # SELECT ... WHERE is_deleted = 0 ORDER BY created_at DESC LIMIT recallLimit * 3
    limit = cfg.signet_recall_limit * 3
    if created_at_text is not None:
        text = np.asarray(created_at_text, dtype=str)[rows]
        newest = np.unique(text, return_inverse=True)[1].astype(np.float64)  # text order
    else:
        newest = np.asarray(created_at_epoch, dtype=np.float64)[rows]
    window = rows[top_k_indices(newest, id_arr[rows], limit)]

    imp = np.nan_to_num(np.asarray(importance, dtype=np.float64)[window], nan=0.0)
    pin = np.asarray(pinned, dtype=bool)[window]
    age = age_days(np.asarray(created_at_epoch, dtype=np.float64)[window], now_epoch)
    eff = effective_score(imp, age, pin, cfg)
    keep = (eff > cfg.signet_min_effective_score) | pin
    window, eff = window[keep], eff[keep]
    kept_size = len(window)

    # sort: project matches first (when a project is given), then effScore desc; stable
    if session_project:
        proj = np.asarray(project, dtype=object)[window]
        match = np.fromiter((p == session_project for p in proj), dtype=bool, count=len(proj))
    else:
        match = np.zeros(len(window), dtype=bool)
    order = np.lexsort((np.arange(len(window)), -eff, ~match))[: cfg.candidate_pool_size]
    cand, eff = window[order], eff[order]
    n = len(cand)
    c_ids = id_arr[cand]

    pred = np.full(n, np.nan)
    prank = np.full(n, NOT_RANKED, dtype=np.int64)
    if predictor_scores is not None:
        pred = np.asarray(predictor_scores, dtype=np.float64)[cand]
        pred = np.where(np.isfinite(pred), pred, np.nan)
    used = bool(np.isfinite(pred).any())
    if used:
        scored = np.flatnonzero(np.isfinite(pred))
        prank = np.full(n, n + 1, dtype=np.int64)  # Signet's fallback: |union| + 1
        prank[scored[_stable_desc(pred[scored])]] = np.arange(1, len(scored) + 1)
        fused = rrf_fuse(np.arange(1, n + 1), prank, alpha, cfg.rrf_k, n)
    else:
        fused = baseline_only_scores(n, cfg.rrf_k)

    emb = np.asarray(embeddings)[cand] if n else np.zeros((0, 1))
    final, overlaps = topic_diversity(
        fused, c_ids, emb, np.asarray(has_emb, bool)[cand], cfg, order=_stable_desc(fused)
    )
    final_order = _stable_desc(final)  # re-sorted from baseline order, so ties keep it

    lengths = content_lengths([contents[i] for i in cand]) if n else np.zeros(0, np.int64)
    injected_order = select_with_budget(final_order, lengths, cfg.injection_budget_chars)
    mask = np.zeros(n, dtype=bool)
    mask[injected_order] = True

    return CompatResult(
        index=cand,
        memory_id=c_ids,
        rank=np.arange(n, dtype=np.int64),
        effective_score=eff,
        predictor_score=pred,
        predictor_rank=prank,
        fused_score=fused,
        final_score=final,
        overlap_count=overlaps,
        was_injected=mask,
        final_order=final_order,
        injected_order=injected_order,
        window_size=int(min(len(rows), limit)),
        kept_size=kept_size,
    )
