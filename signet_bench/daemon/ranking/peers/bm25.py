"""BM25 over a session's candidates for a query text, through a real SQLite FTS5 index.

The candidates' contents go into an in-memory `memories` table indexed by the store's own FTS5
definition (`store.schema.FTS_DDL`: external content, the default unicode61 tokenizer, the same
sync triggers), and `ranking.bm25.fts_search` runs Signet's keyword search on it
(docs/specification.md §3.8, handleUserPromptSubmit lines 291-298): the query's `recall_terms`
(substantive words, at most 12), each double-quoted and OR-ed, `bm25(memories_fts)` normalised as
|bm25| / max|bm25| over the hits. The statistics (document count, average length, document
frequencies) are the candidates', so when a session's candidates are the whole store the
scores are the ones Signet computes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.ranking.fts import fts_search
from signet_bench.daemon.ranking.peers.query import QueryText
from signet_bench.store.schema import FTS_DDL
from signet_scorer.terms import fts_match_expression, recall_terms

__all__ = ["BM25Ranker", "candidate_bm25"]

_MEMORIES = """CREATE TABLE memories (
    id TEXT PRIMARY KEY, content TEXT NOT NULL, importance REAL, is_deleted INTEGER DEFAULT 0
)"""


def candidate_bm25(
    contents: Sequence[str],
    query: str,
    importance: np.ndarray | None = None,
    importance_min: float | None = None,
) -> np.ndarray:
    """(n,) |bm25| / max|bm25| of each content for `query`'s recall terms, 0.0 where it does
    not match. With `importance_min`, candidates below it (or with a NULL importance, NaN) are
    left out of the search, as Signet's `importance >= ?` filter leaves them out."""
    n = len(contents)
    out = np.zeros(n, dtype=np.float64)
    terms = recall_terms(query)
    if n == 0 or fts_match_expression(terms) is None:
        return out
    if importance_min is None:
        imp: list[float | None] = [0.0] * n
        floor = 0.0
    else:
        values = np.asarray(importance, dtype=np.float64)
        imp = [float(v) if np.isfinite(v) else None for v in values]
        floor = float(importance_min)
    con = sqlite3.connect(":memory:")
    try:
        con.execute(_MEMORIES)
        for ddl in FTS_DDL:
            con.execute(ddl)
        con.executemany(
            "INSERT INTO memories (rowid, id, content, importance) VALUES (?, ?, ?, ?)",
            [(i + 1, str(i), str(contents[i] or ""), imp[i]) for i in range(n)],
        )
        hits = fts_search(con, terms, limit=n, importance_min=floor, include_deleted=True)
    finally:
        con.close()
    for pos, score in hits:
        out[int(pos)] = score
    return out


@dataclass(frozen=True, eq=False)
class BM25Ranker(QueryText):
    """Keyword recall alone: `candidate_bm25` of the candidates' contents for `query`, without
    Signet's importance filter or hit limit (every candidate is ranked; non-matches score 0.0).

    The query is given at construction (`SessionInputs` has no query text): for LoCoMo the
    question, for a prompt the user's message; derive one ranker per query with `for_query`."""

    name: str = "bm25"

    def score(self, inputs: SessionInputs) -> np.ndarray:
        return candidate_bm25(inputs.contents, self.query)
