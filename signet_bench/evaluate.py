"""Ranking metrics, the per-session predictor-vs-baseline comparison, drift and calibration.

Conventions (all metrics):

- Higher is better. Gains are linear in the relevance (Järvelin & Kekäläinen), the discount of
  0-based position ``i`` is ``1 / log2(i + 2)``.
- Rankings from scores sort by **score descending, then memory id ascending**; a NaN score
  ranks after every real score. Signet sorts with JavaScript's stable sort (ties keep database
  row order), so on exact ties the two may differ.
- Relevance NaN means "not judged" and counts as 0.
- Two NDCG variants. `ndcg_at_k` / `ndcg_of_ranking` are *bounded*: negative relevances
  clipped to 0, result in [0, 1]. `signet_ndcg_at_k` reproduces Signet's ``computeNdcg``
  (reference §5): negatives kept, so it can exceed 1 (and an all-negative list gives 1.0), and
  it is what ``predictor_comparisons`` stores. Both return 0.0 when the ideal DCG is 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig

__all__ = [
    "RANKING_METRICS",
    "Comparison",
    "ComparisonInput",
    "NdcgVariant",
    "calibration_flagged",
    "calibration_mae",
    "compare_session",
    "drift_signal",
    "evaluation_pool",
    "mrr",
    "ndcg_at_k",
    "ndcg_of_ranking",
    "rank_order",
    "ranked_ids",
    "recall_at_k",
    "reciprocal_rank",
    "signet_ndcg_at_k",
]

NdcgVariant = Literal["signet", "bounded"]


def _discounts(n: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(n, dtype=np.float64) + 2.0)


def _check_k(k: int | None) -> None:
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1 (or None for the whole list), got {k}")


def _triple(
    relevance: ArrayLike, scores: ArrayLike, ids: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rel = np.asarray(relevance, dtype=np.float64)
    sc = np.asarray(scores, dtype=np.float64)
    id_ = np.asarray(ids, dtype=str)
    if not (rel.ndim == sc.ndim == id_.ndim == 1) or not (len(rel) == len(sc) == len(id_)):
        raise ValueError(
            f"relevance, scores and ids must be 1-D of one length, got "
            f"{rel.shape}, {sc.shape}, {id_.shape}"
        )
    return np.where(np.isnan(rel), 0.0, rel), sc, id_


def rank_order(scores: ArrayLike, ids: ArrayLike) -> np.ndarray:
    """Indices that rank items by score descending, then id ascending; NaN scores last."""
    s = np.asarray(scores, dtype=np.float64)
    key = np.where(np.isnan(s), np.inf, -s)
    return np.lexsort((np.asarray(ids, dtype=str), key))


def ranked_ids(scores: ArrayLike, ids: ArrayLike, *, drop_nan: bool = True) -> tuple[str, ...]:
    """Ids in ranking order (score desc, id asc); items with a NaN score dropped by default."""
    s = np.asarray(scores, dtype=np.float64)
    id_ = np.asarray(ids, dtype=str)
    order = rank_order(s, id_)
    if drop_nan:
        order = order[~np.isnan(s[order])]
    return tuple(id_[order].tolist())


def ndcg_at_k(relevance: ArrayLike, scores: ArrayLike, ids: ArrayLike, k: int | None = 10) -> float:
    """Bounded NDCG@k of the ranking that ``scores`` induce.

    .. math:: \\mathrm{NDCG@k} = \\frac{\\sum_{i<k} g_{\\pi(i)} / \\log_2(i+2)}
              {\\sum_{i<k} g^{*}_{i} / \\log_2(i+2)}, \\quad g = \\max(rel, 0)

    Parameters
    ----------
    relevance : array-like of shape (n,)
        Graded or continuous relevance; NaN = unjudged (0); negatives are clipped to 0.
    scores : array-like of shape (n,)
        Ranking scores, higher first; ties by ``ids`` ascending; NaN ranks last.
    ids : array-like of shape (n,)
        Item ids (the tie-break key).
    k : int or None
        Cut-off; None = the whole list.

    Returns
    -------
    float
        In [0, 1]; 0.0 when no item has positive relevance (ideal DCG 0).
    """
    _check_k(k)
    rel, sc, id_ = _triple(relevance, scores, ids)
    gain = np.clip(rel, 0.0, None)
    order = rank_order(sc, id_)[:k]
    ideal = np.sort(gain)[::-1][:k]
    disc = _discounts(len(ideal))
    idcg = float(ideal @ disc)
    return float(gain[order] @ disc[: len(order)]) / idcg if idcg > 0.0 else 0.0


def _ranking_dcg(
    ranking: Sequence[str], relevance_map: Mapping[str, float], k: int | None, clip: bool
) -> tuple[float, float]:
    _check_k(k)
    if len(set(ranking)) != len(ranking):
        raise ValueError("ranking lists an id twice")
    top = list(ranking)[:k]
    gains = np.array([float(relevance_map.get(m, 0.0)) for m in top], dtype=np.float64)
    values = np.array([float(v) for v in relevance_map.values()], dtype=np.float64)
    values = values[~np.isnan(values)]
    gains = np.where(np.isnan(gains), 0.0, gains)
    if clip:
        gains, values = np.clip(gains, 0.0, None), np.clip(values, 0.0, None)
    ideal = np.sort(values)[::-1][:k]
    dcg = float(gains @ _discounts(len(gains)))
    return dcg, float(ideal @ _discounts(len(ideal)))


def signet_ndcg_at_k(
    ranked_ids: Sequence[str], relevance_map: Mapping[str, float], k: int | None = 10
) -> float:
    """NDCG@k exactly as Signet's ``computeNdcg`` (reference §5); negatives kept, may exceed 1.

    .. math:: \\mathrm{DCG} = \\sum_{i<\\min(k, |\\pi|)} rel(\\pi_i)/\\log_2(i+2),\\quad
              \\mathrm{IDCG} = \\sum_{i<\\min(k, n)} r^{\\downarrow}_i/\\log_2(i+2)

    Parameters
    ----------
    ranked_ids : sequence of str
        The system's ranking, best first (no duplicates).
    relevance_map : mapping of id -> float
        Judged relevances; ids missing from it count 0 in the DCG. IDCG uses *all* its values
        sorted descending (negatives included), the first min(k, n).
    k : int or None
        Cut-off (Signet: 10); None = whole lists.

    Returns
    -------
    float
        DCG / IDCG, or 0.0 when IDCG == 0. With negative relevances the ratio is unbounded
        (labels [0, −0.3] ranked worst-first give 1.585; an all-negative map gives 1.0).
    """
    dcg, idcg = _ranking_dcg(ranked_ids, relevance_map, k, clip=False)
    return dcg / idcg if idcg != 0.0 else 0.0


def ndcg_of_ranking(
    ranked_ids: Sequence[str], relevance_map: Mapping[str, float], k: int | None = 10
) -> float:
    """Bounded NDCG@k of a given ranking: `signet_ndcg_at_k` with negatives clipped to 0."""
    dcg, idcg = _ranking_dcg(ranked_ids, relevance_map, k, clip=True)
    return dcg / idcg if idcg > 0.0 else 0.0


def recall_at_k(
    relevance: ArrayLike,
    scores: ArrayLike,
    ids: ArrayLike,
    k: int | None = 10,
    *,
    threshold: float = 1.0,
) -> float:
    """Recall@k = |relevant ∩ top-k| / |relevant|, relevant = ``rel >= threshold``.

    The default threshold 1 suits integer grades (trec_eval/ranx relevance level 1); pass a
    threshold for float labels. Returns 0.0 when nothing is relevant (trec_eval convention);
    count such queries separately instead of averaging them in.
    """
    _check_k(k)
    rel, sc, id_ = _triple(relevance, scores, ids)
    relevant = rel >= threshold
    n_rel = int(np.count_nonzero(relevant))
    if n_rel == 0:
        return 0.0
    top = rank_order(sc, id_)[:k]
    return int(np.count_nonzero(relevant[top])) / n_rel


def reciprocal_rank(
    relevance: ArrayLike,
    scores: ArrayLike,
    ids: ArrayLike,
    *,
    threshold: float = 1.0,
    k: int | None = None,
) -> float:
    """1 / (1-based rank of the first item with ``rel >= threshold``), 0.0 if none (in top-k).

    One query's term of MRR (trec_eval ``recip_rank``); MRR is the mean over queries.
    """
    _check_k(k)
    rel, sc, id_ = _triple(relevance, scores, ids)
    hits = np.flatnonzero(rel[rank_order(sc, id_)[:k]] >= threshold)
    return 1.0 / (int(hits[0]) + 1) if hits.size else 0.0


mrr = reciprocal_rank
"""Alias: MRR of a single ranking; average `reciprocal_rank` over queries for the mean."""

RANKING_METRICS = {
    "ndcg": ndcg_at_k,
    "recall": recall_at_k,
    "rr": reciprocal_rank,
}
"""Metrics with the shared call shape ``f(relevance, scores, ids, ...)`` (``@k`` as ``k=``)."""


def evaluation_pool(
    baseline_ranked: Sequence[str],
    predictor_ranked: Sequence[str],
    injected: Iterable[str],
    k: int = DEFAULT_CONFIG.comparison_k,
) -> tuple[str, ...]:
    """Seed 000's evaluation pool: union(top-k baseline, top-k predictor, injected), in that order."""
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


@dataclass(frozen=True, slots=True)
class ComparisonInput:
    """One session's ``session_memories`` rows (parallel arrays) and its judge confidence.

    ``relevance`` is what the session is judged by: Signet uses the judge's per-memory
    ``relevance_score`` (NaN where unjudged); the label function's output may be passed instead.
    Build with `ComparisonInput.build`.
    """

    session_key: str
    memory_ids: np.ndarray  # str
    effective_score: np.ndarray  # float, NaN = not in the baseline ranking
    predictor_score: np.ndarray  # float, NaN = not scored by the predictor
    was_injected: np.ndarray  # bool
    fts_hit_count: np.ndarray  # int
    relevance: np.ndarray  # float, NaN = not judged
    has_entity_slot: np.ndarray  # bool: entity_slot IS NOT NULL (graph traversal)
    is_constraint: np.ndarray  # bool
    scorer_confidence: float
    project: str | None = None

    def __post_init__(self) -> None:
        ids = np.asarray(self.memory_ids, dtype=str)
        n = len(ids)
        if ids.shape != (n,) or len(set(ids.tolist())) != n:
            raise ValueError("memory_ids: expected unique ids in a flat sequence")
        set_ = object.__setattr__
        set_(self, "memory_ids", ids)
        for name, dtype in (
            ("effective_score", np.float64),
            ("predictor_score", np.float64),
            ("was_injected", bool),
            ("fts_hit_count", np.int64),
            ("relevance", np.float64),
            ("has_entity_slot", bool),
            ("is_constraint", bool),
        ):
            set_(self, name, _arr(name, getattr(self, name), n, dtype))
        set_(self, "scorer_confidence", float(self.scorer_confidence))

    @classmethod
    def build(
        cls,
        session_key: str,
        memory_ids: ArrayLike,
        *,
        effective_score: ArrayLike,
        relevance: ArrayLike,
        scorer_confidence: float,
        predictor_score: ArrayLike = math.nan,
        was_injected: ArrayLike = False,
        fts_hit_count: ArrayLike = 0,
        has_entity_slot: ArrayLike = False,
        is_constraint: ArrayLike = False,
        project: str | None = None,
    ) -> ComparisonInput:
        """Build with defaults for the optional arrays (scalars broadcast)."""
        return cls(
            session_key=session_key,
            memory_ids=np.asarray(memory_ids, dtype=str),
            effective_score=effective_score,  # type: ignore[arg-type]
            predictor_score=predictor_score,  # type: ignore[arg-type]
            was_injected=was_injected,  # type: ignore[arg-type]
            fts_hit_count=fts_hit_count,  # type: ignore[arg-type]
            relevance=relevance,  # type: ignore[arg-type]
            has_entity_slot=has_entity_slot,  # type: ignore[arg-type]
            is_constraint=is_constraint,  # type: ignore[arg-type]
            scorer_confidence=scorer_confidence,
            project=project,
        )


@dataclass(frozen=True, slots=True)
class Comparison:
    """One ``predictor_comparisons`` row (reference §1) plus what was needed to compute it."""

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
    to seed 000's evaluation pool (top-k of each ranking ∪ injected) — a no-op for Signet data,
    whose judge rates only injected memories. ``ndcg="signet"`` (default) uses
    `signet_ndcg_at_k` so the numbers match Signet's ``predictor_comparisons``;
    ``ndcg="bounded"`` uses `ndcg_of_ranking` (negatives clipped).

    predictor_won = has predictor scores and predictor NDCG > baseline NDCG; margin =
    predictor − baseline (0 without predictor scores); ema_updated = has predictor scores and
    confidence >= ``min_scorer_confidence`` (Signet writes the confidence test alone);
    fts_overlap_score = |injected with FTS hits| / |injected| (None with nothing injected);
    ``alpha`` and ``success_rate`` are the state's values before this session's update.
    """
    k = cfg.comparison_k
    metric = {"signet": signet_ndcg_at_k, "bounded": ndcg_of_ranking}.get(ndcg)
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
        candidate_count=len(ids),
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


def drift_signal(
    relevance: ArrayLike, memory_age_days: ArrayLike, cfg: PredictorConfig = DEFAULT_CONFIG
) -> float:
    """Seed 000 §4.10 judge drift: mean relevance of memories < 7 d old − of memories > 30 d old.

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
    """Seed 000 judge calibration: flag when MAE exceeds ``calibration_mae_threshold`` (0.2)."""
    return not math.isnan(mae) and mae > cfg.calibration_mae_threshold
