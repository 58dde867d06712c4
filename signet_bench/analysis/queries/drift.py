"""The judge's drift signal over time (docs/specification.md §9.7: mean relevance of memories under
7 days old minus that of memories over 30 days old, at the time they were judged), overall and per
project, and the success rate per stretch of sessions; any of them over the sessions of one
focal entity (`entity_options`, `sessions_of_entity`).

`judged_memories` reads the judged rows (`relevance_score` set) from the raw `store` view
and parses timestamps once per session and per memory, not per row; on a current store, the
default agent's.
"""

from __future__ import annotations

import duckdb
import polars as pl

from signet_bench.analysis.judge_monitor import drift_signal
from signet_bench.analysis.queries.source import agent_condition
from signet_bench.analysis.wording import plural
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.store.duck import ts_expr

__all__ = [
    "ALL_SESSIONS",
    "drift_by_window",
    "entity_options",
    "judged_memories",
    "judged_of_sessions",
    "sessions_of_entity",
    "success_by_window",
]

ALL_SESSIONS = "all"
"""The focal-entity filter's label for no filter."""

_JUDGED_SQL = """
WITH judged AS (
    SELECT session_key, memory_id, relevance_score::DOUBLE AS relevance
    FROM store.session_memories WHERE relevance_score IS NOT NULL AND {agent}
),
starts AS (
    SELECT session_key, {started} AS started_at FROM (
        SELECT session_key, MIN(created_at) AS started_text FROM store.session_memories
        WHERE {agent} GROUP BY session_key)
),
born AS (SELECT id AS memory_id, {created} AS created_at FROM store.memories)
SELECT j.session_key, j.memory_id, j.relevance, s.started_at,
       date_diff('second', b.created_at, s.started_at) / 86400.0 AS age_days
FROM judged j JOIN starts s USING (session_key) LEFT JOIN born b USING (memory_id)
"""


def judged_memories(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Every judged candidate: session_key, memory_id, relevance, the session's start (UTC)
    and the memory's age in days at that start (null when the memory is gone)."""
    sql = _JUDGED_SQL.format(
        started=ts_expr("started_text"),
        created=ts_expr("created_at"),
        agent=agent_condition(con, "session_memories"),
    )
    frame = con.sql(sql).pl()
    return frame.with_columns(pl.col("started_at").dt.replace_time_zone("UTC"))


def judged_of_sessions(con: duckdb.DuckDBPyConnection, sessions: pl.DataFrame) -> pl.DataFrame:
    """`judged_memories` for a few sessions (rows of `sessions.session_frame`), read through
    the store's own SQLite and its `session_key` index: milliseconds on any store size."""
    # here: the dashboard's first render does without the inspector's (start-up time)
    from signet_bench.analysis.queries.inspector import sqlite_literal, sqlite_rows

    schema = {
        "session_key": pl.String,
        "memory_id": pl.String,
        "relevance": pl.Float64,
        "started_at": pl.Datetime("us", "UTC"),
        "age_days": pl.Float64,
    }
    if sessions.height == 0:
        return pl.DataFrame(schema=schema)
    keys = ", ".join(sqlite_literal(k) for k in sessions["session_key"].to_list())
    sql = (
        "SELECT sm.session_key, sm.memory_id, sm.relevance_score, m.created_at AS born"
        " FROM session_memories sm LEFT JOIN memories m ON m.id = sm.memory_id"
        f" WHERE sm.session_key IN ({keys}) AND sm.relevance_score IS NOT NULL"
        f" AND {agent_condition(con, 'session_memories', column='sm.agent_id')}"
    )
    select = (
        "session_key::VARCHAR AS session_key, memory_id::VARCHAR AS memory_id,"
        f" TRY_CAST(relevance_score AS DOUBLE) AS relevance, {ts_expr('born')} AS born"
    )
    rows = sqlite_rows(con, sql, select).with_columns(pl.col("born").dt.replace_time_zone("UTC"))
    age = (pl.col("started_at") - pl.col("born")).dt.total_seconds() / 86400.0
    return (
        rows.join(sessions.select("session_key", "started_at"), on="session_key")
        .with_columns(age.alias("age_days"))
        .select(list(schema))
    )


def entity_options(pairs: pl.DataFrame) -> dict[str, str | None]:
    """The focal-entity filter's choices, label -> entity: ALL_SESSIONS (None: every session)
    first, then each entity of `pairs` (`entities.focal_entities`' session_key, entity) with
    its number of sessions, most sessions first (by name at ties)."""
    counts = (
        pairs.group_by("entity")
        .agg(pl.col("session_key").n_unique().alias("sessions"))
        .sort(["sessions", "entity"], descending=[True, False])
    )
    options: dict[str, str | None] = {ALL_SESSIONS: None}
    for entity, n in counts.iter_rows():
        options[f"{entity} ({plural(n, 'session')})"] = entity
    return options


def sessions_of_entity(
    frame: pl.DataFrame, pairs: pl.DataFrame, entity: str | None
) -> pl.DataFrame:
    """The rows of `frame` (sessions, judged memories, feature samples: any frame keyed by
    `session_key`) of the sessions whose focal entities (`pairs`) include `entity`, in their
    order and with their own columns (a session keeps its number `n`); None: every row. An
    entity no session names is an error (a stale choice would otherwise show empty charts as
    if nothing had happened)."""
    if entity is None:
        return frame
    keys = pairs.filter(pl.col("entity") == entity)["session_key"]
    if keys.len() == 0:
        raise ValueError(f"focal entity {entity!r}: no session names it")
    return frame.filter(pl.col("session_key").is_in(keys.implode()))


def _windows(sessions: pl.DataFrame, window: int) -> pl.DataFrame:
    """Each session's stretch: `window` consecutive sessions of the frame (in the order of
    `n`; a filtered frame's stretches hold `window` of its own sessions), labelled by its last
    session's number and start."""
    w = max(1, int(window))
    keyed = (
        sessions.select("session_key", "n", "project", "started_at")
        .sort("n")
        .with_columns((pl.int_range(pl.len()) // w).alias("window"))
    )
    ends = keyed.group_by("window").agg(
        pl.col("n").max().alias("last_n"), pl.col("started_at").max().alias("until")
    )
    return keyed.join(ends, on="window")


def drift_by_window(
    judged: pl.DataFrame,
    sessions: pl.DataFrame,
    window: int = 25,
    *,
    by_project: bool = False,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> pl.DataFrame:
    """The drift signal per stretch of `window` sessions (per project too with `by_project`):
    columns window, last_n, until, [project,] drift, recent (judged memories < 7 d old), old
    (> 30 d old), flagged (drift > `judge_drift_signal_threshold`: recency bias). NaN where a side has
    no judged memory."""
    keyed = judged.join(_windows(sessions, window).drop("started_at"), on="session_key")
    keys = ["window", "last_n", "until"] + (["project"] if by_project else [])
    rows = []
    for key, g in keyed.group_by(keys, maintain_order=True):
        age = g["age_days"].fill_null(float("nan")).to_numpy()
        signal = drift_signal(g["relevance"].to_numpy(), age, cfg)
        recent = int((age < cfg.drift_recent_days).sum())
        old = int((age > cfg.drift_old_days).sum())
        rows.append((*key, signal, recent, old))
    schema = {"window": pl.Int64, "last_n": pl.Int64, "until": pl.Datetime("us", "UTC")}
    if by_project:
        schema["project"] = pl.String
    schema |= {"drift": pl.Float64, "recent": pl.Int64, "old": pl.Int64}
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    flagged = pl.col("drift").fill_nan(None) > cfg.judge_drift_signal_threshold
    return frame.with_columns(flagged.fill_null(False).alias("flagged")).sort(keys)


def success_by_window(
    sessions: pl.DataFrame, window: int = 25, *, by_project: bool = False
) -> pl.DataFrame:
    """The predictor's win rate over the sessions that counted, and the mean NDCG@10 margin,
    per stretch of `window` sessions (per project too): window, last_n, until, [project,]
    counted, win_rate, mean_margin."""
    keyed = sessions.join(
        _windows(sessions, window).select("session_key", "window", "last_n", "until"),
        on="session_key",
    )
    keys = ["window", "last_n", "until"] + (["project"] if by_project else [])
    counted = pl.col("counted")
    return (
        keyed.group_by(keys)
        .agg(
            counted.sum().alias("counted"),
            (pl.col("predictor_won") & counted).sum().alias("wins"),
            pl.col("margin").filter(counted).mean().alias("mean_margin"),
        )
        .with_columns(
            pl.when(pl.col("counted") > 0)
            .then(pl.col("wins") / pl.col("counted"))
            .alias("win_rate")
        )
        .sort(keys)
    )
