"""The per-session predictor-vs-baseline comparison: one ``predictor_comparisons`` row.

The comparison (docs/specification.md §7.1): NDCG@k of the predictor's and the baseline's rankings
of one session's ``session_memories`` rows, judged on the evaluation pool (top-k of each ranking ∪
injected).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import ArrayLike

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.metrics import NdcgVariant, ndcg_of_ranking, ranked_ids, signet_ndcg_at_k

__all__ = ["Comparison", "ComparisonInput", "compare_session", "evaluation_pool", "judged_ndcg"]


def evaluation_pool(
    baseline_ranked: Sequence[str],
    predictor_ranked: Sequence[str],
    injected: Iterable[str],
    k: int = DEFAULT_CONFIG.comparison_k,
) -> tuple[str, ...]:
    """The evaluation pool (docs/specification.md §7.1): union(top-k baseline, top-k predictor,
    injected), in that order."""
    seen: dict[str, None] = {}
    for m in (*baseline_ranked[:k], *predictor_ranked[:k], *injected):
        seen.setdefault(m, None)
    return tuple(seen)


def _arr(name: str, values: ArrayLike, n: int, dtype: Any) -> np.ndarray:
    a = np.asarray(values, dtype=dtype)
    if a.ndim == 0:
        a = np.full(n, a.item(), dtype=dtype)
    if a.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {a.shape}")
    return a


_COLUMN_DTYPES: tuple[tuple[str, Any], ...] = (
    ("effective_score", np.float64),
    ("predictor_score", np.float64),
    ("was_injected", bool),
    ("fts_hit_count", np.int64),
    ("relevance", np.float64),
    ("has_entity_slot", bool),
    ("is_constraint", bool),
    ("is_fts_only", bool),
)
"""`ComparisonInput`'s per-memory fields and the dtype each is stored as."""


@dataclass(frozen=True, slots=True)
class ComparisonInput:
    """One session's ``session_memories`` rows (parallel arrays) and its judge confidence.

    ``relevance`` is what the session is judged by: Signet uses the judge's per-memory
    ``relevance_score`` (NaN where unjudged); the label function's output may be passed instead.
    ``is_constraint`` is counted as given: pass "a constraint of this session's scope" (the
    constraints session start forces in), not every constraint of the store. ``is_fts_only``
    marks rows that prompt-time recall added (``source = 'fts_only'``); they are not part of the
    session-start candidate pool. Every per-memory field takes any array-like of one value per
    memory id, or a scalar that stands for all of them (the defaults); the constructor turns
    them into numpy arrays of the commented dtype and rejects other shapes.
    """

    session_key: str
    memory_ids: np.ndarray  # str, unique
    _: KW_ONLY
    effective_score: np.ndarray  # float, NaN = not in the baseline ranking
    relevance: np.ndarray  # float, NaN = not judged
    scorer_confidence: float
    predictor_score: np.ndarray = math.nan  # float, NaN = not scored by the predictor
    was_injected: np.ndarray = False  # bool
    fts_hit_count: np.ndarray = 0  # int
    has_entity_slot: np.ndarray = False  # bool: entity_slot IS NOT NULL (graph traversal)
    is_constraint: np.ndarray = False  # bool
    is_fts_only: np.ndarray = False  # bool
    project: str | None = None

    def __post_init__(self) -> None:
        ids = np.asarray(self.memory_ids, dtype=str)
        n = len(ids)
        if ids.shape != (n,) or len(set(ids.tolist())) != n:
            raise ValueError("memory_ids: expected unique ids in a flat sequence")
        set_ = object.__setattr__
        set_(self, "memory_ids", ids)
        for name, dtype in _COLUMN_DTYPES:
            set_(self, name, _arr(name, getattr(self, name), n, dtype))
        set_(self, "scorer_confidence", float(self.scorer_confidence))

    @classmethod
    def build(cls, session_key: str, memory_ids: ArrayLike, **columns: Any) -> ComparisonInput:
        """The constructor under its older name (same arguments)."""
        return cls(session_key, memory_ids, **columns)  # type: ignore[arg-type]

    @classmethod
    def from_candidates(
        cls,
        session_key: str,
        cand: pl.DataFrame,
        *,
        scorer_confidence: float,
        project: str | None,
    ) -> ComparisonInput:
        """One session's input from its `session_memories` rows as `store.read` returns them,
        judged by their `relevance_score` (what the daemon compares once the judge has run)."""

        def floats(name: str) -> np.ndarray:
            return cand[name].cast(pl.Float64).fill_null(np.nan).to_numpy()

        return cls(
            session_key,
            np.asarray(cand["memory_id"].to_list(), dtype=str),
            effective_score=floats("effective_score"),
            predictor_score=floats("predictor_score"),
            was_injected=cand["was_injected"].to_numpy(),
            fts_hit_count=cand["fts_hit_count"].to_numpy(),
            relevance=floats("relevance_score"),
            has_entity_slot=cand["entity_slot"].is_not_null().to_numpy(),
            is_constraint=cand["is_constraint"].to_numpy(),
            is_fts_only=(cand["source"] == "fts_only").to_numpy(),
            scorer_confidence=scorer_confidence,
            project=project,
        )


@dataclass(frozen=True, slots=True)
class Comparison:
    """One ``predictor_comparisons`` row (docs/specification.md §2.1) plus what was needed to
    compute it."""

    session_key: str
    predictor_ndcg: float
    baseline_ndcg: float
    predictor_won: bool
    margin: float
    alpha: float
    ema_updated: bool
    project: str | None
    candidate_count: int
    traversal_count: int
    constraint_count: int
    scorer_confidence: float
    success_rate: float
    predictor_top_ids: tuple[str, ...]
    baseline_top_ids: tuple[str, ...]
    relevance_scores: dict[str, float]
    fts_overlap_score: float | None
    has_predictor_scores: bool
    ndcg_variant: str
    evaluation_pool: tuple[str, ...] = field(default=())

    def to_row(self) -> dict[str, Any]:
        """Column -> value for ``predictor_comparisons`` (JSON text for the id lists and map)."""
        return {
            "session_key": self.session_key,
            "predictor_ndcg": self.predictor_ndcg,
            "baseline_ndcg": self.baseline_ndcg,
            "predictor_won": int(self.predictor_won),
            "margin": self.margin,
            "alpha": self.alpha,
            "ema_updated": int(self.ema_updated),
            "project": self.project,
            "candidate_count": self.candidate_count,
            "traversal_count": self.traversal_count,
            "constraint_count": self.constraint_count,
            "scorer_confidence": self.scorer_confidence,
            "success_rate": self.success_rate,
            "predictor_top_ids": json.dumps(list(self.predictor_top_ids)),
            "baseline_top_ids": json.dumps(list(self.baseline_top_ids)),
            "relevance_scores": json.dumps(self.relevance_scores, allow_nan=False),
            "fts_overlap_score": self.fts_overlap_score,
        }


_METRICS = {"signet": signet_ndcg_at_k, "bounded": ndcg_of_ranking}


def judged_ndcg(
    comparison: Comparison,
    scores: ArrayLike,
    memory_ids: ArrayLike,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    ratings: Mapping[str, float] | None = None,
) -> float:
    """NDCG@k of another ranking of the session's candidates (e.g. cosine(context, memory)),
    judged as the comparison judged its two (its NDCG variant, its relevance map), plus the
    judge's `ratings` of that ranking's own top k when the judge rated them (its evaluation
    pool covers only the baseline's and the predictor's top k). An unrated memory counts 0."""
    ids = np.asarray(memory_ids, dtype=str)
    ranked = ranked_ids(np.asarray(scores, dtype=np.float64), ids)
    rel = dict(comparison.relevance_scores)
    for m in ranked[: cfg.comparison_k]:
        if ratings and m in ratings and m not in rel:
            rel[m] = ratings[m]
    return _METRICS[comparison.ndcg_variant](ranked, rel, cfg.comparison_k)


def compare_session(
    inp: ComparisonInput,
    *,
    alpha: float,
    success_rate: float,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    ndcg: NdcgVariant = "signet",
    pool_only: bool = True,
) -> Comparison:
    """NDCG@k of the predictor's and the baseline's rankings of one session, as a comparison row.

    Baseline ranking: rows with an effective score, by effective score desc (id asc on ties).
    Predictor ranking: rows with a predictor score, by predictor score desc. The relevance map
    holds the judged rows (non-NaN ``relevance``); with ``pool_only`` (default) it is restricted
    to the evaluation pool (top-k of each ranking ∪ injected) — a no-op for Signet data,
    whose judge rates only injected memories. ``ndcg="signet"`` (default) uses
    `signet_ndcg_at_k` so the numbers match Signet's ``predictor_comparisons``;
    ``ndcg="bounded"`` uses `ndcg_of_ranking` (negatives clipped).

    predictor_won = has predictor scores and predictor NDCG > baseline NDCG; margin =
    predictor − baseline (0 without predictor scores); ema_updated = has predictor scores and
    confidence >= ``min_scorer_confidence`` (Signet writes the confidence test alone);
    fts_overlap_score = |injected with FTS hits| / |injected| (None with nothing injected);
    candidate_count = the session-start pool (rows not ``fts_only``: the n whose missing RRF
    rank is n + 1); traversal_count / constraint_count count the flags as given (see
    `ComparisonInput`);
    ``alpha`` and ``success_rate`` are the state's values before this session's update.
    """
    k = cfg.comparison_k
    metric = _METRICS.get(ndcg)
    if metric is None:
        raise ValueError(f"ndcg must be 'signet' or 'bounded', got {ndcg!r}")
    ids = inp.memory_ids
    baseline = ranked_ids(inp.effective_score, ids)
    predictor = ranked_ids(inp.predictor_score, ids)
    has_pred = len(predictor) > 0
    pool = evaluation_pool(baseline, predictor, ids[inp.was_injected].tolist(), k)
    judged = ~np.isnan(inp.relevance)
    rel_map = dict(zip(ids[judged].tolist(), inp.relevance[judged].tolist(), strict=True))
    if pool_only:
        in_pool = set(pool)
        rel_map = {m: r for m, r in rel_map.items() if m in in_pool}
    b_ndcg = metric(baseline, rel_map, k)
    p_ndcg = metric(predictor, rel_map, k) if has_pred else 0.0
    n_injected = int(np.count_nonzero(inp.was_injected))
    overlap = (
        int(np.count_nonzero(inp.was_injected & (inp.fts_hit_count > 0))) / n_injected
        if n_injected
        else None
    )
    conf = inp.scorer_confidence
    return Comparison(
        session_key=inp.session_key,
        predictor_ndcg=p_ndcg,
        baseline_ndcg=b_ndcg,
        predictor_won=has_pred and p_ndcg > b_ndcg,
        margin=p_ndcg - b_ndcg if has_pred else 0.0,
        alpha=float(alpha),
        ema_updated=has_pred and not math.isnan(conf) and conf >= cfg.min_scorer_confidence,
        project=inp.project,
        candidate_count=int(np.count_nonzero(~inp.is_fts_only)),
        traversal_count=int(np.count_nonzero(inp.has_entity_slot)),
        constraint_count=int(np.count_nonzero(inp.is_constraint)),
        scorer_confidence=conf,
        success_rate=float(success_rate),
        predictor_top_ids=predictor[:k],
        baseline_top_ids=baseline[:k],
        relevance_scores=rel_map,
        fts_overlap_score=overlap,
        has_predictor_scores=has_pred,
        ndcg_variant=ndcg,
        evaluation_pool=pool,
    )
