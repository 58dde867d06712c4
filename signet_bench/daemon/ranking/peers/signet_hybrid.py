"""Signet's hybrid recall (docs/specification.md §11.1) as a ranker.

- vector leg: `1 − cosine distance` = cosine(context, embedding) (line 300), `CosineRanker`; the
  context stands for Signet's `vectorQuery`, the embedded message (its first 200 chars, line 293);
- keyword leg: `candidate_bm25` of the query's recall terms, `importance >= 0.3`, normalised as
  |bm25| / max|bm25| (lines 296-298);
- merge (line 301): `0.7·vec + 0.3·bm25` when both legs score > 0, else the vector score when it
  is > 0, else the keyword score (Signet's `bm25 > 0 && vec > 0 ? ... : vec > 0 ? vec : bm25`);
- rehearsal boost (line 302): `score *= 1 + 0.1·ln(access_count + 1)·0.5^(days_since_access/30)`
  for accessed memories; an unknown last access counts as 30 days (Signet's rule for a NULL
  `last_accessed`), which is every accessed memory unless `last_accessed` is given.

Not applied, because they only cut the list the bench ranks in full: the `min_score` 0.1 cut,
the top-10 slice, and (unless `leg_limit` is set; Signet's is 20) the per-leg limit. The graph
and knowledge-graph boosts (lines 303-304) need entity data a session does not carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.ranking.baseline import SECONDS_PER_DAY, top_k_indices
from signet_bench.daemon.ranking.peers.bm25 import candidate_bm25
from signet_bench.daemon.ranking.peers.query import QueryText, vector_searchable
from signet_bench.daemon.ranking.peers.store_fields import last_access_at
from signet_bench.daemon.ranking.ranker import CosineRanker

__all__ = ["SignetHybridRanker", "hybrid_merge", "rehearsal_boost"]


def hybrid_merge(vector: np.ndarray, keyword: np.ndarray, alpha: float) -> np.ndarray:
    """Signet's merge of the two legs: `alpha·vec + (1 − alpha)·kw` where both are > 0, else
    `vec` where it is > 0, else `kw` (0 for a candidate neither leg found)."""
    vec = np.asarray(vector, dtype=np.float64)
    kw = np.asarray(keyword, dtype=np.float64)
    both = (vec > 0) & (kw > 0)
    return np.where(both, alpha * vec + (1.0 - alpha) * kw, np.where(vec > 0, vec, kw))


def rehearsal_boost(
    access_count: np.ndarray,
    days_since_access: np.ndarray,
    weight: float,
    half_life_days: float,
) -> np.ndarray:
    """The multiplier `1 + weight·ln(access_count + 1)·0.5^(days/half_life)`; 1 for memories
    never accessed, and a NaN `days` (unknown last access) counts as one half-life."""
    count = np.nan_to_num(np.asarray(access_count, dtype=np.float64), nan=0.0)
    days = np.asarray(days_since_access, dtype=np.float64)
    days = np.where(np.isfinite(days), days, half_life_days)
    boost = weight * np.log(np.maximum(count, 0.0) + 1.0) * np.power(0.5, days / half_life_days)
    return np.where(count > 0, 1.0 + boost, 1.0)


def _leg_top(scores: np.ndarray, present: np.ndarray, ids: np.ndarray, k: int) -> np.ndarray:
    """`scores` kept for the leg's top `k` present candidates (score desc, id asc), else 0."""
    pos = np.flatnonzero(present)
    keep = pos[top_k_indices(scores[pos], ids[pos], k)]
    out = np.zeros_like(scores)
    out[keep] = scores[keep]
    return out


@dataclass(frozen=True, eq=False)
class SignetHybridRanker(QueryText):
    """Signet 0.58's prompt-time recall score for every candidate (module docstring).

    `query` is the prompt (for LoCoMo, the question); `last_accessed` maps memory id -> epoch
    seconds (`store_fields.read_last_accessed`); accesses after the session start are ignored."""

    name: str = "signet_hybrid"
    alpha: float = 0.7
    importance_min: float | None = 0.3
    rehearsal_weight: float = 0.1
    rehearsal_half_life_days: float = 30.0
    leg_limit: int | None = None
    last_accessed: Mapping[str, float] | None = None

    def score(self, inputs: SessionInputs) -> np.ndarray:
        vec = CosineRanker().score(inputs)
        kw = candidate_bm25(inputs.contents, self.query, inputs.importance, self.importance_min)
        if self.leg_limit is not None:
            ids = inputs.memory_ids
            vec = _leg_top(vec, vector_searchable(inputs), ids, self.leg_limit)
            kw = _leg_top(kw, kw > 0, ids, self.leg_limit)
        last = last_access_at(inputs, self.last_accessed)
        days = (inputs.start.timestamp() - last) / SECONDS_PER_DAY
        boost = rehearsal_boost(
            inputs.access_count, days, self.rehearsal_weight, self.rehearsal_half_life_days
        )
        return hybrid_merge(vec, kw, self.alpha) * boost
