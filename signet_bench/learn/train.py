"""Batched listwise training with the specification's safety net: a held-out canary set, a replay
buffer, training on a copy of the weights, and gates that must all pass before the copy is swapped
in.

Gates (docs/specification.md §6.2): every loss finite; canary score variance > 0;
canary top-5 overlap with the previous model >= 0.6; canary NDCG@10 drop <= 0.15. The first
training has no previous model to forget, so the overlap and drop gates compare against nothing
and pass; the finite and variance gates always apply.

This module is the maths of a run (batches, steps, epochs, gates, the held-out judgement);
`learn.publish` turns a store and a request into a run and saves and records what it made.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.metrics import ndcg_at_k
from signet_bench.learn.base import shipped_base_params
from signet_bench.learn.holdout import (
    HoldoutDecision,
    HoldoutPlan,
    decide,
    enough_to_learn,
    free_ranker_name,
    free_ranker_params,
    heuristic_ndcgs,
    holdout_plan,
    query_learnable,
    session_ndcgs,
    start_at_best_free_ranker,
)
from signet_bench.learn.model.optim import Adam, copy_params
from signet_bench.learn.model.params import init_params, query_held
from signet_bench.learn.model.scorer import (
    Batch,
    SessionArrays,
    batch_from_sessions,
    forward,
    loss_and_grads,
)
from signet_bench.learn.samples import SessionSample, is_prompt_sample, session_count
from signet_bench.learn.serving import (
    ServingChoice,
    choose_served,
    served_base,
    served_free_start,
)
from signet_bench.store.timestamps import format_iso

__all__ = [
    "START_CHOICE_MIN_SESSIONS",
    "CanaryMetrics",
    "Guard",
    "RunStart",
    "TrainOptions",
    "TrainResult",
    "canary_metrics",
    "incremental_split",
    "replay_buffer",
    "run_start",
    "session_probs",
    "split_canary",
    "to_batch",
    "train_model",
    "warm_start",
]

Params = dict[str, np.ndarray]
# the newest session starts a learned base and the free ranker are compared on (`run_start`):
# enough for two fixed rankers' means, and the base's scores of a 1,000-session history cost
# 1.3 s of CPU
START_CHOICE_SESSIONS = 200
# the session starts a run needs before a learned base may give way to the free ranker: the
# first scheduled training (`train_interval_sessions`, 10) has them where a session or two was
# not trainable
START_CHOICE_MIN_SESSIONS = 5


@dataclass(frozen=True, slots=True)
class CanaryMetrics:
    """How a model does on the canary sessions."""

    ndcg: float  # mean NDCG@10 of the model's order against the labels
    score_variance: float  # variance of all canary softmax scores
    top5: tuple[tuple[str, ...], ...]  # each session's top-5 ids


@dataclass(frozen=True, slots=True)
class TrainResult:
    """One training run: the gate outcome and, if accepted, the new weights."""

    accepted: bool
    gate_reason: str  # "passed" or the first failed gate
    params: Params | None
    loss_curve: tuple[float, ...]
    sample_count: int
    canary_count: int
    epochs_run: int
    steps: int
    duration_ms: int
    canary_ndcg: float
    canary_ndcg_before: float | None
    canary_ndcg_delta: float | None
    canary_score_variance: float
    canary_topk_overlap: float | None
    stopped_early: str | None = None  # "time-cap" | "converged" | "held-out" | None
    gates: dict[str, bool] = field(default_factory=dict)
    holdout: HoldoutDecision | None = None  # the out-of-sample verdict (full runs)
    best_epoch: int | None = None  # the epoch the held-out sessions chose (0: the start)
    serving: ServingChoice | None = None  # base or per-user model, and why (held-out runs)
    # what serves at the user's prompts, and why, where the run judged prompt samples
    # (`learn.samples.prompt_samples`; None: the prompts are served `params`, as session start)
    prompt_params: Params | None = None
    prompt_serving: ServingChoice | None = None


def to_batch(
    samples: Sequence[SessionSample], *, with_labels: bool = True, dtype: type = np.float32
) -> Batch:
    """Sessions as one packed scorer batch (candidate mask marks the real ones, embeddings
    unpadded); float32 is the fast training path, float64 the exact one."""
    sessions = [
        SessionArrays(
            s.context,
            s.cand_emb,
            s.has_emb,
            s.tokens,
            s.features,
            s.project_slot,
            s.signals,
            s.labels if with_labels else None,
        )
        for s in samples
    ]
    return batch_from_sessions(sessions, dtype=dtype, packed=True)


def split_canary(
    samples: Sequence[SessionSample], cfg: PredictorConfig = DEFAULT_CONFIG
) -> tuple[list[SessionSample], list[SessionSample]]:
    """(training, canary): the `canary_size` most confident sessions (newest first on ties)
    are held out when enough remain to train on; with little data the canary is every sample,
    not held out (Signet's small-data rule)."""
    order = sorted(
        range(len(samples)), key=lambda i: (-samples[i].confidence, -samples[i].start.timestamp())
    )
    if len(samples) >= 2 * cfg.canary_size:
        held = set(order[: cfg.canary_size])
        return [s for i, s in enumerate(samples) if i not in held], [samples[i] for i in order][
            : cfg.canary_size
        ]
    return list(samples), list(samples)


def replay_buffer(
    samples: Sequence[SessionSample], cfg: PredictorConfig = DEFAULT_CONFIG
) -> list[SessionSample]:
    """The top `replay_buffer_size` sessions by continuity score (docs/specification.md §6.1)."""
    order = sorted(samples, key=lambda s: (-s.continuity, -s.start.timestamp()))
    return order[: cfg.replay_buffer_size]


def incremental_split(
    history: Sequence[SessionSample], new_keys: set[str], cfg: PredictorConfig = DEFAULT_CONFIG
) -> tuple[list[SessionSample], list[SessionSample], list[SessionSample]]:
    """(train, canary, replay) for an incremental run: the new sessions (not held out in the
    canary) to train on, the canary and the replay buffer from the whole history."""
    rest, canary = split_canary(history, cfg)
    held = {s.session_key for s in canary} if len(rest) < len(history) else set()
    new = [s for s in history if s.session_key in new_keys and s.session_key not in held]
    return new, canary, replay_buffer(rest, cfg)


_PROBE_BATCH = 64  # sessions per batch when a model only scores (no gradient)


def _probe_batches(samples: Sequence[SessionSample]) -> list[tuple[Batch, list[int]]]:
    """`samples` as the batches `session_probs` scores (each with its sessions' sizes): built
    once for sessions scored again and again (the held-out sessions after every epoch)."""
    return [
        (to_batch(chunk, with_labels=False), [len(s) for s in chunk])
        for chunk in (samples[i : i + _PROBE_BATCH] for i in range(0, len(samples), _PROBE_BATCH))
    ]


def session_probs(
    params: Params,
    samples: Sequence[SessionSample],
    cfg: PredictorConfig,
    batches: Sequence[tuple[Batch, list[int]]] | None = None,
) -> list[np.ndarray]:
    """The model's probabilities over each session's candidates, 64 sessions per batch
    (`batches`: `_probe_batches(samples)` already built)."""
    out: list[np.ndarray] = []
    for batch, sizes in _probe_batches(samples) if batches is None else batches:
        probs = forward(params, batch, cfg).probs
        out += [probs[j, :n] for j, n in enumerate(sizes)]
    return out


def canary_metrics(
    params: Params, canary: Sequence[SessionSample], cfg: PredictorConfig = DEFAULT_CONFIG
) -> CanaryMetrics:
    """NDCG@10 against the labels, score variance and top-5 ids of a model on the canary."""
    if not canary:
        return CanaryMetrics(float("nan"), 0.0, ())
    scores = session_probs(params, canary, cfg)
    ndcgs, tops = [], []
    k = cfg.canary_top_k
    for s, p in zip(canary, scores, strict=True):
        ids = s.memory_ids.astype(str)
        ndcgs.append(ndcg_at_k(s.labels, p, ids, k=cfg.comparison_k))
        order = np.lexsort((ids, -p))
        tops.append(tuple(ids[order[: min(k, len(ids))]]))
    flat = np.concatenate(scores)
    return CanaryMetrics(float(np.mean(ndcgs)), float(np.var(flat)), tuple(tops))


def topk_overlap(a: Sequence[Sequence[str]], b: Sequence[Sequence[str]]) -> float:
    """Mean share of each session's top-k kept between two models."""
    vals = [len(set(x) & set(y)) / max(1, len(x)) for x, y in zip(a, b, strict=True)]
    return float(np.mean(vals)) if vals else 1.0


def _finite(params: Params) -> bool:
    return all(np.isfinite(v).all() for v in params.values())


@dataclass(frozen=True, slots=True)
class _Epochs:
    """What the epoch loop did: mean loss of each epoch, optimizer steps, why it stopped early."""

    curve: tuple[float, ...]
    steps: int
    stopped: str | None  # "time-cap" | "converged" | None


@dataclass(frozen=True, slots=True)
class _Gates:
    """The gate outcome: the trained copy's canary metrics (None if its weights are not
    finite), each gate's verdict, and the comparison with the previous model if there is one."""

    after: CanaryMetrics | None
    gates: dict[str, bool]
    overlap: float | None
    delta: float | None


# The weights through which anything but cosine(context, memory) reaches the logit (and the
# cosine weight itself): at their start the model ranks as its free ranker, so pulling them
# back towards it is a prior centred on that ranker.
PRIOR_PARAMS = (
    "q_proj",
    "gate_proj",
    "query_project",
    "query_time",
    "cosine_weight",
    "signal_weights",
)


@dataclass(frozen=True, slots=True)
class _Prior:
    """A Gaussian prior centred on the start weights: `strength / n_sessions * ||w - w0||^2`
    over PRIOR_PARAMS is added to each step's loss, so the data's pull grows with the number
    of sessions trained on while the prior's stays fixed (10 sessions move the model a
    little, 300 a lot)."""

    start: Params
    weight: float  # strength / n_sessions

    @classmethod
    def for_run(cls, start: Params, n_sessions: int, cfg: PredictorConfig) -> _Prior | None:
        if cfg.prior_strength <= 0:
            return None
        kept = {k: np.array(start[k], copy=True) for k in PRIOR_PARAMS if k in start}
        return cls(kept, cfg.prior_strength / max(1, n_sessions))

    def add_to(self, work: Params, grads: dict[str, np.ndarray]) -> float:
        """Add the prior's gradient to `grads` (in place); its loss term."""
        loss = 0.0
        for name, w0 in self.start.items():
            diff = work[name] - w0
            grads[name] = grads[name] + 2.0 * self.weight * diff
            loss += self.weight * float(np.sum(diff * diff))
        return loss


def _train_and_canary(
    samples: Sequence[SessionSample], canary: Sequence[SessionSample] | None, cfg: PredictorConfig
) -> tuple[list[SessionSample], Sequence[SessionSample]]:
    """(training sessions, canary): the canary split from `samples`, or the given canary's
    sessions left out of them (all of `samples` if that would leave none)."""
    if canary is None:
        return split_canary(samples, cfg)
    held = {s.session_key for s in canary}
    return [s for s in samples if s.session_key not in held] or list(samples), canary


@dataclass(frozen=True, slots=True)
class _Draw:
    """The sessions of one epoch when the training part holds more than the epoch's budget:
    its newest half always (the sessions the next ones resemble most), the other half drawn
    without replacement from the older ones, in a shuffled order (positions into `train`)."""

    newest: np.ndarray
    older: np.ndarray
    drawn: int

    @classmethod
    def for_run(cls, train: Sequence[SessionSample], budget: int) -> _Draw | None:
        """The draw of a run on `train`; None within the budget (every session, every epoch:
        the run draws exactly what it would without a budget)."""
        if budget <= 0 or len(train) <= budget:
            return None
        keys = [(s.start.timestamp(), s.session_key) for s in train]
        by_time = np.asarray(sorted(range(len(train)), key=keys.__getitem__), dtype=np.int64)
        newest = budget // 2
        return cls(by_time[len(train) - newest :], by_time[: len(train) - newest], budget - newest)

    def __call__(self, rng: np.random.Generator) -> np.ndarray:
        picked = np.concatenate([self.newest, rng.choice(self.older, self.drawn, replace=False)])
        return picked[rng.permutation(picked.size)]


@dataclass(frozen=True, slots=True)
class _Steps:
    """What every step of a run draws from: `n_recent` sessions of `train` (or of those `draw`
    picks from it) plus `n_replay` of the replay buffer; `limit`: the steps left in the run's
    budget."""

    train: Sequence[SessionSample]
    replay: Sequence[SessionSample]
    n_recent: int
    n_replay: int
    draw: _Draw | None
    limit: int | None = None  # the steps this epoch may take (None: a whole pass)


def _epoch(
    work: Params, opt: Adam, steps_of: _Steps, how: _Fit, prior: _Prior | None = None
) -> tuple[list[float], int, bool]:
    """One shuffled pass over the run's sessions in steps (`_Steps`), updating `work` in
    place under `how`'s settings; stops at a non-finite loss, after `steps_of.limit` steps,
    or once `how.time_up()` after a step: (step losses, steps taken, whether the time cap
    hit)."""
    train, replay = steps_of.train, steps_of.replay
    n_recent, n_replay = steps_of.n_recent, steps_of.n_replay
    rng = how.rng
    order = rng.permutation(len(train)) if steps_of.draw is None else steps_of.draw(rng)
    losses = []
    steps = 0
    for i in range(0, len(order), n_recent):
        if steps_of.limit is not None and steps >= steps_of.limit:
            break
        chunk = [train[j] for j in order[i : i + n_recent]]
        if n_replay and replay:
            chunk += [replay[j] for j in rng.integers(0, len(replay), n_replay)]
        loss, grads = loss_and_grads(work, to_batch(chunk), how.cfg)
        if prior is not None:
            loss += prior.add_to(work, grads)
        for name, mask in how.frozen.items():
            grads[name] = np.where(mask, 0.0, grads[name])
        losses.append(loss)
        if not math.isfinite(loss):
            break
        opt.step(work, grads)
        steps += 1
        if how.time_up():
            return losses, steps, True
    return losses, steps, False


def _run_epochs(
    work: Params,
    train: Sequence[SessionSample],
    replay: Sequence[SessionSample],
    how: _Fit,
    *,
    prior: _Prior | None = None,
    watch: _Watch | None = None,
    budget: int = 0,
) -> _Epochs:
    """Up to `how.epochs` epochs of Adam on `work` (in place), each over at most `budget`
    sessions of `train` (`_Draw`; 0: all of them), at most `how.max_steps` steps in all (0:
    no bound; the last epoch may be cut short); stops after a non-finite epoch loss, at the
    time cap, at the step budget, once the loss has converged (< 1e-6), or when `watch` (the
    held-out sessions) has seen no gain for `holdout_patience` epochs."""
    cfg, epochs, batch_size = how.cfg, how.epochs, how.batch_size
    opt = Adam(work, cfg)
    draw = _Draw.for_run(train, budget)
    n_replay = round(batch_size * cfg.replay_share) if replay else 0
    n_recent = batch_size - n_replay
    steps_of = _Steps(train, replay, n_recent, n_replay, draw)
    curve: list[float] = []
    steps, stopped = 0, None
    bar = None
    if how.progress:
        # here: tqdm loads only when a bar is drawn (start-up time)
        from tqdm import tqdm

        bar = tqdm(total=epochs, desc="training", unit="epoch", leave=False)
    for _ in range(epochs):
        left = how.max_steps - steps if how.max_steps > 0 else None
        losses, taken, capped = _epoch(work, opt, replace(steps_of, limit=left), how, prior)
        steps += taken
        stopped = "time-cap" if capped else None
        if stopped is None and left is not None and steps >= how.max_steps:
            stopped = "step-budget"
        mean = float(np.mean(losses)) if losses else float("nan")
        curve.append(mean)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{mean:.4f}")
        if stopped == "time-cap" or not math.isfinite(mean):
            break
        if watch is not None and not watch(len(curve), work):
            stopped = "held-out"
            break
        if stopped:  # the step budget: the held-out sessions judged its last epoch
            break
        if mean < 1e-6:
            stopped = "converged"
            break
    if bar is not None:
        bar.close()
    return _Epochs(tuple(curve), steps, stopped)


class _Watch:
    """Held-out NDCG@10 of the weights after every epoch (epoch 0: the start): each epoch's
    per-session values, and the best epoch's weights (the earliest on ties, the one closest
    to the start). Called with `patience`, it says when to stop."""

    def __init__(
        self, held: Sequence[SessionSample], cfg: PredictorConfig, patience: int | None
    ) -> None:
        self.held, self.cfg, self.patience = list(held), cfg, patience
        self.batches = _probe_batches(self.held)  # packed once, scored after every epoch
        self.per_epoch: list[np.ndarray] = []
        self.best_epoch, self.best_params = 0, None
        self.best_mean = -math.inf

    def __call__(self, epoch: int, params: Params) -> bool:
        """Record `params` at `epoch`; False once `patience` epochs brought no gain."""
        probs = session_probs(params, self.held, self.cfg, self.batches)
        values = session_ndcgs(self.held, probs, self.cfg)
        self.per_epoch.append(values)
        mean = float(np.mean(values)) if _finite(params) else -math.inf
        if mean > self.best_mean:
            self.best_mean, self.best_epoch = mean, epoch
            self.best_params = copy_params(params)
        return self.patience is None or epoch - self.best_epoch < self.patience


def _gate(
    work: Params,
    canary: Sequence[SessionSample],
    before: CanaryMetrics,
    curve: Sequence[float],
    had_model: bool,
    cfg: PredictorConfig,
    fresh: bool = False,
) -> _Gates:
    """The gates (docs/specification.md §6.2) on the trained copy: finite losses and weights, canary
    score variance, and (against a previous model only) canary top-k overlap (or a clear canary
    gain; not for a `fresh` retrain) and NDCG drop."""
    after = canary_metrics(work, canary, cfg) if _finite(work) else None
    gates = {"finite_losses": all(math.isfinite(x) for x in curve) and _finite(work)}
    gates["canary_variance"] = bool(after is not None and after.score_variance > 0.0)
    overlap = delta = None
    if after is not None and had_model:
        overlap = topk_overlap(before.top5, after.top5)
        delta = after.ndcg - before.ndcg
        # Top-5 churn signals forgetting only when the canary does not get better: a run
        # whose canary NDCG rises by `canary_churn_gain` keeps its reordering. A retrain from
        # fresh weights reorders by construction and forgets nothing it was given; the served
        # model may have trained on today's canary sessions, so only the drop gate applies.
        stable = overlap >= cfg.canary_min_topk_overlap
        gates["canary_topk_overlap"] = fresh or stable or delta >= cfg.canary_churn_gain
        gates["canary_ndcg_drop"] = delta >= -cfg.canary_max_ndcg_drop
    return _Gates(after, gates, overlap, delta)


def _result(
    work: Params,
    run: _Epochs,
    gate: _Gates,
    before: CanaryMetrics,
    *,
    had_model: bool,
    sample_count: int,
    canary_count: int,
    t0: float,
) -> TrainResult:
    """The TrainResult of a run: accepted (with the weights) only if every gate passed."""
    failed = [k for k, ok in gate.gates.items() if not ok]
    accepted = not failed
    after = gate.after
    return TrainResult(
        accepted=accepted,
        gate_reason="passed" if accepted else failed[0],
        params=work if accepted else None,
        loss_curve=run.curve,
        sample_count=sample_count,
        canary_count=canary_count,
        epochs_run=len(run.curve),
        steps=run.steps,
        duration_ms=int((time.perf_counter() - t0) * 1000),
        canary_ndcg=float("nan") if after is None else after.ndcg,
        canary_ndcg_before=before.ndcg if had_model else None,
        canary_ndcg_delta=gate.delta,
        canary_score_variance=0.0 if after is None else after.score_variance,
        canary_topk_overlap=gate.overlap,
        stopped_early=run.stopped,
        gates=gate.gates,
    )


@dataclass(frozen=True, slots=True)
class _Fit:
    """How every fit of one run trains (the run's settings, shared by its folds; `max_steps`:
    each fit's step budget, `training_step_budget` for a held-out run)."""

    cfg: PredictorConfig
    epochs: int
    batch_size: int
    rng: np.random.Generator
    time_up: Callable[[], bool]
    progress: bool
    frozen: Mapping[str, np.ndarray]
    max_steps: int = 0  # optimizer steps per fit (0: no bound)


def _fit(
    start: Params,
    train: Sequence[SessionSample],
    held: Sequence[SessionSample],
    how: _Fit,
    epochs: int,
    patience: int | None,
) -> tuple[Params, _Epochs, _Watch | None]:
    """A copy of `start` trained on `train` under the prior (each epoch within the session
    budget), watched on `held` (if any)."""
    work = copy_params(start)
    watch = _Watch(held, how.cfg, patience) if held else None
    if watch is not None:
        watch(0, work)
    run = _run_epochs(
        work,
        train,
        replay_buffer(train, how.cfg),
        replace(how, epochs=epochs),
        prior=_Prior.for_run(start, len(train), how.cfg),
        watch=watch,
        budget=how.cfg.epoch_session_budget,
    )
    return work, run, watch


@dataclass(frozen=True, slots=True)
class _HeldOutFit:
    """The candidate of a held-out run and what judged it."""

    params: Params
    run: _Epochs
    plan: HoldoutPlan
    held: list[SessionSample]  # the judged sessions, in the order of `ndcgs`
    ndcgs: np.ndarray  # the candidate's per-session held-out NDCG@10
    best_epoch: int
    trained_on: int
    losses_finite: bool  # every fit's losses (each fold's too) were finite
    sessions: int  # the sessions the samples come from (`samples.session_count`)


def _held_out_fit(samples: Sequence[SessionSample], start: Params, how: _Fit) -> _HeldOutFit:
    """Train and choose the epoch on sessions the model does not train on (`holdout_plan`):
    with a time hold-out the candidate is the best epoch of the model trained on the older
    sessions; with forward folds the epoch that is best over every judged fold, then one model
    trained on every session for that many epochs."""
    cfg = how.cfg
    plan = holdout_plan(samples, cfg)
    if plan.method == "time":
        fold = plan.folds[0]
        train, held = [samples[i] for i in fold.train], [samples[i] for i in fold.held]
        work, run, watch = _fit(start, train, held, how, how.epochs, cfg.holdout_patience)
        assert watch is not None and watch.best_params is not None
        best = watch.best_epoch
        return _HeldOutFit(
            watch.best_params,
            run,
            plan,
            held,
            watch.per_epoch[best],
            best,
            len(train),
            _finite_fit(work, run),
            session_count(samples),
        )
    watches, finite = [], True
    for fold in plan.folds:
        train, held = [samples[i] for i in fold.train], [samples[i] for i in fold.held]
        work, run, watch = _fit(start, train, held, how, how.epochs, None)
        watches.append(watch)
        finite = finite and _finite_fit(work, run)
    reached = min(len(w.per_epoch) for w in watches)
    pooled = [np.concatenate([w.per_epoch[e] for w in watches]) for e in range(reached)]
    means = np.asarray([v.mean() for v in pooled])
    # the first maximum (the earliest epoch); the start when no epoch has a finite value
    best = int(np.nanargmax(means)) if np.isfinite(means).any() else 0
    work, run, _ = _fit(start, samples, (), how, best, None)
    held = [samples[i] for i in plan.held]
    return _HeldOutFit(
        work,
        run,
        plan,
        held,
        pooled[best],
        best,
        len(samples),
        finite and _finite_fit(work, run),
        session_count(samples),
    )


def _finite_fit(work: Params, run: _Epochs) -> bool:
    """Whether a fit stayed finite: every epoch's loss and the weights it ended with (a run
    that diverges fails the finite gate even when the held-out sessions chose an earlier
    epoch)."""
    return _finite(work) and all(math.isfinite(x) for x in run.curve)


def _held_out_result(
    fitted: _HeldOutFit,
    served: Params | None,
    cfg: PredictorConfig,
    t0: float,
    learned: bool,
    begin: RunStart,
) -> TrainResult:
    """Gate the candidate into a TrainResult: a run that is not finite or scores every
    candidate alike is rejected (nothing changes); else each hook serves the candidate only if
    its held-out gain there (session start: the held-out sessions' starts; the prompt hook:
    their prompts, where the run has prompt samples) has a lower confidence bound above 0
    against `begin` (the run's start: the shipped base, or the free ranker it gave way to) and
    against that hook's strongest free ranker (`serving.choose_served`, `_hook_served`);
    otherwise the start is served (gate reason "base", or "free"). The held-out verdict
    (`decide`: against the served model and the free rankers, over every held-out sample) is
    recorded beside the choice, its `accepted` session start's."""
    held, work = fitted.held, fitted.params
    finite = _finite(work) and fitted.losses_finite
    probs = session_probs(work, held, cfg) if finite else []
    # forward folds judge most sessions, and the served model learned from them: measured
    # there it would win in-sample, so only the time hold-out records it beside the bar
    fair = served is not None and fitted.plan.method == "time"
    served_ndcgs = session_ndcgs(held, session_probs(served, held, cfg), cfg) if fair else None
    decision = decide(
        fitted.plan.method,
        fitted.ndcgs,
        served_ndcgs,
        heuristic_ndcgs(held, cfg),
        evidence=cfg.holdout_gain_evidence,
    )
    variance = float(np.var(np.concatenate(probs))) if probs else 0.0
    base = begin.params
    base_ndcgs = session_ndcgs(held, session_probs(base, held, cfg), cfg)
    prompts = np.array([is_prompt_sample(s) for s in held], dtype=bool)
    judged = _Judged(fitted, base, base_ndcgs, learned, begin)
    choice, params, ndcg = _hook_served(judged, ~prompts, cfg)
    at_prompt = _hook_served(judged, prompts, cfg, "prompts") if prompts.any() else None
    if not learned:
        decision = decision.unjudged_start()
    decision = replace(decision, accepted=choice.per_user)
    gates = {"finite_losses": finite, "canary_variance": variance > 0.0}
    # a run that diverged (or scores every candidate alike) changes nothing: the safety gates
    failed = [k for k, ok in gates.items() if not ok]
    gates["holdout"] = choice.per_user
    reason = {"per-user": "passed", "free": "free"}.get(choice.served, "base")
    return TrainResult(
        accepted=not failed,
        gate_reason=failed[0] if failed else reason,
        params=None if failed else params,
        loss_curve=fitted.run.curve,
        sample_count=fitted.trained_on,
        canary_count=len(held),
        epochs_run=len(fitted.run.curve),
        steps=fitted.run.steps,
        duration_ms=int((time.perf_counter() - t0) * 1000),
        canary_ndcg=ndcg,
        canary_ndcg_before=decision.served,
        canary_ndcg_delta=None if decision.served is None else ndcg - decision.served,
        canary_score_variance=variance,
        canary_topk_overlap=None,
        stopped_early=fitted.run.stopped,
        gates=gates,
        holdout=decision,
        best_epoch=fitted.best_epoch,
        serving=None if failed else choice,
        prompt_params=None if failed or at_prompt is None else at_prompt[1],
        prompt_serving=None if failed or at_prompt is None else at_prompt[0],
    )


@dataclass(frozen=True, slots=True)
class _Judged:
    """What a held-out run's hooks choose from: the fit (its candidate's per-sample NDCG@10),
    the base and its per-sample NDCG@10, and whether the run learned at all."""

    fitted: _HeldOutFit
    base: Params
    base_ndcgs: np.ndarray
    learned: bool
    start: RunStart  # the base, or the free ranker it gave way to


def _hook_served(
    judged: _Judged, mask: np.ndarray, cfg: PredictorConfig, unit: str = "sessions"
) -> tuple[ServingChoice, Params, float]:
    """What serves at one hook, judged on its held-out samples (`mask` of the fit's held-out
    ones): the choice (`serving.choose_served`; without a judgement, the run's start, the base
    or the free ranker it gave way to, when the run did not learn or none of the hook's samples
    was held out), the weights it serves (the candidate, the run's start or the free ranker's
    fresh weights) and their mean NDCG@10 there. Session start is judged only from
    `holdout_min_sessions` sessions on, whatever their prompts count: a run that learns earlier
    from its prompts holds out two or three session starts, too few for a bound (on unseen
    seed 1000 such a model served at session start after 10 sessions, 0.30 and 0.44 NDCG@10
    below cosine on the planted truth)."""
    fitted, base = judged.fitted, judged.base
    held = [s for s, m in zip(fitted.held, mask, strict=True) if m]
    if not held:
        return replace(served_base("none-held-out"), unit=unit), base, math.nan
    base_mean = float(np.mean(judged.base_ndcgs[mask]))
    starts_too_few = unit == "sessions" and not enough_to_learn(fitted.sessions, cfg)
    if not judged.learned or starts_too_few:
        if judged.start.name != "base":  # the free ranker the base gave way to serves
            choice = served_free_start(
                judged.start.name, judged.start.lead, fitted.sessions, cfg.holdout_min_sessions
            )
        else:
            choice = served_base("too-few", fitted.sessions, cfg.holdout_min_sessions)
        return replace(choice, unit=unit), base, base_mean
    heuristics = heuristic_ndcgs(held, cfg)
    candidate = fitted.ndcgs[mask]
    choice = choose_served(
        candidate,
        judged.base_ndcgs[mask],
        heuristics,
        cfg.serving_confidence,
        unit,
        judged.start.name,
    )
    if choice.per_user:
        return choice, fitted.params, float(np.mean(candidate))
    if choice.reason == "base-below-free" and choice.over_free is not None:  # the base trails it
        rival = choice.over_free.rival
        free = free_ranker_params(rival, int(held[0].context.shape[0]), cfg)
        return choice, free, float(np.mean(heuristics[rival]))
    return choice, base, base_mean


def warm_start(
    samples: Sequence[SessionSample],
    start: Params,
    served: tuple[Params, str],
    cfg: PredictorConfig,
) -> Params:
    """The weights a scheduled retrain starts from: the served model (`served`: its weights
    and the ISO start of the newest session it had seen) when `warm_start` is on, it has the
    start's shapes, every session the held-out gate judges on (`holdout_plan`, the time
    hold-out) is newer than any it learned from (else it would be judged in sample, and so
    would a candidate grown from it), and there it ranks no worse than `start` by mean
    NDCG@10; else `start` (the shipped base or its free ranker). A model already fitted to
    this user needs fewer steps to take in the newest sessions than the base, so a bounded
    run (`training_step_budget`) ends nearer its best; the candidate is still judged against
    the base and the free rankers (`serving.choose_served`)."""
    weights, through = served
    same = set(weights) == set(start) and all(
        np.shape(weights[k]) == np.shape(start[k]) for k in start
    )
    if not cfg.warm_start or not same or len(samples) < 2:
        return start
    plan = holdout_plan(samples, cfg)
    held = [samples[i] for i in plan.held]
    if plan.method != "time" or min(format_iso(s.start) for s in held) <= through:
        return start
    warm = session_ndcgs(held, session_probs(weights, held, cfg), cfg)
    cold = session_ndcgs(held, session_probs(start, held, cfg), cfg)
    return weights if float(np.mean(warm)) >= float(np.mean(cold)) else start


@dataclass(frozen=True, slots=True)
class RunStart:
    """Where a run with no model given starts, and what it serves unless its model is shown
    better: the weights, and what they are: "base", or the free ranker ("cosine", "hybrid")
    a learned base gave way to on this user's sessions (`run_start`), with its mean NDCG@10
    lead over the base on their session starts (`lead`; NaN for the base)."""

    params: Params
    name: str = "base"
    lead: float = math.nan


def run_start(
    samples: Sequence[SessionSample], base: Params | None, dim: int, cfg: PredictorConfig
) -> RunStart:
    """A run's start (`RunStart`): `base` (default the shipped base, `learn.base`); a base
    that is the fresh scorer starts at the better free ranker on `samples`
    (`start_at_best_free_ranker`); a learned base gives way to the better free ranker where
    this user's session starts rank that ranker above it (`_free_lead`)."""
    start = shipped_base_params(dim, cfg) if base is None else base
    if free_ranker_name(start, cfg) is not None:
        return RunStart(start_at_best_free_ranker(start, samples, cfg))
    starts = [s for s in samples if not is_prompt_sample(s)]
    if session_count(starts) < START_CHOICE_MIN_SESSIONS:  # no choice: nothing is computed
        return RunStart(start)
    free = start_at_best_free_ranker(init_params(cfg, dim), samples, cfg)
    name = free_ranker_name(free, cfg) or "cosine"
    lead = _free_lead(start, name, starts, cfg)
    return RunStart(free, name, lead) if lead > 0.0 else RunStart(start)


def _free_lead(
    base: Params, free: str, starts: Sequence[SessionSample], cfg: PredictorConfig
) -> float:
    """How far the free ranker named `free` leads a learned base on this user's session starts
    (`starts`, at least `START_CHOICE_MIN_SESSIONS`): the difference of their mean NDCG@10 over
    the newest `START_CHOICE_SESSIONS` (the held-out ones included: a choice between two fixed
    rankers the gate compares anyway, not a fit); the base gives way where it is above 0.
    Labels favour what was injected, and the base injected until then, so a lead of the free
    ranker is evidence against the base's order, not for it. A user's model starts from the
    run's start and is judged against it; from the shipped base, trained on the store's labels,
    it kept what the base had injected (synthetic seed 1000: 0.17-0.21 NDCG@10 below cosine
    after 100 sessions, against +0.03 to +0.05 from the free ranker), while on LoCoMo a user's
    model from the free ranker ranked about as well as one from the base (recall@10 59.7 and
    59.9; docs/concepts.md §4.3)."""
    starts = sorted(starts, key=lambda s: s.start)[-START_CHOICE_SESSIONS:]
    on_base = session_ndcgs(starts, session_probs(base, starts, cfg), cfg)
    on_free = heuristic_ndcgs(starts, cfg)[free]  # the free ranker's own order, no forward pass
    return float(np.mean(on_free)) - float(np.mean(on_base))


@dataclass(frozen=True, slots=True)
class Guard:
    """What guards a run against forgetting: the served model the gates compare with
    (`reference`; default the run's start: a retrain from fresh weights passes the served
    model here), whether it is an accepted model whose canary behaviour must be preserved
    (`previous_is_trained`; default: whether there is one), and the canary and replay buffer
    (default: taken from the samples, a full retrain; an incremental run trains on the new
    sessions with both taken from the whole history); `base`: the shipped base a held-out run
    starts from and serves unless its model is shown better (default `learn.base`);
    `served_through`: the newest session the served model had seen, which lets a fresh
    held-out run start from it (`warm_start`; None: never)."""

    reference: Params | None = None
    previous_is_trained: bool | None = None
    canary: Sequence[SessionSample] | None = None
    replay: Sequence[SessionSample] | None = None
    base: Params | None = None  # the shipped base (default `learn.base`): start and fallback
    served_through: str | None = None  # ISO start of the newest session `reference` had seen


@dataclass(frozen=True, slots=True)
class TrainOptions:
    """How a run steps besides its epochs and seed: `batch_size` sessions a step, a time cap
    (default the config's), a progress bar, the dimension of fresh weights (default the
    samples'), and `frozen` (parameter name -> boolean mask, dense parameters only): entries
    held at their starting values, a component ablation."""

    batch_size: int = 16
    time_cap_s: float | None = None
    progress: bool = False
    native_dim: int | None = None
    frozen: Mapping[str, np.ndarray] | None = None


def train_model(
    samples: Sequence[SessionSample],
    current: Params | None,
    *,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    epochs: int = 3,
    seed: int = 0,
    guard: Guard = Guard(),
    options: TrainOptions = TrainOptions(),
) -> TrainResult:
    """Train a copy of `current` (or fresh weights) on `samples`; gate; return the outcome
    (`Guard`: what the gates compare with; `TrainOptions`: how it steps)."""
    reference, previous_is_trained = guard.reference, guard.previous_is_trained
    canary, replay = guard.canary, guard.replay
    batch_size, time_cap_s, progress = options.batch_size, options.time_cap_s, options.progress
    native_dim, frozen = options.native_dim, options.frozen
    t0 = time.perf_counter()
    cap = cfg.max_training_seconds if time_cap_s is None else time_cap_s
    rng = np.random.default_rng(seed)
    if not samples:
        raise ValueError("no training samples")
    dim = native_dim or int(samples[0].context.shape[0])
    base = current if current is not None else init_params(cfg, dim)
    served = base if reference is None else reference
    had_model = previous_is_trained
    if had_model is None:
        had_model = current is not None or reference is not None
    if canary is None and cfg.training_judge == "holdout" and len(samples) >= 2:
        # too few sessions to learn from: the start is judged and served unchanged
        # a prompt's sample counts as a session start's: at 10 sessions a user's prompts give
        # some 150 labelled rankings, and on design worlds they served better from there
        learned = enough_to_learn(len(samples), cfg)
        held = {} if query_learnable(len(samples), cfg) else query_held(base)
        how = _Fit(
            cfg,
            epochs if learned else 0,
            batch_size,
            rng,
            lambda: time.perf_counter() - t0 > cap,
            progress,
            {**held, **(frozen or {})},
            cfg.training_step_budget,
        )
        begin = run_start(samples, guard.base, dim, cfg)
        shipped = begin.params
        start = shipped if current is None else base
        through = guard.served_through
        if current is None and had_model and reference is not None and through and learned:
            start = warm_start(samples, shipped, (reference, through), cfg)
        fitted = _held_out_fit(samples, start, how)
        served = served if had_model else None
        return _held_out_result(fitted, served, cfg, t0, learned, begin)
    work = copy_params(base)
    train, canary = _train_and_canary(samples, canary, cfg)
    replay = list(replay_buffer(train, cfg) if replay is None else replay)
    before = canary_metrics(served, canary, cfg)
    how = _Fit(
        cfg, epochs, batch_size, rng, lambda: time.perf_counter() - t0 > cap, progress, frozen or {}
    )
    run = _run_epochs(work, train, replay, how)
    fresh = current is None and reference is not None
    gate = _gate(work, canary, before, run.curve, had_model, cfg, fresh)
    return _result(
        work,
        run,
        gate,
        before,
        had_model=had_model,
        sample_count=len(train),
        canary_count=len(canary),
        t0=t0,
    )
