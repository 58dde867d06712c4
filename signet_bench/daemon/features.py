"""The 17 candidate features, in Signet's order — one function for training and serving.

Signet 0.58 computed these two different ways (reference §4): its Rust trainer measured age
from the session *end*, read the hour in UTC, counted weekdays from Monday, took the session gap
per project and used `is_deleted` for "superseded"; its TypeScript inference path measured age
from wall-clock now, used local time, counted weekdays from Sunday, took a global session gap
and always sent 0 for "superseded". `candidate_features` fixes one definition:

| i | feature | our definition |
|---|---|---|
| 0 | recency | ln(age_days + 1), age from the session *start* to the memory's creation (>= 0) |
| 1 | importance | memories.importance (NULL -> 0.5) |
| 2 | usage | ln(access_count + 1) |
| 3,4 | time of day | sin/cos(2π·h/24), h = local hour + minute/60 at session start |
| 5,6 | day of week | sin/cos(2π·d/7), d = local weekday, Monday = 0 (ISO) |
| 7,8 | month | sin/cos(2π·(month−1)/12), local month at session start |
| 9 | session gap | ln(gap_days + 1), gap since the previous session start *of the same project* (seed 000); 0 for the first one |
| 10 | has embedding | 1 if the candidate is scored on the embedded path |
| 11 | superseded | 1 if the memory was superseded (or soft-deleted) at or before session start |
| 12 | entity slot | hashSlot(entity)/255, 0 when none |
| 13 | aspect slot | hashSlot(aspect)/255, 0 when none |
| 14 | is constraint | 1 for constraints |
| 15 | structural density | ln(aspects + attributes + 1) of the primary entity |
| 16 | is KA traversal | 1 if the candidate came from graph traversal |

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

from serving.contract import FEATURE_NAMES, FEATURE_SPEC, N_FEATURES, SESSION_FEATURES

__all__ = [
    "FEATURE_INDEX",
    "FEATURE_NAMES",
    "FEATURE_SPEC",
    "N_FEATURES",
    "SESSION_FEATURES",
    "CandidateInfo",
    "SessionInfo",
    "candidate_features",
    "feature_index",
    "feature_indices",
    "signet058_inference_features",
    "signet058_training_features",
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
# serving.contract (the server reads them without this package). Changing any definition in this
# module must change FEATURE_SPEC: checkpoints record its hash, and the golden features
# (fixtures/golden_features, made under one hash) then need regenerating; a changed value under
# an unchanged spec fails tests/test_golden_features.py.

_SECONDS_PER_DAY = 86_400.0


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


def _cyc(value: float, period: float) -> tuple[float, float]:
    angle = 2.0 * math.pi * value / period
    return math.sin(angle), math.cos(angle)


def _slot(arr: np.ndarray | None, n: int) -> np.ndarray:
    if arr is None:
        return np.zeros(n)
    a = np.asarray(arr, dtype=np.float64)
    return np.where(np.isfinite(a) & (a >= 0), a, 0.0) / 255.0


def _flag(arr: np.ndarray | None, n: int) -> np.ndarray:
    return np.zeros(n) if arr is None else np.asarray(arr, dtype=np.float64)


def _assemble(
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
    age = (start_s - np.asarray(candidates.created_at, dtype=np.float64)) / _SECONDS_PER_DAY
    gap = 0.0
    if session.previous_project_start is not None:
        gap = (start_s - session.previous_project_start.timestamp()) / _SECONDS_PER_DAY
    sup_at = np.asarray(candidates.superseded_at, dtype=np.float64)
    superseded = np.isfinite(sup_at) & (sup_at <= start_s)
    return _assemble(
        candidates,
        age,
        _cyc(local.hour + local.minute / 60.0, 24.0),
        _cyc(local.weekday(), 7.0),
        _cyc(local.month - 1, 12.0),
        gap,
        superseded,
    )


def signet058_training_features(
    candidates: CandidateInfo,
    session_end: datetime,
    previous_project_end: datetime | None,
    is_deleted_now: np.ndarray,
) -> np.ndarray:
    """Signet 0.58's Rust trainer (data.rs): age and integer UTC hour from the session's
    score row (written at session end), Monday = 0 in UTC, gap per project between score
    rows, "superseded" = is_deleted as of today."""
    end_s = session_end.timestamp()
    utc = session_end.astimezone(ZoneInfo("UTC"))
    age = np.abs(end_s - np.asarray(candidates.created_at, dtype=np.float64)) / _SECONDS_PER_DAY
    gap = 0.0
    if previous_project_end is not None:
        gap = (end_s - previous_project_end.timestamp()) / _SECONDS_PER_DAY
    return _assemble(
        candidates,
        age,
        _cyc(utc.hour, 24.0),
        _cyc(utc.weekday(), 7.0),
        _cyc(utc.month - 1, 12.0),
        gap,
        np.asarray(is_deleted_now, dtype=bool),
    )


def signet058_inference_features(
    candidates: CandidateInfo,
    session_start: datetime,
    tz: str,
    last_session_end_any_project: datetime | None,
) -> np.ndarray:
    """Signet 0.58's TypeScript inference (buildCandidateFeatures): local time with
    minutes, Sunday = 0, a global gap since the last session-end checkpoint, and
    "superseded" always 0."""
    start_s = session_start.timestamp()
    local = session_start.astimezone(ZoneInfo(tz))
    age = (start_s - np.asarray(candidates.created_at, dtype=np.float64)) / _SECONDS_PER_DAY
    gap = 0.0
    if last_session_end_any_project is not None:
        gap = (start_s - last_session_end_any_project.timestamp()) / _SECONDS_PER_DAY
    js_day = (local.weekday() + 1) % 7  # JS getDay(): Sunday = 0
    return _assemble(
        candidates,
        age,
        _cyc(local.hour + local.minute / 60.0, 24.0),
        _cyc(js_day, 7.0),
        _cyc(local.month - 1, 12.0),
        gap,
        np.zeros(len(candidates), dtype=bool),
    )
