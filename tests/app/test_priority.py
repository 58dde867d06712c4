"""A served session's reads yield the CPU: a session's thread is lowered and its DuckDB runs on
one thread; the server's main thread, a script and the editor are left as they are."""

from __future__ import annotations

import os
import sys
import threading

import duckdb
import pytest

from signet_bench.app.priority import SESSION_DUCKDB_THREADS, SESSION_NICE, yield_to_interface

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice")


def _nice(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def _threads(con: duckdb.DuckDBPyConnection) -> int:
    return int(con.execute("SELECT current_setting('threads')").fetchone()[0])


def _in_thread(mode: str | None) -> tuple[bool, int, int, int]:
    """`yield_to_interface` called from a new thread (as a served session's kernel): what it
    returned, that thread's niceness before and after, and its connection's DuckDB threads."""
    out: list = []

    def session() -> None:
        con = duckdb.connect()
        tid = threading.get_native_id()
        before = _nice(tid)
        did = yield_to_interface(con, mode)
        out.append((did, before, _nice(tid), _threads(con)))
        con.close()

    worker = threading.Thread(target=session)
    worker.start()
    worker.join()
    return out[0]


def test_a_served_sessions_thread_is_lowered_and_its_duckdb_on_one_thread():
    main_before = _nice(threading.get_native_id())
    did, before, after, threads = _in_thread("run")
    assert did
    assert after == min(19, before + SESSION_NICE)
    assert threads == SESSION_DUCKDB_THREADS
    # the calling process's own thread (the server's, which answers every browser) is untouched
    assert _nice(threading.get_native_id()) == main_before


@pytest.mark.parametrize("mode", ["edit", "script", "test", None])
def test_outside_a_served_app_nothing_changes(mode):
    con = duckdb.connect()
    default = _threads(con)
    did, before, after, threads = _in_thread(mode)
    assert not did and after == before and threads == default


def test_the_main_thread_is_never_lowered():
    """A notebook run on its process's main thread (a script): its children would inherit."""
    con = duckdb.connect()
    tid = threading.get_native_id()
    before, threads = _nice(tid), _threads(con)
    assert not yield_to_interface(con, "run")
    assert _nice(tid) == before and _threads(con) == threads
