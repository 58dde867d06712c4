"""The one context-embedding definition."""

from __future__ import annotations

import numpy as np

from signet_bench.context import context_embedding, mean_unit


def test_previous_session_rule_first():
    prev = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    top = np.array([[1.0, 1.0]], dtype=np.float32)
    ctx, rule = context_embedding(prev, top)
    assert rule == "previous-session"
    assert np.allclose(ctx, [2**-0.5, 2**-0.5])


def test_fallback_to_baseline_top10_and_zero_rows_ignored():
    prev = np.zeros((2, 3), dtype=np.float32)
    top = np.eye(3, dtype=np.float32)[[0] * 10 + [1] * 5]  # rows beyond 10 are ignored
    ctx, rule = context_embedding(prev, top)
    assert rule == "baseline-top10" and np.allclose(ctx, [1.0, 0.0, 0.0])


def test_none_when_no_embeddings():
    ctx, rule = context_embedding(np.zeros((0, 4)), np.zeros((3, 4)))
    assert ctx is None and rule == "none"
    assert mean_unit(np.zeros((0, 4))) is None
