"""Batched listwise training with the seed's safety net: a held-out canary set, a replay buffer,
training on a copy of the weights, and gates that must all pass before the copy is swapped in.

Gates (seed 000 "Training schedule", DESIGN §6): every loss finite; canary score variance > 0;
canary top-5 overlap with the previous model >= 0.6; canary NDCG@10 drop <= 0.15. The first
training has no previous model to forget, so the overlap and drop gates compare against nothing
and pass; the finite and variance gates always apply.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.evaluate import ndcg_at_k
from signet_bench.model.optim import Adam, copy_params
from signet_bench.model.params import init_params
from signet_bench.model.scorer import Batch, batch_from_sessions, forward, loss_and_grads
from signet_bench.samples import SessionSample

__all__ = [
    "CanaryMetrics",
    "TrainResult",
    "canary_metrics",
    "incremental_split",
    "run_record",
    "split_canary",
    "to_batch",
    "train_model",
]

Params = dict[str, np.ndarray]


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
    stopped_early: str | None = None  # "time-cap" | "converged" | None
    gates: dict[str, bool] = field(default_factory=dict)


def run_record(
    result: TrainResult,
    *,
    run_id: str,
    store_path: str,
    started_at: object,
    model_path: str | None,
) -> dict[str, object]:
    """A training run as the workbench's `training_runs` row (loss curve as JSON)."""
    import json

    return {
        "run_id": run_id,
        "store_path": store_path,
        "started_at": started_at,
        "duration_ms": result.duration_ms,
        "sample_count": result.sample_count,
        "epochs": result.epochs_run,
        "loss_curve": json.dumps(list(result.loss_curve)),
        "canary_ndcg": result.canary_ndcg,
        "canary_ndcg_delta": result.canary_ndcg_delta,
        "canary_score_variance": result.canary_score_variance,
        "canary_topk_overlap": result.canary_topk_overlap,
        "gate_passed": result.accepted,
        "gate_reason": result.gate_reason,
        "model_path": model_path if result.accepted else None,
    }


def to_batch(
    samples: Sequence[SessionSample], *, with_labels: bool = True, dtype: type = np.float32
) -> Batch:
    """Sessions as one packed scorer batch (candidate mask marks the real ones, embeddings
    unpadded); float32 is the fast training path, float64 the exact one."""
    return batch_from_sessions(
        [s.context for s in samples],
        [s.cand_emb for s in samples],
        [s.has_emb for s in samples],
        [s.tokens for s in samples],
        [s.features for s in samples],
        [s.project_slot for s in samples],
        labels=[s.labels for s in samples] if with_labels else None,
        dtype=dtype,
        packed=True,
    )


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
    """The top `replay_buffer_size` sessions by continuity score (seed Phase 5b)."""
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


def _predict(params: Params, samples: Sequence[SessionSample], cfg: PredictorConfig) -> list:
    out = []
    for i in range(0, len(samples), 64):
        chunk = samples[i : i + 64]
        probs = forward(params, to_batch(chunk, with_labels=False), cfg).probs
        out += [probs[j, : len(s)] for j, s in enumerate(chunk)]
    return out


def canary_metrics(
    params: Params, canary: Sequence[SessionSample], cfg: PredictorConfig = DEFAULT_CONFIG
) -> CanaryMetrics:
    """NDCG@10 against the labels, score variance and top-5 ids of a model on the canary."""
    if not canary:
        return CanaryMetrics(float("nan"), 0.0, ())
    scores = _predict(params, canary, cfg)
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


def train_model(
    samples: Sequence[SessionSample],
    current: Params | None,
    *,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    epochs: int = 3,
    batch_size: int = 16,
    seed: int = 0,
    time_cap_s: float | None = None,
    previous_is_trained: bool | None = None,
    progress: bool = False,
    native_dim: int | None = None,
    canary: Sequence[SessionSample] | None = None,
    replay: Sequence[SessionSample] | None = None,
) -> TrainResult:
    """Train a copy of `current` (or fresh weights) on `samples`; gate; return the outcome.

    `previous_is_trained` says whether `current` is an accepted model whose canary behaviour
    must be preserved (default: True when `current` is given). By default the canary and the
    replay buffer come from `samples` (a full retrain); an incremental run passes only the new
    sessions as `samples` with the canary and replay buffer taken from the whole history."""
    t0 = time.perf_counter()
    cap = cfg.max_training_seconds if time_cap_s is None else time_cap_s
    rng = np.random.default_rng(seed)
    if not samples:
        raise ValueError("no training samples")
    dim = native_dim or int(samples[0].context.shape[0])
    base = current if current is not None else init_params(cfg, dim)
    had_model = (current is not None) if previous_is_trained is None else previous_is_trained
    work = copy_params(base)
    if canary is None:
        train, canary = split_canary(samples, cfg)
    else:
        held = {s.session_key for s in canary}
        train = [s for s in samples if s.session_key not in held] or list(samples)
    replay = list(replay_buffer(train, cfg) if replay is None else replay)
    before = canary_metrics(base, canary, cfg)
    opt = Adam(work, cfg)
    n_replay = round(batch_size * cfg.replay_share) if replay else 0
    n_recent = batch_size - n_replay
    curve: list[float] = []
    steps, stopped = 0, None
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=epochs, desc="training", unit="epoch", leave=False)
    for _ in range(epochs):
        order = rng.permutation(len(train))
        losses = []
        for i in range(0, len(order), n_recent):
            chunk = [train[j] for j in order[i : i + n_recent]]
            if n_replay and replay:
                chunk += [replay[j] for j in rng.integers(0, len(replay), n_replay)]
            loss, grads = loss_and_grads(work, to_batch(chunk), cfg)
            losses.append(loss)
            if not math.isfinite(loss):
                break
            opt.step(work, grads)
            steps += 1
            if time.perf_counter() - t0 > cap:
                stopped = "time-cap"
                break
        mean = float(np.mean(losses)) if losses else float("nan")
        curve.append(mean)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{mean:.4f}")
        if stopped or not math.isfinite(mean):
            break
        if mean < 1e-6:
            stopped = "converged"
            break
    if bar is not None:
        bar.close()
    after = canary_metrics(work, canary, cfg) if _finite(work) else None
    gates = {"finite_losses": all(math.isfinite(x) for x in curve) and _finite(work)}
    gates["canary_variance"] = bool(after is not None and after.score_variance > 0.0)
    overlap = delta = None
    if after is not None and had_model:
        overlap = topk_overlap(before.top5, after.top5)
        delta = after.ndcg - before.ndcg
        gates["canary_topk_overlap"] = overlap >= cfg.canary_min_topk_overlap
        gates["canary_ndcg_drop"] = delta >= -cfg.canary_max_ndcg_drop
    failed = [k for k, ok in gates.items() if not ok]
    accepted = not failed
    return TrainResult(
        accepted=accepted,
        gate_reason="passed" if accepted else failed[0],
        params=work if accepted else None,
        loss_curve=tuple(curve),
        sample_count=len(train),
        canary_count=len(canary),
        epochs_run=len(curve),
        steps=steps,
        duration_ms=int((time.perf_counter() - t0) * 1000),
        canary_ndcg=float("nan") if after is None else after.ndcg,
        canary_ndcg_before=before.ndcg if had_model else None,
        canary_ndcg_delta=delta,
        canary_score_variance=0.0 if after is None else after.score_variance,
        canary_topk_overlap=overlap,
        stopped_early=stopped,
        gates=gates,
    )
