"""Read the session-start hook's injection log (`hook_injections.db` beside the workbench,
written by `serving.hook.log`): what each invocation did and which memories it injected, so
labels given later describe what the scorer (or Signet, when the hook kept its output) chose.

The file is SQLite written by the hook's processes with the standard library; it is read here
the same way, read-only (`mode=ro`), never through DuckDB (one SQLite library per file and
process). A workbench without the file reads as empty frames.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl

from serving.hook.log import INJECTION_COLUMNS, INVOCATION_COLUMNS
from serving.workbench import HOOK_LOG_FILE

__all__ = ["hook_log_path", "read_hook_injections", "read_hook_invocations"]

_ISO = "%Y-%m-%dT%H:%M:%S%.fZ"  # how the hook writes its times (UTC)
_TYPES = {
    "id": pl.Int64,
    "invocation_id": pl.Int64,
    "pool": pl.Int64,
    "injected": pl.Int64,
    "signet_exit": pl.Int64,
    "rank": pl.Int64,
    "signet_rank": pl.Int64,
    "duration_ms": pl.Float64,
    "score": pl.Float64,
}


def hook_log_path(workbench: str | Path) -> Path:
    """The injection log beside a workbench file (`workbench.duckdb`)."""
    return Path(workbench).parent / HOOK_LOG_FILE


def _read(path: Path, table: str, columns: tuple[str, ...], order: str) -> pl.DataFrame:
    """The table's columns as a frame (its times as UTC datetimes), empty when it is absent."""
    schema: dict[str, pl.DataType] = {c: _TYPES.get(c, pl.Utf8) for c in columns}
    schema.update({c: pl.Datetime("us", "UTC") for c in ("at", "injected_at") if c in schema})
    if not path.exists():
        return pl.DataFrame(schema=schema)
    con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=5.0)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if table not in tables:
            return pl.DataFrame(schema=schema)
        rows = con.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}").fetchall()
    finally:
        con.close()
    text = {c: pl.Utf8 if c in ("at", "injected_at") else t for c, t in schema.items()}
    frame = pl.DataFrame(rows, schema=text, orient="row")
    times = [c for c in ("at", "injected_at") if c in columns]
    return frame.with_columns(pl.col(times).str.to_datetime(_ISO, time_zone="UTC", strict=False))


def read_hook_invocations(workbench: str | Path) -> pl.DataFrame:
    """One row per hook invocation, oldest first: `id` and the columns of
    `serving.hook.log.INVOCATION_COLUMNS` (`outcome` 'scorer' or 'signet', the `reason`)."""
    return _read(hook_log_path(workbench), "hook_invocations", ("id", *INVOCATION_COLUMNS), "id")


def read_hook_injections(workbench: str | Path) -> pl.DataFrame:
    """One row per injected memory of a session key and agent (the first invocation that
    injected any), by session key, agent and rank: `INJECTION_COLUMNS` (`score` null where
    Signet's order was kept)."""
    return _read(
        hook_log_path(workbench),
        "hook_injections",
        INJECTION_COLUMNS,
        "session_key, agent_id, rank",
    )
