"""One score query: a session's candidates with Signet's `score` parameter names and defaults, as
plain data that both the in-process `Scorer.score` and the sidecar client's
`SidecarClient.score` take.

The query is not checked here: the server's parameter checks (`signet_scorer.scorer`) name any bad
field, so the in-process scorer and the sidecar refuse the same queries with the same words.
`query_terms`, `query_entities`, `candidate_sources`, `candidate_track_record` and
`candidate_created_at` (epoch seconds) are our optional parameters (the candidates' signals, `signet_scorer.signals`); Signet's daemon never
sends them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

__all__ = ["ScoreQuery"]


@dataclass(frozen=True, slots=True, eq=False)
class ScoreQuery:
    """One session's candidates to score. A candidate whose embedding is missing (None) or of
    another length takes the text path and needs a text; features default to zeros, the
    project slot to 0. Not comparable with `==` (it may hold arrays)."""

    context_embedding: Sequence[float] | np.ndarray
    candidate_ids: Sequence[str]
    candidate_embeddings: Sequence[Sequence[float] | np.ndarray | None] | np.ndarray | None = None
    candidate_texts: Sequence[str | None] | None = None
    candidate_features: Sequence[Sequence[float]] | np.ndarray | None = None
    project_slot: int = 0
    query_terms: Sequence[str] | None = None
    query_entities: Sequence[str] | None = None
    candidate_sources: Sequence[str | None] | None = None
    candidate_track_record: Sequence[float | None] | np.ndarray | None = None
    candidate_created_at: Sequence[float | None] | np.ndarray | None = None

    def rpc_params(self) -> dict[str, Any]:
        """The JSON-RPC `score` params: the parameters left at None are left out, arrays stay
        arrays (float ones as float32, the model's precision), other sequences become lists."""
        values = {f.name: _as_param(getattr(self, f.name)) for f in dataclasses.fields(self)}
        return {name: value for name, value in values.items() if value is not None}


def _as_param(value: object) -> object:
    """Arrays stay arrays (the fast path); tuples and other iterables become lists; anything
    else is passed on for the parameter checks to name."""
    if isinstance(value, np.ndarray):
        arr = cast("np.ndarray", value)
        return arr.astype(np.float32, copy=False) if arr.dtype.kind == "f" else arr
    if value is None or isinstance(value, list | str | bytes | Mapping):
        return cast("object", value)  # as it is (its items' types do not matter here)
    try:
        return list(cast("Iterable[object]", value))
    except TypeError:
        return value
