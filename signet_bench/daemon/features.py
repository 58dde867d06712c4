"""Signet 0.58's two conventions for the candidate features that differed from the one definition
(`signet_scorer.features`), for the skew report.

Signet 0.58 computed the features two different ways (docs/specification.md §4.1): its Rust trainer
measured age from the session *end*, read the hour in UTC, counted weekdays from Monday, took the
session gap per project and used `is_deleted` for "superseded"; its TypeScript inference path
measured age from wall-clock now, used local time, counted weekdays from Sunday, took a global
session gap and always sent 0 for "superseded". `candidate_features` (its table is in
`signet_scorer.features`) fixes one definition; the two functions below reproduce 0.58's.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np

from signet_scorer.features import (
    SECONDS_PER_DAY,
    CandidateInfo,
    assemble_features,
    cyclic,
)

__all__ = ["signet058_inference_features", "signet058_training_features"]


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
    age = np.abs(end_s - np.asarray(candidates.created_at, dtype=np.float64)) / SECONDS_PER_DAY
    gap = 0.0
    if previous_project_end is not None:
        gap = (end_s - previous_project_end.timestamp()) / SECONDS_PER_DAY
    return assemble_features(
        candidates,
        age,
        cyclic(utc.hour, 24.0),
        cyclic(utc.weekday(), 7.0),
        cyclic(utc.month - 1, 12.0),
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
    age = (start_s - np.asarray(candidates.created_at, dtype=np.float64)) / SECONDS_PER_DAY
    gap = 0.0
    if last_session_end_any_project is not None:
        gap = (start_s - last_session_end_any_project.timestamp()) / SECONDS_PER_DAY
    js_day = (local.weekday() + 1) % 7  # JS getDay(): Sunday = 0
    return assemble_features(
        candidates,
        age,
        cyclic(local.hour + local.minute / 60.0, 24.0),
        cyclic(js_day, 7.0),
        cyclic(local.month - 1, 12.0),
        gap,
        np.zeros(len(candidates), dtype=bool),
    )
