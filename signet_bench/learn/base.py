"""The shipped base model: the listwise linear scorer (`pairs.BaseModel`) whose weights ship in
the scorer distribution as `signet_scorer/base/predictor-base.json`, and from which every user's
scorer starts (docs/specification.md §6.3).

The file holds the weights by column name (`pairs.INPUT_COLUMNS`: similarity, `f_<feature>`,
`s_<signal>`), the feature-spec hash and signal names it was trained with, what it was trained
on and that data's licence. A column the file lacks weighs 0 (a signal added after it was
trained); a file of another feature spec is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.metrics import ndcg_at_k
from signet_bench.errors import UserError
from signet_bench.learn.pairs import (
    INPUT_COLUMNS,
    PAIR_COLUMNS,
    BaseModel,
    base_params,
    train_base,
)
from signet_bench.learn.serving import earned_alpha
from signet_scorer.contract import FEATURE_SPEC_HASH, SIGNAL_NAMES

__all__ = [
    "BASE_FORMAT",
    "SHIPPED_BASE",
    "UNEARNED_ALPHA",
    "base_alpha",
    "held_out_alpha",
    "read_base",
    "shipped_base",
    "shipped_base_alpha",
    "shipped_base_params",
    "shipped_document",
    "write_base",
]

BASE_FORMAT = "signet-predictor-base/1"
SHIPPED_BASE = "base/predictor-base.json"  # inside the signet_scorer package

# The baseline's RRF weight while a base serves is what the base earned on sessions it did not
# train on (`held_out_alpha`, written into the base file as its `alpha` record); a base file
# without that record has earned nothing: the baseline alone (docs/specification.md §3.4).
UNEARNED_ALPHA = 1.0
ALPHA_FOLDS = 5


def write_base(base: BaseModel, out: str | Path, provenance: Mapping[str, Any]) -> Path:
    """The base as JSON at `out`: weights by column, the feature-spec hash, the signal names and
    `provenance` (its `training` and `licence` objects)."""
    for key in ("training", "licence"):
        if key not in provenance:
            raise ValueError(f"a base file needs its {key!r}")
    doc = {
        "format": BASE_FORMAT,
        "feature_spec_hash": FEATURE_SPEC_HASH,
        "signal_names": list(SIGNAL_NAMES),
        "weights": {c: round(float(w), 8) for c, w in zip(base.columns, base.weights, strict=True)},
        "sessions": base.sessions,
        "loss_curve": [round(x, 8) for x in base.loss_curve],
        **provenance,
    }
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_base(path: str | Path) -> BaseModel:
    """A base file written by `write_base`; a clear error for anything else."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{p}: not a readable base file ({exc})") from None
    return _from_doc(doc, str(p))


def _from_doc(doc: Any, where: str) -> BaseModel:
    if not isinstance(doc, dict) or doc.get("format") != BASE_FORMAT:
        raise UserError(f"{where}: not a base file (format {BASE_FORMAT} expected)")
    if doc.get("feature_spec_hash") != FEATURE_SPEC_HASH:
        raise UserError(
            f"{where}: feature_spec_hash {doc.get('feature_spec_hash')!r} is not this "
            f"scorer's {FEATURE_SPEC_HASH}"
        )
    weights = doc.get("weights")
    if not isinstance(weights, dict) or "similarity" not in weights:
        raise UserError(f"{where}: field 'weights' must map column names to numbers")
    unknown = sorted(set(weights) - set(INPUT_COLUMNS))
    if unknown:
        raise UserError(f"{where}: field 'weights' has unknown columns {', '.join(unknown)}")
    try:
        values = np.array([float(weights.get(c, 0.0)) for c in INPUT_COLUMNS])
    except (TypeError, ValueError):
        raise UserError(f"{where}: field 'weights' must map column names to numbers") from None
    if not np.isfinite(values).all():
        raise UserError(f"{where}: field 'weights' holds a non-finite number")
    curve = tuple(float(x) for x in doc.get("loss_curve", []))
    return BaseModel(values, int(doc.get("sessions", 0)), curve, INPUT_COLUMNS)


def shipped_document() -> dict[str, Any]:
    """The shipped base file as parsed JSON (its training data and licence included)."""
    text = resources.files("signet_scorer").joinpath(SHIPPED_BASE).read_text(encoding="utf-8")
    return json.loads(text)


def shipped_base() -> BaseModel:
    """The base model shipped with the scorer (`signet_scorer/base/predictor-base.json`)."""
    return _from_doc(shipped_document(), f"signet_scorer/{SHIPPED_BASE}")


def shipped_base_params(
    native_dim: int, cfg: PredictorConfig = DEFAULT_CONFIG
) -> dict[str, np.ndarray]:
    """The scorer's weights carrying the shipped base (`pairs.base_params`)."""
    return base_params(shipped_base(), native_dim, cfg)


def base_alpha(doc: Mapping[str, Any]) -> float:
    """The baseline's RRF weight a base file's `alpha` record holds (`held_out_alpha`);
    `UNEARNED_ALPHA` for a file without one."""
    record = doc.get("alpha")
    value = record.get("value") if isinstance(record, Mapping) else None
    if not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        return UNEARNED_ALPHA
    return float(value)


def shipped_base_alpha() -> float:
    """The baseline's RRF weight while the shipped base serves: what it earned on held-out
    sessions of its training data (`base_alpha` of the shipped file)."""
    return base_alpha(shipped_document())


def _held_out_sessions(path: Path) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(inputs, labels, baseline rank) per session of one pair file (whole: a judged file)."""
    frame = pl.read_parquet(path, columns=list(PAIR_COLUMNS))
    return [
        (
            g.select(INPUT_COLUMNS).to_numpy().astype(np.float64),
            g["label"].to_numpy().astype(np.float64),
            g["baseline_rank"].to_numpy().astype(np.float64),
        )
        for _, g in frame.group_by("session", maintain_order=True)
    ]


def held_out_alpha(
    paths: Sequence[str | Path],
    *,
    folds: int = ALPHA_FOLDS,
    seed: int = 0,
    epochs: int | None = None,
) -> dict[str, Any]:
    """The baseline's RRF weight a base trained on `paths` earns where it did not train: the
    files split into `folds` groups (whole files: a user's or a conversation's sessions stay
    together), a base trained on the other groups ranks each group's sessions, and the weight
    is `serving.earned_alpha` of its per-session NDCG@10 against the baseline order's
    (`baseline_rank`), both on the pairs' own labels (the daemon's success rate, measured on
    other users); sessions without a positive label judge nothing and are left out. The
    record written into the base file as `alpha`."""
    files = [Path(p) for p in paths]
    if len(files) < 2:
        raise UserError("held-out alpha: needs two or more pair files (one judges, one trains)")
    k = min(folds, len(files))
    group = np.random.default_rng(seed).permutation(len(files)) % k
    model, baseline = [], []
    for g in range(k):
        train = [f for f, gi in zip(files, group, strict=True) if gi != g]
        base = train_base(train, seed=seed, **({} if epochs is None else {"epochs": epochs}))
        for f in (f for f, gi in zip(files, group, strict=True) if gi == g):
            for x, y, rank in _held_out_sessions(f):
                if len(y) < 2 or not (y > 0).any():
                    continue
                ids = np.arange(len(y))
                model.append(ndcg_at_k(y, x @ base.weights, ids))
                baseline.append(ndcg_at_k(y, -rank, ids))
    m, b = np.array(model), np.array(baseline)
    return {
        "value": round(earned_alpha(m, b), 4),
        "rule": "the share of held-out sessions (files in folds, a base trained on the other "
        "folds) whose baseline order beats the base's by NDCG@10 on the pairs' labels, ties "
        "half (learn.base.held_out_alpha)",
        "sessions": int(m.size),
        "folds": k,
        "base_ndcg10": round(float(m.mean()), 4) if m.size else None,
        "baseline_ndcg10": round(float(b.mean()), 4) if b.size else None,
    }
