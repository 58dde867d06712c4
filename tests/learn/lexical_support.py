"""Test samples whose lexical signal follows (or opposes) their labels."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from signet_bench.learn.samples import SessionSample
from signet_scorer.contract import N_SIGNALS
from signet_scorer.signals import signal_column


def with_lexical(samples: Sequence[SessionSample], *, follows: bool = True) -> list[SessionSample]:
    """Copies of `samples` whose lexical signal is their labels scaled to [0, 1] (or the
    reverse), every other signal 0: BM25 that explains the labels, or that misleads."""
    out = []
    for s in samples:
        signals = np.zeros((len(s), N_SIGNALS), dtype=np.float32)
        span = max(float(np.ptp(s.labels)), 1e-9)
        rel = (s.labels - s.labels.min()) / span
        signals[:, signal_column("lexical")] = rel if follows else 1.0 - rel
        out.append(dataclasses.replace(s, signals=signals))
    return out
