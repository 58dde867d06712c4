"""The one feature function, and the two Signet 0.58 conventions it replaces."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from signet_bench.features import (
    FEATURE_NAMES,
    N_FEATURES,
    CandidateInfo,
    SessionInfo,
    candidate_features,
    signet058_inference_features,
    signet058_training_features,
)

START = datetime(2026, 3, 15, 21, 30, tzinfo=UTC)  # Sunday 21:30 UTC = Sunday 22:30 Berlin


def _cands(n: int = 2, **kw) -> CandidateInfo:
    base = {
        "created_at": np.array([START.timestamp() - 86400 * 10.0, START.timestamp() - 3600.0])[:n],
        "importance": np.array([0.8, np.nan])[:n],
        "access_count": np.array([3, 0])[:n],
        "has_embedding": np.array([True, False])[:n],
        "superseded_at": np.array([START.timestamp() - 10.0, START.timestamp() + 10.0])[:n],
    }
    base.update(kw)
    return CandidateInfo(**base)


def test_names_and_order():
    assert N_FEATURES == 17
    assert FEATURE_NAMES[0] == "recency" and FEATURE_NAMES[11] == "superseded"
    assert FEATURE_NAMES[16] == "is_traversal"


def test_values_local_time_and_monday_origin():
    prev = START - timedelta(days=2)
    f = candidate_features(_cands(), SessionInfo(START, "Europe/Berlin", "p", prev))
    assert f.shape == (2, 17) and f.dtype == np.float32
    assert f[0, 0] == pytest.approx(math.log(11.0), rel=1e-6)
    assert f[1, 0] == pytest.approx(math.log(1 + 1 / 24), rel=1e-5)
    assert f[0, 1] == pytest.approx(0.8) and f[1, 1] == pytest.approx(0.5)  # NULL -> 0.5
    assert f[0, 2] == pytest.approx(math.log(4.0))
    h = 22.5  # local Berlin hour + minutes
    assert f[0, 3] == pytest.approx(math.sin(2 * math.pi * h / 24), abs=1e-6)
    assert f[0, 4] == pytest.approx(math.cos(2 * math.pi * h / 24), abs=1e-6)
    assert f[0, 5] == pytest.approx(math.sin(2 * math.pi * 6 / 7), abs=1e-6)  # Sunday = 6
    assert f[0, 7] == pytest.approx(math.sin(2 * math.pi * 2 / 12), abs=1e-6)  # March
    assert f[0, 9] == pytest.approx(math.log(3.0), rel=1e-6)
    assert list(f[:, 10]) == [1.0, 0.0]
    assert list(f[:, 11]) == [1.0, 0.0]  # superseded before start only
    assert np.all(f[:, 12:] == 0.0)


def test_first_session_has_zero_gap():
    f = candidate_features(_cands(), SessionInfo(START, "UTC", None, None))
    assert np.all(f[:, 9] == 0.0)


def test_structural_columns():
    c = _cands(
        entity_slot=np.array([255, -1]),
        aspect_slot=np.array([51, np.nan]),
        is_constraint=np.array([1, 0]),
        structural_density=np.array([3, 0]),
        is_traversal=np.array([0, 1]),
    )
    f = candidate_features(c, SessionInfo(START))
    assert f[0, 12] == 1.0 and f[1, 12] == 0.0
    assert f[0, 13] == pytest.approx(0.2) and f[1, 13] == 0.0
    assert list(f[:, 14]) == [1.0, 0.0] and list(f[:, 16]) == [0.0, 1.0]
    assert f[0, 15] == pytest.approx(math.log(4.0))


def test_signet058_conventions_differ_where_reference_says():
    c = _cands()
    end = START + timedelta(hours=2)  # the score row is written at session end
    ours = candidate_features(c, SessionInfo(START, "Europe/Berlin", "p", START - timedelta(1)))
    train = signet058_training_features(c, end, end - timedelta(1), np.array([False, False]))
    infer = signet058_inference_features(c, START, "Europe/Berlin", START - timedelta(hours=5))
    # recency: trainer measures from session end
    assert train[1, 0] > ours[1, 0]
    # hour: trainer integer UTC hour of the end row (23), we use local 22.5
    assert train[0, 3] == pytest.approx(math.sin(2 * math.pi * 23 / 24), abs=1e-6)
    # weekday: inference counts from Sunday (0) — differs from ours (6)
    assert infer[0, 5] == pytest.approx(0.0, abs=1e-6) and ours[0, 5] != pytest.approx(0.0)
    # superseded: trainer uses is_deleted now, inference always 0
    assert train[0, 11] == 0.0 and infer[0, 11] == 0.0 and ours[0, 11] == 1.0
    # gap: inference is global since last session end (5 h), ours per project (1 day)
    assert infer[0, 9] == pytest.approx(math.log(1 + 5 / 24), rel=1e-5)
    assert ours[0, 9] == pytest.approx(math.log(2.0), rel=1e-6)
