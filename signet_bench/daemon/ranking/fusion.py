"""Reciprocal Rank Fusion of the baseline and predictor rankings (docs/specification.md §3.4).

`score = alpha/(k + rank_baseline) + (1 - alpha)/(k + rank_predictor)`, k = 12, 1-based ranks,
a missing rank counts as candidate_count + 1; alpha is the baseline's earned weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.ranking.baseline import rank_order

__all__ = ["NOT_RANKED", "Fused", "baseline_only_scores", "fuse", "ranks_from_scores", "rrf_fuse"]

NOT_RANKED = -1  # rank value for a candidate the ranker did not score


def ranks_from_scores(scores: np.ndarray, ids: Sequence[str] | np.ndarray) -> np.ndarray:
    """1-based ranks by score desc, then memory id asc; NaN scores get NOT_RANKED (-1)."""
    s = np.asarray(scores, dtype=np.float64)
    ranks = np.full(len(s), NOT_RANKED, dtype=np.int64)
    scored = np.flatnonzero(~np.isnan(s))
    if len(scored):
        order = scored[rank_order(s[scored], np.asarray(ids)[scored])]
        ranks[order] = np.arange(1, len(order) + 1)
    return ranks


def _filled(rank: np.ndarray, fallback: float) -> np.ndarray:
    r = np.asarray(rank, dtype=np.float64)
    return np.where(np.isnan(r) | (r < 1), fallback, r)


def rrf_fuse(
    baseline_rank: np.ndarray,
    predictor_rank: np.ndarray,
    alpha: float,
    k: int = DEFAULT_CONFIG.rrf_k,
    n: int | None = None,
) -> np.ndarray:
    """RRF scores for 1-based ranks; a rank < 1 or NaN is "not ranked" and counts as n + 1,
    n = candidate count (default: the number of entries)."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    b = np.asarray(baseline_rank)
    p = np.asarray(predictor_rank)
    if b.shape != p.shape:
        raise ValueError(f"rank arrays differ in shape: {b.shape} vs {p.shape}")
    fallback = float((len(b) if n is None else n) + 1)
    return alpha / (k + _filled(b, fallback)) + (1.0 - alpha) / (k + _filled(p, fallback))


def baseline_only_scores(n: int, k: int = DEFAULT_CONFIG.rrf_k) -> np.ndarray:
    """The no-predictor fused score `1/(k + i + 1)` for baseline position i (0-based): it keeps
    the baseline order and equals RRF with alpha = 1."""
    return 1.0 / (k + np.arange(n, dtype=np.float64) + 1.0)


@dataclass(frozen=True, slots=True)
class Fused:
    """Predictor ranks (1-based, NOT_RANKED when unscored), fused scores, and the alpha used."""

    prank: np.ndarray
    fused: np.ndarray
    used: bool
    alpha: float


def fuse(pred: np.ndarray, ids: np.ndarray, alpha: float, cfg: PredictorConfig) -> Fused:
    """RRF of the baseline order (1-based) with the predictor's ranks; without any predictor
    score, the baseline-only scores and alpha 1.0."""
    n = len(pred)
    brank = np.arange(1, n + 1)
    if not np.isfinite(pred).any():
        none = np.full(n, NOT_RANKED, dtype=np.int64)
        return Fused(none, baseline_only_scores(n, cfg.rrf_k), False, 1.0)
    prank = ranks_from_scores(pred, ids)
    return Fused(prank, rrf_fuse(brank, prank, float(alpha), cfg.rrf_k, n), True, float(alpha))
