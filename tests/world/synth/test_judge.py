"""The simulated judge and agent: they rate only what the transcript shows, with the
documented noise, and count re-explanations only for needed memories the session recalled."""

from __future__ import annotations

import numpy as np
import pytest

from signet_bench.world.synth.judge import (
    AGENT_NOISE,
    MAX_NOVEL_CONTEXT,
    NEEDED_RELEVANCE,
    NOTICE_PROBABILITY,
    SILENT_NOISE_FACTOR,
    agent_ratings,
    judge_ratings,
    novel_context_count,
)

N = 20_000


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_rates_the_injected_and_the_recalled_and_nothing_else():
    truth = np.array([0.9, 0.2, 0.8, 0.5, -0.3])
    injected = np.array([True, True, False, False, False])
    recalled = np.array([False, True, True, False, True])
    r = judge_ratings(truth, injected, recalled, _rng(), noise=0.1)
    assert np.isnan(r[3]) and not np.isnan(r[[0, 1, 2, 4]]).any()
    assert ((r[[0, 1, 2, 4]] >= 0) & (r[[0, 1, 2, 4]] <= 1)).all()


def test_the_second_pass_rates_the_evaluation_pool_like_unrecalled_memories():
    truth = np.full(N, 0.5)
    none = np.zeros(N, dtype=bool)
    pool = np.arange(N) % 4 == 0
    r = judge_ratings(truth, none, none, _rng(), noise=0.1, pool=pool)
    assert np.isnan(r[~pool]).all() and not np.isnan(r[pool]).any()
    assert np.std(r[pool] - 0.5) == pytest.approx(0.1 * SILENT_NOISE_FACTOR, rel=0.05)


def test_noise_is_larger_for_injected_memories_no_prompt_recalled():
    truth = np.full(N, 0.5)
    injected = np.ones(N, dtype=bool)
    recalled = np.arange(N) % 2 == 0
    r = judge_ratings(truth, injected, recalled, _rng(), noise=0.1)
    assert np.std(r[recalled] - 0.5) == pytest.approx(0.1, rel=0.05)
    assert np.std(r[~recalled] - 0.5) == pytest.approx(0.1 * SILENT_NOISE_FACTOR, rel=0.05)
    assert abs(np.mean(r - 0.5)) < 0.01  # unbiased away from the clip bounds


def test_recency_bias_lifts_only_young_memories():
    truth = np.full(N, 0.4)
    shown = np.ones(N, dtype=bool)
    young = np.arange(N) < N // 2
    r = judge_ratings(truth, shown, shown, _rng(), noise=0.05, recency_bias=0.2, young=young)
    assert r[young].mean() - r[~young].mean() == pytest.approx(0.2, abs=0.01)


def test_misaligned_masks_are_named():
    with pytest.raises(ValueError, match="recalled"):
        judge_ratings(np.zeros(3), np.zeros(3, bool), np.zeros(2, bool), _rng(), noise=0.1)


def test_missing_context_needs_a_needed_recalled_memory_that_was_not_injected():
    n = 200
    needed = np.full(n, NEEDED_RELEVANCE + 0.1)
    yes, no = np.ones(n, dtype=bool), np.zeros(n, dtype=bool)
    assert novel_context_count(needed, yes, yes, _rng()) == 0  # all injected
    assert novel_context_count(needed, no, no, _rng()) == 0  # never came up
    assert novel_context_count(needed - 0.2, no, yes, _rng()) == 0  # not needed
    counts = [novel_context_count(needed[:10], no[:10], yes[:10], _rng(s)) for s in range(2000)]
    assert np.mean(counts) == pytest.approx(10 * NOTICE_PROBABILITY, rel=0.1)
    assert max(novel_context_count(needed, no, yes, _rng(s)) for s in range(50)) == (
        MAX_NOVEL_CONTEXT
    )


def test_agent_ratings_are_noisy_truth_in_range():
    truth = np.linspace(-0.5, 1.0, N)
    r = agent_ratings(truth, _rng())
    assert r.min() >= -1 and r.max() <= 1
    inner = (truth > -0.2) & (truth < 0.7)
    assert np.std((r - truth)[inner]) == pytest.approx(AGENT_NOISE, rel=0.05)


def test_same_stream_same_ratings():
    truth = np.linspace(0, 1, 50)
    m = np.arange(50) % 3 == 0
    a = judge_ratings(truth, m, ~m, _rng(7), noise=0.1)
    b = judge_ratings(truth, m, ~m, _rng(7), noise=0.1)
    assert np.array_equal(a, b, equal_nan=True)
