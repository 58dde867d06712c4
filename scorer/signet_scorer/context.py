"""The session-context embedding's rule on embeddings already gathered, one definition for the
trainer, the simulated daemon (`signet_bench.daemon.context`, which gathers them from a corpus)
and the session-start hook (which gathers them from the store):

    context = unit-length mean of the embeddings of the memories that the previous scored
              session of the same project used (its candidates with FTS hits, or rated > 0 by
              the agent); else the unit mean of the embeddings of the first 10 memories of
              the baseline order, those of them that have one; else none.

Imports numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "CONTEXT_RULES",
    "USED_MEMORY_SQL",
    "SessionContextVector",
    "context_embedding",
    "mean_unit",
]

CONTEXT_RULES = ("previous-session", "baseline-top10", "none")

# The memories a finished session used, as a condition on its `session_memories` rows (the
# trainer's `used_memory_ids` applies the same rule to the rows it has read).
USED_MEMORY_SQL = "(COALESCE(fts_hit_count, 0) > 0 OR COALESCE(agent_relevance_score, 0) > 0)"


@dataclass(frozen=True, slots=True)
class SessionContextVector:
    """A session's context vector (None when no memory has an embedding) and its rule."""

    vector: np.ndarray | None
    rule: str  # one of CONTEXT_RULES


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


def context_embedding(previous_used: np.ndarray, baseline_top: np.ndarray) -> SessionContextVector:
    """The rule on embeddings already gathered: the unit mean of `previous_used`, else of
    `baseline_top`, else none."""
    ctx = mean_unit(previous_used)
    if ctx is not None:
        return SessionContextVector(ctx, "previous-session")
    ctx = mean_unit(np.asarray(baseline_top))
    if ctx is not None:
        return SessionContextVector(ctx, "baseline-top10")
    return SessionContextVector(None, "none")
