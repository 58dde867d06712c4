"""The ranker contract: one session's inputs in, one score per candidate out.

Every ranker the workbench compares — Signet's baseline, cosine(context, memory), the lexical
signal and the hybrid of the two, the numpy scorer, the ONNX-served scorer and the peer
rankers — implements `Ranker`. A ranker returns a
finite float64 score per candidate (higher = better), depends only on the candidates and the
session (not on their order in the input), and is deterministic. Orders are derived from the
scores by one rule, `ranking_order`: score descending, then memory id ascending.
`tests/ranking/ranker_contract.py` holds the tests every ranker must pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.ranking.baseline import rank_order
from signet_bench.daemon.ranking.diversity import topic_diversity
from signet_bench.daemon.ranking.fusion import fuse
from signet_bench.daemon.ranking.prefilter import cosine_to
from signet_scorer.signals import hybrid_scores, signal_column

__all__ = [
    "CosineRanker",
    "EffectiveScoreRanker",
    "FusedRanker",
    "HybridRanker",
    "LexicalRanker",
    "Ranker",
    "distinct_candidates",
    "embedded_cosine",
    "per_distinct_candidate",
    "ranking_order",
]

# Per-candidate fields of `SessionInputs` a score may depend on (all but the id and corpus row).
_FIXED_WIDTH = (
    "embeddings",
    "has_embedding",
    "features",
    "effective_score",
    "created_at",
    "importance",
    "access_count",
    "is_constraint",
    "signals",
)


@runtime_checkable
class Ranker(Protocol):
    """Scores a session's candidates; `name` is the stable name benchmarks report it under."""

    name: str

    def score(self, inputs: SessionInputs) -> np.ndarray:
        """(n,) finite float64 scores aligned with `inputs.memory_ids`; higher ranks first."""
        ...


def ranking_order(ranker: Ranker, inputs: SessionInputs) -> np.ndarray:
    """Candidate positions, best first (score desc, memory id asc on ties)."""
    return rank_order(ranker.score(inputs), inputs.memory_ids)


def distinct_candidates(inputs: SessionInputs) -> tuple[np.ndarray, np.ndarray]:
    """(first, group): the position of the first candidate of each group of candidates whose
    inputs are identical apart from memory id and corpus row (groups in input order), and each
    candidate's group, so `first[group[i]]` stands for candidate i."""
    n = len(inputs)
    if len(set(inputs.contents)) == n:  # the usual case (a store keeps contents unique)
        return np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64)
    fixed = np.hstack(
        [
            np.ascontiguousarray(getattr(inputs, f)).reshape(n, -1).view(np.uint8)
            for f in _FIXED_WIDTH
        ]
    )
    seen: dict[tuple[bytes, bytes, str], int] = {}
    firsts: list[int] = []
    group = np.empty(n, dtype=np.int64)
    for i in range(n):
        key = (fixed[i].tobytes(), np.asarray(inputs.tokens[i]).tobytes(), inputs.contents[i])
        if key not in seen:
            seen[key] = len(firsts)
            firsts.append(i)
        group[i] = seen[key]
    return np.asarray(firsts, dtype=np.int64), group


def per_distinct_candidate(
    inputs: SessionInputs, score: Callable[[SessionInputs], np.ndarray]
) -> np.ndarray:
    """`score` evaluated once per distinct candidate and shared by identical ones.

    BLAS products round a row's result by its position in the matrix, so identical candidates
    can differ in the last bit and their order would follow their input positions; sharing one
    score makes them tie exactly, so the memory-id rule orders them whatever the input order."""
    first, group = distinct_candidates(inputs)
    if len(first) == len(inputs):
        return score(inputs)
    return score(inputs.take(first))[group]


@dataclass(frozen=True)
class EffectiveScoreRanker:
    """Signet's heuristic baseline (docs/specification.md §3.1): effectiveScore at the session
    start, 1.0 for a pinned memory, else importance · 0.95^age_days (`baseline.effective_score`,
    computed by `session_inputs`). A NULL importance (NaN) scores 0.0, as in Signet, where
    JavaScript's `null * x` is 0; `ranking_order` over these scores is the baseline order."""

    name: str = "baseline"

    def score(self, inputs: SessionInputs) -> np.ndarray:
        eff = np.asarray(inputs.effective_score, dtype=np.float64)
        return np.where(np.isfinite(eff), eff, 0.0)


@dataclass(frozen=True)
class CosineRanker:
    """cosine(session context, memory embedding), the similarity half of the pre-filter
    (docs/specification.md §3.2) (`prefilter.cosine_to`). A candidate without an embedding, a zero
    vector on either side and a session without a context score 0.0, the cosine of orthogonal
    vectors: no evidence of relevance either way. Identical candidates get identical scores
    (`per_distinct_candidate`)."""

    name: str = "cosine"

    def score(self, inputs: SessionInputs) -> np.ndarray:
        n = len(inputs)
        if inputs.context is None or n == 0:
            return np.zeros(n, dtype=np.float64)
        emb = np.asarray(inputs.embeddings)
        dim = np.shape(inputs.context)[-1]
        if emb.ndim != 2 or emb.shape[1] != dim:
            raise ValueError(
                f"session {inputs.session_key}: context has dimension {dim}, candidate "
                f"embeddings have shape {emb.shape}"
            )
        return per_distinct_candidate(inputs, _embedded_cosine)


@dataclass(frozen=True)
class LexicalRanker:
    """The lexical signal alone: BM25 of each candidate for the session's query terms over the
    pool, normalised by its maximum (`signet_scorer.signals.lexical_scores`, computed by
    `session_inputs`); 0 everywhere when the session has no query terms."""

    name: str = "lexical"

    def score(self, inputs: SessionInputs) -> np.ndarray:
        column = np.asarray(inputs.signals)[:, signal_column("lexical")]
        return column.astype(np.float64)


@dataclass(frozen=True)
class HybridRanker:
    """0.7·cosine(context, memory) + 0.3·lexical (`signet_scorer.signals.hybrid_scores`): Signet's
    hybrid weights on every candidate, the order a fresh scorer starts at. Unlike the peer
    `signet_hybrid` it does not fall back to one leg where the other scores 0, so it is a
    straight line in the two signals (a candidate without keyword hits is not scored by its
    cosine alone above one with both). Without query terms it orders as cosine."""

    name: str = "hybrid"

    def score(self, inputs: SessionInputs) -> np.ndarray:
        return hybrid_scores(CosineRanker().score(inputs), LexicalRanker().score(inputs))


def embedded_cosine(
    context: np.ndarray, embeddings: np.ndarray, has_embedding: np.ndarray
) -> np.ndarray:
    """cosine(context, embedding) of the embedded candidates, 0.0 for the others (the rule
    `CosineRanker` scores by, and the free ranker a training run is judged against)."""
    has = np.asarray(has_embedding, dtype=bool)
    out = np.zeros(len(has), dtype=np.float64)
    if has.any():
        out[has] = cosine_to(context, np.asarray(embeddings)[has])
    return out


def _embedded_cosine(inputs: SessionInputs) -> np.ndarray:
    return embedded_cosine(inputs.context, inputs.embeddings, inputs.has_embedding)


@dataclass(frozen=True)
class FusedRanker:
    """What session start injects from (docs/specification.md §3.4): RRF of the baseline order and
    `predictor`'s ranks with the baseline weight `alpha` (`fusion.fuse`), then topic diversity. The
    baseline order is the effective-score order (`EffectiveScoreRanker`), so the result does not
    depend on the input order; with alpha 1 (cold start) or a predictor without scores it is the
    baseline order."""

    predictor: Ranker
    alpha: float
    cfg: PredictorConfig = DEFAULT_CONFIG
    name: str = "fused"

    def score(self, inputs: SessionInputs) -> np.ndarray:
        n = len(inputs)
        out = np.zeros(n, dtype=np.float64)
        if n == 0:
            return out
        order = ranking_order(EffectiveScoreRanker(), inputs)
        ids = inputs.memory_ids[order]
        pred = np.asarray(self.predictor.score(inputs), dtype=np.float64)[order]
        fz = fuse(pred, ids, self.alpha, self.cfg)
        emb, has = inputs.embeddings[order], inputs.has_embedding[order]
        final, _ = topic_diversity(fz.fused, ids, emb, has, self.cfg)
        out[order] = final
        return out
