"""Where the panels' data comes from: a Signet store through DuckDB (read-only views) and the
workbench file, opened per action.

The store: one DuckDB connection per notebook session (`open_store`), never the stdlib
`sqlite3` in the same process (DESIGN §9.2: a served app runs every browser session as a
thread of one process, and two SQLite copies in one process crash on a WAL file).

The workbench (`workbench.duckdb`): opened for one read or one write and closed again
(`read_workbench`, `write_workbench`), never held across cells — a held read-write connection
locks the trainer and the CLI out of the file (DESIGN §9.8). When another process holds it,
the call retries for a few seconds and then raises `WorkbenchBusy`, which says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import duckdb
import polars as pl

from serving.workbench import default_workbench
from signet_bench.errors import UserError
from signet_bench.store.duck import attached_tables, connect_duckdb

__all__ = [
    "BUSY_ATTEMPTS",
    "WorkbenchBusy",
    "default_workbench",
    "open_store",
    "read_workbench",
    "store_has",
    "write_workbench",
]

T = TypeVar("T")

BUSY_ATTEMPTS = 20  # x BUSY_WAIT_S: about 5 s before a busy workbench is reported
BUSY_WAIT_S = 0.25
_LOCK_WORDS = ("lock", "conflicting", "different configuration", "being used")


class WorkbenchBusy(UserError):
    """The workbench file stayed locked by another process (or session) for every attempt."""


def open_store(db: str | Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB reading the Signet store through read-only views: raw tables in
    `store`, UTC timestamps in `main` (`store.duck.attach_store`)."""
    return connect_duckdb(db)


def store_has(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    """Whether the attached store has `table` readable (e.g. the simulator's `sim_sessions`)."""
    return table in attached_tables(con).columns


def _is_lock_error(exc: duckdb.Error) -> bool:
    text = str(exc).lower()
    return any(w in text for w in _LOCK_WORDS)


def _with_retry(
    path: Path, action: Callable[[], T], what: str, on_wait: Callable[[int], None] | None
) -> T:
    """Run `action`, retrying while the file is locked; `on_wait(attempt)` hears each retry."""
    for attempt in range(1, BUSY_ATTEMPTS + 1):
        try:
            return action()
        except duckdb.Error as exc:
            if not _is_lock_error(exc):
                raise UserError(f"{path}: {what} failed: {exc}") from exc
            if attempt == BUSY_ATTEMPTS:
                raise WorkbenchBusy(
                    f"{path}: the workbench is busy (another process is writing it); "
                    f"{what} was not done after {BUSY_ATTEMPTS} attempts — try again"
                ) from exc
            if on_wait is not None:
                on_wait(attempt)
            time.sleep(BUSY_WAIT_S)
    raise AssertionError("unreachable")


def read_workbench(
    path: str | Path | None,
    sql: str,
    params: list | None = None,
    *,
    on_wait: Callable[[int], None] | None = None,
) -> pl.DataFrame:
    """One query on the workbench file, opened read-only for it and closed again; an empty frame
    when there is no workbench yet or the query's table does not exist in it."""
    if path is None or not Path(path).exists():
        return pl.DataFrame()
    p = Path(path)

    def run() -> pl.DataFrame:
        with duckdb.connect(str(p), read_only=True) as con:
            con.execute("SET TimeZone = 'UTC'")
            try:
                return con.execute(sql, params or []).pl()
            except duckdb.CatalogException:
                return pl.DataFrame()

    return _with_retry(p, run, "reading", on_wait)


def write_workbench(
    path: str | Path,
    write: Callable[[duckdb.DuckDBPyConnection], T],
    *,
    on_wait: Callable[[int], None] | None = None,
) -> T:
    """Open the workbench read-write (creating its tables), run `write` (which makes its own
    transaction) and close it; retried while another process holds the file."""
    from signet_bench.store.workbench import open_workbench

    p = Path(path)

    def run() -> T:
        with open_workbench(p) as con:
            return write(con)

    return _with_retry(p, run, "writing", on_wait)
