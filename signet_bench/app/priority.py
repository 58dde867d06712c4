"""A served session's reads yield the CPU to the visitor's browser and the server.

`marimo run` serves every browser session as a kernel thread of one process. Once a session's
first chart is sent, its browser still has to load Vega, compile the chart and paint it, while
the kernel goes on with the dashboard's reads (DuckDB on every core, then seconds of SQLite
scans). On two cores the browser and those reads share the CPU, and the first chart waited for
them. On the one-year store, served in turn with and without this, 8 fresh apps each: the first
drawn chart after 2.45 s against 2.75 s (p50; marimo's one-chart notebook 2.44 s). Holding
those reads back until the chart was drawn did no better (in another set of runs, 2.46 s
against 2.46 s for this at niceness 19).

`yield_to_interface` lowers the calling thread's priority (Linux sets niceness per thread, so
the server's own thread, which answers every browser, keeps its priority, and so do other
sessions' threads, which the server starts) and moves the session's DuckDB work into that
thread. Only in a served app on Linux: a notebook run as a script, in the editor or in a test
runs on its process's main thread, whose priority its children would inherit.
"""

from __future__ import annotations

import os
import sys
import threading

import duckdb

__all__ = ["SESSION_DUCKDB_THREADS", "SESSION_NICE", "yield_to_interface"]

SESSION_NICE = 10  # how far below the server's priority a session's reads run
SESSION_DUCKDB_THREADS = 1  # DuckDB's work in the calling (lowered) thread only


def yield_to_interface(con: duckdb.DuckDBPyConnection, mode: str | None) -> bool:
    """In a session of a served app (`mode` "run", marimo's `mo.app_meta().mode`; a thread
    other than the main one; Linux): lower this thread's priority by SESSION_NICE and run the
    session's DuckDB connection `con` on SESSION_DUCKDB_THREADS thread(s). Whether it did;
    elsewhere nothing changes. Niceness cannot be raised back without privileges: call it
    from the cell that starts a session's long work, after its first chart."""
    if mode != "run" or not sys.platform.startswith("linux"):
        return False
    if threading.current_thread() is threading.main_thread():
        return False
    tid = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + SESSION_NICE))
    except OSError:
        return False
    con.execute(f"SET threads = {SESSION_DUCKDB_THREADS}")
    return True
