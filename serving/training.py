"""Training for the sidecar: `train_from_db` runs the project's trainer and exporter as child
processes (the store is only read; the server keeps answering from the old model), and the
model files the server reads and writes.

Files: the served path (`--model`, or Signet's `--checkpoint`) is loaded at start. Trained models
are kept in the *store path*: the served path itself when it is an ONNX file or a workbench
checkpoint, and `<stem>.onnx` beside it when it is Signet's SGPT `model.bin` (whose format has no
place for the layer-norm affines and query terms, and which Signet's own sidecar must still be
able to read). At start the store path wins when it is at least as new as the served file. Every
write is atomic (temp file, fsync, rename), and a failed, rejected or killed training writes
nothing the server reads.

Conversions to and from checkpoints (`save_checkpoint`, base weights, the `train` step) import
`signet_bench`; serving a model does not.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from serving.atomic import atomic_write
from serving.scorer import ModelInfo, ParamError, model_kind, parse_score_params

__all__ = [
    "ModelFiles",
    "StepTrainer",
    "TrainFromDb",
    "TrainerError",
    "TrainerOptions",
    "copy_atomic",
    "parse_summary",
    "parse_train_from_db",
    "run_trainer",
    "target_format",
    "write_model",
]


class TrainerError(RuntimeError):
    """A training run that failed (not a gate rejection); the served model is unchanged."""


# --- files --------------------------------------------------------------------------------------


def target_format(path: str | Path) -> str:
    """The format a path asks for: "sgpt" (SGPT magic, or a new `.bin`), "signet-bench" (zip
    magic, or a new file of another suffix) or "onnx" (`.onnx`)."""
    p = Path(path)
    if p.is_file() and p.stat().st_size >= 4:
        kind = model_kind(p)
        if kind != "onnx" or p.suffix == ".onnx":
            return kind
    if p.suffix == ".bin":
        return "sgpt"
    return "onnx" if p.suffix == ".onnx" else "signet-bench"


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """The served path and the store path where trained models are kept (see module doc)."""

    served: Path
    store: Path

    @classmethod
    def for_path(cls, path: str | Path) -> ModelFiles:
        served = Path(path)
        if served.is_dir():
            served = served / "model.sbm"
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


def write_model(params: Mapping[str, np.ndarray], meta: Any, path: Path, flags: int = 0) -> Path:
    """Write weights in the format `path` asks for (ONNX, SGPT or the workbench checkpoint)."""
    from signet_bench.learn.export import model_bytes
    from signet_bench.learn.model.checkpoint import save_checkpoint, write_sgpt

    fmt = target_format(path)
    if fmt == "onnx":
        atomic_write(path, lambda f: f.write(model_bytes(params, meta)))
    elif fmt == "sgpt":
        write_sgpt(path, params, flags=flags)
    else:
        save_checkpoint(path, params, meta)
    return path


def load_params(path: Path) -> tuple[dict[str, np.ndarray], Any]:
    """Float64 weights and meta of any model file (through signet_bench.learn.export)."""
    from signet_bench.learn.export import load_model_file

    params, meta, _ = load_model_file(path)
    return params, meta


# --- train_from_db ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TrainFromDb:
    """Validated `train_from_db` parameters (Signet's names and defaults)."""

    db_path: Path
    checkpoint_path: Path | None = None
    limit: int = 5000
    epochs: int = 3
    temperature: float = 0.5
    min_confidence: float = 0.6
    # Extras of this sidecar (Signet's daemon never sends them): the loop's training policy.
    seed: int | None = None
    sample_seed: int | None = None
    incremental: bool = False
    fresh: bool = False
    protect: bool | None = None


def _bool_param(params: Mapping[str, Any], name: str, default: bool | None) -> bool | None:
    v = params.get(name, default)
    if v is not None and not isinstance(v, bool):
        raise ParamError(name, f"must be true or false, got {v!r:.40}")
    return v


def _int_param(params: Mapping[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    v = params.get(name, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ParamError(name, f"must be a whole number in [{lo}, {hi}], got {v!r:.40}")
    return v


def _float_param(params: Mapping[str, Any], name: str, default: float, lo: float, hi: float):
    v = params.get(name, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ParamError(name, f"must be a finite number, got {v!r:.40}")
    if not lo <= v <= hi:
        raise ParamError(name, f"{v} is outside [{lo}, {hi}]")
    return float(v)


def _path_param(params: Mapping[str, Any], name: str, *, must_exist: bool) -> Path | None:
    v = params.get(name)
    if v is None and not must_exist:
        return None
    if not isinstance(v, str) or not v or "\x00" in v:
        raise ParamError(name, "must be a file path (a non-empty string)")
    p = Path(v).expanduser()
    if must_exist and not p.is_file():
        raise ParamError(name, f"{p}: no such file")
    if not must_exist and not p.parent.is_dir():
        raise ParamError(name, f"{p.parent}: no such directory")
    return p


def parse_train_from_db(params: Mapping[str, Any]) -> TrainFromDb:
    """Validate `train_from_db` parameters; ParamError names the bad field."""
    return TrainFromDb(
        db_path=_path_param(params, "db_path", must_exist=True),  # type: ignore[arg-type]
        checkpoint_path=_path_param(params, "checkpoint_path", must_exist=False),
        limit=_int_param(params, "limit", 5000, 1, 1_000_000),
        epochs=_int_param(params, "epochs", 3, 1, 10_000),
        temperature=_float_param(params, "temperature", 0.5, 1e-6, 1e6),
        min_confidence=_float_param(params, "min_confidence", 0.6, 0.0, 1.0),
        seed=_optional_int(params, "seed"),
        sample_seed=_optional_int(params, "sample_seed"),
        incremental=bool(_bool_param(params, "incremental", False)),
        fresh=bool(_bool_param(params, "fresh", False)),
        protect=_bool_param(params, "protect", None),
    )


def _optional_int(params: Mapping[str, Any], name: str) -> int | None:
    return None if params.get(name) is None else _int_param(params, name, 0, 0, 2**31 - 1)


@dataclass(frozen=True, slots=True)
class TrainerOptions:
    """How the server runs the trainer: interpreter, the user's time zone and predictor
    config, extra `train` arguments, and a wall-clock cap after which the run is killed."""

    python: str = sys.executable
    tz: str | None = None
    config: str | None = None
    extra_args: tuple[str, ...] = ()
    timeout_s: float = 600.0


@dataclass(slots=True)
class TrainerOutcome:
    """A finished trainer run: accepted or rejected by the gates, with its summary."""

    accepted: bool
    summary: dict[str, Any]
    model_sbm: Path | None = None
    model_onnx: Path | None = None
    stderr_tail: list[str] = field(default_factory=list)


_SUMMARY = {
    "samples": re.compile(r"samples: (\d+) train \+ (\d+) canary \((\d+) sessions skipped\)"),
    "epochs": re.compile(r"epochs: (\d+) \((\d+) steps, (\d+) ms"),
    "loss": re.compile(r"loss per epoch: (.*)"),
    "canary": re.compile(r"score variance ([^,]+), top-5 overlap (\S+)"),
    "gates": re.compile(r"-> (accepted|REJECTED: (\S+))"),
}


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_summary(stdout: str) -> dict[str, Any]:
    """The `signet-bench train` summary as Signet's `train_from_db` result fields (absent
    figures are null)."""
    out: dict[str, Any] = dict.fromkeys(
        (
            "loss",
            "step",
            "samples_used",
            "samples_skipped",
            "duration_ms",
            "canary_score_variance",
            "canary_topk_stability",
            "gate_reason",
        ),
    )
    if m := _SUMMARY["samples"].search(stdout):
        out["samples_used"] = int(m[1]) + int(m[2])
        out["samples_skipped"] = int(m[3])
    if m := _SUMMARY["epochs"].search(stdout):
        out["step"], out["duration_ms"] = int(m[2]), int(m[3])
    if m := _SUMMARY["loss"].search(stdout):
        losses = [_number(x) for x in m[1].split(",") if x.strip()]
        out["loss"] = losses[-1] if losses else None
    if m := _SUMMARY["canary"].search(stdout):
        out["canary_score_variance"] = _number(m[1])
        out["canary_topk_stability"] = _number(m[2])
    if m := _SUMMARY["gates"].search(stdout):
        out["gate_reason"] = "passed" if m[1] == "accepted" else m[2]
    return out


def _run(
    cmd: Sequence[str], what: str, timeout_s: float, on_start: Callable[[int | None], None]
) -> subprocess.CompletedProcess:
    """Run a child with captured output at lower priority; report its pid while it runs."""
    proc = subprocess.Popen(
        list(cmd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    )
    on_start(proc.pid)
    try:
        os.setpriority(os.PRIO_PROCESS, proc.pid, 10)  # scoring keeps the CPU first
    except (AttributeError, OSError):
        pass
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise TrainerError(f"{what} ran longer than {timeout_s:.0f} s and was stopped") from None
    finally:
        on_start(None)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _failure(what: str, done: subprocess.CompletedProcess) -> TrainerError:
    if done.returncode < 0:
        return TrainerError(f"{what} was killed by signal {-done.returncode}")
    lines = [ln for ln in (done.stderr or "").splitlines() if ln.strip()]
    last = lines[-1] if lines else "no message"
    return TrainerError(f"{what} failed (exit {done.returncode}): {last[:500]}")


def run_trainer(
    req: TrainFromDb,
    workdir: Path,
    base: Path | None,
    opts: TrainerOptions,
    on_pid: Callable[[int | None], None] = lambda pid: None,
) -> TrainerOutcome:
    """`signet-bench train` on the store into `workdir`, then (if the gates pass) export of
    its model to `workdir/model.onnx`. Exit 1 of the trainer is a gate rejection; any other
    failure raises TrainerError."""
    if base is not None and target_format(base) == "onnx":
        base = _convert(base, workdir / "base.sbm", opts, on_pid)
    cmd = [
        opts.python,
        "-m",
        "signet_bench.cli",
        "train",
        "--db",
        str(req.db_path),
        "--out",
        str(workdir),
        "--epochs",
        str(req.epochs),
        "--limit",
        str(req.limit),
    ]
    if base is not None:
        cmd += ["--base-weights", str(base)]
    cmd += _policy_args(req)
    if opts.tz:
        cmd += ["--tz", opts.tz]
    if opts.config:
        cmd += ["--config", opts.config]
    cmd += list(opts.extra_args)
    done = _run(cmd, "the trainer", opts.timeout_s, on_pid)
    summary = parse_summary(done.stdout or "")
    if done.returncode == 1 and summary["gate_reason"] not in (None, "passed"):
        return TrainerOutcome(False, summary)
    if done.returncode != 0:
        raise _failure("the trainer", done)
    sbm = workdir / "model.sbm"
    return TrainerOutcome(True, summary, sbm, _convert(sbm, workdir / "model.onnx", opts, on_pid))


def _policy_args(req: TrainFromDb) -> list[str]:
    """The training-policy extras as `signet-bench train` flags."""
    out = [] if req.seed is None else ["--seed", str(req.seed)]
    out += [] if req.sample_seed is None else ["--sample-seed", str(req.sample_seed)]
    out += ["--incremental"] if req.incremental else []
    out += ["--fresh"] if req.fresh else []
    if req.protect is not None:
        out += ["--protect" if req.protect else "--no-protect"]
    return out


def _convert(
    src: Path, dst: Path, opts: TrainerOptions, on_pid: Callable[[int | None], None]
) -> Path:
    """`signet-bench export --model src --out dst` in a child (the suffix of dst picks the
    format), so the server never imports the exporter."""
    cmd = [opts.python, "-m", "signet_bench.cli", "export", "--model", str(src), "--out", str(dst)]
    done = _run(cmd, "the export", opts.timeout_s, on_pid)
    if done.returncode != 0:
        raise _failure("the export", done)
    return dst


# --- the `train` method: one step on the served weights ----------------------------------------


class StepTrainer:
    """Signet's `train` method: one listwise step (Adam) on the served model's weights, kept
    in float64 here; the caller swaps in the re-exported graph."""

    def __init__(self, params: dict[str, np.ndarray], meta: Any) -> None:
        from signet_bench.learn.model.optim import Adam

        self.params = params
        self.meta = meta
        self.cfg = meta.config()
        self.opt = Adam(params, self.cfg)
        self.steps = 0

    def step(self, params: Mapping[str, Any], info: ModelInfo) -> tuple[float, bytes]:
        """(loss, ONNX bytes of the updated model) for Signet's `train` parameters."""
        from signet_bench.learn.export import model_bytes
        from signet_bench.learn.model.scorer import batch_from_sessions, loss_and_grads

        labels = params.get("labels")
        if not isinstance(labels, list) or not labels:
            raise ParamError("labels", "is required: a non-empty array of numbers")
        n = len(labels)
        req = parse_score_params({**params, "candidate_ids": [str(i) for i in range(n)]}, info)
        lab = (
            np.asarray(labels, dtype=np.float64)
            if all(isinstance(x, int | float) and not isinstance(x, bool) for x in labels)
            else None
        )
        if lab is None or not np.isfinite(lab).all():
            raise ParamError("labels", "must be finite numbers")
        temp = _float_param(params, "temperature", 0.5, 1e-6, 1e6)
        x = req.inputs
        tokens = [row[m > 0] for row, m in zip(x["token_buckets"], x["token_mask"], strict=True)]
        batch = batch_from_sessions(
            [x["context_embedding"]],
            [x["candidate_embeddings"]],
            [x["has_embedding"]],
            [tokens],
            [x["candidate_features"]],
            [int(x["project_slot"][0])],
            labels=[lab],
            temperature=np.array([temp]),
        )
        loss, grads = loss_and_grads(self.params, batch, self.cfg)
        if not math.isfinite(loss):
            raise TrainerError("the step's loss is not finite; the weights were not changed")
        self.opt.step(self.params, grads)
        self.steps += 1
        return float(loss), model_bytes(self.params, self.meta)
