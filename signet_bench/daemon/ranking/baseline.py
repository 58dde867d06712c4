"""The heuristic baseline: Signet's effectiveScore and the ordering built on it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig

__all__ = [
    "SECONDS_PER_DAY",
    "age_days",
    "as_ids",
    "baseline_ranking",
    "decayed_importance",
    "effective_score",
    "rank_order",
    "top_k_indices",
]

SECONDS_PER_DAY = 86_400.0


def as_ids(ids: Sequence[str] | np.ndarray) -> np.ndarray:
    """Memory ids as a numpy unicode array (sortable by lexsort; no copy if already one)."""
    arr = np.asarray(ids)
    if arr.dtype.kind != "U":
        arr = arr.astype(str)
    return arr


def age_days(created_at_epoch_s: np.ndarray, now_epoch_s: float) -> np.ndarray:
    """Fractional days from each creation time to `now` (wall time of the session start)."""
    return (float(now_epoch_s) - np.asarray(created_at_epoch_s, dtype=np.float64)) / SECONDS_PER_DAY


def decayed_importance(
    importance: np.ndarray, age: np.ndarray, cfg: PredictorConfig = DEFAULT_CONFIG
) -> np.ndarray:
    """`importance * 0.95 ** age_days`, ignoring pins (the pre-filter's exclusion test)."""
    imp = np.asarray(importance, dtype=np.float64)
    return imp * np.power(cfg.effective_score_decay, np.asarray(age, dtype=np.float64))


def effective_score(
    importance: np.ndarray,
    age: np.ndarray,
    pinned: np.ndarray,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> np.ndarray:
    """Signet effectiveScore: 1.0 if pinned else `importance * 0.95 ** age_days` (vectorised).

    Like Signet, a creation time in the future (negative age) is not clamped."""
    dec = decayed_importance(importance, age, cfg)
    return np.where(np.asarray(pinned, dtype=bool), cfg.pinned_effective_score, dec)


def rank_order(scores: np.ndarray, ids: Sequence[str] | np.ndarray) -> np.ndarray:
    """Indices sorted by score desc, then memory id asc; NaN scores sort last."""
    s = np.asarray(scores, dtype=np.float64)
    if len(s) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.lexsort((as_ids(ids), -s)).astype(np.int64)


def top_k_indices(scores: np.ndarray, ids: np.ndarray, k: int) -> np.ndarray:
    """The k best indices by (score desc, id asc), in that order; exact at ties, O(n) select."""
    s = np.asarray(scores, dtype=np.float64)
    n = len(s)
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    s = np.where(np.isnan(s), -np.inf, s)
    if k >= n:
        return rank_order(s, ids)
    part = np.argpartition(-s, k - 1)[:k]
    threshold = s[part].min()
    pool = np.flatnonzero(s >= threshold)  # every tie at the boundary, so id order decides
    return pool[rank_order(s[pool], ids[pool])[:k]]


def baseline_ranking(
    ids: Sequence[str] | np.ndarray,
    importance: np.ndarray,
    created_at_epoch_s: np.ndarray,
    pinned: np.ndarray,
    now_epoch_s: float,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> tuple[np.ndarray, np.ndarray]:
    """(order, effective scores): all memories by effectiveScore desc, then id asc."""
    eff = effective_score(importance, age_days(created_at_epoch_s, now_epoch_s), pinned, cfg)
    return rank_order(eff, ids), eff
