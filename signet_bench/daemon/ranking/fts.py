"""Keyword recall through the store's FTS5 index: BM25 search of a prompt's terms.

`fts_search` runs `bm25(memories_fts)` over the MATCH string of the terms (Signet's query
shape, one home for hook and loop: `signet_scorer.terms`) and normalises |bm25| / max|bm25|
within the batch.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from signet_scorer.terms import fts_match_expression

__all__ = ["fts_search"]


def fts_search(
    con: sqlite3.Connection,
    terms: Sequence[str],
    *,
    limit: int = 20,
    importance_min: float = 0.3,
    include_deleted: bool = False,
) -> list[tuple[str, float]]:
    """BM25 hits as (memory_id, |bm25| / max|bm25|), best first (bm25, then id asc).

    Soft-deleted memories stay in the FTS index, so they are filtered out by default;
    `include_deleted=True` reproduces Signet 0.58, whose FTS recall does not filter them."""
    expr = fts_match_expression(terms)
    if expr is None or limit <= 0:
        return []
    deleted_clause = "" if include_deleted else " AND COALESCE(m.is_deleted, 0) = 0"
    rows = con.execute(
        f"""SELECT m.id, bm25(memories_fts) AS raw_score
            FROM memories_fts JOIN memories m ON memories_fts.rowid = m.rowid
            WHERE memories_fts MATCH ? AND m.importance >= ?{deleted_clause}
            ORDER BY raw_score, m.id
            LIMIT ?""",
        (expr, float(importance_min), int(limit)),
    ).fetchall()
    if not rows:
        return []
    top = max(abs(float(r[1])) for r in rows)
    norm = top if top > 0 else 1.0  # Signet: a zero maximum normalises by 1
    return [(str(mid), abs(float(raw)) / norm) for mid, raw in rows]
