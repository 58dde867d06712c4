"""DuckDB over a Signet store: the SQLite extension loaded from its pip wheel, the store's tables
as read-only views in the schema `store`, the workbench file attached as `wb`, and analytic
helpers returning Polars frames.

Why views and not ATTACH: a store left by Signet's daemon carries sqlite-vec's
`vec_embeddings USING vec0` virtual table, which DuckDB's SQLite cannot describe (`no such
module: vec0`). An attached SQLite catalog is described whole by every catalog listing
(`SHOW ALL TABLES`, `duckdb_tables()`, `information_schema.tables`, marimo's data-source panel),
so one such table broke them all. Instead each table and view listed in `sqlite_master` becomes
a view `store.<table>` over `sqlite_scan(path, table)` (raw columns; the file opened read-only
for each scan, with SQLite's busy timeout of 5 s, as `BUSY_TIMEOUT_MS`), and what cannot be
described is left out: virtual tables whose module DuckDB's SQLite lacks (vec0), virtual tables'
shadow tables, and whatever else fails to describe. `attach_store` / `attached_tables` say which
and why (also queryable as the temporary table `store_tables`). Nothing stays attached, so the
whole DuckDB catalog lists and every view reads, as fast as the attached tables read (both scan
through the same extension). Queries that need SQLite's own indexes (one session's rows) go
through `store_sql`, which attaches the file for that query only.

Timestamps: Signet writes them as TEXT in two formats, and one bad value in a column DuckDB maps
to TIMESTAMP fails a whole scan (docs/specification.md §2.3). Signet declares them TEXT, so they
arrive as VARCHAR; `attach_store` then defines views in `main` with the same names as the store's
tables (`memories`, `session_memories`, ...) in which each timestamp column is a naive TIMESTAMP
holding UTC time (`ts_expr`: TRY_CAST, so NULL when unparsable; an explicit offset is honoured under
the connection's `TimeZone = 'UTC'`). Naive rather than TIMESTAMPTZ because DuckDB needs `pytz`
to return TIMESTAMPTZ values to Python rows. The helpers below return Polars columns as
`Datetime("us", "UTC")`, like `store.read`. Raw text stays at `store.<table>`.
`sqlite_all_varchar` is left off (numbers keep their types); pass `all_varchar=True` to read
every column as text when a store holds values of the wrong storage class.

Every DuckDB failure here becomes a `DuckDBStoreError` naming the file and the step.

Do not open the same store with stdlib `sqlite3` in this process while a DuckDB connection reads
it (docs/specification.md §2.3): each library carries its own SQLite.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import duckdb
import duckdb_extension_sqlite_scanner as ext
import polars as pl

from signet_bench.store.errors import (
    DuckDBStoreError,
    NotSignetStoreError,
    StoreError,
    error_text,
)
from signet_bench.store.read import (
    BUSY_TIMEOUT_MS,
    SkippedTable,
    StoreTables,
    check_sqlite_file,
    master_entries,
    probe_tables,
    quote_ident,
    warn_if_newer_schema,
)
from signet_bench.store.schema import REQUIRED_TABLES, release_line_of

__all__ = [
    "SESSION_MEMORY_SUMMARY_SQL",
    "SESSION_OVERVIEW_SQL",
    "TIMESTAMP_COLUMNS",
    "attach_store",
    "attach_workbench",
    "attached_tables",
    "connect_duckdb",
    "session_memory_summary",
    "session_overview",
    "sqlite_extension_path",
    "store_sql",
    "ts_expr",
]

DUCKDB_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}

# Timestamp columns per table, exposed as naive UTC TIMESTAMPs by the `main.<table>` views.
TIMESTAMP_COLUMNS: dict[str, tuple[str, ...]] = {
    "memories": ("created_at", "updated_at", "last_accessed", "deleted_at"),
    "embeddings": ("created_at",),
    "session_memories": ("created_at",),
    "session_scores": ("created_at",),
    "summary_jobs": ("created_at", "completed_at", "captured_at", "started_at", "ended_at"),
    "memory_history": ("created_at",),
    "memories_cold": ("original_created_at", "archived_at"),
    "predictor_comparisons": ("created_at",),
    "predictor_training_log": ("created_at",),
    "predictor_training_pairs": ("created_at",),
    "session_checkpoints": ("created_at",),
    "entities": ("created_at", "updated_at", "pinned_at", "archived_at"),
    "entity_attributes": ("created_at", "updated_at", "archived_at"),
    "entity_aspects": ("created_at", "updated_at", "archived_at"),
    "entity_dependencies": ("created_at", "updated_at", "archived_at"),
    "relations": ("created_at", "updated_at"),
    "memory_entity_mentions": ("created_at",),
    "path_feedback_events": ("created_at",),
    "session_recall_events": ("created_at",),
}


def sqlite_extension_path() -> Path:
    """The sqlite_scanner extension file that the `duckdb-extension-sqlite-scanner` wheel ships."""
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


@contextmanager
def _duck_errors(path: str | Path, action: str) -> Iterator[None]:
    """Turn a `duckdb.Error` into a `DuckDBStoreError` naming the file and the step."""
    try:
        yield
    except duckdb.Error as exc:
        raise DuckDBStoreError(path, action, error_text(exc)) from exc


# DuckDB checks an extension's signature on every LOAD, in every new connection, by hashing
# the whole file (the SQLite extension's is 35 MB): about 0.3 s of CPU per connection, which a
# dashboard session paid before its first chart and again for the reads beside it. The check
# is made once per process and file: the first LOAD of a file checks it, and later
# connections load the same, unchanged file (its path, size and modification time) without
# hashing it again.
_CHECKED_EXTENSIONS: set[tuple[str, int, int]] = set()


def _file_state(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path), stat.st_size, stat.st_mtime_ns


def _connection_config(checked: bool) -> dict[str, object]:
    """DuckDB's configuration for a new connection (`checked`: its extension file's signature
    was checked in this process; see `_CHECKED_EXTENSIONS`)."""
    return dict(DUCKDB_CONFIG, allow_unsigned_extensions=True) if checked else dict(DUCKDB_CONFIG)


def connect_duckdb(
    store_path: str | Path | None = None,
    *,
    workbench_path: str | Path | None = None,
    all_varchar: bool = False,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB that never downloads: the SQLite extension is LOADed from its file;
    the store (if given) read through views (`attach_store`), the workbench file (if given)
    attached as `wb`. What the store's views leave out: `attached_tables(con)`.
    """
    label = store_path if store_path is not None else "in-memory DuckDB"
    ext = sqlite_extension_path()
    checked = _file_state(ext) in _CHECKED_EXTENSIONS
    with _duck_errors(label, "opening a connection"):
        con = duckdb.connect(config=_connection_config(checked))
    try:
        with _duck_errors(ext, "loading the SQLite extension"):
            con.execute(f"LOAD {_quote(ext)}")
        _CHECKED_EXTENSIONS.add(_file_state(ext))
        with _duck_errors(label, "configuring the connection"):
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
) -> StoreTables:
    """(Re)create the schema `alias` with a read-only view per readable table of the store
    (`sqlite_scan`), the `main` views with UTC timestamps, and the listing in the temporary
    table `<alias>_tables`. Returns the tables read (with columns) and the ones skipped, with
    why (e.g. `vec_embeddings`, vec0). Calling it again rebuilds the same views."""
    p = check_sqlite_file(store_path)
    source = p.resolve()
    try:
        with _duck_errors(p, "listing the store's tables"):
            _reset_schema(con, alias, source)
            tables = _list_tables(con, alias, source)
        present = set(tables.columns) | {s.name for s in tables.skipped}
        missing = [t for t in REQUIRED_TABLES if t not in present]
        if missing:
            raise NotSignetStoreError(p, missing)
        with _duck_errors(p, "reading schema_migrations"):
            version = _schema_version(con, alias, tables)
            warn_if_newer_schema(p, version, release_line_of(tables.columns))
        _create_views(con, alias, tables)
        with _duck_errors(p, f"recording the table listing in {alias}_tables"):
            _record_tables(con, alias, tables)
    except BaseException:
        with suppress(duckdb.Error):  # the first failure is the one to report
            _drop_schema(con, alias)
        raise
    return tables


def attach_workbench(con: duckdb.DuckDBPyConnection, workbench_path: str | Path) -> None:
    """ATTACH IF NOT EXISTS the workbench DuckDB file as `wb` (created if absent)."""
    path = Path(workbench_path).resolve()
    with _duck_errors(path, "attaching the workbench file"):
        con.execute(f"ATTACH IF NOT EXISTS {_quote(path)} AS wb")


def _path_variable(alias: str) -> str:
    """The DuckDB variable holding the file whose views live in schema `alias`."""
    return f"{alias}_sqlite_path"


def _reset_schema(con: duckdb.DuckDBPyConnection, alias: str, source: Path) -> None:
    """An empty schema `alias` (views of an earlier store dropped) and the file noted for it."""
    _drop_schema(con, alias)
    con.execute(f"CREATE SCHEMA {quote_ident(alias)}")
    con.execute(f"SET VARIABLE {quote_ident(_path_variable(alias))} = {_quote(source)}")


def _drop_schema(con: duckdb.DuckDBPyConnection, alias: str) -> None:
    con.execute(f"DROP SCHEMA IF EXISTS {quote_ident(alias)} CASCADE")
    con.execute(f"RESET VARIABLE {quote_ident(_path_variable(alias))}")


def _scan(source: str | Path, table: str) -> str:
    """DuckDB SQL reading one SQLite table or view (the file opened read-only for the scan)."""
    return f"SELECT * FROM sqlite_scan({_quote(source)}, {_quote(table)})"


def _list_tables(con: duckdb.DuckDBPyConnection, alias: str, source: Path) -> StoreTables:
    """Tables and views from `sqlite_master`, each made a view `alias.<table>` on its own (one
    that cannot be described is skipped); the views' columns are the tables'."""
    rows = con.execute(f"SELECT type, name, sql FROM ({_scan(source, 'sqlite_master')})").fetchall()
    entries, shadows = master_entries(rows)

    def make_view(table: str) -> list[str]:
        scan = _scan(source, table)
        columns = [d[0] for d in con.execute(f"{scan} LIMIT 0").description or ()]
        con.execute(f"CREATE VIEW {quote_ident(alias)}.{quote_ident(table)} AS {scan}")
        return columns

    return probe_tables(source, entries, shadows, make_view, duckdb.Error)


def _schema_version(con: duckdb.DuckDBPyConnection, alias: str, tables: StoreTables) -> int | None:
    if "schema_migrations" not in tables.columns:
        return None
    sql = f"SELECT MAX(TRY_CAST(version AS BIGINT)) FROM {quote_ident(alias)}.schema_migrations"
    row = con.execute(sql).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _record_tables(con: duckdb.DuckDBPyConnection, alias: str, tables: StoreTables) -> None:
    """The listing as the temporary table `<alias>_tables` (name, columns, skipped_reason)."""
    name = quote_ident(f"{alias}_tables")
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {name}"
        " (name VARCHAR, columns VARCHAR[], skipped_reason VARCHAR)"
    )
    # Literal rows: binding a few hundred parameters costs DuckDB ~30 ms, literals ~1 ms.
    rows = [
        f"({_quote(t)}, [{', '.join(_quote(c) for c in cols)}]::VARCHAR[], NULL)"
        for t, cols in tables.columns.items()
    ]
    rows += [f"({_quote(s.name)}, NULL, {_quote(s.reason)})" for s in tables.skipped]
    if rows:
        con.execute(f"INSERT INTO {name} VALUES {', '.join(rows)}")


def attached_tables(con: duckdb.DuckDBPyConnection, alias: str = "store") -> StoreTables:
    """The listing `attach_store` recorded for `alias`: readable tables and skipped ones."""
    path = _attached_path(con, alias)
    with _duck_errors(path, f"reading {alias}_tables"):
        rows = con.execute(
            f"SELECT name, columns, skipped_reason FROM {quote_ident(f'{alias}_tables')}"
            " ORDER BY name"
        ).fetchall()
    columns = {n: tuple(c) for n, c, reason in rows if reason is None}
    skipped = tuple(SkippedTable(n, reason) for n, _, reason in rows if reason is not None)
    return StoreTables(path, columns, skipped)


def _store_source(con: duckdb.DuckDBPyConnection, alias: str) -> str | None:
    """The file whose views are in schema `alias` (None when `attach_store` made none)."""
    try:
        # a literal, not a parameter: DuckDB imports pandas to bind the first Python parameter
        # (0.2-0.3 s), which the dashboard's first chart would wait for
        row = con.execute(f"SELECT getvariable({_quote(_path_variable(alias))})").fetchone()
    except duckdb.Error:
        return None
    return row[0] if row else None


def _attached_path(con: duckdb.DuckDBPyConnection, alias: str = "store") -> str:
    """The store read as `alias`, for error messages (a placeholder when there is none)."""
    return _store_source(con, alias) or f"DuckDB (no database attached as {alias})"


def store_sql(
    con: duckdb.DuckDBPyConnection, sql: str, select: str = "*", *, alias: str = "store"
) -> pl.DataFrame:
    """Rows of `sql` run by the store's own SQLite, so its indexes apply (one session's rows in
    milliseconds, where a view scans the whole table); every column arrives as text, and
    `select` casts them. The file is attached read-only for this query only and detached
    again, so catalog listings never meet its vec0 table."""
    source, step = _store_source(con, alias), "querying the store through SQLite"
    if source is None:
        raise DuckDBStoreError(_attached_path(con, alias), step, "no store attached")
    name = f"{alias}_sqlite"
    with _duck_errors(source, step):
        try:
            con.execute(
                f"ATTACH {_quote(source)} AS {quote_ident(name)}"
                f" (TYPE sqlite, READ_ONLY, BUSY_TIMEOUT {BUSY_TIMEOUT_MS})"
            )
            return con.execute(f"SELECT {select} FROM sqlite_query({_quote(name)}, ?)", [sql]).pl()
        finally:
            with suppress(duckdb.Error):  # a failure above is the one to report
                con.execute(f"DETACH DATABASE IF EXISTS {quote_ident(name)}")


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


def _create_views(con: duckdb.DuckDBPyConnection, alias: str, tables: StoreTables) -> None:
    """A `main.<table>` view with UTC timestamps for each table DuckDB could describe."""
    for table, ts_cols in TIMESTAMP_COLUMNS.items():
        cols = tables.columns.get(table)
        if cols is None:
            continue
        present = [c for c in ts_cols if c in cols]
        replace = ", ".join(f"{ts_expr(c)} AS {quote_ident(c)}" for c in present)
        star = f"* REPLACE ({replace})" if replace else "*"
        with _duck_errors(tables.path, f"creating view main.{table}"):
            con.execute(
                f"CREATE OR REPLACE VIEW main.{quote_ident(table)} AS SELECT {star}"
                f" FROM {alias}.{quote_ident(table)}"
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
    with _duck_errors(_attached_path(con), "summarising session_memories per session"):
        frame = con.sql(SESSION_MEMORY_SUMMARY_SQL).pl()
    return frame.with_columns(pl.col("started_at").dt.replace_time_zone("UTC"))


def session_overview(con: duckdb.DuckDBPyConnection) -> dict[str, float | int | None]:
    """The per-session summary aggregated over all sessions: one row as a dict."""
    with _duck_errors(_attached_path(con), "summarising session_memories over all sessions"):
        rel = con.sql(SESSION_OVERVIEW_SQL)
        row = rel.fetchone()
    return dict(zip(rel.columns, row, strict=True)) if row else {}
