"""Exploration sampling (docs/specification.md §3.7): an epsilon-greedy swap that shows the
agent the candidate on which the baseline and the predictor disagree most."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.ranking.baseline import as_ids, rank_order

__all__ = ["ExplorationResult", "RankedCandidates", "maybe_explore"]


@dataclass(frozen=True, slots=True)
class ExplorationResult:
    """The injected mask after exploration and what was swapped (None when nothing was)."""

    injected: np.ndarray
    explored_id: str | None = None
    displaced_id: str | None = None
    explored_index: int | None = None
    displaced_index: int | None = None


@dataclass(frozen=True, slots=True)
class RankedCandidates:
    """A session's candidates as exploration sees them, one entry each: injected or not,
    fused score, 1-based baseline and predictor ranks, id; `protected` ones (constraints) are
    never displaced, `excluded` ones (superseded) never explored in."""

    injected: np.ndarray
    fused_scores: np.ndarray
    baseline_rank: np.ndarray
    predictor_rank: np.ndarray
    ids: Sequence[str] | np.ndarray
    protected: np.ndarray | None = None
    excluded: np.ndarray | None = None


def maybe_explore(
    ranked: RankedCandidates,
    rng: np.random.Generator,
    *,
    predictor_used: bool,
    cold_start_exited: bool,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> ExplorationResult:
    """With probability explorationRate, swap the lowest injected candidate for the
    non-injected one with the largest |baseline_rank - predictor_rank|.

    Only when the predictor was used and cold start has exited; the generator is drawn from only
    then (as Signet calls Math.random only then). Ranks are 1-based; a missing predictor rank
    (< 1 or NaN) counts as n + 1, as in RRF. A gap of 0 is no disagreement: no swap. Ties: the
    explored candidate is the largest gap, then fused score desc, then id asc; the displaced one
    is the last injected by (fused score desc, id asc). `protected` candidates (constraints)
    are never displaced; `excluded` candidates (superseded) are never explored in. The swap
    may exceed the character budget, as in Signet."""
    injected, fused_scores, ids = ranked.injected, ranked.fused_scores, ranked.ids
    baseline_rank, predictor_rank = ranked.baseline_rank, ranked.predictor_rank
    protected, excluded = ranked.protected, ranked.excluded
    mask = np.asarray(injected, dtype=bool).copy()
    if not (predictor_used and cold_start_exited) or not mask.any():
        return ExplorationResult(mask)
    if rng.random() >= cfg.exploration_rate:
        return ExplorationResult(mask)

    id_arr = as_ids(ids)
    fused = np.asarray(fused_scores, dtype=np.float64)
    n = len(fused)
    b = np.asarray(baseline_rank, dtype=np.float64)
    p = np.asarray(predictor_rank, dtype=np.float64)
    p = np.where(np.isnan(p) | (p < 1), n + 1.0, p)
    gap = np.abs(b - p)

    explorable = ~mask & (gap > 0)
    if excluded is not None:
        explorable &= ~np.asarray(excluded, dtype=bool)
    outside = np.flatnonzero(explorable)
    keep = mask if protected is None else mask & ~np.asarray(protected, dtype=bool)
    inside = np.flatnonzero(keep)
    if len(outside) == 0 or len(inside) == 0:
        return ExplorationResult(mask)

    explored = int(outside[np.lexsort((id_arr[outside], -fused[outside], -gap[outside]))[0]])
    displaced = int(inside[rank_order(fused[inside], id_arr[inside])[-1]])
    mask[displaced] = False
    mask[explored] = True
    return ExplorationResult(
        mask, str(id_arr[explored]), str(id_arr[displaced]), explored, displaced
    )
