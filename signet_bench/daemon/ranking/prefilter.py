"""Candidate pre-filtering (docs/specification.md §3.2): narrow a 2,000-4,000 memory corpus to <=
100 candidates.

Pool = top-50 by effectiveScore ∪ top-50 by cosine(context, memory) among the top-200 by
effectiveScore, plus every constraint; memories whose decayed importance is below 0.1 are
excluded first (pinned memories and constraints never are). All rankings break ties by
(score desc, memory id asc).

With a knowledge graph, the pool also takes the memories its traversal reaches (the specification's
traversal candidates; `traversal_join`): a memory the effective score already picks keeps the
higher of its effective and traversal scores, the others join with their traversal score, at
most `traversal.pool_quota` of them (the best by traversal score).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.ranking.baseline import as_ids, rank_order, top_k_indices

__all__ = [
    "MemoryStates",
    "TraversalJoin",
    "cosine_to",
    "eligible_mask",
    "prefilter",
    "similarity_pool",
    "traversal_join",
]


def cosine_to(context: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Cosine of each row of `matrix` with `context`, in float64; a zero row or a zero context
    gives 0. Pass only the rows needed (the pre-filter needs the similarity pool only)."""
    m = np.asarray(matrix, dtype=np.float64)
    c = np.asarray(context, dtype=np.float64).ravel()
    if m.ndim != 2 or len(m) == 0:
        return np.zeros(0, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", m, m)) * float(np.linalg.norm(c))
    out = np.zeros(len(m), dtype=np.float64)
    ok = norms > 0
    out[ok] = (m[ok] @ c) / norms[ok]
    return out


def eligible_mask(
    importance_decayed: np.ndarray,
    *,
    pinned: np.ndarray | None = None,
    is_constraint: np.ndarray | None = None,
    excluded: np.ndarray | None = None,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> np.ndarray:
    """Memories allowed into the pool: decayed importance >= 0.1, or pinned, or a constraint,
    and not `excluded` (e.g. soft-deleted). A NULL (NaN) importance is below the floor."""
    dec = np.asarray(importance_decayed, dtype=np.float64)
    keep = dec >= cfg.min_decayed_importance
    if pinned is not None:
        keep |= np.asarray(pinned, dtype=bool)
    if is_constraint is not None:
        keep |= np.asarray(is_constraint, dtype=bool)
    if excluded is not None:
        keep &= ~np.asarray(excluded, dtype=bool)
    return keep


def similarity_pool(
    eff_scores: np.ndarray,
    ids: Sequence[str] | np.ndarray,
    eligible: np.ndarray,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> np.ndarray:
    """Indices of the top-200 eligible memories by effectiveScore (id asc at ties): the rows
    whose context similarity the pre-filter looks at; callers need cosines only for these."""
    idx = np.flatnonzero(eligible)
    eff = np.asarray(eff_scores, dtype=np.float64)[idx]
    return idx[top_k_indices(eff, as_ids(ids)[idx], cfg.prefilter_similarity_pool)]


@dataclass(frozen=True, slots=True)
class MemoryStates:
    """What the pre-filter knows of each memory besides its scores, aligned with the corpus
    (None: no memory is so): constraints, decayed importance (None: the effective score),
    pinned, and `excluded` (e.g. soft-deleted) ones."""

    is_constraint: np.ndarray | None = None
    importance_decayed: np.ndarray | None = None
    pinned: np.ndarray | None = None
    excluded: np.ndarray | None = None


def prefilter(
    eff_scores: np.ndarray,
    context_sims: np.ndarray | None,
    ids: Sequence[str] | np.ndarray,
    states: MemoryStates = MemoryStates(),
    *,
    joined: np.ndarray | None = None,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> np.ndarray:
    """Candidate indices in baseline order (effectiveScore desc, id asc), at most 100.

    `context_sims[i]` is cosine(context, memory i); NaN (no embedding, or outside the
    similarity pool) or `context_sims=None` (no context) leaves the similarity path empty.
    `joined` memories (the graph's traversal candidates) enter whatever their rank. Over the
    cap, constraints are kept first, then the best by effectiveScore. `excluded` memories
    (soft-deleted ones) never enter, constraints and joined ones included."""
    is_constraint, importance_decayed = states.is_constraint, states.importance_decayed
    pinned, excluded = states.pinned, states.excluded
    eff = np.asarray(eff_scores, dtype=np.float64)
    id_arr = as_ids(ids)
    n = len(eff)
    cons = np.zeros(n, dtype=bool)
    if is_constraint is not None:
        cons |= np.asarray(is_constraint, dtype=bool)
    if excluded is not None:
        cons &= ~np.asarray(excluded, dtype=bool)
    dec = eff if importance_decayed is None else importance_decayed
    eligible = eligible_mask(dec, pinned=pinned, is_constraint=cons, excluded=excluded, cfg=cfg)
    extra = np.zeros(n, dtype=bool) if joined is None else np.asarray(joined, dtype=bool)
    if excluded is not None:
        extra &= ~np.asarray(excluded, dtype=bool)
    eligible |= extra

    elig_idx = np.flatnonzero(eligible)
    elig_eff = eff[elig_idx]
    elig_ids = id_arr[elig_idx]
    by_eff = elig_idx[top_k_indices(elig_eff, elig_ids, cfg.prefilter_effective_top)]
    chosen = np.zeros(n, dtype=bool)
    chosen[by_eff] = True
    chosen |= cons | extra

    if context_sims is not None:
        pool = elig_idx[top_k_indices(elig_eff, elig_ids, cfg.prefilter_similarity_pool)]
        sims = np.asarray(context_sims, dtype=np.float64)[pool]
        has = ~np.isnan(sims)
        pool, sims = pool[has], sims[has]
        chosen[pool[top_k_indices(sims, id_arr[pool], cfg.prefilter_similarity_top)]] = True

    cand = np.flatnonzero(chosen)
    cap = cfg.candidate_pool_size
    if len(cand) > cap:
        # constraints first, then effectiveScore desc, then id asc
        keep = np.lexsort((id_arr[cand], -eff[cand], ~cons[cand]))[:cap]
        cand = cand[keep]
    return cand[rank_order(eff[cand], id_arr[cand])]


@dataclass(frozen=True, slots=True)
class TraversalJoin:
    """The pool's inputs once the graph's traversal candidates join (corpus-aligned):
    effective scores, eligibility, the memories that join through the graph alone (`joined`:
    recorded with source 'ka_traversal') and those whose place the graph made (`carried`: the
    joined ones and those whose score it raised)."""

    eff: np.ndarray
    eligible: np.ndarray
    joined: np.ndarray
    carried: np.ndarray


def traversal_join(
    eff_scores: np.ndarray,
    eligible: np.ndarray,
    ids: Sequence[str] | np.ndarray,
    rows: np.ndarray,
    scores: np.ndarray,
    *,
    is_constraint: np.ndarray,
    quota: int,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> TraversalJoin:
    """Traversal candidates (`rows`, live corpus rows, with their traversal `scores`) in the
    pool's inputs. One the effective-score path already picks (top-50 by effectiveScore, or a
    constraint) keeps max(effective, traversal); of the others, the `quota` best by traversal
    score (memory id asc at ties) join with their traversal score, eligible whatever their
    decayed importance; the rest stay as they were."""
    eff = np.asarray(eff_scores, dtype=np.float64)
    id_arr = np.asarray(ids)  # compared only where scores tie (top_k_indices converts those)
    elig_idx = np.flatnonzero(eligible)
    picked = np.zeros(len(eff), dtype=bool)
    picked[
        elig_idx[top_k_indices(eff[elig_idx], id_arr[elig_idx], cfg.prefilter_effective_top)]
    ] = True
    picked |= np.asarray(is_constraint, dtype=bool) & eligible
    rows = np.asarray(rows, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    old = picked[rows]
    new_rows, new_scores = rows[~old], scores[~old]
    sel = top_k_indices(new_scores, id_arr[new_rows], max(quota, 0))
    out = eff.copy()
    out[rows[old]] = np.maximum(eff[rows[old]], scores[old])
    out[new_rows[sel]] = new_scores[sel]
    joined = np.zeros(len(eff), dtype=bool)
    joined[new_rows[sel]] = True
    return TraversalJoin(out, eligible | joined, joined, joined | (out > eff))
