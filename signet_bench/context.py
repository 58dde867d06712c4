"""The session-context embedding: one definition for pre-filter, training and serving.

At session start the daemon knows the project and the store, not yet the user's prompts.
Signet 0.58 built the context two ways (reference §4: training took the mean of the injected
candidates' embeddings, inference the mean of the top-10 baseline candidates'). We use one:

    context = unit-length mean of the embeddings of the memories that the *previous session of
              the same project* actually used (its candidates with FTS hits, or rated > 0 by the
              agent); when there is no such session or none of its memories has an embedding,
              the mean of the top-10 baseline candidates' embeddings (Signet's inference rule).

It only looks backwards (the previous session ended before this one starts), so replaying it
from a store gives exactly what the daemon had at session start.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FALLBACK_TOP", "context_embedding", "mean_unit"]

FALLBACK_TOP = 10


def mean_unit(vectors: np.ndarray) -> np.ndarray | None:
    """Unit-length mean of the non-zero rows, or None when there are none."""
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim != 2 or len(v) == 0:
        return None
    norms = np.linalg.norm(v, axis=1)
    v = v[norms > 0]
    if len(v) == 0:
        return None
    m = v.mean(axis=0)
    n = float(np.linalg.norm(m))
    return (m / n).astype(np.float32) if n > 0 else None


def context_embedding(
    previous_used: np.ndarray, baseline_top: np.ndarray
) -> tuple[np.ndarray | None, str]:
    """The context vector and which rule produced it: 'previous-session', 'baseline-top10'
    or 'none' (no embeddings at all: the predictor is then skipped, as in Signet)."""
    ctx = mean_unit(previous_used)
    if ctx is not None:
        return ctx, "previous-session"
    ctx = mean_unit(np.asarray(baseline_top)[:FALLBACK_TOP])
    if ctx is not None:
        return ctx, "baseline-top10"
    return None, "none"
