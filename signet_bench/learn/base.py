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
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.errors import UserError
from signet_bench.learn.pairs import INPUT_COLUMNS, BaseModel, base_params
from signet_scorer.contract import FEATURE_SPEC_HASH, SIGNAL_NAMES

__all__ = [
    "BASE_FORMAT",
    "SHIPPED_BASE",
    "SHIPPED_BASE_ALPHA",
    "read_base",
    "shipped_base",
    "shipped_base_alpha",
    "shipped_base_params",
    "shipped_document",
    "write_base",
]

BASE_FORMAT = "signet-predictor-base/1"
SHIPPED_BASE = "base/predictor-base.json"  # inside the signet_scorer package

# The baseline's RRF weight while the base serves (`learn.serving.earned_alpha`: the share of
# held-out sessions that Signet's effective-score order wins against the base). Measured with
# the fresh scorer's order as the base on sessions 10-159 of two synthetic worlds that no
# benchmark reports (heavy seed 905, drifting seed 906, wordllama; the loop with no scorer):
# NDCG@10 on the planted relevance, hybrid 0.570 / 0.609 against the baseline 0.411 / 0.339;
# the baseline won 0.197 of the 300 sessions.
SHIPPED_BASE_ALPHA = 0.20


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


def shipped_base_alpha() -> float:
    """The baseline's RRF weight while the shipped base serves (`SHIPPED_BASE_ALPHA`)."""
    return SHIPPED_BASE_ALPHA
