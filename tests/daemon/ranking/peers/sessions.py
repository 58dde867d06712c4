"""Small hand-made sessions for the peer rankers' hand-computed tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import numpy as np

from signet_bench.daemon.candidates import SessionInputs
from signet_bench.store.corpus import Corpus
from tests.daemon.ranking.ranker_contract import START, make_session

DAY = 86_400.0


def tiny_session(
    ids: Sequence[str],
    embeddings: Sequence[Sequence[float]],
    contents: Sequence[str],
    *,
    context: Sequence[float] | None = (1.0, 0.0),
    importance: Sequence[float] | None = None,
    access_count: Sequence[float] | None = None,
    age_seconds: Sequence[float] | None = None,
) -> SessionInputs:
    """A session over all memories of a corpus built from these arrays (zero rows: no
    embedding), created `age_seconds` before the contract's session start (default 1 day)."""
    n = len(ids)
    emb = np.asarray(embeddings, dtype=np.float32)
    age = np.full(n, DAY) if age_seconds is None else np.asarray(age_seconds, float)
    corpus = Corpus.from_arrays(
        list(ids),
        START.timestamp() - age,
        np.full(n, 0.5) if importance is None else np.asarray(importance, float),
        emb,
        contents=list(contents),
    ).with_states(access_count=None if access_count is None else np.asarray(access_count, float))
    ctx = None if context is None else np.asarray(context, dtype=np.float32)
    return make_session(corpus, list(ids), context=ctx, key="tiny")


def before_start(days: float) -> float:
    """Epoch seconds `days` before the contract's session start."""
    return (START - timedelta(days=days)).timestamp()
