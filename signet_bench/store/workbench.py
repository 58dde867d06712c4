"""The workbench's own state, `workbench.duckdb`: calibration labels, training runs, models and
benchmark runs. Written only through DuckDB, each call in one transaction, idempotently (rows are
keyed, and writing the same key again replaces the row). Timestamps are stored as naive UTC.
A workbench written by an older release is brought up to date when it is opened for writing
(added columns; `predictor_calibration.scorer_label` renamed `judge_relevance`, its rows kept).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from signet_bench.store.errors import StoreError, WorkbenchRowError
from signet_bench.store.timestamps import parse_ts

__all__ = [
    "WORKBENCH_DDL",
    "check_workbench_file",
    "open_workbench",
    "record_bench",
    "record_calibration",
    "record_model",
    "record_training_run",
]

WORKBENCH_DDL: dict[str, str] = {
    "predictor_calibration": """
        CREATE TABLE IF NOT EXISTS predictor_calibration (
            id TEXT NOT NULL,
            session_key TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            human_label DOUBLE,
            judge_relevance DOUBLE,
            delta DOUBLE,
            labeled_at TIMESTAMP NOT NULL,
            labeler TEXT NOT NULL,
            PRIMARY KEY (session_key, memory_id, labeler)
        )""",
    "training_runs": """
        CREATE TABLE IF NOT EXISTS training_runs (
            run_id TEXT PRIMARY KEY,
            store_path TEXT,
            started_at TIMESTAMP,
            duration_ms DOUBLE,
            sample_count INTEGER,
            epochs INTEGER,
            loss_curve TEXT,
            canary_ndcg DOUBLE,
            canary_ndcg_delta DOUBLE,
            canary_score_variance DOUBLE,
            canary_topk_overlap DOUBLE,
            gate_passed BOOLEAN,
            gate_reason TEXT,
            model_path TEXT,
            holdout TEXT,
            serving TEXT
        )""",
    "models": """
        CREATE TABLE IF NOT EXISTS models (
            model_id TEXT PRIMARY KEY,
            path TEXT,
            created_at TIMESTAMP,
            feature_spec_hash TEXT,
            is_pretrained_base BOOLEAN,
            is_finetuned BOOLEAN,
            metrics TEXT
        )""",
    "bench_runs": """
        CREATE TABLE IF NOT EXISTS bench_runs (
            id TEXT PRIMARY KEY,
            bench TEXT NOT NULL,
            created_at TIMESTAMP NOT NULL,
            json TEXT NOT NULL
        )""",
}

_TRAINING_FIELDS = (
    "run_id",
    "store_path",
    "started_at",
    "duration_ms",
    "sample_count",
    "epochs",
    "loss_curve",
    "canary_ndcg",
    "canary_ndcg_delta",
    "canary_score_variance",
    "canary_topk_overlap",
    "gate_passed",
    "gate_reason",
    "model_path",
    "holdout",  # the held-out verdict as JSON (learn.publish.holdout_record); NULL before it
    "serving",  # which model serves and why, as JSON (learn.serving.ServingChoice.record)
)
# Columns added after a table was first written: a workbench made before gets them on open.
_ADDED_COLUMNS = (
    "ALTER TABLE training_runs ADD COLUMN IF NOT EXISTS holdout TEXT",
    "ALTER TABLE training_runs ADD COLUMN IF NOT EXISTS serving TEXT",
)
# Columns renamed since a table was first written, (table, old name, new name): a workbench made
# before has its column renamed on open, with every row kept.
_RENAMED_COLUMNS = (("predictor_calibration", "scorer_label", "judge_relevance"),)
_MODEL_FIELDS = (
    "model_id",
    "path",
    "created_at",
    "feature_spec_hash",
    "is_pretrained_base",
    "is_finetuned",
    "metrics",
)
_CALIBRATION_FIELDS = (
    "id",
    "session_key",
    "memory_id",
    "human_label",
    "judge_relevance",
    "delta",
    "labeled_at",
    "labeler",
)


_DUCKDB_MAGIC = b"DUCK"  # a DuckDB database file's bytes 8..12 (after the header checksum)


def check_workbench_file(path: str | Path) -> Path:
    """The workbench's path once it is absent (it is created on the first write) or a DuckDB
    database file; anything else (a folder, an empty or text file, an SQLite store) is a
    StoreError naming it. Read from its header, not opened: a trainer may hold it locked."""
    p = Path(path).expanduser()
    if not p.exists():
        return p
    if not p.is_file():
        raise StoreError(f"{p}: not a regular file; expected a workbench.duckdb")
    with p.open("rb") as fh:
        head = fh.read(12)
    if head[8:12] != _DUCKDB_MAGIC:
        what = "an empty file" if not head else "not a DuckDB database file"
        raise StoreError(f"{p}: {what}; expected a workbench.duckdb (or a path not there yet)")
    return p


def open_workbench(path: str | Path) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the workbench DuckDB file with all its tables."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(
        str(p),
        config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
    )
    con.execute("SET TimeZone = 'UTC'")
    with _transaction(con):
        for ddl in (*WORKBENCH_DDL.values(), *_ADDED_COLUMNS):
            con.execute(ddl)
        _rename_old_columns(con)
    return con


def _rename_old_columns(con: duckdb.DuckDBPyConnection) -> None:
    """Rename the columns an older workbench still has under their old names."""
    for table, old, new in _RENAMED_COLUMNS:
        cols = {r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()}
        if old in cols and new not in cols:
            con.execute(f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}")


@contextmanager
def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """BEGIN ... COMMIT, or ROLLBACK on any error."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def _utc_naive(value: Any, table: str, field: str) -> datetime:
    """A datetime or Signet timestamp text as naive UTC (how the workbench stores TIMESTAMP)."""
    if value is None:
        return datetime.now(UTC).replace(tzinfo=None)
    if isinstance(value, str):
        value = parse_ts(value)
    if not isinstance(value, datetime):
        raise WorkbenchRowError(table, f"{field}: expected a datetime, got {value!r}")
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def _json_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def _check_fields(table: str, row: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(row) - set(allowed))
    if unknown:
        raise WorkbenchRowError(table, f"unknown field(s) {', '.join(unknown)}")


def _upsert(
    con: duckdb.DuckDBPyConnection, table: str, fields: tuple[str, ...], rows: list
) -> None:
    marks = ", ".join("?" for _ in fields)
    con.executemany(f"INSERT OR REPLACE INTO {table} ({', '.join(fields)}) VALUES ({marks})", rows)


def _literal(value: object) -> str | None:
    """`value` as the SQL literal of what binding it as a parameter stores (a float through
    its shortest round-trip text, which DuckDB reads back exactly), or None for a value of
    another kind (it is bound)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool | np.bool_):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return f"CAST('{float(value)!r}' AS DOUBLE)"
    if isinstance(value, datetime) and value.tzinfo is None:
        return f"CAST('{value.isoformat(sep=' ')}' AS TIMESTAMP)"
    if isinstance(value, str) and "\x00" not in value:
        return "'" + value.replace("'", "''") + "'"
    return None


def _upsert_row(
    con: duckdb.DuckDBPyConnection, table: str, fields: tuple[str, ...], row: tuple
) -> None:
    """One row upserted as `_upsert` does, written as literals when every value has one: the
    first parameter DuckDB binds in a process loads pandas and pyarrow (some 0.3 s of CPU),
    which a training's child process would otherwise pay to record its run."""
    values = [_literal(v) for v in row]
    if any(v is None for v in values):
        _upsert(con, table, fields, [row])
        return
    con.execute(
        f"INSERT OR REPLACE INTO {table} ({', '.join(fields)}) VALUES ({', '.join(values)})"
    )


def record_calibration(con: duckdb.DuckDBPyConnection, rows: Iterable[Mapping[str, Any]]) -> int:
    """Upsert human labels keyed by (session_key, memory_id, labeler); returns rows written.

    Each row needs session_key and memory_id; `judge_relevance` is the continuity judge's
    relevance of the memory to the session (Signet's `session_memories.relevance_score`).
    labeler defaults to 'human', labeled_at to now, delta to human_label - judge_relevance, id
    to a stable hash of the key.
    """
    table = "predictor_calibration"
    values = []
    for n, row in enumerate(rows):
        _check_fields(table, row, _CALIBRATION_FIELDS)
        for need in ("session_key", "memory_id"):
            if not row.get(need):
                raise WorkbenchRowError(table, f"row {n}: missing {need}")
        human, judge = row.get("human_label"), row.get("judge_relevance")
        delta = row.get("delta")
        if delta is None and human is not None and judge is not None:
            delta = float(human) - float(judge)
        labeler = row.get("labeler") or "human"
        key = (str(row["session_key"]), str(row["memory_id"]), str(labeler))
        rid = row.get("id") or str(uuid.uuid5(uuid.NAMESPACE_URL, "calibration:" + "/".join(key)))
        labeled_at = _utc_naive(row.get("labeled_at"), table, "labeled_at")
        values.append((rid, key[0], key[1], human, judge, delta, labeled_at, labeler))
    with _transaction(con):
        _upsert(con, table, _CALIBRATION_FIELDS, values)
    return len(values)


@dataclass(frozen=True, slots=True)
class _KeyedTable:
    """A workbench table written one row at a time, keyed by its first field, with one field
    stored as JSON text and one timestamp field (`time_required`: the write time when absent)."""

    name: str
    fields: tuple[str, ...]
    json_field: str
    time_field: str
    time_required: bool


_TRAINING_RUNS = _KeyedTable("training_runs", _TRAINING_FIELDS, "loss_curve", "started_at", False)
_MODELS = _KeyedTable("models", _MODEL_FIELDS, "metrics", "created_at", True)


def _record_one(con: duckdb.DuckDBPyConnection, table: _KeyedTable, data: Mapping[str, Any]) -> str:
    """Upsert one keyed row in its own transaction, writing only the table's fields it has;
    returns its key."""
    name, key = table.name, table.fields[0]
    _check_fields(name, data, table.fields)
    if not data.get(key):
        raise WorkbenchRowError(name, f"missing {key}")
    row = dict(data)
    row[table.json_field] = _json_text(row.get(table.json_field))
    if table.time_required or table.time_field in row:
        row[table.time_field] = _utc_naive(row.get(table.time_field), name, table.time_field)
    fields = tuple(f for f in table.fields if f in row)
    with _transaction(con):
        _upsert_row(con, name, fields, tuple(row[f] for f in fields))
    return str(data[key])


def record_training_run(con: duckdb.DuckDBPyConnection, run: Mapping[str, Any]) -> str:
    """Upsert one training run keyed by run_id (loss_curve may be a list: stored as JSON)."""
    return _record_one(con, _TRAINING_RUNS, run)


def record_model(con: duckdb.DuckDBPyConnection, model: Mapping[str, Any]) -> str:
    """Upsert one model registry entry keyed by model_id (metrics may be a dict: stored as JSON)."""
    return _record_one(con, _MODELS, model)


def record_bench(con: duckdb.DuckDBPyConnection, bench: str, doc: Mapping[str, Any] | str) -> str:
    """Store one benchmark report (JSON, docs/specification.md §12); the id hashes its content, so
    recording the same report twice keeps one row. Returns the id."""
    text = doc if isinstance(doc, str) else json.dumps(doc, sort_keys=True)
    rid = hashlib.sha256(f"{bench}\n{text}".encode()).hexdigest()[:32]
    with _transaction(con):
        con.execute(
            "INSERT INTO bench_runs (id, bench, created_at, json) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (id) DO NOTHING",
            [rid, bench, datetime.now(UTC).replace(tzinfo=None), text],
        )
    return rid
