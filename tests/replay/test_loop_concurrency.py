"""The simulator writes a store in one process while another process reads it through the
workbench's read-only connection and a third through DuckDB: no `database is locked`, no half
sessions, counts only grow, nothing lost. Processes are spawned (docs/specification.md §2.3: never
DuckDB and a stdlib writer in one process); the run is ~8 s, bounded by the readers' loop limits."""

from __future__ import annotations

import multiprocessing as mp
import queue
import threading
from pathlib import Path

import pytest

from signet_bench.bench.concurrency import (
    ConcurrencyResult,
    ReaderStats,
    _lag,
    _record_writer,
    duckdb_reader_main,
    run_concurrency,
    sqlite_reader_main,
)
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.store.schema import connect_writer
from signet_bench.world.synth.build import build_persona_store

DURATION_S = 8.0


def test_writer_and_two_readers_run_concurrently(tmp_path: Path):
    db = tmp_path / "live.db"
    build_persona_store("light", db, seed=2, n_memories=250)
    res = run_concurrency(db, DURATION_S, n_plan=2000, seed=0)
    detail = res.summary()

    assert res.writer_errors == [], detail
    assert res.writes > 0, detail
    assert res.initial == dict.fromkeys(res.final, 0), detail  # a fresh store
    final_pair = (res.final["predictor_comparisons"], res.final["session_memories"])
    # nothing lost: the store holds exactly what the writer says it committed
    assert res.final["sim_sessions"] == res.final["predictor_comparisons"] == res.writes, detail
    assert res.final["session_scores"] == res.writes, detail
    assert res.writer_counts == final_pair, detail
    assert res.lost == 0, detail

    assert set(res.readers) == {"sqlite", "duckdb"}
    mid_run = 0
    for name, r in res.readers.items():
        assert r.errors == [], (name, r.errors[:3])
        assert r.locked == 0
        assert r.inconsistent == [], (name, r.inconsistent[:3])  # never half a session
        assert r.non_monotone == [], (name, r.non_monotone[:3])
        assert r.reads >= 2, (name, r.reads)  # the first read and the one after the writer
        cmp_counts = [s[1] for s in r.samples]
        row_counts = [s[2] for s in r.samples]
        assert cmp_counts == sorted(cmp_counts) and row_counts == sorted(row_counts), name
        assert r.last == final_pair, name  # its last read saw every commit
        assert r.unseen == 0 and r.max_lag_s is not None, name
        mid_run += sum(0 < c < final_pair[0] for c in cmp_counts)
    assert mid_run > 0, detail  # the readers did read while the writer was writing
    assert res.ok, detail


@pytest.fixture
def small_store(tmp_path: Path) -> Path:
    db = tmp_path / "small.db"
    build_persona_store("light", db, seed=3, n_memories=120)
    simulate(db, 4, SimOptions(scorer="random", seed=0))
    return db


def _delete(db: Path, sql: str) -> None:
    con = connect_writer(db)
    try:
        con.execute(sql)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


def test_sqlite_reader_reports_a_half_session(small_store: Path):
    # a session with candidates and a score but no comparison: what a non-atomic writer leaves
    _delete(
        small_store,
        "DELETE FROM predictor_comparisons WHERE session_key = "
        "(SELECT session_key FROM sim_sessions WHERE idx = 2)",
    )
    ready, done, out = threading.Event(), threading.Event(), queue.Queue()
    done.set()  # the writer is already finished: one read, then the final read
    sqlite_reader_main(str(small_store), ready, done, out, 60.0)
    name, stats = out.get_nowait()
    assert name == "sqlite" and ready.is_set()
    assert stats.errors == [] and stats.reads == 2
    assert len(stats.inconsistent) == 2
    assert "half session: 3 with comparisons, 4 with candidates" in stats.inconsistent[0]


def test_duckdb_reader_reports_comparisons_without_candidates(small_store: Path):
    _delete(
        small_store,
        "DELETE FROM session_memories WHERE session_key = "
        "(SELECT session_key FROM sim_sessions WHERE idx = 1)",
    )
    ctx = mp.get_context("spawn")  # DuckDB's SQLite in its own process
    ready, done, out = ctx.Event(), ctx.Event(), ctx.Queue()
    done.set()
    proc = ctx.Process(target=duckdb_reader_main, args=(str(small_store), ready, done, out, 60.0))
    proc.start()
    try:
        name, stats = out.get(timeout=120)
    finally:
        proc.join(timeout=30)
    assert proc.exitcode == 0
    assert name == "duckdb"
    assert stats.errors == [] and stats.reads == 2
    assert stats.last[0] == 4  # four comparisons...
    assert stats.inconsistent == ["1 compared sessions without candidates"] * 2  # ...one bare


def test_lag_is_commit_to_first_read_that_saw_it():
    stats = ReaderStats("r", samples=[(10.0, 0, 0), (10.5, 2, 20), (12.0, 3, 30)])
    commits = [(10.1, 1), (10.2, 2), (10.9, 3), (11.0, 4)]
    worst, unseen = _lag(stats, commits)
    assert worst == pytest.approx(1.1)  # commit 3 at 10.9, first seen by the read ending 12.0
    assert unseen == 1  # commit 4 never read


def test_the_writers_report_fills_the_result_and_a_missing_one_is_an_error():
    res = ConcurrencyResult(duration_s=1.0)
    report = {
        "writes": 2,
        "seconds": 0.5,
        "errors": [],
        "commits": [[10.0, 4], [10.2, 5]],  # lists, as a queue may hand them back
        "initial": {"predictor_comparisons": 3},
        "counts": {"predictor_comparisons": 5, "session_memories": 70},
    }
    assert _record_writer(res, report, 0) == [(10.0, 4), (10.2, 5)]
    assert (res.writes, res.writer_counts, res.initial) == (2, (5, 70), report["initial"])
    missing = ConcurrencyResult(duration_s=1.0)
    assert _record_writer(missing, None, -9) == []
    assert missing.writer_errors == ["writer exited (-9) without a report"]
    assert missing.errors == 1 and not missing.ok
