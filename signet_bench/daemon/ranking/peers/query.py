"""What the peers search with: the query text of their keyword leg, given at construction
because `SessionInputs` carries no query text, and the session context for their vector leg.

A benchmark that scores one query per session (e.g. a LoCoMo question) derives a ranker per
query with `for_query(ranker, question)`; rankers without a keyword leg come back unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Self

import numpy as np

from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.ranking.ranker import Ranker

__all__ = ["QueryText", "for_query", "vector_searchable"]


@dataclass(frozen=True, eq=False)
class QueryText:
    """Base of the rankers with a keyword leg: `query` is the user's message or question
    (empty: the keyword leg matches nothing and every candidate scores 0 on it)."""

    query: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.query, str):
            raise TypeError(
                f"{type(self).__name__}.query: expected str, got {type(self.query).__name__}"
            )

    def with_query(self, query: str) -> Self:
        """The same ranker searching for `query`."""
        return dataclasses.replace(self, query=query)


def for_query(ranker: Ranker, query: str) -> Ranker:
    """`ranker` set to search for `query` if it has a keyword leg, else `ranker` itself."""
    return ranker.with_query(query) if isinstance(ranker, QueryText) else ranker


def vector_searchable(inputs: SessionInputs) -> np.ndarray:
    """(n,) bool: the candidates a vector search finds — embedded ones, when the session has a
    context (its query embedding)."""
    return np.asarray(inputs.has_embedding, dtype=bool) & (inputs.context is not None)
