"""The one feature function, and the two Signet 0.58 conventions it replaces."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from signet_bench.daemon.features import signet058_inference_features, signet058_training_features
from signet_scorer.contract import FEATURE_NAMES, FEATURE_SPEC, N_FEATURES, SESSION_FEATURES
from signet_scorer.features import (
    FEATURE_INDEX,
    CandidateInfo,
    SessionInfo,
    candidate_features,
    feature_index,
    feature_indices,
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


def _col(f: np.ndarray, name: str) -> np.ndarray:
    return f[:, feature_index(name)]


def test_names_and_order():
    assert N_FEATURES == 17 == len(set(FEATURE_NAMES))
    assert FEATURE_NAMES[0] == "recency" and FEATURE_NAMES[11] == "superseded"
    assert FEATURE_NAMES[16] == "is_traversal"


def test_spec_lists_the_names_in_order():
    assert FEATURE_SPEC.rsplit(";", 1)[1].split(",") == list(FEATURE_NAMES)


def test_index_by_name():
    assert [feature_index(n) for n in FEATURE_NAMES] == list(range(N_FEATURES))
    assert FEATURE_INDEX == {n: i for i, n in enumerate(FEATURE_NAMES)}
    assert feature_indices("superseded", "recency") == (11, 0)
    with pytest.raises(ValueError, match=r"unknown feature 'hour'.*tod_sin"):
        feature_index("hour")
    with pytest.raises(ValueError, match="unknown feature"):
        feature_indices("recency", "Recency")


def test_session_features_are_the_time_and_gap_columns():
    names = [FEATURE_NAMES[i] for i in SESSION_FEATURES]
    time = ["tod_sin", "tod_cos", "dow_sin", "dow_cos", "moy_sin", "moy_cos"]
    assert names == [*time, "session_gap"]
    # the same for every candidate of a session, whatever the candidates
    f = candidate_features(_cands(), SessionInfo(START, "Europe/Berlin", "p", START - timedelta(1)))
    assert np.all(f[:, list(SESSION_FEATURES)] == f[0, list(SESSION_FEATURES)])


def test_every_path_gives_one_column_per_name():
    c = _cands()
    for f in (
        candidate_features(c, SessionInfo(START)),
        signet058_training_features(c, START, None, np.array([False, True])),
        signet058_inference_features(c, START, "UTC", None),
    ):
        assert f.shape == (len(c), N_FEATURES) and f.dtype == np.float32
        assert np.isfinite(f).all()


def test_values_local_time_and_monday_origin():
    prev = START - timedelta(days=2)
    f = candidate_features(_cands(), SessionInfo(START, "Europe/Berlin", "p", prev))
    assert f.shape == (2, 17) and f.dtype == np.float32
    assert _col(f, "recency")[0] == pytest.approx(math.log(11.0), rel=1e-6)
    assert _col(f, "recency")[1] == pytest.approx(math.log(1 + 1 / 24), rel=1e-5)
    assert list(_col(f, "importance")) == pytest.approx([0.8, 0.5])  # NULL -> 0.5
    assert _col(f, "usage")[0] == pytest.approx(math.log(4.0))
    h = 22.5  # local Berlin hour + minutes
    assert _col(f, "tod_sin")[0] == pytest.approx(math.sin(2 * math.pi * h / 24), abs=1e-6)
    assert _col(f, "tod_cos")[0] == pytest.approx(math.cos(2 * math.pi * h / 24), abs=1e-6)
    sunday, march = 6, 2
    assert _col(f, "dow_sin")[0] == pytest.approx(math.sin(2 * math.pi * sunday / 7), abs=1e-6)
    assert _col(f, "moy_sin")[0] == pytest.approx(math.sin(2 * math.pi * march / 12), abs=1e-6)
    assert _col(f, "session_gap")[0] == pytest.approx(math.log(3.0), rel=1e-6)
    assert list(_col(f, "has_embedding")) == [1.0, 0.0]
    assert list(_col(f, "superseded")) == [1.0, 0.0]  # superseded before start only
    assert np.all(f[:, feature_index("entity_slot") :] == 0.0)


def test_first_session_has_zero_gap():
    f = candidate_features(_cands(), SessionInfo(START, "UTC", None, None))
    assert np.all(_col(f, "session_gap") == 0.0)


def test_structural_columns():
    c = _cands(
        entity_slot=np.array([255, -1]),
        aspect_slot=np.array([51, np.nan]),
        is_constraint=np.array([1, 0]),
        structural_density=np.array([3, 0]),
        is_traversal=np.array([0, 1]),
    )
    f = candidate_features(c, SessionInfo(START))
    assert _col(f, "entity_slot")[0] == 1.0 and _col(f, "entity_slot")[1] == 0.0
    assert _col(f, "aspect_slot")[0] == pytest.approx(0.2) and _col(f, "aspect_slot")[1] == 0.0
    assert list(_col(f, "is_constraint")) == [1.0, 0.0]
    assert list(_col(f, "is_traversal")) == [0.0, 1.0]
    assert _col(f, "structural_density")[0] == pytest.approx(math.log(4.0))


def test_signet058_conventions_differ_where_reference_says():
    c = _cands()
    end = START + timedelta(hours=2)  # the score row is written at session end
    ours = candidate_features(c, SessionInfo(START, "Europe/Berlin", "p", START - timedelta(1)))
    train = signet058_training_features(c, end, end - timedelta(1), np.array([False, False]))
    infer = signet058_inference_features(c, START, "Europe/Berlin", START - timedelta(hours=5))
    # recency: trainer measures from session end
    assert _col(train, "recency")[1] > _col(ours, "recency")[1]
    # hour: trainer integer UTC hour of the end row (23), we use local 22.5
    assert _col(train, "tod_sin")[0] == pytest.approx(math.sin(2 * math.pi * 23 / 24), abs=1e-6)
    # weekday: inference counts from Sunday (0) — differs from ours (6)
    assert _col(infer, "dow_sin")[0] == pytest.approx(0.0, abs=1e-6)
    assert _col(ours, "dow_sin")[0] != pytest.approx(0.0)
    # superseded: trainer uses is_deleted now, inference always 0
    assert [_col(x, "superseded")[0] for x in (train, infer, ours)] == [0.0, 0.0, 1.0]
    # gap: inference is global since last session end (5 h), ours per project (1 day)
    assert _col(infer, "session_gap")[0] == pytest.approx(math.log(1 + 5 / 24), rel=1e-5)
    assert _col(ours, "session_gap")[0] == pytest.approx(math.log(2.0), rel=1e-6)
