"""The 17 candidate features, in Signet's order — one function for training and serving: the
trainer's samples, the simulated daemon and the session-start hook all call
`candidate_features` (`signet_bench.daemon.features` keeps Signet 0.58's two differing
conventions, for the skew report). Imports numpy and the standard library only.

| i | feature | our definition |
|---|---|---|
| 0 | recency | ln(age_days + 1), age from the session *start* to the memory's creation (>= 0) |
| 1 | importance | memories.importance (NULL -> 0.5) |
| 2 | usage | ln(access_count + 1) |
| 3,4 | time of day | sin/cos(2π·h/24), h = local hour + minute/60 at session start |
| 5,6 | day of week | sin/cos(2π·d/7), d = local weekday, Monday = 0 (ISO) |
| 7,8 | month | sin/cos(2π·(month−1)/12), local month at session start |
| 9 | session gap | ln(gap_days + 1), gap since the previous session start *of the same project*; 0 for the first one |
| 10 | has embedding | 1 if the candidate is scored on the embedded path |
| 11 | superseded | 1 if the memory was superseded (or soft-deleted) at or before session start |
| 12 | entity slot | hashSlot(entity of the primary attribute)/255, 0 when none |
| 13 | aspect slot | hashSlot(aspect of the primary attribute)/255, 0 when none |
| 14 | is constraint | 1 for constraints (the session's scope, or a constraint primary attribute) |
| 15 | structural density | ln(aspects + attributes + 1) of the primary entity |
| 16 | is KA traversal | 1 if the candidate came from graph traversal |

Columns 12-16 are computed from the store's knowledge graph, or taken from the daemon's record
of them, by one rule (`signet_scorer.structure`).

"Local" means the time zone of the user, passed explicitly as an IANA name. Callers address
columns by name (`feature_index("superseded")`), never by number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from zoneinfo import ZoneInfo

import numpy as np

from signet_scorer.contract import FEATURE_NAMES, N_FEATURES

__all__ = [
    "FEATURE_INDEX",
    "SECONDS_PER_DAY",
    "CandidateInfo",
    "SessionInfo",
    "assemble_features",
    "candidate_features",
    "cyclic",
    "feature_index",
    "feature_indices",
]

FEATURE_INDEX: Mapping[str, int] = MappingProxyType({n: i for i, n in enumerate(FEATURE_NAMES)})


def feature_index(name: str) -> int:
    """Column of the feature called `name` in the (n, 17) matrix."""
    try:
        return FEATURE_INDEX[name]
    except KeyError:
        known = ", ".join(FEATURE_NAMES)
        raise ValueError(f"unknown feature {name!r} (known: {known})") from None


def feature_indices(*names: str) -> tuple[int, ...]:
    """Columns of the named features, in the order given."""
    return tuple(feature_index(n) for n in names)


# FEATURE_NAMES, N_FEATURES, SESSION_FEATURES and FEATURE_SPEC are defined once, in
# signet_scorer.contract. Changing any definition in this module must change FEATURE_SPEC:
# checkpoints record its hash, and the golden features (fixtures/golden_features, made under one hash) then
# need regenerating; a changed value under an unchanged spec fails the golden features test.

SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What the daemon knows about a session when it starts."""

    start: datetime  # aware
    tz: str = "UTC"  # the user's IANA time zone
    project: str | None = None
    previous_project_start: datetime | None = None  # previous session of the same project


@dataclass(frozen=True, slots=True)
class CandidateInfo:
    """Per-candidate columns (arrays of equal length) the features are computed from."""

    created_at: np.ndarray  # epoch seconds, float64
    importance: np.ndarray  # float64, NaN -> 0.5
    access_count: np.ndarray  # int/float
    has_embedding: np.ndarray  # bool
    superseded_at: np.ndarray  # epoch seconds when superseded/deleted, NaN if never
    entity_slot: np.ndarray | None = None  # 0..255, -1 / NaN when none
    aspect_slot: np.ndarray | None = None
    is_constraint: np.ndarray | None = None
    structural_density: np.ndarray | None = None  # aspects + attributes count
    is_traversal: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.created_at)


def cyclic(value: float, period: float) -> tuple[float, float]:
    """(sin, cos) of `value` on a circle of `period` (hours of a day, days of a week, ...)."""
    angle = 2.0 * math.pi * value / period
    return math.sin(angle), math.cos(angle)


def _slot(arr: np.ndarray | None, n: int) -> np.ndarray:
    if arr is None:
        return np.zeros(n)
    a = np.asarray(arr, dtype=np.float64)
    return np.where(np.isfinite(a) & (a >= 0), a, 0.0) / 255.0


def _flag(arr: np.ndarray | None, n: int) -> np.ndarray:
    return np.zeros(n) if arr is None else np.asarray(arr, dtype=np.float64)


def assemble_features(
    c: CandidateInfo,
    age_days: np.ndarray,
    tod: tuple[float, float],
    dow: tuple[float, float],
    moy: tuple[float, float],
    gap_days: float,
    superseded: np.ndarray,
) -> np.ndarray:
    """The (n, 17) matrix from its parts, each column placed by its name."""
    n = len(c)
    imp = np.asarray(c.importance, dtype=np.float64)
    dens = np.nan_to_num(_flag(c.structural_density, n))
    columns: dict[str, np.ndarray | float] = {
        "recency": np.log(np.maximum(age_days, 0.0) + 1.0),
        "importance": np.where(np.isfinite(imp), imp, 0.5),
        "usage": np.log(np.maximum(np.asarray(c.access_count, dtype=np.float64), 0.0) + 1.0),
        "tod_sin": tod[0],
        "tod_cos": tod[1],
        "dow_sin": dow[0],
        "dow_cos": dow[1],
        "moy_sin": moy[0],
        "moy_cos": moy[1],
        "session_gap": math.log(max(0.0, gap_days) + 1.0),
        "has_embedding": np.asarray(c.has_embedding, dtype=np.float64),
        "superseded": superseded.astype(np.float64),
        "entity_slot": _slot(c.entity_slot, n),
        "aspect_slot": _slot(c.aspect_slot, n),
        "is_constraint": _flag(c.is_constraint, n),
        "structural_density": np.log(np.maximum(dens, 0.0) + 1.0),
        "is_traversal": _flag(c.is_traversal, n),
    }
    if len(columns) != N_FEATURES:
        raise RuntimeError(
            f"{len(columns)} feature columns defined, FEATURE_NAMES has {N_FEATURES}"
        )
    out = np.empty((n, N_FEATURES), dtype=np.float32)
    for name, value in columns.items():
        out[:, feature_index(name)] = value
    return out


def candidate_features(candidates: CandidateInfo, session: SessionInfo) -> np.ndarray:
    """(n, 17) float32 features of the candidates at session start (the one definition)."""
    start_s = session.start.timestamp()
    local = session.start.astimezone(ZoneInfo(session.tz))
    age = (start_s - np.asarray(candidates.created_at, dtype=np.float64)) / SECONDS_PER_DAY
    gap = 0.0
    if session.previous_project_start is not None:
        gap = (start_s - session.previous_project_start.timestamp()) / SECONDS_PER_DAY
    sup_at = np.asarray(candidates.superseded_at, dtype=np.float64)
    superseded = np.isfinite(sup_at) & (sup_at <= start_s)
    return assemble_features(
        candidates,
        age,
        cyclic(local.hour + local.minute / 60.0, 24.0),
        cyclic(local.weekday(), 7.0),
        cyclic(local.month - 1, 12.0),
        gap,
        superseded,
    )
