"""What Signet injected against what the scorer would have injected, session by session.

Signet's choice is `session_memories.was_injected`. The scorer's is the same number of the
session's start candidates, taken in the order of its scores (`predictor_score`: written by a
0.58 daemon running the predictor, by the simulated daemon, and never by current Signet, which
writes it as NULL). Both choices are set beside the judge's per-memory `relevance_score`;
Signet's judge rates what was injected, so the scorer's other picks are often unjudged, and
their number is reported rather than counted as zero.
"""

from __future__ import annotations

import duckdb
import polars as pl

from signet_bench.analysis.queries.source import agent_condition
from signet_bench.store.read import DEFAULT_AGENT

__all__ = ["injection_contrast", "injection_summary"]

_CONTRAST_SQL = """
WITH sm AS (
    SELECT session_key, memory_id, COALESCE(TRY_CAST(was_injected AS BIGINT), 0) <> 0 AS injected,
           TRY_CAST(predictor_score AS DOUBLE) AS score,
           TRY_CAST(relevance_score AS DOUBLE) AS relevance
    FROM store.session_memories
    WHERE source IS DISTINCT FROM 'fts_only' AND {agent}
),
ranked AS (
    SELECT *, COUNT(*) FILTER (WHERE injected) OVER (PARTITION BY session_key) AS n_injected,
           CASE WHEN score IS NOT NULL THEN row_number() OVER (
               PARTITION BY session_key ORDER BY score DESC NULLS LAST, memory_id) END
               AS scorer_rank
    FROM sm
),
picked AS (SELECT *, COALESCE(scorer_rank <= n_injected, false) AS pick FROM ranked)
SELECT session_key,
       COUNT(*) FILTER (WHERE injected) AS signet_injected,
       COUNT(*) FILTER (WHERE pick) AS scorer_picks,
       COUNT(*) FILTER (WHERE injected AND pick) AS both_chose,
       SUM(relevance) FILTER (WHERE injected) AS signet_relevance_sum,
       COUNT(relevance) FILTER (WHERE injected) AS signet_judged,
       SUM(relevance) FILTER (WHERE pick) AS scorer_relevance_sum,
       COUNT(relevance) FILTER (WHERE pick) AS scorer_judged
FROM picked GROUP BY session_key
"""


def injection_contrast(
    con: duckdb.DuckDBPyConnection, agent_id: str = DEFAULT_AGENT
) -> pl.DataFrame:
    """Per session: `signet_injected`, `scorer_picks` (0 when the scorer scored none of its
    candidates), `both_chose`, the judge's mean relevance of each choice over its judged
    memories (`signet_relevance`, `scorer_relevance`; null when none was judged) with the
    counts behind them (`signet_judged`, `scorer_judged`); `agent_id`'s sessions on a current
    store."""
    sql = _CONTRAST_SQL.format(agent=agent_condition(con, "session_memories", agent_id))
    frame = con.sql(sql).pl()
    mean = {
        f"{who}_relevance": pl.when(pl.col(f"{who}_judged") > 0).then(
            pl.col(f"{who}_relevance_sum") / pl.col(f"{who}_judged")
        )
        for who in ("signet", "scorer")
    }
    return frame.with_columns(**mean).sort("session_key")


def _mean(frame: pl.DataFrame, who: str) -> float | None:
    judged = int(frame[f"{who}_judged"].sum())
    return None if judged == 0 else float(frame[f"{who}_relevance_sum"].sum()) / judged


def injection_summary(contrast: pl.DataFrame) -> str:
    """The contrast in words, over the sessions the scorer ranked: how much of Signet's
    injection it would have kept, and the judge's mean relevance of each choice (per memory)."""
    ranked = contrast.filter(pl.col("scorer_picks") > 0)
    if ranked.height == 0:
        return (
            "The scorer ranked none of these sessions: the store holds no scorer scores "
            "(session_memories.predictor_score is empty; current Signet writes none), so what "
            "it would have injected is not known here."
        )
    injected, kept = int(ranked["signet_injected"].sum()), int(ranked["both_chose"].sum())
    picks, judged = int(ranked["scorer_picks"].sum()), int(ranked["scorer_judged"].sum())
    share = kept / injected if injected else 0.0
    text = (
        f"In the {ranked.height} sessions the scorer ranked, it would have injected {kept} of "
        f"the {injected} memories Signet injected ({share:.0%}), and {picks - kept} others."
    )
    signet, scorer = _mean(ranked, "signet"), _mean(ranked, "scorer")
    if signet is not None and scorer is not None:
        text += (
            f" The judge's mean relevance: {signet:.2f} for Signet's injected memories, "
            f"{scorer:.2f} for the scorer's picks ({picks - judged} of its {picks} picks were "
            "never judged: the judge rates what was injected)."
        )
    return text
