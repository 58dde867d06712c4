"""Where the panels' data comes from: a Signet store through DuckDB (read-only views) and the
workbench file, opened per action.

The store: one DuckDB connection per notebook session (`open_store`), never the stdlib
`sqlite3` in the same process (docs/specification.md §2.3: a served app runs every browser session
as a thread of one process, and two SQLite copies in one process crash on a WAL file).

What only the library's stdlib reader computes (samples, features, a current store's
recomputed comparisons) runs in a child process that writes Parquet files (`child_frames`).

The workbench (`workbench.duckdb`): opened for one read or one write and closed again
(`read_workbench`, `write_workbench`), never held across cells — a held read-write connection
locks the trainer and the CLI out of the file (docs/specification.md §2.3). When another process
holds it, the call retries for a few seconds and then raises `WorkbenchBusy`, which says so.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import duckdb
import polars as pl

from signet_bench.errors import UserError
from signet_bench.store.duck import attached_tables, connect_duckdb
from signet_bench.store.workbench import open_workbench
from signet_scorer.workbench import DEFAULT_AGENT

__all__ = [
    "BUSY_ATTEMPTS",
    "WorkbenchBusy",
    "agent_condition",
    "child_frames",
    "child_main",
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


def child_frames(
    module: str,
    db: str | Path,
    names: Sequence[str],
    args: Sequence[str] = (),
    *,
    what: str,
    timeout_s: float = 600,
) -> dict[str, pl.DataFrame]:
    """Run `python -m module DB OUT_DIR *args` and read back its `OUT_DIR/<name>.parquet` per
    name: library work that reads the store with the stdlib `sqlite3`, kept out of this process,
    which holds the store open through DuckDB (one SQLite library per file and process). A
    failing child raises a `UserError` naming `what` and the child's last line of output."""
    with tempfile.TemporaryDirectory(prefix="signet-bench-child-") as tmp:
        cmd = [sys.executable, "-m", module, str(db), tmp, *args]
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout_s)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise UserError(f"{db}: {what} failed: {tail[0]}")
        return {name: pl.read_parquet(Path(tmp) / f"{name}.parquet") for name in names}


def child_main(
    compute: Callable[[Path, Path, argparse.Namespace], None],
    argv: Sequence[str] | None,
    description: str,
    options: Callable[[argparse.ArgumentParser], object] | None = None,
) -> int:
    """The command line of a `child_frames` child: `DB OUT_DIR` (plus `options`), then
    `compute(db, out, args)`; a `UserError` ends it with its message and exit code 2."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("db")
    parser.add_argument("out")
    if options is not None:
        options(parser)
    args = parser.parse_args(argv)
    try:
        compute(Path(args.db), Path(args.out), args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def agent_condition(
    con: duckdb.DuckDBPyConnection,
    table: str,
    agent_id: str = DEFAULT_AGENT,
    column: str = "agent_id",
) -> str:
    """An SQL condition (DuckDB and SQLite) keeping `agent_id`'s rows of `table` when the
    store keys that table per agent (current Signet: `column`, e.g. `sm.agent_id`), else
    `TRUE` (a 0.58 store has one agent)."""
    if "agent_id" not in attached_tables(con).columns.get(table, ()):
        return "TRUE"
    return f"{column} = '" + agent_id.replace("'", "''") + "'"


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
    p = Path(path)

    def run() -> T:
        with open_workbench(p) as con:
            return write(con)

    return _with_retry(p, run, "writing", on_wait)
