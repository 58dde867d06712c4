"""Ranking metrics: NDCG (bounded and Signet's), recall@k, reciprocal rank; and the confidence
intervals the benches and the dashboard put around them (bootstrap, Wilson).

Conventions (all metrics):

- Higher is better. Gains are linear in the relevance (Järvelin & Kekäläinen), the discount of
  0-based position ``i`` is ``1 / log2(i + 2)``.
- Rankings from scores sort by **score descending, then memory id ascending**; a NaN score
  ranks after every real score (`signet_bench.daemon.ranking.baseline.rank_order`, the one ordering
  rule of the project). Signet sorts with JavaScript's stable sort (ties keep database row
  order), so on exact ties the two may differ.
- Relevance NaN means "not judged" and counts as 0.
- Two NDCG variants. `ndcg_at_k` / `ndcg_of_ranking` are *bounded*: negative relevances
  clipped to 0, result in [0, 1]. `signet_ndcg_at_k` reproduces Signet's ``computeNdcg``
  (docs/specification.md §10.1): negatives kept, so it can exceed 1 (and an all-negative list gives
  1.0), and it is what ``predictor_comparisons`` stores. Both return 0.0 when the ideal DCG is 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from signet_bench.daemon.ranking.baseline import rank_order

__all__ = [
    "RANKING_METRICS",
    "Interval",
    "NdcgVariant",
    "bootstrap_interval",
    "coverage_recall_at_k",
    "ndcg_at_k",
    "ndcg_of_ranking",
    "ranked_ids",
    "recall_at_k",
    "reciprocal_rank",
    "signet_ndcg_at_k",
    "wilson_interval",
]

NdcgVariant = Literal["signet", "bounded"]


class Interval(NamedTuple):
    """A confidence interval's bounds, NaN where too little data gives none (a tuple, so
    `low, high = interval` reads it too)."""

    low: float
    high: float


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
    """NDCG@k exactly as Signet's ``computeNdcg`` (docs/specification.md §10.1); negatives kept, may
    exceed 1.

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


def coverage_recall_at_k(
    covers: Sequence[frozenset[str] | set[str]],
    scores: ArrayLike,
    ids: ArrayLike,
    targets: set[str] | frozenset[str],
    k: int | None = 10,
) -> float:
    """Share of `targets` covered by the top-k items, item i covering the set `covers[i]`.

    LoCoMo's retrieval recall: the targets are a question's evidence turns, each retrieved
    memory covers its source turns; targets no item covers still count in the denominator.
    0.0 when there are no targets."""
    _check_k(k)
    if not targets:
        return 0.0
    s = np.asarray(scores, dtype=np.float64)
    if len(covers) != len(s):
        raise ValueError(f"{len(covers)} cover sets for {len(s)} scores")
    top = rank_order(s, np.asarray(ids, dtype=str))[:k]
    covered = set().union(*(covers[i] for i in top.tolist())) if len(top) else set()
    return len(covered & set(targets)) / len(targets)


def bootstrap_interval(
    values: ArrayLike, seed: int, *, draws: int = 2000, level: float = 0.95
) -> Interval:
    """Percentile bootstrap interval of the mean of per-query `values` (per-query differences
    of two rankers make it the paired interval); NaN with fewer than two values. The draws come
    from `default_rng([seed, 0xB007])`, so a seed reproduces the interval exactly."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) < 2:
        return Interval(float("nan"), float("nan"))
    rng = np.random.default_rng([seed, 0xB007])
    means = v[rng.integers(0, len(v), size=(draws, len(v)))].mean(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return Interval(float(lo), float(hi))


def wilson_interval(successes: int, n: int, *, level: float = 0.95) -> Interval:
    """Wilson score interval of a success share (`successes` of `n` trials): unlike the normal
    approximation it stays inside [0, 1] and is honest at 0 or n successes and small `n`.
    NaN with no trials."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if n == 0:
        return Interval(float("nan"), float("nan"))
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    p, z2 = successes / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, float(centre - half))  # exact at the edges
    return Interval(low, 1.0 if successes == n else min(1.0, float(centre + half)))


RANKING_METRICS = {
    "ndcg": ndcg_at_k,
    "recall": recall_at_k,
    "rr": reciprocal_rank,
}
"""Metrics with the shared call shape ``f(relevance, scores, ids, ...)`` (``@k`` as ``k=``)."""
