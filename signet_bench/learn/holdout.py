"""Judging a trained model on sessions it never trained on, against the strongest free ranker.

A model earns its place only out of sample: the sessions that judge it are never in its
training set (a canary drawn from the training data judges what the model memorised).

- **Time hold-out** once there are `2 * canary_size` sessions: the newest
  `max(canary_size, holdout_share * n)` sessions are held out, the model trains on the older
  ones, and the model trained that way is the one served (so it is judged on sessions it
  never saw). The newest sessions are the ones the next sessions resemble most.
- **k-fold** below that: `holdout_folds` contiguous blocks in time; each block is judged by a
  model trained on the others, the procedure is judged on every block, and the model served
  is then trained on every session.

The comparators are the model served now and the free rankers a fresh model can start at
(`heuristic_scores`: cosine(context, memory), BM25 of the session's query terms and their
hybrid); the strongest of them on the held-out sessions is the bar. Scores are NDCG@10
against the sessions' labels. With k-fold the served model learned from most of the judged sessions and
would win in-sample, so there only the free rankers are the bar (`learn.train`).

The baseline order is not a comparator: a store's labels exist mostly for what session start
injected, and in cold start that is the baseline's own top, so on the store's labels the
baseline looks best by construction (measured on a light synthetic store: baseline 0.80,
cosine 0.65 held-out NDCG@10, against the planted truth the order is reversed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from serving.signals import hybrid_scores, signal_column
from signet_bench.analysis.metrics import ndcg_at_k
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.ranking.ranker import embedded_cosine
from signet_bench.learn.samples import SessionSample

__all__ = [
    "BM25_TIE_BREAK",
    "FREE_RANKERS",
    "Fold",
    "HoldoutDecision",
    "HoldoutPlan",
    "decide",
    "heuristic_scores",
    "holdout_plan",
    "session_ndcgs",
    "start_at_best_free_ranker",
]


@dataclass(frozen=True, slots=True)
class Fold:
    """Positions (into the samples) to train on and to judge on."""

    train: np.ndarray
    held: np.ndarray


@dataclass(frozen=True, slots=True)
class HoldoutPlan:
    """How a training run is judged: "time" (one fold, the newest sessions held out; the
    served model is the one trained on `folds[0].train`) or "kfold" (every fold judged, the
    served model trained on every session)."""

    method: str
    folds: tuple[Fold, ...]

    @property
    def held(self) -> np.ndarray:
        """Every judged position, in fold order."""
        return np.concatenate([f.held for f in self.folds])


def _time_order(samples: Sequence[SessionSample]) -> np.ndarray:
    keys = [(s.start.timestamp(), s.session_key) for s in samples]
    return np.asarray(sorted(range(len(samples)), key=keys.__getitem__), dtype=np.int64)


def holdout_plan(
    samples: Sequence[SessionSample], cfg: PredictorConfig = DEFAULT_CONFIG
) -> HoldoutPlan:
    """The time hold-out when there are enough sessions, else contiguous k-fold (module doc).
    Needs at least two sessions."""
    n = len(samples)
    if n < 2:
        raise ValueError(f"{n} session(s): judging out of sample needs at least 2")
    order = _time_order(samples)
    if n >= 2 * cfg.canary_size:
        k = max(cfg.canary_size, round(cfg.holdout_share * n))
        return HoldoutPlan("time", (Fold(np.sort(order[: n - k]), np.sort(order[n - k :])),))
    blocks = np.array_split(order, min(cfg.holdout_folds, n))
    folds = tuple(
        Fold(np.sort(np.concatenate([b for j, b in enumerate(blocks) if j != i])), np.sort(block))
        for i, block in enumerate(blocks)
    )
    return HoldoutPlan("kfold", folds)


# The free rankers a model is judged against and can start at, in the order that wins a tie
# (the hybrid is cosine where there are no query terms, so it goes first).
FREE_RANKERS = ("hybrid", "cosine", "bm25")
# BM25 leaves every candidate without a query term at 0; cosine orders those (and breaks exact
# ties) at this weight, below any lexical difference that matters. Without it the memory ids
# would: on labels that cosine cannot explain, an all-zero "BM25" beat it by the id order.
BM25_TIE_BREAK = 1e-3


def heuristic_scores(sample: SessionSample) -> dict[str, np.ndarray]:
    """Every free ranker a model is judged against, by name (`FREE_RANKERS`): cosine(context,
    memory) (0 for a candidate without an embedding), BM25 of the session's query terms (the
    lexical signal) and their hybrid (`HybridRanker`'s formula); each is also an order a fresh
    scorer can start at (`start_at_best_free_ranker`). Not the baseline order (module doc)."""
    n = len(sample)
    cosine = embedded_cosine(sample.context, sample.cand_emb, sample.has_emb)
    lexical = np.zeros(n, dtype=np.float64)
    if sample.signals is not None:
        lexical = np.asarray(sample.signals)[:, signal_column("lexical")].astype(np.float64)
    bm25 = lexical + BM25_TIE_BREAK * cosine
    return {"hybrid": hybrid_scores(cosine, lexical), "cosine": cosine, "bm25": bm25}


def session_ndcgs(
    samples: Sequence[SessionSample],
    scores: Sequence[np.ndarray],
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> np.ndarray:
    """NDCG@k of each session's `scores` against its labels (ties: memory id ascending)."""
    return np.asarray(
        [
            ndcg_at_k(s.labels, np.asarray(p, dtype=np.float64), s.memory_ids.astype(str),
                      k=cfg.comparison_k)
            for s, p in zip(samples, scores, strict=True)
        ],
        dtype=np.float64,
    )  # fmt: skip


def start_at_best_free_ranker(
    start: dict[str, np.ndarray], samples: Sequence[SessionSample], cfg: PredictorConfig
) -> dict[str, np.ndarray]:
    """Fresh weights ranking as the best free ranker on `samples` (every session of the run,
    the held-out ones included: a choice between fixed rankers that are all comparators
    anyway, not a fit; ties in `FREE_RANKERS` order). The hybrid is `start` itself; cosine
    zeroes the lexical weight; BM25 moves the cosine weight onto the lexical signal, keeping
    `BM25_TIE_BREAK` of it."""
    if "signal_weights" not in start or "cosine_weight" not in start or not samples:
        return start
    per_session = [heuristic_scores(s) for s in samples]
    means = {name: session_ndcgs(samples, [h[name] for h in per_session], cfg).mean()
             for name in FREE_RANKERS}  # fmt: skip
    best = max(FREE_RANKERS, key=lambda name: means[name])  # the first of equals
    if best == "hybrid":
        return start
    lex = signal_column("lexical")
    weights = np.array(start["signal_weights"], copy=True)
    if best == "cosine":
        weights[lex] = 0.0
        return {**start, "signal_weights": weights}
    cosine_weight = np.asarray(start["cosine_weight"])
    weights[lex] = float(cosine_weight.reshape(-1)[0])
    return {**start, "signal_weights": weights, "cosine_weight": cosine_weight * BM25_TIE_BREAK}


@dataclass(frozen=True, slots=True)
class HoldoutDecision:
    """The held-out verdict of one training run, as recorded in the workbench."""

    method: str  # "time" | "kfold"
    sessions: int  # held-out sessions judged
    candidate: float  # the trained model's mean NDCG@10 on them
    served: float | None  # the model served now (None: none is served)
    heuristics: dict[str, float]  # each free ranker's mean NDCG@10 on them
    comparator: str  # the strongest of `served` and the heuristics
    bar: float  # its NDCG@10: what the candidate must reach
    accepted: bool

    @property
    def margin(self) -> float:
        """The candidate's held-out NDCG@10 minus the bar."""
        return self.candidate - self.bar


def decide(
    method: str,
    candidate: np.ndarray,
    served: np.ndarray | None,
    heuristics: dict[str, np.ndarray],
    tolerance: float = 0.0,
) -> HoldoutDecision:
    """Accept the candidate only if its mean held-out NDCG@10 is at least that of the served
    model and of every heuristic (minus `tolerance`); all arrays are per held-out session."""
    means = {name: float(np.mean(v)) for name, v in heuristics.items()}
    rivals = dict(means)
    if served is not None:
        rivals["served"] = float(np.mean(served))
    comparator = max(rivals, key=lambda k: (rivals[k], k == "served"))
    bar = rivals[comparator]
    value = float(np.mean(candidate))
    return HoldoutDecision(
        method=method,
        sessions=len(candidate),
        candidate=value,
        served=rivals.get("served"),
        heuristics=means,
        comparator=comparator,
        bar=bar,
        accepted=bool(np.isfinite(value) and value >= bar - tolerance),
    )
