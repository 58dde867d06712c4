"""The drift-test registry: defaults per feature kind and sample size, verdicts, a cross-check
of the Kolmogorov-Smirnov p-value against SciPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from signet_bench.analysis.queries import stattests as stt


@pytest.mark.parametrize("name", list(stt.STATTESTS))
def test_no_drift_between_samples_of_one_distribution(name):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=800), rng.normal(size=800)
    assert not stt.run_test(a, b, name).drifted


@pytest.mark.parametrize("name", list(stt.STATTESTS))
def test_a_shift_is_drift(name):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=800), rng.normal(1.0, 1.0, size=800)
    assert stt.run_test(a, b, name).drifted


def test_default_tests_follow_kind_and_size():
    rng = np.random.default_rng(2)
    binary = rng.integers(0, 2, 500).astype(float)
    assert stt.choose_test(binary, binary).name == "jensenshannon"
    assert stt.choose_test(rng.normal(size=300), rng.normal(size=300)).name == "ks"
    assert stt.choose_test(rng.normal(size=3000), rng.normal(size=300)).name == "wasserstein"
    assert stt.feature_kind(np.array([0.0, 1.0, np.nan])) == "binary"


def test_empty_or_unknown():
    res = stt.run_test(np.array([]), np.array([1.0]))
    assert math.isnan(res.statistic) and not res.drifted
    with pytest.raises(ValueError, match="unknown drift test"):
        stt.run_test(np.ones(3), np.ones(3), "chi")
    assert stt.run_test(np.ones(3), np.ones(3), "psi", threshold=0.5).threshold == 0.5


def test_ks_pvalue_matches_scipy_asymptotic():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=400), rng.normal(0.15, 1.0, size=500)
    ours = stt.run_test(a, b, "ks").statistic
    ref = stats.ks_2samp(a, b, method="asymp").pvalue
    assert ours == pytest.approx(ref, rel=0.1, abs=0.01)
