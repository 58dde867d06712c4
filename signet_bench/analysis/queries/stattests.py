"""A small registry of drift tests, in the style of evidently's stattest registry: each test has a
name, the feature kinds it applies to and a default threshold, and returns the statistic, the
threshold it was judged against and whether the feature drifted.

The default test per feature follows evidently's rule: a binary feature gets Jensen-Shannon
distance; a numeric one the Kolmogorov-Smirnov test (p-value) when both samples hold at most
1,000 values, else the Wasserstein distance normed by the reference's standard deviation.
Binned tests (PSI, Jensen-Shannon) bin on the reference window's quantiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "STATTESTS",
    "StatTest",
    "StatTestResult",
    "choose_test",
    "feature_kind",
    "run_test",
]

_EPS = 1e-6
_SMALL_SAMPLE = 1000


@dataclass(frozen=True, slots=True)
class StatTest:
    """A drift test: `drifted` compares the statistic with the threshold in `direction`
    ("above": drift when statistic > threshold; "below": when statistic < threshold, p-values)."""

    name: str
    display_name: str
    kinds: tuple[str, ...]
    default_threshold: float
    direction: str
    fn: Callable[[np.ndarray, np.ndarray], float]


@dataclass(frozen=True, slots=True)
class StatTestResult:
    """One feature's verdict."""

    test: str
    statistic: float
    threshold: float
    drifted: bool


def _bins(reference: np.ndarray, current: np.ndarray, n_bins: int = 10) -> tuple[np.ndarray, ...]:
    """Shares of each sample per bin, bins cut at the reference's quantiles (zero bins
    smoothed by a small epsilon)."""
    edges = np.unique(np.quantile(reference, np.linspace(0, 1, n_bins + 1)))
    if len(edges) < 2:
        edges = np.array([reference.min() - 0.5, reference.max() + 0.5])
    edges[0], edges[-1] = -np.inf, np.inf
    ref = np.histogram(reference, edges)[0] / max(1, len(reference))
    cur = np.histogram(current, edges)[0] / max(1, len(current))
    return np.clip(ref, _EPS, None), np.clip(cur, _EPS, None)


def _psi(reference: np.ndarray, current: np.ndarray) -> float:
    ref, cur = _bins(reference, current)
    return float(np.sum((cur - ref) * np.log(cur / ref)))


def _jensen_shannon(reference: np.ndarray, current: np.ndarray) -> float:
    values = np.unique(np.concatenate([reference, current]))
    if len(values) <= 2:  # binary: the two shares
        ref = np.array([np.mean(reference == v) for v in values]) + _EPS
        cur = np.array([np.mean(current == v) for v in values]) + _EPS
    else:
        ref, cur = _bins(reference, current)
    ref, cur = ref / ref.sum(), cur / cur.sum()
    mid = (ref + cur) / 2
    divergence = np.sum(ref * np.log2(ref / mid)) + np.sum(cur * np.log2(cur / mid))
    return math.sqrt(max(0.0, float(divergence) / 2))


def _wasserstein_norm(reference: np.ndarray, current: np.ndarray) -> float:
    """Earth mover's distance between the two empirical distributions, over the reference's
    standard deviation (0 when both are constant and equal)."""
    grid = np.sort(np.concatenate([reference, current]))
    ref_cdf = np.searchsorted(np.sort(reference), grid[:-1], side="right") / len(reference)
    cur_cdf = np.searchsorted(np.sort(current), grid[:-1], side="right") / len(current)
    dist = float(np.sum(np.abs(ref_cdf - cur_cdf) * np.diff(grid)))
    sd = float(np.std(reference))
    return dist / sd if sd > 0 else (0.0 if dist == 0 else math.inf)


def _ks_pvalue(reference: np.ndarray, current: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov test: the asymptotic p-value of the largest gap between
    the empirical CDFs (Kolmogorov's series)."""
    grid = np.concatenate([reference, current])
    ref_cdf = np.searchsorted(np.sort(reference), grid, side="right") / len(reference)
    cur_cdf = np.searchsorted(np.sort(current), grid, side="right") / len(current)
    d = float(np.max(np.abs(ref_cdf - cur_cdf)))
    n = len(reference) * len(current) / (len(reference) + len(current))
    lam = (math.sqrt(n) + 0.12 + 0.11 / math.sqrt(n)) * d
    if lam < 1e-3:
        return 1.0
    k = np.arange(1, 101)
    p = 2.0 * np.sum((-1.0) ** (k - 1) * np.exp(-2.0 * (k * lam) ** 2))
    return float(min(1.0, max(0.0, p)))


STATTESTS: dict[str, StatTest] = {
    t.name: t
    for t in (
        StatTest("ks", "K-S p-value", ("numeric",), 0.05, "below", _ks_pvalue),
        StatTest("psi", "PSI", ("numeric",), 0.1, "above", _psi),
        StatTest(
            "wasserstein", "Wasserstein (normed)", ("numeric",), 0.1, "above", _wasserstein_norm
        ),
        StatTest(
            "jensenshannon",
            "Jensen-Shannon distance",
            ("numeric", "binary"),
            0.1,
            "above",
            _jensen_shannon,
        ),
    )
}
"""The registered tests by name."""


def feature_kind(values: np.ndarray) -> str:
    """ "binary" when a feature only takes 0 and 1, else "numeric"."""
    v = np.unique(values[np.isfinite(values)])
    return "binary" if np.isin(v, (0.0, 1.0)).all() else "numeric"


def choose_test(reference: np.ndarray, current: np.ndarray) -> StatTest:
    """evidently's default test for a feature (see the module docstring)."""
    if feature_kind(np.concatenate([reference, current])) == "binary":
        return STATTESTS["jensenshannon"]
    if max(len(reference), len(current)) <= _SMALL_SAMPLE:
        return STATTESTS["ks"]
    return STATTESTS["wasserstein"]


def run_test(
    reference: np.ndarray,
    current: np.ndarray,
    test: str | None = None,
    threshold: float | None = None,
) -> StatTestResult:
    """Judge whether `current` drifted from `reference` with the named test (default: the
    feature's default test) at `threshold` (default: the test's). NaNs are dropped; an empty
    sample gives a NaN statistic, never drifted."""
    ref = np.asarray(reference, dtype=np.float64)
    cur = np.asarray(current, dtype=np.float64)
    ref, cur = ref[np.isfinite(ref)], cur[np.isfinite(cur)]
    if test is not None and test not in STATTESTS:
        raise ValueError(f"unknown drift test {test!r}; registered: {', '.join(STATTESTS)}")
    chosen = STATTESTS[test] if test else choose_test(ref, cur)
    limit = chosen.default_threshold if threshold is None else float(threshold)
    if len(ref) == 0 or len(cur) == 0:
        return StatTestResult(chosen.name, math.nan, limit, False)
    stat = chosen.fn(ref, cur)
    drifted = stat < limit if chosen.direction == "below" else stat > limit
    return StatTestResult(chosen.name, stat, limit, bool(drifted))
