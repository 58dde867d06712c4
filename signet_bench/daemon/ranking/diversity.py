"""Topic diversity after fusion (docs/specification.md §3.5).

Walk the candidates in fused order; a candidate with an embedding counts the earlier
candidates (with embeddings) whose cosine similarity exceeds 0.85, and its score is multiplied
once by `(1 - floor) * decay ** count + floor` = 0.9 * 0.5 ** count + 0.1 (1, 0.55, 0.325, ...).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.ranking.baseline import rank_order

__all__ = ["diversity_multiplier", "topic_diversity", "topic_overlaps"]

_RECHECK_BAND = 1e-4  # far above float32 rounding of a 768-d dot product of unit vectors


def diversity_multiplier(overlaps: np.ndarray, cfg: PredictorConfig = DEFAULT_CONFIG) -> np.ndarray:
    """`(1 - floor) * decay ** overlaps + floor`: 1 for no overlap, never below the floor."""
    floor = cfg.topic_diversity_floor
    o = np.asarray(overlaps, dtype=np.float64)
    return (1.0 - floor) * np.power(cfg.topic_diversity_decay, o) + floor


def topic_overlaps(
    order: np.ndarray,
    embeddings: np.ndarray,
    has_emb: np.ndarray,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> np.ndarray:
    """Per candidate, how many candidates earlier in `order` are more than 0.85 cosine-similar.

    "Already selected" in the specification's single pass over the fused order is exactly "earlier
    in that order", which is also what Signet counts; candidates without an embedding (or with a
    zero vector) neither count nor are counted."""
    order = np.asarray(order, dtype=np.int64)
    n = len(order)
    out = np.zeros(n, dtype=np.int64)
    if n < 2:
        return out
    emb = np.asarray(embeddings)[order]
    norms = np.sqrt(np.einsum("ij,ij->i", emb, emb, dtype=np.float64))
    ok = np.asarray(has_emb, dtype=bool)[order] & (norms > 0)
    unit = np.zeros(emb.shape, dtype=np.float32)
    unit[ok] = emb[ok] / norms[ok, None]
    sims = unit @ unit.T  # float32 is fast; pairs near the threshold are redone in float64
    pairs = ok[:, None] & ok[None, :] & np.tri(n, n, -1, dtype=bool)  # earlier candidates only
    thr = cfg.topic_similarity_threshold
    similar = pairs & (sims > thr)
    ii, jj = np.nonzero(pairs & (np.abs(sims - thr) < _RECHECK_BAND))
    if len(ii):
        e64 = emb.astype(np.float64, copy=False)
        exact = np.einsum("ij,ij->i", e64[ii], e64[jj]) / (norms[ii] * norms[jj])
        similar[ii, jj] = exact > thr
    out[order] = similar.sum(axis=1)
    return out


def topic_diversity(
    scores: np.ndarray,
    ids: Sequence[str] | np.ndarray,
    embeddings: np.ndarray,
    has_emb: np.ndarray,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    *,
    order: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(adjusted scores, overlap counts), both aligned with the input candidates.

    The walk follows `order` if given, else fused score desc then memory id asc; re-sort the
    adjusted scores (e.g. `rank_order`) for the final order."""
    s = np.asarray(scores, dtype=np.float64)
    walk = rank_order(s, ids) if order is None else np.asarray(order, dtype=np.int64)
    overlaps = topic_overlaps(walk, embeddings, has_emb, cfg)
    return s * diversity_multiplier(overlaps, cfg), overlaps
