"""Training for the sidecar: `train_from_db` turns Signet's parameters into one
`TrainingRequest` and hands it to the library's trainer in a child process (the store is only
read; the server keeps answering from the old model); Signet's one-step `train` method and the
model files the server reads and writes.

Everything that needs the library (training, the `train` step, conversion between model
formats for `save_checkpoint` and for loading a checkpoint) runs as a child process through
`signet_scorer.library`; the server itself never imports `signet_bench`.

Files: the served path (`--model`, or Signet's `--checkpoint`) is loaded at start. Trained models
are kept in the *store path*: the served path itself when it is an ONNX file or a workbench
checkpoint, and `<stem>.onnx` beside it when it is Signet's SGPT `model.bin` (whose format has no
place for the layer-norm affines and query terms, and which Signet's own sidecar must still be
able to read). At start the store path wins when it is at least as new as the served file. Every
write is atomic (temp file, fsync, rename), and a failed, rejected or killed training writes
nothing the server reads.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from signet_scorer import jsonio
from signet_scorer import request as r
from signet_scorer.atomic import atomic_write, atomic_write_bytes
from signet_scorer.library import (
    PidSink,
    TrainerError,
    TrainerOptions,
    convert,
    failure,
    run_library,
)
from signet_scorer.request import SIDECAR_OWNED, RequestError, TrainingRequest
from signet_scorer.scorer import ModelInfo, ParamError, Refused, model_kind, parse_score_params
from signet_scorer.workbench import CHECKPOINT_FILE, SERVED_MODEL_FILE

__all__ = [
    "SIGNET_EPOCHS",
    "ModelFiles",
    "TrainerOutcome",
    "copy_atomic",
    "parse_train_from_db",
    "read_summary",
    "run_trainer",
    "step_inputs",
    "target_format",
    "write_step_inputs",
]

# --- files --------------------------------------------------------------------------------------


def target_format(path: str | Path) -> str:
    """The format a path asks for: "sgpt" (SGPT magic, or a new `.bin`), "signet-bench" (zip
    magic, or a new file of another suffix) or "onnx" (`.onnx`)."""
    p = Path(path)
    if p.is_file() and p.stat().st_size >= 4:
        kind = model_kind(p)
        if kind != "onnx" or p.suffix == ".onnx":
            return kind
    return r.format_for_suffix(p)


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """The served path and the store path where trained models are kept (see module doc)."""

    served: Path
    store: Path

    @classmethod
    def for_path(cls, path: str | Path) -> ModelFiles:
        served = Path(path)
        if served.is_dir():
            served = served / CHECKPOINT_FILE
        store = served.with_suffix(".onnx") if target_format(served) == "sgpt" else served
        return cls(served, store)

    def load_path(self) -> Path:
        """The file to load at start: the store path when it is at least as new as the served
        file (or the served file is missing), else the served file."""
        if self.store != self.served and self.store.is_file():
            if not self.served.exists():
                return self.store
            if self.store.stat().st_mtime >= self.served.stat().st_mtime:
                return self.store
        return self.served


def copy_atomic(src: Path, dst: Path) -> Path:
    """Copy `src` over `dst` atomically."""
    with src.open("rb") as f:
        return atomic_write(dst, lambda out: shutil.copyfileobj(f, out))


# --- train_from_db ------------------------------------------------------------------------------

SIGNET_EPOCHS = 3  # Signet's train_from_db default


def _path_param(params: Mapping[str, Any], name: str, *, must_exist: bool) -> Path | None:
    v = params.get(name)
    if v is None and not must_exist:
        return None
    if not isinstance(v, str) or not v or "\x00" in v:
        raise ParamError(name, "must be a file path (a non-empty string)")
    p = Path(v).expanduser()
    if must_exist and not p.is_file():  # Signet's loader fails to open it: -32000
        raise Refused(f"data load error: {name}: {p}: no such file")
    if not must_exist and not p.parent.is_dir():
        raise ParamError(name, f"{p.parent}: no such directory")
    return p


def parse_train_from_db(params: Mapping[str, Any], *, tz: str | None = None) -> TrainingRequest:
    """The training request of `train_from_db` parameters: Signet's names and defaults
    (`db_path`, `checkpoint_path`, `limit`, `epochs` 3, `temperature`, `min_confidence`), and
    any other request field (an `incremental` run defaults to the specification's fine-tuning
    epochs and learning-rate scale); other keys are ignored, as Signet does. `tz` is the zone
    when the request names none. ParamError names a bad field; Refused is what Signet's
    `train_from_db` refuses (a temperature not above 0, a store it cannot open). The sidecar
    fills `out_dir` and `base_weights` when it runs the request."""
    for name in SIDECAR_OWNED:
        if params.get(name) is not None:
            raise ParamError(name, "is chosen by the sidecar (its work folder, the served model)")
    temp = params.get("temperature")
    if isinstance(temp, int | float) and not isinstance(temp, bool) and not temp > 0:
        raise Refused("temperature must be > 0")  # Signet's check, before any other
    fields = {f.name for f in dataclasses.fields(TrainingRequest)} - set(SIDECAR_OWNED)
    given = {k: v for k, v in params.items() if k in fields and v is not None}
    db = _path_param(params, "db_path", must_exist=True)
    ckpt = _path_param(params, "checkpoint_path", must_exist=False)
    incremental = given.get("mode") == "incremental"
    defaults = {
        "epochs": r.INCREMENTAL_EPOCHS if incremental else SIGNET_EPOCHS,
        "lr_scale": r.INCREMENTAL_LR_SCALE if incremental else 1.0,
        "tz": tz,
    }
    if ckpt is not None:
        given.setdefault("checkpoint_format", target_format(ckpt))
    try:
        return TrainingRequest.from_dict(
            {**defaults, **given, "db_path": db, "checkpoint_path": ckpt}
        )
    except RequestError as exc:
        raise ParamError(exc.field, exc.message) from None


@dataclass(slots=True)
class TrainerOutcome:
    """A finished trainer run: accepted or rejected by the gates, with its summary."""

    accepted: bool
    summary: dict[str, Any]
    model_sbm: Path | None = None
    model_onnx: Path | None = None
    stderr_tail: list[str] = field(default_factory=list)


SUMMARY_FILE = "summary.json"  # the trainer's figures (`signet-bench train --summary`)
_SUMMARY_FIELDS = (
    "loss",
    "step",
    "samples_used",
    "samples_skipped",
    "duration_ms",
    "canary_score_variance",
    "canary_topk_stability",
    "gate_reason",
)


def read_summary(path: Path) -> dict[str, Any]:
    """The trainer's figures as Signet's `train_from_db` result fields (absent ones null;
    `checkpoint_saved` false unless the checkpoint was written); all null when the trainer
    wrote none (it failed before the end)."""
    out: dict[str, Any] = dict.fromkeys(_SUMMARY_FIELDS)
    out["checkpoint_saved"] = False
    try:
        written = jsonio.loads(path.read_bytes())
    except (OSError, *jsonio.DecodeError):
        return out
    fields = jsonio.json_object(written)
    if fields is not None:
        out.update(fields)
    return out


REQUEST_FILE = "request.json"


def run_trainer(
    req: TrainingRequest, opts: TrainerOptions, on_pid: PidSink = lambda pid: None
) -> TrainerOutcome:
    """The library's trainer on `req` (written to `out_dir/request.json`, run as `signet-bench
    train --request FILE`), then (if the gates pass) the export of its model to
    `out_dir/model.onnx`. Exit 1 of the trainer is a gate rejection; any other failure raises
    TrainerError."""
    if req.out_dir is None:
        raise TrainerError("the training request has no out_dir")
    workdir = req.out_dir
    request_file = atomic_write_bytes(workdir / REQUEST_FILE, req.to_json().encode())
    summary_file = workdir / SUMMARY_FILE
    args = ["train", "--request", str(request_file), "--summary", str(summary_file)]
    if opts.config:
        args += ["--config", opts.config]
    done = run_library([*args, *opts.extra_args], "the trainer", opts, on_pid)
    summary = read_summary(summary_file)
    if done.returncode == 1 and summary["gate_reason"] is not None:  # the gates refused
        return TrainerOutcome(False, summary)
    if done.returncode != 0:
        raise failure("the trainer", done)
    sbm = workdir / CHECKPOINT_FILE
    onnx = convert(sbm, workdir / SERVED_MODEL_FILE, "onnx", opts, on_pid=on_pid)
    return TrainerOutcome(True, summary, sbm, onnx)


# --- the `train` method: one step on the served weights ----------------------------------------


def _signet_train_checks(params: Mapping[str, Any], info: ModelInfo) -> None:
    """What Signet's `train` refuses before it steps, in its order, with its messages: a
    `candidate_embeddings` and `labels` of different lengths, a temperature not above 0, then
    the sample's context dimension, feature row count and feature width."""
    rows, labels = params["candidate_embeddings"], params["labels"]
    if len(rows) != len(labels):
        raise Refused("candidate_embeddings and labels length mismatch")
    temp = params.get("temperature")
    if isinstance(temp, int | float) and not isinstance(temp, bool) and not temp > 0:
        raise Refused("temperature must be > 0")
    if not labels:
        return
    context = jsonio.json_list(params.get("context_embedding"))
    features = jsonio.json_list(params.get("candidate_features"))
    problem = None
    if context is not None and len(context) != info.native_dim:
        problem = "query dim mismatch"
    elif features and len(features) != len(rows):
        problem = f"has {len(rows)} candidate embeddings but {len(features)} feature rows"
    elif features is not None and any(
        len(row) != info.n_features for row in map(jsonio.json_list, features) if row is not None
    ):
        problem = "contains invalid feature dimension"
    if problem is not None:
        raise Refused(f'train error: InvalidSample("sample rpc-train {problem}")')


def step_inputs(params: Mapping[str, Any], info: ModelInfo) -> dict[str, np.ndarray]:
    """Signet's `train` parameters, checked against the served model, as the arrays of the
    library's `train-step` (the graph's inputs, `labels` and `temperature`). ParamError names
    a bad field; Refused is what Signet's `train` refuses, with its message."""
    labels = jsonio.json_list(params.get("labels"))
    if labels is None:
        raise ParamError("labels", "is required: an array of numbers")
    if not isinstance(params.get("candidate_embeddings"), list):
        raise ParamError("candidate_embeddings", "is required: an array of embeddings")
    _signet_train_checks(params, info)
    if not labels:
        raise ParamError("labels", "is required: a non-empty array of numbers")
    n = len(labels)
    req = parse_score_params({**params, "candidate_ids": [str(i) for i in range(n)]}, info)
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in labels)
    lab = np.asarray(labels, dtype=np.float64) if numbers else None
    if lab is None or not np.isfinite(lab).all():
        raise ParamError("labels", "must be finite numbers")
    temp = params.get("temperature")
    try:
        temp = r.LOSS_TEMPERATURE if temp is None else r.check_number("temperature", temp)
    except RequestError as exc:
        raise ParamError(exc.field, exc.message) from None
    return {**req.inputs, "labels": lab, "temperature": np.array([temp], dtype=np.float64)}


def write_step_inputs(path: Path, arrays: Mapping[str, np.ndarray]) -> Path:
    """The step's arrays as one .npz file (written atomically)."""

    def write(f: BinaryIO) -> None:
        # numpy's stub reads **arrays as if it could hold savez's own `allow_pickle: bool`
        np.savez(f, **arrays)  # pyright: ignore[reportArgumentType]

    return atomic_write(path, write)
