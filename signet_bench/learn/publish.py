"""Publishing a training: from a store and a request to a run (`learn.train.train_model`), an
accepted model saved as `out_dir/model.sbm` (and the checkpoint the request asks for), and the run
and the model recorded in `out_dir/workbench.duckdb`. The schedule lives here too: what a request
trains on (`plan_training`) and the request a mode's schedule makes (`scheduled_request`).
"""

from __future__ import annotations

import json
import math
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.errors import UserError
from signet_bench.learn.base import shipped_base_params
from signet_bench.learn.model.checkpoint import CheckpointMeta, save_checkpoint
from signet_bench.learn.samples import Selection, SessionSample, load_samples
from signet_bench.learn.serving import PROMPT_KEY, served_base
from signet_bench.learn.train import (
    Guard,
    Params,
    TrainOptions,
    TrainResult,
    incremental_split,
    train_model,
)
from signet_bench.store.corpus import Corpus, read_corpus
from signet_bench.store.hook_log import hook_log_path
from signet_bench.store.timestamps import format_iso
from signet_bench.store.workbench import open_workbench, record_model, record_training_run
from signet_scorer.contract import FEATURE_SPEC, feature_spec_hash
from signet_scorer.request import RequestError, TrainingRequest
from signet_scorer.timestamps import local_tz
from signet_scorer.workbench import CHECKPOINT_FILE, WORKBENCH_FILE, prompt_model_file

__all__ = [
    "NothingToTrain",
    "Published",
    "StoreTraining",
    "TooLittleData",
    "TrainingPlan",
    "holdout_record",
    "plan_training",
    "publish_base",
    "request_config",
    "run_record",
    "scheduled_request",
    "serving_record",
    "train_and_publish",
    "train_store",
]


def run_record(
    result: TrainResult,
    *,
    run_id: str,
    store_path: str,
    started_at: object,
    model_path: str | None,
) -> dict[str, object]:
    """A training run as the workbench's `training_runs` row (loss curve as JSON)."""
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
        "holdout": None if result.holdout is None else json.dumps(holdout_record(result)),
        "serving": None if result.serving is None else json.dumps(serving_record(result)),
    }


def serving_record(result: TrainResult) -> dict[str, object] | None:
    """Each hook's serving choice of a run as plain data: session start's at the top (as runs
    recorded it before the prompt hook had its own), the prompt hook's under `PROMPT_KEY`
    (`serving.hook_choices` reads both back)."""
    if result.serving is None:
        return None
    prompt = result.prompt_serving
    return result.serving.record() | ({} if prompt is None else {PROMPT_KEY: prompt.record()})


def holdout_record(result: TrainResult) -> dict[str, object]:
    """The held-out verdict of a run as plain data (the workbench keeps it as JSON)."""
    d = result.holdout
    assert d is not None
    return {
        "method": d.method,
        "sessions": d.sessions,
        "candidate": d.candidate,
        "served": d.served,
        "heuristics": d.heuristics,
        "comparator": d.comparator,
        "bar": d.bar,
        "accepted": d.accepted,
        "best_epoch": result.best_epoch,
        # +-Infinity (a lead alike on every session) is kept; JSON's NaN is not
        "lead_evidence": None if math.isnan(d.lead_evidence) else d.lead_evidence,
        "evidence_needed": d.evidence_needed,
        "demoted_to": d.demoted_to,
        "serving": serving_record(result),
    }


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _hook_workbench(out_dir: Path) -> Path | None:
    """The workbench whose session-start wrapper record labels a training: the one it
    publishes to when the wrapper recorded there (a hook run with `--workbench` set to it),
    else None: the store's default workbench, where the wrapper records by default."""
    workbench = out_dir / WORKBENCH_FILE
    return workbench if hook_log_path(workbench).exists() else None


def _model_meta(
    result: TrainResult,
    samples: Sequence[SessionSample],
    cfg: PredictorConfig,
    *,
    is_finetuned: bool,
    serves_base: bool | None = None,
) -> CheckpointMeta:
    """An accepted model's meta: dims, feature spec, training range and metrics (`serves_base`:
    whether it is the shipped base, default whether session start serves it)."""
    base = _serves_base(result) if serves_base is None else serves_base
    return CheckpointMeta.from_config(
        cfg,
        int(samples[0].context.shape[0]),
        feature_spec_hash=feature_spec_hash(FEATURE_SPEC),
        first_session_at=format_iso(min(s.start for s in samples)),
        last_session_at=format_iso(max(s.start for s in samples)),
        metrics={
            "canary_ndcg": result.canary_ndcg,
            "final_loss": result.loss_curve[-1] if result.loss_curve else float("nan"),
        },
        is_finetuned=is_finetuned and not base,
        is_pretrained_base=base,
    )


def _serves_base(result: TrainResult) -> bool:
    """Whether what `result` serves is the shipped base (`learn.serving`)."""
    return result.serving is not None and result.serving.served == "base"


def _write_checkpoint(
    request: TrainingRequest, params: Params, meta: CheckpointMeta, *, prompt: bool = False
) -> tuple[Path | None, str | None]:
    """The accepted model also written where the request asks, in its format (`prompt`: the
    prompt hook's, beside it, `prompt_model_file`): (path, None), or (None, why not) when that
    fails (the training stands; SGPT cannot hold every model)."""
    # here: onnx loads only where a model file is written or read (start-up time)
    from signet_bench.learn.export import write_model_file

    if request.checkpoint_path is None:
        return None, None
    target = prompt_model_file(request.checkpoint_path) if prompt else request.checkpoint_path
    try:
        path = write_model_file(
            target,
            params,
            meta,
            fmt=request.checkpoint_kind,
            flags=meta.flags,
        )
    except (UserError, OSError) as exc:
        return None, str(exc)
    return path, None


def _record(
    out_dir: Path,
    result: TrainResult,
    *,
    run_id: str,
    store_path: str,
    started_at: datetime,
    model_path: Path | None,
    is_finetuned: bool,
) -> None:
    """The run (and an accepted model) in `out_dir/workbench.duckdb`, one transaction each."""
    path = str(out_dir / CHECKPOINT_FILE)
    with open_workbench(out_dir / WORKBENCH_FILE) as wb:
        record_training_run(
            wb,
            run_record(
                result,
                run_id=run_id,
                store_path=store_path,
                started_at=started_at,
                model_path=path,
            ),
        )
        if model_path is not None:
            record_model(
                wb,
                {
                    "model_id": run_id,
                    "path": path,
                    "created_at": datetime.now(UTC),
                    "feature_spec_hash": feature_spec_hash(FEATURE_SPEC),
                    "is_pretrained_base": _serves_base(result),
                    "is_finetuned": is_finetuned and not _serves_base(result),
                    "metrics": json.dumps(
                        {"canary_ndcg": _finite_or_none(result.canary_ndcg)}
                        | ({} if result.serving is None else {"serving": serving_record(result)})
                    ),
                },
            )


@dataclass(frozen=True, slots=True)
class Published:
    """What `train_and_publish` did: the run, the saved model (None when rejected), and the
    extra checkpoint the request asked for (or why it could not be written)."""

    result: TrainResult
    model_path: Path | None
    checkpoint: Path | None = None
    checkpoint_error: str | None = None


def train_and_publish(
    plan: TrainingPlan,
    base: Params | None,
    request: TrainingRequest,
    *,
    run_id: str,
    history: Sequence[SessionSample] | None = None,
    progress: bool = False,
) -> Published:
    """Train as `plan` and `request` say (`train_model`: from `base` or, for a `fresh` run,
    from fresh weights with `base` only what the gates compare with), gate, save an accepted
    model to `out_dir/model.sbm` (and the request's checkpoint) and record the run and the
    model in `out_dir/workbench.duckdb`.

    The one path from samples to a served model: the session loop, `signet-bench train` and
    the sidecar all reach it through `train_store`. A rejected run leaves the saved model
    untouched and is recorded too. `history` (default the plan's samples) is every session
    the model has learned from so far: the saved model's training range."""
    if request.out_dir is None:
        raise RequestError("out_dir", "is required to train (the model and workbench go there)")
    out = request.out_dir
    fresh = request.mode == "fresh"
    started = datetime.now(UTC)
    result = train_model(
        plan.samples,
        None if fresh else base,
        cfg=plan.cfg,
        epochs=plan.epochs,
        seed=request.seed,
        guard=Guard(
            reference=base if fresh else None,
            previous_is_trained=base is not None if request.protect is None else request.protect,
            canary=plan.canary,
            replay=plan.replay,
            served_through=plan.served_through if fresh else None,
        ),
        options=TrainOptions(time_cap_s=request.time_cap_s, progress=progress),
    )
    is_finetuned = base is not None and not fresh
    published = Published(result, None)
    if result.accepted:
        seen = plan.samples if history is None else history
        meta = _model_meta(result, seen, plan.cfg, is_finetuned=is_finetuned)
        out.mkdir(parents=True, exist_ok=True)
        saved = out / CHECKPOINT_FILE
        save_checkpoint(saved, result.params, meta)
        published = Published(result, saved, *_write_checkpoint(request, result.params, meta))
        _publish_prompt_model(request, result, meta)
    _record(
        out,
        result,
        run_id=run_id,
        store_path=str(request.db_path.resolve()),
        started_at=started,
        model_path=published.model_path,
        is_finetuned=is_finetuned,
    )
    return published


def _publish_prompt_model(
    request: TrainingRequest, result: TrainResult, meta: CheckpointMeta
) -> None:
    """The prompt hook's served model beside session start's (`prompt_model_file`, and beside
    the request's checkpoint), where the run chose one; else any earlier one is removed, so the
    prompts are served session start's model (`signet_scorer.workbench.served_at_prompt`)."""
    assert request.out_dir is not None
    saved = prompt_model_file(request.out_dir / CHECKPOINT_FILE)
    extra = None if request.checkpoint_path is None else prompt_model_file(request.checkpoint_path)
    if result.prompt_params is None or result.prompt_serving is None:
        for stale in (saved, extra):
            if stale is not None:
                stale.unlink(missing_ok=True)
        return
    base = result.prompt_serving.served == "base"
    own = meta.replace(is_pretrained_base=base, is_finetuned=meta.is_finetuned and not base)
    save_checkpoint(saved, result.prompt_params, own)
    _write_checkpoint(request, result.prompt_params, own, prompt=True)


def publish_base(
    request: TrainingRequest,
    native_dim: int,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    *,
    run_id: str,
) -> Published:
    """The shipped base (`learn.base`) for embeddings of `native_dim` saved as the served
    model of `request.out_dir` (and the checkpoint the request asks for, e.g. ONNX for the
    hook), with a run recording why it serves: no session has been trained on yet."""
    from signet_scorer.contract import FEATURE_SPEC, feature_spec_hash

    assert request.out_dir is not None
    started = datetime.now(UTC)
    base = shipped_base_params(native_dim, cfg)
    result = TrainResult(
        accepted=True,
        gate_reason="base",
        params=base,
        loss_curve=(),
        sample_count=0,
        canary_count=0,
        epochs_run=0,
        steps=0,
        duration_ms=0,
        canary_ndcg=math.nan,
        canary_ndcg_before=None,
        canary_ndcg_delta=None,
        canary_score_variance=0.0,
        canary_topk_overlap=None,
        serving=served_base("no-sessions"),
    )
    meta = CheckpointMeta.from_config(
        cfg, native_dim, feature_spec_hash=feature_spec_hash(FEATURE_SPEC), is_pretrained_base=True
    )
    request.out_dir.mkdir(parents=True, exist_ok=True)
    saved = request.out_dir / CHECKPOINT_FILE
    save_checkpoint(saved, base, meta)
    published = Published(result, saved, *_write_checkpoint(request, base, meta))
    _publish_prompt_model(request, result, meta)
    _record(
        request.out_dir,
        result,
        run_id=run_id,
        store_path=str(request.db_path.resolve()),
        started_at=started,
        model_path=saved,
        is_finetuned=False,
    )
    return published


@dataclass(frozen=True, slots=True)
class StoreTraining:
    """What `train_store` did: the run's id, the store's sessions it skipped, and what
    `train_and_publish` made of the run (the result, the saved model, the checkpoint);
    `sessions`: the trainable sessions it read (0 when not told)."""

    run_id: str
    skipped: int
    published: Published
    sessions: int = 0

    @property
    def result(self) -> TrainResult:
        return self.published.result


class NothingToTrain(UserError):
    """An incremental run with no session newer than the base model's last one."""


class TooLittleData(UserError):
    """Fewer than two trainable sessions in the store."""


@dataclass(frozen=True, slots=True)
class TrainingPlan:
    """What one run trains on, and how (docs/specification.md §6.1)."""

    samples: list[SessionSample]
    cfg: PredictorConfig
    epochs: int
    canary: list[SessionSample] | None = None  # None: split from `samples` (a full run)
    replay: list[SessionSample] | None = None
    served_through: str | None = None  # the newest session the base model had seen (ISO)


def scheduled_request(
    db_path: str | Path,
    out_dir: str | Path | None,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    *,
    mode: str = "finetune",
    full_epochs: int | None = None,
) -> TrainingRequest:
    """A request with the schedule `cfg` sets for `mode` (docs/concepts.md
    §4.1): an incremental run fine-tunes for `incremental_epochs` at `incremental_lr_scale`
    of the learning rate; any other runs `full_epochs` (default `full_training_epochs`) at the
    full rate; the loss temperature, confidence threshold and time cap are the config's."""
    incremental = mode == "incremental"
    full = cfg.full_training_epochs if full_epochs is None else full_epochs
    return TrainingRequest(
        db_path=Path(db_path),
        out_dir=None if out_dir is None else Path(out_dir),
        mode=mode,  # type: ignore[arg-type]
        epochs=cfg.incremental_epochs if incremental else full,
        lr_scale=cfg.incremental_lr_scale if incremental else 1.0,
        temperature=cfg.loss_temperature,
        min_confidence=cfg.min_scorer_confidence,
        time_cap_s=cfg.max_training_seconds,
    )


def request_config(cfg: PredictorConfig, request: TrainingRequest) -> PredictorConfig:
    """`cfg` with the request's loss temperature, confidence threshold and time cap (the
    learning-rate scale is applied by `plan_training`)."""
    return cfg.replace(
        loss_temperature=request.temperature,
        min_scorer_confidence=request.min_confidence,
        max_training_seconds=request.time_cap_s,
    )


def plan_training(
    samples: Sequence[SessionSample],
    trained_through: str | None,
    request: TrainingRequest,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> TrainingPlan:
    """The specification's schedule (docs/specification.md §6.1): an incremental request with a
    `trained_through` (the ISO start of the newest session the base learned from) trains on the
    newer sessions, mixed ~20% with the replay buffer and judged on the canary of the whole history;
    any other run trains on every sample. Either runs the request's epochs at its scale of the
    learning rate."""
    run_cfg = cfg.replace(learning_rate=cfg.learning_rate * request.lr_scale)
    if request.mode != "incremental" or trained_through is None:
        return TrainingPlan(list(samples), run_cfg, request.epochs, served_through=trained_through)
    new_keys = {s.session_key for s in samples if format_iso(s.start) > trained_through}
    train_on, canary, replay = incremental_split(samples, new_keys, cfg)
    if not train_on:
        raise NothingToTrain(f"no trainable session after {trained_through}")
    return TrainingPlan(train_on, run_cfg, request.epochs, canary, replay)


def _base_model(path: str | Path, dim: int) -> tuple[Params, str | None]:
    """A base model's weights (any format: own checkpoint, SGPT or ONNX) and the newest
    session it learned from."""
    # here: onnx loads only where a model file is written or read (start-up time)
    from signet_bench.learn.export import load_model_file

    base, meta, _ = load_model_file(path)
    if meta.native_dim != dim:
        raise UserError(
            f"{path}: native_dim {meta.native_dim} does not match the store's embeddings ({dim})"
        )
    return base, meta.last_session_at


def train_store(
    request: TrainingRequest,
    *,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    db: sqlite3.Connection | None = None,
    corpus: Corpus | None = None,
    run_id: str | None = None,
    progress: bool = False,
) -> StoreTraining:
    """One gated training as `request` asks, on its store's scored sessions (the store is
    only read), published to its `out_dir` (`train_and_publish`). Every training policy value
    comes from the request; `cfg` gives the rest (model dims, gates, labels, learning rate).
    `db` is an open connection to the request's store and `corpus` its memories already read
    (the session loop holds both). Only the newest `training_window_sessions` scored sessions
    are read. With fewer than two trainable sessions and no model in `out_dir` yet, the
    shipped base is put in place (`publish_base`), so a user is served from the first
    session; with a model there, too little data raises before anything is written. An
    incremental run with nothing new raises NothingToTrain."""

    if request.out_dir is None:
        raise RequestError("out_dir", "is required to train (the model and workbench go there)")
    run_cfg = request_config(cfg, request)
    samples, skipped = load_samples(
        request.db_path if db is None else db,
        tz=request.tz or local_tz(),
        cfg=run_cfg,
        seed=request.negatives_seed,
        corpus=corpus,
        workbench=_hook_workbench(request.out_dir),
        select=Selection(
            limit=request.limit,
            window=run_cfg.training_window_sessions,
            prompts=run_cfg.prompt_samples,
        ),
        progress=progress,
    )
    run_id = run_id or str(uuid.uuid4())
    if len(samples) < 2 and not (request.out_dir / CHECKPOINT_FILE).exists():
        dim = (corpus or read_corpus(request.db_path if db is None else db)).dim
        published = publish_base(request, dim, run_cfg, run_id=run_id)
        return StoreTraining(run_id, skipped, published, len(samples))
    if len(samples) < 2:
        raise TooLittleData(
            f"{request.db_path}: {len(samples)} trainable sessions (confidence >= "
            f"{request.min_confidence}, candidates with labels); {skipped} skipped — "
            "need at least 2"
        )
    base, through = None, None
    if request.base_weights is not None:
        base, through = _base_model(request.base_weights, int(samples[0].context.shape[0]))
    plan = plan_training(samples, through, request, run_cfg)
    done = train_and_publish(plan, base, request, run_id=run_id, history=samples, progress=progress)
    return StoreTraining(run_id, skipped, done, len(samples))
