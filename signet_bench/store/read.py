"""Tolerant, read-only reader of a Signet store (`memories.db`) into Polars frames and numpy.

The file is opened with stdlib `sqlite3` by URI `mode=ro` plus `query_only`, so this module can
never write to a store or hold a write lock. Columns are read by name (their order depends on a
store's upgrade history); a missing optional column reads as its Signet default; both timestamp
formats (`...T...Z` and `YYYY-MM-DD HH:MM:SS`) become Polars `Datetime("us", "UTC")`.

Both release lines are read: Signet 0.58 (migrations to 030) and current Signet (0.145.7,
migrations to 080), told apart by what a store holds, not by its version number
(`release_line`, `store_shape`). On a current store the session readers return one agent's rows
(`agent_id`, default 'default'); the predictor tables it lacks read as empty frames.

Stores are tolerated as real installs leave them: tables the reader never reads, sqlite-vec's
`vec_embeddings USING vec0` virtual table (unreadable without its module; `store_tables` names it
as skipped), and schema versions newer than their line's, read by column name with a
`SchemaVersionWarning` as long as every table and column the workbench reads is there.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import re
import sqlite3
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path

import numpy as np
import polars as pl

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.store.errors import (
    EmbeddingBlobError,
    MissingColumnError,
    NotSignetStoreError,
    NotSQLiteError,
    SchemaVersionError,
    SchemaVersionWarning,
    StoreError,
    StoreMissingError,
    StoreTimestampError,
    error_text,
)
from signet_bench.store.schema import (
    KNOWN_TABLES,
    LINE_RELEASES,
    LINE_VERSIONS,
    REQUIRED_TABLES,
    ReleaseLine,
    release_line_of,
)
from signet_bench.store.timestamps import TimestampError, parse_ts
from signet_scorer.workbench import DEFAULT_AGENT

__all__ = [
    "BUSY_TIMEOUT_MS",
    "PREDICTOR_TABLES",
    "SESSION_START_SURFACE",
    "MemoryTable",
    "SkippedTable",
    "StoreLike",
    "StoreShape",
    "StoreTables",
    "check_sqlite_file",
    "master_entries",
    "open_readonly",
    "probe_tables",
    "quote_ident",
    "read_comparisons",
    "read_memories",
    "read_path_feedback",
    "read_recall_events",
    "read_session_memories",
    "read_session_starts",
    "read_sessions",
    "read_summary_jobs",
    "read_training_log",
    "release_line",
    "schema_version",
    "store_shape",
    "store_tables",
    "table_names",
    "warn_if_newer_schema",
]

StoreLike = str | Path | sqlite3.Connection


SESSION_START_SURFACE = "api.hooks.session-start"
"""The surface of the recall events current Signet writes for what session start injected (it
claims them so that later recalls do not repeat them): the injection itself, no evidence."""

# Wait this long for the daemon's write lock instead of failing at once (stdlib and DuckDB).
BUSY_TIMEOUT_MS = 5_000

UTC_US = pl.Datetime("us", "UTC")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_ISO_FMT = "%Y-%m-%dT%H:%M:%S%.fZ"  # JS toISOString()
_SQLITE_FMT = "%Y-%m-%d %H:%M:%S"  # SQLite datetime('now')

# Column specs: (name, kind, default), declared per table as "name kind [default]" rows (`_spec`).
# kind is text | real | int | bool | ts. default is an SQL expression used when the column is
# missing or NULL (None: NULL stays NULL; REQUIRED: error).
REQUIRED = "<required>"
_Spec = tuple[str, str, str | None]
_DTYPES: dict[str, pl.DataType] = {
    "text": pl.Utf8(),
    "real": pl.Float64(),
    "int": pl.Int64(),
    "bool": pl.Int64(),  # read as 0/1, cast to Boolean after
    "ts": pl.Utf8(),  # read as text, parsed after
}
_CASTS = {"text": "TEXT", "real": "REAL", "int": "INTEGER", "bool": "INTEGER", "ts": "TEXT"}


def _spec(*rows: str) -> tuple[_Spec, ...]:
    """Column specs from "name kind [default]" rows: kind one of `_CASTS`, default an SQL
    expression without spaces or `required` (none: a missing or NULL value stays NULL)."""
    out = []
    for row in rows:
        parts = row.split()
        if len(parts) not in (2, 3) or parts[1] not in _CASTS:
            raise ValueError(f"column spec {row!r}: expected 'name kind [default]'")
        default = parts[2] if len(parts) == 3 else None
        out.append((parts[0], parts[1], REQUIRED if default == "required" else default))
    return tuple(out)


_MEMORY_SPEC = _spec(
    "id             text  required",
    "type           text  'fact'",
    "content        text  required",
    "importance     real  0.5",
    "pinned         bool  0",
    "access_count   int   0",
    "created_at     ts    required",
    'updated_at     ts    "created_at"',
    "last_accessed  ts",
    "project        text",
    "tags           text",
    "is_deleted     bool  0",
    "deleted_at     ts",
)

_SESSION_SPEC = _spec(
    "id                    text  required",
    "session_key           text  'unknown'",
    "project               text",
    "harness               text",
    "score                 real  required",
    "memories_recalled     int",
    "memories_used         int",
    "novel_context_count   int",
    "reasoning             text",
    "created_at            ts    required",
    "confidence            real",
    "continuity_reasoning  text",
)

_SESSION_MEMORY_SPEC = _spec(
    "id                     text  required",
    "session_key            text  required",
    "memory_id              text  required",
    "source                 text  'effective'",
    "effective_score        real",
    "predictor_score        real",
    "final_score            real",
    "rank                   int   required",
    "was_injected           bool  required",
    "relevance_score        real",
    "fts_hit_count          int   0",
    "created_at             ts    required",
    "entity_slot            int",
    "aspect_slot            int",
    "is_constraint          bool  0",
    "structural_density     int",
    "predictor_rank         int",
    "agent_relevance_score  real",
    "agent_feedback_count   int   0",
)

_SESSION_MEMORY_KEYS = ("id", "session_key", "memory_id", "rank", "created_at")
"""The `session_memories` columns every read keeps: a row's id (an error names it) and the
columns the rows are sorted by."""

_SESSION_START_SPEC = _spec("session_key text required", "created_at ts required")

_COMPARISON_SPEC = _spec(
    "id                 text  required",
    "session_key        text  required",
    "agent_id           text  'default'",
    "predictor_ndcg     real  required",
    "baseline_ndcg      real  required",
    "predictor_won      bool  0",
    "margin             real  0",
    "alpha              real",
    "ema_updated        bool  0",
    "project            text",
    "candidate_count    int",
    "traversal_count    int   0",
    "constraint_count   int   0",
    "created_at         ts    required",
    "scorer_confidence  real  0",
    "success_rate       real  0.5",
    "predictor_top_ids  text  '[]'",
    "baseline_top_ids   text  '[]'",
    "relevance_scores   text  '{}'",
    "fts_overlap_score  real",
)

_SUMMARY_JOB_SPEC = _spec(
    "id            text  required",
    "session_key   text",
    "harness       text",
    "project       text",
    "transcript    text  ''",
    "status        text  'pending'",
    "result        text",
    "attempts      int   0",
    "max_attempts  int   3",
    "created_at    ts    required",
    "completed_at  ts",
    "error         text",
)

_TRAINING_LOG_SPEC = _spec(
    "id                     text  required",
    "agent_id               text  'default'",
    "model_version          int",
    "loss                   real",
    "sample_count           int",
    "duration_ms            int",
    "canary_ndcg            real",
    "canary_ndcg_delta      real",
    "canary_score_variance  real",
    "canary_topk_churn      real",
    "created_at             ts",
)

# Current Signet only (041, 073): the agent's path feedback and what recalls brought into a
# session. A 0.58 store has neither table; they read as empty frames.
_PATH_FEEDBACK_SPEC = _spec(
    "id           text  required",
    "session_key  text  required",
    "memory_id    text  required",
    "rating       real  required",
    "reward       real  0",
    "created_at   ts    required",
)

_RECALL_EVENT_SPEC = _spec(
    "session_key    text  required",
    "context_epoch  int   0",
    "item_kind      text  'memory'",
    "item_id        text  required",
    "surface        text",
    "mode           text",
    "score          real",
    "source         text",
    "created_at     ts    required",
)

_EMBEDDING_COLUMNS = ("source_id", "vector", "dimensions")  # embeddings columns read by name

# Per table, the columns the reader cannot default; checked up front on a newer schema version.
_NEEDED_COLUMNS: dict[str, tuple[str, ...]] = {
    "embeddings": _EMBEDDING_COLUMNS,
    **{
        table: tuple(name for name, _, default in spec if default is REQUIRED)
        for table, spec in (
            ("memories", _MEMORY_SPEC),
            ("session_scores", _SESSION_SPEC),
            ("session_memories", _SESSION_MEMORY_SPEC),
            ("predictor_comparisons", _COMPARISON_SPEC),
            ("summary_jobs", _SUMMARY_JOB_SPEC),
            ("predictor_training_log", _TRAINING_LOG_SPEC),
        )
    },
}


# --- opening -------------------------------------------------------------------------------


def check_sqlite_file(path: str | Path) -> Path:
    """The store's path once it is known to be an existing SQLite file (else a clear error),
    checked before any driver touches it (an empty file would otherwise become a database)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise StoreMissingError(p)
    if not p.is_file():
        raise StoreMissingError(p, "not a regular file")
    with p.open("rb") as fh:
        head = fh.read(len(_SQLITE_MAGIC))
    if head != _SQLITE_MAGIC:
        raise NotSQLiteError(p, "empty file" if not head else "no SQLite header")
    return p


def open_readonly(path: str | Path) -> sqlite3.Connection:
    """Open a store read-only (URI `mode=ro`, `query_only`, busy timeout) after validating it."""
    p = check_sqlite_file(path)
    uri = p.resolve().as_uri() + "?mode=ro"
    try:
        con = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"{p}: cannot open read-only: {exc}") from exc
    try:
        con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        con.execute("PRAGMA query_only = ON")
        _validate(con, p)
    except sqlite3.OperationalError as exc:
        con.close()
        raise StoreError(f"{p}: cannot read: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        con.close()
        raise NotSQLiteError(p, str(exc)) from exc
    except BaseException:
        con.close()
        raise
    return con


_NO_VERSION = "schema_migrations has no rows (no version recorded)"


def schema_version(con: sqlite3.Connection) -> int:
    """The highest version recorded in `schema_migrations` (errors if absent or empty)."""
    label = _label(con)
    if "schema_migrations" not in table_names(con):
        raise SchemaVersionError(label, "table schema_migrations is missing")
    version = _max_version(con)
    if version is None:
        raise SchemaVersionError(label, _NO_VERSION)
    return version


def _max_version(con: sqlite3.Connection) -> int | None:
    row = con.execute("SELECT MAX(CAST(version AS INTEGER)) FROM schema_migrations").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def _newer_than_known(version: int, line: ReleaseLine = "0.58") -> str:
    known = LINE_VERSIONS[line]
    return (
        f"schema_migrations records version {version}, newer than the versions this reader "
        f"knows (1..{known}, {LINE_RELEASES[line]}; migrations {known + 1:03d}.."
        f"{version:03d} are unknown)"
    )


def warn_if_newer_schema(
    label: str | Path, version: int | None, line: ReleaseLine = "0.58"
) -> None:
    """Warn (`SchemaVersionWarning`) that a store newer than its release line's schema here
    (0.58: 30, current: 80) is read by column name."""
    if version is not None and version > LINE_VERSIONS[line]:
        warnings.warn(
            f"{label}: {_newer_than_known(version, line)}; reading it by column name",
            SchemaVersionWarning,
            stacklevel=_caller_stacklevel(),
        )


def _caller_stacklevel() -> int:
    """The `warnings.warn` stacklevel of the first caller outside `signet_bench.store`, so a
    warning points at the user's line whatever path led to it (as pandas' find_stack_level)."""
    inside = (str(Path(__file__).parent) + os.sep, contextlib.__file__)
    frame, level = inspect.currentframe(), 0
    while frame is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    return level


def _validate(con: sqlite3.Connection, label: str | Path) -> None:
    """A Signet store: the required tables and a recorded version. A newer version than its
    release line's is read (with a warning) when every table and column the workbench reads is
    there."""
    tables = table_names(con)
    missing = [t for t in REQUIRED_TABLES if t not in tables]
    version = _max_version(con) if "schema_migrations" in tables else None
    line = _line(con, tables)
    if version is not None and version > LINE_VERSIONS[line]:
        columns = _missing_columns(con, tables)
        if missing or columns:
            parts = [f"missing table(s): {', '.join(missing)}"] if missing else []
            parts += [f"missing column(s): {', '.join(columns)}"] if columns else []
            raise SchemaVersionError(
                label,
                f"{_newer_than_known(version, line)}, and it lacks what the workbench reads: "
                + "; ".join(parts),
                missing=[*missing, *columns],
            )
        warn_if_newer_schema(label, version, line)
        return
    if missing:
        raise NotSignetStoreError(label, missing)
    if version is None:
        raise SchemaVersionError(label, _NO_VERSION)


def _line(con: sqlite3.Connection, tables: set[str]) -> ReleaseLine:
    """The store's release line (`schema.release_line_of`) from its `session_memories`."""
    present = (
        {"session_memories": _columns(con, "session_memories")}
        if ("session_memories" in tables)
        else {}
    )
    return release_line_of(present)


def release_line(store: StoreLike) -> ReleaseLine:
    """ "current" or "0.58": the release line of a store by what it holds, not by its version
    number (`schema.release_line_of`). A connection (a reader's, or the simulated daemon's
    writer) is asked as it is; a path is opened read-only and validated."""
    if isinstance(store, sqlite3.Connection):
        return _line(store, table_names(store))
    with _using(store) as (con, _):
        return _line(con, table_names(con))


def _missing_columns(con: sqlite3.Connection, tables: set[str]) -> list[str]:
    """`table.column` for each column the reader cannot default that a present table lacks."""
    out = []
    for table, needed in _NEEDED_COLUMNS.items():
        if table in tables:
            present = _columns(con, table)
            out += [f"{table}.{c}" for c in needed if c not in present]
    return out


@contextmanager
def _using(store: StoreLike) -> Iterator[tuple[sqlite3.Connection, str]]:
    """Yield (connection, label); a path is opened and closed here, a connection is borrowed."""
    if isinstance(store, sqlite3.Connection):
        label = _label(store)
        _validate(store, label)
        yield store, label
        return
    con = open_readonly(store)
    try:
        yield con, str(store)
    finally:
        con.close()


@contextmanager
def _snapshot(con: sqlite3.Connection) -> Iterator[None]:
    """One read transaction, so several SELECTs see the same state of a live store."""
    if con.in_transaction:
        yield
        return
    con.execute("BEGIN")
    try:
        yield
    finally:
        con.execute("COMMIT")


def _label(con: sqlite3.Connection) -> str:
    for _seq, name, file in con.execute("PRAGMA database_list"):
        if name == "main":
            return file or ":memory:"
    return "<sqlite connection>"


def table_names(con: sqlite3.Connection) -> set[str]:
    """The names of the store's tables and views (from `sqlite_master`; nothing described)."""
    rows = con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    return {r[0] for r in rows}


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return set(_column_list(con, table))


def _column_list(con: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA table_info({quote_ident(table)})")]


def quote_ident(name: str) -> str:
    """An SQL identifier in double quotes (SQLite and DuckDB), inner quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


# --- which tables a reader can read --------------------------------------------------------

_VIRTUAL = re.compile(r"\s*CREATE\s+VIRTUAL\s+TABLE\b.*?\bUSING\s+(\w+)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class SkippedTable:
    """A table or view of a store that a reader leaves out, and why."""

    name: str
    reason: str


@dataclass(frozen=True)
class StoreTables:
    """The tables and views a reader can read (each with its columns) and the ones it skipped:
    virtual tables whose module it lacks (sqlite-vec's `vec0`), the shadow tables holding virtual
    tables' data, and anything else it cannot describe."""

    path: str
    columns: Mapping[str, tuple[str, ...]]
    skipped: tuple[SkippedTable, ...]

    def skipped_note(self) -> str:
        """One line naming every skipped table and why ('' when none was skipped)."""
        if not self.skipped:
            return ""
        items = "; ".join(f"{s.name} ({s.reason})" for s in self.skipped)
        return f"{self.path}: skipped {len(self.skipped)} table(s): {items}"


def master_entries(
    rows: Iterable[tuple[str, str, str | None]],
) -> tuple[dict[str, str | None], list[SkippedTable]]:
    """Split `sqlite_master` rows (type, name, sql) into the tables and views to describe, each
    with its virtual-table module (None when ordinary), and the virtual tables' shadow tables
    (`<virtual>_<suffix>`, never one Signet defines), which are skipped. SQLite's own
    `sqlite_*` tables and indexes are left out."""
    entries: dict[str, str | None] = {}
    for kind, name, sql in rows:
        if kind in ("table", "view") and not name.startswith("sqlite_"):
            found = _VIRTUAL.match(sql or "")
            entries[name] = found.group(1).lower() if found else None
    virtual = {n: m for n, m in entries.items() if m is not None}
    shadows = []
    for name in sorted(entries):
        owner = max((v for v in virtual if name.startswith(v + "_")), key=len, default=None)
        if owner is not None and entries[name] is None and name not in KNOWN_TABLES:
            reason = f"shadow table of virtual table {owner} (USING {virtual[owner]})"
            shadows.append(SkippedTable(name, reason))
    for shadow in shadows:
        del entries[shadow.name]
    return entries, shadows


def probe_tables(
    label: str | Path,
    entries: Mapping[str, str | None],
    skipped: Iterable[SkippedTable],
    describe: Callable[[str], Sequence[str]],
    errors: type[Exception] | tuple[type[Exception], ...],
) -> StoreTables:
    """Describe each entry (name -> virtual-table module or None) with `describe`; an entry whose
    description raises one of `errors` is skipped with the error as the reason."""
    columns: dict[str, tuple[str, ...]] = {}
    out = list(skipped)
    for name, module in sorted(entries.items()):
        try:
            columns[name] = tuple(describe(name))
        except errors as exc:
            what = f"virtual table USING {module}" if module else "cannot be described"
            out.append(SkippedTable(name, f"{what}: {error_text(exc)}"))
    return StoreTables(str(label), columns, tuple(sorted(out, key=lambda s: s.name)))


def store_tables(store: StoreLike) -> StoreTables:
    """Every table and view of the store this (stdlib) reader can read, with its columns, and the
    ones it skips with the reason (e.g. `vec_embeddings`: no such module: vec0)."""
    with _using(store) as (con, label):
        rows = con.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
        entries, shadows = master_entries(rows)
        return probe_tables(label, entries, shadows, lambda t: _column_list(con, t), sqlite3.Error)


PREDICTOR_TABLES: tuple[str, ...] = (
    "predictor_comparisons",
    "predictor_training_log",
    "predictor_training_pairs",
)
"""Signet 0.58's predictor tables: current Signet creates none of them."""


@dataclass(frozen=True)
class StoreShape:
    """What a store is, by what it holds: its release line ("0.58" or "current", from its
    tables, `schema.release_line_of`), the version `schema_migrations` records, the predictor
    tables it has (0.58's; a store upgraded to the current line may keep them, a new one has
    none) and the tables the reader cannot describe, skipped with why (sqlite-vec's
    `vec_embeddings`, virtual tables' shadow tables)."""

    path: str
    line: ReleaseLine
    version: int
    predictor_tables: tuple[str, ...]
    skipped: tuple[SkippedTable, ...]

    def summary(self) -> str:
        """One line: the release line and version, the predictor tables, what was skipped."""
        predictor = ", ".join(self.predictor_tables) or "none"
        text = (
            f"{self.path}: release line {self.line} (schema version {self.version});"
            f" predictor tables: {predictor}"
        )
        skipped = "; ".join(f"{s.name} ({s.reason})" for s in self.skipped)
        return f"{text}; skipped: {skipped}" if skipped else text


def store_shape(store: StoreLike) -> StoreShape:
    """The store's `StoreShape`: one look at its tables (never a traceback for a table the
    reader cannot describe: it is named in `skipped`)."""
    with _using(store) as (con, label):
        tables = store_tables(con)
        version = schema_version(con)
    return StoreShape(
        path=str(label),
        line=release_line_of(tables.columns),
        version=version,
        predictor_tables=tuple(t for t in PREDICTOR_TABLES if t in tables.columns),
        skipped=tables.skipped,
    )


# --- generic tolerant select ---------------------------------------------------------------


def _select_sql(
    table: str, spec: Sequence[_Spec], present: set[str], label: str, extra: str = ""
) -> str:
    exprs = []
    for name, kind, default in spec:
        cast = _CASTS[kind]
        if name in present:
            expr = f'"{name}"'
            if default not in (None, REQUIRED):
                expr = f"COALESCE({expr}, {default})"
        elif default is REQUIRED:
            raise MissingColumnError(label, table, name)
        elif default is None:
            expr = "NULL"
        else:
            expr = default
        if kind == "bool":
            exprs.append(f'(CAST({expr} AS INTEGER) != 0) AS "{name}"')
        else:
            exprs.append(f'CAST({expr} AS {cast}) AS "{name}"')
    return f'SELECT {", ".join(exprs)}{extra} FROM "{table}"'


def _frame(
    rows: list[tuple], spec: Sequence[_Spec], extra: Sequence[tuple[str, pl.DataType]] = ()
) -> pl.DataFrame:
    """A frame of fetched rows (bools read as 0/1 become Boolean), built from the rows as they
    are (polars reads the tuples itself: no Python list per column)."""
    names = [s[0] for s in spec] + [e[0] for e in extra]
    dtypes = [_DTYPES[s[1]] for s in spec] + [e[1] for e in extra]
    frame = pl.DataFrame(rows, schema=list(zip(names, dtypes, strict=True)), orient="row")
    bools = [s[0] for s in spec if s[1] == "bool"]
    return frame.with_columns(pl.col(b).cast(pl.Boolean) for b in bools) if bools else frame


def _schema(spec: Sequence[_Spec]) -> dict[str, pl.DataType]:
    """The output schema of a spec: bools as Boolean, timestamps as UTC datetimes."""
    out: dict[str, pl.DataType] = {}
    for name, kind, _ in spec:
        out[name] = pl.Boolean() if kind == "bool" else UTC_US if kind == "ts" else _DTYPES[kind]
    return out


def _parse_timestamps(
    frame: pl.DataFrame, spec: Sequence[_Spec], label: str, table: str, id_col: str = "id"
) -> pl.DataFrame:
    ts_cols = [s[0] for s in spec if s[1] == "ts"]
    return frame.with_columns(
        _parse_ts_series(frame[c], label, table, frame[id_col]) for c in ts_cols
    )


def _parse_ts_series(s: pl.Series, label: str, table: str, ids: pl.Series) -> pl.Series:
    """Both Signet formats, vectorised; anything else goes through `parse_ts` or errors."""
    naive = pl.Datetime("us")
    out = s.str.strptime(naive, _ISO_FMT, strict=False).fill_null(
        s.str.strptime(naive, _SQLITE_FMT, strict=False)
    )
    out = out.dt.replace_time_zone("UTC")
    bad = out.is_null() & s.is_not_null()
    if bad.any():
        values, fixed = s.to_list(), out.to_list()
        for i in bad.arg_true().to_list():
            try:
                fixed[i] = parse_ts(values[i])
            except TimestampError:
                raise StoreTimestampError(label, table, s.name, ids[i], values[i]) from None
        out = pl.Series(s.name, fixed, dtype=UTC_US)
    return out.alias(s.name)


def _read_table(
    store: StoreLike,
    table: str,
    spec: Sequence[_Spec],
    sort: Sequence[str],
    where: str = "",
    params: Sequence[object] = (),
    agent_id: str | None = None,
    id_col: str = "id",
) -> pl.DataFrame:
    """The table's rows by `spec`; with `agent_id`, only that agent's rows when the table has
    an `agent_id` column (current Signet keys sessions per agent; a 0.58 table has none).
    `id_col` names a row in an error about its timestamps."""
    with _using(store) as (con, label):
        if table not in table_names(con):  # an optional table an older store lacks
            return pl.DataFrame(schema=_schema(spec))
        present = _columns(con, table)
        if agent_id is not None and "agent_id" in present:
            where = f"{where} AND agent_id = ?" if where else " WHERE agent_id = ?"
            params = (*params, agent_id)
        sql = _select_sql(table, spec, present, label) + where
        rows = con.execute(sql, tuple(params)).fetchall()
    frame = _parse_timestamps(_frame(rows, spec), spec, label, table, id_col)
    return frame.sort(list(sort), nulls_last=True, maintain_order=True)


# --- memories + embeddings -----------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MemoryTable:
    """Memories as a frame plus their embeddings, row-aligned: `embeddings[i]` is `frame[i]`'s."""

    frame: pl.DataFrame
    embeddings: np.ndarray
    dim: int

    def __len__(self) -> int:
        return self.frame.height


def read_memories(
    store: StoreLike, *, include_deleted: bool = False, dim: int | None = None
) -> MemoryTable:
    """Memories (soft-deleted excluded unless asked), flags and float32 embeddings (N, dim).

    `superseded`: an `entity_attributes` row for it is superseded, or it is soft-deleted
    (docs/specification.md §2). A 'superseded' archive in `memories_cold` does *not* mark the live
    row: Signet's update path archives the old content and rewrites the row in place, so the live
    row holds the new, current content; only the archive is stale. `is_constraint`: type
    'constraint' or an active constraint attribute. Embeddings of another dimension than `dim`
    (default: the majority) read as missing; `embedding_dim` still reports the stored dimension.
    Ordered by created_at, id.
    """
    if dim is not None:
        if not isinstance(dim, Integral) or isinstance(dim, bool) or dim <= 0:
            raise ValueError(f"dim must be a positive integer, got {dim!r}")
        dim = int(dim)
    with _using(store) as (con, label), _snapshot(con):
        present = _columns(con, "memories")
        where = ""
        if not include_deleted and "is_deleted" in present:
            where = " WHERE COALESCE(is_deleted, 0) = 0"
        sql = _select_sql("memories", _MEMORY_SPEC, present, label, extra=", rowid") + where
        rows = con.execute(sql).fetchall()
        superseded_ids, constraint_ids = _flag_sets(con)
        emb_rows = _embedding_rows(con, label)
    frame = _frame(rows, _MEMORY_SPEC, extra=[("rowid", pl.Int64())])
    frame = _parse_timestamps(frame, _MEMORY_SPEC, label, "memories")
    frame = frame.sort(["created_at", "id"], nulls_last=True).select(
        "id", "rowid", *[s[0] for s in _MEMORY_SPEC[1:]]
    )
    frame = frame.with_columns(
        superseded=pl.col("id").is_in(_str_series(superseded_ids)) | pl.col("is_deleted"),
        is_constraint=(pl.col("type") == "constraint")
        | pl.col("id").is_in(_str_series(constraint_ids)),
    )
    embeddings, dim, has, dims = _align_embeddings(frame["id"].to_list(), emb_rows, dim, label)
    frame = frame.with_columns(
        pl.Series("has_embedding", has, dtype=pl.Boolean),
        pl.Series("embedding_dim", dims, dtype=pl.Int64),
    )
    return MemoryTable(frame=frame, embeddings=embeddings, dim=dim)


def _str_series(values: set[str]) -> pl.Series:
    """The set as a one-element list series, the form `is_in` expects for membership."""
    return pl.Series(sorted(values), dtype=pl.Utf8).implode()


def _flag_sets(con: sqlite3.Connection) -> tuple[set[str], set[str]]:
    """Ids with a superseded knowledge-graph attribute, and ids with active constraints."""
    tables = table_names(con)
    superseded: set[str] = set()
    constraints: set[str] = set()
    if "entity_attributes" in tables:
        cols = _columns(con, "entity_attributes")
        if "memory_id" in cols:
            conds = []
            if "status" in cols:
                conds.append("status = 'superseded'")
            if "superseded_by" in cols:
                conds.append("superseded_by IS NOT NULL")
            if conds:
                q = (
                    "SELECT DISTINCT memory_id FROM entity_attributes"
                    f" WHERE memory_id IS NOT NULL AND ({' OR '.join(conds)})"
                )
                superseded.update(r[0] for r in con.execute(q))
            if "kind" in cols:
                active = " AND COALESCE(status, 'active') = 'active'" if "status" in cols else ""
                q = (
                    "SELECT DISTINCT memory_id FROM entity_attributes"
                    f" WHERE memory_id IS NOT NULL AND kind = 'constraint'{active}"
                )
                constraints.update(r[0] for r in con.execute(q))
    return superseded, constraints


def _embedding_rows(con: sqlite3.Connection, label: str) -> list[tuple]:
    """(embedding id, memory id, blob, dimensions, n_bytes): the newest row per memory."""
    cols = _columns(con, "embeddings")
    for need in _EMBEDDING_COLUMNS:
        if need not in cols:
            raise MissingColumnError(label, "embeddings", need)
    kind = "source_type = 'memory'" if "source_type" in cols else "1"
    # Both timestamp formats compare correctly as text once 'T' and 'Z' are dropped.
    newest = (
        "replace(replace(created_at, 'T', ' '), 'Z', '') DESC, rowid DESC"
        if "created_at" in cols
        else "rowid DESC"
    )
    eid = "CAST(id AS TEXT)" if "id" in cols else "CAST(rowid AS TEXT)"
    sql = f"""
        SELECT {eid}, source_id, CAST(vector AS BLOB), CAST(dimensions AS INTEGER),
               length(CAST(vector AS BLOB))
        FROM embeddings WHERE rowid IN (
            SELECT rid FROM (
                SELECT rowid AS rid, ROW_NUMBER() OVER (
                    PARTITION BY source_id ORDER BY {newest}) AS rn
                FROM embeddings WHERE {kind})
            WHERE rn = 1)"""
    return con.execute(sql).fetchall()


def _align_embeddings(
    ids: list[str], emb_rows: Iterable[tuple], dim: int | None, label: str
) -> tuple[np.ndarray, int, list[bool], list[int | None]]:
    """Place each memory's blob at its row; check blob sizes; keep one dimension."""
    pos = {mid: i for i, mid in enumerate(ids)}
    found: list[tuple[int, bytes, int]] = []
    dims: list[int | None] = [None] * len(ids)
    for eid, mid, blob, d, n_bytes in emb_rows:
        i = pos.get(mid)
        if i is None or blob is None or d is None:
            continue
        if n_bytes != 4 * d:
            raise EmbeddingBlobError(label, mid, n_bytes, d, eid)
        dims[i] = d
        if d > 0:
            found.append((i, blob, d))
    if dim is None:
        counts = Counter(d for _, _, d in found)
        native = DEFAULT_CONFIG.native_dim
        dim = max(counts, key=lambda d: (counts[d], d == native, d)) if counts else native
    keep = [(i, blob) for i, blob, d in found if d == dim]
    matrix = np.zeros((len(ids), dim), dtype=np.float32)
    has = [False] * len(ids)
    if keep:
        idx = np.fromiter((i for i, _ in keep), dtype=np.int64, count=len(keep))
        flat = np.frombuffer(b"".join(blob for _, blob in keep), dtype="<f4")
        matrix[idx] = flat.reshape(len(keep), dim)
        for i in idx.tolist():
            has[i] = True
    return matrix, dim, has, dims


# --- sessions, comparisons, jobs, training log ---------------------------------------------


def read_sessions(store: StoreLike, *, agent_id: str = DEFAULT_AGENT) -> pl.DataFrame:
    """`session_scores` rows (continuity score per session), ordered by created_at, id; on a
    current store only `agent_id`'s (a 0.58 store has one agent)."""
    return _read_table(
        store, "session_scores", _SESSION_SPEC, ["created_at", "id"], agent_id=agent_id
    )


def read_session_memories(
    store: StoreLike,
    session_keys: Iterable[str] | None = None,
    *,
    agent_id: str = DEFAULT_AGENT,
    columns: Collection[str] | None = None,
) -> pl.DataFrame:
    """`session_memories` candidates (all, or only `session_keys`), by session then rank; on a
    current store only `agent_id`'s (its key is per agent: 042). `columns`: only those (with
    the row's id and the columns the rows are sorted by), so a reader of a few columns does
    not convert every one of a hundred thousand rows."""
    where, params = "", ()
    if session_keys is not None:
        where = " WHERE session_key IN (SELECT value FROM json_each(?))"
        params = (json.dumps([str(k) for k in session_keys]),)
    spec = _SESSION_MEMORY_SPEC
    if columns is not None:
        wanted = {*columns, *_SESSION_MEMORY_KEYS}
        spec = [s for s in spec if s[0] in wanted]
    return _read_table(
        store,
        "session_memories",
        spec,
        ["created_at", "session_key", "rank", "memory_id"],
        where,
        params,
        agent_id,
    )


def read_session_starts(store: StoreLike, *, agent_id: str = DEFAULT_AGENT) -> pl.DataFrame:
    """Per session with `session_memories` rows, the time of its first one (`created_at`):
    when it started, as `read_session_memories` would give it, without reading every row (a
    training reads the candidates of only its newest sessions). On a current store only
    `agent_id`'s."""
    spec = _SESSION_START_SPEC
    with _using(store) as (con, label):
        if "session_memories" not in table_names(con):
            return pl.DataFrame(schema=_schema(spec))
        where, params = "", ()
        if "agent_id" in _columns(con, "session_memories"):
            where, params = " WHERE agent_id = ?", (agent_id,)
        sql = (
            "SELECT CAST(session_key AS TEXT), CAST(MIN(created_at) AS TEXT) "
            f"FROM session_memories{where} GROUP BY session_key"
        )
        rows = con.execute(sql, params).fetchall()
    frame = _frame(rows, spec)
    starts = _parse_ts_series(frame["created_at"], label, "session_memories", frame["session_key"])
    return frame.with_columns(starts).sort("created_at", "session_key")


def read_path_feedback(store: StoreLike, *, agent_id: str = DEFAULT_AGENT) -> pl.DataFrame:
    """`path_feedback_events` rows of `agent_id`: per session and memory, the agent's rating
    (-1..1) and the behavioural reward Signet derives from its feedback (`reward`), ordered by
    created_at, id. Current Signet writes one when the agent rates a memory that has a graph
    path (MCP `memory_feedback`); a store without the table reads as an empty frame."""
    return _read_table(
        store,
        "path_feedback_events",
        _PATH_FEEDBACK_SPEC,
        ["created_at", "id"],
        agent_id=agent_id,
    )


def read_recall_events(store: StoreLike, *, agent_id: str = DEFAULT_AGENT) -> pl.DataFrame:
    """`session_recall_events` rows of `agent_id` that name a memory (`item_kind = 'memory'`):
    what a recall (prompt-time search, the agent's `memory_search`) brought into a session,
    once per context epoch, ordered by session, time and memory. A store without the table
    reads as an empty frame."""
    frame = _read_table(
        store,
        "session_recall_events",
        _RECALL_EVENT_SPEC,
        ["session_key", "created_at", "item_id"],
        agent_id=agent_id,
        id_col="item_id",
    )
    return frame.filter(pl.col("item_kind") == "memory")


def read_comparisons(store: StoreLike) -> pl.DataFrame:
    """`predictor_comparisons` rows (NDCG predictor vs baseline per session); JSON kept as text."""
    return _read_table(store, "predictor_comparisons", _COMPARISON_SPEC, ["created_at", "id"])


def read_summary_jobs(store: StoreLike, *, agent_id: str = DEFAULT_AGENT) -> pl.DataFrame:
    """`summary_jobs` rows, transcripts included (Signet keeps them there); on a current store
    only `agent_id`'s."""
    return _read_table(
        store, "summary_jobs", _SUMMARY_JOB_SPEC, ["created_at", "id"], agent_id=agent_id
    )


def read_training_log(store: StoreLike) -> pl.DataFrame:
    """`predictor_training_log` rows (written only by manual training in Signet 0.58)."""
    return _read_table(store, "predictor_training_log", _TRAINING_LOG_SPEC, ["created_at", "id"])
