"""Judge monitoring (docs/specification.md §9.7, §9.8): the recency drift signal and human-vs-judge
calibration.

The continuity scorer is the sole judge of predictor and baseline; these numbers watch it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig

__all__ = ["calibration_flagged", "calibration_mae", "drift_signal"]


def drift_signal(
    relevance: ArrayLike, memory_age_days: ArrayLike, cfg: PredictorConfig = DEFAULT_CONFIG
) -> float:
    """The judge's drift (docs/specification.md §9.7): mean relevance of memories < 7 d old − of
    memories > 30 d old.

    Ages are the memory's age when it was judged. NaN relevances are ignored; NaN when either
    side has no judged memory. A growing positive gap suggests judge recency bias.
    """
    rel = np.asarray(relevance, dtype=np.float64)
    age = np.asarray(memory_age_days, dtype=np.float64)
    if rel.shape != age.shape:
        raise ValueError(f"relevance and ages differ in shape: {rel.shape} vs {age.shape}")
    ok = ~np.isnan(rel) & ~np.isnan(age)
    recent = rel[ok & (age < cfg.drift_recent_days)]
    old = rel[ok & (age > cfg.drift_old_days)]
    if recent.size == 0 or old.size == 0:
        return math.nan
    return float(recent.mean() - old.mean())


def calibration_mae(human: ArrayLike, scorer: ArrayLike) -> float:
    """Mean |human − scorer| over pairs where both labels exist; NaN if there is none."""
    h = np.asarray(human, dtype=np.float64)
    s = np.asarray(scorer, dtype=np.float64)
    if h.shape != s.shape:
        raise ValueError(f"human and scorer labels differ in shape: {h.shape} vs {s.shape}")
    ok = ~np.isnan(h) & ~np.isnan(s)
    return float(np.abs(h[ok] - s[ok]).mean()) if ok.any() else math.nan


def calibration_flagged(mae: float, cfg: PredictorConfig = DEFAULT_CONFIG) -> bool:
    """Judge calibration (docs/specification.md §9.8): flag when MAE exceeds
    ``calibration_mae_threshold`` (0.2)."""
    return not math.isnan(mae) and mae > cfg.calibration_mae_threshold
