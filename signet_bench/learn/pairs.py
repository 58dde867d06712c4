"""Anonymized training pairs and the base model trained on them (docs/specification.md §6.3: load
base weights, then fine-tune on the user's data).

**Export.** `pair_frame` turns training samples into one row per labelled candidate holding
only numbers: the 17 features (`f_<name>`), the label, `similarity` (cosine of the candidate's
embedding with the session context: a number, the pre-filter's own relevance signal), the
candidate's signals (`s_<name>`, numbers computed from the pool by `signet_scorer.signals`, 0
where a sample has none), the candidate's baseline rank and the session's candidate count (the
addendum's "structural metadata" and "session-level aggregate stats"). No memory text, session key, memory id, project name,
path or timestamp is written. `session` groups a session's rows: a number local to the file,
assigned after a shuffle drawn from the operating system's entropy, so it joins back to
nothing (two exports of one store number their sessions differently), and a session's
candidates are shuffled too. `export_pairs` reads a store's sessions through `load_samples`,
the trainer's own path.

**Base model.** What carries across users without content is how features, similarity and
the signals relate to usefulness, so the base is a listwise linear scorer over [similarity,
features, signals] (`INPUT_COLUMNS`, its weights by column name),
trained with the specification's loss (`model.loss.listwise_loss`, its temperature rule) and Adam.
`train_base` streams any number of Parquet files: per file a Polars lazy scan read in slices of
`chunk_rows` rows (plus the one session a slice cuts), so memory stays bounded whatever the
number or size of the files. `base_params` writes the weights into the cross-attention
scorer: the feature weights into the gate, the signal weights into `signal_weights`, the
similarity weight into the scorer's exact cosine term (`cosine_weight`; a scorer without it gets it through the attention term: with
identity query/key projections that logit is sqrt(d)·ρ, ρ the correlation of the projected
context and memory, so `q_proj = w_sim / sqrt(d) · I` gives `w_sim·ρ`), both times
`base_scale`, the value term of the gate set to 0 (the linear model has none); everything else
keeps the fresh initialisation. Fine-tuning is the ordinary `train_model` starting from those
weights.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.errors import UserError
from signet_bench.learn.model.checkpoint import CheckpointMeta, save_checkpoint
from signet_bench.learn.model.loss import listwise_loss, temperatures
from signet_bench.learn.model.optim import Adam
from signet_bench.learn.model.params import COSINE_WEIGHT_INIT, init_params
from signet_bench.learn.samples import SessionSample, load_samples
from signet_scorer.contract import FEATURE_NAMES, FEATURE_SPEC, SIGNAL_NAMES, feature_spec_hash
from signet_scorer.workbench import CHECKPOINT_FILE

__all__ = [
    "INPUT_COLUMNS",
    "PAIR_COLUMNS",
    "BaseModel",
    "base_params",
    "base_scale",
    "export_pairs",
    "pair_frame",
    "read_pair_sessions",
    "save_base",
    "train_base",
    "write_pairs",
]

FEATURE_COLUMNS = tuple(f"f_{n}" for n in FEATURE_NAMES)
SIGNAL_COLUMNS = tuple(f"s_{n}" for n in SIGNAL_NAMES)
INPUT_COLUMNS = ("similarity", *FEATURE_COLUMNS, *SIGNAL_COLUMNS)
PAIR_COLUMNS = ("session", "candidate_count", "baseline_rank", "label", *INPUT_COLUMNS)
ROW_GROUP = 8192
# a linear model of 24 weights: fifty times the scorer's rate, 30 epochs (LoCoMo's earlier
# questions, leave one conversation out: 10 epochs at 0.01 stopped short, 0.05 × 30 converged)
BASE_LEARNING_RATE = 0.05
BASE_EPOCHS = 30


def _similarity(s: SessionSample) -> np.ndarray:
    """cosine(context, candidate) of the embedded candidates, 0 on the text path."""
    emb = np.asarray(s.cand_emb, dtype=np.float64)
    norms = np.linalg.norm(emb, axis=1) * float(np.linalg.norm(s.context))
    cos = np.divide(emb @ s.context, norms, out=np.zeros(len(s)), where=norms > 0)
    return np.where(s.has_emb, cos, 0.0)


def pair_frame(samples: Sequence[SessionSample], rng: np.random.Generator | None = None):
    """One row per labelled candidate of `samples`, numbers only (`PAIR_COLUMNS`), sessions
    numbered in a random order and their candidates shuffled; `rng` defaults to one seeded from
    the operating system (a fixed `rng` is for tests)."""
    rng = rng or np.random.default_rng(secrets.randbits(128))
    parts = []
    for number, i in enumerate(rng.permutation(len(samples)).tolist()):
        s = samples[i]
        perm = rng.permutation(len(s))
        cols = {
            "session": np.full(len(s), number, dtype=np.int64),
            "candidate_count": np.full(len(s), len(s), dtype=np.int32),
            "baseline_rank": np.asarray(s.baseline_rank, dtype=np.int32)[perm],
            "label": np.asarray(s.labels, dtype=np.float64)[perm],
            "similarity": _similarity(s)[perm],
        }
        feats = np.asarray(s.features, dtype=np.float64)[perm]
        cols |= {c: feats[:, j] for j, c in enumerate(FEATURE_COLUMNS)}
        sig = np.zeros((len(s), len(SIGNAL_NAMES))) if s.signals is None else s.signals
        sig = np.asarray(sig, dtype=np.float64)[perm]
        cols |= {c: sig[:, j] for j, c in enumerate(SIGNAL_COLUMNS)}
        parts.append(pl.DataFrame(cols))
    if not parts:
        return pl.DataFrame(schema={c: pl.Float64 for c in PAIR_COLUMNS})
    return pl.concat(parts).select(PAIR_COLUMNS)


def write_pairs(frame: pl.DataFrame, out: str | Path) -> Path:
    """The pairs as Parquet, sessions contiguous (the base trainer's slices rely on it)."""
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    frame.sort("session", maintain_order=True).write_parquet(p, row_group_size=ROW_GROUP)
    return p


def export_pairs(
    db: str | Path, out: str | Path, *, tz: str = "UTC", cfg: PredictorConfig = DEFAULT_CONFIG
) -> int:
    """Write a store's training pairs (its trainable sessions) to `out`; the number of rows."""
    samples, _ = load_samples(db, tz=tz, cfg=cfg)
    frame = pair_frame(samples)
    write_pairs(frame, out)
    return frame.height


def _session_arrays(frame: pl.DataFrame) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(inputs (n, len(INPUT_COLUMNS)), labels (n,)) per session of a frame holding whole sessions."""
    for _, g in frame.group_by("session", maintain_order=True):
        yield g.select(INPUT_COLUMNS).to_numpy().astype(np.float64), g["label"].to_numpy()


def read_pair_sessions(
    paths: Sequence[str | Path], *, chunk_rows: int = 65_536
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every session of the Parquet files, streamed: each file is read through a lazy scan in
    slices of `chunk_rows` rows; the last session of a slice waits for the next slice."""
    for path in paths:
        scan = pl.scan_parquet(path)
        missing = set(PAIR_COLUMNS) - set(scan.collect_schema().names())
        if missing:
            raise UserError(f"{path}: not a pair export (no column {', '.join(sorted(missing))})")
        n = scan.select(pl.len()).collect().item()
        carry: pl.DataFrame | None = None
        for start in range(0, n, chunk_rows):
            part = scan.slice(start, chunk_rows).collect()
            part = part if carry is None else pl.concat([carry, part])
            last = part["session"][-1]
            done = part.filter(pl.col("session") != last) if start + chunk_rows < n else part
            carry = part.filter(pl.col("session") == last) if start + chunk_rows < n else None
            yield from _session_arrays(done)


@dataclass(frozen=True, slots=True)
class BaseModel:
    """The listwise linear scorer over [similarity, features, signals] and how it was trained;
    `columns` names each weight (`INPUT_COLUMNS`; a column it lacks weighs 0)."""

    weights: np.ndarray  # (len(columns),)
    sessions: int  # sessions seen per epoch
    loss_curve: tuple[float, ...]
    columns: tuple[str, ...] = INPUT_COLUMNS

    def __post_init__(self) -> None:
        if np.shape(self.weights) != (len(self.columns),):
            raise ValueError(
                f"a base model needs one weight per column ({len(self.columns)}), "
                f"got shape {np.shape(self.weights)}"
            )

    def weight(self, column: str) -> float:
        """The weight of a column by name (0 for one the model was trained without)."""
        return float(self.weights[self.columns.index(column)]) if column in self.columns else 0.0

    @property
    def similarity_weight(self) -> float:
        return self.weight("similarity")

    @property
    def feature_weights(self) -> np.ndarray:
        return np.array([self.weight(c) for c in FEATURE_COLUMNS])

    @property
    def signal_weights(self) -> np.ndarray:
        """(N_SIGNALS,) in `SIGNAL_NAMES` order."""
        return np.array([self.weight(c) for c in SIGNAL_COLUMNS])


def _padded(batch: list[tuple[np.ndarray, np.ndarray]]):
    """(inputs (B, N, len(INPUT_COLUMNS)), labels (B, N), mask (B, N)) of a list of sessions."""
    width = max(len(y) for _, y in batch)
    x = np.zeros((len(batch), width, len(INPUT_COLUMNS)))
    y = np.zeros((len(batch), width))
    mask = np.zeros((len(batch), width), dtype=bool)
    for b, (xi, yi) in enumerate(batch):
        x[b, : len(yi)], y[b, : len(yi)], mask[b, : len(yi)] = xi, yi, True
    return x, y, mask


def _step(params: dict[str, np.ndarray], opt: Adam, batch, cfg: PredictorConfig) -> float:
    """One Adam step of the linear scorer on a batch of sessions; the batch loss."""
    x, y, mask = _padded(batch)
    logits = np.where(mask, x @ params["w"], 0.0)
    loss, grad = listwise_loss(logits, y, mask, temperatures(y, mask, cfg))
    opt.step(params, {"w": np.einsum("bn,bnf->f", grad, x)})
    return loss


def train_base(
    paths: Sequence[str | Path],
    *,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    learning_rate: float = BASE_LEARNING_RATE,
    epochs: int = BASE_EPOCHS,
    batch_sessions: int = 64,
    chunk_rows: int = 65_536,
    seed: int = 0,
) -> BaseModel:
    """Train the base scorer on pair exports, streamed (files in a seeded random order each
    epoch, sessions in batches of `batch_sessions`); starts from similarity weight 1."""
    if not paths:
        raise UserError("no pair files to train the base model on")
    rng = np.random.default_rng(seed)
    params = {"w": np.zeros(len(INPUT_COLUMNS))}
    params["w"][0] = 1.0
    opt = Adam(params, cfg.replace(learning_rate=learning_rate))
    curve, sessions = [], 0
    for _ in range(epochs):
        losses, batch, sessions = [], [], 0
        order = [paths[i] for i in rng.permutation(len(paths))]
        for session in read_pair_sessions(order, chunk_rows=chunk_rows):
            if len(session[1]) < 2:
                continue
            batch.append(session)
            sessions += 1
            if len(batch) == batch_sessions:
                losses.append(_step(params, opt, batch, cfg))
                batch = []
        if batch:
            losses.append(_step(params, opt, batch, cfg))
        curve.append(float(np.mean(losses)) if losses else float("nan"))
    if sessions == 0:
        raise UserError(f"no sessions with two or more candidates in {len(paths)} pair files")
    return BaseModel(params["w"].copy(), sessions, tuple(curve))


def base_scale(base: BaseModel) -> float:
    """The factor on the base's weights in the scorer: enough to lift a positive similarity
    weight to the fresh scorer's `COSINE_WEIGHT_INIT` (never below 1). A positive factor on every
    logit keeps the base's ranking; without it the zero-initialised attention terms overturn
    that ranking in the first fine-tuning steps (LoCoMo, wordllama, base weight 0.66: fine-tuning
    on a user's earlier questions lowered held-out recall@10 from 55.0 to 48.8; scaled, 55.2)."""
    w = base.similarity_weight
    return max(1.0, COSINE_WEIGHT_INIT / w) if w > 0 else 1.0


def base_params(
    base: BaseModel, native_dim: int, cfg: PredictorConfig = DEFAULT_CONFIG
) -> dict[str, np.ndarray]:
    """The scorer's weights carrying the base model (see the module docstring)."""
    params = init_params(cfg, native_dim)
    scale = base_scale(base)
    if "cosine_weight" in params:  # the scorer's exact cosine(context, memory) term
        params["cosine_weight"] = np.array([scale * base.similarity_weight])
        params["signal_weights"] = scale * base.signal_weights
    else:
        d = cfg.internal_dim
        params["q_proj"] = np.eye(d) * (scale * base.similarity_weight / math.sqrt(d))
    gate = params["gate_proj"].reshape(-1).copy()
    v, f = cfg.value_dim, cfg.extra_features
    gate[:v] = 0.0
    gate[v : v + f] = scale * base.feature_weights
    params["gate_proj"] = gate.reshape(params["gate_proj"].shape)
    return params


def save_base(
    base: BaseModel, out_dir: str | Path, native_dim: int, cfg: PredictorConfig = DEFAULT_CONFIG
) -> Path:
    """The base as `out_dir/model.sbm`, flagged a pretrained base (docs/specification.md §6.3)."""
    meta = CheckpointMeta.from_config(
        cfg,
        native_dim,
        feature_spec_hash=feature_spec_hash(FEATURE_SPEC),
        metrics={"final_loss": base.loss_curve[-1], "sessions": float(base.sessions)},
        is_pretrained_base=True,
    )
    path = Path(out_dir) / CHECKPOINT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(path, base_params(base, native_dim, cfg), meta)
    return path
