"""Signet's `train` method as the library runs it for the sidecar: one listwise Adam step on a
model's weights for one session's labelled candidates (`signet-bench train-step`).

The sidecar checks the request and writes the session as arrays (the exported graph's inputs,
`labels` and `temperature`) to an .npz file; this step reads the weights (any model format),
continues the optimizer state a previous step left (fresh Adam on the first), and writes the
new weights (`model.sbm`, float64), the optimizer state (`adam.npz`) and the graph the sidecar
swaps in (`model.onnx`) into a folder of their own, each atomically. A non-finite loss changes
nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from signet_bench.errors import UserError
from signet_bench.learn.export import load_model_file, write_model_file
from signet_bench.learn.model.checkpoint import CheckpointMeta, save_checkpoint
from signet_bench.learn.model.optim import Adam
from signet_bench.learn.model.scorer import (
    Batch,
    SessionArrays,
    batch_from_sessions,
    loss_and_grads,
)
from signet_scorer import contract as c
from signet_scorer.atomic import atomic_write
from signet_scorer.workbench import CHECKPOINT_FILE, SERVED_MODEL_FILE

__all__ = ["STATE_FILE", "StepResult", "step_batch", "train_step"]

STATE_FILE = "adam.npz"


@dataclass(frozen=True, slots=True)
class StepResult:
    """One step: its loss and the optimizer's step count after it."""

    loss: float
    steps: int


def _read_inputs(path: Path) -> dict[str, np.ndarray]:
    """The session arrays the sidecar wrote; a missing one is named."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a step's inputs ({exc})") from None
    missing = [k for k in (*c.GRAPH_INPUTS, "labels", "temperature") if k not in arrays]
    if missing:
        raise UserError(f"{path}: the step's inputs lack {missing}")
    return arrays


def step_batch(x: Mapping[str, np.ndarray]) -> Batch:
    """The one-session batch of a step's arrays (graph inputs, labels, temperature)."""
    tokens = [row[m > 0] for row, m in zip(x["token_buckets"], x["token_mask"], strict=True)]
    session = SessionArrays(
        x["context_embedding"],
        x["candidate_embeddings"],
        x["has_embedding"],
        tokens,
        x["candidate_features"],
        int(x["project_slot"][0]),
        labels=x["labels"],
    )
    return batch_from_sessions([session], temperature=x["temperature"])


def _load_state(opt: Adam, state_dir: Path, meta: CheckpointMeta) -> CheckpointMeta:
    """Continue the optimizer state of a previous step; the meta of the model it started from."""
    path = state_dir / STATE_FILE
    try:
        with np.load(path, allow_pickle=False) as z:
            m = {k[2:]: z[k] for k in z.files if k.startswith("m.")}
            v = {k[2:]: z[k] for k in z.files if k.startswith("v.")}
            t, source = int(z["t"]), str(z["source_format"])
    except (OSError, ValueError, KeyError) as exc:
        raise UserError(f"{path}: not a step's optimizer state ({exc})") from None
    if m.keys() != opt.m.keys():
        raise UserError(f"{path}: the optimizer state does not fit the model's parameters")
    opt.load_state_dict({"t": t, "m": m, "v": v})
    return meta.replace(source_format=source)


def _save_state(opt: Adam, path: Path, meta: CheckpointMeta) -> None:
    state = opt.state_dict()
    arrays = {f"m.{k}": a for k, a in state["m"].items()} | {
        f"v.{k}": a for k, a in state["v"].items()
    }
    arrays |= {"t": np.array(state["t"]), "source_format": np.array(meta.source_format)}
    atomic_write(path, lambda f: np.savez(f, **arrays))


def train_step(
    model: str | Path, inputs: str | Path, out_dir: str | Path, state: str | Path | None = None
) -> StepResult:
    """One step on the weights of `model` for the session in `inputs`, continuing the
    optimizer state in the folder `state` (None: a fresh optimizer); the results go to
    `out_dir` (see the module doc). Raises UserError when the loss is not finite."""
    params, meta, _ = load_model_file(model)
    cfg = meta.config()
    opt = Adam(params, cfg)
    if state is not None:
        meta = _load_state(opt, Path(state), meta)
    loss, grads = loss_and_grads(params, step_batch(_read_inputs(Path(inputs))), cfg)
    if not math.isfinite(loss):
        raise UserError("the step's loss is not finite; the weights were not changed")
    opt.step(params, grads)
    out = Path(out_dir)
    save_checkpoint(out / CHECKPOINT_FILE, params, meta)
    _save_state(opt, out / STATE_FILE, meta)
    write_model_file(out / SERVED_MODEL_FILE, params, meta, fmt="onnx")
    return StepResult(float(loss), opt.t)
