"""The store's candidate rows (`session_memories`) counted per session in one pass, for every
lower panel of the dashboard that reads them: Signet's injections against the scorer's picks
(`injections.injection_contrast`), the rows carrying each of the table's label sources
(`label_counts.label_source_counts`, which names them as SQL conditions) and the graph
traversal's candidates (`entities.focal_entities`, which says how many there were when none
names an entity). Each used to scan the table on its own; on a year of heavy use (1.5M rows) a
scan through DuckDB's SQLite reader costs most of a second of CPU, and ranking each session's
candidates by the scorer's score as much again, so the three share this one scan and ranking.

Signet's choice is `was_injected`; the scorer's is the same number of the session's candidates,
taken in the order of its scores (`predictor_score`, ties by memory id), as `injections`
describes: each session's scored candidates sorted as one small list, which costs about half
of a window ranking over every row of the table. Both are
counted over the session's candidates other than `fts_only` rows; the named conditions and
the traversal's candidates over all of its rows (as the label reader and the note count them).
"""

from __future__ import annotations

from collections.abc import Mapping

import duckdb
import polars as pl

from signet_bench.analysis.queries.hook_usage import candidate_evidence, used_sql
from signet_bench.store.read import quote_ident
from signet_scorer.workbench import DEFAULT_AGENT

__all__ = ["CONTRAST_COLUMNS", "TRAVERSAL_IN", "candidate_sessions"]

TRAVERSAL_IN = "('ka_traversal', 'ka_traversal_pinned')"  # the traversal's `source`, in SQL

CONTRAST_COLUMNS = (
    "signet_injected",
    "signet_used",
    "scorer_picks",
    "both_chose",
    "signet_relevance_sum",
    "signet_judged",
    "scorer_relevance_sum",
    "scorer_judged",
)
"""Per session, the injection contrast's counts (`injections.injection_contrast`)."""

_PASS_SQL = """
WITH sm AS (
    SELECT session_key, memory_id, injected AND NOT fts_only AS chosen, score, relevance,
           {used} AS used, fts_only, COALESCE(source IN {traversal}, false) AS traversal{flags}
    FROM (SELECT *, source IS NOT DISTINCT FROM 'fts_only' AS fts_only FROM ({evidence}))
),
per AS (
    SELECT session_key,
           COUNT(*) FILTER (WHERE NOT fts_only) AS candidates,
           COUNT(*) FILTER (WHERE chosen) AS signet_injected,
           COUNT(*) FILTER (WHERE chosen AND used) AS signet_used,
           SUM(relevance) FILTER (WHERE chosen) AS signet_relevance_sum,
           COUNT(relevance) FILTER (WHERE chosen) AS signet_judged,
           list_sort(list(struct_pack(s := -score, m := memory_id, i := chosen, r := relevance))
               FILTER (WHERE score IS NOT NULL AND NOT fts_only)) AS scored,
           COUNT(*) FILTER (WHERE traversal) AS traversal{counts}
    FROM sm GROUP BY session_key
),
picked AS (
    SELECT * EXCLUDE (scored), COALESCE(list_slice(scored, 1, signet_injected), []) AS picks
    FROM per
)
SELECT session_key, candidates, signet_injected, signet_used,
       len(picks) AS scorer_picks,
       len(list_filter(picks, p -> p.i)) AS both_chose,
       signet_relevance_sum, signet_judged,
       list_sum(list_transform(picks, p -> p.r)) AS scorer_relevance_sum,
       list_count(list_transform(picks, p -> p.r)) AS scorer_judged,
       traversal{named}
FROM picked
"""


def candidate_sessions(
    con: duckdb.DuckDBPyConnection,
    agent_id: str = DEFAULT_AGENT,
    counted: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """Per session of `agent_id`'s candidate rows (the store's only agent's on a 0.58 store):
    `session_key`, `candidates` (rows other than `fts_only`), `CONTRAST_COLUMNS`, `traversal`
    (graph-traversal candidates), and per name of `counted` (an SQL condition over the
    table's raw columns) the rows meeting it; from one scan of the table."""
    conditions = dict(counted or {})
    flags = "".join(f", c{i}" for i in range(len(conditions)))
    raw = [f"({sql}) AS c{i}" for i, sql in enumerate(conditions.values())]
    names = [quote_ident(name) for name in conditions]
    counts = "".join(f", COUNT(*) FILTER (WHERE c{i}) AS {n}" for i, n in enumerate(names))
    sql = _PASS_SQL.format(
        evidence=candidate_evidence(con, agent_id, raw),
        used=used_sql(),
        traversal=TRAVERSAL_IN,
        flags=flags,
        counts=counts,
        named="".join(f", {n}" for n in names),
    )
    return con.sql(sql).pl()
