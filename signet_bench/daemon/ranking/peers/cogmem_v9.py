"""Cognitive Memory v9 as a ranker: its read path over a session's candidates.

The design's read path (docs/specification.md §11.4): hybrid search (vector + FTS) -> RRF ->
ACT-R activation -> boosts -> MMR re-rank. Implemented:

- similarity: cosine(context, embedding) (`CosineRanker`; the design's "vector distance"),
  0 for a candidate without an embedding or a session without a context;
- RRF: the vector leg ranks the embedded candidates by cosine, the FTS leg the
  candidates that match the query by BM25 (`candidate_bm25`, no importance filter); each leg adds
  `1/(K + rank + 1)`, K = 60, rank 0-based; a candidate's RRF score is the sum over the legs
  that found it ("merge unique results"). Tied scores share the best rank, so identical
  candidates get identical RRF scores;
- ACT-R activation: `B = ln(max(n, 1)) − 0.5·ln(age_s)`, `activation = 1/(1 + e^−B)`,
  n = access count, age = seconds since the last access — since creation when the last access is
  unknown, and at least 1 s (our choice: ln of a zero age is undefined);
- composite: `0.40·similarity + 0.30·activation + 0.15·importance + 0.15·RRF`, raw as the
  design writes it (so RRF, at most 2/61, only breaks near-ties); a NULL importance counts as 0.5,
  the store's default;
- FSRS-6 retention where access data exists: when `last_accessed` is given, the
  composite is multiplied by the retrieval strength `R = (1 + t/(9·S))^(−1/0.5)`, t = days
  since the last access (since creation for a memory never accessed), S = the storage strength,
  which the design bounds to 1-10 and raises with each retrieval: we take
  `S = clip(1 + access_count, 1, 10)` days (the design gives no initial stability). Without access
  data (LoCoMo) R is not applied. The design does not say how R enters the score; as a factor it
  shrinks every composite towards 0, which also lifts the rare negative one;
- MMR: `λ·relevance − (1−λ)·max_sim(selected)`, λ = 0.7, relevance = the composite,
  similarity = "text-based cosine": the cosine of the candidates' token-count vectors (the
  text path's hash buckets). It orders every candidate; ties pick the smaller memory id. The
  score of a candidate is its MMR value when selected, which never increases along the selection,
  so the score order is the MMR order.

Not implemented, for lack of data in a session: entity and episode boosts, sub-tier boosts,
mood congruence, utility, HyDE (the session context is the query embedding), the intent
router's leg weights (RRF is rank-based).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.ranking.baseline import SECONDS_PER_DAY, as_ids
from signet_bench.daemon.ranking.peers.bm25 import candidate_bm25
from signet_bench.daemon.ranking.peers.query import QueryText, vector_searchable
from signet_bench.daemon.ranking.peers.store_fields import last_access_at
from signet_bench.daemon.ranking.ranker import CosineRanker

__all__ = [
    "CogMemV9Ranker",
    "actr_activation",
    "fsrs_retention",
    "mmr_select",
    "rrf_legs",
    "shared_ranks",
    "storage_strength",
    "token_cosine",
]


def actr_activation(
    access_count: np.ndarray, age_seconds: np.ndarray, decay: float = 0.5
) -> np.ndarray:
    """`1/(1 + e^−B)`, `B = ln(max(n, 1)) − decay·ln(age_s)`; an age below 1 s counts
    as 1 s."""
    n = np.nan_to_num(np.asarray(access_count, dtype=np.float64), nan=0.0)
    age = np.maximum(np.asarray(age_seconds, dtype=np.float64), 1.0)
    b = np.log(np.maximum(n, 1.0)) - decay * np.log(age)
    return 1.0 / (1.0 + np.exp(-b))


def fsrs_retention(
    days: np.ndarray, stability: np.ndarray, decay: float = 0.5, factor: float = 9.0
) -> np.ndarray:
    """FSRS retention `(1 + t/(factor·S))^(−1/decay)`, t in days (negative -> 0)."""
    t = np.maximum(np.asarray(days, dtype=np.float64), 0.0)
    s = np.asarray(stability, dtype=np.float64)
    return np.power(1.0 + t / (factor * s), -1.0 / decay)


def storage_strength(access_count: np.ndarray, low: float = 1.0, high: float = 10.0) -> np.ndarray:
    """The storage strength used as FSRS stability: `clip(1 + access_count, 1, 10)`."""
    n = np.nan_to_num(np.asarray(access_count, dtype=np.float64), nan=0.0)
    return np.clip(1.0 + n, low, high)


def shared_ranks(scores: np.ndarray, present: np.ndarray) -> np.ndarray:
    """0-based rank of each present candidate by score desc, tied scores sharing the best rank
    (the number of present candidates with a strictly higher score); -1 where absent."""
    s = np.asarray(scores, dtype=np.float64)
    mask = np.asarray(present, dtype=bool)
    ranks = np.full(len(s), -1, dtype=np.int64)
    ordered = np.sort(-s[mask])
    ranks[mask] = np.searchsorted(ordered, -s[mask], side="left")
    return ranks


def rrf_legs(legs: Sequence[tuple[np.ndarray, np.ndarray]], k: int) -> np.ndarray:
    """Σ over the legs (scores, found) that found a candidate of `1/(k + rank + 1)`, rank 0-based
    (`shared_ranks`); 0 for a candidate no leg found."""
    n = len(legs[0][0]) if legs else 0
    out = np.zeros(n, dtype=np.float64)
    for scores, found in legs:
        ranks = shared_ranks(scores, found)
        hit = ranks >= 0
        out[hit] += 1.0 / (k + ranks[hit] + 1.0)
    return out


_EXACT_FLOAT32 = 2.0**24  # whole numbers below this add exactly in float32


def token_cosine(tokens: Sequence[np.ndarray]) -> np.ndarray:
    """(n, n) cosine of the candidates' token-count vectors; 0 for a candidate without tokens.

    Only tokens that two or more candidates share enter the product (the others add to the norms
    alone). Counts are whole numbers, so every sum is exact whatever its order (in float32 while
    the squared norms stay below 2**24), and a pair's value does not depend on where the
    candidates sit. The result is read-only and cached for the last few candidate sets, since a
    benchmark scores many queries over the same memories."""
    n = len(tokens)
    lengths = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=n)
    if n == 0 or lengths.sum() == 0:
        return np.zeros((n, n), dtype=np.float64)
    flat = np.concatenate([np.asarray(t, dtype=np.int64).ravel() for t in tokens])
    return _cached_cosine(lengths.tobytes(), flat.tobytes())


@functools.lru_cache(maxsize=4)
def _cached_cosine(lengths: bytes, flat: bytes) -> np.ndarray:
    """`_count_cosine` of the documents whose token counts and tokens these bytes hold."""
    per_doc = np.frombuffer(lengths, dtype=np.int64)
    owner = np.repeat(np.arange(len(per_doc)), per_doc)
    out = _count_cosine(owner, np.frombuffer(flat, dtype=np.int64), len(per_doc))
    out.setflags(write=False)
    return out


def _count_cosine(owner: np.ndarray, token: np.ndarray, n: int) -> np.ndarray:
    """Cosine of the count vectors of `n` documents, token i of which belongs to `owner[i]`."""
    vocab, col = np.unique(token, return_inverse=True)
    cell, count = np.unique(owner * len(vocab) + col, return_counts=True)
    row, col = np.divmod(cell, len(vocab))
    norm2 = np.bincount(row, weights=count.astype(np.float64) ** 2, minlength=n)
    shared = np.bincount(col, minlength=len(vocab))[col] >= 2
    kept, kept_col = np.unique(col[shared], return_inverse=True)
    dtype = np.float32 if norm2.max() < _EXACT_FLOAT32 else np.float64
    counts = np.zeros((n, len(kept)), dtype=dtype)
    counts[row[shared], kept_col] = count[shared]
    dot = (counts @ counts.T).astype(np.float64)
    np.fill_diagonal(dot, norm2)
    norm = np.sqrt(norm2)
    denom = np.outer(norm, norm)
    return np.divide(dot, denom, out=np.zeros_like(dot), where=denom > 0)


def mmr_select(
    relevance: np.ndarray, similarity: np.ndarray, ids: np.ndarray, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """(order, values): greedy MMR over every candidate, each step taking the largest
    `lam·relevance − (1 − lam)·max similarity to those already taken` (0 before the first),
    ties to the smaller memory id; `values[i]` is the MMR value of `order[i]` when taken."""
    rel = np.asarray(relevance, dtype=np.float64)
    n = len(rel)
    id_rank = np.empty(n, dtype=np.int64)
    id_rank[np.argsort(as_ids(ids), kind="stable")] = np.arange(n)
    taken = np.zeros(n, dtype=bool)
    max_sim = np.zeros(n, dtype=np.float64)
    order = np.empty(n, dtype=np.int64)
    values = np.empty(n, dtype=np.float64)
    for step in range(n):
        val = np.where(taken, -np.inf, lam * rel - (1.0 - lam) * max_sim)
        best = val.max()
        tied = np.flatnonzero(val == best)
        j = int(tied[np.argmin(id_rank[tied])])
        order[step], values[step], taken[j] = j, best, True
        max_sim = np.maximum(max_sim, similarity[j])
    return order, values


@dataclass(frozen=True, eq=False)
class CogMemV9Ranker(QueryText):
    """Cognitive Memory v9's retrieval score and MMR order (module docstring). `query` feeds
    the FTS leg of the RRF; `last_accessed` (memory id -> epoch seconds, e.g.
    `store_fields.read_last_accessed`) turns on FSRS retention and dates the ACT-R age."""

    name: str = "cogmem_v9"
    similarity_weight: float = 0.40
    activation_weight: float = 0.30
    importance_weight: float = 0.15
    rrf_weight: float = 0.15
    rrf_k: int = 60
    actr_decay: float = 0.5
    mmr_lambda: float = 0.7
    missing_importance: float = 0.5
    last_accessed: Mapping[str, float] | None = None

    def composite(self, inputs: SessionInputs) -> np.ndarray:
        """The weighted composite, times FSRS retention when access data is given."""
        sim = CosineRanker().score(inputs)
        kw = candidate_bm25(inputs.contents, self.query)
        rrf = rrf_legs([(sim, vector_searchable(inputs)), (kw, kw > 0)], self.rrf_k)
        now = inputs.start.timestamp()
        last = last_access_at(inputs, self.last_accessed)
        since = np.where(np.isfinite(last), last, np.asarray(inputs.created_at, np.float64))
        activation = actr_activation(inputs.access_count, now - since, self.actr_decay)
        imp = np.asarray(inputs.importance, dtype=np.float64)
        imp = np.where(np.isfinite(imp), imp, self.missing_importance)
        score = (
            self.similarity_weight * sim
            + self.activation_weight * activation
            + self.importance_weight * imp
            + self.rrf_weight * rrf
        )
        if self.last_accessed is None:
            return score
        strength = storage_strength(inputs.access_count)
        return score * fsrs_retention((now - since) / SECONDS_PER_DAY, strength)

    def score(self, inputs: SessionInputs) -> np.ndarray:
        n = len(inputs)
        out = np.zeros(n, dtype=np.float64)
        if n == 0:
            return out
        sims = token_cosine(inputs.tokens)
        order, values = mmr_select(self.composite(inputs), sims, inputs.memory_ids, self.mmr_lambda)
        out[order] = values
        return out
