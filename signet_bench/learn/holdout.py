"""Judging a trained model on sessions it never trained on, against the strongest free ranker.

A model earns its place only out of sample: the sessions that judge it are never in its
training set (a canary drawn from the training data judges what the model memorised).

- **Time hold-out** once there are `2 * canary_size` sessions: the newest
  `max(canary_size, holdout_share * n)` sessions (at most `holdout_max_sessions`: judging a
  long history's 20% would cost more than training on it) are held out, the model trains on
  the older ones, and the model trained that way is the one served (so it is judged on
  sessions it never saw). The newest sessions are the ones the next sessions resemble most.
- **Forward folds** below that: `holdout_folds` contiguous blocks in time; every block but
  the oldest is judged by a model trained on the blocks before it (never on a later one), the
  procedure is judged on those blocks, and the model served is then trained on every session.
  As the served model will be used: on sessions after the ones it learned from. A model
  trained on the blocks on both sides of the judged one interpolates between them.

The comparators are the model served now and the free rankers a fresh model can start at
(`heuristic_scores`: cosine(context, memory) and its hybrid with the lexical signal); the
strongest of them on the held-out sessions is the bar. Scores are NDCG@10 against the
sessions' ratings (`judged_relevance`): the agent's or the continuity judge's rating of each
rated candidate, over those candidates only, and the labels where a session has fewer than
two (or a source has none, as LoCoMo's questions). The labels' FTS rules reward what the
agent's keyword searches matched, which the lexical signal predicts by construction, so on
the labels the lexical hybrid looked best where it was worst (a synthetic drifting user,
seed 151, after 50 / 100 sessions: hybrid - cosine NDCG@10 on the labels +0.063 / +0.073, on
the ratings -0.037 / -0.033, on the planted truth -0.045 / -0.039); training still learns
from every label. With forward folds the served model learned from most of the judged
sessions and would win in-sample, so there only the free rankers are the bar (`learn.train`).

Reaching the bar is not enough: the candidate must lead the strongest free ranker by
`holdout_gain_evidence` standard errors of its paired per-session lead (`lead_evidence`), since
a lead within the noise of a few dozen sessions' ratings was as often a loss on the sessions
that followed. And a learned model keeps its place only while it is not below the free rankers:
a rejected run whose served model trails one of them on the time hold-out serves its start
(`HoldoutDecision.start_instead`).

A session start is judged on the pool it ranked: the rows the prompts recalled after the
start (`samples.AFTER_START`) are labelled and trained on, but no session start ranks them.
Judged with them, a per-user model that had learned to put them first led cosine by +0.22
NDCG@10 on the held-out sessions' ratings where, on the start pool, it trailed it by 0.02, and
on the planted truth of the sessions that followed by 0.22 (synthetic heavy user, seed 1002,
after 50 sessions; docs/concepts.md §4.3).

The baseline order is not a comparator: a store's labels exist mostly for what session start
injected, and in cold start that is the baseline's own top, so on the store's labels the
baseline looks best by construction (measured on a light synthetic store: baseline 0.80,
cosine 0.65 held-out NDCG@10, against the planted truth the order is reversed).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.metrics import ndcg_at_k
from signet_bench.daemon.ranking.ranker import embedded_cosine
from signet_bench.learn.model.params import init_params
from signet_bench.learn.samples import SessionSample, session_of
from signet_scorer.signals import hybrid_scores, signal_column

__all__ = [
    "Fold",
    "HoldoutDecision",
    "HoldoutPlan",
    "decide",
    "enough_to_learn",
    "free_ranker_name",
    "free_ranker_params",
    "fresh_start",
    "heuristic_ndcgs",
    "heuristic_scores",
    "holdout_plan",
    "hybrid_leads",
    "judged_relevance",
    "lead_evidence",
    "query_learnable",
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
    served model is the one trained on `folds[0].train`) or "forward" (every block after the
    first judged by a model trained on the blocks before it, the served model trained on every
    session)."""

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
    """The time hold-out when there are enough sessions, else forward folds (module doc).
    Counted and split by session: a session's prompt samples (`samples.prompt_samples`) go
    where its start goes, so each hook is judged on as many held-out sessions as without them
    (`learn.serving`) and no session is half trained on. Needs at least two samples; a single
    session's samples are split among themselves."""
    n = len(samples)
    if n < 2:
        raise ValueError(f"{n} session(s): judging out of sample needs at least 2")
    groups = _sessions_in_time_order(samples)
    if len(groups) < 2:
        groups = [np.asarray([i], dtype=np.int64) for i in _time_order(samples)]
    m = len(groups)
    if m >= 2 * cfg.canary_size:
        k = max(cfg.canary_size, round(cfg.holdout_share * m))
        if cfg.holdout_max_sessions:
            k = min(k, cfg.holdout_max_sessions)
        train, held = np.concatenate(groups[: m - k]), np.concatenate(groups[m - k :])
        return HoldoutPlan("time", (Fold(np.sort(train), np.sort(held)),))
    blocks = [np.concatenate(b) for b in _split(groups, min(cfg.holdout_folds, m))]
    folds = tuple(
        Fold(np.sort(np.concatenate(blocks[:i])), np.sort(blocks[i])) for i in range(1, len(blocks))
    )
    return HoldoutPlan("forward", folds)


def _split(groups: list[np.ndarray], parts: int) -> list[list[np.ndarray]]:
    """`groups` in `parts` contiguous runs, as `np.array_split` splits a sequence."""
    return [[groups[i] for i in run] for run in np.array_split(np.arange(len(groups)), parts)]


def _sessions_in_time_order(samples: Sequence[SessionSample]) -> list[np.ndarray]:
    """Positions of each session's samples (its start's and its prompts'), sessions in time
    order of their first sample."""
    by_session: dict[str, list[int]] = {}
    for i in _time_order(samples):
        by_session.setdefault(session_of(samples[int(i)]), []).append(int(i))
    return [np.asarray(v, dtype=np.int64) for v in by_session.values()]


def heuristic_scores(sample: SessionSample) -> dict[str, np.ndarray]:
    """Every free ranker a model is judged against, by name: cosine(context, memory) (0 for
    a candidate without an embedding) and its hybrid with the lexical signal (BM25 of the
    session's query terms; `HybridRanker`'s formula), the two orders a fresh scorer can start
    at (`start_at_best_free_ranker`). Not the baseline order (module doc), nor BM25 alone: on
    real text it trails both (LoCoMo recall@10: BM25 52.2, cosine 54.9, hybrid 56.5), and as a
    start the store's labels chose it where it was worst (a synthetic heavy user: chosen at 10
    sessions, 0.36 NDCG@10 on the planted truth against cosine's 0.72)."""
    n = len(sample)
    cosine = embedded_cosine(sample.context, sample.cand_emb, sample.has_emb)
    lexical = np.zeros(n, dtype=np.float64)
    if sample.signals is not None:
        lexical = np.asarray(sample.signals)[:, signal_column("lexical")].astype(np.float64)
    return {"cosine": cosine, "hybrid": hybrid_scores(cosine, lexical)}


def judged_relevance(
    sample: SessionSample, cfg: PredictorConfig = DEFAULT_CONFIG
) -> tuple[np.ndarray, np.ndarray | None]:
    """What a held-out judgement scores `sample` against (module doc), within the pool its
    ranking ranked (`SessionSample.start_pool`): its ratings and the rated candidates
    (`holdout_on_ratings`, at least two rated), else its labels (None: every candidate)."""
    pool = sample.start_pool
    if cfg.holdout_on_ratings and sample.rated is not None:
        rated = np.isfinite(sample.rated) if pool is None else np.isfinite(sample.rated) & pool
        if np.count_nonzero(rated) >= 2:
            return sample.rated[rated], rated
    if pool is None:
        return sample.labels, None
    return sample.labels[pool], pool


def session_ndcgs(
    samples: Sequence[SessionSample],
    scores: Sequence[np.ndarray],
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> np.ndarray:
    """NDCG@k of each session's `scores` against its judged relevance (`judged_relevance`;
    ties: memory id ascending)."""
    out = []
    for s, p in zip(samples, scores, strict=True):
        relevance, rated = judged_relevance(s, cfg)
        p, ids = np.asarray(p, dtype=np.float64), s.memory_ids.astype(str)
        if rated is not None:
            p, ids = p[rated], ids[rated]
        out.append(ndcg_at_k(relevance, p, ids, k=cfg.comparison_k))
    return np.asarray(out, dtype=np.float64)


def heuristic_ndcgs(
    samples: Sequence[SessionSample], cfg: PredictorConfig = DEFAULT_CONFIG
) -> dict[str, np.ndarray]:
    """Each free ranker's (`heuristic_scores`) per-session NDCG@10 on `samples`
    (`session_ndcgs`)."""
    per_session = [heuristic_scores(s) for s in samples]
    return {
        name: session_ndcgs(samples, [h[name] for h in per_session], cfg) for name in per_session[0]
    }


def enough_to_learn(n_sessions: int, cfg: PredictorConfig) -> bool:
    """Whether a training on `n_sessions` sessions may move the model (`holdout_min_sessions`):
    below it the model stays at its start, cosine, served without a bar."""
    return n_sessions >= cfg.holdout_min_sessions


def query_learnable(n_sessions: int, cfg: PredictorConfig) -> bool:
    """Whether a training on `n_sessions` sessions may move the learned query
    (`query_min_sessions`): below it only cosine matches the context."""
    return n_sessions >= cfg.query_min_sessions


def start_at_best_free_ranker(
    start: dict[str, np.ndarray], samples: Sequence[SessionSample], cfg: PredictorConfig
) -> dict[str, np.ndarray]:
    """Fresh weights ranking as the better of cosine and the hybrid on `samples` (every
    session of the run, the held-out ones included: a choice between two fixed rankers that
    are both comparators anyway, not a fit): the lexical weight is kept at the hybrid ratio
    when the hybrid leads cosine by `hybrid_start_evidence` standard errors
    (`hybrid_leads`), and zeroed otherwise. Below `holdout_min_sessions` there is no choice:
    cosine. A handful of sessions' labels chose the hybrid where it was worse (a synthetic
    heavy user at 10 sessions: 0.59 NDCG@10 on the planted truth against cosine's 0.69)."""
    if "signal_weights" not in start or not samples:
        return start
    if enough_to_learn(len(samples), cfg) and hybrid_leads(samples, cfg):
        return start
    return _cosine_only(start)


def hybrid_leads(samples: Sequence[SessionSample], cfg: PredictorConfig = DEFAULT_CONFIG) -> bool:
    """Whether the hybrid's per-session NDCG@10 lead over cosine on `samples` (their ratings,
    `session_ndcgs`) is at least `hybrid_start_evidence` standard errors of its mean. A lead of
    exactly 0 on every session (no query terms: the hybrid is cosine) counts as one."""
    ndcgs = heuristic_ndcgs(samples, cfg)
    lead = ndcgs["hybrid"] - ndcgs["cosine"]
    tie = not np.any(lead)
    shown = lead_evidence(ndcgs["hybrid"], ndcgs["cosine"])
    return bool(lead.size and (tie or shown >= cfg.hybrid_start_evidence))


def free_ranker_name(
    params: dict[str, np.ndarray], cfg: PredictorConfig = DEFAULT_CONFIG
) -> str | None:
    """Which free ranker `params` ranks exactly as: "hybrid" (fresh weights, `init_params`),
    "cosine" (the same with the lexical weight zeroed), or None for a model that learned."""
    if "signal_weights" not in params or "down_proj" not in params:
        return None
    fresh = init_params(cfg, int(np.asarray(params["down_proj"]).shape[1]))
    if set(fresh) != set(params):
        return None
    for name, free in (("hybrid", fresh), ("cosine", _cosine_only(fresh))):
        if all(np.array_equal(np.asarray(params[k]), free[k]) for k in free):
            return name
    return None


def _cosine_only(start: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Fresh weights `start` with the lexical weight zeroed: they rank as cosine."""
    weights = np.array(start["signal_weights"], copy=True)
    weights[signal_column("lexical")] = 0.0
    return {**start, "signal_weights": weights}


def free_ranker_params(
    name: str, native_dim: int, cfg: PredictorConfig = DEFAULT_CONFIG
) -> dict[str, np.ndarray]:
    """Fresh weights that rank as the free ranker `name`: "hybrid" (the fresh scorer) or
    "cosine" (its lexical weight zeroed)."""
    start = init_params(cfg, native_dim)
    return start if name == "hybrid" else _cosine_only(start)


def fresh_start(
    samples: Sequence[SessionSample], cfg: PredictorConfig = DEFAULT_CONFIG
) -> dict[str, np.ndarray]:
    """The weights a training on `samples` with no model to start from begins at, and what the
    loop keeps serving when its gate rejects the result: fresh weights at the better free
    ranker (`start_at_best_free_ranker`)."""
    start = init_params(cfg, int(samples[0].context.shape[0]))
    return start_at_best_free_ranker(start, samples, cfg)


@dataclass(frozen=True, slots=True)
class HoldoutDecision:
    """The held-out verdict of one training run, as recorded in the workbench."""

    method: str  # "time" | "forward"
    sessions: int  # held-out sessions judged
    candidate: float  # the trained model's mean NDCG@10 on them
    served: float | None  # the model served now (None: none is served)
    heuristics: dict[str, float]  # each free ranker's mean NDCG@10 on them
    comparator: str  # the strongest of `served` and the heuristics
    bar: float  # its NDCG@10: what the candidate must reach
    accepted: bool
    # the candidate's paired per-session lead over the strongest free ranker, in standard
    # errors of its mean (inf: a lead on every session alike, nan: none judged), and how many
    # it needed (`holdout_gain_evidence`)
    lead_evidence: float = math.nan
    evidence_needed: float = 0.0
    # the candidate rejected and the learned served model below the strongest free ranker on
    # the held-out sessions: the run's start, this free ranker, is served instead
    # (`start_instead`)
    demoted_to: str | None = None

    @property
    def margin(self) -> float:
        """The candidate's held-out NDCG@10 minus the bar."""
        return self.candidate - self.bar

    def unjudged_start(self) -> HoldoutDecision:
        """The verdict when too few sessions were trained on to move the model: it is its
        start, a free ranker, served as it is (comparator "start", its own bar). The store's
        labels of a few sessions would otherwise reject it for another free ranker they favour
        and leave the user the baseline order (measured on a synthetic heavy user at 10
        sessions: the hybrid won on the labels, the baseline served 0.28 NDCG@10 below cosine
        on the planted truth)."""
        return dataclasses.replace(
            self, comparator="start", bar=self.candidate, accepted=True, evidence_needed=0.0
        )

    def start_instead(self, start: str) -> HoldoutDecision | None:
        """The verdict that serves the run's start (`start`: the free ranker it ranks as) in
        place of a learned served model, when the candidate is rejected and the served model,
        judged on these sessions (time hold-out), trails the strongest free ranker; None
        otherwise. A learned model keeps its place only while it beats the free rankers on
        sessions it never trained on: on a synthetic multi-project user (seed 171) the model
        served after 50 sessions trailed cosine on the held-out ratings at the next four
        trainings (by 0.003-0.070) while every candidate was rejected, and it stayed 0.08-0.09
        below cosine on the planted truth of the sessions that followed (docs/concepts.md
        §4.3)."""
        if self.accepted or self.served is None or self.method != "time":
            return None
        if self.served >= max(self.heuristics.values()):
            return None
        return dataclasses.replace(self, demoted_to=start)


def lead_evidence(candidate: np.ndarray, rival: np.ndarray) -> float:
    """The mean of the paired per-session lead `candidate - rival` in standard errors of that
    mean: +inf (or -inf) when every session leads (or trails) by the same amount, 0.0 when
    they tie on every session, nan with fewer than one finite session."""
    lead = np.asarray(candidate, dtype=np.float64) - np.asarray(rival, dtype=np.float64)
    lead = lead[np.isfinite(lead)]
    if lead.size == 0:
        return math.nan
    mean = float(lead.mean())
    error = float(np.std(lead, ddof=1) / np.sqrt(lead.size)) if lead.size > 1 else 0.0
    if error <= 1e-12:
        return 0.0 if abs(mean) <= 1e-12 else math.copysign(math.inf, mean)
    return mean / error


def decide(
    method: str,
    candidate: np.ndarray,
    served: np.ndarray | None,
    heuristics: dict[str, np.ndarray],
    tolerance: float = 0.0,
    evidence: float = 0.0,
) -> HoldoutDecision:
    """Accept the candidate only if its mean held-out NDCG@10 is at least that of the served
    model and of every heuristic (minus `tolerance`), and (`evidence` > 0) it leads the
    strongest heuristic by at least `evidence` standard errors of that paired lead: a tie is
    no evidence, so a candidate level with that ranker leaves the served model (or the start)
    in place; all arrays are per held-out session."""
    means = {name: float(np.mean(v)) for name, v in heuristics.items()}
    rivals = dict(means)
    if served is not None:
        rivals["served"] = float(np.mean(served))
    comparator = max(rivals, key=lambda k: (rivals[k], k == "served"))
    bar = rivals[comparator]
    value = float(np.mean(candidate))
    strongest = max(means, key=lambda k: (means[k], k))
    shown = lead_evidence(candidate, heuristics[strongest])
    convincing = evidence <= 0.0 or shown >= evidence
    return HoldoutDecision(
        method=method,
        sessions=len(candidate),
        candidate=value,
        served=rivals.get("served"),
        heuristics=means,
        comparator=comparator,
        bar=bar,
        accepted=bool(np.isfinite(value) and value >= bar - tolerance and convincing),
        lead_evidence=shown,
        evidence_needed=evidence,
    )
