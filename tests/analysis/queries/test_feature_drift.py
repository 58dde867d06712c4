"""Feature distributions computed in a child process, and their drift per feature."""

from __future__ import annotations

import polars as pl

from signet_bench.analysis.queries.feature_drift import feature_drift, feature_frames
from signet_scorer.contract import FEATURE_NAMES


def test_feature_frames_and_their_drift(demo):
    frames = feature_frames(demo.store)
    assert set(FEATURE_NAMES) <= set(frames.samples.columns)
    assert frames.samples.height > 0 and frames.samples["start"].is_sorted()
    assert frames.skew["feature"].to_list() == list(FEATURE_NAMES)
    sessions = frames.samples["session_key"].n_unique()
    drift = feature_drift(frames.samples, 10)
    assert drift["feature"].to_list() == list(FEATURE_NAMES)
    assert (drift["reference_rows"] + drift["current_rows"] == frames.samples.height).all()
    latest = frames.samples.select("session_key", "start").unique().sort("start").tail(10)
    current = frames.samples.filter(pl.col("session_key").is_in(latest["session_key"].to_list()))
    assert drift["current_rows"][0] == current.height and sessions > 10
    binary = drift.filter(pl.col("feature") == "is_constraint")
    assert binary["test"].to_list() == ["jensenshannon"]
