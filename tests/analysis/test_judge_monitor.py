"""Judge monitoring: recency drift signal and human-vs-judge calibration."""

from __future__ import annotations

import math

import pytest

from signet_bench.analysis.judge_monitor import calibration_flagged, calibration_mae, drift_signal
from signet_bench.config import DEFAULT_CONFIG

NAN = math.nan


# --- drift and calibration ----------------------------------------------------------------------


def test_drift_signal():
    """Check avg relevance (< 7 d old) - avg relevance (> 30 d old); 7..30 d ignored."""
    rel = [0.9, 0.7, 0.5, 0.2, 0.0, NAN]
    age = [1.0, 6.9, 15.0, 31.0, 400.0, 2.0]
    assert drift_signal(rel, age) == pytest.approx(0.8 - 0.1)


def test_drift_signal_boundaries_and_empty_side():
    """Check exactly 7 and 30 days fall in neither side; an empty side gives NaN."""
    assert math.isnan(drift_signal([0.5, 0.5], [7.0, 30.0]))
    assert math.isnan(drift_signal([0.5], [1.0]))
    custom = DEFAULT_CONFIG.replace(drift_recent_days=10.0)
    assert drift_signal([0.5, 0.1], [8.0, 40.0], custom) == pytest.approx(0.4)


def test_calibration_mae_and_flag():
    """Check MAE over paired labels, NaN pairs dropped, flag when MAE > 0.2."""
    mae = calibration_mae([1.0, 0.0, 0.5, NAN], [0.7, 0.1, 0.5, 0.9])
    assert mae == pytest.approx((0.3 + 0.1 + 0.0) / 3)
    assert not calibration_flagged(mae)
    assert calibration_flagged(calibration_mae([1.0, 0.0], [0.6, 0.3]))
    assert not calibration_flagged(0.2)
    assert math.isnan(calibration_mae([NAN], [0.1])) and not calibration_flagged(NAN)
