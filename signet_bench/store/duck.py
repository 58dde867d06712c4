"""DuckDB over a Signet store: the SQLite extension loaded from its pip wheel, the store attached
read-only as `store`, the workbench file as `wb`, and analytic helpers returning Polars frames.

Timestamps: Signet writes them as TEXT in two formats, and one bad value in a column DuckDB maps
to TIMESTAMP fails a whole scan (DESIGN §9.6). Signet declares them TEXT, so they arrive as
VARCHAR; `attach_store` then defines views in `main` with the same names as the store's tables
(`memories`, `session_memories`, ...) in which each timestamp column is a naive TIMESTAMP holding
UTC time (`ts_expr`: TRY_CAST, so NULL when unparsable; an explicit offset is honoured under
the connection's `TimeZone = 'UTC'`). Naive rather than TIMESTAMPTZ because DuckDB needs `pytz`
to return TIMESTAMPTZ values to Python rows. The helpers below return Polars columns as
`Datetime("us", "UTC")`, like `store.read`. Raw text stays at `store.<table>`.
`sqlite_all_varchar` is left off (numbers keep their types); pass `all_varchar=True` to read
every column as text when a store holds values of the wrong storage class.

Do not open the same store with stdlib `sqlite3` in this process while a DuckDB connection has it
attached (DESIGN §9.2): each library carries its own SQLite.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from signet_bench.store.errors import (
    NotSignetStoreError,
    StoreError,
)
from signet_bench.store.read import check_sqlite_file
from signet_bench.store.schema import REQUIRED_TABLES

__all__ = [
    "SESSION_MEMORY_SUMMARY_SQL",
    "SESSION_OVERVIEW_SQL",
    "TIMESTAMP_COLUMNS",
    "attach_store",
    "attach_workbench",
    "connect_duckdb",
    "session_memory_summary",
    "session_overview",
    "sqlite_extension_path",
    "ts_expr",
]

DUCKDB_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
BUSY_TIMEOUT_MS = 5_000

# Timestamp columns per table, exposed as naive UTC TIMESTAMPs by the `main.<table>` views.
TIMESTAMP_COLUMNS: dict[str, tuple[str, ...]] = {
    "memories": ("created_at", "updated_at", "last_accessed", "deleted_at"),
    "embeddings": ("created_at",),
    "session_memories": ("created_at",),
    "session_scores": ("created_at",),
    "summary_jobs": ("created_at", "completed_at"),
    "memory_history": ("created_at",),
    "memories_cold": ("original_created_at", "archived_at"),
    "predictor_comparisons": ("created_at",),
    "predictor_training_log": ("created_at",),
    "predictor_training_pairs": ("created_at",),
    "session_checkpoints": ("created_at",),
    "entities": ("created_at", "updated_at", "pinned_at"),
    "entity_attributes": ("created_at", "updated_at"),
    "entity_aspects": ("created_at", "updated_at"),
    "relations": ("created_at", "updated_at"),
    "memory_entity_mentions": ("created_at",),
}


def sqlite_extension_path() -> Path:
    """The sqlite_scanner extension file that the `duckdb-extension-sqlite-scanner` wheel ships."""
    import duckdb_extension_sqlite_scanner as ext

    root = Path(ext.__file__).parent
    found = sorted(root.glob("extensions/v*/sqlite_scanner.duckdb_extension"))
    if not found:
        raise StoreError(
            f"{root}: no extensions/v*/sqlite_scanner.duckdb_extension; reinstall "
            f"duckdb-extension-sqlite-scanner=={duckdb.__version__}"
        )
    return found[-1]


def _quote(text: str | Path) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def connect_duckdb(
    store_path: str | Path | None = None,
    *,
    workbench_path: str | Path | None = None,
    all_varchar: bool = False,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB that never downloads: the SQLite extension is LOADed from its file;
    the store (if given) is attached READ_ONLY as `store`, the workbench file (if given) as `wb`.
    """
    con = duckdb.connect(config=dict(DUCKDB_CONFIG))
    try:
        con.execute(f"LOAD {_quote(sqlite_extension_path())}")
        con.execute("SET TimeZone = 'UTC'")  # naive Signet timestamps are UTC
        con.execute("SET enable_progress_bar = false")
        if all_varchar:
            con.execute("SET GLOBAL sqlite_all_varchar = true")
        if store_path is not None:
            attach_store(con, store_path)
        if workbench_path is not None:
            attach_workbench(con, workbench_path)
    except BaseException:
        con.close()
        raise
    return con


def attach_store(
    con: duckdb.DuckDBPyConnection, store_path: str | Path, *, alias: str = "store"
) -> None:
    """ATTACH IF NOT EXISTS the store (TYPE sqlite, READ_ONLY) and (re)create the `main` views."""
    p = check_sqlite_file(store_path)
    con.execute(
        f"ATTACH IF NOT EXISTS {_quote(p.resolve())} AS {alias}"
        f" (TYPE sqlite, READ_ONLY, BUSY_TIMEOUT {BUSY_TIMEOUT_MS})"
    )
    tables = _attached_tables(con, alias)
    missing = [t for t in REQUIRED_TABLES if t not in tables]
    if missing:
        con.execute(f"DETACH {alias}")
        raise NotSignetStoreError(p, missing)
    _create_views(con, alias, tables)


def attach_workbench(con: duckdb.DuckDBPyConnection, workbench_path: str | Path) -> None:
    """ATTACH IF NOT EXISTS the workbench DuckDB file as `wb` (created if absent)."""
    con.execute(f"ATTACH IF NOT EXISTS {_quote(Path(workbench_path).resolve())} AS wb")


def _attached_tables(con: duckdb.DuckDBPyConnection, alias: str) -> dict[str, list[str]]:
    rows = con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = ?"
        " ORDER BY table_name, column_index",
        [alias],
    ).fetchall()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return out


def ts_expr(column: str) -> str:
    """SQL turning a Signet timestamp text column into a naive UTC TIMESTAMP (NULL if unparsable).

    Both Signet forms (`...Z` and no zone) are UTC and cast directly; text with an explicit
    offset after the seconds goes through TIMESTAMPTZ (ICU, slower) so the offset is applied.
    """
    c = f'"{column}"'
    return (
        f"CASE WHEN contains(substr({c}, 20), '+') OR contains(substr({c}, 20), '-')"
        f" THEN TRY_CAST({c} AS TIMESTAMPTZ)::TIMESTAMP ELSE TRY_CAST({c} AS TIMESTAMP) END"
    )


def _create_views(con: duckdb.DuckDBPyConnection, alias: str, tables: dict[str, list[str]]) -> None:
    for table, ts_cols in TIMESTAMP_COLUMNS.items():
        cols = tables.get(table)
        if cols is None:
            continue
        present = [c for c in ts_cols if c in cols]
        replace = ", ".join(f'{ts_expr(c)} AS "{c}"' for c in present)
        star = f"* REPLACE ({replace})" if replace else "*"
        con.execute(
            f'CREATE OR REPLACE VIEW main."{table}" AS SELECT {star} FROM {alias}."{table}"'
        )


# --- analytic helpers ----------------------------------------------------------------------

SESSION_MEMORY_SUMMARY_SQL = """
WITH sm AS (  -- explicit casts, so the query also runs with all_varchar=True
    SELECT
        session_key,
        created_at,
        was_injected::BIGINT <> 0 AS injected,
        predictor_score::DOUBLE AS predictor_score,
        relevance_score::DOUBLE AS relevance_score,
        fts_hit_count::BIGINT AS fts_hit_count,
        is_constraint::BIGINT <> 0 AS is_constraint
    FROM main.session_memories
)
SELECT
    session_key,
    MIN(created_at) AS started_at,
    COUNT(*) AS candidates,
    COUNT(*) FILTER (WHERE injected) AS injected,
    COUNT(predictor_score) AS scored,
    AVG(relevance_score) FILTER (WHERE injected) AS mean_relevance,
    SUM(fts_hit_count)::BIGINT AS fts_hits,
    COUNT(*) FILTER (WHERE fts_hit_count > 0) AS fts_hit_memories,
    COUNT(*) FILTER (WHERE is_constraint) AS constraints
FROM sm
GROUP BY session_key
ORDER BY started_at, session_key
"""

SESSION_OVERVIEW_SQL = f"""
WITH per_session AS ({SESSION_MEMORY_SUMMARY_SQL})
SELECT
    COUNT(*) AS sessions,
    SUM(candidates)::BIGINT AS candidates,
    AVG(candidates) AS mean_candidates,
    QUANTILE_CONT(candidates, 0.5) AS median_candidates,
    AVG(injected) AS mean_injected,
    AVG(scored::DOUBLE / candidates) AS scored_share,
    AVG(mean_relevance) AS mean_relevance,
    SUM(fts_hits)::BIGINT AS fts_hits,
    AVG(fts_hit_memories::DOUBLE / candidates) AS fts_hit_share
FROM per_session
"""


def session_memory_summary(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Per session: candidates, injected, predictor-scored, mean relevance of the injected,
    FTS hits (sum) and FTS-hit memories, constraints; ordered by start time."""
    frame = con.sql(SESSION_MEMORY_SUMMARY_SQL).pl()
    return frame.with_columns(pl.col("started_at").dt.replace_time_zone("UTC"))


def session_overview(con: duckdb.DuckDBPyConnection) -> dict[str, float | int | None]:
    """The per-session summary aggregated over all sessions: one row as a dict."""
    rel = con.sql(SESSION_OVERVIEW_SQL)
    row = rel.fetchone()
    return dict(zip(rel.columns, row, strict=True)) if row else {}
