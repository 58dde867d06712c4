"""One row per session, and what the dashboard derives from those rows: outcomes, filters, the
success-rate line, drift resets, per-project and per-entity slices, recent sessions.

`session_frame` reads the store through DuckDB in one query: `session_memories` is aggregated
from the raw `store.session_memories` view, reading only the five columns the panels need and
parsing timestamps per session, not per row (a year of heavy use, 1.5M rows, takes about half a
second), joined with the judge's `session_scores` and each session's comparison row: the
store's `predictor_comparisons`, or the rows the caller passes (a current store keeps none; the
workbench recomputes them, `derived.derived_frames`). On a current store, whose session tables
hold every agent's rows, only the default agent's are read. Everything else here is a pure
function of that frame. `weekly_sessions` is the one panel read without it: the judge's
sessions per week from `session_scores` alone (milliseconds on any store), drawn while the
session frame is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import duckdb
import polars as pl

from signet_bench.analysis.queries.source import agent_condition
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.store.duck import attached_tables, ts_expr
from signet_scorer.workbench import DEFAULT_AGENT

__all__ = [
    "CONFIDENCE_GROUPS",
    "NO_PROJECT",
    "OUTCOMES",
    "drift_resets",
    "entity_slices",
    "filter_sessions",
    "project_slices",
    "projects_of",
    "recent_sessions",
    "session_frame",
    "weekly_sessions",
]

NO_PROJECT = "(no project)"
OUTCOMES = ("predictor won", "baseline won", "tie", "not scored", "no comparison")
CONFIDENCE_GROUPS = ("confident", "below the confidence gate")

_COMPARISONS = """
    SELECT session_key, project AS cmp_project, predictor_ndcg::DOUBLE AS predictor_ndcg,
           baseline_ndcg::DOUBLE AS baseline_ndcg, predictor_won::BIGINT <> 0 AS predictor_won,
           margin::DOUBLE AS margin, alpha::DOUBLE AS alpha,
           ema_updated::BIGINT <> 0 AS ema_updated, scorer_confidence::DOUBLE AS scorer_confidence,
           success_rate::DOUBLE AS success_rate, focal_entity_name,
           fts_overlap_score::DOUBLE AS fts_overlap_score, created_at AS compared_text
    FROM store.predictor_comparisons
    QUALIFY row_number() OVER (PARTITION BY session_key ORDER BY created_at DESC, id DESC) = 1
"""
_GIVEN_NAME = "given_comparisons"  # the caller's comparison rows, registered for one query
_GIVEN_COMPARISONS = """
    SELECT session_key, project AS cmp_project, predictor_ndcg, baseline_ndcg, predictor_won,
           margin, alpha, ema_updated, scorer_confidence, success_rate,
           NULL::VARCHAR AS focal_entity_name, fts_overlap_score, compared_text
    FROM {name}
    QUALIFY row_number() OVER (PARTITION BY session_key ORDER BY compared_text DESC, id DESC) = 1
"""
_NO_COMPARISONS = """
    SELECT NULL::VARCHAR AS session_key, NULL::VARCHAR AS cmp_project,
           NULL::DOUBLE AS predictor_ndcg, NULL::DOUBLE AS baseline_ndcg,
           NULL::BOOLEAN AS predictor_won, NULL::DOUBLE AS margin, NULL::DOUBLE AS alpha,
           NULL::BOOLEAN AS ema_updated, NULL::DOUBLE AS scorer_confidence,
           NULL::DOUBLE AS success_rate, NULL::VARCHAR AS focal_entity_name,
           NULL::DOUBLE AS fts_overlap_score, NULL::VARCHAR AS compared_text
    WHERE false
"""
# The simulator records the plain cosine ranking's NDCG@10 on the same ratings; a real store
# has no such column, and the frame's `cosine_ndcg` is then NULL.
_COSINE = "SELECT session_key, cosine_ndcg::DOUBLE AS cosine_ndcg FROM store.sim_sessions"
_NO_COSINE = "SELECT NULL::VARCHAR AS session_key, NULL::DOUBLE AS cosine_ndcg WHERE false"

_SESSIONS_SQL = """
WITH sm AS (
    SELECT session_key,
           MIN(created_at) AS started_text,
           COUNT(*) FILTER (WHERE source IS DISTINCT FROM 'fts_only') AS candidates,
           COUNT(*) FILTER (WHERE was_injected::BIGINT <> 0) AS injected,
           COUNT(predictor_score) AS predictor_scored
    FROM store.session_memories WHERE {sm_agent}
    GROUP BY session_key
),
sc AS (
    SELECT session_key, project, score::DOUBLE AS score, confidence::DOUBLE AS confidence,
           created_at AS scored_text
    FROM store.session_scores WHERE {sc_agent}
    QUALIFY row_number() OVER (PARTITION BY session_key ORDER BY created_at DESC, id DESC) = 1
),
pc AS ({comparisons}),
cs AS ({cosine}),
joined AS (
    SELECT * FROM sm FULL OUTER JOIN sc USING (session_key) LEFT JOIN pc USING (session_key)
    LEFT JOIN cs USING (session_key)
)
SELECT session_key,
       COALESCE({started}, {scored}) AS started_at,
       {scored} AS ended_at,
       {compared} AS compared_at,
       COALESCE(cmp_project, project) AS project,
       COALESCE(candidates, 0) AS candidates, COALESCE(injected, 0) AS injected,
       COALESCE(predictor_scored, 0) AS predictor_scored,
       score, confidence, predictor_ndcg, baseline_ndcg, cosine_ndcg, predictor_won, margin, alpha,
       ema_updated, scorer_confidence, success_rate, focal_entity_name, fts_overlap_score
FROM joined
"""


_WEEKLY_SQL = """
WITH sc AS (
    SELECT session_key, confidence::DOUBLE AS confidence, created_at
    FROM session_scores WHERE {sc_agent}
    QUALIFY row_number() OVER (PARTITION BY session_key ORDER BY created_at DESC, id DESC) = 1
)
SELECT date_trunc('week', created_at)::DATE AS week,
       CASE WHEN confidence >= {gate!r} THEN 'confident' ELSE 'below the confidence gate' END
           AS judged,
       COUNT(*) AS sessions
FROM sc WHERE created_at IS NOT NULL
GROUP BY ALL ORDER BY week, judged
"""


def weekly_sessions(
    con: duckdb.DuckDBPyConnection,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    agent_id: str = DEFAULT_AGENT,
) -> pl.DataFrame:
    """The sessions the judge scored, per week (Monday, UTC) and confidence group (one of
    CONFIDENCE_GROUPS: whether the judge's latest confidence passes the gate that lets a
    session count and train): `week`, `judged`, `sessions`. From `session_scores` alone
    (`agent_id`'s rows on a current store), so it is ready before the session frame. Read
    without a bound parameter or an Arrow result, whose first use imports pandas and pyarrow
    (0.3-0.4 s the page's first chart would wait for): the gate is a float literal and the
    few rows are fetched as tuples."""
    gate = float(cfg.min_scorer_confidence)
    sql = _WEEKLY_SQL.format(sc_agent=agent_condition(con, "session_scores", agent_id), gate=gate)
    rows = con.execute(sql).fetchall()
    return pl.DataFrame(
        rows, schema={"week": pl.Date, "judged": pl.String, "sessions": pl.Int64}, orient="row"
    )


def _outcome() -> pl.Expr:
    return (
        pl.when(pl.col("predictor_ndcg").is_null())
        .then(pl.lit("no comparison"))
        .when(pl.col("predictor_scored") == 0)
        .then(pl.lit("not scored"))
        .when(pl.col("predictor_won"))
        .then(pl.lit("predictor won"))
        .when(pl.col("margin") < 0)
        .then(pl.lit("baseline won"))
        .otherwise(pl.lit("tie"))
    )


def _comparisons_sql(
    con: duckdb.DuckDBPyConnection, tables: dict, comparisons: pl.DataFrame | None
) -> str:
    """The comparison rows' query: the given rows (registered with `con` for the query), else
    the store's `predictor_comparisons`, else none."""
    if comparisons is not None:
        rows = comparisons.with_columns(
            pl.col("created_at").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").alias("compared_text")
        )
        con.register(_GIVEN_NAME, rows)
        return _GIVEN_COMPARISONS.format(name=_GIVEN_NAME)
    return _COMPARISONS if "predictor_comparisons" in tables else _NO_COMPARISONS


def session_frame(
    con: duckdb.DuckDBPyConnection,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    comparisons: pl.DataFrame | None = None,
    agent_id: str = DEFAULT_AGENT,
) -> pl.DataFrame:
    """Every session of the store (`agent_id`'s on a current store), in the order the daemon
    judged them (comparison time, else start): `n` (1-based), key, start/end/comparison times
    (UTC), project, candidate counts, the judge's score and confidence, the comparison's columns
    (from `comparisons`, rows in `store.read.read_comparisons`' columns, when given; else the
    store's own), `cosine_ndcg` (the plain cosine ranking on the same ratings; simulated stores
    only, else NULL), `outcome` (one of OUTCOMES), `counted` (the session updated the
    success-rate EMA) and `low_confidence` (the judge's confidence below the gate)."""
    tables = attached_tables(con).columns
    sim = tables.get("sim_sessions", ())
    sql = _SESSIONS_SQL.format(
        comparisons=_comparisons_sql(con, tables, comparisons),
        cosine=_COSINE if "cosine_ndcg" in sim else _NO_COSINE,
        sm_agent=agent_condition(con, "session_memories", agent_id),
        sc_agent=agent_condition(con, "session_scores", agent_id),
        started=ts_expr("started_text"),
        scored=ts_expr("scored_text"),
        compared=ts_expr("compared_text"),
    )
    try:
        frame = con.sql(sql).pl()
    finally:
        if comparisons is not None:
            con.unregister(_GIVEN_NAME)
    utc = [pl.col(c).dt.replace_time_zone("UTC") for c in ("started_at", "ended_at", "compared_at")]
    return (
        frame.with_columns(*utc)
        .with_columns(
            pl.col("project").fill_null(NO_PROJECT),
            _outcome().alias("outcome"),
            pl.col("ema_updated").fill_null(False).alias("counted"),
            (pl.col("confidence").fill_null(0.0) < cfg.min_scorer_confidence).alias(
                "low_confidence"
            ),
            pl.coalesce("compared_at", "ended_at", "started_at").alias("order_at"),
        )
        .sort("order_at", "session_key", nulls_last=True)
        .with_row_index("n", offset=1)
        .drop("order_at")
    )


def projects_of(sessions: pl.DataFrame) -> list[str]:
    """The projects in the frame, most sessions first."""
    if sessions.height == 0:
        return []
    counts = sessions.group_by("project").len().sort(["len", "project"], descending=[True, False])
    return counts["project"].to_list()


def filter_sessions(
    sessions: pl.DataFrame,
    projects: Sequence[str] | None = None,
    since: date | None = None,
    until: date | None = None,
) -> pl.DataFrame:
    """The sessions of the chosen projects (None or empty: all) started within [since, until]
    (UTC dates, inclusive; None: open)."""
    out = sessions
    if projects:
        out = out.filter(pl.col("project").is_in(list(projects)))
    day = pl.col("started_at").dt.date()
    if since is not None:
        out = out.filter(day >= since)
    if until is not None:
        out = out.filter(day <= until)
    return out


def drift_resets(sessions: pl.DataFrame, cfg: PredictorConfig = DEFAULT_CONFIG) -> pl.DataFrame:
    """The sessions after which a drift reset happened: the success rate recorded with the next
    comparison rose by more than one EMA step can raise it (at most `ema_alpha · (1 − rate)`),
    which only a reset to `initial_success_rate` does. Columns: n, session_key, compared_at,
    project, success_rate (before the reset), reset_to."""
    cmp = sessions.filter(pl.col("success_rate").is_not_null()).sort("n")
    nxt = pl.col("success_rate").shift(-1)
    rise = nxt - pl.col("success_rate")
    limit = cfg.ema_alpha * (1.0 - pl.col("success_rate")) + 1e-9
    return (
        cmp.with_columns(nxt.alias("reset_to"))
        .filter(pl.col("reset_to").is_not_null() & (rise > limit))
        .select("n", "session_key", "compared_at", "project", "success_rate", "reset_to")
    )


def _slices(sessions: pl.DataFrame, by: str) -> pl.DataFrame:
    counted = pl.col("counted")
    return (
        sessions.group_by(by)
        .agg(
            pl.len().alias("sessions"),
            counted.sum().alias("counted"),
            (pl.col("predictor_won") & counted).sum().alias("wins"),
            pl.col("margin").filter(counted).mean().alias("mean_margin"),
            pl.col("predictor_ndcg").filter(counted).mean().alias("predictor_ndcg"),
            pl.col("baseline_ndcg").filter(counted).mean().alias("baseline_ndcg"),
        )
        .with_columns(
            pl.when(pl.col("counted") > 0)
            .then(pl.col("wins") / pl.col("counted"))
            .otherwise(None)
            .alias("win_rate")
        )
        .sort(["sessions", by], descending=[True, False])
    )


def project_slices(sessions: pl.DataFrame) -> pl.DataFrame:
    """Per project: sessions, sessions that counted (EMA-updated), wins, win rate, mean margin
    and mean NDCG@10 of both rankers over the counted sessions; most sessions first."""
    return _slices(sessions, "project")


def entity_slices(sessions: pl.DataFrame, pairs: pl.DataFrame | None = None) -> pl.DataFrame:
    """The same per focal entity: of `pairs` (session_key, entity: `entities.focal_entities`;
    a session counts for each of its entities), or, without them, of the entity each session's
    comparison names. Empty without any."""
    if pairs is None:
        named = sessions.filter(pl.col("focal_entity_name").is_not_null())
        return _slices(named, "focal_entity_name").rename({"focal_entity_name": "entity"})
    if pairs.height == 0:
        return _slices(sessions.head(0).with_columns(entity=pl.lit(None, pl.String)), "entity")
    # in the sessions' order, so each entity's means add up as a project's do (a join's own
    # order varies from run to run, and with it the last bit of a mean)
    named = sessions.join(
        pairs.select("session_key", "entity").unique(maintain_order=True),
        on="session_key",
        maintain_order="left",
    )
    return _slices(named, "entity")


def recent_sessions(
    sessions: pl.DataFrame, n: int = 15, cfg: PredictorConfig = DEFAULT_CONFIG
) -> pl.DataFrame:
    """The latest `n` sessions with the judge's continuity score and confidence, and whether
    the confidence passed the gate (cold start's view of the data flowing in)."""
    return (
        sessions.sort("n", descending=True)
        .head(n)
        .select(
            "n",
            "started_at",
            "project",
            "score",
            "confidence",
            (pl.col("confidence") >= cfg.min_scorer_confidence).alias("passes_gate"),
            "injected",
            "outcome",
        )
    )
